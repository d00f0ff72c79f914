// The viewer: wires the pure core (visible graph → DOT), the layout worker, drawing,
// zoom and the controls together. Holds the only mutable view state.
import { select } from "d3-selection";
import { zoom, zoomIdentity, zoomTransform, type ZoomBehavior } from "d3-zoom";
import type { Graph, GraphNode } from "./format";
import { buildIndex, type GraphIndex } from "./model";
import {
  closeFrom,
  collapseAll,
  currentDepth,
  depthFor,
  expandAll,
  expansionKey,
  initialExpansion,
  reveal,
  toDepth,
  toggleGroup,
  toggleModule,
  toggleSegment,
  type Expansion,
} from "./expansion";
import { buildVisible, shownAs, TooManyToDraw, type VisibleGraph } from "./visible";
import { errorText } from "./errorText";
import { clip, isCollective, rankText } from "./labels";
import { segmentRange, segmentsOf } from "./segments";
import type { Label } from "./labels";
import type { Layout } from "./layout";
import type { WorkerLike } from "./deferredWorker";
import { Cancelled, LayoutClient } from "./layoutClient";
import { computeView, DRAW_LIMITS, type View } from "./compute";
import { nextTask } from "./tasks";
import { anchorOf, boundsOf } from "./draw";
import { Scene, type Rect } from "./scene";
import {
  MAX_ZOOM,
  MIN_ZOOM,
  centerTransform,
  clearArea,
  inArea,
  detailLevel,
  fitTransform,
  initialTransform,
  pinTransform,
  revealTransform,
  showsAll,
  cardSpot,
  toScreen,
  visibleRect,
  zoomStep,
  zoomToBox,
  type Transform,
} from "./camera";
import { buttonAction, graphKeyAction, keyAction, readingOrder, searchKeyAction, stepIn, type GraphKeyAction, type ViewerAction } from "./keys";
import { describe, describeEdge, spareOrder } from "./details";
import { spokenName } from "./speech";
import { formatCount } from "./count";
import { highlightKeys, nodesAtLine, searchNodes, stepMatch } from "./search";
import { Minimap } from "./minimap";
import { CANVAS_MAX_AREA, CANVAS_MAX_SIDE, exportSize, exportSvg, pngScale, svgToPng } from "./export";
import { buildUi, fillTooltip, fitTooltip, type Ui } from "./ui";
import { MONO, SANS, fontCss, type Font, type Measure } from "./metrics";
import type { Host } from "./host";
import type { ViewState } from "./messages";
import { ValuesPanel } from "./valuesPanel";
import { histogramChart } from "./histogram";
import { sideError, type ViewMarks } from "./compare";
import { CompareControls } from "./compareDraw";
import type { PausedAt } from "./messages";
import { pausedKeys, pausedNodes, type PausedNodes } from "./pausedMarks";

interface Drawn {
  key: string;
  exp: Expansion;
  vg: VisibleGraph;
  layout: Layout;
  labels: Map<string, Label>;
  /** A compare view's marks for this view. */
  marks?: ViewMarks;
}

const BUSY_NOTE_AFTER_MS = 150;
/** Longest model name the toolbar shows (its title attribute has it whole). */
const MODEL_NAME_MAX = 60;
/** Longest model name the status line shows: its counts must fit beside it at 360 px. */
const STATUS_NAME_MAX = 40;
/** A click hides the hover card until the pointer moves this far (px). */
const TIP_MOVE_PX = 6;
/** Layout px of an opened frame's header: what of it must show (its card goes below it). */
const FRAME_HEAD = 40;

/** Text widths in the fonts the page really uses (a VS Code theme sets its own). */
function canvasMeasure(root: HTMLElement): Measure {
  const ctx = document.createElement("canvas").getContext("2d")!;
  const cs = getComputedStyle(root);
  const sans = cs.getPropertyValue("--ts-font").trim();
  const mono = cs.getPropertyValue("--ts-mono").trim();
  const cache = new Map<string, number>();
  return (text: string, f: Font): number => {
    const k = `${f.size}|${f.weight}|${f.mono}|${text}`;
    let w = cache.get(k);
    if (w === undefined) {
      const family = f.mono ? mono : sans;
      ctx.font = family ? `${f.weight} ${f.size}px ${family}` : fontCss(f);
      w = ctx.measureText(text).width;
      cache.set(k, w);
    }
    return w;
  };
}

export class Viewer {
  readonly idx: GraphIndex;
  readonly ui: Ui;
  private exp: Expansion;
  private drawn: Drawn | null = null;
  private readonly client: LayoutClient;
  private readonly zoomer: ZoomBehavior<SVGSVGElement, unknown>;
  private readonly minimap: Minimap;
  private readonly scene: Scene;
  private readonly measure: Measure;
  private generation = 0;
  private busyTimer: ReturnType<typeof setInterval> | null = null;
  private selected: string | null = null;
  private matches: number[] = [];
  private matchPos = -1;
  private searchBase: Expansion | null = null;
  private firstDraw = true;
  private lastLayoutMs = 0;
  /** The depth the user asked for; null after a change by hand (then derived). */
  private depth: number | null = null;
  private readonly disposer = new AbortController();
  /** Where a click hid the hover card: it stays hidden until the pointer moves away. */
  private tipHold: { x: number; y: number } | null = null;
  /** The box whose details card the keyboard showed (focusBox): the card goes with it. */
  private cardKey: string | null = null;
  /** Which way the arrows last went (1: on in reading order): the card goes the other way. */
  private cardStep: 1 | -1 = 1;
  /** The box the keyboard opened or closed (Space, +, −): the status line says what that did
   * once it is drawn, instead of the layout's statistics. */
  private toggledKey: string | null = null;
  /** The drawn layout's boxes and frames in reading order (keys.ts), made once per layout. */
  private order: { layout: Layout; keys: string[] } | null = null;
  /** The view the page chose itself (opening view or Fit): redone when the stage resizes,
   * until the user zooms, pans or opens something. */
  private autoView: "initial" | "fit" | null = null;
  /** An SVG or a PNG is being made (another export's click meanwhile does nothing). */
  private exporting = false;
  /** Overlay, legend, table of the heaviest nodes, NaN banner (values and costs). */
  readonly values: ValuesPanel;
  /** A compare page's statuses and next / previous change (compareDraw.ts); null otherwise. */
  private readonly comparison: CompareControls | null;
  /** A paused debugger's point in a paused-frame graph ("you are here"); null: none. */
  private paused: PausedNodes | null = null;

