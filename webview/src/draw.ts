// Thin D3 layer: builds the SVG for laid-out items. All text goes through .text()
// (never innerHTML), so any label is shown as the characters it contains.
import { select, type Selection } from "d3-selection";
import type { GraphIndex } from "./model";
import type { Layout, LCluster, LEdge, LNode } from "./layout";
import type { Label } from "./labels";
import { edgeLabel, isCollective } from "./labels";
import type { VEdge, VisibleGraph, VNode, VCluster } from "./visible";
import { FONT_TITLE, HEADER_GAP, HEADER_TITLE_X, STACK, TOGGLE, type Measure } from "./metrics";
import { drawBadge, markEdge, markItem } from "./compareDraw";
import { spokenName } from "./speech";
import type { ViewMarks } from "./compare";

export interface DrawInput {
  idx: GraphIndex;
  vg: VisibleGraph;
  layout: Layout;
  labels: Map<string, Label>;
  measure: Measure;
  arrowId: string;
  /** A compare view's statuses and hidden-change counts (compare.ts); absent otherwise. */
  marks?: ViewMarks;
}

export type G = Selection<SVGGElement, unknown, null, undefined>;

/** What a screen reader says of a box or frame: the words the arrows announce (speech.ts). */
function spokenAttrs(g: SVGGElement, d: DrawInput, key: string): void {
  const said = spokenName(d.idx, d.vg, key);
  if (!said) return;
  g.setAttribute("role", "img");
  g.setAttribute("aria-label", said);
}

function nodeAttrs(g: SVGGElement, idx: GraphIndex, v: VNode | VCluster): void {
  if (v.kind === "segment") {
    g.dataset.id = v.key;
    g.dataset.kind = "segment";
    return;
  }
  if (v.kind === "group") {
    const grp = idx.graph.groups[v.id]!;
    g.dataset.id = `g${v.id}`;
    g.dataset.kind = "group";
    g.dataset.path = idx.graph.nodes[grp.members[0]!]!.path;
    return;
  }
  if (v.kind === "ref") {
    g.dataset.id = v.key;
    g.dataset.kind = "ref";
    g.dataset.ref = String(v.id);
    return;
  }
  const node = idx.graph.nodes[v.id]!;
  g.dataset.id = String(node.id);
  g.dataset.kind = node.kind;
  if (isCollective(node)) g.dataset.collective = "true";
  if (node.kind === "module") g.dataset.path = node.path;
}

function toggle(parent: G, x: number, y: number, key: string, open: boolean): void {
  const t = parent.append("g").attr("class", "ts-toggle").attr("data-toggle", key).attr("transform", `translate(${x},${y})`);
  t.append("rect").attr("width", TOGGLE).attr("height", TOGGLE).attr("rx", 3);
  // Drawn as lines, not glyphs, so the control looks the same in every font.
  t.append("path").attr("d", open ? "M3.5,7H10.5" : "M3.5,7H10.5M7,3.5V10.5");
}

export function drawCluster(root: G, d: DrawInput, c: LCluster, vc: VCluster): SVGGElement {
  const g = root.append("g").attr("class", `ts-cluster ts-${vc.kind}`).attr("data-key", c.key);
  nodeAttrs(g.node()!, d.idx, vc);
  spokenAttrs(g.node()!, d, c.key);
  g.append("rect").attr("class", "ts-frame").attr("x", c.x).attr("y", c.y).attr("width", c.w).attr("height", c.h).attr("rx", 6);
  markItem(g.node()!, d.marks, c.key);
  return g.node()!;
}

/** Cluster headers paint above edges (an edge entering a cluster may cross its band). */
export function drawClusterHeader(root: G, d: DrawInput, c: LCluster): SVGGElement {
  const g = root.append("g").attr("class", "ts-cluster-head").attr("data-head", c.key);
  const l = d.labels.get(c.key)!;
  toggle(g, c.x + 6, c.y + 5, c.key, true);
  const tx = c.x + HEADER_TITLE_X;
  g.append("text")
    .attr("class", "ts-title")
    .attr("x", tx)
    .attr("y", c.y + 16)
    .text(l.title);
  if (l.sub) {
    g.append("text")
      .attr("class", "ts-sub")
      .attr("x", tx + d.measure(l.title, FONT_TITLE) + HEADER_GAP)
      .attr("y", c.y + 16)
      .text(l.sub);
  }
  return g.node()!;
}

export function drawNode(root: G, d: DrawInput, n: LNode, v: VNode): SVGGElement {
  const el = drawBox(root, d, n, v);
  spokenAttrs(el, d, n.key);
  markItem(el, d.marks, n.key);
  drawBadge(select(el), d.marks, n.key, v.kind === "group" ? n.w - STACK : n.w);
  return el;
}

