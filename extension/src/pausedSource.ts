// The trace source of a model in a paused Python (debugpy) program: the debuggee traces it
// with its real inputs, through DAP evaluates on the selected frame (debugBridge.ts). The
// graph goes to this source's own folder (globalStorage/graphs/paused): Cancel writes a
// cancel file the trace checks; an unknown input is an expression the user types, or the
// program's next call of the model (a one-shot hook: the graph comes when the program runs
// it). The session is only ever sent evaluates: it goes on untouched. Protocol: docs/debugging.md.
import * as crypto from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  DebugBridge,
  DebugError,
  PYTHON_DEBUG_TYPES,
  exists,
  helperMissing,
  parseReply,
  type ArmedReply,
  type ErrorReply,
  type PausedFrame,
  type PollReply,
  type TraceReply,
} from "./debugBridge";
import { tracedLine } from "./logChannel";
import type { PanelOrigin, TraceSummary } from "./protocol";
import { openSettingInUse } from "./settingsScope";
import { inputBox, type Answer, type Ask, type SourceKind, type TraceOutcome, type TraceSource } from "./traceFlow";
import { asText, showError, showInformation } from "./notify";

/** The panels of paused-frame graphs: not a document (a re-trace needs the paused program). */
export const DEBUG_URI = "torchscope-debug:paused-frame";

/** Graph files kept in the folder; older ones are removed before a new trace writes one. */
export const KEEP_GRAPH_FILES = 20;

/** Another window's graph, its extension host gone, is removed past this age. */
export const OTHERS_AGE_MS = 24 * 3600_000;

/** A paused graph's file name: this extension host's pid, the time, a random part. Every
 * window writes into the same folder: the pid says whose a file is. */
export function pausedGraphName(pid = process.pid): string {
  return `debug-${pid}-${Date.now()}-${crypto.randomBytes(4).toString("hex")}.msgpack`;
}

/** The writer's pid in a paused graph's name; undefined for a name without one. */
function writerOf(name: string): number | undefined {
  const m = /^debug-(\d+)-\d+-[0-9a-f]+\.msgpack$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: unknown }).code === "EPERM"; // (it runs, as another user)
  }
}

/** Remove the oldest of this window's `*.msgpack` files of `dir` so that one more makes
 * `keep` (a name without a pid counts as this window's), and other windows' files a day
 * old whose extension host is gone: a window's panels show its own graphs. */
export async function pruneGraphs(dir: string, keep = KEEP_GRAPH_FILES, pid = process.pid): Promise<string[]> {
  let all: string[];
  try {
    all = await fs.readdir(dir);
  } catch {
    return [];
  }
  const names = all.filter((n) => n.endsWith(".msgpack"));
  const found = await Promise.all(
    names.map(async (n) => ({
      file: path.join(dir, n),
      writer: writerOf(n),
      mtime: (await fs.stat(path.join(dir, n)).catch(() => undefined))?.mtimeMs,
    })),
  );
  const files = found.filter((f): f is typeof f & { mtime: number } => f.mtime !== undefined);
  const own = files.filter((f) => f.writer === undefined || f.writer === pid).sort((a, b) => a.mtime - b.mtime);
  const now = Date.now();
  const theirs = files.filter((f) => f.writer !== undefined && f.writer !== pid && now - f.mtime > OTHERS_AGE_MS && !running(f.writer));
  const stale = [...own.slice(0, Math.max(0, own.length - keep + 1)), ...theirs].map((f) => f.file);
  // a graph's side files (a next call's reply, error, unfinished graph) go with it, and
  // those whose graph never came (a wait cancelled, a failed trace) once they are old (a
  // next call under way writes its reply, then its graph)
  const gone = new Set(stale);
  const kept = new Set(files.filter((f) => !gone.has(f.file)).map((f) => f.file));
  const graphs = new Set(files.map((f) => f.file));
  const sides: string[] = [];
  for (const f of all.map((n) => path.join(dir, n)).filter((f) => SIDE_FILE.test(f))) {
    const graph = f.replace(SIDE_FILE, ".msgpack");
    if (kept.has(graph)) continue;
    const orphan = !graphs.has(graph);
    const age = orphan ? Date.now() - ((await fs.stat(f).catch(() => undefined))?.mtimeMs ?? 0) : Number.POSITIVE_INFINITY;
    if (age > ORPHAN_AGE_MS) sides.push(f);
  }
  await Promise.all([...stale, ...sides].map((f) => fs.rm(f, { force: true }).catch(() => undefined)));
  return stale;
}

