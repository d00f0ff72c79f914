// Long runs at one level fold into segments; crafted depths and sizes never overflow the
// stack and views too big for Graphviz are refused with a readable reason.
import { test } from "node:test";
import assert from "node:assert/strict";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible, TooManyToDraw } from "../../../webview/src/visible";
import { expandAll, expansionKey, initialExpansion, reveal, toggleSegment } from "../../../webview/src/expansion";
import { SEGMENT_LIMIT, segmentsOf } from "../../../webview/src/segments";
import { computeView, DRAW_LIMITS } from "../../../webview/src/compute";
import { toDot } from "../../../webview/src/dot";
import { describe } from "../../../webview/src/details";
import { formatBytes, formatFlops, formatTime } from "../../../webview/src/units";
import { GraphBuilder } from "./builder";

/** x → Flat{ add × n } → output: `for _ in range(n): x = x + 1` as the tracer writes it. */
function flat(n: number) {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Flat", "", null);
  let prev = x;
  const ops: number[] = [];
  for (let i = 0; i < n; i++) {
    const op = b.op("add", root, "Tensor.add");
    b.edge(prev, op, [2, 3]);
    ops.push(op);
    prev = op;
  }
  const out = b.add("output", "output");
  b.edge(prev, out, [2, 3]);
  return { idx: buildIndex(b.build()), x, root, ops, out };
}

test("a segment's summary writes its counts as its range does: add ×10,000 (calls 1–10,000 of 50,000)", () => {
  // "add ×10000" stood under "calls 1–10,000 of 50,000"
  const { idx } = flat(50_000);
  const vg = buildVisible(idx, initialExpansion(idx));
  const segs = vg.nodes.filter((v) => v.kind === "segment");
  assert.equal(segs.length, 5);
  const { labels } = computeView(idx, initialExpansion(idx));
  assert.deepEqual(labels.get(segs[0]!.key), { title: "calls 1–10,000 of 50,000", sub: "add ×10,000" });
});

test("5,000 ops at one level draw as 50 segments of 100, chained by their tensors", () => {
  const { idx, x, root, ops, out } = flat(5000);
  const vg = buildVisible(idx, initialExpansion(idx));
  const segs = vg.nodes.filter((v) => v.kind === "segment");
  assert.equal(segs.length, 50);
  assert.ok(segs.every((v) => v.cluster === `n${root}`));
  assert.equal(vg.nodes.length, 52);
  // The chain runs x → s0 → s1 → … → s49 → output.
  const ends = vg.edges.map((e) => `${e.src}>${e.dst}`);
  assert.equal(ends[0], `n${x}>${segs[0]!.key}`);
  assert.ok(ends.includes(`${segs[0]!.key}>${segs[1]!.key}`));
  assert.ok(ends.includes(`${segs[49]!.key}>n${out}`));
  assert.equal(vg.rep[ops[0]!], segs[0]!.key);
  assert.equal(vg.rep[ops[4999]!], segs[49]!.key);
  // Opening one shows its 100 calls in a frame.
  const si = segs[3]!.id;
  const open = buildVisible(idx, toggleSegment(initialExpansion(idx), si));
  assert.ok(open.clusters.some((c) => c.key === `s${si}` && c.kind === "segment" && c.parent === `n${root}`));
  assert.equal(open.nodes.filter((v) => v.cluster === `s${si}`).length, 100);
  assert.equal(open.rep[ops[300]!], `n${ops[300]}`);
  // Labels and hover say which calls it holds.
  const { labels } = computeView(idx, initialExpansion(idx));
  assert.deepEqual(labels.get(segs[3]!.key), { title: "calls 301–400 of 5,000", sub: "add ×100" });
  const d = describe(idx, vg, segs[3]!.key)!;
  assert.equal(d.title, "calls 301–400 of 5,000");
  assert.ok(d.rows.some(([k, v]) => k === "in" && /^2×3 float32 {2}from add in \(root\)|^2×3 float32 {2}from add/.test(v)));
});

