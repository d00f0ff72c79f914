// Runs the real Graphviz WASM in node: DOT from the pure core lays out without overlaps.
import { test } from "node:test";
import assert from "node:assert/strict";
import { instance } from "@viz-js/viz";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible } from "../../../webview/src/visible";
import { expandAll, initialExpansion } from "../../../webview/src/expansion";
import { toDot } from "../../../webview/src/dot";
import { dropCrowdedLabels, parseLayout, type Layout } from "../../../webview/src/layout";
import { mlpWithBlocks } from "./builder";

function overlaps(a: { x: number; y: number; w: number; h: number }, b: typeof a): boolean {
  return Math.abs(a.x - b.x) * 2 < a.w + b.w - 0.5 && Math.abs(a.y - b.y) * 2 < a.h + b.h - 0.5;
}

async function layout(dot: string): Promise<Layout> {
  const viz = await instance();
  const r = viz.render(dot, { format: "json0" });
  assert.equal(r.status, "success");
  return parseLayout(r.output!);
}

test("layout of the collapsed and expanded views: every node placed, none overlapping, top to bottom", async () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  for (const exp of [initialExpansion(idx), expandAll(idx)]) {
    const vg = buildVisible(idx, exp);
    const { dot, sizes } = toDot(idx, vg);
    const l = await layout(dot);
    assert.equal(l.nodes.length, vg.nodes.length);
    assert.equal(l.clusters.length, vg.clusters.length);
    assert.equal(l.edges.length, vg.edges.length);
    for (const n of l.nodes) {
      assert.ok(Math.abs(n.w - sizes.get(n.key)!.w) < 1, "graphviz keeps our sizes");
      for (const m of l.nodes) if (m !== n) assert.ok(!overlaps(n, m), `${n.key} overlaps ${m.key}`);
    }
    const y = (k: string) => l.nodes.find((n) => n.key === k)!.y;
    assert.ok(y(`n${ids.x}`) < y(`n${ids.out}`), "input above output");
    for (const c of l.clusters) {
      const inside = vg.nodes.filter((n) => n.cluster === c.key);
      for (const v of inside) {
        const n = l.nodes.find((m) => m.key === v.key)!;
        assert.ok(n.x - n.w / 2 >= c.x && n.x + n.w / 2 <= c.x + c.w, `${v.key} inside ${c.key}`);
      }
    }
    for (const e of l.edges) assert.ok(/^M[\d.,-]+C/.test(e.path) && e.label, "edges have splines and labels");
  }
});

test("big graphs get external edge labels, still parsed as label positions", async () => {
  const { GraphBuilder } = await import("./builder");
  const b = new GraphBuilder();
  let prev = b.add("input", "x");
  // 16 open modules of 95 ops: no level long enough to fold into segments.
  const modules: number[] = [];
  for (let i = 0; i < 1520; i++) {
    if (i % 95 === 0) modules.push(b.module(`M${i}`, `m${i}`, null));
    const op = b.op(`op${i}`, modules.at(-1)!);
    b.edge(prev, op, [i, 2]);
    prev = op;
  }
  const g = b.build();
  const idx = buildIndex(g);
  const vg = buildVisible(idx, { modules: new Set(modules), groups: new Set(), segments: new Set() });
  assert.equal(vg.nodes.length, 1521);
  const { dot } = toDot(idx, vg);
  assert.match(dot, /xlabel="0×2"/);
  assert.match(dot, /forcelabels=false/);
  const l = await layout(dot);
  assert.ok(l.edges.filter((e) => e.label).length > 1000, "most labels placed");
});

