// Where the view looks (pure): the pan and zoom that show a graph readably from the start,
// fit it, center on a point, zoom to a box or a step about it, keep a clicked box still
// across a re-layout, bring an opened frame into view, and what part of the graph a
// transform shows. Numbers in, numbers out; viewer.ts applies them through d3-zoom.
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

/** The opening view zooms out to show the whole graph down to this zoom (10 px text ≥ 8 px). */
export const READABLE_ZOOM = 0.8;
/** Bringing an opened frame into view zooms out no further than this. */
export const REVEAL_MIN_ZOOM = 0.5;

/** A drawn box: its centre and height (layout units). */
export interface BoxAt {
  x: number;
  y: number;
  h: number;
}

/**
 * The opening view: the whole graph, centered, when it fits at READABLE_ZOOM or more (at
 * most 125 %); else its top (the inputs) at that zoom or more, as much of its width as
 * fits, across where most of the first screenful's boxes are (not on the inputs, which
 * may sit far to one side of the main column).
 */
export function initialTransform(graph: GraphSize, view: ViewSize, boxes: BoxAt[]): Transform {
  const m = 24;
  const fitAll = Math.min((view.w - 2 * m) / graph.width, (view.h - 2 * m) / graph.height);
  if (fitAll >= READABLE_ZOOM) {
    const k = Math.min(fitAll, 1.25);
    return { x: (view.w - graph.width * k) / 2, y: (view.h - graph.height * k) / 2, k };
  }
  const k = Math.max(READABLE_ZOOM, Math.min((view.w - 2 * m) / graph.width, 1));
  const x = graph.width * k <= view.w - 2 * m ? (view.w - graph.width * k) / 2 : view.w / 2 - busiestX(boxes, graph, view, k, m) * k;
  return { x, y: m, k };
}

/**
 * The layout x to center a view of width view.w / k on: the window over the most boxes of
 * the first screenful (from the top), kept inside the graph (with margin m on screen).
 */
export function busiestX(boxes: BoxAt[], graph: GraphSize, view: ViewSize, k: number, m = 24): number {
  const span = view.w / k;
  const xs = boxes
    .filter((b) => b.y - b.h / 2 < view.h / k)
    .map((b) => b.x)
    .sort((a, b) => a - b);
  if (xs.length === 0) return graph.width / 2;
  let best = xs[0]!;
  let bestCount = 0;
  for (let i = 0, j = 0; i < xs.length; i++) {
    while (xs[j]! < xs[i]! - span * 0.9) j++;
    if (i - j + 1 > bestCount) [best, bestCount] = [(xs[i]! + xs[j]!) / 2, i - j + 1];
  }
  return Math.max(span / 2 - m / k, Math.min(best, graph.width - span / 2 + m / k));
}

/**
 * After a frame (`box`, layout units) opened: move, and zoom out if it must (not below
 * REVEAL_MIN_ZOOM, never in), as little as possible so the frame is in the view and clear
 * of the overview (`overview`: its size in the view's bottom-right corner; it hides while
 * the whole graph is in view). The frame's header stays put when the frame fits where it
 * is; a frame bigger than the view gets its header at the top-left.
 */
