import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { encode } from "@msgpack/msgpack";
import { decodeGraph } from "../../../webview/src/format";
import { buildIndex } from "../../../webview/src/model";
import { initialExpansion } from "../../../webview/src/expansion";
import { buildVisible } from "../../../webview/src/visible";
import { MEASURES, available, drawnValue, heat, nodeValues, onlyZeros, overlay, scaleOf, topRows } from "../../../webview/src/measures";
import { formatCount } from "../../../webview/src/count";
import { nanBannerText } from "../../../webview/src/valuesPanel";
import { formatBytes, formatFlops, formatRange, formatShare, formatTime, formatValue } from "../../../webview/src/units";
import { valueDetails } from "../../../webview/src/valueDetails";
import { GraphBuilder, mlpWithBlocks } from "./builder";

const GOLDEN = new URL("../../golden/mlp.graph.msgpack", import.meta.url);

test("numbers for people", () => {
  assert.equal(formatFlops(1_234_000_000), "1.2 GFLOP");
  assert.equal(formatFlops(64), "64 FLOP");
  assert.equal(formatBytes(3_100_000), "3.1 MB");
  assert.equal(formatBytes(999), "999 B");
  assert.equal(formatTime(4_200_000), "4.2 ms");
  assert.equal(formatTime(850_000), "850 µs");
  assert.equal(formatTime(1_300_000_000), "1.3 s");
  assert.equal(formatValue(0.012345), "0.01235");
  assert.equal(formatValue(123456.7), "1.23e+5");
  assert.equal(formatValue(null), "–");
  assert.equal(formatShare(0.125), "13%");
  assert.equal(formatShare(0.0004), "<0.1%");
});

test("a share short of all is never written as all (QA: 4,095 zeros of 4,096 read 100%)", () => {
  assert.equal(formatShare(4095 / 4096), ">99.9%");
  assert.equal(formatShare(0.9996), ">99.9%");
  assert.equal(formatShare(0.996), "99.6%");
  assert.equal(formatShare(0.95), "95.0%");
  assert.equal(formatShare(1), "100%");
  assert.equal(formatShare(0.5), "50%");
});

test("a range's ends get the digits it takes to tell them apart (QA: 20000 … 20000)", () => {
  assert.deepEqual(formatRange(19999.6, 20000.4), ["19999.6", "20000.4"]);
  assert.deepEqual(formatRange(-0.5, 0.25), ["-0.5", "0.25"], "told apart already: as formatValue");
  assert.deepEqual(formatRange(1.00001e6, 1.00002e6), ["1.00001e+6", "1.00002e+6"]);
  assert.deepEqual(formatRange(3, 3), ["3", "3"], "one value: the same text");
  assert.deepEqual(formatRange(null, 2), ["–", "2"]);
  const [a, b] = formatRange(1, 1 + 1e-12);
  assert.deepEqual([a, b], ["1", "1"], "beyond 10 digits: as formatValue writes them");
  assert.deepEqual(formatRange(5e-7, 5.0000000001e-7), ["5.00e-7", "5.00e-7"]);
  // review: one number written two ways at formatValue's switch of notation
  assert.deepEqual(formatRange(99999.6, 100000.4), ["9.99996e+4", "1.00000e+5"]);
  assert.deepEqual(formatRange(0.00099996, 0.00100004), ["0.00099996", "0.001"]);
  assert.deepEqual(formatRange(-20000.4, -19999.6), ["-20000.4", "-19999.6"]);
});

test("the golden file's values and costs decode", () => {
  const g = decodeGraph(readFileSync(GOLDEN));
  assert.deepEqual(g.values, { stats: true, costs: true });
  assert.equal(g.nan_origin, null);
  const x = g.nodes.find((n) => n.kind === "input")!;
  const e = g.edges.find((d) => d.src === x.id)!;
  assert.equal(e.stats!.numel, 12);
  assert.equal(e.stats!.nan, 0);
  assert.ok(e.stats!.min! <= e.stats!.mean! && e.stats!.mean! <= e.stats!.max!);
  assert.equal(e.hist!.counts.length, 16);
  assert.equal(
    e.hist!.counts.reduce((a, b) => a + b, 0),
    12,
  );
  // three Linear layers on 3 rows: 2 * 3 * (4*8 + 2 * 8*8 + 8*2) FLOPs, as the Python test says
  const root = g.nodes.find((n) => n.kind === "module" && n.parent === null)!;
  assert.equal(root.cost!.flops, 2 * 3 * (4 * 8 + 2 * 8 * 8 + 8 * 2));
  assert.ok(g.groups[0]!.cost!.flops > 0);
});