  constructor(
    root: HTMLElement,
    graph: Graph,
    bytes: Uint8Array,
    private readonly host: Host,
    makeWorker: () => WorkerLike,
  ) {
    this.idx = buildIndex(graph);
    this.ui = buildUi(root);
    this.comparison = graph.compare ? new CompareControls(graph.compare, this.idx, this.ui) : null;
    this.scene = new Scene(this.ui.scene);
    this.measure = canvasMeasure(this.ui.root);
    const cs = getComputedStyle(this.ui.root);
    const fonts = {
      sans: cs.getPropertyValue("--ts-font").trim() || SANS,
      mono: cs.getPropertyValue("--ts-mono").trim() || MONO,
    };
    this.client = new LayoutClient(makeWorker, bytes, fonts);
    this.client.warm();
    const loaded = host.loadState();
    const saved = loaded && loaded.graph === this.fingerprint() ? loaded : undefined;
    this.exp = saved
      ? { modules: new Set(saved.expanded), groups: new Set(saved.groups), segments: new Set(saved.segments ?? []) }
      : initialExpansion(this.idx);

    this.zoomer = zoom<SVGSVGElement, unknown>()
      .scaleExtent([MIN_ZOOM, MAX_ZOOM])
      .on("zoom", (ev: { transform: { toString(): string }; sourceEvent: Event | null }) => {
        this.ui.viewport.setAttribute("transform", ev.transform.toString());
        // A wheel or a drag by the user: from now on the view is theirs.
        if (ev.sourceEvent) this.autoView = null;
        this.onViewChange();
      });
    select(this.ui.svg).call(this.zoomer).on("dblclick.zoom", null);
    this.minimap = new Minimap(this.ui.stage, (x, y) => this.centerOn(x, y));

    this.ui.title.textContent = clip(graph.model.name || "model", MODEL_NAME_MAX) + rankText(graph.model);
    this.ui.title.title = graph.model.qualname;
    this.values = new ValuesPanel(
      this.ui,
      this.idx,
      { reveal: (id) => void this.revealAndOpen(id), setHeat: (h) => this.scene.setHeat(h), covered: () => this.followView() },
      host.live?.() ?? false,
    );
    this.wireControls();
    this.watchTheme();
    this.showError();
    this.showWarnings();
    void this.apply(this.exp, null, saved?.transform);
  }

  // ---- expansion and layout -------------------------------------------------------

  /** Re-layout for a new expansion; keep `anchor` (a drawn key) where it is on screen. */
  async apply(exp: Expansion, anchor: string | null, restore?: ViewState["transform"]): Promise<void> {
    const gen = ++this.generation;
    this.exp = exp;
    const key = expansionKey(exp);
    performance.mark("torchscope:layout-start");
    this.setBusy(true);
    const t0 = performance.now();
    let vg: VisibleGraph;
    let layout: Layout;
    let labels: Map<string, Label>;
    try {
      // The first view (collapsed: few boxes) is computed here, while the worker is still
      // compiling Graphviz, so the worker can lay it out without decoding the graph first.
      let pre: View | undefined;
      if (this.firstDraw && !restore && !this.client.cached(key)) {
        await nextTask(); // a short start-up task each (see tasks.ts)
        if (gen !== this.generation) return;
        pre = computeView(this.idx, exp, this.measure);
      }
      const lists = { modules: [...exp.modules], groups: [...exp.groups], segments: [...exp.segments] };
      const r = await this.client.layout(key, lists, pre);
      ({ vg, layout } = r);
      labels = new Map(r.labels);
    } catch (e) {
      if (e instanceof Cancelled || gen !== this.generation) return;
      this.failed(e);
      return;
    }
    // A big result took a while to arrive (structured clone); draw in a fresh task.
    if (vg.nodes.length > 1000) await new Promise((r) => setTimeout(r, 0));
    if (gen !== this.generation) return;
    this.lastLayoutMs = performance.now() - t0;
    performance.mark("torchscope:layout-done");
    const before = anchor && this.drawn ? this.screenAnchor(this.drawn.layout, anchor) : null;
    const marks = this.comparison?.marks(vg);
    this.scene.set({ idx: this.idx, vg, layout, labels, measure: this.measure, arrowId: this.ui.scene.dataset.arrow!, marks });
    this.drawn = { key, exp, vg, layout, labels, marks };
    // a selection inside a box closed since: that box is the place the keys go on from
    if (this.selected) this.selected = shownAs(this.idx, vg, this.selected);
    this.minimap.setLayout(layout, this.colors());
    if (restore) {
      this.setTransform(restore);
    } else if (this.firstDraw) {
      this.initialView();
    } else if (before && anchor && anchorOf(layout, anchor)) {
      this.keepAnchor(anchor, before);
      // An opened module (group, segment) is a frame now: show what it holds.
      if (layout.clusters.some((c) => c.key === anchor)) this.bringIntoView(anchor);
    } else if (before && anchor) {
      // The box to hold still is inside one the new view closed (a lower depth): the view
      // that stayed where it was would show an empty window.
      this.initialView();
    } else {
      this.onViewChange();
    }
    this.firstDraw = false;
    this.followCard(true);
    this.refreshMarks();
    this.values.update(vg);
    this.scene.flush();
    await this.scene.settled();
    if (gen !== this.generation) return;
    this.ui.depth.textContent = String(this.depthShown());
    this.setBusy(false);
    this.notice(null);
    performance.mark("torchscope:drawn");
    this.saveState();
    const toggled = this.toggledKey;
    this.toggledKey = null;
    this.status((toggled && this.toggledText(toggled)) || this.summary());
  }

  /** "GPT2Block ×12 opened: 12 boxes", "GPT2Block ×12 closed": what a keyboard toggle did. */
  private toggledText(key: string): string | null {
    if (!this.drawn) return null;
    const { vg } = this.drawn;
    const name = describe(this.idx, vg, key)?.title ?? key;
    if (!this.isOpen(key)) return `${name} closed`;
    const n = vg.nodes.filter((v) => v.cluster === key).length + vg.clusters.filter((c) => c.parent === key).length;
    return `${name} opened: ${n} box${n === 1 ? "" : "es"}`;
  }

