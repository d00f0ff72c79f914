// Edge labels and hovers say exactly what flows: tensors, not edges; every drawn input.
// Long labels are cut in boxes and whole in the hover.
import { test } from "node:test";
import assert from "node:assert/strict";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible } from "../../../webview/src/visible";
import { initialExpansion, reveal } from "../../../webview/src/expansion";
import { distinctTensors } from "../../../webview/src/tensors";
import { clip, edgeLabel, LABEL_MAX } from "../../../webview/src/labels";
import { describe, describeEdge, spareOrder } from "../../../webview/src/details";
import { computeView } from "../../../webview/src/compute";
import { GraphBuilder } from "./builder";

/** x → Net{ fc: Block{ mul(x), add(x, mul) } } → output: x is used twice inside fc. */
function usedTwice() {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const fc = b.module("Block", "fc", root);
  const mul = b.op("mul", fc);
  const add = b.op("add", fc);
  const out = b.add("output", "output");
  b.edge(x, mul, [4, 32]).edge(x, add, [4, 32]).edge(mul, add, [4, 32]).edge(add, out, [4, 32]);
  return { idx: buildIndex(b.build()), x, fc, mul, add, out };
}

test("one tensor read twice inside a box is one tensor with two uses", () => {
  const { idx, x, fc } = usedTwice();
  const vg = buildVisible(idx, initialExpansion(idx));
  const e = vg.edges.find((v) => v.src === `n${x}` && v.dst === `n${fc}`)!;
  assert.equal(e.edges.length, 2, "two graph edges");
  assert.equal(edgeLabel(idx.graph.edges, e.edges), "4×32", "no (+1): it is one tensor");
  const ts = distinctTensors(idx.graph.edges, e.edges);
  assert.equal(ts.length, 1);
  assert.equal(ts[0]!.uses.length, 2);
  const d = describeEdge(idx, vg, e.key)!;
  assert.equal(d.title, "x → fc");
  assert.deepEqual(d.rows[0], ["tensors", "1"]);
  assert.deepEqual(d.rows[1], ["4×32 float32", "x → mul in fc, add in fc  (×2 uses)"]);
  // The box's own hover lists x once, with its uses.
  const rows = describe(idx, vg, `n${fc}`)!.rows.filter(([k]) => k === "in");
  assert.deepEqual(rows, [["in", "4×32 float32  from x  (×2 uses)"]]);
});

test("one call reading two same-shaped outputs of one op gets two tensors (q and k of a chunk)", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const chunk = b.op("chunk", null);
  const sdpa = b.op("scaled_dot_product_attention", null);
  b.edge(x, chunk, [1, 8, 48]).edge(chunk, sdpa, [1, 8, 16]).edge(chunk, sdpa, [1, 8, 16]).edge(chunk, sdpa, [1, 8, 16]);
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, initialExpansion(idx));
  const e = vg.edges.find((v) => v.dst === `n${sdpa}`)!;
  assert.equal(edgeLabel(idx.graph.edges, e.edges), "1×8×16, 1×8×16 +1 more");
  const ins = describe(idx, vg, `n${sdpa}`)!.rows.filter(([k]) => k === "in");
  assert.equal(ins.length, 3, "the hover lists the 3 inputs the call takes");
});

test("an SDPA node's hover lists every input drawn, also from same-named producers", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const attn = b.module("Attention", "attn", null);
  const [q, k, v] = [0, 1, 2].map(() => b.op("transpose", attn));
  const sdpa = b.op("scaled_dot_product_attention", attn, "torch._C._nn.scaled_dot_product_attention");
  for (const t of [q!, k!, v!]) b.edge(x, t, [1, 16, 4, 8]).edge(t, sdpa, [1, 4, 16, 8]);
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, initialExpansion(idx)); // attn is open: its ops are drawn
  assert.ok(vg.clusters.some((c) => c.key === `n${attn}`));
  const ins = describe(idx, vg, `n${sdpa}`)!.rows.filter(([key]) => key === "in");
  assert.deepEqual(
    ins.map(([, t]) => t),
    // three calls of one name on one input: told apart by their order in attn
    ["1×4×16×8 float32  from transpose #1 in attn", "1×4×16×8 float32  from transpose #2 in attn", "1×4×16×8 float32  from transpose #3 in attn"],
  );
  assert.equal(vg.edges.filter((e) => e.dst === `n${sdpa}`).length, 3, "as many as drawn");
});

/** Llama's rotary embedding: cos and sin, each cast by its own `to` in rotary_emb, read by
 * every layer (two folded into "Layer ×2"). */