test("files without values decode: nothing recorded, measures unavailable", () => {
  const { g } = mlpWithBlocks();
  const back = decodeGraph(encode({ ...g, values: undefined, nan_origin: undefined }, { ignoreUndefined: true }));
  assert.deepEqual(back.values, { stats: false, costs: false });
  assert.equal(back.nan_origin, null);
  assert.ok(!available(back, "flops") && !available(back, "absmax") && available(back, "params"));
  // malformed decorations are dropped, not fatal
  const bad = { ...g, edges: g.edges.map((e) => ({ ...e, stats: { min: "x" }, hist: 3 })), nan_origin: 999 };
  const read = decodeGraph(encode(bad));
  assert.ok(read.edges.every((e) => e.stats === undefined && e.hist === undefined));
  assert.equal(read.nan_origin, null);
});

test("statistics asked for but on no edge (a meta-device trace): their measures are unavailable", () => {
  // "NaN/Inf values" said "no node has a value above 0": read as "no NaN", though nothing was measured
  const { g } = mlpWithBlocks();
  const meta = decodeGraph(encode({ ...g, values: { stats: true, costs: true } }));
  assert.ok(!available(meta, "absmax") && !available(meta, "nonfinite"));
  assert.ok(available(meta, "flops"), "costs are still there");
  assert.ok(available(withValues().g, "absmax") && available(withValues().g, "nonfinite"));
});

/** The builder's MLP with costs and statistics, like the tracer writes them. */
function withValues() {
  const { g, ids } = mlpWithBlocks();
  const cost = (flops: number, time: number) => ({ flops, bytes: 16, time_ns: time });
  g.nodes[ids.lin1!]!.cost = cost(100, 10);
  g.nodes[ids.act!]!.cost = cost(0, 5);
  g.nodes[ids.l0!]!.cost = cost(1000, 20);
  g.nodes[ids.l1!]!.cost = cost(10_000, 40);
  for (const m of [ids.fc1!, ids.b0!, ids.b1!]) {
    const kid = m === ids.fc1 ? ids.lin1! : m === ids.b0 ? ids.l0! : ids.l1!;
    g.nodes[m]!.cost = { ...g.nodes[kid]!.cost!, time_ns: g.nodes[kid]!.cost!.time_ns + 1 };
  }
  g.nodes[ids.root!]!.cost = cost(11_100, 100);
  g.groups[0]!.cost = cost(11_000, 62);
  g.nodes[ids.fc1!]!.params = 20;
  g.nodes[ids.b0!]!.params = 30;
  g.nodes[ids.b1!]!.params = 30;
  const stats = (absmax: number, nan = 0) => ({ min: -absmax, max: absmax, mean: 0, std: 1, absmax, zeros: 0, nan, inf: 0, numel: 4 });
  for (const e of g.edges) e.stats = stats(e.src === ids.l0 ? 50 : 2, e.src === ids.l1 ? 3 : 0);
  g.edges[0]!.hist = { lo: -2, hi: 2, counts: Array.from({ length: 16 }, (_, i) => i) };
  g.values = { stats: true, costs: true };
  g.nan_origin = ids.l1!;
  return { g: decodeGraph(encode(g)), ids };
}

