// Derived, read-only indexes over a decoded Graph: children, depth, groups.
// Built once per graph; every pure function below takes it instead of re-scanning.
import type { Graph } from "./format";

export interface GraphIndex {
  graph: Graph;
  /** children[id]: ids of nodes whose parent is id, in id order. */
  children: number[][];
  /** Top-level node ids (parent null). */
  roots: number[];
  /** Depth below the top level: roots are 0. */
  depth: Int32Array;
  /** groupOf[id]: index of the group the node is a member of, or -1. */
  groupOf: Int32Array;
  /** Module nodes that have children (can be expanded). */
  containers: number[];
  /** The root model call (module with path "" and no parent), or -1. */
  rootModule: number;
  maxDepth: number;
}

export function buildIndex(graph: Graph): GraphIndex {
  const n = graph.nodes.length;
  const children: number[][] = Array.from({ length: n }, () => []);
  const roots: number[] = [];
  const depth = new Int32Array(n);
  let maxDepth = 0;
  for (const node of graph.nodes) {
    if (node.parent === null) {
      roots.push(node.id);
    } else {
      children[node.parent]!.push(node.id);
      depth[node.id] = depth[node.parent]! + 1;
      if (depth[node.id]! > maxDepth) maxDepth = depth[node.id]!;
    }
  }
  const groupOf = new Int32Array(n).fill(-1);
  graph.groups.forEach((g, gi) => {
    for (const m of g.members) if (groupOf[m] === -1) groupOf[m] = gi;
  });
  const containers = graph.nodes.filter((nd) => nd.kind === "module" && children[nd.id]!.length > 0).map((nd) => nd.id);
  const root = graph.nodes.find((nd) => nd.kind === "module" && nd.parent === null && nd.path === "");
  return { graph, children, roots, depth, groupOf, containers, rootModule: root ? root.id : -1, maxDepth };
}

/** Ancestors of id, outermost first (id itself excluded). */
export function ancestors(idx: GraphIndex, id: number): number[] {
  const out: number[] = [];
  let p = idx.graph.nodes[id]!.parent;
  while (p !== null) {
    out.push(p);
    p = idx.graph.nodes[p]!.parent;
  }
  return out.reverse();
}