function drawBox(root: G, d: DrawInput, n: LNode, v: VNode): SVGGElement {
  const node = v.kind === "node" ? d.idx.graph.nodes[v.id]! : null;
  const kindClass = node ? `ts-${node.kind}${isCollective(node) ? " ts-collective" : ""}` : `ts-${v.kind}`;
  const x0 = n.x - n.w / 2;
  const y0 = n.y - n.h / 2;
  const g = root.append("g").attr("class", `ts-node ${kindClass}`).attr("data-key", n.key).attr("transform", `translate(${x0},${y0})`);
  nodeAttrs(g.node()!, d.idx, v);
  const l = d.labels.get(n.key)!;
  let w = n.w;
  let h = n.h;
  if (v.kind === "group") {
    // Two offset frames behind the box say "a stack of identical blocks"; they stay
    // inside the space dot reserved, so edges meet the drawing, not a gap.
    w -= STACK;
    h -= STACK;
    g.attr("transform", `translate(${x0},${y0 + STACK})`);
    for (const o of [STACK, STACK / 2]) {
      g.append("rect").attr("class", "ts-stack").attr("x", o).attr("y", -o).attr("width", w).attr("height", h).attr("rx", 4);
    }
  }
  const kind = v.kind === "node" ? d.idx.graph.nodes[v.id]!.kind : v.kind;
  const boxy = kind === "module" || kind === "group" || kind === "segment";
  const rx = kind === "input" || kind === "output" || kind === "ref" ? h / 2 : boxy ? 4 : 3;
  g.append("rect").attr("class", "ts-box").attr("width", w).attr("height", h).attr("rx", rx);
  if (v.kind === "module" || v.kind === "group" || v.kind === "segment") {
    const expandable = v.kind !== "module" || d.idx.children[v.id]!.length > 0;
    const tx = expandable ? 6 + TOGGLE + 6 : 10;
    if (expandable) toggle(g, 6, (h - TOGGLE) / 2, n.key, false);
    g.append("text")
      .attr("class", "ts-title")
      .attr("x", tx)
      .attr("y", l.sub ? 16 : h / 2 + 4)
      .text(l.title);
    if (l.sub) g.append("text").attr("class", "ts-sub").attr("x", tx).attr("y", 31).text(l.sub);
    return g.node()!;
  }
  g.append("text")
    .attr("class", v.kind === "ref" ? "ts-sub" : "ts-label")
    .attr("x", w / 2)
    .attr("y", h / 2 + (v.kind === "ref" ? 3.5 : 4))
    .attr("text-anchor", "middle")
    .text(l.title);
  return g.node()!;
}

export function drawEdge(root: G, d: DrawInput, e: LEdge, ve: VEdge): SVGGElement {
  const g = root.append("g").attr("class", "ts-edge").attr("data-src", ve.src).attr("data-dst", ve.dst).attr("data-edge", ve.key);
  g.append("path").attr("d", e.path).attr("marker-end", `url(#${d.arrowId})`);
  // A wide invisible stroke: a 1 px line is too thin to hover.
  g.append("path").attr("class", "ts-edge-hit").attr("d", e.path);
  if (e.label) {
    g.append("text")
      .attr("class", "ts-elabel")
      .attr("x", e.label[0])
      .attr("y", e.label[1] + 3)
      .attr("text-anchor", "middle")
      .text(edgeLabel(d.idx.graph.edges, ve.edges));
  }
  markEdge(g.node()!, d.marks, ve.key, d.arrowId);
  return g.node()!;
}

/** Overlay heat on a drawn box (0..1; undefined: none): data-heat, and --ts-heat, the fill's
 * share of the hot colour (viewer.css). Set through CSSOM: allowed by the CSP. */
export function paintHeat(el: SVGGElement, h: number | undefined): void {
  el.classList.toggle("ts-heat", h !== undefined);
  if (h === undefined) {
    el.removeAttribute("data-heat");
    el.style.removeProperty("--ts-heat");
  } else {
    el.dataset.heat = h.toFixed(3);
    el.style.setProperty("--ts-heat", `${(h * 100).toFixed(1)}%`);
  }
}

/** Draw the whole layout (export), awaiting `pause` between items: thousands of boxes are
 * drawn over many short tasks. The live view draws through Scene instead. */
export async function drawAll(scene: SVGGElement, d: DrawInput, pause: () => Promise<void>): Promise<void> {
  const root = select(scene);
  const vnodes = new Map(d.vg.nodes.map((v) => [v.key, v]));
  const vclusters = new Map(d.vg.clusters.map((c) => [c.key, c]));
  const vedges = new Map(d.vg.edges.map((e) => [e.key, e]));
  const gc = root.append("g").attr("class", "ts-clusters");
  for (const c of d.layout.clusters) {
    const vc = vclusters.get(c.key);
    if (vc) drawCluster(gc, d, c, vc);
    await pause();
  }
  const ge = root.append("g").attr("class", "ts-edges");
  for (const e of d.layout.edges) {
    const ve = vedges.get(e.key);
    if (ve) drawEdge(ge, d, e, ve);
    await pause();
  }
  const gh = root.append("g").attr("class", "ts-cluster-heads");
  for (const c of d.layout.clusters) {
    if (vclusters.has(c.key)) drawClusterHeader(gh, d, c);
    await pause();
  }
  const gn = root.append("g").attr("class", "ts-nodes");
  for (const n of d.layout.nodes) {
    const v = vnodes.get(n.key);
    if (v) drawNode(gn, d, n, v);
    await pause();
  }
}

/** Top-left corner of a drawn item in layout coordinates (box or cluster). */
export function anchorOf(layout: Layout, key: string): { x: number; y: number } | null {
  const n = layout.nodes.find((m) => m.key === key);
  // A ×N box's own frame starts below the stacked frames drawn above it.
  if (n) return { x: n.x - n.w / 2, y: n.y - n.h / 2 + (key.startsWith("g") ? STACK : 0) };
  const c = layout.clusters.find((m) => m.key === key);
  return c ? { x: c.x, y: c.y } : null;
}

/** Bounding box of a drawn item in layout coordinates. */
export function boundsOf(layout: Layout, key: string): { x: number; y: number; w: number; h: number } | null {
  const n = layout.nodes.find((m) => m.key === key);
  if (n) return { x: n.x - n.w / 2, y: n.y - n.h / 2, w: n.w, h: n.h };
  const c = layout.clusters.find((m) => m.key === key);
  return c ? { ...c } : null;
}