/** A graph's side file: `<graph>.msgpack` + `.reply.json`, `.error.json` or `.part`. */
const SIDE_FILE = /\.msgpack\.(reply\.json|error\.json|part)$/;
const ORPHAN_AGE_MS = 10 * 60_000;

export interface PausedDeps {
  /** debug.py as the debuggee sees it (the extension's copy; sent over when it can't read it). */
  debugPy: string;
  /** This source's graph folder. */
  graphsDir: string;
  log: vscode.LogOutputChannel;
  /** Each graph traced (`target`: the expression, `model`: its class): "Compare with the
   * previous paused trace" compares the last two of a target. */
  onTraced?(target: string, model: string, path: string, identity?: string): void;
}

/** A next call's trace, as the extension learns of it (the summary and model when known). */
type NextCallReply = { ok: true; summary?: TraceSummary; modelId?: string };

/** `expr` evaluated in the paused frame of `bridge`, traced there. */
export class PausedSource implements TraceSource {
  readonly uri = DEBUG_URI;
  readonly progressTitle: string;
  private input: string | undefined;

  constructor(
    private readonly deps: PausedDeps,
    readonly bridge: DebugBridge,
    readonly target: string,
    public label: string,
    /** The input expression the editor would guess for the model (the candidate's `guess`). */
    private readonly guess?: string,
  ) {
    this.progressTitle = `torchscope: tracing ${label} in the paused program`;
  }

  private get log(): vscode.LogOutputChannel {
    return this.deps.log;
  }

  private async newOut(): Promise<string> {
    await fs.mkdir(this.deps.graphsDir, { recursive: true });
    await pruneGraphs(this.deps.graphsDir);
    return path.join(this.deps.graphsDir, pausedGraphName());
  }

  private timeBudget(): number {
    const t = vscode.workspace.getConfiguration("torchscope").get<number>("traceTimeoutSeconds", 60);
    return typeof t === "number" && t > 0 ? t : 60;
  }

  async trace(progress: (message: string) => void, cancel: vscode.CancellationToken): Promise<TraceOutcome> {
    const out = await this.newOut();
    const cancelFile = `${out}.cancel`;
    const sub = cancel.onCancellationRequested(() => {
      this.log.info(`debug: cancel requested (${cancelFile})`);
      void fs.writeFile(cancelFile, "cancel").catch(() => undefined);
    });
    const t0 = Date.now();
    let fetched = 0;
    let result: TraceReply | ErrorReply;
    try {
      const req = {
        op: "trace" as const,
        expr: this.target,
        out,
        timeBudget: this.timeBudget(),
        cancelFile,
        ...(this.input ? { input: this.input } : {}),
      };
      result = await this.bridge.request<TraceReply>(req);
      if (result.ok) {
        const t1 = Date.now();
        const how = await this.bridge.fetchGraph(result.path, out, (done, total) =>
          progress(`reading the graph from the debuggee: ${Math.round((100 * done) / Math.max(1, total))}%`),
        );
        if (how === "fetched") fetched = Date.now() - t1;
      }
    } catch (e) {
      result = e instanceof DebugError ? e.reply : { ok: false, kind: "internal", error: String(e) };
    } finally {
      sub.dispose();
      void fs.rm(cancelFile, { force: true }).catch(() => undefined);
    }
    if (!result.ok) {
      if (result.kind === "needs-input") return { ok: false, kind: "needs-input", message: result.error };
      reportDebugError(result, this.log);
      return { ok: false, kind: result.kind === "cancelled" ? "cancelled" : "reported" };
    }
    const s = result.summary;
    const line = tracedLine(
      this.target,
      s,
      `evaluate ${result.elapsed_ms ?? "?"} ms in the debuggee, request ${Date.now() - t0} ms${fetched ? `, of which read_chunk ${fetched} ms` : ""}, ${result.size} bytes`,
    );
    this.log[line.level](`debug: ${line.text}`);
    if (result.output) this.log.info(`debug: the forward printed:\n${result.output}`);
    if (result.warning) this.log.warn(`debug: ${result.warning}`);
    this.deps.onTraced?.(this.target, s.model || this.label, out, result.modelId);
    return { ok: true, traced: { path: out, summary: s, ...(result.modelId ? { modelId: result.modelId } : {}) } };
  }

