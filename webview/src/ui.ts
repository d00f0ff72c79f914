// The page chrome: toolbar, input bar, banner, warnings, stage (svg), tooltip, busy note,
// status line.
// Built with DOM calls and textContent only.

export interface Ui {
  root: HTMLElement;
  toolbar: HTMLElement;
  /** The input the graph was traced with, and a button to change it (hidden until the host says). */
  inputBar: HTMLElement;
  input: HTMLElement;
  changeInput: HTMLButtonElement;
  stale: HTMLDivElement;
  banner: HTMLElement;
  /** What the trace could not undo (hidden when nothing). */
  warnings: HTMLElement;
  stage: HTMLElement;
  svg: SVGSVGElement;
  defs: SVGDefsElement;
  viewport: SVGGElement;
  scene: SVGGElement;
  tooltip: HTMLElement;
  busy: HTMLElement;
  notice: HTMLElement;
  status: HTMLElement;
  search: HTMLInputElement;
  searchCount: HTMLElement;
  depth: HTMLElement;
  title: HTMLElement;
}

const SVG = "http://www.w3.org/2000/svg";

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, parent?: HTMLElement): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = cls;
  parent?.appendChild(e);
  return e;
}

export function button(parent: HTMLElement, label: string, action: string, title: string): HTMLButtonElement {
  const b = el("button", "ts-btn", parent);
  b.type = "button";
  b.textContent = label;
  b.dataset.action = action;
  b.title = title;
  return b;
}

let instance = 0;

export function buildUi(root: HTMLElement): Ui {
  root.classList.add("ts-root");
  root.dataset.state = "busy";
  root.replaceChildren();
  const toolbar = el("div", "ts-toolbar", root);
  const title = el("span", "ts-model", toolbar);
  button(toolbar, "Expand all", "expand-all", "Expand every module (E)");
  button(toolbar, "Collapse all", "collapse-all", "Collapse to the top-level modules (C)");
  const depthBox = el("span", "ts-depth", toolbar);
  // (a group named "Depth": the value between the buttons is read as the depth shown)
  depthBox.setAttribute("role", "group");
  depthBox.setAttribute("aria-label", "Depth");
  const depthLabel = el("span", "ts-depth-label", depthBox);
  depthLabel.textContent = "Depth";
  depthLabel.setAttribute("aria-hidden", "true");
  button(depthBox, "−", "depth-down", "Show one level less").setAttribute("aria-label", "Show one level less");
  const depth = el("span", "ts-depth-value", depthBox);
  depth.dataset.role = "depth";
  button(depthBox, "+", "depth-up", "Show one level more (or press 1–9)").setAttribute("aria-label", "Show one level more");
  button(toolbar, "Fit", "fit", "Fit the graph to the window (F)");
  const searchBox = el("span", "ts-search", toolbar);
  const search = el("input", "ts-search-input", searchBox);
  search.type = "search";
  search.placeholder = "Search name, path, op  (/)";
  search.setAttribute("aria-label", "search");
  search.dataset.role = "search";
  const searchCount = el("span", "ts-search-count", searchBox);
  searchCount.dataset.role = "search-count";
  // "12 found", "0 found", "1 / 96" are said as they change (the status line names the match)
  searchCount.setAttribute("aria-live", "polite");
  el("span", "ts-spacer", toolbar);
  button(toolbar, "SVG", "export-svg", "Export the current view as SVG");
  button(toolbar, "PNG", "export-png", "Export the current view as PNG");

  const inputBar = el("div", "ts-inputbar", root);
  inputBar.hidden = true;
  const inputLabel = el("span", "ts-input-label", inputBar);
  inputLabel.textContent = "Input";
  const input = el("span", "ts-input-text", inputBar);
  input.dataset.role = "input";
  const changeInput = button(inputBar, "Change…", "change-input", "Trace again with another input");

  // The graph is older than its source: the last re-trace failed (the host says why).
  const stale = el("div", "ts-stale", root);
  stale.hidden = true;
  stale.dataset.role = "stale";
  stale.setAttribute("role", "status");
  const banner = el("div", "ts-banner", root);
  banner.hidden = true;
  banner.setAttribute("role", "button");
  banner.tabIndex = 0;
  const warnings = el("div", "ts-warnings", root);
  warnings.hidden = true;
  warnings.dataset.role = "warnings";
  warnings.setAttribute("role", "status");
  const stage = el("div", "ts-stage", root);
  const svg = document.createElementNS(SVG, "svg");
  svg.classList.add("ts-svg");
  // reachable without a mouse: Tab to the graph, then its arrows, Enter and Space (viewer.ts)
  svg.setAttribute("tabindex", "0");
  svg.setAttribute("role", "application");
  svg.setAttribute(
    "aria-label",
    "graph of the forward pass: arrow keys move between its boxes, Enter goes to a box's line, Space opens or closes it, ] and [ zoom in and out",
  );
  stage.appendChild(svg);
  const defs = document.createElementNS(SVG, "defs");
  svg.appendChild(defs);
  const arrowId = `ts-arrow-${++instance}`;
  const marker = document.createElementNS(SVG, "marker");
  for (const [k, v] of Object.entries({
    id: arrowId,
    viewBox: "0 0 10 10",
    refX: "10",
    refY: "5",
    markerWidth: "7",
    markerHeight: "7",
    markerUnits: "userSpaceOnUse",
    orient: "auto",
  }))
    marker.setAttribute(k, v);
  const tip = document.createElementNS(SVG, "path");
  tip.setAttribute("d", "M0,0L10,5L0,10z");
  tip.setAttribute("class", "ts-arrow");
  marker.appendChild(tip);
  defs.appendChild(marker);
  const viewport = document.createElementNS(SVG, "g");
  viewport.classList.add("ts-viewport");
  svg.appendChild(viewport);
  const scene = document.createElementNS(SVG, "g");
  scene.classList.add("ts-scene");
  scene.dataset.arrow = arrowId;
  viewport.appendChild(scene);
  const tooltip = el("div", "ts-tooltip", stage);
  tooltip.hidden = true;
  // The details card of the box the arrows selected is the graph's description.
  tooltip.id = `ts-card-${instance}`;
  svg.setAttribute("aria-describedby", tooltip.id);
  const busy = el("div", "ts-busy", stage);
  busy.hidden = true;
  // A refused or failed layout says so over the graph, not only in the status line.
  const notice = el("div", "ts-notice", stage);
  notice.hidden = true;
  notice.dataset.role = "notice";
  notice.setAttribute("role", "alert");
  const status = el("div", "ts-status", root);
  status.dataset.role = "status";
  status.setAttribute("aria-live", "polite"); // (what the keyboard selected is said here)
  return {
    root,
    toolbar,
    inputBar,
    input,
    changeInput,
    stale,
    banner,
    warnings,
    stage,
    svg,
    defs,
    viewport,
    scene,
    tooltip,
    busy,
    notice,
    status,
    search,
    searchCount,
    depth,
    title,
  };
}

