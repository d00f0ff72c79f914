// The values and costs controls: the overlay selector, its legend, the table of the
// heaviest nodes, the NaN banner with "Find NaN origin", and the note that a paused
// frame's numbers are the live model's. DOM built with createElement and textContent only;
// the measures themselves are pure (measures.ts).
import type { GraphNode } from "./format";
import type { GraphIndex } from "./model";
import type { Ui } from "./ui";
import type { VisibleGraph } from "./visible";
import { available, MEASURE_ORDER, MEASURES, nodeValues, onlyZeros, overlay, topRows, type Measure, type Row, type Scale } from "./measures";
import { formatShare } from "./units";

export interface ValuesHooks {
  /** Show node `id` (expand what hides it, centre, select) and open its line in the host. */
  reveal(id: number): void;
  /** Colour the drawn boxes: key → 0..1. */
  setHeat(heat: ReadonlyMap<string, number>): void;
  /** The table or the legend showed, went, or changed size: what they cover of the graph. */
  covered(): void;
}

type SortKey = "value" | "name" | "where" | "share";

const TABLE_ROWS = 20;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, parent?: HTMLElement): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  parent?.appendChild(e);
  return e;
}

export class ValuesPanel {
  readonly select: HTMLSelectElement;
  readonly legend: HTMLElement;
  readonly table: HTMLElement;
  readonly nanBanner: HTMLElement;
  measure: Measure = "none";
  private values: Float64Array | null = null;
  private rows: Row[] = [];
  /** The ranked nodes all have 0 (so the table has no rows). */
  private zeros = false;
  private sort: { key: SortKey; desc: boolean } = { key: "value", desc: true };
  private vg: VisibleGraph | null = null;
  /** The table shows only its caption (it covers part of the graph). */
  private folded = false;

  constructor(
    ui: Ui,
    private readonly idx: GraphIndex,
    private readonly hooks: ValuesHooks,
    live: boolean,
  ) {
    const graph = idx.graph;
    const box = el("span", "ts-overlay");
    const label = el("label", "ts-overlay-label", box);
    label.textContent = "Colour by";
    this.select = el("select", "ts-overlay-select", box);
    this.select.dataset.role = "overlay";
    this.select.setAttribute("aria-label", "colour nodes by");
    for (const m of MEASURE_ORDER) {
      const o = el("option", "");
      o.value = m;
      o.textContent = MEASURES[m].label;
      if (!available(graph, m)) {
        o.disabled = true;
        o.title = "not recorded in this trace";
      }
      this.select.appendChild(o);
    }
    label.htmlFor = this.select.id = `ts-overlay-${Math.random().toString(36).slice(2, 8)}`;
    this.select.addEventListener("change", () => this.choose(this.select.value as Measure));
    if (live && (graph.values?.stats || graph.values?.costs)) {
      const note = el("span", "ts-live-note", box);
      note.dataset.role = "live-note";
      note.textContent = "live values of the paused call";
      note.title = "The live model's real numbers: traced in the paused frame with the real inputs of the paused call";
    }
    ui.toolbar.insertBefore(box, ui.toolbar.querySelector(".ts-spacer"));

    this.nanBanner = el("div", "ts-nan-banner");
    this.nanBanner.dataset.role = "nan-banner";
    this.nanBanner.hidden = true;
    ui.banner.after(this.nanBanner);
    const origin = graph.nan_origin ?? null;
    if (origin !== null) this.showNanBanner(origin, live);

    this.legend = el("div", "ts-legend", ui.stage);
    this.legend.dataset.role = "legend";
    this.legend.hidden = true;
    this.table = el("div", "ts-table", ui.stage);
    this.table.dataset.role = "table";
    this.table.hidden = true;
    this.table.addEventListener("click", (ev) => this.onTableAction(ev.target as Element));
    // Sort heads take the focus (tabindex): Enter or Space does what a click does. (A row's
    // button is a real one: its Enter and Space are a click already.)
    this.table.addEventListener("keydown", (ev) => {
      const t = ev.target as Element;
      if ((ev.key !== "Enter" && ev.key !== " ") || !t.matches("th[data-sort]")) return;
      ev.preventDefault(); // (Space would scroll the table)
      this.onTableAction(t);
    });
  }

