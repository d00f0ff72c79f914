// The trace source of a model in the editor: the language server traces it in a runner of the
// user's interpreter (docs/protocol.md). Asks for an input or constructor arguments when the
// server has none and remembers the answer per (document, target); the server's failures
// become messages with a way forward (pick another interpreter, show the import error, …).
import * as vscode from "vscode";
import { REQUEST_CANCELLED, type Server } from "./client";
import { TORCHSCOPE_ERROR, isErrorData, targetKey, type PanelOrigin, type TraceParams } from "./protocol";
import type { Answer, Missing, SourceKind, TraceOutcome, TraceSource } from "./traceFlow";

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
    case "needs-input":
      return { kind: "needs-input", message };
    case "target-error":
      return d.needsCtorArgs ? { kind: "needs-ctor-args", message } : { kind: "target-error", message };
    case "no-torch":
      return { kind: "no-torch", message, python: d.details ?? "" };
    case "import-error":
      return { kind: "import-error", message, details: d.details ?? "" };
    case "timeout":
      return { kind: "timeout", message };
    case "runner-crashed":
      return { kind: "runner-crashed", message, details: d.details ?? "" };
  }
  return { kind: "other", message };
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

// ---- the source --------------------------------------------------------------------------

export interface EditorDeps {
  server: Server;
  answers: AnswerStore;
  log: vscode.LogOutputChannel;
}

/** One side of a comparison: the same target traced with other text, mode or input. */
export interface Variant {
  /** Traced instead of the editor's text (HEAD's version of the file). */
  text?: string;
  /** Training (true) or eval (false) mode for this trace. */
  train?: boolean;
  /** This input instead of the one remembered for the model. */
  input?: string;
}

/** `target` in `doc`, traced by the language server with the editor's text. */
export class EditorSource implements TraceSource {
  readonly uri: string;
  readonly label: string;
  readonly progressTitle: string;

  constructor(
    private readonly deps: EditorDeps,
    private readonly doc: vscode.TextDocument,
    readonly target: string,
    private readonly variant: Variant = {},
  ) {
    this.uri = doc.uri.toString();
    this.label = target;
    this.progressTitle = `Tracing ${target}`;
  }

  async trace(progress: (message: string) => void, cancel: vscode.CancellationToken): Promise<TraceOutcome> {
    const { server, answers, log } = this.deps;
    const v = this.variant;
    const remembered = answers.get(this.uri, this.target);
    const params = traceParams(this.uri, v.text ?? this.doc.getText(), this.target, v.input ? { ...remembered, input: v.input } : remembered);
    if (v.train !== undefined) params.train = v.train;
    const t0 = Date.now();
    try {
      const result = await server.trace(params, cancel, progress);
      const s = result.summary;
      log.info(`traced ${this.target}: ${s.nodes} nodes, ${s.ops} ops in ${s.trace_ms} ms (request ${Date.now() - t0} ms); input ${s.input}`);
      return { ok: true, traced: result };
    } catch (e) {
      const f = classifyFailure(e);
      if (f.kind === "needs-input" || f.kind === "needs-ctor-args") return { ok: false, kind: f.kind, message: f.message };
      this.report(f);
      return { ok: false, kind: f.kind === "cancelled" ? "cancelled" : "reported" };
    }
  }

  /** An input expression or constructor arguments in an input box; the answer is remembered. */
  async ask(missing: Missing, message: string): Promise<Answer> {
    const prev = this.deps.answers.get(this.uri, this.target);
    const isInput = missing === "needs-input";
    const value = await vscode.window.showInputBox({
      title: isInput ? `Input for ${this.target}` : `Constructor arguments for ${this.target}`,
      prompt: message || (isInput ? "An expression for the forward's input" : "Arguments for the constructor"),
      placeHolder: isInput ? "torch.randn(1, 3, 224, 224)   (a tuple → positional, a dict → keywords)" : "10, hidden=64",
      value: isInput ? prev.input : prev.ctorArgs,
      ignoreFocusOut: true,
    });
    if (!value?.trim()) return undefined;
    await this.deps.answers.set(this.uri, this.target, isInput ? { input: value.trim() } : { ctorArgs: value.trim() });
    return "retry";
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
        void vscode.window.showErrorMessage(`torchscope: ${f.message || `torch is not installed in ${f.python}`}`, ...buttons).then((c) => {
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
}

/** Panels of models in documents: re-traced from the document as it is now. */
export class EditorSources implements SourceKind {
  constructor(private readonly deps: EditorDeps) {}

  source(doc: vscode.TextDocument, target: string, variant?: Variant): EditorSource {
    return new EditorSource(this.deps, doc, target, variant);
  }

  /** Every panel another kind does not own: list this kind last. */
  owns(): boolean {
    return true;
  }

  async reopen(origin: PanelOrigin): Promise<TraceSource | undefined> {
    let doc: vscode.TextDocument;
    try {
      doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(origin.uri));
    } catch {
      void vscode.window.showWarningMessage(`torchscope: ${origin.uri} can't be opened any more.`);
      return undefined;
    }
    if (doc.languageId !== "python") {
      void vscode.window.showInformationMessage("torchscope: this panel shows a graph file; there is no code to re-trace.");
      return undefined;
    }
    return this.source(doc, origin.target);
  }
}
