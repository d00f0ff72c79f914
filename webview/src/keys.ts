// What the viewer's keys and toolbar buttons mean (pure): a key press or a button's
// data-action → one ViewerAction; viewer.ts carries the actions out.

export type ViewerAction =
  | { type: "expand-all" }
  | { type: "collapse-all" }
  | { type: "fit" }
  /** Back to the first view: readable, at the inputs. */
  | { type: "initial-view" }
  | { type: "depth"; depth: number }
  | { type: "depth-step"; step: 1 | -1 }
  | { type: "export"; format: "svg" | "png" }
  /** Put the cursor in the search box (selecting what is typed there already). */
  | { type: "find"; selectText: boolean }
  /** Forget the search and the selection. */
  | { type: "clear" }
  /** A compare view: open and centre the next (1) or previous (-1) change. */
  | { type: "change-step"; step: 1 | -1 };

/** The parts of a keydown that matter here. */
export interface KeyPress {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  altKey: boolean;
  /** The key went to a text field (the search box): its letters are text, not commands. */
  inTextField: boolean;
  /** The key went to a control (a button, a select, a table row): letters and digits are
   * the graph's only on the graph or the page itself. */
  inControl?: boolean;
}

/** A key pressed anywhere on the page → what to do (null: nothing, let it through). */
export function keyAction(p: KeyPress): ViewerAction | null {
  if ((p.ctrlKey || p.metaKey) && p.key.toLowerCase() === "f") return { type: "find", selectText: true };
  if (p.inTextField || p.ctrlKey || p.metaKey || p.altKey) return null;
  const k = p.key;
  if (k === "/") return { type: "find", selectText: false };
  if (k === "Escape") return { type: "clear" };
  if (p.inControl) return null;
  if (k === "f" || k === "F") return { type: "fit" };
  if (k === "e" || k === "E") return { type: "expand-all" };
  if (k === "c" || k === "C") return { type: "collapse-all" };
  if (k === "0") return { type: "initial-view" };
  if (/^[1-9]$/.test(k)) return { type: "depth", depth: Number(k) };
  if (k === "n" || k === "N") return { type: "change-step", step: 1 };
  if (k === "p" || k === "P") return { type: "change-step", step: -1 };
  return null;
}

/** A toolbar button's `data-action` → what to do. */
export function buttonAction(name: string): ViewerAction | null {
  switch (name) {
    case "expand-all":
    case "collapse-all":
    case "fit":
      return { type: name };
    case "depth-up":
      return { type: "depth-step", step: 1 };
    case "depth-down":
      return { type: "depth-step", step: -1 };
    case "export-svg":
      return { type: "export", format: "svg" };
    case "export-png":
      return { type: "export", format: "png" };
    case "next-change":
      return { type: "change-step", step: 1 };
    case "prev-change":
      return { type: "change-step", step: -1 };
  }
  return null;
}

/** A key in the search box: Enter steps to the next match (Shift: the previous), Escape leaves. */
export function searchKeyAction(key: string, shiftKey: boolean): { type: "step"; step: 1 | -1 } | { type: "leave" } | null {
  if (key === "Enter") return { type: "step", step: shiftKey ? -1 : 1 };
  if (key === "Escape") return { type: "leave" };
  return null;
}

/** What a key does while the graph itself has the focus (its boxes reached without a mouse). */
export type GraphKeyAction =
  /** The next (1) or previous (-1) box in reading order: top to bottom, left to right. */
  | { type: "move"; step: 1 | -1 }
  /** The box's own click: select it and go to its line. */
  | { type: "activate" }
  /** Open or close the box (a module, a ×N group, a folded run). */
  | { type: "toggle" }
  /** Open the box (+), close it (−); a box already so stays. */
  | { type: "open" }
  | { type: "close" }
  /** Zoom in (1) or out (-1) about the selected box (+ and − are taken: they open and close). */
  | { type: "zoom"; step: 1 | -1 };

/** A key pressed while the graph has the focus (null: the page's own keys apply). */
export function graphKeyAction(p: KeyPress): GraphKeyAction | null {
  // ] and [ zoom; with Ctrl+Alt too: AltGr, which some layouts need for them, comes so
  if ((p.key === "]" || p.key === "[") && p.ctrlKey === p.altKey && !p.metaKey) return { type: "zoom", step: p.key === "]" ? 1 : -1 };
  if (p.ctrlKey || p.metaKey || p.altKey) return null;
  switch (p.key) {
    case "ArrowDown":
    case "ArrowRight":
      return { type: "move", step: 1 };
    case "ArrowUp":
    case "ArrowLeft":
      return { type: "move", step: -1 };
    case "Enter":
      return { type: "activate" };
    case " ":
      return { type: "toggle" };
    case "+":
    case "=": // (+ without Shift on most layouts)
      return { type: "open" };
    case "-":
      return { type: "close" };
  }
  return null;
}

/** A drawn item by its left edge, top and height; a frame (an opened module) is read at its
 * top, before what it holds. */
export interface ReadItem {
  key: string;
  x: number;
  y: number;
  h?: number;
  frame?: boolean;
}

/** Drawn items (boxes and opened frames) in reading order: top to bottom, left to right.
 * A box is read at its middle: the boxes of a row share it, not their tops. */
export function readingOrder(items: readonly ReadItem[]): string[] {
  const at = (i: ReadItem): number => (i.frame ? i.y : i.y + (i.h ?? 0) / 2);
  return [...items].sort((a, b) => at(a) - at(b) || a.x - b.x).map((i) => i.key);
}

/** The key `step` away from `current` in `order`, wrapping; the first (or last) when none. */
export function stepIn(order: readonly string[], current: string | null, step: 1 | -1): string | null {
  if (order.length === 0) return null;
  const at = current === null ? -1 : order.indexOf(current);
  if (at < 0) return step > 0 ? order[0]! : order[order.length - 1]!;
  return order[(at + step + order.length) % order.length]!;
}
