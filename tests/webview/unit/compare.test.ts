// The compare view's pure part (webview/src/compare.ts): the `compare` field decoded and
// checked, the order next / previous change steps through, what each drawn box, frame and
// edge is marked, the count of changes a closed box hides, and the hover rows.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encode } from "@msgpack/msgpack";
import { changeText, compareRows, countStatus, stepChange, viewMarks, type NodeStatus } from "../../../webview/src/compare";
import { expandAll, initialExpansion, reveal } from "../../../webview/src/expansion";
import { describe, describeEdge } from "../../../webview/src/details";
import { decodeGraph, FormatError } from "../../../webview/src/format";
import { buttonAction, keyAction } from "../../../webview/src/keys";
import { buildIndex } from "../../../webview/src/model";
import { nodeValues, onlyZeros, overlay, topRows } from "../../../webview/src/measures";
import { buildVisible } from "../../../webview/src/visible";
import { GraphBuilder } from "./builder";

/**
 * x → Net{ fc1{linear}, relu, Block ×2, dropout (removed), extra{gelu} (added) } → output.
 * fc1 got wider: it and its linear changed; a's dropout is a ghost; extra is new.
 */
function compareGraph() {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const fc1 = b.module("Linear", "fc1", root);
  const lin1 = b.op("linear", fc1, "torch.nn.functional.linear");
  const act = b.op("relu", root, "torch.relu");
  const b0 = b.module("Block", "blocks.0", root);
  const l0 = b.op("linear", b0);
  const b1 = b.module("Block", "blocks.1", root);
  const l1 = b.op("linear", b1);
  const ghost = b.op("dropout", root, "torch.nn.functional.dropout");
  const extra = b.module("GELU", "extra", root);
  const gelu = b.op("gelu", extra);
  const out = b.add("output", "output");
  b.edge(x, lin1).edge(lin1, act).edge(act, l0).edge(l0, l1).edge(l1, gelu).edge(gelu, out).edge(l1, ghost).edge(ghost, out);
  b.groups.push({ parent: root, members: [b0, b1], name: "Block ×2" });
  const g = b.build();
  const n = g.nodes.length;
  const status: NodeStatus[] = new Array<NodeStatus>(n).fill("same");
  status[fc1] = status[lin1] = "changed";
  status[ghost] = "removed";
  status[extra] = status[gelu] = "added";
  const details: string[][] = Array.from({ length: n }, () => []);
  details[fc1] = ["out_features: 4 → 8", "output: [1, 4] → [1, 8]"];
  details[lin1] = ["output: [1, 4] → [1, 8]"];
  details[ghost] = ["torch.nn.functional.dropout", "inputs [1, 4]"];
  details[extra] = ["torch.nn.GELU", "params 0"];
  const inside = new Array<number>(n).fill(0);
  inside[root] = 4;
  inside[fc1] = 1;
  inside[extra] = 0;
  const compare = {
    format: "torchscope.diff",
    a: { source: "net.py:Net (HEAD)", model: { name: "Net", qualname: "net.Net", params: 10 }, stats: {}, error: null },
    b: { source: "net.py:Net", model: { name: "Net", qualname: "net.Net", params: 20 }, stats: {}, error: null },
    status,
    side: status.map((s) => (s === "removed" ? "a" : "b")),
    a_ids: status.map((s, i) => (s === "added" ? null : i)),
    b_ids: status.map((s, i) => (s === "removed" ? null : i)),
    details,
    inside,
    // x→lin1, lin1→act, act→l0, l0→l1 same; l1→gelu, gelu→out added; l1→ghost, ghost→out removed
    edges: ["same", "same", "same", "same", "added", "added", "removed", "removed"],
    changes: [fc1, lin1, ghost, extra],
  };
  return { g, compare, ids: { x, root, fc1, lin1, act, b0, l0, b1, l1, ghost, extra, gelu, out } };
}

function decoded() {
  const { g, compare, ids } = compareGraph();
  const graph = decodeGraph(encode({ ...g, compare }));
  return { graph, idx: buildIndex(graph), ids };
}