  /** Type an input expression (evaluated in the paused frame), or trace the next call. */
  async ask(what: Ask): Promise<Answer> {
    const items: (vscode.QuickPickItem & { id: "type" | "next" })[] = [
      {
        id: "type",
        label: "$(edit) Type an input expression…",
        detail: 'Evaluated in the paused frame: x[:2], batch["pixel_values"], torch.randn(1, 3, 224, 224)',
      },
      {
        id: "next",
        label: "$(debug-continue) Trace the next call",
        detail: "Continue the program; the graph appears when it next runs the model, with its real inputs",
      },
    ];
    const pick = await vscode.window.showQuickPick(items, {
      title: `No input found for ${this.label}`,
      placeHolder: "How should torchscope get the model's input?",
    });
    if (!pick) return undefined;
    if (pick.id === "next") return "next-call";
    // Starts with the input traced now (or typed before), else the guess from the first layer.
    const box = inputBox({ current: what.current, remembered: this.input, guess: what.guess ?? this.guess });
    const value = await vscode.window.showInputBox({
      title: `Input for ${this.label}`,
      prompt: "An expression evaluated in the paused frame (a tuple → positional arguments, a dict → keywords)",
      placeHolder: box.placeHolder,
      value: box.value,
      ignoreFocusOut: true,
    });
    if (!value?.trim()) return undefined;
    this.input = value.trim();
    return "retry";
  }

  // ---- the next call -------------------------------------------------------------------

  /** Arm the one-shot hook; tell the user to continue; the graph when its file appears. */
  async traceNextCall(): Promise<TraceOutcome> {
    const out = await this.newOut();
    const r = await this.bridge.request<ArmedReply>({ op: "trace_next_call", expr: this.target, out, timeBudget: this.timeBudget() });
    if (!r.ok) {
      reportDebugError(r, this.log);
      return { ok: false, kind: "reported" };
    }
    this.label = r.model || this.label;
    this.log.info(`debug: armed the next call of ${this.target} (${this.label}) → ${out}`);
    let waiting = true; // (the toast stays after the graph came: its Continue then does nothing)
    void showInformation(`torchscope: continue the program; the graph of ${this.label} appears when it next runs.`, "Continue").then(
      (c) => c && waiting && vscode.commands.executeCommand("workbench.action.debug.continue"),
    );
    const got = await this.waitForNextCall(out, r.path);
    waiting = false;
    if (!got) return { ok: false, kind: "cancelled" };
    if (!got.ok) {
      reportDebugError(got, this.log);
      return { ok: false, kind: "reported" };
    }
    this.deps.onTraced?.(this.target, got.summary?.model || this.label, out, got.modelId);
    const identity = got.modelId ? { modelId: got.modelId } : {};
    return { ok: true, traced: got.summary ? { path: out, summary: got.summary, ...identity } : { path: out, ...identity } };
  }