  /**
   * A layout that didn't happen. Too big a view is refused and the drawn one stays (ready,
   * with a notice); anything else is the error state with its message: a failed layout
   * is never reported as ready.
   */
  private failed(e: unknown): void {
    this.setBusy(false);
    this.toggledKey = null; // (nothing opened or closed)
    if (this.drawn) {
      // What is on screen is still the state.
      this.exp = this.drawn.exp;
      this.depth = null;
      this.ui.depth.textContent = String(this.depthShown());
    }
    if (e instanceof TooManyToDraw && this.drawn) {
      this.notice(`Not drawn: ${e.message}.`);
      return;
    }
    const text = `Layout failed: ${errorText(e)}`;
    this.ui.root.dataset.state = "error";
    this.notice(text);
    this.status(text);
  }

  /** A message over the graph (a refused or failed layout); null hides it. */
  private notice(text: string | null): void {
    this.ui.notice.hidden = text === null;
    this.ui.notice.textContent = text ?? "";
  }

  private setBusy(on: boolean): void {
    this.ui.root.dataset.state = on ? "busy" : "ready";
    if (this.busyTimer) clearInterval(this.busyTimer);
    this.busyTimer = null;
    this.ui.busy.hidden = true;
    if (!on) return;
    const t0 = performance.now();
    // A note appears only for layouts slow enough to notice; it counts the seconds.
    this.busyTimer = setInterval(() => {
      const ms = performance.now() - t0;
      if (ms < BUSY_NOTE_AFTER_MS) return;
      this.ui.busy.hidden = false;
      this.ui.busy.textContent = `Laying out the graph… ${(ms / 1000).toFixed(1)} s`;
    }, 100);
  }

  /** Depth for the control: the one asked for, else the deepest level open. */
  private depthShown(): number {
    return this.depth ?? currentDepth(this.idx, this.exp);
  }

  toggle(key: string): void {
    this.searchBase = null;
    this.depth = null;
    this.autoView = null;
    const n = Number(key.slice(1));
    if (key.startsWith("g")) void this.apply(toggleGroup(this.exp, n), key);
    else if (key.startsWith("s")) void this.apply(toggleSegment(this.exp, n), key);
    else if (key.startsWith("n")) void this.apply(toggleModule(this.exp, n), key);
  }

