// Text shown for drawn items. Pure; the drawing layer only ever sets these as text.
import type { GraphEdge, GraphNode } from "./format";
import type { GraphIndex } from "./model";
import type { VCluster, VNode } from "./visible";

export interface Label {
  title: string;
  sub: string;
}

export function shapeText(shape: number[] | null): string {
  if (shape === null) return "?";
  if (shape.length === 0) return "scalar";
  return shape.join("×");
}

/** Label of a drawn edge: the first tensor's shape, plus how many more it carries. */
export function edgeLabel(edges: GraphEdge[], ids: number[]): string {
  const first = edges[ids[0]!];
  if (!first) return "";
  const more = ids.length - 1;
  return more > 0 ? `${shapeText(first.shape)} (+${more})` : shapeText(first.shape);
}

function groupRange(idx: GraphIndex, gi: number): string {
  const g = idx.graph.groups[gi]!;
  const a = idx.graph.nodes[g.members[0]!]!;
  const b = idx.graph.nodes[g.members[g.members.length - 1]!]!;
  return a.path && b.path ? `${a.path} … ${b.path}` : "";
}

function groupTitle(idx: GraphIndex, gi: number): string {
  const g = idx.graph.groups[gi]!;
  if (g.name) return g.name;
  const first = idx.graph.nodes[g.members[0]!]!;
  return `${first.name} ×${g.members.length}`;
}

function nodeLabelOf(node: GraphNode): Label {
  switch (node.kind) {
    case "module":
      return { title: node.name, sub: node.call > 0 ? `${node.path} #${node.call}` : node.path };
    case "constant":
      return { title: node.name || node.target, sub: "" };
    default:
      return { title: node.name, sub: "" };
  }
}

export function vnodeLabel(idx: GraphIndex, v: VNode, refTitle?: string): Label {
  if (v.kind === "group") return { title: groupTitle(idx, v.id), sub: groupRange(idx, v.id) };
  if (v.kind === "ref") return { title: `↳ ${refTitle ?? "?"}`, sub: "" };
  return nodeLabelOf(idx.graph.nodes[v.id]!);
}

export function clusterLabel(idx: GraphIndex, c: VCluster): Label {
  if (c.kind === "group") return { title: groupTitle(idx, c.id), sub: groupRange(idx, c.id) };
  const node = idx.graph.nodes[c.id]!;
  return nodeLabelOf(node);
}

/** Name a reference node shows for the drawn node it stands for. */
export function refTitle(idx: GraphIndex, src: VNode): string {
  if (src.kind === "group") return groupTitle(idx, src.id);
  const node = idx.graph.nodes[src.id]!;
  return node.kind === "module" ? node.path || node.name : node.name;
}
