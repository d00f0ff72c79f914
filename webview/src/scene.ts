// The live drawing: only items near the visible window exist in the DOM, created in
// time-boxed chunks so a graph of thousands of nodes never blocks the page. Marks
// (search matches, selection, error) are kept here and applied to items as they appear.
import { select } from "d3-selection";
import { drawCluster, drawClusterHeader, drawEdge, drawNode, paintHeat, type DrawInput, type G } from "./draw";

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Marks {
  match: ReadonlySet<string>;
  current: string | null;
  selected: string | null;
  hasError: string | null;
  /** A paused debugger's line ("you are here") and what it has not run yet (pausedMarks.ts). */
  here?: ReadonlySet<string>;
  ahead?: ReadonlySet<string>;
}

interface Item {
  key: string; // data-key of nodes and clusters; "" for edges and headers
  layer: number; // 0 clusters, 1 edges, 2 cluster headers, 3 nodes
  order: number;
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  make: (parent: G) => SVGGElement;
}

const CHUNK_MS = 24;
const NEAR = 0.5; // draw items within half a window around the view
const FAR = 1.5; // drop items further than this (hysteresis against thrashing)

const noMarks: Marks = { match: new Set(), current: null, selected: null, hasError: null };

function toggleAttr(el: Element, name: string, on: boolean): void {
  if (on) el.setAttribute(name, "true");
  else el.removeAttribute(name);
}

export class Scene {
  private readonly layers: G[];
  private items: Item[] = [];
  private readonly live = new Map<Item, SVGGElement>();
  private readonly byKey = new Map<string, SVGGElement>();
  private marks: Marks = noMarks;
  /** Overlay heat (0..1) by drawn key: data-heat and the fill's share of the hot colour. */
  private heat: ReadonlyMap<string, number> = new Map();
  private view: Rect = { x: 0, y: 0, w: 0, h: 0 };
  private timer: ReturnType<typeof setTimeout> | null = null;
  private waiters: (() => void)[] = [];

  constructor(scene: SVGGElement) {
    const root = select(scene);
    this.layers = ["ts-clusters", "ts-edges", "ts-cluster-heads", "ts-nodes"].map((c) => root.append("g").attr("class", c));
  }

  /** New layout: forget the old items (drawn on the next update). */
  set(d: DrawInput): void {
    for (const l of this.layers) l.selectAll("*").remove();
    this.live.clear();
    this.byKey.clear();
    const items: Item[] = [];
    const vnodes = new Map(d.vg.nodes.map((v) => [v.key, v]));
    const vclusters = new Map(d.vg.clusters.map((c) => [c.key, c]));
    const vedges = new Map(d.vg.edges.map((e) => [e.key, e]));
    d.layout.clusters.forEach((c, i) => {
      const vc = vclusters.get(c.key);
      if (!vc) return;
      items.push({ key: c.key, layer: 0, order: i, x0: c.x, y0: c.y, x1: c.x + c.w, y1: c.y + c.h, make: (p) => drawCluster(p, d, c, vc) });
      items.push({ key: "", layer: 2, order: i, x0: c.x, y0: c.y, x1: c.x + c.w, y1: c.y + 24, make: (p) => drawClusterHeader(p, d, c) });
    });
    d.layout.edges.forEach((e, i) => {
      const ve = vedges.get(e.key);
      if (!ve) return;
      let [x0, y0, x1, y1] = e.box;
      if (e.label) {
        // Labels sit beside the path; widen by a generous label size.
        x0 = Math.min(x0, e.label[0] - 60);
        x1 = Math.max(x1, e.label[0] + 60);
        y0 = Math.min(y0, e.label[1] - 8);
        y1 = Math.max(y1, e.label[1] + 8);
      }
      items.push({ key: "", layer: 1, order: i, x0, y0, x1, y1, make: (p) => drawEdge(p, d, e, ve) });
    });
    d.layout.nodes.forEach((n, i) => {
      const v = vnodes.get(n.key);
      if (!v) return;
      const x0 = n.x - n.w / 2 - 6;
      const y0 = n.y - n.h / 2 - 6;
      items.push({ key: n.key, layer: 3, order: i, x0, y0, x1: x0 + n.w + 12, y1: y0 + n.h + 12, make: (p) => drawNode(p, d, n, v) });
    });
    this.items = items;
  }