  expandAll(): void {
    this.depth = null;
    this.searchBase = null; // (a search step starts from this view, not the one before)
    // Without a selection to hold still, start again from the inputs.
    const anchor = this.selected;
    let exp = expandAll(this.idx);
    let note: string | null = null;
    if (!this.drawable(exp)) {
      // Everything at once is too much for Graphviz: open as many levels as can be drawn.
      let lo = 0;
      let hi = this.idx.maxDepth + 1;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (this.drawable(toDepth(this.idx, mid))) lo = mid;
        else hi = mid - 1;
      }
      this.depth = Math.max(lo, 1);
      exp = toDepth(this.idx, this.depth);
      const levels = `${this.depth} level${this.depth === 1 ? "" : "s"}`;
      const limits = `${DRAW_LIMITS.boxes.toLocaleString("en-US")} boxes at most, ${DRAW_LIMITS.levels} levels`;
      note = `Expanded ${levels} deep: everything at once would be too many nodes to draw (${limits}); open the rest one by one.`;
    }
    const done = this.apply(exp, anchor);
    const gen = this.generation;
    void done.then(() => {
      if (gen !== this.generation) return;
      if (note && this.ui.notice.hidden) this.notice(note);
      if (!anchor) this.initialView();
    });
  }

  /** Whether Graphviz may be asked to draw `exp` (the limits the worker applies). */
  private drawable(exp: Expansion): boolean {
    try {
      buildVisible(this.idx, exp, DRAW_LIMITS);
      return true;
    } catch (e) {
      if (e instanceof TooManyToDraw) return false;
      throw e;
    }
  }

  collapseAll(): void {
    this.depth = null;
    this.searchBase = null;
    void this.apply(collapseAll(this.idx), null).then(() => this.initialView());
  }

  setDepth(d: number): void {
    this.openToDepth(depthFor(this.idx, d));
  }

  /** Every box down to `depth` (one depthFor gave) open, as the depth control shows it. */
  private openToDepth(depth: number): void {
    this.searchBase = null;
    this.depth = depth;
    const anchor = this.selected;
    void this.apply(toDepth(this.idx, depth), anchor).then(() => anchor ?? this.initialView());
  }

  /** Depth −: close the deepest level open, leaving closed what is closed. */
  private closeDepth(d: number): void {
    this.searchBase = null;
    const depth = Math.max(0, d);
    this.depth = depth;
    const anchor = this.selected;
    void this.apply(closeFrom(this.idx, this.exp, depth), anchor).then(() => anchor ?? this.initialView());
  }

  dispose(): void {
    this.generation++;
    this.autoView = null;
    if (this.busyTimer) clearInterval(this.busyTimer);
    this.client.dispose();
    this.scene.dispose();
    this.disposer.abort();
  }

  // ---- view transform ---------------------------------------------------------------

  private size(): { w: number; h: number } {
    return { w: this.ui.svg.clientWidth || 800, h: this.ui.svg.clientHeight || 600 };
  }

  private transform(): Transform {
    const { x, y, k } = zoomTransform(this.ui.svg);
    return { x, y, k };
  }

  private setTransform(t: Transform): void {
    select(this.ui.svg).call(this.zoomer.transform, zoomIdentity.translate(t.x, t.y).scale(t.k));
  }

  private screenAnchor(layout: Layout, key: string): { x: number; y: number } | null {
    const a = anchorOf(layout, key);
    return a && toScreen(this.transform(), a);
  }

  private keepAnchor(key: string, screen: { x: number; y: number }): void {
    const a = anchorOf(this.drawn!.layout, key);
    if (a) this.setTransform(pinTransform(a, screen, this.transform().k));
  }

  /** The opening view (also after E, C and 0): see camera.ts initialTransform; in the part
   * of the view the table and the legend leave free. */
  initialView(): void {
    if (!this.drawn) return;
    this.autoView = "initial";
    const a = clearArea(this.size(), this.covered());
    this.setTransform(inArea(initialTransform(this.drawn.layout, a, this.drawn.layout.nodes), a));
  }

  /** The whole graph, as large as the view allows (clear of the table and the legend). */
  fit(): void {
    if (!this.drawn) return;
    this.autoView = "fit";
    const a = clearArea(this.size(), this.covered());
    this.setTransform(inArea(fitTransform(this.drawn.layout, a), a));
  }

  /** A view the page chose follows what covers the graph; one the user moved stays. */
  private followView(): void {
    if (this.autoView === "initial") this.initialView();
    else if (this.autoView === "fit") this.fit();
  }

  /** After opening `key`: its frame in view, clear of the overview (camera.ts revealTransform). */
  private bringIntoView(key: string): void {
    const b = boundsOf(this.drawn!.layout, key);
    if (b) this.setTransform(revealTransform(b, this.drawn!.layout, this.transform(), this.size(), this.minimap.footprint()));
  }

  /** The view moved to centre (x, y) for the user (the overview, a keyboard walk): it no
   * longer follows the window's size. */
  private centerOn(x: number, y: number): void {
    this.autoView = null;
    this.setTransform(centerTransform(x, y, this.transform().k, this.size()));
  }

  zoomTo(key: string): void {
    const b = this.drawn && boundsOf(this.drawn.layout, key);
    if (!b) return;
    this.autoView = null; // (moved for the user: a resize keeps it, as a pan)
    const size = this.size();
    this.setTransform(zoomToBox(b, this.transform().k, size, this.drawn!.layout, clearArea(size, this.covered())));
  }

  /** ] and [: zoom in or out about the selected box (an opened frame: its header), clear of
   * the table and the legend; said on the status line for those who can't see the scale. */
  private zoomStep(step: 1 | -1): void {
    if (!this.drawn) return;
    this.autoView = null;
    const b = this.selected ? boundsOf(this.drawn.layout, this.selected) : null;
    const at = b && { x: b.x + b.w / 2, y: b.y + Math.min(b.h, FRAME_HEAD) / 2 };
    const size = this.size();
    const t = zoomStep(this.transform(), step, clearArea(size, this.covered()), at);
    this.setTransform(t);
    this.status(`Zoom ${Math.round(t.k * 100)} %`);
  }

  /** What the heaviest-nodes table and the legend cover of the graph (view px), those that show. */
  private covered(): Rect[] {
    const out: Rect[] = [];
    for (const panel of [this.values.table, this.values.legend]) {
      if (panel.hidden) continue;
      const r = this.inSvg(panel);
      if (r.w > 0 && r.h > 0) out.push(r);
    }
    return out;
  }

  /** Where an element over the graph is, in view px. */
  private inSvg(el: Element): Rect {
    const s = this.ui.svg.getBoundingClientRect();
    const r = el.getBoundingClientRect();
    return { x: r.left - s.left, y: r.top - s.top, w: r.width, h: r.height };
  }

  /** After any zoom or pan: draw what came into view, update the overview and detail level. */
  private onViewChange(): void {
    if (!this.drawn) return;
    const t = this.transform();
    const r = visibleRect(t, this.size());
    this.scene.setView(r);
    // The overview only helps when part of the graph is out of sight.
    this.minimap.canvas.hidden = showsAll(r, this.drawn.layout);
    this.minimap.update(r, this.css("--ts-accent", "#3b82f6"));
    const lod = detailLevel(t.k);
    this.ui.svg.classList.toggle("ts-lod-low", lod.low);
    this.ui.svg.classList.toggle("ts-lod-mid", lod.mid);
    this.followCard(false);
  }

  // ---- selection, search, marks -------------------------------------------------------

  private refreshMarks(): void {
    if (!this.drawn) return;
    const { vg } = this.drawn;
    const cur = this.matches[this.matchPos];
    this.scene.setMarks({
      match: highlightKeys(vg.rep, this.matches),
      current: cur !== undefined ? vg.rep[cur]! : null,
      selected: this.selected,
      hasError: this.hidingError(vg),
      ...(this.paused ? pausedKeys(vg.rep, this.paused) : {}),
    });
  }

  /** The drawn box that hides the failing call (a collapsed module or group), outlined in the
   * error colour on screen and in an export; null when the error node itself is drawn. */
  private hidingError(vg: VisibleGraph): string | null {
    const err = this.idx.graph.error?.node;
    const errKey = err !== undefined && err !== null ? vg.rep[err] : undefined;
    return errKey && errKey !== `n${err}` ? errKey : null;
  }

  select(key: string | null): void {
    this.selected = key;
    this.refreshMarks();
  }

  /** Expand as needed to draw node `id` itself, then select it and bring it into view;
   * `say`: the status line's text, set first (a longer line takes room from the stage). */
  async revealNode(id: number, base = this.exp, say?: string): Promise<void> {
    this.depth = null;
    const exp = reveal(this.idx, base, id);
    if (expansionKey(exp) !== expansionKey(this.exp) || !this.drawn) await this.apply(exp, null);
    if (!this.drawn) return;
    const key = this.drawn.vg.rep[id]!;
    if (say !== undefined) this.status(say);
    // The view shows this node now: a resize no longer puts the opening view back.
    this.autoView = null;
    this.select(key);
    this.zoomTo(key);
  }

  /** Where a paused debugger is in this graph's call: its line's calls are marked and brought
   * into view, what is still ahead is drawn faded; null clears the marks. */
  async setPausedAt(at: PausedAt | null): Promise<void> {
    this.paused = at ? pausedNodes(this.idx, at) : null;
    const first = this.paused?.here[0];
    if (first !== undefined) await this.revealNode(first);
    else this.refreshMarks();
  }

  /** A hover's "Show in graph": `node` revealed and selected, `nodes` marked as matches. */
  async showNodes(node: number, nodes: number[] = [node]): Promise<void> {
    if (!this.idx.graph.nodes[node]) return;
    this.matches = nodes.filter((id) => !!this.idx.graph.nodes[id]);
    this.matchPos = -1;
    await this.revealNode(node);
  }

  /** Reveal node `id` and open its line in the host (table rows, Find NaN origin). */
  async revealAndOpen(id: number): Promise<void> {
    await this.revealNode(id);
    const node = this.idx.graph.nodes[id];
    if (node?.site) this.host.reveal(node.site, node);
  }

  /** A compare view: open the way to the next (previous) change, centre and select it. */
  async stepChange(step: 1 | -1): Promise<void> {
    if (!this.comparison) return;
    const sel = this.selected?.startsWith("n") ? Number(this.selected.slice(1)) : null;
    const to = this.comparison.step(sel, step);
    if (!to) return;
    await this.revealNode(to.id, this.exp, to.text);
  }

  search(query: string): void {
    this.matches = searchNodes(this.idx, query);
    this.matchPos = -1;
    this.searchBase = null;
    this.ui.searchCount.textContent = query.trim() ? `${this.matches.length} found` : "";
    this.refreshMarks();
  }

  /** Mark the nodes made on `file:line` (the host's cursor line), like search matches. */
  highlightLine(file: string, line: number): void {
    if (this.ui.search.value.trim()) return; // a search the user typed wins
    // A compare page: a removed node's line is in the version before, not the file shown.
    this.matches = nodesAtLine(this.idx, file, line).filter((id) => this.comparison?.side(id) !== "a");
    this.matchPos = -1;
    this.refreshMarks();
  }

  async nextMatch(step: 1 | -1): Promise<void> {
    if (this.matches.length === 0) return;
    const n = this.matches.length;
    this.matchPos = stepMatch(this.matchPos, step, n);
    this.ui.searchCount.textContent = `${this.matchPos + 1} / ${n}`;
    // Each step opens just the path to this match on top of the view the search started from.
    this.searchBase ??= this.exp;
    const id = this.matches[this.matchPos]!;
    await this.revealNode(id, this.searchBase);
    // The status line says the match once it is drawn: "1 of 96: module GPT2Attention h.0.attn, …".
    const key = this.drawn?.vg.rep[id];
    const said = key && this.drawn ? spokenName(this.idx, this.drawn.vg, key) : null;
    if (said) this.status(`${this.matchPos + 1} of ${n}: ${said}`);
  }

  private clearSearch(): void {
    this.ui.search.value = "";
    this.search("");
  }

  // ---- events -------------------------------------------------------------------------

  private wireControls(): void {
    const { ui } = this;
    ui.toolbar.addEventListener("click", (ev) => {
      const b = (ev.target as Element).closest<HTMLElement>("[data-action]");
      const a = b && buttonAction(b.dataset.action!);
      if (a) this.run(a);
    });
    ui.search.addEventListener("input", () => this.search(ui.search.value));
    ui.search.addEventListener("keydown", (ev) => {
      const a = searchKeyAction(ev.key, ev.shiftKey);
      if (a?.type === "step") {
        ev.preventDefault();
        void this.nextMatch(a.step);
      } else if (a?.type === "leave") {
        // (as Esc anywhere else: the search and the selection); the focus stays in the box,
        // ready for the next search (it went to the page, out of the Tab order)
        this.run({ type: "clear" });
      }
    });
    ui.banner.addEventListener("click", () => this.gotoError());
    // A role=button: Enter and Space (Space would scroll the page).
    ui.banner.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter" && ev.key !== " ") return;
      if (this.ui.banner.getAttribute("role") !== "button") return;
      ev.preventDefault();
      this.gotoError();
    });

    const keyOf = (ev: Event): string | null => {
      const g = (ev.target as Element).closest<SVGGElement>("[data-key],[data-head]");
      return g ? (g.dataset.key ?? g.dataset.head ?? null) : null;
    };
    ui.svg.addEventListener("click", (ev) => {
      // The card would cover what the click opens or selects: away until the pointer moves.
      this.holdTooltip(ev);
      const t = (ev.target as Element).closest<SVGGElement>("[data-toggle]");
      if (t) {
        ev.stopPropagation();
        this.toggle(t.dataset.toggle!);
        return;
      }
      const key = keyOf(ev);
      if (key) this.clickItem(key);
      else this.select(null);
    });
    ui.svg.addEventListener("dblclick", (ev) => {
      this.holdTooltip(ev);
      if ((ev.target as Element).closest("[data-toggle]")) return;
      const key = keyOf(ev);
      if (key && this.isExpandable(key)) this.toggle(key);
    });
    const hover = (ev: PointerEvent): void => {
      const key = keyOf(ev);
      const edge = key ? null : (ev.target as Element).closest<SVGGElement>("[data-edge]")?.dataset.edge;
      if (key) this.showTooltip(key, ev);
      else if (edge) this.showTooltip(edge, ev, true);
      else this.hideTooltip();
    };
    ui.svg.addEventListener("pointerover", (ev) => {
      if (!this.tipHeld(ev)) hover(ev);
    });
    ui.svg.addEventListener("pointermove", (ev) => {
      if (this.tipHeld(ev)) return;
      if (ui.tooltip.hidden) hover(ev);
      // (the keyboard's card stays beside its box: a box the pointer enters takes it over)
      else if (this.cardKey === null) this.placeTooltip(ev);
    });
    ui.svg.addEventListener("pointerleave", () => this.hideTooltip());

    // Document-level listeners go away with the viewer (VS Code mounts a new one per trace).
    ui.root.ownerDocument.addEventListener("keydown", (ev) => this.onKey(ev), { signal: this.disposer.signal });
    const resize = new ResizeObserver(() => {
      this.minimap.resized();
      // A view the page chose fits the new size (a VS Code panel settles its size after
      // the graph is drawn); one the user set stays as it is.
      if (this.autoView) this.followView();
      else this.onViewChange();
    });
    resize.observe(ui.stage);
    this.disposer.signal.addEventListener("abort", () => resize.disconnect());
  }

  private run(a: ViewerAction): void {
    // A refused or failed layout's message goes with the next thing the user does.
    if (a.type !== "find") this.notice(null);
    switch (a.type) {
      case "expand-all":
        this.expandAll();
        return;
      case "collapse-all":
        this.collapseAll();
        return;
      case "fit":
        this.fit();
        return;
      case "initial-view":
        this.initialView();
        return;
      case "depth":
        this.setDepth(a.depth);
        return;
      case "depth-step":
        if (a.step > 0) {
          // never a level less than is open (a wrapper opened by hand shows one more)
          const shown = this.depthShown();
          const next = depthFor(this.idx, shown + 1);
          if (next > shown) this.openToDepth(next);
          else this.status("Depth +: every level that opens is open");
        } else this.closeDepth(this.depthShown() - 1);
        return;
      case "export":
        void this.exportAs(a.format);
        return;
      case "find":
        this.ui.search.focus();
        if (a.selectText) this.ui.search.select();
        return;
      case "clear":
        this.clearSearch();
        this.select(null);
        this.hideTooltip();
        // what the selection said goes with it
        if (this.drawn && this.ui.root.dataset.state === "ready") this.status(this.summary());
        return;
      case "change-step":
        void this.stepChange(a.step);
        return;
    }
  }

  private onKey(ev: KeyboardEvent): void {
    const tag = (ev.target as HTMLElement | null)?.tagName;
    const press = {
      key: ev.key,
      ctrlKey: ev.ctrlKey,
      metaKey: ev.metaKey,
      altKey: ev.altKey,
      // a focused select (the overlay) takes its letters too
      inTextField: tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT",
      // a button, a table row, the banner: its own keys, not the graph's letters
      inControl: !this.onPage(ev.target),
    };
    if (ev.target === this.ui.svg) {
      const g = graphKeyAction(press);
      if (g) {
        ev.preventDefault(); // (arrows and Space would scroll the page)
        this.onGraphKey(g);
        return;
      }
    }
    const a = keyAction(press);
    if (!a) return;
    // The browser's own find and "/" quick-find give way to the graph's search.
    if (a.type === "find") ev.preventDefault();
    this.run(a);
  }

  /** Whether a key went to the graph or to the page itself (no control has the focus). */
  private onPage(target: EventTarget | null): boolean {
    if (!(target instanceof Element)) return true;
    const doc = this.ui.root.ownerDocument;
    if (target === doc.body || target === doc.documentElement) return true;
    if (target.closest("svg.ts-svg")) return true;
    // a focusable element of ours or of the host is a control; anything else is the page
    return !target.matches("a, button, input, select, textarea, summary, [tabindex], [role], [contenteditable]");
  }

  /** The graph's boxes without a mouse: the focused graph's arrows, Enter and Space. */
  private onGraphKey(a: GraphKeyAction): void {
    if (!this.drawn) return;
    const { layout } = this.drawn;
    if (a.type === "move") {
      const key = stepIn(this.readOrder(layout), this.selected, a.step);
      if (key) this.focusBox(key, a.step);
      return;
    }
    if (a.type === "zoom") {
      this.zoomStep(a.step);
      return;
    }
    const key = this.selected;
    if (!key) return;
    if (a.type === "activate") this.clickItem(key);
    else if (this.isExpandable(key) && (a.type === "toggle" || (a.type === "open") !== this.isOpen(key))) {
      this.toggledKey = key;
      this.toggle(key);
    }
  }

  /** The keys of `layout`'s boxes and frames in the order the arrows walk them. */
  private readOrder(layout: Layout): string[] {
    if (this.order?.layout !== layout) {
      const items = [
        ...layout.nodes.map((n) => ({ key: n.key, x: n.x - n.w / 2, y: n.y - n.h / 2, h: n.h })),
        ...layout.clusters.map((c) => ({ key: c.key, x: c.x, y: c.y, frame: true })),
      ];
      this.order = { layout, keys: readingOrder(items) };
    }
    return this.order.keys;
  }

  /** Whether a module, group or folded run is open now. */
  private isOpen(key: string): boolean {
    const n = Number(key.slice(1));
    if (key.startsWith("g")) return this.exp.groups.has(n);
    if (key.startsWith("s")) return this.exp.segments.has(n);
    return this.exp.modules.has(n);
  }

  /** Select a box from the keyboard (`step`: the way the arrow went): in view, its details
   * shown beside it as a hover would. */
  private focusBox(key: string, step: 1 | -1): void {
    this.cardStep = step;
    this.select(key);
    const b = boundsOf(this.drawn!.layout, key)!;
    const r = visibleRect(this.transform(), this.size());
    const head = Math.min(b.h, FRAME_HEAD); // (an opened frame: its header is what must show)
    if (b.x < r.x || b.y < r.y || b.x + Math.min(b.w, r.w) > r.x + r.w || b.y + head > r.y + r.h) {
      this.centerOn(b.x + Math.min(b.w, r.w) / 2, b.y + Math.min(b.h, r.h) / 2);
    }
    this.showTooltip(key, null, false, this.cardPoint(b).box);
    this.cardKey = key;
    // kind, name, path, shapes: two boxes of one class sound different (speech.ts)
    const title = spokenName(this.idx, this.drawn!.vg, key) ?? this.ui.tooltip.querySelector(".ts-tip-title")?.textContent ?? key;
    // (only what works: an input or output pill has no line, a leaf nothing to open)
    const enter = this.enterGoesTo(key);
    const keys = [...(enter ? [`Enter goes to its ${enter}`] : []), ...(this.isExpandable(key) ? ["Space opens or closes it"] : [])];
    this.status(keys.length ? `${title}. ${keys.join(", ")}` : title);
  }

  /** Where Enter (a click) takes a drawn box: a reference to its source box, a box with a
   * line to that line, else nowhere (as clickItem does). */
  private enterGoesTo(key: string): "source" | "line" | undefined {
    const v = this.drawn?.vg.nodes.find((n) => n.key === key);
    if (v?.kind === "ref" && v.refOf) return "source";
    return !key.startsWith("s") && this.nodeOf(key)?.site ? "line" : undefined;
  }

  /** The node a box stands for: a group's first call for a folded group. */
  private nodeOf(key: string): GraphNode | undefined {
    const id = key.startsWith("g") ? this.idx.graph.groups[Number(key.slice(1))]!.members[0]! : Number(key.slice(1));
    return this.idx.graph.nodes[id];
  }

  private isExpandable(key: string): boolean {
    if (key.startsWith("g") || key.startsWith("s")) return true;
    if (!key.startsWith("n")) return false;
    return this.idx.children[Number(key.slice(1))]!.length > 0;
  }

  private clickItem(key: string): void {
    const v = this.drawn?.vg.nodes.find((n) => n.key === key);
    if (v?.kind === "ref" && v.refOf) {
      // A reference stands for its source: go there.
      this.select(v.refOf);
      this.zoomTo(v.refOf);
      return;
    }
    this.select(key);
    if (key.startsWith("s")) {
      this.status(`${segmentRange(segmentsOf(this.idx).list[Number(key.slice(1))]!)}: open it with + to see the calls`);
      return;
    }
    const node = this.nodeOf(key);
    if (node?.site) this.host.reveal(node.site, node, this.comparison?.side(node.id));
    else if (node) this.status(`${node.name}: no source location`);
  }

  private gotoError(): void {
    const id = this.idx.graph.error?.node;
    if (id !== null && id !== undefined) void this.revealNode(id);
  }

  /** Hide the hover card where the pointer is now; it comes back once the pointer moves. */
  private holdTooltip(ev: MouseEvent): void {
    this.hideTooltip();
    this.tipHold = { x: ev.clientX, y: ev.clientY };
  }

  private tipHeld(ev: PointerEvent): boolean {
    const h = this.tipHold;
    if (!h) return false;
    if (Math.hypot(ev.clientX - h.x, ev.clientY - h.y) < TIP_MOVE_PX) return true;
    this.tipHold = null;
    return false;
  }

  private hideTooltip(): void {
    this.ui.tooltip.hidden = true;
    this.cardKey = null;
  }

  /** Where the keyboard's card of a box (layout bounds `b`) goes: beside the box (an opened
   * frame: its header), in view px, and whether the box's corner is in the window. */
  private cardPoint(b: Rect): { box: Rect; inView: boolean } {
    const t = this.transform();
    const size = this.size();
    const at = toScreen(t, { x: b.x, y: b.y });
    const box = { x: at.x, y: at.y, w: b.w * t.k, h: Math.min(b.h, FRAME_HEAD) * t.k };
    const inView = at.x + box.w >= 0 && at.y + box.h >= 0 && at.x <= size.w && at.y <= size.h;
    return { box, inView };
  }

  /**
   * The keyboard's details card after the view moved (`relaid`: after a new layout, which
   * may describe the box anew): beside its box where the box is now; hidden while the box
   * is out of the window, and for good once the view no longer draws it (E, C, a depth).
   */
  private followCard(relaid: boolean): void {
    const key = this.cardKey;
    if (!key || !this.drawn) return;
    const b = this.selected === key ? boundsOf(this.drawn.layout, key) : null;
    if (!b) {
      this.hideTooltip();
      return;
    }
    const at = this.cardPoint(b);
    if (!at.inView) {
      this.ui.tooltip.hidden = true; // (until the box is back in the window)
      return;
    }
    if (relaid) {
      this.showTooltip(key, null, false, at.box);
      this.cardKey = key;
    } else {
      this.ui.tooltip.hidden = false;
      this.placeCard(key, at.box);
    }
  }

  /** The card of box `key` beside it (`box`: in view px), off the box, off the boxes the
   * arrows go to next and, where there is room, off the table, the legend and the overview. */
  private placeCard(key: string, box: Rect): void {
    const tip = this.ui.tooltip;
    const layout = this.drawn!.layout;
    const order = this.readOrder(layout);
    const near = (step: 1 | -1): Rect | null => {
      const k = order.includes(key) ? stepIn(order, key, step) : null;
      const b = k && k !== key ? boundsOf(layout, k) : null;
      return b ? this.cardPoint(b).box : null;
    };
    const [before, after] = [near(-1), near(1)];
    const neighbours = [before, after].filter((r): r is Rect => r !== null);
    const ahead = this.cardStep > 0 ? after : before;
    const overview = this.minimap.canvas.hidden ? [] : [this.minimap.canvas];
    const panels = [...this.covered(), ...overview.map((c) => this.inSvg(c))];
    const others = this.boxesInView().filter((n) => n.key !== key);
    const at = cardSpot(box, { w: tip.offsetWidth, h: tip.offsetHeight }, this.size(), { neighbours, ahead, panels, others });
    tip.style.transform = `translate(${at.x}px, ${at.y}px)`;
  }

  /** The drawn boxes the window shows, in view px. */
  private boxesInView(): (Rect & { key: string })[] {
    const t = this.transform();
    const seen = visibleRect(t, this.size());
    return this.drawn!.layout.nodes.filter(
      (n) => n.x + n.w / 2 > seen.x && n.x - n.w / 2 < seen.x + seen.w && n.y + n.h / 2 > seen.y && n.y - n.h / 2 < seen.y + seen.h,
    ).map((n) => ({ key: n.key, ...toScreen(t, { x: n.x - n.w / 2, y: n.y - n.h / 2 }), w: n.w * t.k, h: n.h * t.k }));
  }

  /** The details of `key` by the pointer (`ev`), or beside box `beside` (the keyboard's). */
  private showTooltip(key: string, ev: { clientX: number; clientY: number } | null, edge = false, beside?: Rect): void {
    if (!this.drawn) return;
    this.cardKey = null;
    const d = edge ? describeEdge(this.idx, this.drawn.vg, key) : describe(this.idx, this.drawn.vg, key);
    if (!d) return;
    const marks = this.drawn.marks;
    // A compare view says first what changed (before → after), then what the box is.
    if (this.comparison && marks && !edge) d.rows.unshift(...this.comparison.rows(this.drawn.vg, marks, key));
    fillTooltip(this.ui.tooltip, d.title, d.rows, d.hist ? histogramChart(d.hist) : undefined);
    this.ui.tooltip.hidden = false;
    fitTooltip(this.ui.tooltip, spareOrder(d.rows));
    if (beside) this.placeCard(key, beside);
    else if (ev) this.placeTooltip(ev);
  }

  private placeTooltip(ev: { clientX: number; clientY: number }): void {
    const r = this.ui.stage.getBoundingClientRect();
    const tip = this.ui.tooltip;
    const cx = ev.clientX - r.left;
    const cy = ev.clientY - r.top;
    // Below the pointer, slid left to stay inside; above it when there is no room below.
    const x = Math.max(0, Math.min(cx + 12, r.width - tip.offsetWidth - 4));
    let y = cy + 18;
    if (y + tip.offsetHeight > r.height) y = Math.max(0, cy - tip.offsetHeight - 12);
    tip.style.transform = `translate(${x}px, ${y}px)`;
  }

  // ---- error, export, state, status ------------------------------------------------------

  /** What the trace could not undo, said where the graph is (never silently). */
  private showWarnings(): void {
    const list = this.idx.graph.warnings;
    this.ui.warnings.hidden = list.length === 0;
    this.ui.warnings.replaceChildren(
      ...list.map((w) => {
        const line = document.createElement("div");
        line.textContent = `⚠ ${w}`;
        return line;
      }),
    );
  }

  private showError(): void {
    const own = this.idx.graph.error;
    const compared = this.idx.graph.compare ? sideError(this.idx.graph.compare) : null;
    const err = compared ?? own;
    if (!err) return;
    this.ui.banner.hidden = false;
    this.ui.banner.replaceChildren();
    const b = document.createElement("strong");
    // a comparison: which side raised (QA: the banner did not say)
    b.textContent = compared ? `${compared.side} raised ${err.type}: ` : `${err.type}: `;
    const m = document.createElement("span");
    m.textContent = err.message;
    const hint = document.createElement("em");
    const shows = own !== null && own.node !== null; // (a's error alone: no node of it to show)
    hint.textContent = shows ? "  — the graph stops at the failing call; click to show it" : "";
    this.ui.banner.setAttribute("role", shows ? "button" : "status");
    this.ui.banner.tabIndex = shows ? 0 : -1;
    this.ui.banner.append(b, m, hint);
  }

  /**
   * The input the graph was traced with and where it came from (text), and a Change button
   * that calls `onChange` (the host asks for another input). No text: the bar stays hidden.
   */
  setInput(text: string | undefined, onChange?: () => void): void {
    this.ui.inputBar.hidden = !text;
    this.ui.input.textContent = text ?? "";
    this.ui.input.title = text ?? "";
    this.ui.changeInput.hidden = !onChange;
    this.ui.changeInput.onclick = onChange ? () => onChange() : null;
  }

  /**
   * Mark the graph as out of date (`message`: why the trace that would replace it failed),
   * or clear the mark (null). A new graph comes in a new viewer, without it.
   */
  setStale(message: string | null): void {
    this.ui.stale.hidden = message === null;
    const why = message?.replace(/\.+$/, ""); // (a message may end with its own full stop)
    this.ui.stale.textContent = why === undefined ? "" : `Out of date: ${why}. This graph is from the last trace that worked.`;
  }

  private async exportAs(kind: "svg" | "png"): Promise<void> {
    if (!this.drawn || this.exporting) return;
    const { layout, vg, labels, marks } = this.drawn;
    const input = { idx: this.idx, vg, layout, labels, measure: this.measure, arrowId: this.ui.scene.dataset.arrow!, marks };
    const svg = () => exportSvg(input, this.ui.defs, this.ui.root, this.css("--ts-bg", "#ffffff"), this.scene.heatMap(), this.hidingError(vg));
    const base = (this.idx.graph.model.name || "graph").replace(/[^\w.-]+/g, "_");
    if (kind === "svg") {
      await this.whileExporting("SVG", "", async () => {
        this.host.saveFile(`${base}.svg`, "image/svg+xml", new Blob([await svg()], { type: "image/svg+xml" }));
      });
      return;
    }
    const [w, h] = exportSize(layout);
    const scale = pngScale(w, h);
    if (scale === null) {
      // A picture shrunk to fit the canvas has unreadable text: none, and why.
      const text =
        `PNG not written: this view is too big for a PNG at full size (${w.toLocaleString("en-US")}×${h.toLocaleString("en-US")} px; ` +
        `a browser canvas holds ${CANVAS_MAX_SIDE.toLocaleString("en-US")} px a side, ${Math.round(CANVAS_MAX_AREA / 1e6)} million in all). ` +
        "Export SVG instead (it has no size limit), or close some modules.";
      this.notice(text);
      this.status(text);
      return;
    }
    await this.whileExporting("PNG", " Export SVG instead: it has no size limit.", async () => {
      // (made in short tasks: the status line is painted meanwhile)
      const png = await svgToPng(await svg(), w, h, scale);
      this.host.saveFile(`${base}.png`, "image/png", png);
    });
  }

  /** An export's `make` with the status line saying so meanwhile (both are made over many
   * tasks); another export's click does nothing until it is done. A failure is said over the
   * graph and in the status line, with `advice`. */
  private async whileExporting(what: "SVG" | "PNG", advice: string, make: () => Promise<void>): Promise<void> {
    const busy = `Exporting ${what}…`;
    this.exporting = true;
    this.status(busy);
    try {
      await make();
      if (this.ui.status.textContent === busy) this.status(this.summary());
    } catch (e) {
      const text = `${what} export failed: ${e instanceof Error ? e.message : String(e)}.${advice}`;
      this.notice(text);
      this.status(text);
    } finally {
      this.exporting = false;
    }
  }

  private saveState(): void {
    const t = zoomTransform(this.ui.svg);
    this.host.saveState({
      graph: this.fingerprint(),
      expanded: [...this.exp.modules],
      groups: [...this.exp.groups],
      segments: [...this.exp.segments],
      transform: { x: t.x, y: t.y, k: t.k },
    });
  }

  private fingerprint(): string {
    const g = this.idx.graph;
    // Same model and same structure: a re-trace keeps the view (node ids still match).
    return `${g.model.qualname}|${g.nodes.length}|${g.edges.length}`;
  }

  status(text: string): void {
    this.ui.status.textContent = text;
    // The line wraps to a few lines at most; the whole text is its title too.
    this.ui.status.title = text;
  }

  private summary(): string {
    const g = this.idx.graph;
    // the name cut as the toolbar cuts it, shorter: a long one pushed the counts out of the
    // line's three lines on a narrow page
    const parts = [
      clip(g.model.name, STATUS_NAME_MAX),
      `${formatCount(g.model.params)} params`,
      `${g.stats.ops} ops`,
      `${g.stats.modules} module calls`,
    ];
    const collectives = g.nodes.filter(isCollective).length;
    if (collectives) parts.push(`${collectives} collective${collectives === 1 ? "" : "s"}`);
    if (this.drawn) parts.push(`${this.drawn.vg.nodes.length} drawn`, `layout ${Math.round(this.lastLayoutMs)} ms`);
    return parts.filter(Boolean).join(" · ");
  }

  private css(name: string, fallback: string): string {
    return getComputedStyle(this.ui.root).getPropertyValue(name).trim() || fallback;
  }

  private colors(): { node: string; cluster: string } {
    return { node: this.css("--ts-mini-node", "#888"), cluster: this.css("--ts-border", "#aaa") };
  }

  /** The SVG follows a theme change through CSS; the overview's canvas is painted again. */
  private watchTheme(): void {
    const repaint = (): void => {
      if (!this.drawn) return;
      this.minimap.setLayout(this.drawn.layout, this.colors());
      this.onViewChange();
    };
    // VS Code sets the theme's variables on <html> and its kind as a class on <body>.
    const doc = this.ui.root.ownerDocument;
    const mo = new MutationObserver(repaint);
    mo.observe(doc.documentElement, { attributes: true, attributeFilter: ["style", "class"] });
    if (doc.body) mo.observe(doc.body, { attributes: true, attributeFilter: ["style", "class"] });
    const dark = doc.defaultView?.matchMedia?.("(prefers-color-scheme: dark)");
    dark?.addEventListener("change", repaint, { signal: this.disposer.signal });
    this.disposer.signal.addEventListener("abort", () => mo.disconnect());
  }
}