  /** The drawn graph changed: colour what is drawn now. */
  update(vg: VisibleGraph): void {
    this.vg = vg;
    this.paint();
  }

  choose(m: Measure): void {
    this.measure = available(this.idx.graph, m) ? m : "none";
    this.select.value = this.measure;
    this.values = this.measure === "none" ? null : nodeValues(this.idx, this.measure);
    this.rows = this.values ? topRows(this.idx, this.measure, TABLE_ROWS, this.values) : [];
    this.zeros = !!this.values && this.rows.length === 0 && onlyZeros(this.idx, this.measure, this.values);
    this.sort = { key: "value", desc: true };
    this.paint();
    this.renderTable();
    this.hooks.covered();
  }

  private paint(): void {
    if (!this.vg || !this.values) {
      this.hooks.setHeat(new Map());
      this.legend.hidden = true;
      return;
    }
    const o = overlay(this.idx, this.vg, this.measure, this.values);
    this.hooks.setHeat(o.heat);
    this.renderLegend(o.scale, o.zeros);
  }

  /** `zeros`: every drawn box with a value has 0 (no scale to show). */
  private renderLegend(scale: Scale | null, zeros: boolean): void {
    const info = MEASURES[this.measure];
    this.legend.replaceChildren();
    this.legend.hidden = false;
    const title = el("div", "ts-legend-title", this.legend);
    title.textContent = info.label + (scale?.log ? " · log scale" : "");
    if (!scale) {
      const none = el("div", "ts-legend-none", this.legend);
      none.textContent = zeros ? "every drawn node has 0" : "nothing drawn has a value";
      return;
    }
    const bar = el("div", "ts-legend-bar", this.legend);
    const ends = el("div", "ts-legend-ends", this.legend);
    if (scale.floor) {
      // (0 has the cold end to itself: the smallest count starts the warm part, as boxes show)
      const at = `${(scale.floor * 100).toFixed(1)}%`;
      bar.classList.add("ts-legend-floor");
      ends.classList.add("ts-legend-floor");
      bar.style.setProperty("--ts-floor", at);
      ends.style.setProperty("--ts-floor", at);
      const zero = el("span", "ts-legend-zero", ends);
      zero.dataset.role = "legend-zero";
      zero.textContent = info.format(0);
    }
    const lo = el("span", "", ends);
    lo.dataset.role = "legend-lo";
    lo.textContent = info.format(scale.lo);
    const hi = el("span", "", ends);
    hi.dataset.role = "legend-hi";
    hi.textContent = info.format(scale.hi);
  }

  private renderTable(): void {
    this.table.replaceChildren();
    if (this.measure === "none") {
      this.table.hidden = true;
      return;
    }
    this.table.hidden = false;
    const info = MEASURES[this.measure];
    const head = el("div", "ts-table-head", this.table);
    const caption = el("span", "", head);
    // (no rows: no count, "Heaviest 0 by FLOPs" read as a bug)
    caption.textContent = this.rows.length ? `Heaviest ${this.rows.length} by ${info.label}` : `Heaviest by ${info.label}`;
    const fold = el("button", "ts-table-fold", head);
    fold.type = "button";
    fold.dataset.action = "table-fold";
    fold.textContent = this.folded ? "show" : "hide";
    fold.title = this.folded ? "Show the table" : "Hide the table's rows";
    if (this.folded) return;
    if (this.rows.length === 0) {
      const none = el("div", "ts-table-none", this.table);
      none.textContent = this.zeros ? "every node has 0" : "no node has a value";
      return;
    }
    const t = el("table", "", this.table);
    const tr = el("tr", "", el("thead", "", t));
    const cols: [SortKey | null, string][] = [
      [null, "#"],
      ["name", "node"],
      ["where", "in"],
      ["value", info.label],
      // a share of the total only where values add up (FLOPs, time, bytes, parameters)
      ...(info.additive ? ([["share", "share"]] as [SortKey, string][]) : []),
    ];
    for (const [key, text] of cols) {
      const th = el("th", "", tr);
      th.textContent = text;
      if (key) {
        th.dataset.sort = key;
        th.title = "sort";
        th.tabIndex = 0;
        if (this.sort.key === key) {
          th.dataset.dir = this.sort.desc ? "desc" : "asc";
          th.setAttribute("aria-sort", this.sort.desc ? "descending" : "ascending");
        }
      }
    }
    const body = el("tbody", "", t);
    const rank = new Map(this.rows.map((r, i) => [r.id, i + 1]));
    for (const r of this.sorted()) {
      const row = el("tr", "", body);
      row.dataset.id = String(r.id);
      row.title = "show it in the graph and open its line";
      const share = info.additive && r.share !== null ? formatShare(r.share) : "";
      const cells = [String(rank.get(r.id)), r.name, r.where, info.format(r.value)];
      if (info.additive) cells.push(share);
      for (const [i, text] of cells.entries()) {
        const td = el("td", "", row);
        if (i !== 1) td.textContent = text;
        else td.appendChild(rowButton(r, info.label, info.format(r.value), share));
      }
    }
  }

