// Talking to a paused Python debuggee (debugpy) through DAP `evaluate`: the expression that
// loads python_helper/torchscope/debug.py by path and calls `handle(<json>)` (docs/debugging.md,
// "The evaluate expression"), parsing its short JSON reply, and moving the graph file when
// the debuggee's files are not ours (remote attach: `read_chunk`, at most 4 MiB a request).
// The pure parts (expression, reply, candidate labels, chunk reassembly) are unit-tested.
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type * as vscode from "vscode";
import { formatCount } from "../../webview/src/count";
import { errorText } from "./logChannel";
import type { TraceSummary } from "./protocol";

// ---- the evaluate expression ---------------------------------------------------------

/** `debug.LOADER_TEMPLATE`: loads debug.py by path once per debuggee, yields the module. */
const LOADER_HEAD =
  "(lambda p, s=__import__('sys'), u=__import__('importlib.util').util: " +
  "s.modules['_torchscope_debug'] " +
  "if getattr(s.modules.get('_torchscope_debug'), '__file__', None) == p " +
  "else (lambda sp: (lambda m: (s.modules.__setitem__('_torchscope_debug', m), " +
  "sp.loader.exec_module(m), m)[2])(u.module_from_spec(sp)))" +
  "(u.spec_from_file_location('_torchscope_debug', p)))";