test("node values: costs as recorded, absmax and NaN/Inf rolled up as the largest inside", () => {
  const { g, ids } = withValues();
  const idx = buildIndex(g);
  const flops = nodeValues(idx, "flops");
  assert.equal(flops[ids.l1!], 10_000);
  assert.ok(Number.isNaN(flops[ids.x!]!), "inputs have no cost");
  const absmax = nodeValues(idx, "absmax");
  assert.equal(absmax[ids.l0!], 50);
  assert.equal(absmax[ids.b0!], 50, "a module: the largest |value| made inside it");
  assert.equal(absmax[ids.root!], 50);
  assert.equal(nodeValues(idx, "nonfinite")[ids.b1!], 3);
  assert.equal(nodeValues(idx, "params")[ids.b0!], 30);
  // a ×N box: costs from the group, others summed (params) or the largest (absmax)
  const vg = buildVisible(idx, initialExpansion(idx));
  const box = vg.nodes.find((v) => v.kind === "group")!;
  assert.equal(drawnValue(idx, flops, "flops", box), 11_000);
  assert.equal(drawnValue(idx, nodeValues(idx, "params"), "params", box), 60);
  assert.equal(drawnValue(idx, absmax, "absmax", box), 50);
});

test("scales and heat: log over positives, linear from 0 otherwise", () => {
  const s = scaleOf([10, 100, 1000, 0, NaN], true)!;
  assert.deepEqual(s, { lo: 10, hi: 1000, log: true });
  assert.equal(heat(s, 10), 0);
  assert.ok(Math.abs(heat(s, 100) - 0.5) < 1e-12);
  assert.equal(heat(s, 1000), 1);
  assert.equal(heat(s, 0), 0);
  assert.deepEqual(scaleOf([0, 5, 5], true), { lo: 0, hi: 5, log: false });
  assert.equal(scaleOf([NaN], true), null);
  const lin = scaleOf([0, 3], false)!;
  assert.equal(heat(lin, 1.5), 0.5);
});

test("overlay: heat for every drawn box with a value, scaled over what is drawn", () => {
  const { g, ids } = withValues();
  const idx = buildIndex(g);
  // every module open (Expand all leaves one-op wrappers closed)
  const all = buildVisible(idx, { modules: new Set(idx.containers), groups: new Set([0]), segments: new Set<number>() });
  const o = overlay(idx, all, "flops");
  assert.equal(o.heat.get(`n${ids.l1}`), 1);
  assert.equal(o.heat.get(`n${ids.lin1}`), 0);
  assert.ok(Math.abs(o.heat.get(`n${ids.l0}`)! - 0.5) < 1e-12);
  assert.equal(o.heat.get(`n${ids.act}`), 0, "0 FLOPs: the cold end");
  assert.ok(!o.heat.has(`n${ids.x}`), "an input has no cost: left uncoloured");
  assert.equal(overlay(idx, all, "none").heat.size, 0);
});

test("NaN/Inf: any count is clearly warm, 0 the cold end, counts orders of magnitude apart told apart", () => {
  // QA: a linear scale gave a box with 1 NaN beside one with 1,000,000 the cold colour of none
  const { g, ids } = withValues();
  const counts: Record<number, number> = { [ids.lin1!]: 0, [ids.act!]: 1, [ids.l0!]: 1000, [ids.l1!]: 1_000_000 };
  for (const e of g.edges) e.stats!.nan = counts[e.src] ?? 0;
  const idx = buildIndex(g);
  const all = buildVisible(idx, { modules: new Set(idx.containers), groups: new Set([0]), segments: new Set<number>() });
  const o = overlay(idx, all, "nonfinite");
  const h = (id: number): number => o.heat.get(`n${id}`)!;
  assert.equal(h(ids.lin1!), 0, "none: the cold end");
  assert.ok(h(ids.act!) >= 0.3, `1 NaN is clearly warm: heat ${h(ids.act!)}`);
  assert.ok(h(ids.l0!) - h(ids.act!) >= 0.2, `1,000 apart from 1: ${h(ids.act!)} → ${h(ids.l0!)}`);
  assert.ok(h(ids.l1!) - h(ids.l0!) >= 0.2, `1,000,000 apart from 1,000: ${h(ids.l0!)} → ${h(ids.l1!)}`);
  assert.equal(h(ids.l1!), 1);
  assert.ok(o.scale?.log, "a log scale (the legend says so)");
  assert.equal(o.scale.lo, 1, "its warm end starts at the smallest count drawn");
  // one count drawn beside boxes without any: still the hot end, 0 the cold
  for (const e of g.edges) e.stats!.nan = e.src === ids.l0 ? 2 : 0;
  const one = overlay(buildIndex(g), all, "nonfinite");
  assert.equal(one.heat.get(`n${ids.l0}`), 1);
  assert.equal(one.heat.get(`n${ids.lin1}`), 0);
});