function rotary() {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const rot = b.module("Rotary", "rotary_emb", root);
  const cat = b.op("cat", rot);
  const [cos, sin] = [b.op("cos", rot), b.op("sin", rot)];
  const [m1, m2] = [b.op("mul", rot), b.op("mul", rot)];
  const [to1, to2] = [b.op("to", rot, "Tensor.to"), b.op("to", rot, "Tensor.to")];
  b.edge(x, cat, [1, 32, 64]).edge(cat, cos!, [1, 32, 128]).edge(cat, sin!, [1, 32, 128]);
  b.edge(cos!, m1!, [1, 32, 128]).edge(sin!, m2!, [1, 32, 128]).edge(m1!, to1!, [1, 32, 128]).edge(m2!, to2!, [1, 32, 128]);
  const layers = [0, 1].map((i) => b.module("Layer", `layers.${i}`, root));
  const rope = layers.map((l) => b.op("apply_rotary", l));
  for (const r of rope) b.edge(x, r!, [1, 32, 64]).edge(to1!, r!, [1, 32, 128]).edge(to2!, r!, [1, 32, 128]);
  b.groups.push({ parent: root, members: layers, name: "Layer ×2" });
  return { idx: buildIndex(b.build()), rot };
}

test("two tensors alike from two calls of one name are told apart by what they were made of (cos, sin)", () => {
  const { idx, rot } = rotary();
  const vg = buildVisible(idx, initialExpansion(idx));
  const ins = describe(idx, vg, "g0")!.rows.filter(([k]) => k === "in");
  assert.deepEqual(ins, [
    ["in", "1×32×64 float32  from x  (×2 uses)"],
    ["in", "1×32×128 float32  from to(mul(cos)) in rotary_emb  (×2 uses)"],
    ["in", "1×32×128 float32  from to(mul(sin)) in rotary_emb  (×2 uses)"],
  ]);
  // rotary_emb's own hover: its two outputs, each said where it comes from.
  const outs = describe(idx, vg, `n${rot}`)!.rows.filter(([k]) => k === "out");
  assert.equal(new Set(outs.map(([, t]) => t)).size, 2, JSON.stringify(outs));
  assert.equal(outs[0]![1], "1×32×128 float32  from to(mul(cos)) in rotary_emb  to apply_rotary in layers.0, apply_rotary in layers.1  (×2 uses)");
  assert.match(outs[1]![1], /from to\(mul\(sin\)\)/);
  // The edge into the ×2 box too.
  const e = vg.edges.find((v) => v.src === `n${rot}` && v.dst === "g0")!;
  const rows = describeEdge(idx, vg, e.key)!.rows.slice(1);
  assert.deepEqual(
    rows.map(([, t]) => t.split(" → ")[0]),
    ["to(mul(cos)) in rotary_emb", "to(mul(sin)) in rotary_emb"],
  );
});

test("two same-shaped outputs of one call are its output 1 and output 2", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const chunk = b.op("chunk", null);
  const attn = b.module("Attention", "attn", null);
  const sdpa = b.op("sdpa", attn);
  b.edge(x, chunk, [1, 8, 32]).edge(chunk, sdpa, [1, 8, 16]).edge(chunk, sdpa, [1, 8, 16]);
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, initialExpansion(idx));
  const ins = describe(idx, vg, `n${attn}`)!.rows.filter(([k]) => k === "in");
  assert.deepEqual(ins, [
    ["in", "1×8×16 float32  from chunk (output 1)"],
    ["in", "1×8×16 float32  from chunk (output 2)"],
  ]);
  // One tensor read twice stays one row (nothing to tell apart).
  const once = usedTwice();
  const vg2 = buildVisible(once.idx, initialExpansion(once.idx));
  assert.deepEqual(
    describe(once.idx, vg2, `n${once.fc}`)!.rows.filter(([k]) => k === "in"),
    [["in", "4×32 float32  from x  (×2 uses)"]],
  );
});

test("outputs of one call read alike say which output each is, the first too (QA: a Split's output 1 unnamed)", () => {
  // output 1 went to two ops (its row read apart: "×2 uses"); 2–4 each to one: only they
  // were named "chunk (output N)"
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const split = b.module("Split", "split", null);
  const chunk = b.op("chunk", split);
  const join = b.module("Join", "join", null);
  const mul1 = b.op("mul", join);
  const mul2 = b.op("mul", join);
  const add = b.op("add", join);
  b.edge(x, chunk, [2, 8]).edge(chunk, mul1, [2, 2]).edge(chunk, add, [2, 2]);
  b.edge(chunk, mul1, [2, 2]).edge(chunk, mul2, [2, 2]).edge(chunk, mul2, [2, 2]);
  const g = b.build();
  g.edges.forEach((e, i) => {
    if (i > 0) e.output = [0, 0, 1, 2, 3][i - 1];
  });
  const idx = buildIndex(g);
  const vg = buildVisible(idx, initialExpansion(idx));
  const outs = describe(idx, vg, `n${split}`)!.rows.filter(([k]) => k === "out");
  assert.equal(outs.length, 4, JSON.stringify(outs));
  for (const [i, [, text]] of outs.entries()) assert.match(text, new RegExp(`from chunk \\(output ${i + 1}\\) in split`), text);
});

