// The compare view on the page: statuses on drawn boxes, frames and edges (data-status and a
// class the CSS colours), the badge of changes a closed box hides, the toolbar's counts and
// next / previous change buttons. The decisions are compare.ts's; this file only draws them.
import type { G } from "./draw";
import type { GraphIndex } from "./model";
import type { Ui } from "./ui";
import type { VisibleGraph } from "./visible";
import {
  changeText,
  compareRows,
  countStatus,
  stepChange,
  viewMarks,
  type CompareData,
  type DrawnEdgeStatus,
  type NodeStatus,
  type ViewMarks,
} from "./compare";

const EDGE_MARKED: readonly DrawnEdgeStatus[] = ["added", "removed", "changed"];

/** data-status and the status class on a drawn box or frame. */
export function markItem(el: SVGGElement, marks: ViewMarks | undefined, key: string): void {
  const st = marks?.status.get(key);
  if (!st) return;
  el.dataset.status = st;
  el.classList.add(`ts-st-${st}`);
}

/** The count of changes a closed box hides, as a pill on its top-right corner. */
export function drawBadge(g: G, marks: ViewMarks | undefined, key: string, w: number): void {
  const n = marks?.hidden.get(key);
  if (!n) return;
  const text = String(n);
  const bw = 10 + 6.5 * text.length;
  const b = g.append("g").attr("class", "ts-badge").attr("data-role", "change-badge").attr("data-count", text);
  b.attr("transform", `translate(${w - bw + 6},-8)`);
  b.append("rect").attr("width", bw).attr("height", 16).attr("rx", 8);
  b.append("text")
    .attr("x", bw / 2)
    .attr("y", 11.5)
    .attr("text-anchor", "middle")
    .text(text);
}

/** data-status, the status class and an arrowhead in the status colour on a drawn edge. */
export function markEdge(el: SVGGElement, marks: ViewMarks | undefined, key: string, arrowId: string): void {
  const st = marks?.edges.get(key);
  if (!st) return;
  el.dataset.status = st;
  el.classList.add(`ts-st-${st}`);
  if (st !== "same") el.querySelector("path")?.setAttribute("marker-end", `url(#${arrowId}-${st})`);
}

/** Arrowheads in each status colour, beside the plain one (same shape, another class). */
function addArrowMarkers(defs: SVGDefsElement, arrowId: string): void {
  const plain = defs.querySelector(`#${CSS.escape(arrowId)}`);
  if (!plain) return;
  for (const st of EDGE_MARKED) {
    const m = plain.cloneNode(true) as SVGMarkerElement;
    m.id = `${arrowId}-${st}`;
    m.querySelector("path")?.setAttribute("class", `ts-arrow ts-arrow-${st}`);
    defs.appendChild(m);
  }
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, parent: HTMLElement): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = cls;
  parent.appendChild(e);
  return e;
}

const COUNT_SIGN: Record<Exclude<NodeStatus, "same">, string> = { added: "+", removed: "−", changed: "~" };

/** A compare page's own state and controls: built once per viewer when the graph has `compare`. */
export class CompareControls {
  /** Position in `changes` of the change shown last by next / previous; null before any. */
  private pos: number | null = null;
  private readonly where: HTMLElement;

  constructor(
    readonly data: CompareData,
    private readonly idx: GraphIndex,
    ui: Ui,
  ) {
    ui.root.classList.add("ts-compare-view");
    addArrowMarkers(ui.defs, ui.scene.dataset.arrow!);
    const bar = document.createElement("span");
    bar.className = "ts-compare";
    bar.dataset.role = "compare";
    // After the model's name: what is compared with what comes first.
    ui.title.after(bar);
    const counts = countStatus(data);
    const legend = el("span", "ts-compare-counts", bar);
    legend.dataset.role = "compare-counts";
    legend.title = `${sideText(data, "a")}  →  ${sideText(data, "b")}\n${counts.same} node${counts.same === 1 ? "" : "s"} the same`;
    for (const st of ["added", "removed", "changed"] as const) {
      const c = el("span", `ts-count ts-count-${st}`, legend);
      c.dataset.status = st;
      c.textContent = `${COUNT_SIGN[st]}${counts[st]} ${st}`;
      // (a side that raised stops there: the other side's nodes after it are counted here)
      const early = st === "removed" ? data.b.error : st === "added" ? data.a.error : null;
      if (early) {
        c.textContent += " / not reached";
        c.title = `${sideText(data, st === "removed" ? "b" : "a")} raised ${early.type}: what came after the failing call on the other side counts as ${st}`;
      }
    }
    const prev = el("button", "ts-btn", bar);
    prev.type = "button";
    prev.dataset.action = "prev-change";
    prev.textContent = "◀ Prev change";
    prev.title = "Open and centre the previous change (P)";
    this.where = el("span", "ts-change-pos", bar);
    this.where.dataset.role = "change-pos";
    this.where.textContent = changesText(data.changes.length);
    const next = el("button", "ts-btn", bar);
    next.type = "button";
    next.dataset.action = "next-change";
    next.textContent = "Next change ▶";
    next.title = "Open and centre the next change (N)";
    prev.disabled = next.disabled = data.changes.length === 0;
  }

  marks(vg: VisibleGraph): ViewMarks {
    return viewMarks(this.data, vg);
  }

  rows(vg: VisibleGraph, marks: ViewMarks, key: string): [string, string][] {
    return compareRows(this.data, vg, marks, key);
  }

  /** The node to show for one step from the current change (or the selected node id). */
  step(selected: number | null, step: 1 | -1): { id: number; text: string } | null {
    const changes = this.data.changes;
    // The change shown last, unless the user selected something else since.
    const current = this.pos !== null && (selected === null || selected === changes[this.pos]) ? changes[this.pos]! : selected;
    const pos = stepChange(changes, current, step);
    if (pos === null) return null;
    this.pos = pos;
    this.where.textContent = `${pos + 1} / ${changes.length}`;
    return { id: changes[pos]!, text: changeText(this.data, this.idx, pos) };
  }

  /** The version a node's `site` belongs to: "a" for the ghosts of removed nodes. */
  side(id: number): "a" | "b" {
    return this.data.side[id] ?? "b";
  }
}

function sideText(c: CompareData, which: "a" | "b"): string {
  const s = c[which];
  const name = s.source || (which === "a" ? "before" : "after");
  return `${which}: ${name}`;
}

function changesText(n: number): string {
  return n === 0 ? "no changes" : n === 1 ? "1 change" : `${n} changes`;
}
