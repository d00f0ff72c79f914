// (graph, expansion) → the graph that is actually drawn: boxes for collapsed modules,
// folded groups and closed segments (segments.ts), clusters for open ones, and every
// tensor edge lifted to the nearest drawn ancestor of its ends. Pure: no DOM, no layout.
import type { GraphEdge } from "./format";
import type { Expansion } from "./expansion";
import type { GraphIndex } from "./model";
import { rawItems, segmentsOf, type Item } from "./segments";

export type VKind = "node" | "module" | "group" | "ref" | "segment";

export interface VNode {
  key: string;
  kind: VKind;
  /** Graph node id (node, module, ref: the source's node id), group index (group) or
   * segment index (segment). */
  id: number;
  /** Key of the enclosing cluster, or null at top level. */
  cluster: string | null;
  /** ref nodes: key of the drawn node they stand for. */
  refOf?: string;
}

export interface VCluster {
  key: string;
  kind: "module" | "group" | "segment";
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
export const segmentKey = (si: number): string => `s${si}`;

/** The drawn item that shows `key` (a node's or a group's) in `vg`: itself when drawn, else
 * the closed box that holds it now (the selection after its module was closed); null: none. */
export function shownAs(idx: GraphIndex, vg: VisibleGraph, key: string): string | null {
  if (vg.nodes.some((n) => n.key === key) || vg.clusters.some((c) => c.key === key)) return key;
  const id = key.startsWith("n") ? Number(key.slice(1)) : key.startsWith("g") ? idx.graph.groups[Number(key.slice(1))]?.members[0] : undefined;
  return id === undefined || Number.isNaN(id) ? null : (vg.rep[id] ?? null);
}

/** How much one view may hold (what Graphviz can lay out). */
export interface Limits {
  /** Boxes and frames. */
  boxes: number;
  /** Frames nested in each other. */
  levels: number;
}

/** A view Graphviz can't lay out: more boxes and frames than `limit`, or frames nested too deep. */
export class TooManyToDraw extends Error {
  override name = "TooManyToDraw";
  constructor(
    readonly limit: number,
    readonly what: "boxes" | "levels" = "boxes",
  ) {
    super(
      what === "boxes"
        ? `more than ${limit.toLocaleString("en-US")} boxes: too many nodes to draw at once; expand fewer`
        : `modules open more than ${limit} levels deep: too deep to draw at once; expand fewer levels`,
    );
  }
}

/**
 * The drawn graph for an expansion state. Iterative (a crafted file may nest thousands of
 * levels); stops with TooManyToDraw once it goes beyond `limits`.
 */
export function buildVisible(idx: GraphIndex, exp: Expansion, limits: Limits = { boxes: Infinity, levels: Infinity }): VisibleGraph {
  const { graph, children } = idx;
  const segs = segmentsOf(idx);
  const n = graph.nodes.length;
  const rep: string[] = new Array<string>(n);
  const asCluster = new Uint8Array(n);
  const nodes: VNode[] = [];
  const clusters: VCluster[] = [];
  const grow = (): void => {
    if (nodes.length + clusters.length > limits.boxes) throw new TooManyToDraw(limits.boxes);
  };
  const box = (v: VNode): void => {
    nodes.push(v);
    grow();
  };
  const depthOf = new Map<string | null, number>([[null, 0]]);
  const frame = (c: VCluster): void => {
    const depth = depthOf.get(c.parent)! + 1;
    if (depth > limits.levels) throw new TooManyToDraw(limits.levels, "levels");
    depthOf.set(c.key, depth);
    clusters.push(c);
    grow();
  };

  // Descendants of a box are drawn as that box.
  const hideBelow = (id: number, key: string): void => {
    const todo = [...children[id]!];
    for (let c = todo.pop(); c !== undefined; c = todo.pop()) {
      rep[c] = key;
      for (const k of children[c]!) todo.push(k);
    }
  };
  const hideItems = (items: readonly Item[], key: string): void => {
    const todo = [...items];
    for (let it = todo.pop(); it; it = todo.pop()) {
      if (it.kind === "segment") todo.push(...segs.list[it.id]!.items);
      else if (it.kind === "group") for (const m of graph.groups[it.id]!.members) todo.push({ kind: "node", id: m });
      else {
        rep[it.id] = key;
        hideBelow(it.id, key);
      }
    }
  };

  // Depth first, in order: the same order of boxes and frames as a recursive walk.
  const stack: [Item, string | null][] = [];
  const visit = (items: readonly Item[], cluster: string | null): void => {
    for (let i = items.length - 1; i >= 0; i--) stack.push([items[i]!, cluster]);
  };
  const itemsOf = (container: string | null, ids: readonly number[]): readonly Item[] => segs.top.get(container) ?? rawItems(idx, ids);
  visit(itemsOf(null, idx.roots), null);
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [it, cluster] = top;
    if (it.kind === "segment") {
      const key = segmentKey(it.id);
      const seg = segs.list[it.id]!;
      if (exp.segments.has(it.id)) {
        frame({ key, kind: "segment", id: it.id, parent: cluster });
        visit(seg.items, key);
      } else {
        box({ key, kind: "segment", id: it.id, cluster });
        hideItems(seg.items, key);
      }
    } else if (it.kind === "group") {
      const key = groupKey(it.id);
      const members = graph.groups[it.id]!.members;
      if (exp.groups.has(it.id)) {
        frame({ key, kind: "group", id: it.id, parent: cluster });
        visit(segs.top.get(key) ?? members.map((id): Item => ({ kind: "node", id })), key);
      } else {
        box({ key, kind: "group", id: it.id, cluster });
        hideItems([it], key);
      }
    } else {
      const id = it.id;
      const key = nodeKey(id);
      rep[id] = key;
      const kids = children[id]!;
      if (kids.length > 0 && exp.modules.has(id)) {
        asCluster[id] = 1;
        frame({ key, kind: "module", id, parent: cluster });
        visit(itemsOf(key, kids), key);
      } else {
        box({ key, kind: graph.nodes[id]!.kind === "module" ? "module" : "node", id, cluster });
        hideBelow(id, key);
      }
    }
  }

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
