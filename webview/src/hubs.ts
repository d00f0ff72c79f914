// Hub tensors: one value (an attention mask, rotary embeddings, an encoder output)
// feeding many far-apart consumers makes dot's crossing minimisation explode.
// Above a fan-out threshold, keep the edge to the first consumer and give every other
// consumer a small reference node beside it instead of a long edge.
import type { VEdge, VNode, VisibleGraph } from "./visible";

export const HUB_FANOUT = 6;

export function replaceHubEdges(vg: VisibleGraph, threshold = HUB_FANOUT): VisibleGraph {
  const bySrc = new Map<string, VEdge[]>();
  for (const e of vg.edges) {
    let list = bySrc.get(e.src);
    if (!list) {
      list = [];
      bySrc.set(e.src, list);
    }
    list.push(e);
  }
  const hubs = [...bySrc.values()].filter((l) => l.length >= threshold);
  if (hubs.length === 0) return vg;

  const clusterOf = new Map<string, string | null>(vg.nodes.map((n) => [n.key, n.cluster]));
  const idOf = new Map<string, number>(vg.nodes.map((n) => [n.key, n.id]));
  const replaced = new Set<VEdge>();
  const nodes: VNode[] = [...vg.nodes];
  const extra: VEdge[] = [];
  for (const list of hubs) {
    for (const e of list.slice(1)) {
      replaced.add(e);
      const key = `r${e.src}>${e.dst}`;
      nodes.push({ key, kind: "ref", id: idOf.get(e.src) ?? -1, cluster: clusterOf.get(e.dst) ?? null, refOf: e.src });
      extra.push({ key: `${key}>${e.dst}`, src: key, dst: e.dst, edges: e.edges });
    }
  }
  const edges = vg.edges.filter((e) => !replaced.has(e)).concat(extra);
  return { ...vg, nodes, edges };
}
