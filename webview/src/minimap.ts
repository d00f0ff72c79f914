// Overview in a corner: the whole layout in miniature and the visible window on it.
// A canvas keeps it cheap for thousands of nodes; click or drag to move the view.
import type { Layout } from "./layout";

/** Distance of the overview from the stage's edges (viewer.css .ts-minimap). */
const INSET = 12;

export interface ViewRect {
  x: number;
  y: number;
  w: number;
  h: number;
}

export class Minimap {
  readonly canvas: HTMLCanvasElement;
  private base: HTMLCanvasElement | null = null;
  private layout: Layout | null = null;
  private colors: { node: string; cluster: string } | null = null;
  /** The largest size the stage allowed when drawn (its share of the stage). */
  private room = { w: 0, h: 0 };
  private sx = 1;
  private sy = 1;
  private dragging = false;

  constructor(
    parent: HTMLElement,
    private readonly onMove: (cx: number, cy: number) => void,
  ) {
    this.canvas = document.createElement("canvas");
    this.canvas.className = "ts-minimap";
    this.canvas.setAttribute("aria-label", "overview");
    parent.appendChild(this.canvas);
    const move = (ev: PointerEvent): void => {
      const r = this.canvas.getBoundingClientRect();
      this.onMove((ev.clientX - r.left) / this.sx, (ev.clientY - r.top) / this.sy);
    };
    this.canvas.addEventListener("pointerdown", (ev) => {
      this.dragging = true;
      this.canvas.setPointerCapture(ev.pointerId);
      move(ev);
    });
    this.canvas.addEventListener("pointermove", (ev) => this.dragging && move(ev));
    this.canvas.addEventListener("pointerup", () => (this.dragging = false));
  }

  /** Draw `layout` in miniature; again with new colours when the theme changes. */
  setLayout(layout: Layout, colors: { node: string; cluster: string }): void {
    this.layout = layout;
    this.colors = colors;
    this.room = this.roomNow();
    const { w: maxW, h: maxH } = this.room;
    const lw = Math.max(layout.width, 1);
    const lh = Math.max(layout.height, 1);
    this.sy = Math.min(maxW / lw, maxH / lh);
    // A very tall graph would be a hairline: stretch x to a usable minimum width.
    this.sx = Math.min(maxW / lw, Math.max(this.sy, 36 / lw));
    const w = Math.max(20, Math.ceil(lw * this.sx));
    const h = Math.max(20, Math.ceil(lh * this.sy));
    const dpr = globalThis.devicePixelRatio || 1;
    const base = document.createElement("canvas");
    base.width = w * dpr;
    base.height = h * dpr;
    const ctx = base.getContext("2d")!;
    ctx.scale(dpr * this.sx, dpr * this.sy);
    // No background of its own: the element's CSS background (the theme's) shows through.
    ctx.strokeStyle = colors.cluster;
    ctx.lineWidth = 1 / this.sy;
    for (const c of layout.clusters) ctx.strokeRect(c.x, c.y, c.w, c.h);
    ctx.fillStyle = colors.node;
    for (const n of layout.nodes) ctx.fillRect(n.x - n.w / 2, n.y - n.h / 2, n.w, n.h);
    this.base = base;
    this.canvas.width = base.width;
    this.canvas.height = base.height;
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
  }

  /** The stage was resized: drawn again at the size it allows now (it kept the size of the
   * stage it was first drawn in, and covered the graph of a window made smaller). */
  resized(): void {
    if (!this.layout || !this.colors) return;
    const room = this.roomNow();
    if (room.w !== this.room.w || room.h !== this.room.h) this.setLayout(this.layout, this.colors);
  }

  /** At most a quarter of the stage's width and 30% of its height, so small notebook views
   * stay usable. */
  private roomNow(): { w: number; h: number } {
    const stage = this.canvas.parentElement!;
    return {
      w: Math.min(180, Math.max(60, stage.clientWidth * 0.25)),
      h: Math.min(200, Math.max(60, stage.clientHeight * 0.3)),
    };
  }

  /** Screen space the overview takes in the stage's bottom-right corner (with its inset). */
  footprint(): { w: number; h: number } {
    const w = parseFloat(this.canvas.style.width) || 0;
    const h = parseFloat(this.canvas.style.height) || 0;
    return { w: w + INSET, h: h + INSET };
  }

  /** Draw the visible window (layout coordinates). */
  update(view: ViewRect, color: string): void {
    if (!this.base || !this.layout) return;
    const ctx = this.canvas.getContext("2d")!;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.drawImage(this.base, 0, 0);
    const dpr = globalThis.devicePixelRatio || 1;
    ctx.scale(dpr * this.sx, dpr * this.sy);
    ctx.strokeStyle = color;
    ctx.lineWidth = 2 / this.sy;
    ctx.strokeRect(view.x, view.y, view.w, view.h);
  }
}