export function revealTransform(box: Rect, graph: GraphSize, t: Transform, view: ViewSize, overview: ViewSize): Transform {
  const m = 16;
  let k = t.k;
  const fitK = Math.min((view.w - 2 * m) / box.w, (view.h - 2 * m) / box.h);
  if (fitK < k) k = Math.max(fitK, Math.min(k, REVEAL_MIN_ZOOM));
  // Zoomed about the header: it keeps its place on screen.
  const hx = t.x + box.x * t.k;
  const hy = t.y + box.y * t.k;
  const place = (lo: number, size: number, extent: number): number => {
    if (size * k > extent - 2 * m) return m;
    if (lo + size * k > extent - m) return extent - m - size * k;
    return Math.max(lo, m);
  };
  const whole = (x: number, y: number): boolean =>
    x - box.x * k >= 0 && y - box.y * k >= 0 && x + (graph.width - box.x) * k <= view.w && y + (graph.height - box.y) * k <= view.h;
  // The whole view, then the part above the overview, then the part beside it.
  const areas: [number, number][] = [
    [view.w, view.h],
    [view.w, view.h - overview.h - 8],
    [view.w - overview.w - 8, view.h],
  ];
  let best: [number, number] | null = null;
  for (const [w, h] of areas) {
    const x = place(hx, box.w, w);
    const y = place(hy, box.h, h);
    const clear = whole(x, y) || x + box.w * k <= view.w - overview.w - 8 || y + box.h * k <= view.h - overview.h - 8;
    if (box.w * k <= w - 2 * m && box.h * k <= h - 2 * m && clear) {
      best = [x, y];
      break;
    }
    best ??= [x, y];
  }
  return { x: best![0] - box.x * k, y: best![1] - box.y * k, k };
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
 * out from below 100 %), a tall box from its top. Centred, except that a `graph` that fits
 * the view (across, or down) at that zoom stays whole in it: centring a box near its edge
 * would push the rest of a small graph out of sight for nothing (under the banner above).
 * `area` (view px, clearArea): the part of the view to do this in, clear of a panel over the
 * rest; the whole view by default. */
export function zoomToBox(box: Rect, currentK: number, view: ViewSize, graph?: GraphSize, area?: Rect): Transform {
  const a = area ?? { x: 0, y: 0, w: view.w, h: view.h };
  const fitK = Math.min((a.w - 40) / box.w, (a.h - 40) / box.h);
  const k = Math.max(Math.min(Math.max(currentK, 1), fitK, 2), 0.1);
  const c = centerTransform(box.x + box.w / 2, box.y + Math.min(box.h, a.h / k - 40) / 2, k, a);
  const t = { x: c.x + a.x, y: c.y + a.y, k };
  if (!graph) return t;
  const m = 16;
  // The offset nearest the centred one that keeps [0, size] inside [lo + m, lo + extent - m].
  const keep = (at: number, size: number, lo: number, extent: number): number =>
    size * k > extent - 2 * m ? at : Math.min(Math.max(at, lo + m), lo + extent - m - size * k);
  return { x: keep(t.x, graph.width, a.x, a.w), y: keep(t.y, graph.height, a.y, a.h), k };
}

/**
 * A keyboard zoom step (`step` 1: in, -1: out): twice or half the zoom, within MIN_ZOOM ..
 * MAX_ZOOM, centred on layout point `at` (the selected box) or else on what the middle of
 * `area` (view px) shows. In from below READABLE_ZOOM goes at least to it: after Fit on a
 * large graph the boxes have no text, and one press should make the selection readable.
 */
export function zoomStep(t: Transform, step: 1 | -1, area: Rect, at: { x: number; y: number } | null): Transform {
  const k = step > 0 ? Math.min(MAX_ZOOM, t.k < READABLE_ZOOM ? Math.max(t.k * 2, READABLE_ZOOM) : t.k * 2) : Math.max(MIN_ZOOM, t.k / 2);
  const c = at ?? { x: (area.x + area.w / 2 - t.x) / t.k, y: (area.y + area.h / 2 - t.y) / t.k };
  return inArea(centerTransform(c.x, c.y, k, area), area);
}

/** Smallest free part (view px) worth centring a box in; below that, the whole view. */
const CLEAR_MIN = { w: 120, h: 80 };

/**
 * The part of the view the panels over it (`covers`, view px: the heaviest-nodes table, the
 * legend) leave free: the biggest rectangle clear of them all made of the bands beside each
 * (left, right, above, below; where they cross), or the whole view when nothing covers it
 * or no such part is big enough to show a box in.
 */
