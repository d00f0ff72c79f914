// Box sizes in px, computed before layout so Graphviz reserves the right space.
// `measure` is canvas-backed in the browser and an estimate in tests.
import type { VKind } from "./visible";
import type { NodeKind } from "./format";

export interface Font {
  size: number;
  weight: number;
  mono: boolean;
}

export type Measure = (text: string, font: Font) => number;

export const FONT_TITLE: Font = { size: 12, weight: 600, mono: false };
export const FONT_OP: Font = { size: 12, weight: 400, mono: false };
export const FONT_SUB: Font = { size: 10, weight: 400, mono: false };

export const SANS = "system-ui, -apple-system, 'Segoe UI', sans-serif";
export const MONO = "ui-monospace, Menlo, Consolas, monospace";
export const fontCss = (f: Font): string => `${f.weight} ${f.size}px ${f.mono ? MONO : SANS}`;

/** Upper-bound estimate (monospace width), so estimated boxes never clip their text. */
export const estimateWidth: Measure = (text, f) => [...text].length * f.size * 0.62;

export const TOGGLE = 14;
/** Offset of the frames stacked behind a ×N box (top-right). */
export const STACK = 6;
const PAD = 10;

/** Where an open module's title starts in its frame's header (after the − toggle). */
export const HEADER_TITLE_X = 6 + TOGGLE + 6;
/** The gap between the title and the path after it. */
export const HEADER_GAP = 8;

/** The width an open module's frame needs for its header: toggle, title, path, margins. */
export function headerWidth(title: string, sub: string, measure: Measure): number {
  const tw = measure(title, FONT_TITLE);
  return Math.ceil(HEADER_TITLE_X + tw + (sub ? HEADER_GAP + measure(sub, FONT_SUB) : 0) + PAD);
}

export interface Size {
  w: number;
  h: number;
}

export function boxSize(kind: VKind, nodeKind: NodeKind | "group" | "ref" | "segment", title: string, sub: string, measure: Measure): Size {
  if (kind === "module" || kind === "group" || kind === "segment") {
    const tw = measure(title, FONT_TITLE);
    const sw = sub ? measure(sub, FONT_SUB) : 0;
    // A ×N box reserves room for the stacked frames drawn behind it.
    const stack = kind === "group" ? STACK : 0;
    return { w: Math.ceil(Math.max(tw, sw) + PAD * 2 + TOGGLE + 6) + stack, h: (sub ? 40 : 30) + stack };
  }
  if (kind === "ref") return { w: Math.ceil(measure(title, FONT_SUB) + PAD * 1.5), h: 20 };
  const tw = measure(title, FONT_OP);
  if (nodeKind === "input" || nodeKind === "output") return { w: Math.ceil(Math.max(tw + PAD * 3, 48)), h: 26 };
  if (nodeKind === "constant") return { w: Math.ceil(Math.max(tw + PAD * 2, 36)), h: 22 };
  return { w: Math.ceil(Math.max(tw + PAD * 2, 40)), h: 26 };
}
