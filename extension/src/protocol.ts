// The contracts the extension speaks: requests to the language server (docs/protocol.md)
// and the messages exchanged with the viewer in the webview (webview/src/messages.ts).
// Types only, plus a few pure helpers; no vscode import so unit tests need no stub.

// ---- language server ---------------------------------------------------------------

export const TARGET_AT = "torchscope/targetAt";
export const TARGETS = "torchscope/targets";
export const TRACE = "torchscope/trace";
export const SHUTDOWN_RUNNER = "torchscope/shutdownRunner";
export const COMPARE = "torchscope/compare";
/** A graph shown that did not come from `torchscope/trace` (a paused trace): index it for hints. */
export const GRAPH_SHOWN = "torchscope/graphShown";
/** Where a graph's lines of a file are now, after the edits since its trace. */
export const LINES = "torchscope/lines";
/** The command a hover's "Show in graph" link runs (docs/protocol.md, "Shapes in the code"). */
export const REVEAL_NODE_COMMAND = "torchscope.revealNode";
/** JSON-RPC error code of every torchscope error response. */
export const TORCHSCOPE_ERROR = -32001;

/** The server's log levels, least to most (docs/protocol.md). */
export const LOG_LEVELS = ["error", "warning", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface InitOptions {
  storageDir: string;
  traceTimeoutSeconds: number;
  logLevel: LogLevel;
  /** false: the server answers `textDocument/inlayHint` with nothing (hovers stay). */
  inlayHints: boolean;
}

export interface GraphShownParams {
  path: string;
  key?: string;
}

export interface GraphShownResult {
  files: number;
  lines: number;
}

export interface LinesParams {
  /** The graph file. */
  path: string;
  file: string;
}

/** `[traced, now]` per line of the file that made something (0-based), a line edited since
 * left out; null: the server has not indexed that graph or file. */
export interface LinesResult {
  lines: [number, number][] | null;
}

/** The argument of `torchscope.revealNode` (one element of the hover link's JSON array). */
export interface RevealNodeArgs {
  graph: string;
  node: number;
  nodes?: number[];
}

/** The command's argument as VS Code passes it from a `command:` link (the array's element),
 * or undefined when it is not one. */
export function revealNodeArgs(arg: unknown): RevealNodeArgs | undefined {
  const a = (Array.isArray(arg) ? arg[0] : arg) as Partial<RevealNodeArgs> | undefined;
  if (!a || typeof a.graph !== "string" || !a.graph || !Number.isInteger(a.node) || (a.node as number) < 0) return undefined;
  const nodes = Array.isArray(a.nodes) ? a.nodes.filter((n): n is number => Number.isInteger(n) && n >= 0) : undefined;
  return { graph: a.graph, node: a.node as number, ...(nodes?.length ? { nodes } : {}) };
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

/** `torchscope/targets`: every model of a file (its result is a list of TargetAtResult). */
export interface TargetsParams {
  uri: string;
  text?: string;
}

export interface TraceParams {
  uri: string;
  text?: string;
  target: string;
  input?: string;
  ctorArgs?: string;
  device?: "cpu" | "meta";
  /** Consent to run the file's top-level code (a training loop, file writes) while importing it. */
  runTopLevel?: boolean;
  /** Trace in training (true) or eval (false) mode; absent: the mode the model was built in. */
  train?: boolean;
  /** false: this trace gives the file no inlay hints (it traced another text: HEAD's). */
  hints?: boolean;
  /** Other files imported from these texts instead of the disk (null: a file not there). */
  texts?: { file: string; text: string | null }[];
  workDoneToken?: string;
}

export interface TraceErrorInfo {
  type: string;
  message: string;
  file: string | null;
  line: number | null;
  /** A comparison's: the name of its first side ("HEAD") when only that side raised (its
   * line is in that side's version of the file). */
  side?: string;
  /** A comparison's: the name of the side that raised ("working copy", "input …"). */
  sideName?: string;
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
  /** Where the input came from, for people: "guessed from Conv2d(3, …): tensor [1, 3, 32, 32] float32". */
  input: string;
  /** An expression that gives the same input again (null: none, e.g. a paused call's real arguments). */
  inputExpr?: string | null;
  /** An input given as a value (a factory's example, example_input_array): an expression of
   * its kind and shape (`torch.randn(2, 16)`), not its values; an input box's placeholder. */
  inputTemplate?: string;
  inputKind?: InputKind;
  /** A class that needs constructor arguments, built as the file builds it: "Wide(12), as line 41 builds it". */
  builtAs?: string;
  error: TraceErrorInfo | null;
  /** What the trace could not undo (a parameter written behind torch's back). */
  warnings?: string[];
  /** Top-level statements of the file that did not run (loading keeps its definitions only). */
  skipped?: TopLevelStatement[];
  /** Those of `skipped` the forward's error points at (a key or name it quotes that they make). */
  skippedSuspect?: TopLevelStatement[];
  /** This process's rank and the world size, when torch.distributed was initialised; else null. */
  rank?: number | null;
  worldSize?: number | null;
  /** Collective-communication op nodes in the graph. */
  collectives?: number;
}

/** How the input of a trace was found (docs/protocol.md). */
export type InputKind = "typed" | "factory" | "example" | "call" | "guess" | "paused-call" | "frame" | "next-call";

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
  /** Statistics further apart than this times the larger |max| are a change (default 1e-3). */
  statsTolerance?: number;
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

export type ErrorKind =
  | "no-torch"
  | "import-error"
  | "target-error"
  | "needs-input"
  | "timeout"
  | "runner-crashed"
  | "runner-stopped"
  | "runs-code"
  | "syntax-error"
  | "bad-request"
  | "bad-graph"
  | "internal";

/** A top-level statement that runs when the file is imported (`runs-code`). */
export interface TopLevelStatement {
  /** 1-based, like the graph's sites. */
  line: number;
  text: string;
}

export interface ErrorData {
  kind: ErrorKind;
  details?: string;
  needsCtorArgs?: boolean;
  /** `needs-input`: an input expression to start the input box with; `target-error` with
   * `needsCtorArgs`: the arguments the file itself passes, as written. */
  guess?: string;
  /** `target-error` with `needsCtorArgs`: the parameters the class or factory takes, as call
   * text (`d_in, d_hidden, n_layers=2`). */
  ctorParams?: string;
  /** `runs-code`: what importing the file would run. */
  statements?: TopLevelStatement[];
  /** `timeout`: stopped while importing and building the model, or while tracing. */
  stage?: "build" | "trace";
}

/** Arguments of `torchscope.visualize` when a CodeLens (or a test) names the target. */
export interface VisualizeArgs {
  uri: string;
  target: string;
}

// ---- webview ------------------------------------------------------------------------

// Declared once for both sides, in the viewer's folder (webview/src/messages.ts).
export { isViewerMessage } from "../../webview/src/messages";
export type { HostMessage, InputUsed, PanelOrigin, PausedAt, Site, ViewState, ViewerMessage, WebviewState } from "../../webview/src/messages";

/** Context a right-click on a graph node passes to `webview/context` menu commands. */
export interface NodeContext {
  webview?: string;
  torchscopeNode?: number;
  defnFile?: string;
  defnLine?: number;
  siteFile?: string;
  siteLine?: number;
  /** Where on that line the call starts (Python's UTF-8 column; `Site.col`). */
  siteCol?: number;
  /** The library frame of an op run inside a library function, or of the failing call. */
  insideFile?: string;
  insideLine?: number;
}

// ---- pure helpers --------------------------------------------------------------------

/** The words torch and the CUDA runtime use when code asks for a GPU this machine lacks. */
const NEEDS_GPU =
  /Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available|CUDA driver version is insufficient|torch\.cuda\.is_available\(\) is False|CUDA error: no CUDA-capable device/i;

/** An error (message, traceback) that says the code asked for a GPU this machine lacks. */
function needsGpu(text: string): boolean {
  return NEEDS_GPU.test(text);
}

/** The words torch, Python and the runner use when the model took more memory than there is
 * (torch's allocator refused, or the system stopped the runner: the runner says "killed by SIGKILL"). */
const OUT_OF_MEMORY = /DefaultCPUAllocator: can't allocate memory|\bMemoryError\b|killed by SIGKILL/;

/** An error (message, traceback) that says the model does not fit in this machine's memory. */
function outOfMemory(text: string): boolean {
  return OUT_OF_MEMORY.test(text);
}

/** What an error (message, traceback) says the model lacks here, which the meta device does
 * without: a GPU, or memory; undefined: neither. */
export function metaKind(text: string): "needs-gpu" | "needs-memory" | undefined {
  return needsGpu(text) ? "needs-gpu" : outOfMemory(text) ? "needs-memory" : undefined;
}

export function isErrorData(x: unknown): x is ErrorData {
  return typeof x === "object" && x !== null && typeof (x as { kind?: unknown }).kind === "string";
}

/** Whether a panel's file (a URI's path) is a graph file ("Open graph file…"), not code. */
export function isGraphFile(path: string): boolean {
  return /\.msgpack$/i.test(path);
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

/** Each path's shortest tail of folders that no other path of `paths` ends with (`mlp.py`,
 * `a/mlp.py`): what tells apart the files of panels with the same title. */
export function distinctTails(paths: string[]): string[] {
  const parts = paths.map((p) => p.split("/").filter(Boolean));
  return parts.map((mine, i) => {
    for (let n = 1; n < mine.length; n++) {
      const tail = mine.slice(-n).join("/");
      if (parts.every((other, j) => j === i || paths[j] === paths[i] || other.slice(-n).join("/") !== tail)) return tail;
    }
    return mine.join("/");
  });
}

export function panelTitle(summary: Pick<TraceSummary, "model" | "rank" | "worldSize"> | null | undefined, fallback: string): string {
  return `Forward pass: ${modelName(summary, fallback)}${rankSuffix(summary)}`;
}

/** A model of the editor's: its class, and its target when that is another name (an
 * instance `net`, a factory `build`): the panels of a class and of its instance differ. */
export function editorPanelTitle(summary: Pick<TraceSummary, "model" | "rank" | "worldSize"> | null | undefined, target: string): string {
  const model = modelName(summary, target);
  const name = shortName(target);
  return `Forward pass: ${model}${name !== model ? ` (${name})` : ""}${rankSuffix(summary)}`;
}

/** " (rank 1 of 2)" for a trace in one rank of a torch.distributed program; else "". */
export function rankSuffix(summary: Pick<TraceSummary, "rank" | "worldSize"> | null | undefined): string {
  const rank = summary?.rank;
  if (typeof rank !== "number") return "";
  return typeof summary?.worldSize === "number" ? ` (rank ${rank} of ${summary.worldSize})` : ` (rank ${rank})`;
}