/** Python's `json.dumps(str)`: a JSON string literal (ASCII only), which is also a Python one. */
export function pyString(s: string): string {
  return JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** The expression that loads debug.py at `debugPy` into the debuggee and yields the module. */
export function loaderExpression(debugPy: string): string {
  return `${LOADER_HEAD}(${pyString(debugPy)})`;
}

export type DebugRequest =
  | { op: "candidates" }
  | { op: "warm"; expr?: string; timeBudget?: number }
  | { op: "trace"; expr: string; out: string; input?: string; timeBudget?: number; cancelFile?: string }
  | { op: "trace_next_call"; expr: string; out: string; timeBudget?: number }
  | { op: "poll"; out: string }
  | { op: "disarm"; out: string }
  | { op: "read_chunk"; path: string; offset: number; size: number }
  | { op: "remove"; path: string };

/** Debug sessions asked something already (see DebugBridge.request). */
const asked = new WeakSet<object>();

/** `LOADER(PATH).handle(REQUEST)`: REQUEST is the request's JSON as a string literal. */
export function requestExpression(request: DebugRequest, debugPy: string): string {
  return `${loaderExpression(debugPy)}.handle(${pyString(JSON.stringify(request))})`;
}

// ---- sending the helper to a debuggee that can't read the extension's files ----------

/** `debug.NOT_SHIPPED` and `debug.SHIPPED_MSGPACK`: the package's modules a paused trace
 * doesn't need (every other top-level module is sent), and msgpack's pure-Python files. */
export const NOT_SHIPPED = [
  "__main__.py",
  "align.py",
  "cli.py",
  "cli_args.py",
  "cli_say.py",
  "cli_trace.py",
  "compare.py",
  "diff.py",
  "diff_cli.py",
  "diff_text.py",
  "entry_path.py",
  "file_texts.py",
  "html.py",
  "launch.py",
  "notebook.py",
  "op_libraries.py",
  "output_file.py",
  "process_defaults.py",
  "runner.py",
  "side_imports.py",
  "stuck.py",
  "summary.py",
];
export const SHIPPED_MSGPACK = ["__init__.py", "exceptions.py", "ext.py", "fallback.py"];

/** `debug.shipped_files`: the package files sent to a remote debuggee, sorted. */
export async function shippedFiles(dir: string): Promise<string[]> {
  const names = await fs.readdir(dir);
  return names.filter((f) => f.endsWith(".py") && !NOT_SHIPPED.includes(f)).sort();
}

/** `debug.ship_expression`: makes the debug module from `source` as if it were at `debugPy`,
 * with `files` (relative path → source) for the package's and msgpack's imports. */
export function shipExpression(debugPy: string, source: string, files: Record<string, string>): string {
  const p = pyString(debugPy);
  return (
    `(lambda m, s=__import__('sys'): (m.__dict__.update(__file__=${p}), ` +
    `exec(compile(${pyString(source)}, __import__('os').path.join(__import__('tempfile').gettempdir(), ` +
    `'torchscope-shipped', 'torchscope', 'debug.py'), 'exec'), m.__dict__), ` +
    `s.modules.__setitem__('_torchscope_debug', m), m._shipped(${pyString(JSON.stringify(files))}))[3])` +
    `(__import__('types').ModuleType('_torchscope_debug'))`
  );
}

/** The debuggee could not load debug.py from the extension's folder (another machine). */
export function helperMissing(r: ErrorReply): boolean {
  return r.kind === "bad-reply" && /No such file|FileNotFoundError|spec_from_file_location|NoneType.*loader/.test(r.traceback ?? r.error);
}

/** The helper's sources as the extension has them: the package beside debug.py, msgpack's
 * pure-Python files from the bundled libraries (bundled/libs/msgpack) when present. */
export async function shippedSources(debugPy: string): Promise<{ source: string; files: Record<string, string> }> {
  const dir = path.dirname(debugPy);
  const files: Record<string, string> = {};
  for (const f of await shippedFiles(dir)) files[f] = await fs.readFile(path.join(dir, f), "utf8");
  const msgpack = path.join(dir, "..", "..", "libs", "msgpack");
  if (await exists(path.join(msgpack, "fallback.py"))) {
    for (const f of SHIPPED_MSGPACK) files[`msgpack/${f}`] = await fs.readFile(path.join(msgpack, f), "utf8");
  }
  return { source: files["debug.py"]!, files };
}

/** The DAP `evaluate` arguments for one request on one frame. */
export function evaluateArgs(request: DebugRequest, debugPy: string, frameId: number | undefined): Record<string, unknown> {
  return expressionArgs(requestExpression(request, debugPy), frameId);
}

/** The DAP `evaluate` arguments for one expression: the whole string, never truncated. */
function expressionArgs(expression: string, frameId: number | undefined): Record<string, unknown> {
  const args: Record<string, unknown> = {
    expression,
    context: "clipboard",
    format: { rawString: true },
  };
  if (frameId !== undefined) args.frameId = frameId;
  return args;
}

// ---- replies -------------------------------------------------------------------------

export type DebugErrorKind =
  | "no-torch"
  | "no-msgpack"
  | "import-error"
  | "no-frame"
  | "target-error"
  | "needs-input"
  | "timeout"
  | "cancelled"
  | "bad-request"
  | "internal"
  // Ours, not the entry's: the evaluate itself failed, or its result was not a reply.
  | "evaluate-failed"
  | "bad-reply";

export interface ErrorReply {
  ok: false;
  kind: DebugErrorKind;
  error: string;
  traceback?: string | null;
}

export interface Candidate {
  expr: string;
  name: string;
  cls: string;
  qualname: string;
  params: number;
  reason: string;
  inputs: boolean;
  input: string | null;
  /** When no input is known: the input expression the editor would guess from the first layer. */
  guess?: string | null;
}

export interface TraceReply {
  ok: true;
  path: string;
  size: number;
  summary: TraceSummary;
  output?: string;
  warning?: string;
  elapsed_ms?: number;
  done?: boolean;
  /** Which live model was traced ("pid:id"): one expression may name others over time. */
  modelId?: string;
}

export interface CandidatesReply {
  ok: true;
  modules: Candidate[];
  more: number;
}
export interface ArmedReply {
  ok: true;
  armed: true;
  path: string;
  model: string;
}
export interface PollReply {
  ok: true;
  done: false;
  armed: boolean;
}
export interface ChunkReply {
  ok: true;
  data: string;
  offset: number;
  size: number;
  total: number;
  eof: boolean;
}

/** Undo Python's `repr` of a str (a debug adapter that ignored `rawString`). */
function unrepr(s: string): string | undefined {
  const q = s[0];
  if ((q !== "'" && q !== '"') || s.length < 2 || s[s.length - 1] !== q) return undefined;
  return s.slice(1, -1).replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)/g, (_m, e: string) => {
    if (e[0] === "x" || e[0] === "u") return String.fromCharCode(parseInt(e.slice(1), 16));
    return ({ n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"' } as Record<string, string>)[e] ?? `\\${e}`;
  });
}

/** `body.result` of the evaluate → the entry's reply (an `ok: false` reply when it isn't one). */
export function parseReply(result: unknown): { ok: true; [k: string]: unknown } | ErrorReply {
  if (typeof result !== "string") return { ok: false, kind: "bad-reply", error: "the debugger returned no result" };
  const text = result.trim();
  for (const candidate of [text, unrepr(text)]) {
    if (candidate === undefined) continue;
    try {
      const v = JSON.parse(candidate) as unknown;
      if (typeof v === "object" && v !== null && typeof (v as { ok?: unknown }).ok === "boolean") {
        const r = v as { ok: boolean; kind?: unknown; error?: unknown; traceback?: unknown };
        if (r.ok) return v as { ok: true };
        return {
          ok: false,
          kind: (typeof r.kind === "string" ? r.kind : "internal") as DebugErrorKind,
          error: typeof r.error === "string" ? r.error : "unknown error",
          traceback: typeof r.traceback === "string" ? r.traceback : null,
        };
      }
    } catch {
      /* not JSON: below */
    }
  }
  // An exception text from the debugger itself (the expression did not run), or a cut reply.
  const first = text.split("\n").find((l) => l.trim()) ?? "";
  return { ok: false, kind: "bad-reply", error: `unexpected reply from the debuggee: ${first.slice(0, 300)}`, traceback: text.slice(0, 4000) };
}

// ---- candidates ----------------------------------------------------------------------

export interface CandidateItem {
  label: string;
  description: string;
  detail: string;
  candidate: Candidate;
}

/** Quick-pick rows in the entry's order (likeliest first): name, class and size, why, input. */
export function candidateItems(modules: Candidate[]): CandidateItem[] {
  return modules.map((c) => ({
    label: c.name === c.cls ? c.cls : c.name,
    description: `${c.cls} · ${formatCount(c.params)} params`,
    detail: [c.reason, c.inputs ? `input: ${c.input ?? "known"}` : "input unknown: you type one or trace the next call"].filter(Boolean).join(" — "),
    candidate: c,
  }));
}

// ---- chunked transfer ----------------------------------------------------------------

export const MAX_CHUNK = 4 * 1024 * 1024;

/**
 * Read a whole remote file through `read(offset, size)` (the `read_chunk` request), in order,
 * at most `chunk` bytes a request; checks that the pieces line up and add up to `total`.
 */
export async function readChunked(
  read: (offset: number, size: number) => Promise<ChunkReply | ErrorReply>,
  chunk = MAX_CHUNK,
  onProgress?: (done: number, total: number) => void,
): Promise<Uint8Array> {
  const size = Math.max(1, Math.min(chunk, MAX_CHUNK));
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const r = await read(offset, size);
    if (!r.ok) throw new DebugError(r);
    if (r.offset !== offset) throw new DebugError({ ok: false, kind: "bad-reply", error: `chunk at ${r.offset}, expected ${offset}` });
    const data = Buffer.from(r.data, "base64");
    if (data.length !== r.size) throw new DebugError({ ok: false, kind: "bad-reply", error: `chunk of ${data.length} bytes, said ${r.size}` });
    parts.push(data);
    offset += data.length;
    onProgress?.(offset, r.total);
    if (r.eof || offset >= r.total) {
      if (offset !== r.total) throw new DebugError({ ok: false, kind: "bad-reply", error: `read ${offset} of ${r.total} bytes` });
      break;
    }
    if (data.length === 0) throw new DebugError({ ok: false, kind: "bad-reply", error: `empty chunk at ${offset} of ${r.total}` });
  }
  const all = Buffer.concat(parts);
  return new Uint8Array(all.buffer, all.byteOffset, all.byteLength);
}