test("a hub's reference boxes count as its outputs in its hover", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const cos = b.op("cos", null);
  b.edge(x, cos, [16]);
  for (let i = 0; i < 8; i++) b.edge(cos, b.op(`use${i}`, null), [16]);
  const idx = buildIndex(b.build());
  const { vg } = computeView(idx, initialExpansion(idx));
  assert.ok(vg.nodes.some((v) => v.kind === "ref"));
  const outs = describe(idx, vg, `n${cos}`)!.rows.filter(([key]) => key === "out");
  assert.deepEqual(outs, [["out", "16 float32  to use0, use1 +6 more  (×8 uses)"]]);
});

test("long labels are cut between characters as people see them, never inside one", () => {
  // QA: Array.from cut code points: accents left without their letter, flags and families split
  const accent = "e\u0301"; // é as e + a combining acute
  assert.equal(clip(accent.repeat(100)), `${accent.repeat(36)}…${accent.repeat(23)}`);
  const flag = "🇩🇪";
  assert.equal(clip(flag.repeat(100)), `${flag.repeat(36)}…${flag.repeat(23)}`);
  const family = "👩‍👩‍👧";
  assert.equal(clip(`layers.${family.repeat(80)}`), `layers.${family.repeat(29)}…${family.repeat(23)}`);
  // 50 flags are 50 characters (200 UTF-16 units): short enough to stay whole
  assert.equal(clip(flag.repeat(50)), flag.repeat(50));
  const mixed = `${"a\u0301b".repeat(40)}🇯🇵${"x👍🏽".repeat(30)}`;
  const cut = clip(mixed, 31);
  const seg = new Intl.Segmenter(undefined, { granularity: "grapheme" });
  const pieces = Array.from(seg.segment(cut), (s) => s.segment);
  assert.equal(pieces.length, 31);
  const whole = new Set(Array.from(seg.segment(mixed), (s) => s.segment));
  assert.ok(
    pieces.every((p) => p === "…" || whole.has(p)),
    cut,
  );
});

test("long labels are cut in the middle; the hover keeps the full name", () => {
  assert.equal(clip("short"), "short");
  const path = "encoder.layers.12.self_attention.query_key_value.lora_adapter.down_projection";
  const c = clip(path);
  assert.equal([...c].length, LABEL_MAX);
  assert.ok(c.startsWith("encoder.layers.12.") && c.endsWith("down_projection") && c.includes("…"));
  const huge = "A".repeat(1_000_000);
  const t0 = performance.now();
  assert.equal([...clip(huge)].length, LABEL_MAX);
  assert.ok(performance.now() - t0 < 1000);
  // Astral characters are never split in half.
  const emoji = "🔥".repeat(100);
  assert.equal(clip(emoji), `${"🔥".repeat(36)}…${"🔥".repeat(23)}`);

  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const m = b.module(huge, "m", null);
  const op = b.op("relu", m);
  b.edge(
    x,
    op,
    Array.from({ length: 5000 }, () => 2),
  );
  const idx = buildIndex(b.build());
  const view = computeView(idx, initialExpansion(idx));
  assert.equal([...view.labels.get(`n${m}`)!.title].length, LABEL_MAX);
  assert.ok(view.dot.length < 5000, "no megabyte label in the DOT");
  const e = view.vg.edges[0]!;
  assert.ok([...edgeLabel(idx.graph.edges, e.edges)].length <= 48);
  assert.equal(describe(idx, view.vg, `n${m}`)!.title, huge, "the hover has the whole name");
});

test("a group of one module called again and again counts its parameters and path once", () => {
  // x → Net{ shared(linear) ×3 }: the same Linear called three times folds into one group
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const calls = [0, 1, 2].map((call) => b.add("module", "Linear", root, { path: "shared", call, params: 72 }));
  const ops = calls.map((m) => b.op("linear", m));
  const out = b.add("output", "output");
  b.edge(x, ops[0]!).edge(ops[0]!, ops[1]!).edge(ops[1]!, ops[2]!).edge(ops[2]!, out);
  b.groups.push({ parent: root, members: calls, name: "" });
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, initialExpansion(idx));
  const rows = new Map(describe(idx, vg, "g0")!.rows);
  assert.equal(rows.get("params"), "72");
  assert.equal(rows.get("blocks"), "shared (called 3 times)");
});

