// The user's commands: visualize (find the target at the cursor, trace it with a
// cancellable progress notification, show the panel), re-trace, export, and the ways
// forward when a trace can't run (ask for an input or constructor arguments and
// remember the answer, pick another interpreter, show the import error).
import * as path from "node:path";
import * as vscode from "vscode";
import { REQUEST_CANCELLED, type Bundle, type Server } from "./client";
import { saveAs, standaloneHtmlFromBundle } from "./export";
import { GraphPanel, type PanelEvents } from "./graphPanel";
import { pickInterpreter } from "./interpreter";
import {
  TORCHSCOPE_ERROR, isErrorData, panelTitle, targetKey,
  type NodeContext, type PanelOrigin, type TargetAtResult, type TraceParams, type TraceResult, type VisualizeArgs,
} from "./protocol";
import { DEBUG_URI, RETRACE_PAUSED } from "./debugCommands";
import { revealLine, revealSite } from "./reveal";

// ---- pure parts (unit-tested) ------------------------------------------------------------

export type Failure =
  | { kind: "cancelled" }
  | { kind: "needs-input"; message: string }
  | { kind: "needs-ctor-args"; message: string }
  | { kind: "no-torch"; message: string; python: string }
  | { kind: "import-error"; message: string; details: string }
  | { kind: "timeout"; message: string }
  | { kind: "runner-crashed"; message: string; details: string }
  | { kind: "target-error"; message: string }
  | { kind: "other"; message: string };

/** What went wrong with a trace request, from the error the client threw. */
export function classifyFailure(e: unknown): Failure {
  const err = e as { code?: unknown; message?: unknown; data?: unknown; name?: unknown } | undefined;
  const message = typeof err?.message === "string" ? err.message : String(e);
  if (err?.code === REQUEST_CANCELLED || err?.name === "Canceled" || message === "Canceled") return { kind: "cancelled" };
  if (err?.code !== TORCHSCOPE_ERROR || !isErrorData(err.data)) return { kind: "other", message };
  const d = err.data;
  switch (d.kind) {
    case "needs-input": return { kind: "needs-input", message };
    case "target-error": return d.needsCtorArgs ? { kind: "needs-ctor-args", message } : { kind: "target-error", message };
    case "no-torch": return { kind: "no-torch", message, python: d.details ?? "" };
    case "import-error": return { kind: "import-error", message, details: d.details ?? "" };
    case "timeout": return { kind: "timeout", message };
    case "runner-crashed": return { kind: "runner-crashed", message, details: d.details ?? "" };
  }
  return { kind: "other", message };
}

/** The CodeLens / test argument, if the command got one. */
export function visualizeArgs(arg: unknown): VisualizeArgs | undefined {
  const a = arg as Partial<VisualizeArgs> | undefined;
  return a && typeof a.uri === "string" && typeof a.target === "string" ? { uri: a.uri, target: a.target } : undefined;
}

export interface Answers {
  input?: string;
  ctorArgs?: string;
}

/** Answers the user typed, remembered per (document, target) for the workspace. */
export class AnswerStore {
  static readonly KEY = "torchscope.answers";
  constructor(private readonly memento: Pick<vscode.Memento, "get" | "update">) {}

  get(uri: string, target: string): Answers {
    return this.memento.get<Record<string, Answers>>(AnswerStore.KEY, {})[targetKey(uri, target)] ?? {};
  }

  async set(uri: string, target: string, answers: Answers): Promise<void> {
    const all = { ...this.memento.get<Record<string, Answers>>(AnswerStore.KEY, {}) };
    const merged = { ...all[targetKey(uri, target)], ...answers };
    for (const k of Object.keys(merged) as (keyof Answers)[]) if (!merged[k]) delete merged[k];
    all[targetKey(uri, target)] = merged;
    await this.memento.update(AnswerStore.KEY, all);
  }
}

export function traceParams(uri: string, text: string | undefined, target: string, answers: Answers): TraceParams {
  const p: TraceParams = { uri, target };
  if (text !== undefined) p.text = text;
  if (answers.input) p.input = answers.input;
  if (answers.ctorArgs) p.ctorArgs = answers.ctorArgs;
  return p;
}

const NO_TARGET =
  "torchscope: put the cursor inside an nn.Module class, on a variable assigned from one, or in a function that builds a model.";

// ---- the commands ------------------------------------------------------------------------

export interface CommandDeps {
  context: vscode.ExtensionContext;
  client: Server;
  bundle: Bundle;
  log: vscode.LogOutputChannel;
}