/** A full-page message for files that can't be shown (bad format, wrong version). */
export function showFatal(root: HTMLElement, heading: string, detail: string): void {
  root.classList.add("ts-root");
  root.dataset.state = "error";
  root.replaceChildren();
  const box = el("div", "ts-fatal", root);
  box.setAttribute("role", "alert");
  const h = el("h2", "", box);
  h.textContent = heading;
  const p = el("p", "", box);
  p.textContent = detail;
}

/** Longest text of one line of the hover card: the full name of anything drawn cut short,
 * but not a megabyte of it. */
export const TIP_TEXT_MAX = 1000;

function tipText(s: string): string {
  return s.length <= TIP_TEXT_MAX ? s : `${s.slice(0, TIP_TEXT_MAX)}… (${(s.length - TIP_TEXT_MAX).toLocaleString("en-US")} more characters)`;
}

export function fillTooltip(tip: HTMLElement, title: string, rows: [string, string][], chart?: HTMLElement): void {
  tip.replaceChildren();
  tip.classList.remove("ts-tip-2col");
  const h = el("div", "ts-tip-title", tip);
  h.textContent = tipText(title);
  // (the rows and the chart: what flows into two columns in a short window)
  const body = el("div", "ts-tip-body", tip);
  const table = el("table", "", body);
  for (const [k, v] of rows) {
    const tr = el("tr", "", table as unknown as HTMLElement);
    const th = el("th", "", tr);
    th.textContent = tipText(k);
    const td = el("td", "", tr);
    td.textContent = tipText(v);
  }
  if (chart) body.appendChild(chart);
}

/** A stage at least this wide (px) lays a card too tall for it out in two columns. */
const TWO_COLUMNS_MIN_PX = 640;

/** "… 3 more rows and the histogram: a taller window shows them". */
function moreText(rows: number, hist: boolean): string {
  const what = [rows ? `${rows} more row${rows === 1 ? "" : "s"}` : "", hist ? "the histogram" : ""].filter(Boolean).join(" and ");
  return `… ${what}: a taller window shows ${rows + (hist ? 1 : 0) > 1 ? "them" : "it"}`;
}

/**
 * A shown card taller than its max-height (a short window) made to fit, nothing cut off
 * unsaid: on a wide stage its rows go into two columns; then the histogram and the rows in
 * `spare` order (details.ts spareOrder) give way, and a last line says how many did.
 */
export function fitTooltip(tip: HTMLElement, spare: number[]): void {
  const tooTall = (): boolean => tip.scrollHeight > tip.clientHeight + 1;
  if (!tooTall()) return;
  if ((tip.parentElement?.clientWidth ?? 0) >= TWO_COLUMNS_MIN_PX) {
    tip.classList.add("ts-tip-2col");
    if (!tooTall()) return;
  }
  const chart = tip.querySelector<HTMLElement>(".ts-hist");
  if (!chart && spare.length === 0) return; // (nothing it can do without)
  const trs = tip.querySelectorAll("tr");
  const more = el("div", "ts-tip-more", tip);
  more.dataset.role = "tip-more";
  let left = 0;
  chart?.remove();
  more.textContent = moreText(0, !!chart);
  for (const i of spare) {
    if (!tooTall()) return;
    trs[i]!.hidden = true;
    more.textContent = moreText(++left, !!chart);
  }
}