test("the error node's hover says its error once", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const message = "mat1 and mat2 shapes cannot be multiplied (2x32 and 64x4)";
  const err = b.add("error", "RuntimeError", root, { attrs: { message } });
  b.edge(x, err);
  b.error = { type: "RuntimeError", message, node: err, traceback: [] };
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, initialExpansion(idx));
  const rows = describe(idx, vg, `n${err}`)!.rows;
  assert.equal(rows.filter(([, v]) => v.includes(message)).length, 1, JSON.stringify(rows));
  assert.deepEqual(
    rows.find(([k]) => k === "error"),
    ["error", `RuntimeError: ${message}`],
  );
});

test("outputs of one call are told apart by the edge's output, even of one shape (q, k, v of a split)", () => {
  // QA: the split's card said "out 2×4 float32 to mul, relu +1 more (×3 uses)": one tensor
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const split = b.op("split", root);
  const mul = b.op("mul", root);
  const relu = b.op("relu", root);
  const sin = b.op("sin", root);
  const add = b.op("add", root);
  const out = b.add("output", "output");
  b.edge(x, split, [2, 12]);
  for (const [dst, output] of [
    [mul, 0],
    [relu, 1],
    [sin, 2],
    [add, 0],
  ] as const) {
    b.edge(split, dst, [2, 4]);
    b.edges[b.edges.length - 1]!.output = output;
  }
  b.edge(sin, out, [2, 4]);
  for (const e of b.edges) if (e.src === split) e.stats = { min: e.output!, max: 1, mean: 0.5, numel: 8 };
  const idx = buildIndex(b.build());
  const ids = idx.graph.edges.flatMap((e, i) => (e.src === split ? [i] : []));
  const ts = distinctTensors(idx.graph.edges, ids);
  assert.deepEqual(
    ts.map((t) => t.uses.length),
    [2, 1, 1],
    "three tensors; the first read by two calls",
  );
  const vg = buildVisible(idx, initialExpansion(idx));
  const outs = describe(idx, vg, `n${split}`)!.rows.filter(([k]) => k === "out");
  assert.equal(outs.length, 3, JSON.stringify(outs));
  assert.ok(!outs.some(([, v]) => v.includes("×3 uses")), JSON.stringify(outs));
  // its values are its first output's, said so
  const rows = describe(idx, vg, `n${split}`)!.rows;
  const at = rows.findIndex(([k]) => k === "values of");
  assert.deepEqual(rows.slice(at, at + 2), [
    ["values of", "output 1"],
    ["min … max", "0 … 1"],
  ]);
  // without the field (an older file), one shape at three consumers reads as one tensor
  for (const e of idx.graph.edges) delete e.output;
  assert.equal(distinctTensors(idx.graph.edges, ids).length, 1);
});

test("a hover's in and out rows name modules whole (QA: paths cut at 40 characters)", () => {
  const long = "a_very_long_module_name_that_goes_on_and_on.0.and_then_some_more_while_indeed";
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const m = b.module("Block", long, null);
  const op = b.op("linear", m);
  const out = b.add("output", "output");
  b.edge(x, op, [2, 4]).edge(op, out, [2, 4]);
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, reveal(idx, initialExpansion(idx), op));
  const rows = describe(idx, vg, `n${out}`)!.rows.filter(([k]) => k === "in");
  assert.deepEqual(rows, [["in", `2×4 float32  from linear in ${long}`]]);
});

test("a card too tall for a short window gives up its least needed rows first, never its shapes or line", () => {
  // QA: the card was cut at its bottom, which is where the line (site) and the histogram are
  const labels = [
    "kind",
    "target",
    "path",
    "params",
    "in",
    "out",
    "out",
    "FLOPs",
    "out bytes",
    "time",
    "min … max (finite)",
    "mean ± std",
    "|max| (finite)",
    "zeros",
    "NaN / Inf",
    "site",
    "inside",
    "defined",
    "error",
  ];
  const order = spareOrder(labels.map((k): [string, string] => [k, "v"]));
  const gone = order.map((i) => labels[i]);
  assert.deepEqual(gone, [
    "defined",
    "zeros",
    "|max| (finite)",
    "mean ± std",
    "time",
    "out bytes",
    "FLOPs",
    "min … max (finite)",
    "params",
    "path",
    "target",
  ]);
  // rows it knows nothing of (a module's attributes, a hint) go after those, from the last one up
  const more = spareOrder([
    ["kind", "module"],
    ["in_features", "8"],
    ["bias", "true"],
    ["zeros", "0 %"],
    ["", "open it with + to see the calls"],
    ["site", "a.py:3"],
  ]);
  assert.deepEqual(more, [3, 4, 2, 1]);
});
