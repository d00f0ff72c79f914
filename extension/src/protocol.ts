// The contracts the extension speaks: requests to the language server (docs/protocol.md)
// and the messages exchanged with the viewer in the webview (webview/src/messages.ts).
// Types only, plus a few pure helpers; no vscode import so unit tests need no stub.

// ---- language server ---------------------------------------------------------------

export const TARGET_AT = "torchscope/targetAt";
export const TRACE = "torchscope/trace";
export const SHUTDOWN_RUNNER = "torchscope/shutdownRunner";
export const COMPARE = "torchscope/compare";
/** JSON-RPC error code of every torchscope error response. */
export const TORCHSCOPE_ERROR = -32001;

/** The server's log levels, least to most (docs/protocol.md). */
export const LOG_LEVELS = ["error", "warning", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface InitOptions {
  storageDir: string;
  traceTimeoutSeconds: number;
  logLevel: LogLevel;
}

export interface Position {
  line: number;
  character: number;
}

export interface TargetAtParams {
  uri: string;
  position: Position;
  text?: string;
}

export interface TargetAtResult {
  target: string;
  kind: "class" | "instance" | "factory";
  line: number;
}

export interface TraceParams {
  uri: string;
  text?: string;
  target: string;
  input?: string;
  ctorArgs?: string;
  device?: "cpu" | "meta";
  /** Trace in training (true) or eval (false) mode; absent: the mode the model was built in. */
  train?: boolean;
  workDoneToken?: string;
}

export interface TraceErrorInfo {
  type: string;
  message: string;
  file: string | null;
  line: number | null;
}

export interface TraceSummary {
  model: string;
  qualname: string;
  nodes: number;
  edges: number;
  ops: number;
  modules: number;
  params: number;
  trace_ms: number;
  input: string;
  error: TraceErrorInfo | null;
}

export interface TraceResult {
  path: string;
  size: number;
  summary: TraceSummary;
}

/** `torchscope/compare`: graph file `a` (before) against `b` (after) → the compare view's file. */
export interface CompareParams {
  a: string;
  b: string;
  /** What each side is, for the page: "HEAD", "working copy", "eval mode", … */
  aSource?: string;
  bSource?: string;
  /** Where to write; absent: the server's graph folder. */
  out?: string;
}

export interface CompareSummary {
  added: number;
  removed: number;
  changed: number;
  same: number;
  /** The places "next change" steps through. */
  changes: number;
  /** b's model name. */
  model: string;
}

export interface CompareResult {
  path: string;
  size: number;
  summary: CompareSummary;
}

export type ErrorKind = "no-torch" | "import-error" | "target-error" | "needs-input" | "timeout" | "runner-crashed" | "bad-graph";

export interface ErrorData {
  kind: ErrorKind;
  details?: string;
  needsCtorArgs?: boolean;
}

/** Arguments of `torchscope.visualize` when a CodeLens (or a test) names the target. */
export interface VisualizeArgs {
  uri: string;
  target: string;
}

// ---- webview ------------------------------------------------------------------------

// Declared once for both sides, in the viewer's folder (webview/src/messages.ts).
export { isViewerMessage } from "../../webview/src/messages";
export type { HostMessage, PanelOrigin, Site, ViewState, ViewerMessage, WebviewState } from "../../webview/src/messages";

/** Context a right-click on a graph node passes to `webview/context` menu commands. */
export interface NodeContext {
  webview?: string;
  torchscopeNode?: number;
  defnFile?: string;
  defnLine?: number;
  siteFile?: string;
  siteLine?: number;
}

// ---- pure helpers --------------------------------------------------------------------

export function isErrorData(x: unknown): x is ErrorData {
  return typeof x === "object" && x !== null && typeof (x as { kind?: unknown }).kind === "string";
}

/** The key of a panel and of remembered answers: one per (document, target). */
export function targetKey(uri: string, target: string): string {
  return `${uri}#${target}`;
}

/** Last dotted part: the class name a panel title shows. */
export function shortName(name: string): string {
  const i = name.lastIndexOf(".");
  return i >= 0 ? name.slice(i + 1) : name;
}

/** The model's name for a title: the class (last dotted part) from the summary, else from
 * `fallback` (a target or an expression, kept whole when it is not a dotted name: `nets["g.x"]`). */
export function modelName(summary: Pick<TraceSummary, "model"> | null | undefined, fallback: string): string {
  const m = summary?.model || fallback;
  return m.includes("(") || m.includes("[") ? m : shortName(m);
}

export function panelTitle(summary: Pick<TraceSummary, "model"> | null | undefined, fallback: string): string {
  return `Forward pass: ${modelName(summary, fallback)}`;
}