export class DebugError extends Error {
  constructor(readonly reply: ErrorReply) {
    super(reply.error);
  }
  get kind(): DebugErrorKind {
    return this.reply.kind;
  }
}

// ---- a paused frame of a session -----------------------------------------------------

export const PYTHON_DEBUG_TYPES = ["debugpy", "python"];

export interface PausedFrame {
  session: vscode.DebugSession;
  frameId: number | undefined;
}

/**
 * The entry in one debug session, on one frame: sends requests as evaluates. `debugPy` is
 * the path of debug.py as the debuggee sees it.
 */
export class DebugBridge {
  constructor(
    readonly frame: PausedFrame,
    readonly debugPy: string,
    private readonly log?: vscode.LogOutputChannel,
  ) {}

  async request<T extends { ok: true }>(request: DebugRequest): Promise<T | ErrorReply> {
    const session = this.frame.session;
    if (!asked.has(session)) {
      asked.add(session);
      if (request.op === "trace" || request.op === "trace_next_call") {
        // debugpy warns of an evaluation over 3 s, reading its threshold as each one begins:
        // a first request raises it (debug.py) before this session's first trace
        await this.request({ op: "warm", ...(request.timeBudget ? { timeBudget: request.timeBudget } : {}) });
      }
    }
    const t0 = Date.now();
    let reply = await this.evaluate(evaluateArgs(request, this.debugPy, this.frame.frameId), request.op);
    if (!reply.ok && helperMissing(reply)) {
      // The debuggee is elsewhere: send it the helper's sources, then ask again.
      const shipped = await this.ship();
      if (shipped.ok) reply = await this.evaluate(evaluateArgs(request, this.debugPy, this.frame.frameId), request.op);
      else this.log?.warn(`debug: sending the helper failed: ${shipped.error}`);
    }
    this.log?.info(`debug ${request.op}: ${reply.ok ? "ok" : `${reply.kind}: ${reply.error}`} in ${Date.now() - t0} ms`);
    return reply as T | ErrorReply;
  }