export function clearArea(view: ViewSize, covers: readonly Rect[]): Rect {
  const whole = { x: 0, y: 0, w: view.w, h: view.h };
  let free: Rect[] = [whole];
  for (const c of covers) {
    if (c.w <= 0 || c.h <= 0) continue;
    const right = c.x + c.w;
    const bottom = c.y + c.h;
    const bands: Rect[] = [
      { x: 0, y: 0, w: c.x, h: view.h },
      { x: right, y: 0, w: view.w - right, h: view.h },
      { x: 0, y: 0, w: view.w, h: c.y },
      { x: 0, y: bottom, w: view.w, h: view.h - bottom },
    ];
    // each part clear of the covers so far, cut to each band clear of this one
    free = free.flatMap((f) => bands.map((b) => crossing(f, b))).filter((r) => r.w >= CLEAR_MIN.w && r.h >= CLEAR_MIN.h);
  }
  let best: Rect | null = null;
  for (const r of free) if (!best || r.w * r.h > best.w * best.h) best = r;
  return best ?? whole;
}

/** A transform made for a view of `area`'s size, moved to where `area` is in the view. */
export function inArea(t: Transform, area: Rect): Transform {
  return { x: t.x + area.x, y: t.y + area.y, k: t.k };
}

/** Where two rectangles overlap (w or h 0 or less when they don't). */
function crossing(a: Rect, b: Rect): Rect {
  const x = Math.max(a.x, b.x);
  const y = Math.max(a.y, b.y);
  return { x, y, w: Math.min(a.x + a.w, b.x + b.w) - x, h: Math.min(a.y + a.h, b.y + b.h) - y };
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

/**
 * Where a card of size `card` goes beside `box` (both in view px) so that the box stays in
 * sight: below it, else above, else right, else left of it — the first side where the
 * whole card fits in `view`; when none does, the side with the most room, kept inside.
 */
export function besideBox(box: Rect, card: ViewSize, view: ViewSize, gap = 8): { x: number; y: number } {
  const clampX = (x: number): number => Math.max(0, Math.min(x, view.w - card.w - 4));
  const clampY = (y: number): number => Math.max(0, Math.min(y, view.h - card.h - 4));
  const room = {
    below: view.h - (box.y + box.h + gap),
    above: box.y - gap,
    right: view.w - (box.x + box.w + gap),
    left: box.x - gap,
  };
  const at = {
    below: { x: clampX(box.x), y: box.y + box.h + gap },
    above: { x: clampX(box.x), y: box.y - gap - card.h },
    right: { x: box.x + box.w + gap, y: clampY(box.y) },
    left: { x: box.x - gap - card.w, y: clampY(box.y) },
  };
  const need = { below: card.h, above: card.h, right: card.w, left: card.w };
  const sides = ["below", "above", "right", "left"] as const;
  const fits = sides.find((s) => room[s] >= need[s]);
  if (fits) return at[fits];
  // (the share of the card each side has room for: the largest wins)
  const best = sides.reduce((a, s) => (room[s] / need[s] > room[a] / need[a] ? s : a), sides[0]);
  return { x: clampX(at[best].x), y: clampY(at[best].y) };
}

/** What the keyboard's card keeps clear of besides its own box (view px). */
export interface CardAvoid {
  /** The boxes an arrow goes to next (before and after it in reading order). */
  neighbours: readonly Rect[];
  /** The one the next press in the direction of travel goes to: the card goes away from it. */
  ahead?: Rect | null;
  /** What lies over the graph (the table, the legend, the overview): avoided where there is room. */
  panels?: readonly Rect[];
  /** The other boxes in view: of the places that fit, the card takes the one over fewest. */
  others?: readonly Rect[];
}

type Side = "below" | "above" | "right" | "left";

/** besideBox's sides, the one away from `ahead` first and the one toward it last. */
function sidesAwayFrom(box: Rect, ahead: Rect | null | undefined): Side[] {
  if (!ahead) return ["below", "above", "right", "left"];
  const dx = ahead.x + ahead.w / 2 - (box.x + box.w / 2);
  const dy = ahead.y + ahead.h / 2 - (box.y + box.h / 2);
  if (Math.abs(dy) >= Math.abs(dx)) return dy > 0 ? ["above", "right", "left", "below"] : ["below", "right", "left", "above"];
  return dx > 0 ? ["left", "below", "above", "right"] : ["right", "below", "above", "left"];
}

/**
 * Where the keyboard's card of `box` goes (view px): whole in `view`, off the box and off
 * its neighbours (a card over the box the next arrow goes to hid it), and off the panels
 * where there is room. Beside the box first, over the fewest other boxes, the side away
 * from the direction of travel first among equals; then the view's corners alike; then the
 * same off the box and its neighbours only; else as besideBox (the box in sight).
 */
export function cardSpot(box: Rect, card: ViewSize, view: ViewSize, avoid: CardAvoid, gap = 8): { x: number; y: number } {
  const clampX = (x: number): number => Math.max(0, Math.min(x, view.w - card.w - 4));
  const clampY = (y: number): number => Math.max(0, Math.min(y, view.h - card.h - 4));
  const near = [box, ...avoid.neighbours, ...(avoid.ahead ? [avoid.ahead] : [])];
  // Each side's card lined up with either end of the box, or slid just past a neighbour,
  // as long as it still touches the box's side (at worst corner to corner).
  const along = (s: Side): { x: number; y: number }[] => {
    if (s === "below" || s === "above") {
      const y = s === "below" ? box.y + box.h + gap : box.y - gap - card.h;
      const xs = [box.x, box.x + box.w - card.w, ...near.flatMap((r) => [r.x + r.w + gap, r.x - gap - card.w])];
      return xs.map((x) => ({ x: clampX(x), y })).filter((p) => p.x <= box.x + box.w + gap && p.x + card.w >= box.x - gap);
    }
    const x = s === "right" ? box.x + box.w + gap : box.x - gap - card.w;
    const ys = [box.y, box.y + box.h - card.h, ...near.flatMap((r) => [r.y + r.h + gap, r.y - gap - card.h])];
    return ys.map((y) => ({ x, y: clampY(y) })).filter((p) => p.y <= box.y + box.h + gap && p.y + card.h >= box.y - gap);
  };
  const cx = box.x + box.w / 2;
  const cy = box.y + box.h / 2;
  const far = (p: { x: number; y: number }): number => Math.hypot(p.x + card.w / 2 - cx, p.y + card.h / 2 - cy);
  const corners = [4, view.w - card.w - 4].flatMap((x) => [4, view.h - card.h - 4].map((y) => ({ x, y }))).sort((a, b) => far(a) - far(b));
  const beside = sidesAwayFrom(box, avoid.ahead).flatMap(along);
  const fits = (p: { x: number; y: number }): boolean => p.x >= 0 && p.y >= 0 && p.x + card.w <= view.w && p.y + card.h <= view.h;
  const off = (p: { x: number; y: number }, r: Rect): boolean => p.x >= r.x + r.w || r.x >= p.x + card.w || p.y >= r.y + r.h || r.y >= p.y + card.h;
  const all = [...near, ...(avoid.panels ?? [])];
  const over = (p: { x: number; y: number }): number => (avoid.others ?? []).filter((r) => !off(p, r)).length;
  /** Of `spots` that fit clear of `rects`, the one over fewest other boxes (the first of equals). */
  const best = (spots: { x: number; y: number }[], rects: Rect[]): { x: number; y: number } | undefined => {
    let pick: { x: number; y: number } | undefined;
    let least = Infinity;
    for (const p of spots) {
      if (!fits(p) || !rects.every((r) => off(p, r))) continue;
      const n = over(p);
      if (n < least) [pick, least] = [p, n];
    }
    return pick;
  };
  return best(beside, all) ?? best(corners, all) ?? best(beside, near) ?? best(corners, near) ?? besideBox(box, card, view, gap);
}
