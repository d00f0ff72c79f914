// The messages between the VS Code extension (extension/src/graphPanel.ts) and the viewer in
// its webview, declared once: both sides import this file (the extension through a relative
// path), so a change on one side that the other doesn't follow fails to compile.
// Types and one guard only: nothing here (or in what it imports) may need the DOM or Node.
import type { Site } from "./format";

export type { Site };

/** The input a panel's graph was traced with: shown in the viewer's toolbar with a Change button. */
export interface InputUsed {
  /** Which input and where it came from, for people (the trace summary's `input`). */
  text: string;
  /** An expression that gives it again (the input box starts with it), if there is one. */
  expr?: string;
  /** For an input given as a value (a factory's example): an expression of its kind and
   * shape, not its values — the input box's placeholder. */
  template?: string;
}

/** What a panel shows; the viewer keeps it in the webview state so a reload can restore the panel. */
export interface PanelOrigin {
  /** The document's URI, or for a paused-frame graph the debug sources' own URI. */
  uri: string;
  /** The traced target: a class, variable or factory name, or the paused frame's expression. */
  target: string;
  title: string;
  /** The graph file last shown (a reload shows it again without a trace). */
  graphPath?: string;
  /** The input of the trace shown; absent for a graph file opened as it is (nothing to change). */
  input?: InputUsed;
  /** "meta": traced on the meta device ("Trace on Meta Device"): a re-trace keeps it. */
  device?: "meta";
}

/** The viewer's view: which modules, ×N groups and segments of long runs are open, and the zoom. */
export interface ViewState {
  /** Which graph the state belongs to: a new trace starts fresh, a reload restores. */
  graph?: string;
  expanded: number[];
  groups: number[];
  /** Open segments of long runs (absent in a state saved before segments existed). */
  segments?: number[];
  transform?: { x: number; y: number; k: number };
}

/** Where a paused debugger is, in the function whose call a paused-frame graph traced
 * ("you are here"): `file` and 1-based `line` as graph sites write them; `func` the frame's
 * function name, when known. */
export interface PausedAt {
  file: string;
  line: number;
  func?: string;
}

/** Messages the viewer posts to the extension. */
export type ViewerMessage =
  | { type: "ready" }
  /** `side`: a compare view's node, from version "a" (before) or "b" (after). */
  | { type: "reveal"; site: Site; nodeId: number; side?: "a" | "b" }
  | { type: "save"; name: string; mime: string; data: ArrayBuffer }
  | { type: "error"; message: string }
  /** The graph posted can't be shown (a damaged or empty file): why, as the page says it. */
  | { type: "unreadable"; message: string }
  /** The view changed (after each layout): an HTML export opens at it. */
  | { type: "view"; view: ViewState }
  /** The toolbar's Change button next to the input: ask for another input and trace again. */
  | { type: "changeInput" };

/** Messages the extension posts to the viewer. */
export type HostMessage =
  | { type: "graph"; data: ArrayBuffer | Uint8Array; origin: PanelOrigin }
  | { type: "highlightLine"; file: string; line: number }
  /** A hover's "Show in graph": open the way to `node`, select it; `nodes` (all the calls the
   * hover was about) are marked like search matches. */
  | { type: "revealNode"; node: number; nodes?: number[] }
  /** The paused debugger's line in the traced call (marks `data-here`/`data-ahead`); null:
   * the program left that call or ended, no marks. */
  | { type: "pausedAt"; at: PausedAt | null }
  /** The graph shown is older than its source: `message` says why the re-trace failed;
   * null: it is not (any more). */
  | { type: "stale"; message: string | null }
  | { type: "export"; format: "svg" | "png" };

/** The webview state VS Code keeps for a panel: the viewer's view and the panel's origin
 * (the extension reads the origin back when it restores a panel after a reload). */
export type WebviewState = Partial<ViewState> & { origin?: PanelOrigin };

// Every viewer message type, and no other (`satisfies` fails to compile on a missing or extra one).
const VIEWER_MESSAGE_TYPES = { ready: true, reveal: true, save: true, error: true, unreadable: true, view: true, changeInput: true } satisfies Record<
  ViewerMessage["type"],
  true
>;

/** A message from the webview that the extension knows (anything can be posted there). */
export function isViewerMessage(x: unknown): x is ViewerMessage {
  if (typeof x !== "object" || x === null) return false;
  const t = (x as { type?: unknown }).type;
  return typeof t === "string" && Object.hasOwn(VIEWER_MESSAGE_TYPES, t);
}