test("a graph with a compare field decodes it; a plain graph has none", () => {
  const { graph, ids } = decoded();
  const c = graph.compare!;
  assert.ok(c, "decoded");
  assert.equal(c.status[ids.fc1], "changed");
  assert.equal(c.side[ids.ghost], "a");
  assert.equal(c.a_ids[ids.extra], null);
  assert.equal(c.b_ids[ids.ghost], null);
  assert.deepEqual(c.details[ids.fc1], ["out_features: 4 → 8", "output: [1, 4] → [1, 8]"]);
  assert.equal(c.a.source, "net.py:Net (HEAD)");
  assert.deepEqual(c.changes, [ids.fc1, ids.lin1, ids.ghost, ids.extra]);
  assert.equal(decodeGraph(encode(compareGraph().g)).compare, undefined);
});

test("a malformed compare field is a FormatError that says what is wrong", () => {
  const { g, compare } = compareGraph();
  const bad =
    (patch: object): (() => unknown) =>
    () =>
      decodeGraph(encode({ ...g, compare: { ...compare, ...patch } }));
  assert.throws(
    bad({ status: compare.status.slice(1) }),
    (e: unknown) => e instanceof FormatError && /"status" has 12 entries for 13 nodes/.test(e.message),
  );
  assert.throws(bad({ details: compare.details.slice(2) }), /"details" has 11 entries for 13 nodes/);
  assert.throws(bad({ inside: [...compare.inside, 0] }), /"inside" has 14 entries/);
  assert.throws(bad({ edges: compare.edges.slice(1) }), /"edges" has 7 entries for 8 edges/);
  assert.throws(bad({ side: compare.side.map(() => "c") }), /side\[0\] is "c"/);
  assert.throws(bad({ status: compare.status.map(() => "moved") }), /status\[0\] is "moved"/);
  assert.throws(bad({ edges: compare.edges.map(() => "changed") }), /edges\[0\] is "changed"/);
  assert.throws(bad({ changes: [99] }), /changes\[0\] is not a node id/);
  assert.throws(bad({ changes: [5, 2] }), /increasing order/);
  assert.throws(bad({ a_ids: compare.a_ids.map(() => "x") }), /a_ids\[0\] should be a node id or nil/);
  assert.throws(bad({ status: undefined }), /"status" should be a list/);
  assert.throws(() => decodeGraph(encode({ ...g, compare: [1, 2] })), /compare should be a map/);
});

test("counts by status, every node once", () => {
  const { graph } = decoded();
  assert.deepEqual(countStatus(graph.compare!), { added: 2, removed: 1, changed: 2, same: 8 });
});

test("next and previous change: in node order, wrapping, from wherever the selection is", () => {
  const changes = [2, 3, 9, 10];
  assert.equal(stepChange(changes, null, 1), 0);
  assert.equal(stepChange(changes, null, -1), 3);
  assert.equal(stepChange(changes, 2, 1), 1);
  assert.equal(stepChange(changes, 10, 1), 0, "wraps to the first");
  assert.equal(stepChange(changes, 2, -1), 3, "wraps to the last");
  assert.equal(stepChange(changes, 9, -1), 1);
  // A selected node that is not a change: the next change after it, the one before it.
  assert.equal(stepChange(changes, 5, 1), 2);
  assert.equal(stepChange(changes, 5, -1), 1);
  assert.equal(stepChange(changes, 0, -1), 3);
  assert.equal(stepChange(changes, 11, 1), 0);
  assert.equal(stepChange([], null, 1), null);
});