  /**
   * Until the file (or `<out>.error.json`) appears here, the session ends or the user gives
   * up. When the program stops again and the file is not here (remote), ask with `poll`.
   */
  private waitForNextCall(out: string, remotePath: string): Thenable<(ErrorReply | NextCallReply) | undefined> {
    const session = this.bridge.frame.session;
    const name = this.label;
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: asText(`torchscope: waiting for the next call of ${name}…`), cancellable: true },
      (_progress, token) =>
        new Promise((resolve) => {
          let done = false;
          const subs: vscode.Disposable[] = [];
          const finish = (v: (ErrorReply | NextCallReply) | undefined): void => {
            if (done) return;
            done = true;
            clearInterval(timer);
            for (const s of subs) s.dispose();
            resolve(v);
          };
          const check = async (): Promise<boolean> => {
            if (await exists(out)) {
              // its reply beside it (written first): the summary, which live model
              const replyFile = `${out}.reply.json`;
              const text = await fs.readFile(replyFile, "utf8").catch(() => "");
              void fs.rm(replyFile, { force: true }).catch(() => undefined);
              const reply = text ? (parseReply(text) as unknown as Partial<TraceReply>) : undefined;
              finish(reply?.ok ? { ok: true, summary: reply.summary, modelId: reply.modelId } : { ok: true });
              return true;
            }
            const errFile = `${out}.error.json`;
            if (await exists(errFile)) {
              const text = await fs.readFile(errFile, "utf8").catch(() => "");
              void fs.rm(errFile, { force: true }).catch(() => undefined);
              const reply = parseReply(text);
              finish(reply.ok ? { ok: false, kind: "internal", error: "the next-call trace failed" } : reply);
              return true;
            }
            return false;
          };
          const timer = setInterval(() => void check(), 250);
          subs.push(
            token.onCancellationRequested(() => {
              // Disarm if the program is paused now; else the hook fires once and its file is unused.
              const item = vscode.debug.activeStackItem;
              if (item?.session.id === session.id && "frameId" in item) {
                void new DebugBridge({ session, frameId: item.frameId }, this.deps.debugPy, this.log).request({ op: "disarm", out });
              }
              finish(undefined);
            }),
            vscode.debug.onDidTerminateDebugSession((s) => {
              if (s.id !== session.id) return;
              void check().then((found) => {
                if (found) return;
                void showInformation(`torchscope: the debug session ended before ${name} ran again; no graph.`);
                finish(undefined);
              });
            }),
            vscode.debug.onDidChangeActiveStackItem((item) => {
              // Stopped again in this session and still no file here: the debuggee may be remote.
              if (!item || item.session.id !== session.id || !("frameId" in item)) return;
              void (async () => {
                if (await check()) return;
                const remote = new DebugBridge({ session, frameId: item.frameId }, this.deps.debugPy, this.log);
                const p = await remote.request<PollReply | TraceReply>({ op: "poll", out });
                if (!p.ok) return;
                if (!("done" in p) || !p.done) return;
                const t = p as TraceReply;
                try {
                  await remote.fetchGraph(t.path ?? remotePath, out);
                  finish({ ok: true, summary: t.summary, modelId: t.modelId });
                } catch (e) {
                  finish(e instanceof DebugError ? e.reply : { ok: false, kind: "internal", error: String(e) });
                }
              })();
            }),
          );
          void check();
        }),
    );
  }
}

