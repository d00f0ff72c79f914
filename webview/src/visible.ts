// (graph, expansion) → the graph that is actually drawn: boxes for collapsed modules
// and folded groups, clusters for expanded ones, and every tensor edge lifted to the
// nearest drawn ancestor of its ends. Pure: no DOM, no layout.
import type { GraphEdge } from "./format";
import type { Expansion } from "./expansion";
import type { GraphIndex } from "./model";

export type VKind = "node" | "module" | "group" | "ref";

export interface VNode {
  key: string;
  kind: VKind;
  /** Graph node id (node, module, ref: the source's node id) or group index (group). */
  id: number;
  /** Key of the enclosing cluster, or null at top level. */
  cluster: string | null;
  /** ref nodes: key of the drawn node they stand for. */
  refOf?: string;
}

export interface VCluster {
  key: string;
  kind: "module" | "group";
  id: number;
  parent: string | null;
}

export interface VEdge {
  key: string;
  src: string;
  dst: string;
  /** Indexes into graph.edges of the tensors this drawn edge carries. */
  edges: number[];
}

export interface VisibleGraph {
  nodes: VNode[];
  clusters: VCluster[];
  edges: VEdge[];
  /** rep[id]: key of the drawn box (or cluster) that stands for graph node id. */
  rep: string[];
}

export const nodeKey = (id: number): string => `n${id}`;
export const groupKey = (gi: number): string => `g${gi}`;

export function buildVisible(idx: GraphIndex, exp: Expansion): VisibleGraph {
  const { graph, children, groupOf } = idx;
  const n = graph.nodes.length;
  const rep: string[] = new Array<string>(n);
  const asCluster = new Uint8Array(n);
  const nodes: VNode[] = [];
  const clusters: VCluster[] = [];
  const groupSeen = new Set<number>();

  const place = (id: number, cluster: string | null): void => {
    const gi = groupOf[id]!;
    if (gi >= 0 && !exp.groups.has(gi)) {
      rep[id] = groupKey(gi);
      if (!groupSeen.has(gi)) {
        groupSeen.add(gi);
        nodes.push({ key: groupKey(gi), kind: "group", id: gi, cluster });
      }
      hide(id, groupKey(gi));
      return;
    }
    if (gi >= 0 && !groupSeen.has(gi)) {
      groupSeen.add(gi);
      clusters.push({ key: groupKey(gi), kind: "group", id: gi, parent: cluster });
    }
    const inner = gi >= 0 ? groupKey(gi) : cluster;
    const node = graph.nodes[id]!;
    rep[id] = nodeKey(id);
    const kids = children[id]!;
    if (kids.length > 0 && exp.modules.has(id)) {
      asCluster[id] = 1;
      clusters.push({ key: nodeKey(id), kind: "module", id, parent: inner });
      for (const c of kids) place(c, nodeKey(id));
    } else {
      nodes.push({ key: nodeKey(id), kind: node.kind === "module" ? "module" : "node", id, cluster: inner });
      hide(id, nodeKey(id));
    }
  };
  // Descendants of a box are drawn as that box.
  const hide = (id: number, key: string): void => {
    for (const c of children[id]!) {
      rep[c] = key;
      hide(c, key);
    }
  };
  for (const r of idx.roots) place(r, null);

  const edges = liftEdges(graph.edges, rep, asCluster);
  return { nodes, clusters, edges, rep };
}

/** Merge tensor edges by their drawn ends; drop edges that fall inside one box. */
export function liftEdges(edges: GraphEdge[], rep: string[], asCluster: Uint8Array): VEdge[] {
  const byKey = new Map<string, VEdge>();
  const out: VEdge[] = [];
  edges.forEach((e, i) => {
    // A module drawn as a cluster is never an edge end (contract); skip bad data.
    if (asCluster[e.src] || asCluster[e.dst]) return;
    const src = rep[e.src]!;
    const dst = rep[e.dst]!;
    if (src === dst) return;
    const key = `${src}>${dst}`;
    let v = byKey.get(key);
    if (!v) {
      v = { key, src, dst, edges: [] };
      byKey.set(key, v);
      out.push(v);
    }
    v.edges.push(i);
  });
  return out;
}