test("crowded external labels are dropped, never drawn over boxes, titles or each other", () => {
  const layout: Layout = {
    width: 400,
    height: 400,
    nodes: [{ key: "a", x: 100, y: 100, w: 60, h: 20 }],
    clusters: [{ key: "c", x: 150, y: 150, w: 200, h: 200 }],
    edges: [
      { key: "on-node", path: "", box: [0, 0, 0, 0], label: [100, 100] },
      { key: "on-title", path: "", box: [0, 0, 0, 0], label: [200, 160] },
      { key: "free", path: "", box: [0, 0, 0, 0], label: [300, 40] },
      { key: "on-free", path: "", box: [0, 0, 0, 0], label: [305, 42] },
      { key: "inside-cluster", path: "", box: [0, 0, 0, 0], label: [250, 300] },
    ],
  };
  dropCrowdedLabels(layout, new Map(layout.edges.map((e) => [e.key, 5])));
  const kept = layout.edges.filter((e) => e.label).map((e) => e.key);
  assert.deepEqual(kept, ["free", "inside-cluster"]);
});

test("two labels a line apart are one too many: the glyphs and their halo need 14 px", () => {
  // (Llama-70B, Expand all: 1×64×32×128 drawn over 1×64×32×128 below and beside it)
  const layout: Layout = {
    width: 400,
    height: 400,
    nodes: [],
    clusters: [],
    edges: [
      { key: "upper", path: "", box: [0, 0, 0, 0], label: [100, 100] },
      { key: "lower", path: "", box: [0, 0, 0, 0], label: [125, 111] },
      { key: "clear", path: "", box: [0, 0, 0, 0], label: [100, 116] },
    ],
  };
  dropCrowdedLabels(layout, new Map(layout.edges.map((e) => [e.key, 11])));
  assert.deepEqual(
    layout.edges.filter((e) => e.label).map((e) => e.key),
    ["upper", "clear"],
  );
});

test("the worker's pipeline: big graphs ask dot for less crossing work", async () => {
  const { computeView, BIG_GRAPH } = await import("../../../webview/src/compute");
  const { GraphBuilder } = await import("./builder");
  const small = mlpWithBlocks().g;
  const v = computeView(buildIndex(small), initialExpansion(buildIndex(small)));
  assert.ok(!v.dot.includes("mclimit"));
  assert.equal(v.labels.get("g0")!.title, "Block ×2");
  const b = new GraphBuilder();
  const modules: number[] = [];
  for (let i = 0; i <= BIG_GRAPH; i++) {
    if (i % 95 === 0) modules.push(b.module(`M${i}`, `m${i}`, null));
    b.op(`op${i}`, modules.at(-1)!);
  }
  const big = buildIndex(b.build());
  assert.match(computeView(big, { modules: new Set(modules), groups: new Set(), segments: new Set() }).dot, /mclimit=0\.2/);
});

test("an open module's frame is wide enough for its title and path, however wide their letters (QA: they ran past it)", async () => {
  const { GraphBuilder } = await import("./builder");
  const { headerWidth } = await import("../../../webview/src/metrics");
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const wide = b.module("WWWWMMMMWWWWMMMMWWWWMMMMWWWWMMMMWWWWMMMMWWWWMMMMW", "a_really_long_attribute_name_of_the_model", root);
  const op = b.op("relu", wide);
  const op2 = b.op("tanh", wide);
  b.edge(x, op, [2, 16]);
  b.edge(op, op2, [2, 16]);
  const out = b.add("output", "output");
  b.edge(op2, out, [2, 16]);
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, expandAll(idx));
  // (a measure of wide glyphs: a bold capital W is ~0.9 em, Courier's every glyph 0.6 em)
  const measure = (text: string, f: { size: number }): number => [...text].length * f.size * 0.9;
  const { dot, labels } = toDot(idx, vg, measure);
  const l = await layout(dot);
  const c = l.clusters.find((k) => labels.get(k.key)?.title.startsWith("WWWW"))!;
  const label = labels.get(c.key)!;
  assert.ok(label.title.startsWith("WWWW"));
  assert.ok(c.w >= headerWidth(label.title, label.sub, measure), `frame ${c.w} px, header ${headerWidth(label.title, label.sub, measure)} px`);
});