test("the opening view: each box marked with its status, a closed box counts the changes it hides", () => {
  const { graph, idx, ids } = decoded();
  const vg = buildVisible(idx, initialExpansion(idx));
  const m = viewMarks(graph.compare!, vg);
  assert.equal(m.status.get(`n${ids.root}`), "same", "the root's frame");
  assert.equal(m.status.get(`n${ids.fc1}`), "changed");
  assert.equal(m.status.get(`n${ids.ghost}`), "removed");
  assert.equal(m.status.get(`n${ids.extra}`), "added");
  assert.equal(m.status.get("g0"), "same", "the ×2 group");
  // fc1 is closed: its changed linear is one change inside it; extra's gelu is part of the
  // added module (one change, extra itself), so extra hides none.
  assert.deepEqual([...m.hidden], [[`n${ids.fc1}`, 1]]);
  // x → fc1 carries one same tensor; l1's tensors to gelu / dropout are drawn from the group.
  assert.equal(m.edges.get(`n${ids.x}>n${ids.fc1}`), "same");
  assert.equal(m.edges.get(`g0>n${ids.extra}`), "added");
  assert.equal(m.edges.get(`g0>n${ids.ghost}`), "removed");
  assert.equal(m.edges.get(`n${ids.ghost}>n${ids.out}`), "removed");
});

test("a closed root hides every change; an edge carrying tensors of different kinds is changed", () => {
  const { graph, idx, ids } = decoded();
  const closed = buildVisible(idx, { modules: new Set(), groups: new Set(), segments: new Set() });
  const m = viewMarks(graph.compare!, closed);
  assert.equal(m.hidden.get(`n${ids.root}`), 4);
  // x → root carries a same tensor; root → output carries an added and a removed one.
  assert.equal(m.edges.get(`n${ids.x}>n${ids.root}`), "same");
  assert.equal(m.edges.get(`n${ids.root}>n${ids.out}`), "changed");
});

test("opened as far as the changes go, none is hidden; Expand all keeps a one-op wrapper closed", () => {
  const { graph, idx, ids } = decoded();
  const opened = buildVisible(idx, reveal(idx, initialExpansion(idx), ids.lin1));
  const m = viewMarks(graph.compare!, opened);
  assert.equal(m.hidden.size, 0);
  assert.equal(m.status.get(`n${ids.lin1}`), "changed");
  assert.equal(m.status.get(`n${ids.fc1}`), "changed", "fc1's frame");
  const all = viewMarks(graph.compare!, buildVisible(idx, expandAll(idx)));
  assert.deepEqual([...all.hidden], [[`n${ids.fc1}`, 1]]);
});

test("colour by leaves version a's ghosts out: not in the table, its total, the scale or a module's largest |value|", () => {
  // the heaviest-nodes table listed a's removed dropout (and counted it in the total), the
  // legend's range went up to it: pass a's numbers mixed into pass b's
  const { g, compare, ids } = compareGraph();
  const cost = (flops: number) => ({ flops, bytes: 16, time_ns: flops + 1 });
  const flops: [number, number][] = [
    [ids.lin1, 100],
    [ids.act, 0],
    [ids.l0, 1000],
    [ids.l1, 2000],
    [ids.ghost, 50_000],
    [ids.gelu, 10],
    [ids.fc1, 100],
    [ids.b0, 1000],
    [ids.b1, 2000],
    [ids.extra, 10],
    [ids.root, 3110],
  ];
  for (const [id, f] of flops) g.nodes[id]!.cost = cost(f);
  g.groups[0]!.cost = cost(3000);
  const stats = (absmax: number) => ({ min: -absmax, max: absmax, mean: 0, std: 1, absmax, zeros: 0, nan: 0, inf: 0, numel: 4 });
  for (const e of g.edges) e.stats = stats(e.src === ids.ghost ? 999 : 2);
  g.values = { stats: true, costs: true };
  const graph = decodeGraph(encode({ ...g, compare }));
  const idx = buildIndex(graph);
  const rows = topRows(idx, "flops");
  assert.deepEqual(
    rows.map((r) => r.id),
    [ids.l1, ids.l0, ids.lin1, ids.gelu],
  );
  assert.ok(Math.abs(rows[0]!.share! - 2000 / 3110) < 1e-12, "a share of b's total");
  assert.ok(!topRows(idx, "time").some((r) => r.id === ids.ghost));
  assert.ok(!topRows(idx, "absmax").some((r) => r.id === ids.ghost));
  assert.equal(nodeValues(idx, "absmax")[ids.root], 2, "the root's largest |value| is b's");
  // the ghost drawn: uncoloured, and the scale spans b's boxes only
  const vg = buildVisible(idx, initialExpansion(idx));
  assert.ok(vg.nodes.some((v) => v.key === `n${ids.ghost}`));
  const o = overlay(idx, vg, "flops");
  assert.ok(!o.heat.has(`n${ids.ghost}`), "a ghost has no heat");
  assert.equal(o.scale!.hi, 3000);
  assert.equal(overlay(idx, vg, "absmax").scale!.hi, 2);
  // every node of b at 0, the ghost not: every node has 0
  for (const n of graph.nodes) if (n.cost && n.id !== ids.ghost) n.cost.flops = 0;
  graph.groups[0]!.cost!.flops = 0;
  assert.equal(onlyZeros(idx, "flops", nodeValues(idx, "flops")), true);
});