/** The entry's error (or ours) as a message with a way forward. */
export function reportDebugError(r: ErrorReply, log: vscode.LogOutputChannel): void {
  const details = (): void => {
    if (r.traceback) log.error(`${r.error}\n${r.traceback}`);
    log.show(true);
  };
  const withDetails = (message: string): void => void showError(message, "Show Details").then((c) => c && details());
  if (r.traceback) log.error(`debug ${r.kind}: ${r.error}\n${r.traceback}`);
  else log.error(`debug ${r.kind}: ${r.error}`);
  switch (r.kind) {
    case "cancelled":
      log.info("debug: trace cancelled");
      return;
    case "no-torch":
      void showError(`torchscope: the debugged program has no torch: ${r.error}`);
      return;
    case "no-msgpack":
      withDetails(`torchscope: ${r.error} (install msgpack in the debugged program's environment).`);
      return;
    case "import-error":
      withDetails(`torchscope: the tracer does not load in the debugged Python: ${r.error}`);
      return;
    case "no-frame":
      void showError(`torchscope: ${r.error} Select a frame in the Call Stack and try again.`);
      return;
    case "timeout":
      void showError(`torchscope: ${r.error}`, "Change Time Limit").then((c) => c && openSettingInUse("torchscope.traceTimeoutSeconds"));
      return;
    case "target-error":
    case "needs-input":
      void showError(`torchscope: ${r.error}`);
      return;
    case "evaluate-failed":
      void showError(`torchscope: the debugger refused the request (${r.error}). Is the program still paused?`);
      return;
    case "bad-reply":
      withDetails(
        helperMissing(r)
          ? "torchscope: the debugged program can't load torchscope's helper, neither from the extension's folder nor from the sources sent to it."
          : `torchscope: ${r.error}`,
      );
      return;
    default: // bad-request, internal, and any kind added later
      withDetails(`torchscope: ${r.error}`);
  }
}

/** Paused-frame panels and the paused frame itself: re-traced in the frame paused now. */
export class PausedSources implements SourceKind {
  constructor(readonly deps: PausedDeps) {}

  /** The debug entry on the paused `frame`. */
  bridge(frame: PausedFrame): DebugBridge {
    return new DebugBridge(frame, this.deps.debugPy, this.deps.log);
  }

  /** `expr` in the paused frame of `bridge`; `label` names it until the trace does; `guess`:
   * an input expression to offer when none is known. */
  source(bridge: DebugBridge, expr: string, label: string, guess?: string): PausedSource {
    return new PausedSource(this.deps, bridge, expr, label, guess);
  }

  owns(origin: PanelOrigin): boolean {
    return origin.uri === DEBUG_URI;
  }

  /** Quietly (on save): never, the program may be running. Else the frame paused now. */
  async reopen(origin: PanelOrigin, quiet: boolean): Promise<TraceSource | undefined> {
    if (quiet) return undefined;
    const frame = await this.pausedFrame();
    return frame && this.source(this.bridge(frame), origin.target, origin.target);
  }

  /** The frame selected in the Call Stack of a paused Python session, or a message why not. */
  async pausedFrame(sessionId?: string): Promise<PausedFrame | undefined> {
    const item = vscode.debug.activeStackItem;
    const active = vscode.debug.activeDebugSession;
    const session = sessionId
      ? item?.session.id === sessionId
        ? item.session
        : active?.id === sessionId
          ? active
          : undefined
      : (item?.session ?? active);
    if (!session) {
      void showInformation(
        "torchscope: start debugging a Python program and stop at a breakpoint first, then run “Visualize forward pass (paused frame)”.",
      );
      return undefined;
    }
    if (!PYTHON_DEBUG_TYPES.includes(session.type)) {
      void showInformation(
        `torchscope: “${session.name}” is a ${session.type} debug session; tracing at a breakpoint needs a Python (debugpy) session. For a model in a file, use “Visualize forward pass” in the editor.`,
      );
      return undefined;
    }
    if (item && item.session.id === session.id) {
      if ("frameId" in item) return { session, frameId: item.frameId };
      // A thread is selected: its top frame.
      try {
        const st = (await session.customRequest("stackTrace", { threadId: item.threadId, startFrame: 0, levels: 1 })) as {
          stackFrames?: { id: number }[];
        };
        const id = st.stackFrames?.[0]?.id;
        if (id !== undefined) return { session, frameId: id };
      } catch (e) {
        this.deps.log.info(`debug: stackTrace of thread ${item.threadId}: ${String(e)}`);
      }
    }
    void showInformation("torchscope: the program is running; pause it (or stop at a breakpoint) and select a frame in the Call Stack first.");
    return undefined;
  }
}