test("50,000 ops fold in two levels; revealing an op opens just the segments on its way", () => {
  const { idx, ops } = flat(50_000);
  const vg = buildVisible(idx, initialExpansion(idx));
  const top = vg.nodes.filter((v) => v.kind === "segment");
  assert.equal(top.length, 5);
  assert.ok(vg.nodes.length <= SEGMENT_LIMIT + 2);
  const exp = reveal(idx, initialExpansion(idx), ops[31_234]!);
  assert.equal(exp.segments.size, 2, "one segment of each level");
  const shown = buildVisible(idx, exp);
  assert.equal(shown.rep[ops[31_234]!], `n${ops[31_234]}`);
  assert.ok(shown.nodes.length <= 3 * SEGMENT_LIMIT);
  assert.notEqual(expansionKey(exp), expansionKey(initialExpansion(idx)));
  // Expand all opens modules, never segments: still a few boxes.
  assert.ok(buildVisible(idx, expandAll(idx)).nodes.length <= SEGMENT_LIMIT + 2);
});

test("levels of up to SEGMENT_LIMIT items stay as they are", () => {
  const { idx } = flat(SEGMENT_LIMIT - 2); // + input and output
  assert.equal(segmentsOf(idx).list.length, 0);
  assert.ok(!buildVisible(idx, initialExpansion(idx)).nodes.some((v) => v.kind === "segment"));
});

test("a group with thousands of members unfolds into segments; the folded group stays one box", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Deep", "", null);
  const members: number[] = [];
  let prev = x;
  for (let i = 0; i < 3000; i++) {
    const m = b.module("Block", `blocks.${i}`, root);
    const op = b.op("relu", m);
    b.edge(prev, op);
    prev = op;
    members.push(m);
  }
  b.groups.push({ parent: root, members, name: "Block ×3000" });
  const idx = buildIndex(b.build());
  const folded = buildVisible(idx, initialExpansion(idx));
  assert.deepEqual(
    folded.nodes.filter((v) => v.cluster === `n${root}`).map((v) => v.key),
    ["g0"],
  );
  const open = buildVisible(idx, { ...initialExpansion(idx), groups: new Set([0]) });
  const inGroup = open.nodes.filter((v) => v.cluster === "g0");
  assert.equal(inGroup.length, 30);
  assert.ok(inGroup.every((v) => v.kind === "segment"));
  const exp = reveal(idx, initialExpansion(idx), members[2500]!);
  assert.ok(exp.groups.has(0) && exp.segments.size === 1);
  assert.equal(buildVisible(idx, exp).rep[members[2500]!], `n${members[2500]}`);
});

test("a 10,000-deep chain of module calls: no recursion, and too deep a view is refused", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  let parent: number | null = null;
  for (let i = 0; i < 10_000; i++) parent = b.module(`M${i}`, `m${i}`, parent);
  const op = b.op("relu", parent);
  b.edge(x, op);
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, initialExpansion(idx));
  assert.equal(vg.rep[op], "n2", "the op is drawn as the first closed module (the root is open)");
  const all = buildVisible(idx, expandAll(idx));
  assert.equal(all.clusters.length, 9_999);
  assert.ok(toDot(idx, all).dot.includes('subgraph "cluster_n9999"'), "DOT of 10,000 nested frames (no recursion)");
  assert.throws(
    () => buildVisible(idx, expandAll(idx), DRAW_LIMITS),
    (e: unknown) => e instanceof TooManyToDraw && e.what === "levels" && /more than 100 levels deep: too deep to draw at once/.test(e.message),
  );
});