interface TraceOptions {
  /** Show a cancellable notification (a user's command) or only a status-bar spinner (on save). */
  quiet?: boolean;
}

export class Commands {
  private readonly answers: AnswerStore;
  private readonly viewerDir: vscode.Uri;
  readonly events: PanelEvents;

  constructor(private readonly deps: CommandDeps) {
    this.answers = new AnswerStore(deps.context.workspaceState);
    this.viewerDir = vscode.Uri.file(deps.bundle.viewerDir);
    this.events = {
      reveal: (site, panel) => void revealSite(site, panel),
      save: (name, mime, data) => void saveAs(name, mime, data),
      retrace: (panel) => void this.retracePanel(panel),
      log: deps.log,
    };
  }

  register(): vscode.Disposable[] {
    const cmd = vscode.commands.registerCommand;
    return [
      cmd("torchscope.visualize", (arg?: unknown) => this.visualize(arg)),
      cmd("torchscope.retrace", () => this.retrace()),
      cmd("torchscope.export", (format?: unknown) => this.export(format)),
      cmd("torchscope.openGraph", (file?: unknown) => this.openGraph(file)),
      cmd("torchscope.goToDefinition", (ctx?: NodeContext) => this.goToDefinition(ctx)),
      cmd("torchscope.goToCallSite", (ctx?: NodeContext) => this.goToCallSite(ctx)),
      cmd("torchscope.changeInput", () => this.changeInput()),
      cmd("torchscope.restartServer", () => this.deps.client.restart()),
      cmd("torchscope.showLog", () => this.deps.log.show()),
      vscode.workspace.onDidSaveTextDocument((doc) => this.onSave(doc)),
      vscode.window.registerWebviewPanelSerializer(GraphPanel.viewType, {
        deserializeWebviewPanel: async (panel, state) => void (await GraphPanel.revive(panel, state, this.viewerDir, this.events)),
      }),
    ];
  }

  /** Right-click, palette or CodeLens: trace the model at the cursor (or the one named). */
  async visualize(arg?: unknown): Promise<TraceResult | undefined> {
    const named = visualizeArgs(arg);
    const doc = named ? await vscode.workspace.openTextDocument(vscode.Uri.parse(named.uri)) : vscode.window.activeTextEditor?.document;
    if (!doc || doc.languageId !== "python") {
      void vscode.window.showInformationMessage("torchscope: open a Python file with a model first.");
      return undefined;
    }
    let target = named?.target;
    if (!target) {
      const editor = vscode.window.activeTextEditor!;
      const t0 = Date.now();
      const found = await this.targetAt(doc, editor.selection.active);
      if (found && found !== "failed") this.deps.log.info(`target ${found.target} (${found.kind}) at the cursor, found in ${Date.now() - t0} ms`);
      if (found === "failed") return undefined;
      if (!found) {
        void vscode.window.showInformationMessage(NO_TARGET);
        return undefined;
      }
      target = found.target;
    }
    return this.trace(doc, target);
  }

  private async targetAt(doc: vscode.TextDocument, pos: vscode.Position): Promise<TargetAtResult | null | "failed"> {
    try {
      return await this.deps.client.targetAt({
        uri: doc.uri.toString(),
        position: { line: pos.line, character: pos.character },
        text: doc.getText(),
      });
    } catch (e) {
      this.serverFailed(e);
      return "failed";
    }
  }

