// Tracing at a breakpoint: "Visualize forward pass (paused frame)" from the palette and
// "Visualize forward pass" on a variable in the Variables view, while a Python (debugpy)
// session is paused. Candidates → quick pick → trace (cancellable: a cancel file) → the
// graph panel; an unknown input → an expression typed by the user, or trace the next call
// (a one-shot hook; the graph appears when the program runs the model). The session is
// only ever sent evaluates: it goes on untouched. Protocol: docs/debugging.md.
import * as crypto from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import * as vscode from "vscode";
import type { Bundle } from "./client";
import {
  DebugBridge, DebugError, PYTHON_DEBUG_TYPES, candidateItems, exists, helperMissing, modelName, parseReply,
  type ArmedReply, type Candidate, type CandidatesReply, type ErrorReply, type PausedFrame, type PollReply, type TraceReply,
} from "./debugBridge";
import { saveAs } from "./export";
import { GraphPanel, type PanelEvents } from "./graphPanel";
import { revealLine, revealSite } from "./reveal";

export interface DebugDeps {
  context: vscode.ExtensionContext;
  bundle: Bundle;
  log: vscode.LogOutputChannel;
}

/** Panels of debug traces: not a document (a re-trace needs the paused program). */
export const DEBUG_URI = "torchscope-debug:paused-frame";
export const RETRACE_PAUSED = "torchscope.retracePausedFrame";

/** What the Variables view passes to a `debug/variables/context` command. */
export interface VariableMenuArg {
  sessionId?: string;
  container?: unknown;
  variable?: { name?: string; evaluateName?: string; value?: string; variablesReference?: number };
}

/** The expression of a Variables-view variable, if it has one. */
export function variableExpression(arg: unknown): { expr: string; name: string } | undefined {
  const v = (arg as VariableMenuArg | undefined)?.variable;
  const expr = typeof v?.evaluateName === "string" ? v.evaluateName.trim() : "";
  return expr ? { expr, name: v?.name || expr } : undefined;
}

type Outcome = "shown" | "needs-input" | "failed";

export class DebugCommands {
  private readonly viewerDir: vscode.Uri;
  private readonly events: PanelEvents;
  private readonly debugPy: string;
  private readonly graphsDir: string;

  constructor(private readonly deps: DebugDeps) {
    this.viewerDir = vscode.Uri.file(deps.bundle.viewerDir);
    this.debugPy = path.join(deps.bundle.toolDir, "torchscope", "debug.py");
    this.graphsDir = path.join(deps.context.globalStorageUri.fsPath, "graphs");
    this.events = {
      reveal: (site, panel) => void revealSite(site, panel),
      save: (name, mime, data) => void saveAs(name, mime, data),
      retrace: (panel) => void this.retracePaused(panel.origin.target),
      log: deps.log,
    };
  }

  register(): vscode.Disposable[] {
    const cmd = vscode.commands.registerCommand;
    return [
      cmd("torchscope.visualizePausedFrame", () => this.visualizePausedFrame()),
      cmd("torchscope.visualizeVariable", (arg?: unknown) => this.visualizeVariable(arg)),
      // internal (not in the palette): Re-trace / Change Input… of a paused-frame panel
      cmd(RETRACE_PAUSED, (expr?: unknown, changeInput?: unknown) =>
        this.retracePaused(typeof expr === "string" ? expr : "", changeInput === true),
      ),
    ];
  }

  /** Trace a paused-frame panel's model again in the frame paused now (optionally with a new input). */
  async retracePaused(expr: string, changeInput = false): Promise<void> {
    if (!expr) return;
    const frame = await this.pausedFrame();
    if (!frame) return;
    const bridge = new DebugBridge(frame, this.debugPy, this.log);
    let input: string | undefined;
    if (changeInput) {
      const answer = await this.askInput(expr);
      if (!answer) return;
      if (answer === "next-call") return this.traceNextCall(bridge, expr, expr);
      input = answer.input;
    }
    await this.traceFlow(bridge, expr, expr, undefined, input);
  }

  private get log(): vscode.LogOutputChannel {
    return this.deps.log;
  }