test("a view of more than DRAW_LIMITS.boxes boxes is refused before any layout", () => {
  const b = new GraphBuilder();
  let prev = b.add("input", "x");
  const root = b.module("Big", "", null);
  for (let m = 0; m < 70; m++) {
    const mod = b.module(`M${m}`, `m${m}`, root);
    for (let i = 0; i < 95; i++) {
      const op = b.op("add", mod);
      b.edge(prev, op);
      prev = op;
    }
  }
  const idx = buildIndex(b.build());
  assert.ok(computeView(idx, initialExpansion(idx)).vg.nodes.length < 100);
  assert.throws(
    () => computeView(idx, expandAll(idx)),
    (e: unknown) => e instanceof TooManyToDraw && e.message === "more than 6,000 boxes: too many nodes to draw at once; expand fewer",
  );
});

test("a folded run's hover sums the FLOPs, bytes and time of the calls it holds", () => {
  const { idx } = flat(250);
  idx.graph.nodes.forEach((n, i) => {
    if (n.kind === "op") n.cost = { flops: 10, bytes: 24, time_ns: 1000 + i };
  });
  idx.graph.values = { stats: false, costs: true };
  const vg = buildVisible(idx, initialExpansion(idx));
  const first = vg.nodes.find((v) => v.kind === "segment")!;
  const rows = new Map(describe(idx, vg, first.key)!.rows);
  const seg = segmentsOf(idx).list[first.id]!;
  const held = seg.items.map((it) => idx.graph.nodes[it.id]!);
  assert.ok(held.length > 50 && held.every((n) => n.kind === "op"));
  const sum = (f: (c: { flops: number; bytes: number; time_ns: number }) => number) => held.reduce((s, n) => s + f(n.cost!), 0);
  assert.equal(rows.get("FLOPs"), formatFlops(sum((c) => c.flops)));
  assert.equal(rows.get("out bytes"), formatBytes(sum((c) => c.bytes)));
  assert.equal(rows.get("time"), formatTime(sum((c) => c.time_ns)));
});

test("a ×N fold in a long run counts N calls: the segments' labels, summary and hover say calls (QA: 2,000 blocks read 'calls 1–98 of 976')", () => {
  // a compare page cuts a fold around each changed block: Block ×1,000 then 200 loose blocks
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  let prev = x;
  const blocks: number[] = [];
  for (let i = 0; i < 1200; i++) {
    const m = b.module("Block", `blocks.${i}`, root);
    const op = b.op("linear", m, "torch.nn.functional.linear");
    b.nodes[op]!.cost = b.nodes[m]!.cost = { flops: 128, bytes: 32, time_ns: 1000 };
    b.edge(prev, op);
    prev = op;
    blocks.push(m);
  }
  const out = b.add("output", "output");
  b.edge(prev, out);
  b.groups.push({ parent: root, members: blocks.slice(0, 1000), name: "Block ×1,000", cost: { flops: 128_000, bytes: 32_000, time_ns: 1_000_000 } });
  const idx = buildIndex(b.build());
  idx.graph.values = { stats: false, costs: true };
  const { vg, labels } = computeView(idx, initialExpansion(idx));
  const segs = vg.nodes.filter((v) => v.kind === "segment");
  assert.equal(segs.length, 3, "201 items: the fold and 200 blocks");
  assert.deepEqual(
    segs.map((v) => labels.get(v.key)),
    [
      { title: "calls 1–1,066 of 1,200", sub: "Block ×1,066" },
      { title: "calls 1,067–1,133 of 1,200", sub: "Block ×67" },
      { title: "calls 1,134–1,200 of 1,200", sub: "Block ×67" },
    ],
  );
  const rows = new Map(describe(idx, vg, segs[0]!.key)!.rows);
  assert.equal(describe(idx, vg, segs[0]!.key)!.title, "calls 1–1,066 of 1,200");
  assert.equal(rows.get("holds"), "Block ×1,066");
  assert.equal(rows.get("FLOPs"), formatFlops(1066 * 128), "the fold's cost and its 66 loose blocks'");
  assert.equal(rows.get("time"), formatTime(1066 * 1000));
});