test("every drawn box at 0 (FLOPs of an unrolled `x + 1`): no scale, the boxes at the cold end, and it says so", () => {
  // the legend said "nothing drawn has a value" and the table "Heaviest 0 by FLOPs"
  const { g, ids } = withValues();
  for (const n of g.nodes) if (n.cost) n.cost.flops = 0;
  g.groups[0]!.cost!.flops = 0;
  const idx = buildIndex(g);
  const all = buildVisible(idx, { modules: new Set(idx.containers), groups: new Set([0]), segments: new Set<number>() });
  const o = overlay(idx, all, "flops");
  assert.equal(o.scale, null);
  assert.equal(o.zeros, true, "every drawn value is 0");
  assert.equal(o.heat.get(`n${ids.l1}`), 0, "0: the cold end");
  assert.ok(!o.heat.has(`n${ids.x}`), "an input has no cost: left uncoloured");
  const flops = nodeValues(idx, "flops");
  assert.deepEqual(topRows(idx, "flops", 20, flops), []);
  assert.equal(onlyZeros(idx, "flops", flops), true);
  // nothing recorded at all is another thing: no value, not 0
  assert.equal(overlay(idx, all, "flops", new Float64Array(g.nodes.length).fill(NaN)).zeros, false);
  assert.equal(onlyZeros(idx, "flops", new Float64Array(g.nodes.length).fill(NaN)), false);
  assert.equal(onlyZeros(idx, "params", nodeValues(idx, "params")), false, "some have parameters");
  assert.equal(overlay(idx, all, "params").zeros, false);
});

test("a segment of a long run (its calls folded) has its calls' value: summed, or the largest", () => {
  // a segment's value was the value of the node whose id is the segment's number
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Loop", "", null);
  let prev = x;
  for (let i = 0; i < 300; i++) {
    const op = b.op("add", root, "Tensor.add");
    b.nodes[op]!.cost = { flops: i < 200 ? 2 : 1, bytes: 8, time_ns: 10 };
    b.edge(prev, op, [2, 4]);
    prev = op;
  }
  const out = b.add("output", "output");
  b.edge(prev, out, [2, 4]);
  b.nodes[root]!.cost = { flops: 500, bytes: 2000, time_ns: 2500 };
  const g = b.build();
  g.values = { stats: false, costs: true };
  const idx = buildIndex(decodeGraph(encode(g)));
  const vg = buildVisible(idx, initialExpansion(idx));
  const segs = vg.nodes.filter((v) => v.kind === "segment");
  assert.equal(segs.length, 3);
  const flops = nodeValues(idx, "flops");
  assert.deepEqual(
    segs.map((v) => drawnValue(idx, flops, "flops", v)),
    [200, 200, 100],
  );
  const o = overlay(idx, vg, "flops");
  assert.deepEqual(o.scale, { lo: 100, hi: 200, log: true });
  assert.equal(o.heat.get(segs[0]!.key), 1);
  assert.equal(o.heat.get(segs[2]!.key), 0);
});

test("table rows: heaviest ops first with their share; parameters rank innermost modules", () => {
  const { g, ids } = withValues();
  const idx = buildIndex(g);
  const rows = topRows(idx, "flops");
  assert.deepEqual(
    rows.map((r) => r.id),
    [ids.l1, ids.l0, ids.lin1],
  );
  assert.equal(rows[0]!.where, "blocks.1");
  assert.ok(Math.abs(rows[0]!.share! - 10_000 / 11_100) < 1e-12);
  assert.deepEqual(
    topRows(idx, "flops", 2).map((r) => r.id),
    [ids.l1, ids.l0],
  );
  assert.deepEqual(
    topRows(idx, "params").map((r) => r.id),
    [ids.b0, ids.b1, ids.fc1],
  );
  assert.equal(topRows(idx, "absmax")[0]!.share, null, "not additive: no share");
});