test("hover rows: the status, before → after, the version of a ghost, what a box hides", () => {
  const { graph, idx, ids } = decoded();
  const c = graph.compare!;
  const vg = buildVisible(idx, initialExpansion(idx));
  const m = viewMarks(c, vg);
  assert.deepEqual(compareRows(c, vg, m, `n${ids.fc1}`), [
    ["compare", "changed"],
    ["before → after", "out_features: 4 → 8"],
    ["", "output: [1, 4] → [1, 8]"],
    ["changes inside", "1"],
  ]);
  assert.deepEqual(compareRows(c, vg, m, `n${ids.ghost}`), [
    ["compare", "removed (only in a, before)"],
    ["is", "torch.nn.functional.dropout"],
    ["", "inputs [1, 4]"],
    ["line in", "a: net.py:Net (HEAD)"],
  ]);
  assert.deepEqual(compareRows(c, vg, m, `n${ids.act}`), [["compare", "unchanged"]]);
  assert.deepEqual(compareRows(c, vg, m, "g0"), []);
  assert.equal(changeText(c, idx, 0), "fc1 (Linear) changed — out_features: 4 → 8 · change 1 of 4");
  assert.equal(changeText(c, idx, 2), "dropout removed — torch.nn.functional.dropout · change 3 of 4");
});

test("a box's hover lists version a's connections apart, said to be removed", () => {
  // "out … to dropout" read as a tensor b still sends to a node only a had
  const { idx, ids } = decoded();
  const vg = buildVisible(idx, initialExpansion(idx));
  const tensors = (key: string) => describe(idx, vg, key)!.rows.filter(([k]) => k === "in" || k === "out");
  const gone = "  (removed: in a only)";
  assert.deepEqual(tensors(`n${ids.out}`), [
    ["in", "1×4 float32  from gelu in extra"],
    ["in", `1×4 float32  from dropout${gone}`],
  ]);
  assert.deepEqual(
    tensors("g0").filter(([k]) => k === "out"),
    [
      ["out", "1×4 float32  to gelu in extra"],
      ["out", `1×4 float32  to dropout${gone}`],
    ],
  );
  // an edge drawn into the ghost: each tensor it carries is a's
  const edge = vg.edges.find((e) => e.dst === `n${ids.ghost}`)!;
  assert.ok(
    describeEdge(idx, vg, edge.key)!
      .rows.slice(1)
      .every(([, v]) => v.endsWith(gone)),
  );
  // b's own connections say nothing of a
  assert.ok(tensors(`n${ids.act}`).every(([, v]) => !v.includes("removed")));
});