  /** The window now shown, in layout coordinates. Drawing catches up asynchronously. */
  setView(r: Rect): void {
    this.view = r;
    this.schedule(0);
  }

  /** Resolves once everything near the current window is drawn. */
  settled(): Promise<void> {
    if (this.timer === null) return Promise.resolve();
    return new Promise((res) => this.waiters.push(res));
  }

  /** Draw now, as far as the time budget allows (used right after a new layout). */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.step();
  }

  element(key: string): SVGGElement | undefined {
    return this.byKey.get(key);
  }

  setMarks(m: Marks): void {
    const old = this.marks;
    this.marks = m;
    const touched = new Set<string>([...old.match, ...m.match, ...(old.here ?? []), ...(m.here ?? []), ...(old.ahead ?? []), ...(m.ahead ?? [])]);
    for (const k of [old.current, old.selected, old.hasError, m.current, m.selected, m.hasError]) if (k) touched.add(k);
    for (const k of touched) {
      const el = this.byKey.get(k);
      if (el) this.applyMarks(el, k);
    }
  }

  /** The overlay heat by drawn key (the export colours its boxes the same). */
  heatMap(): ReadonlyMap<string, number> {
    return this.heat;
  }

  setHeat(heat: ReadonlyMap<string, number>): void {
    const old = this.heat;
    this.heat = heat;
    for (const [key, el] of this.byKey) if (old.has(key) || heat.has(key)) this.applyHeat(el, key);
  }

  dispose(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.release();
  }

  private applyMarks(el: Element, key: string): void {
    const m = this.marks;
    el.classList.toggle("ts-match", m.match.has(key));
    el.classList.toggle("ts-current", m.current === key);
    el.classList.toggle("ts-selected", m.selected === key);
    // The attribute too: tests and hosts find the selection without knowing the class.
    if (m.selected === key) el.setAttribute("data-selected", "true");
    else el.removeAttribute("data-selected");
    el.classList.toggle("ts-has-error", m.hasError === key);
    // Attributes as the test hooks and the style both use (docs/viewer.md, "You are here").
    toggleAttr(el, "data-here", !!m.here?.has(key));
    toggleAttr(el, "data-ahead", !!m.ahead?.has(key));
  }

  private applyHeat(el: SVGGElement, key: string): void {
    paintHeat(el, this.heat.get(key));
  }

  private schedule(delay: number): void {
    if (this.timer !== null) return;
    // setTimeout, not requestAnimationFrame: rAF stops in off-screen notebook iframes.
    this.timer = setTimeout(() => {
      this.timer = null;
      this.step();
    }, delay);
  }

  private release(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private step(): void {
    const t0 = performance.now();
    const { x, y, w, h } = this.view;
    const near = { x0: x - w * NEAR, y0: y - h * NEAR, x1: x + w * (1 + NEAR), y1: y + h * (1 + NEAR) };
    const far = { x0: x - w * FAR, y0: y - h * FAR, x1: x + w * (1 + FAR), y1: y + h * (1 + FAR) };
    for (const [it, el] of this.live) {
      if (it.x1 < far.x0 || it.x0 > far.x1 || it.y1 < far.y0 || it.y0 > far.y1) {
        el.remove();
        this.live.delete(it);
        if (it.key && this.byKey.get(it.key) === el) this.byKey.delete(it.key);
      }
    }
    let addedCluster = false;
    let unfinished = false;
    for (const it of this.items) {
      if (this.live.has(it)) continue;
      if (it.x1 < near.x0 || it.x0 > near.x1 || it.y1 < near.y0 || it.y0 > near.y1) continue;
      if (performance.now() - t0 > CHUNK_MS) {
        unfinished = true;
        break;
      }
      const el = it.make(this.layers[it.layer]!);
      this.live.set(it, el);
      if (it.key) {
        this.byKey.set(it.key, el);
        this.applyMarks(el, it.key);
        if (this.heat.has(it.key)) this.applyHeat(el, it.key);
      }
      if (it.layer === 0) addedCluster = true;
    }
    if (addedCluster) this.orderClusters();
    if (unfinished) this.schedule(0);
    else this.release();
  }

  /** Outer clusters must paint before the clusters inside them. */
  private orderClusters(): void {
    const layer = this.layers[0]!.node()!;
    const drawn = [...this.live].filter(([it]) => it.layer === 0).sort((a, b) => a[0].order - b[0].order);
    for (const [, el] of drawn) layer.appendChild(el);
  }
}
