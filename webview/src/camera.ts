// Where the view looks (pure): the pan and zoom that show a graph readably from the start,
// fit it, center on a point, zoom to a box, keep a clicked box still across a re-layout,
// and what part of the graph a transform shows. Numbers in, numbers out; viewer.ts applies
// them through d3-zoom.
import type { Rect } from "./scene";

/** Screen = layout × k + (x, y), as d3-zoom's transform. */
export interface Transform {
  x: number;
  y: number;
  k: number;
}

/** The drawing area on screen, in px. */
export interface ViewSize {
  w: number;
  h: number;
}

/** The laid-out graph's size, in layout units. */
export interface GraphSize {
  width: number;
  height: number;
}

export const MIN_ZOOM = 0.02;
export const MAX_ZOOM = 4;

/** Readable from the start: at least 100 % (at most 125 %), centered when it fits, else
 * beginning at the inputs: their middle (`inputsX`, layout units) across, the top down. */
export function initialTransform(graph: GraphSize, view: ViewSize, inputsX: number): Transform {
  const m = 24;
  const fit = Math.min((view.w - 2 * m) / graph.width, (view.h - 2 * m) / graph.height);
  const k = Math.max(1, Math.min(fit, 1.25));
  const x = graph.width * k <= view.w - 2 * m ? (view.w - graph.width * k) / 2 : view.w / 2 - inputsX * k;
  const y = graph.height * k <= view.h - 2 * m ? (view.h - graph.height * k) / 2 : m;
  return { x, y, k };
}

/** The middle of the input boxes across (layout units); the graph's middle without inputs. */
export function inputsCenterX(nodes: { x: number }[], graphWidth: number): number {
  return nodes.length ? nodes.reduce((s, n) => s + n.x, 0) / nodes.length : graphWidth / 2;
}

/** The whole graph in view, centered, at most 200 %. */
export function fitTransform(graph: GraphSize, view: ViewSize): Transform {
  const m = 16;
  const k = Math.max(MIN_ZOOM, Math.min((view.w - 2 * m) / graph.width, (view.h - 2 * m) / graph.height, 2));
  return { x: (view.w - graph.width * k) / 2, y: (view.h - graph.height * k) / 2, k };
}

/** Layout point (x, y) in the middle of the view at zoom k. */
export function centerTransform(x: number, y: number, k: number, view: ViewSize): Transform {
  return { x: view.w / 2 - x * k, y: view.h / 2 - y * k, k };
}

/** A box brought into view: zoomed to fit it (not below 10 % nor above 200 %, and never
 * out from below 100 %), a tall box from its top. */
export function zoomToBox(box: Rect, currentK: number, view: ViewSize): Transform {
  const fitK = Math.min((view.w - 40) / box.w, (view.h - 40) / box.h);
  const k = Math.max(Math.min(Math.max(currentK, 1), fitK, 2), 0.1);
  return centerTransform(box.x + box.w / 2, box.y + Math.min(box.h, view.h / k - 40) / 2, k, view);
}

/** The transform at zoom k that puts layout point `at` on screen point `screen`. */
export function pinTransform(at: { x: number; y: number }, screen: { x: number; y: number }, k: number): Transform {
  return { x: screen.x - at.x * k, y: screen.y - at.y * k, k };
}

/** Layout point → screen point. */
export function toScreen(t: Transform, p: { x: number; y: number }): { x: number; y: number } {
  return { x: p.x * t.k + t.x, y: p.y * t.k + t.y };
}

/** The part of the layout the view shows. */
export function visibleRect(t: Transform, view: ViewSize): Rect {
  return { x: -t.x / t.k, y: -t.y / t.k, w: view.w / t.k, h: view.h / t.k };
}

/** The whole graph is in view (the overview then has nothing to add). */
export function showsAll(r: Rect, graph: GraphSize): boolean {
  return r.x <= 0 && r.y <= 0 && r.x + r.w >= graph.width && r.y + r.h >= graph.height;
}

/** How much text to draw at zoom k: text too small to read costs the most to paint. */
export function detailLevel(k: number): { low: boolean; mid: boolean } {
  return { low: k < 0.3, mid: k < 0.55 };
}