  private async evaluate(args: Record<string, unknown>, op: string): Promise<{ ok: true; [k: string]: unknown } | ErrorReply> {
    let body: { result?: unknown };
    try {
      body = (await this.frame.session.customRequest("evaluate", args)) as { result?: unknown };
    } catch (e) {
      const msg = errorText(e);
      this.log?.warn(`debug ${op}: evaluate failed: ${msg}`);
      return { ok: false, kind: "evaluate-failed", error: msg };
    }
    return parseReply(body?.result);
  }

  /** Load the helper into the debuggee from its sources, sent in one evaluate (~0.5 MB). */
  private async ship(): Promise<{ ok: true; [k: string]: unknown } | ErrorReply> {
    let expression: string;
    try {
      const { source, files } = await shippedSources(this.debugPy);
      expression = shipExpression(this.debugPy, source, files);
    } catch (e) {
      return { ok: false, kind: "internal", error: `can't read the helper's files: ${String(e)}` };
    }
    const t0 = Date.now();
    const r = await this.evaluate(expressionArgs(expression, this.frame.frameId), "ship");
    this.log?.info(
      `debug: sent the helper's sources to the debuggee (${expression.length} characters): ${r.ok ? "ok" : r.error} in ${Date.now() - t0} ms`,
    );
    return r;
  }

  /**
   * Make sure the graph the debuggee wrote at `remotePath` is at `localPath` here: it is
   * when the debuggee runs on this machine; else fetch it with `read_chunk` and remove it there.
   */
  async fetchGraph(remotePath: string, localPath: string, onProgress?: (done: number, total: number) => void): Promise<"local" | "fetched"> {
    if (await exists(localPath)) return "local";
    const t0 = Date.now();
    const bytes = await readChunked(
      (offset, size) => this.request<ChunkReply>({ op: "read_chunk", path: remotePath, offset, size }),
      MAX_CHUNK,
      onProgress,
    );
    await fs.mkdir(path.dirname(localPath), { recursive: true });
    await fs.writeFile(localPath, bytes);
    void this.request({ op: "remove", path: remotePath });
    this.log?.info(`debug: fetched ${bytes.byteLength} bytes of ${remotePath} through read_chunk in ${Date.now() - t0} ms`);
    return "fetched";
  }
}

export async function exists(p: string): Promise<boolean> {
  try {
    await fs.access(p);
    return true;
  } catch {
    return false;
  }
}
