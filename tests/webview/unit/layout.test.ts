// Runs the real Graphviz WASM in node: DOT from the pure core lays out without overlaps.
import { test } from "node:test";
import assert from "node:assert/strict";
import { instance } from "@viz-js/viz";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible } from "../../../webview/src/visible";
import { expandAll, initialExpansion } from "../../../webview/src/expansion";
import { toDot } from "../../../webview/src/dot";
import { parseLayout, type Layout } from "../../../webview/src/layout";
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
    for (const e of l.edges) assert.ok(e.points.length >= 4 && e.label, "edges have splines and labels");
  }
});