  private serverFailed(e: unknown): void {
    const python = this.deps.client.python?.path ?? "python3";
    this.deps.log.error(`language server: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    void vscode.window
      .showErrorMessage(`torchscope: the language server did not start with ${python}.`, "Select Interpreter", "Show Log")
      .then((c) => (c === "Select Interpreter" ? pickInterpreter() : c === "Show Log" ? this.deps.log.show() : undefined));
  }

  /** Trace `target` in `doc` (asking for inputs as needed) and show the graph. */
  async trace(doc: vscode.TextDocument, target: string, opts: TraceOptions = {}): Promise<TraceResult | undefined> {
    const uri = doc.uri.toString();
    // Open a new panel right away: the viewer boots while the model is traced.
    const opened = opts.quiet || GraphPanel.find(uri, target)
      ? undefined
      : GraphPanel.createOrShow(this.viewerDir, { uri, target, title: panelTitle(null, target) }, this.events);
    const result = await this.traceLoop(doc, target, opts);
    if (!result) opened?.dispose();
    return result;
  }

  private async traceLoop(doc: vscode.TextDocument, target: string, opts: TraceOptions): Promise<TraceResult | undefined> {
    const uri = doc.uri.toString();
    for (let attempt = 0; attempt < 4; attempt++) {
      const answers = this.answers.get(uri, target);
      const t0 = Date.now();
      let result: TraceResult;
      try {
        result = await this.request(doc, target, answers, opts);
      } catch (e) {
        const f = classifyFailure(e);
        if (f.kind === "needs-input" || f.kind === "needs-ctor-args") {
          if (opts.quiet) return undefined;
          if (await this.ask(f.kind, uri, target, f.message)) continue;
          return undefined;
        }
        this.report(f);
        return undefined;
      }
      this.deps.log.info(
        `traced ${target}: ${result.summary.nodes} nodes, ${result.summary.ops} ops in ${result.summary.trace_ms} ms ` +
          `(request ${Date.now() - t0} ms); input ${result.summary.input}`,
      );
      await this.show(uri, target, result);
      return result;
    }
    return undefined;
  }

  private request(doc: vscode.TextDocument, target: string, answers: Answers, opts: TraceOptions): Thenable<TraceResult> {
    const params = traceParams(doc.uri.toString(), doc.getText(), target, answers);
    const location = opts.quiet ? vscode.ProgressLocation.Window : vscode.ProgressLocation.Notification;
    return vscode.window.withProgress({ location, title: `Tracing ${target}`, cancellable: !opts.quiet }, (progress, cancel) =>
      this.deps.client.trace(params, cancel, (message) => progress.report({ message })),
    );
  }

  /** Ask for an input expression or constructor arguments; remember the answer. */
  private async ask(kind: "needs-input" | "needs-ctor-args", uri: string, target: string, message: string): Promise<boolean> {
    const prev = this.answers.get(uri, target);
    const isInput = kind === "needs-input";
    const value = await vscode.window.showInputBox({
      title: isInput ? `Input for ${target}` : `Constructor arguments for ${target}`,
      prompt: message || (isInput ? "An expression for the forward's input" : "Arguments for the constructor"),
      placeHolder: isInput ? "torch.randn(1, 3, 224, 224)   (a tuple → positional, a dict → keywords)" : "10, hidden=64",
      value: isInput ? prev.input : prev.ctorArgs,
      ignoreFocusOut: true,
    });
    if (!value?.trim()) return false;
    await this.answers.set(uri, target, isInput ? { input: value.trim() } : { ctorArgs: value.trim() });
    return true;
  }

  private report(f: Failure): void {
    const log = this.deps.log;
    switch (f.kind) {
      case "cancelled":
        log.info("trace cancelled");
        return;
      case "no-torch": {
        const hasPython = !!vscode.extensions.getExtension("ms-python.python");
        const buttons = hasPython ? ["Select Interpreter", "Set torchscope.pythonPath"] : ["Set torchscope.pythonPath"];
        void vscode.window
          .showErrorMessage(`torchscope: ${f.message || `torch is not installed in ${f.python}`}`, ...buttons)
          .then((c) => {
            if (c === "Select Interpreter") void vscode.commands.executeCommand("python.setInterpreter");
            else if (c) void vscode.commands.executeCommand("workbench.action.openSettings", "torchscope.pythonPath");
          });
        return;
      }
      case "import-error":
      case "runner-crashed":
        log.error(`${f.message}\n${f.details}`);
        void vscode.window.showErrorMessage(`torchscope: ${f.message}`, "Show Details").then((c) => c && log.show(true));
        return;
      case "timeout":
        void vscode.window
          .showErrorMessage(`torchscope: ${f.message}`, "Change Time Limit")
          .then((c) => c && vscode.commands.executeCommand("workbench.action.openSettings", "torchscope.traceTimeoutSeconds"));
        return;
      case "target-error":
      case "needs-input":
      case "needs-ctor-args":
      case "other":
        log.error(f.message);
        void vscode.window.showErrorMessage(`torchscope: ${f.message}`);
        return;
    }
  }

  private async show(uri: string, target: string, result: TraceResult): Promise<GraphPanel> {
    const origin: PanelOrigin = { uri, target, title: panelTitle(result.summary, target), graphPath: result.path };
    const panel = GraphPanel.createOrShow(this.viewerDir, origin, this.events);
    await panel.load(result.path);
    const err = result.summary.error;
    if (err) {
      // The graph stops at the failing call; show the line that raised beside it.
      if (err.file && err.line) void revealLine(err.file, err.line, panel, true);
      const buttons = err.file && err.line ? ["Go to Line", "Change Input…"] : ["Change Input…"];
      void vscode.window
        .showWarningMessage(`torchscope: ${result.summary.model || target} raised ${err.type}: ${err.message}`, ...buttons)
        .then((c) => {
          if (c === "Go to Line" && err.file && err.line) void revealLine(err.file, err.line, panel);
          else if (c === "Change Input…") void this.changeInput(panel);
        });
    }
    return panel;
  }

  async retrace(): Promise<void> {
    const panel = GraphPanel.active;
    if (!panel) {
      void vscode.window.showInformationMessage("torchscope: no forward-pass panel to re-trace.");
      return;
    }
    await this.retracePanel(panel);
  }

  private async retracePanel(panel: GraphPanel, quiet = false): Promise<void> {
    if (panel.origin.uri === DEBUG_URI) {
      if (!quiet) await vscode.commands.executeCommand(RETRACE_PAUSED, panel.origin.target);
      return; // a paused-frame graph: traced again in the frame paused now
    }
    let doc: vscode.TextDocument;
    try {
      doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(panel.origin.uri));
    } catch {
      void vscode.window.showWarningMessage(`torchscope: ${panel.origin.uri} can't be opened any more.`);
      return;
    }
    if (doc.languageId !== "python") {
      void vscode.window.showInformationMessage("torchscope: this panel shows a graph file; there is no code to re-trace.");
      return;
    }
    await this.trace(doc, panel.origin.target, { quiet });
  }