test("a box of b that raised shows no values of a's removed tensors (QA: fc2's hover had a's numbers)", () => {
  // b's fc2 raised: its linear is a ghost of a's, and the only tensor out of the closed
  // fc2 box is a's (removed): its statistics are a's, not b's
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const fc2 = b.module("Linear", "fc2", root);
  const ghost = b.op("linear", fc2, "torch.nn.functional.linear");
  const out = b.add("output", "output");
  b.edge(x, ghost).edge(ghost, out);
  const g = b.build();
  const stats = { min: -0.45, max: 0.46, mean: 0.12, std: 0.36, absmax: 0.46, zeros: 0, nan: 0, inf: 0, numel: 4 };
  g.edges[1]!.stats = stats;
  g.values = { stats: true, costs: false };
  const n = g.nodes.length;
  const status: NodeStatus[] = new Array<NodeStatus>(n).fill("same");
  status[fc2] = "changed";
  status[ghost] = "removed";
  status[out] = "removed";
  const compare = {
    format: "torchscope.diff",
    a: { source: "a", model: { name: "Net", qualname: "m.Net", params: 1 }, stats: {}, error: null },
    b: { source: "b", model: { name: "Net", qualname: "m.Net", params: 1 }, stats: {}, error: { type: "RuntimeError", message: "boom" } },
    status,
    side: status.map((st) => (st === "removed" ? "a" : "b")),
    a_ids: status.map((_, i) => i),
    b_ids: status.map((st, i) => (st === "removed" ? null : i)),
    details: Array.from({ length: n }, () => []),
    inside: new Array<number>(n).fill(0),
    edges: ["same", "removed"],
    changes: [fc2, ghost, out],
  };
  const graph = decodeGraph(encode({ ...g, compare }));
  const idx = buildIndex(graph);
  const vg = buildVisible(idx, initialExpansion(idx));
  const rows = describe(idx, vg, `n${fc2}`)!.rows.map(([k]) => k);
  assert.ok(!rows.some((k) => k.startsWith("min")), `no statistics of a's: ${rows.join(", ")}`);
  // the ghost itself still shows its (a's) values: it is a's
  const opened = buildVisible(idx, reveal(idx, initialExpansion(idx), ghost));
  assert.ok(describe(idx, opened, `n${ghost}`)!.rows.some(([k]) => k.startsWith("min")));
});

test("a connection only a had names a source b changed as a knew it", () => {
  // a: blocks.1's linear fed the dropout; b made it a matmul (one node, changed)
  const { g, compare, ids } = compareGraph();
  g.nodes[ids.l1]!.name = "matmul";
  compare.status[ids.l1] = "changed";
  compare.details[ids.l1] = ["target: torch.nn.functional.linear → torch.matmul"];
  const graph = decodeGraph(encode({ ...g, compare }));
  const idx = buildIndex(graph);
  const vg = buildVisible(idx, expandAll(idx));
  const ins = describe(idx, vg, `n${ids.ghost}`)!.rows.filter(([k]) => k === "in");
  assert.deepEqual(ins, [["in", "1×4 float32  from linear (now matmul) in blocks.1  (removed: in a only)"]]);
  const edge = vg.edges.find((e) => e.dst === `n${ids.ghost}`)!;
  assert.match(describeEdge(idx, vg, edge.key)!.rows[1]![1], /^linear \(now matmul\) in blocks\.1 → /);
  // b's own connection from it keeps b's name
  // a dunder target reads as its op's name: a's `x[:, :2]` was getitem
  compare.details[ids.l1] = ["target: Tensor.__getitem__ → torch.matmul"];
  const idx2 = buildIndex(decodeGraph(encode({ ...g, compare })));
  const vg2 = buildVisible(idx2, expandAll(idx2));
  assert.match(describe(idx2, vg2, `n${ids.ghost}`)!.rows.find(([k]) => k === "in")![1], /from getitem \(now matmul\) in blocks\.1/);
  const kept = vg.edges.find((e) => e.edges.includes(4))!; // l1 → gelu, added in b
  assert.match(describeEdge(idx, vg, kept.key)!.rows[1]![1], /^matmul in blocks\.1 → /);
});

test("N and P step through changes; the toolbar's buttons do the same", () => {
  const press = (key: string) => keyAction({ key, ctrlKey: false, metaKey: false, altKey: false, inTextField: false });
  assert.deepEqual(press("n"), { type: "change-step", step: 1 });
  assert.deepEqual(press("P"), { type: "change-step", step: -1 });
  assert.equal(keyAction({ key: "n", ctrlKey: false, metaKey: false, altKey: false, inTextField: true }), null, "typed in the search box");
  assert.deepEqual(buttonAction("next-change"), { type: "change-step", step: 1 });
  assert.deepEqual(buttonAction("prev-change"), { type: "change-step", step: -1 });
});
