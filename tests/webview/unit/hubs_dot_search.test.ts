import { test } from "node:test";
import assert from "node:assert/strict";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible } from "../../../webview/src/visible";
import { expandAll, initialExpansion } from "../../../webview/src/expansion";
import { replaceHubEdges } from "../../../webview/src/hubs";
import { quote, toDot } from "../../../webview/src/dot";
import { highlightKeys, nodesAtLine, searchNodes, stepMatch } from "../../../webview/src/search";
import { edgeLabel, shapeText } from "../../../webview/src/labels";
import { GraphBuilder, mlpWithBlocks } from "./builder";

function hubGraph(layers: number) {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Llama", "", null);
  const rope = b.module("Rotary", "rotary_emb", root);
  const cos = b.op("cos", rope);
  let prev = x;
  const layerIds: number[] = [];
  for (let i = 0; i < layers; i++) {
    const l = b.module("Layer", `layers.${i}`, root);
    const op = b.op("attn", l);
    b.edge(prev, op).edge(cos, op, [1, 8, 64]);
    prev = op;
    layerIds.push(l);
  }
  const out = b.add("output", "output");
  b.edge(prev, out);
  return { g: b.build(), cos, rope, layerIds };
}

test("a hub feeding many consumers becomes reference nodes", () => {
  const { g, rope, layerIds } = hubGraph(10);
  const idx = buildIndex(g);
  const vg = buildVisible(idx, initialExpansion(idx));
  const fromRope = vg.edges.filter((e) => e.src === `n${rope}`);
  assert.equal(fromRope.length, 10);
  const hv = replaceHubEdges(vg);
  assert.equal(hv.edges.filter((e) => e.src === `n${rope}`).length, 1, "first consumer keeps its edge");
  const refs = hv.nodes.filter((n) => n.kind === "ref");
  assert.equal(refs.length, 9);
  for (const r of refs) {
    assert.equal(r.refOf, `n${rope}`);
    assert.equal(r.id, rope);
    assert.equal(hv.edges.filter((e) => e.src === r.key).length, 1);
  }
  assert.ok(hv.edges.some((e) => e.dst === `n${layerIds[9]}` && e.src.startsWith("r")));
  // Below the threshold nothing changes.
  assert.equal(replaceHubEdges(vg, 100), vg);
});

test("DOT has clusters, fixed-size nodes and escaped labels", () => {
  const b = new GraphBuilder();
  const x = b.add("input", 'x"\\\n');
  const root = b.module("<img src=x onerror=alert(1)>", "", null);
  const sub = b.module('Evil"Name', 'a"b', root);
  const op = b.op("op", sub);
  const op2 = b.op("op2", sub);
  b.edge(x, op, [2, 3]).edge(op, op2, [2, 3]);
  const g = b.build();
  const idx = buildIndex(g);
  const vg = buildVisible(idx, expandAll(idx));
  const { dot, sizes, labels } = toDot(idx, vg);
  assert.match(dot, /subgraph "cluster_n1" \{/);
  assert.match(dot, /subgraph "cluster_n2" \{/);
  assert.match(dot, /label="2×3"/);
  assert.ok(dot.includes('Evil\\"Name'), "quotes escaped");
  assert.ok(!/[^\\]"Name/.test(dot.replace('Evil\\"Name', "")), "no unescaped quote");
  assert.equal(quote('a"b\\c\nd'), '"a\\"b\\\\c\\nd"');
  assert.ok(sizes.get(`n${op}`)!.w >= 40);
  assert.equal(labels.get("n1")!.title, "<img src=x onerror=alert(1)>");
});

test("search matches name, path and target, and highlights collapsed ancestors", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  assert.deepEqual(searchNodes(idx, "LINEAR"), [ids.fc1, ids.lin1, ids.l0, ids.l1]);
  assert.deepEqual(searchNodes(idx, "blocks.1"), [ids.b1]);
  assert.deepEqual(searchNodes(idx, "torch.relu"), [ids.act]);
  assert.deepEqual(searchNodes(idx, "  "), []);
  const vg = buildVisible(idx, initialExpansion(idx));
  assert.deepEqual([...highlightKeys(vg.rep, searchNodes(idx, "linear"))].sort(), [`g0`, `n${ids.fc1}`]);
});

test("labels", () => {
  assert.equal(shapeText([1, 3, 224, 224]), "1×3×224×224");
  assert.equal(shapeText([]), "scalar");
  assert.equal(shapeText(null), "?");
  const edges = [
    { src: 0, dst: 1, shape: [2], dtype: "f" },
    { src: 0, dst: 1, shape: [3], dtype: "f" },
  ];
  assert.equal(edgeLabel(edges, [0, 1]), "2, 3");
});

test("nodes made on a source line (the editor's cursor)", () => {
  const b = new GraphBuilder();
  const site = { file: "/w/m.py", line: 7, func: "forward" };
  const a = b.add("op", "relu", null, { site });
  b.add("op", "add", null, { site: { ...site, line: 8 } });
  const c = b.add("op", "mul", null, { site: { ...site } });
  b.add("op", "other", null, { site: { ...site, file: "/w/x.py" } });
  assert.deepEqual(nodesAtLine(buildIndex(b.build()), "/w/m.py", 7), [a, c]);
});

test("Shift+Enter first shows the last match, Enter the first (QA: 11 / 12)", () => {
  assert.equal(stepMatch(-1, -1, 12), 11);
  assert.equal(stepMatch(-1, 1, 12), 0);
  assert.equal(stepMatch(0, -1, 12), 11);
  assert.equal(stepMatch(11, 1, 12), 0);
  assert.equal(stepMatch(4, 1, 12), 5);
  assert.equal(stepMatch(-1, -1, 1), 0);
});