  private sorted(): Row[] {
    const { key, desc } = this.sort;
    const sign = desc ? -1 : 1;
    const by = (r: Row): number | string => (key === "share" ? (r.share ?? 0) : r[key]);
    return [...this.rows].sort((a, b) => {
      const x = by(a);
      const y = by(b);
      const c = typeof x === "string" ? x.localeCompare(String(y)) : x - (y as number);
      return sign * c || a.id - b.id;
    });
  }

  /** A click, Enter or Space on the table: fold it, sort by a column, or show a row's node.
   * The table is drawn again for the first two: the focus goes to the new control. */
  private onTableAction(target: Element): void {
    if (target.closest("[data-action=table-fold]")) {
      this.folded = !this.folded;
      this.renderTable();
      this.table.querySelector<HTMLElement>("[data-action=table-fold]")?.focus();
      this.hooks.covered();
      return;
    }
    const th = target.closest<HTMLElement>("th[data-sort]");
    if (th) {
      const key = th.dataset.sort as SortKey;
      this.sort = { key, desc: this.sort.key === key ? !this.sort.desc : key !== "name" && key !== "where" };
      this.renderTable();
      this.table.querySelector<HTMLElement>(`th[data-sort="${key}"]`)?.focus();
      return;
    }
    const row = target.closest<HTMLElement>("tr[data-id]");
    if (row) this.hooks.reveal(Number(row.dataset.id));
  }

  private showNanBanner(origin: number, live: boolean): void {
    const node = this.idx.graph.nodes[origin]!;
    const b = this.nanBanner;
    b.hidden = false;
    const text = el("span", "ts-nan-text", b);
    text.textContent = nanBannerText(node, live);
    const button = el("button", "ts-btn", b);
    button.type = "button";
    button.dataset.action = "nan-origin";
    button.textContent = "Find NaN origin";
    button.title = "Show the op and open its line";
    button.addEventListener("click", () => this.hooks.reveal(origin));
  }
}

/** A row's one control, on its node's name (the whole row is a click target for the mouse):
 * a screen reader hears a button, what the row is and what pressing it does; Tab reaches
 * it, Enter and Space press it. */
function rowButton(r: Row, measure: string, value: string, share: string): HTMLButtonElement {
  const b = el("button", "ts-table-show");
  b.type = "button";
  b.dataset.action = "show-node";
  b.textContent = r.name;
  const what = `${r.name}${r.where ? ` in ${r.where}` : ""}, ${measure} ${value}${share ? `, ${share} of the total` : ""}`;
  b.setAttribute("aria-label", `${what}: show it in the graph and open its line`);
  return b;
}

/** The NaN banner's sentence: the op that made NaN/Inf from finite inputs, or the tensor
 * (a parameter used directly) that holds them. */
export function nanBannerText(node: Pick<GraphNode, "kind" | "name" | "target" | "site">, live: boolean): string {
  const where = node.site ? ` (${node.site.file.split(/[\\/]/).pop()}:${node.site.line})` : "";
  const head = `Non-finite values (NaN/Inf) appeared${live ? " in the live model" : ""}: `;
  if (node.kind === "constant") return `${head}they come from ${node.target || node.name}, which holds them${where}.`;
  return `${head}the first op that made them from finite values is ${node.name}${where}.`;
}