  // ---- the commands ------------------------------------------------------------------

  /** Palette: the modules of the selected frame, likeliest first → trace the one picked. */
  async visualizePausedFrame(): Promise<void> {
    const frame = await this.pausedFrame();
    if (!frame) return;
    const bridge = new DebugBridge(frame, this.debugPy, this.log);
    const t0 = Date.now();
    const r = await bridge.request<CandidatesReply>({ op: "candidates" });
    if (!r.ok) return this.report(r);
    this.log.info(`debug: ${r.modules.length} candidates (${r.more} more) in ${Date.now() - t0} ms`);
    if (!r.modules.length) {
      const c = await vscode.window.showInformationMessage(
        "torchscope: no nn.Module is reachable from the selected frame. Select another frame in the Call Stack, or type an expression for the model.",
        "Enter an Expression…",
      );
      if (!c) return;
      const expr = await vscode.window.showInputBox({ title: "Model to trace", prompt: "An expression evaluated in the paused frame", placeHolder: "self.model", ignoreFocusOut: true });
      if (expr?.trim()) await this.traceFlow(bridge, expr.trim(), expr.trim(), undefined);
      return;
    }
    // While the user reads the list: the tracer's imports (a few hundred ms the first time).
    void bridge.request({ op: "warm" });
    const items = candidateItems(r.modules);
    // The likeliest model's panel opens now (focus stays in the quick pick): the viewer
    // boots while the user picks. Another choice, or none, closes it again.
    const first = r.modules[0]!;
    const warm = GraphPanel.find(DEBUG_URI, first.expr)
      ? undefined
      : GraphPanel.createOrShow(this.viewerDir, { uri: DEBUG_URI, target: first.expr, title: `Forward pass: ${first.cls}` }, this.events);
    const pick = await vscode.window.showQuickPick(items, {
      title: "Visualize forward pass (paused frame)",
      placeHolder: r.more ? `Pick a model (${r.more} more not listed: right-click one in the Variables view)` : "Pick a model",
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!pick || pick.candidate.expr !== first.expr) warm?.dispose();
    if (!pick) return;
    await this.traceFlow(bridge, pick.candidate.expr, pick.candidate.name, pick.candidate, undefined, warm);
  }

  /** Variables view: right-click a variable holding a module. */
  async visualizeVariable(arg?: unknown): Promise<void> {
    const v = variableExpression(arg);
    if (!v) {
      void vscode.window.showInformationMessage("torchscope: this variable has no expression to evaluate; use “Visualize forward pass (paused frame)” from the palette.");
      return;
    }
    const frame = await this.pausedFrame((arg as VariableMenuArg | undefined)?.sessionId);
    if (!frame) return;
    await this.traceFlow(new DebugBridge(frame, this.debugPy, this.log), v.expr, v.name, undefined);
  }

  // ---- the paused frame ----------------------------------------------------------------

  /** The frame selected in the Call Stack of a paused Python session, or a message why not. */
  async pausedFrame(sessionId?: string): Promise<PausedFrame | undefined> {
    const item = vscode.debug.activeStackItem;
    const active = vscode.debug.activeDebugSession;
    const session = sessionId ? (item?.session.id === sessionId ? item.session : active?.id === sessionId ? active : undefined) : (item?.session ?? active);
    if (!session) {
      void vscode.window.showInformationMessage("torchscope: start debugging a Python program and stop at a breakpoint first, then run “Visualize forward pass (paused frame)”.");
      return undefined;
    }
    if (!PYTHON_DEBUG_TYPES.includes(session.type)) {
      void vscode.window.showInformationMessage(
        `torchscope: “${session.name}” is a ${session.type} debug session; tracing at a breakpoint needs a Python (debugpy) session. For a model in a file, use “Visualize forward pass” in the editor.`,
      );
      return undefined;
    }
    if (item && item.session.id === session.id) {
      if ("frameId" in item) return { session, frameId: item.frameId };
      // A thread is selected: its top frame.
      try {
        const st = (await session.customRequest("stackTrace", { threadId: item.threadId, startFrame: 0, levels: 1 })) as { stackFrames?: { id: number }[] };
        const id = st.stackFrames?.[0]?.id;
        if (id !== undefined) return { session, frameId: id };
      } catch (e) {
        this.log.info(`debug: stackTrace of thread ${item.threadId}: ${String(e)}`);
      }
    }
    void vscode.window.showInformationMessage("torchscope: the program is running; pause it (or stop at a breakpoint) and select a frame in the Call Stack first.");
    return undefined;
  }

  // ---- tracing -------------------------------------------------------------------------

  private newOut(): string {
    return path.join(this.graphsDir, `debug-${Date.now()}-${crypto.randomBytes(4).toString("hex")}.msgpack`);
  }

  private timeBudget(): number {
    const t = vscode.workspace.getConfiguration("torchscope").get<number>("traceTimeoutSeconds", 60);
    return typeof t === "number" && t > 0 ? t : 60;
  }

  /** Trace `expr`, asking for an input (or arming the next call) when the debuggee has none. */
  private async traceFlow(bridge: DebugBridge, expr: string, label: string, candidate: Candidate | undefined, input?: string, warm?: GraphPanel): Promise<void> {
    let askFirst = candidate !== undefined && !candidate.inputs && !input;
    for (let attempt = 0; attempt < 4; attempt++) {
      if (askFirst) {
        const answer = await this.askInput(label, input);
        if (!answer || answer === "next-call") warm?.dispose();
        if (!answer) return;
        if (answer === "next-call") return this.traceNextCall(bridge, expr, label);
        input = answer.input;
      }
      const outcome = await this.traceOnce(bridge, expr, label, input, warm);
      warm = undefined;
      if (outcome !== "needs-input") return;
      askFirst = true;
    }
  }

  /** Type an input expression, or trace the next call. */
  private async askInput(label: string, previous?: string): Promise<{ input: string } | "next-call" | undefined> {
    const items: (vscode.QuickPickItem & { id: "type" | "next" })[] = [
      { id: "type", label: "$(edit) Type an input expression…", detail: "Evaluated in the paused frame: x[:2], batch[\"pixel_values\"], torch.randn(1, 3, 224, 224)" },
      { id: "next", label: "$(debug-continue) Trace the next call", detail: "Continue the program; the graph appears when it next runs the model, with its real inputs" },
    ];
    const pick = await vscode.window.showQuickPick(items, { title: `No input found for ${label}`, placeHolder: "How should torchscope get the model's input?" });
    if (!pick) return undefined;
    if (pick.id === "next") return "next-call";
    const value = await vscode.window.showInputBox({
      title: `Input for ${label}`,
      prompt: "An expression evaluated in the paused frame (a tuple → positional arguments, a dict → keywords)",
      placeHolder: "torch.randn(1, 3, 224, 224)",
      value: previous,
      ignoreFocusOut: true,
    });
    return value?.trim() ? { input: value.trim() } : undefined;
  }

  /** `opened`: a panel opened for this trace beforehand (closed again if the trace fails). */
  private async traceOnce(bridge: DebugBridge, expr: string, label: string, input: string | undefined, opened?: GraphPanel): Promise<Outcome> {
    const out = this.newOut();
    const cancelFile = `${out}.cancel`;
    await fs.mkdir(this.graphsDir, { recursive: true });
    // Open the panel right away: the viewer boots while the model is traced.
    const found = GraphPanel.find(DEBUG_URI, expr);
    const existed = found && found !== opened;
    const panel = GraphPanel.createOrShow(this.viewerDir, { uri: DEBUG_URI, target: expr, title: `Forward pass: ${label}` }, this.events);
    const t0 = Date.now();
    let fetched = 0;
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `torchscope: tracing ${label} in the paused program`, cancellable: true },
      async (progress, token) => {
        const sub = token.onCancellationRequested(() => {
          this.log.info(`debug: cancel requested (${cancelFile})`);
          void fs.writeFile(cancelFile, "cancel").catch(() => undefined);
        });
        try {
          const req = { op: "trace" as const, expr, out, timeBudget: this.timeBudget(), cancelFile, ...(input ? { input } : {}) };
          const r = await bridge.request<TraceReply>(req);
          if (!r.ok) return r;
          const t1 = Date.now();
          const how = await bridge.fetchGraph(r.path, out, (done, total) =>
            progress.report({ message: `reading the graph from the debuggee: ${Math.round((100 * done) / Math.max(1, total))}%` }),
          );
          if (how === "fetched") fetched = Date.now() - t1;
          return r;
        } catch (e) {
          return e instanceof DebugError ? e.reply : ({ ok: false, kind: "internal", error: String(e) } satisfies ErrorReply);
        } finally {
          sub.dispose();
          void fs.rm(cancelFile, { force: true }).catch(() => undefined);
        }
      },
    );
    if (!result.ok) {
      if (!existed) panel.dispose();
      if (result.kind === "needs-input") return "needs-input";
      this.report(result);
      return "failed";
    }
    const s = result.summary;
    this.log.info(
      `debug: traced ${expr}: ${s.nodes} nodes, ${s.ops} ops in ${s.trace_ms} ms (evaluate ${result.elapsed_ms ?? "?"} ms in the debuggee, ` +
        `request ${Date.now() - t0} ms${fetched ? `, of which read_chunk ${fetched} ms` : ""}, ${result.size} bytes); input ${s.input}`,
    );
    if (result.output) this.log.info(`debug: the forward printed:\n${result.output}`);
    if (result.warning) this.log.warn(`debug: ${result.warning}`);
    await this.show(panel, bridge, expr, label, out, s);
    return "shown";
  }

  private async show(panel: GraphPanel, bridge: DebugBridge, expr: string, label: string, file: string, summary: TraceReply["summary"] | undefined): Promise<void> {
    const name = modelName(summary, label);
    panel.origin = { ...panel.origin, title: `Forward pass: ${name}` };
    panel.panel.title = `Forward pass: ${name}`;
    try {
      await panel.load(file);
    } catch (e) {
      void vscode.window.showErrorMessage(`torchscope: can't read the graph file ${file}: ${String(e)}`);
      return;
    }
    const err = summary?.error;
    if (!err) return;
    // The graph stops at the failing call; show the line that raised beside it.
    if (err.file && err.line) void revealLine(err.file, err.line, panel, true);
    const buttons = err.file && err.line ? ["Go to Line", "Change Input…"] : ["Change Input…"];
    void vscode.window.showWarningMessage(`torchscope: ${name} raised ${err.type}: ${err.message}`, ...buttons).then(async (c) => {
      if (c === "Go to Line" && err.file && err.line) void revealLine(err.file, err.line, panel);
      else if (c === "Change Input…") {
        const answer = await this.askInput(label);
        if (answer === "next-call") await this.traceNextCall(bridge, expr, label);
        else if (answer) await this.traceFlow(bridge, expr, label, undefined, answer.input);
      }
    });
  }

  // ---- the next call -------------------------------------------------------------------

  /** Arm the one-shot hook; tell the user to continue; show the graph when the file appears. */
  async traceNextCall(bridge: DebugBridge, expr: string, label: string): Promise<void> {
    const out = this.newOut();
    await fs.mkdir(this.graphsDir, { recursive: true });
    const r = await bridge.request<ArmedReply>({ op: "trace_next_call", expr, out, timeBudget: this.timeBudget() });
    if (!r.ok) return this.report(r);
    const name = r.model || label;
    this.log.info(`debug: armed the next call of ${expr} (${name}) → ${out}`);
    void vscode.window
      .showInformationMessage(`torchscope: continue the program; the graph of ${name} appears when it next runs.`, "Continue")
      .then((c) => c && vscode.commands.executeCommand("workbench.action.debug.continue"));
    const got = await this.waitForNextCall(bridge, out, r.path, name);
    if (!got) return;
    if (!got.ok) return this.report(got);
    const panel = GraphPanel.createOrShow(this.viewerDir, { uri: DEBUG_URI, target: expr, title: `Forward pass: ${name}` }, this.events);
    await this.show(panel, bridge, expr, name, out, got.summary ?? undefined);
  }

  /**
   * Until the file (or `<out>.error.json`) appears here, the session ends or the user gives
   * up. When the program stops again and the file is not here (remote), ask with `poll`.
   */
  private waitForNextCall(bridge: DebugBridge, out: string, remotePath: string, name: string): Thenable<(ErrorReply | { ok: true; summary?: TraceReply["summary"] }) | undefined> {
    const session = bridge.frame.session;
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `torchscope: waiting for the next call of ${name}…`, cancellable: true },
      (_progress, token) =>
        new Promise((resolve) => {
          let done = false;
          const subs: vscode.Disposable[] = [];
          const finish = (v: (ErrorReply | { ok: true; summary?: TraceReply["summary"] }) | undefined): void => {
            if (done) return;
            done = true;
            clearInterval(timer);
            for (const s of subs) s.dispose();
            resolve(v);
          };
          const check = async (): Promise<boolean> => {
            if (await exists(out)) {
              finish({ ok: true });
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
                void new DebugBridge({ session, frameId: item.frameId }, this.debugPy, this.log).request({ op: "disarm", out });
              }
              finish(undefined);
            }),
            vscode.debug.onDidTerminateDebugSession((s) => {
              if (s.id !== session.id) return;
              void check().then((found) => {
                if (found) return;
                void vscode.window.showInformationMessage(`torchscope: the debug session ended before ${name} ran again; no graph.`);
                finish(undefined);
              });
            }),
            vscode.debug.onDidChangeActiveStackItem((item) => {
              // Stopped again in this session and still no file here: the debuggee may be remote.
              if (!item || item.session.id !== session.id || !("frameId" in item)) return;
              void (async () => {
                if (await check()) return;
                const remote = new DebugBridge({ session, frameId: item.frameId }, this.debugPy, this.log);
                const p = await remote.request<PollReply | TraceReply>({ op: "poll", out });
                if (!p.ok) return;
                if (!("done" in p) || !p.done) return;
                const t = p as TraceReply;
                try {
                  await remote.fetchGraph(t.path ?? remotePath, out);
                  finish({ ok: true, summary: t.summary });
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

  // ---- errors --------------------------------------------------------------------------

  private report(r: ErrorReply): void {
    const log = this.log;
    const details = (): void => {
      if (r.traceback) log.error(`${r.error}\n${r.traceback}`);
      log.show(true);
    };
    const withDetails = (message: string): void =>
      void vscode.window.showErrorMessage(message, "Show Details").then((c) => c && details());
    if (r.traceback) log.error(`debug ${r.kind}: ${r.error}\n${r.traceback}`);
    else log.error(`debug ${r.kind}: ${r.error}`);
    switch (r.kind) {
      case "cancelled":
        log.info("debug: trace cancelled");
        return;
      case "no-torch":
        void vscode.window.showErrorMessage(`torchscope: the debugged program has no torch: ${r.error}`);
        return;
      case "no-msgpack":
        return withDetails(`torchscope: ${r.error} (install msgpack in the debugged program's environment).`);
      case "import-error":
        return withDetails(`torchscope: the tracer does not load in the debugged Python: ${r.error}`);
      case "no-frame":
        void vscode.window.showErrorMessage(`torchscope: ${r.error} Select a frame in the Call Stack and try again.`);
        return;
      case "timeout":
        void vscode.window
          .showErrorMessage(`torchscope: ${r.error}`, "Change Time Limit")
          .then((c) => c && vscode.commands.executeCommand("workbench.action.openSettings", "torchscope.traceTimeoutSeconds"));
        return;
      case "target-error":
      case "needs-input":
        void vscode.window.showErrorMessage(`torchscope: ${r.error}`);
        return;
      case "evaluate-failed":
        void vscode.window.showErrorMessage(`torchscope: the debugger refused the request (${r.error}). Is the program still paused?`);
        return;
      case "bad-reply":
        return withDetails(
          helperMissing(r)
            ? "torchscope: the debugged program can't load torchscope's helper, neither from the extension's folder nor from the sources sent to it."
            : `torchscope: ${r.error}`,
        );
      case "bad-request":
      case "internal":
      default:
        return withDetails(`torchscope: ${r.error}`);
    }
  }
}