  private onSave(doc: vscode.TextDocument): void {
    if (!vscode.workspace.getConfiguration("torchscope", doc.uri).get<boolean>("retraceOnSave", false)) return;
    for (const p of GraphPanel.all()) if (p.origin.uri === doc.uri.toString()) void this.retracePanel(p, true);
  }

  private async changeInput(panel = GraphPanel.active): Promise<void> {
    if (!panel) return;
    if (panel.origin.uri === DEBUG_URI) {
      await vscode.commands.executeCommand(RETRACE_PAUSED, panel.origin.target, true);
      return;
    }
    if (await this.ask("needs-input", panel.origin.uri, panel.origin.target, "")) await this.retracePanel(panel);
  }

  async export(format?: unknown): Promise<void> {
    const panel = GraphPanel.active;
    if (!panel) {
      void vscode.window.showInformationMessage("torchscope: open a forward-pass panel first.");
      return;
    }
    let kind = typeof format === "string" ? format.toLowerCase() : undefined;
    if (kind !== "svg" && kind !== "png" && kind !== "html") {
      const pick = await vscode.window.showQuickPick(
        [
          { label: "SVG", description: "vector image of the current view", format: "svg" },
          { label: "PNG", description: "bitmap of the current view", format: "png" },
          { label: "HTML", description: "standalone interactive page, works offline", format: "html" },
        ],
        { title: "Export forward-pass graph" },
      );
      kind = pick?.format;
    }
    if (kind === "svg" || kind === "png") panel.post({ type: "export", format: kind });
    else if (kind === "html" && panel.bytes) {
      const html = await standaloneHtmlFromBundle(panel.bytes, this.deps.bundle.viewerDir, panel.origin.title);
      // Named like the viewer's SVG and PNG: after the model's class.
      const model = panel.origin.title.replace(/^Forward pass: /, "") || panel.origin.target;
      const name = `${model.replace(/[^\w.-]+/g, "_")}.html`;
      await saveAs(name, "text/html", new TextEncoder().encode(html));
    }
  }

  /** Show a graph file written earlier (by the CLI, say) in a panel. */
  async openGraph(file?: unknown): Promise<GraphPanel | undefined> {
    let fsPath = typeof file === "string" ? file : file instanceof vscode.Uri ? file.fsPath : undefined;
    if (!fsPath) {
      const picked = await vscode.window.showOpenDialog({ filters: { "torchscope graph": ["msgpack"] }, canSelectMany: false });
      fsPath = picked?.[0]?.fsPath;
    }
    if (!fsPath) return undefined;
    const uri = vscode.Uri.file(fsPath).toString();
    const name = path.basename(fsPath).replace(/\.msgpack$/, "");
    const panel = GraphPanel.createOrShow(this.viewerDir, { uri, target: name, title: `Forward pass: ${name}`, graphPath: fsPath }, this.events);
    await panel.load(fsPath);
    return panel;
  }

  private async goToDefinition(ctx?: NodeContext): Promise<void> {
    if (ctx?.defnFile && ctx.defnLine) await revealLine(ctx.defnFile, ctx.defnLine, GraphPanel.active);
  }

  private async goToCallSite(ctx?: NodeContext): Promise<void> {
    if (ctx?.siteFile && ctx.siteLine) await revealLine(ctx.siteFile, ctx.siteLine, GraphPanel.active);
  }
}