test("a tensor a factory call made ranks among the heaviest (QA: torch.randn(2000, 2000) left out)", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const made = b.add("constant", "randn", root, { cost: { flops: 0, bytes: 16_000_000, time_ns: 26_000_000 } });
  const lin = b.op("linear", root, "torch.nn.functional.linear");
  b.nodes[lin]!.cost = { flops: 128, bytes: 256, time_ns: 900_000 };
  const weight = b.add("constant", "fc.weight", root); // an outside tensor: no cost, never ranked
  b.edge(x, lin, [1, 64]);
  b.edge(weight, lin, [2, 64]);
  b.edge(made, lin, [2000, 2000]);
  b.nodes[root]!.cost = { flops: 128, bytes: 16_000_256, time_ns: 27_000_000 };
  const g = b.build();
  g.values = { stats: false, costs: true };
  const idx = buildIndex(g);
  assert.deepEqual(
    topRows(idx, "time").map((r) => [r.id, r.name]),
    [
      [made, "randn"],
      [lin, "linear"],
    ],
  );
  assert.ok(topRows(idx, "bytes")[0]!.share! > 0.99);
  assert.ok(!topRows(idx, "flops").some((r) => r.id === weight));
});

test("hover rows: cost, statistics, histogram", () => {
  const { g, ids } = withValues();
  const idx = buildIndex(g);
  const out = g.edges.findIndex((e) => e.src === ids.x);
  const d = valueDetails(idx, ids.x!, [], [out]);
  assert.deepEqual(
    d.rows.map(([k]) => k),
    ["min … max", "mean ± std", "|max|", "zeros"],
  );
  assert.equal(d.hist!.counts.length, 16);
  const op = valueDetails(idx, ids.l1!, [], [g.edges.findIndex((e) => e.src === ids.l1)]);
  assert.deepEqual(op.rows.slice(0, 3), [
    ["FLOPs", "10.0 KFLOP"],
    ["out bytes", "16 B"],
    ["time", "0 µs"],
  ]);
  assert.ok(op.rows.some(([k, v]) => k === "NaN / Inf" && v === "3 / 0"));
  // with NaN or Inf among the values, the range and |max| say they are of the finite ones
  // (a row "|max| 2.13e+38" beside "NaN / Inf 0 / 1" read as if the Inf were left out by mistake)
  const labels = op.rows.map(([k]) => k);
  assert.ok(labels.includes("min … max (finite)") && labels.includes("|max| (finite)"), labels.join(", "));
});

test("the parameters measure writes counts as the status line and the hover do", () => {
  // the table wrote 8320 where the hover and the status line wrote 8.3K
  assert.equal(MEASURES.params.format(8320), formatCount(8320));
  assert.equal(MEASURES.params.format(8320), "8.3K");
  assert.equal(MEASURES.params.format(124_439_808), "124.4M");
});

test("the NaN banner names the op that made NaN/Inf, or the parameter that holds them", () => {
  const site = { file: "/w/model.py", line: 12, func: "forward" };
  assert.equal(
    nanBannerText({ kind: "op", name: "log", target: "torch.log", site }, false),
    "Non-finite values (NaN/Inf) appeared: the first op that made them from finite values is log (model.py:12).",
  );
  assert.equal(
    nanBannerText({ kind: "constant", name: "gate", target: "blocks.0.gate", site }, true),
    "Non-finite values (NaN/Inf) appeared in the live model: they come from blocks.0.gate, which holds them (model.py:12).",
  );
});

test("amounts at a unit boundary move to the next unit, as the CLI's summary writes them", () => {
  // rounding put "1000 KB", "1000 µs" and "100.0 ms" on the hover cards
  assert.equal(formatBytes(999_999), "1.0 MB");
  assert.equal(formatBytes(99_960), "100 KB");
  assert.equal(formatBytes(999), "999 B");
  assert.equal(formatFlops(999_950_000), "1.0 GFLOP");
  assert.equal(formatTime(999_600), "1.0 ms");
  assert.equal(formatTime(999_400), "999 µs");
  assert.equal(formatTime(99_960_000), "100 ms");
  assert.equal(formatTime(4_200_000), "4.2 ms");
  assert.equal(formatTime(999_700_000), "1.0 s");
});
