// The trace source of a model in the editor: the language server traces it in a runner of the
// user's interpreter (docs/protocol.md). Asks for an input or constructor arguments when the
// server has none and remembers the answer per (document, target); asks before the file's
// top-level code may run (a training loop at import) and remembers a yes per file; the
// server's failures become messages with a way forward (pick another interpreter, show the
// import error, trace a model that needs a GPU or more memory on the meta device, …).
import * as vscode from "vscode";
import { REQUEST_CANCELLED, type Server } from "./client";
import type { HeadFile } from "./gitHead";
import { errorText, tracedLine } from "./logChannel";
import { userFrame } from "./openGuard";
import {
  TORCHSCOPE_ERROR,
  editorPanelTitle,
  isErrorData,
  isGraphFile,
  metaKind,
  targetKey,
  type PanelOrigin,
  type TopLevelStatement,
  type TraceParams,
  type TraceSummary,
} from "./protocol";
import { revealLine } from "./reveal";
import { afterRenames, type Renamed } from "./renames";
import { openSettingInUse } from "./settingsScope";
import { inputBox, type Answer, type Ask, type SourceKind, type TraceOutcome, type TraceSource } from "./traceFlow";
import { asText, showError, showInformation, showWarning } from "./notify";

// ---- pure parts (unit-tested) ------------------------------------------------------------

export type Failure =
  | { kind: "cancelled" }
  | { kind: "needs-input"; message: string; guess?: string }
  | { kind: "needs-ctor-args"; message: string; guess?: string; params?: string }
  | { kind: "runs-code"; message: string; statements: TopLevelStatement[] }
  | { kind: "needs-gpu"; message: string; line?: { file: string; line: number } }
  | { kind: "needs-memory"; message: string; line?: { file: string; line: number } }
  | { kind: "no-torch"; message: string; python: string }
  | { kind: "import-error"; message: string; details: string; line?: SourceLine }
  | { kind: "timeout"; message: string }
  | { kind: "slow-build"; message: string }
  | { kind: "runner-crashed"; message: string; details: string }
  /** Stopped on purpose before it ended (the language server restarted): why. */
  | { kind: "stopped"; message: string }
  | { kind: "target-error"; message: string; details?: string; line?: SourceLine }
  | { kind: "other"; message: string };

/** What went wrong with a trace request, from the error the client threw. */
export function classifyFailure(e: unknown): Failure {
  const err = e as { code?: unknown; message?: unknown; data?: unknown; name?: unknown } | undefined;
  const message = typeof err?.message === "string" ? err.message : String(e);
  if (err?.code === REQUEST_CANCELLED || err?.name === "Canceled" || message === "Canceled") return { kind: "cancelled" };
  if (err?.code !== TORCHSCOPE_ERROR || !isErrorData(err.data)) return { kind: "other", message };
  const d = err.data;
  const details = typeof d.details === "string" ? d.details : "";
  // Building or importing the model asked for a GPU, or for more memory than there is: say
  // so, with the line, not as a broken file (the meta device builds it without either).
  if (d.kind === "target-error" || d.kind === "import-error" || d.kind === "runner-crashed") {
    const kind = metaKind(`${message}\n${details}`);
    if (kind) {
      const line = userFrame(details);
      return line ? { kind, message, line } : { kind, message };
    }
  }
  // what a box asking for an input or constructor arguments starts with
  const guess = typeof d.guess === "string" && d.guess ? { guess: d.guess } : {};
  switch (d.kind) {
    case "needs-input":
      return { kind: "needs-input", message, ...guess };
    case "target-error":
      if (d.needsCtorArgs) {
        const params = typeof d.ctorParams === "string" && d.ctorParams ? { params: d.ctorParams } : {};
        return { kind: "needs-ctor-args", message, ...guess, ...params };
      }
      return details ? { kind: "target-error", message, details, ...lineOf(details) } : { kind: "target-error", message };
    case "runs-code":
      return { kind: "runs-code", message, statements: topLevelStatements(d.statements) };
    case "no-torch":
      return { kind: "no-torch", message, python: details };
    case "import-error":
      return { kind: "import-error", message, details, ...lineOf(details) };
    case "timeout":
      // stopped while importing and building: a big model builds in no time on the meta device
      return { kind: d.stage === "build" ? "slow-build" : "timeout", message };
    case "runner-crashed":
      return { kind: "runner-crashed", message, details };
    case "runner-stopped":
      return { kind: "stopped", message };
  }
  return { kind: "other", message };
}

type SourceLine = { file: string; line: number };

/** The user's line a traceback ends at (an `__init__` or an import that raised), if any. */
function lineOf(details: string): { line?: SourceLine } {
  const line = userFrame(details);
  return line ? { line } : {};
}

function topLevelStatements(x: unknown): TopLevelStatement[] {
  if (!Array.isArray(x)) return [];
  return x
    .filter((s): s is TopLevelStatement => typeof s === "object" && s !== null && typeof s.line === "number" && typeof s.text === "string")
    .map((s) => ({ line: s.line, text: s.text }));
}

/** The question before running a file's top-level code, naming what would run (the
 * statements; else the server's own list, from its message). */
export function runsCodeQuestion(file: string, message: string, statements: TopLevelStatement[]): string {
  const name = file.split(/[\\/]/).pop() ?? file;
  const what = statements.length
    ? statements
        .slice(0, 3)
        .map((s) => `${s.text.trim()} at line ${s.line}`)
        .join(", ") + (statements.length > 3 ? ", …" : "")
    : /runs code[^:]*:\s*(.+)$/.exec(message.split("\n", 1)[0]!)?.[1]?.replace(/\s*[.…]+$/, "");
  return `torchscope: importing ${name} runs code at import${what ? ` (${what})` : ""}. Run it to trace?`;
}

/** The question's details: why the model needs that code (the server's words), then the lines. */
export function runsCodeDetail(message: string, statements: TopLevelStatement[]): string {
  const why = /without its top-level code failed \((.+)\); it runs code/.exec(message)?.[1];
  const head = why ? `Without it, building the model failed: ${why}.` : message.split("\n", 1)[0]!;
  return [head, statementLines(statements)].filter(Boolean).join("\n\n");
}

/** The statements, one per line, for the question's details. */
export function statementLines(statements: TopLevelStatement[], max = 8): string {
  const lines = statements.slice(0, max).map((s) => `line ${s.line}: ${s.text.trim()}`);
  if (statements.length > max) lines.push(`… and ${statements.length - max} more`);
  return lines.join("\n");
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

  /** Files renamed in the editor: what was remembered for them is theirs under the new name. */
  async follow(renames: readonly Renamed[]): Promise<void> {
    const all = this.memento.get<Record<string, Answers>>(AnswerStore.KEY, {});
    const moved: Record<string, Answers> = {};
    let changed = false;
    for (const [key, answers] of Object.entries(all)) {
      const cut = key.indexOf("#"); // (a URI's own # is escaped: the first is targetKey's)
      const uri = cut < 0 ? undefined : afterRenames(key.slice(0, cut), renames);
      if (uri) changed = true;
      moved[uri ? targetKey(uri, key.slice(cut + 1)) : key] = answers;
    }
    if (changed) await this.memento.update(AnswerStore.KEY, moved);
    const run = this.memento.get<string[]>(AnswerStore.RUN_KEY, []);
    const runMoved = run.map((uri) => afterRenames(uri, renames) ?? uri);
    if (runMoved.some((uri, i) => uri !== run[i])) await this.memento.update(AnswerStore.RUN_KEY, runMoved);
  }

  /** The user let this file's top-level code run ("Run It"): remembered per file for the workspace. */
  runsTopLevel(uri: string): boolean {
    return this.memento.get<string[]>(AnswerStore.RUN_KEY, []).includes(uri);
  }

  async allowTopLevel(uri: string): Promise<void> {
    const all = this.memento.get<string[]>(AnswerStore.RUN_KEY, []);
    if (!all.includes(uri)) await this.memento.update(AnswerStore.RUN_KEY, [...all, uri]);
  }

  static readonly RUN_KEY = "torchscope.runTopLevel";
}

export interface TraceOptions {
  runTopLevel?: boolean;
  device?: "cpu" | "meta";
}

export function traceParams(uri: string, text: string | undefined, target: string, answers: Answers, opts: TraceOptions = {}): TraceParams {
  const p: TraceParams = { uri, target };
  if (text !== undefined) p.text = text;
  if (answers.input) p.input = answers.input;
  if (answers.ctorArgs) p.ctorArgs = answers.ctorArgs;
  if (opts.runTopLevel) p.runTopLevel = true;
  if (opts.device && opts.device !== "cpu") p.device = opts.device;
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
  /** Other files the trace imports from these texts (HEAD's versions of them). */
  texts?: HeadFile[];
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
  /** The document's version when this source was made: the text its trace reads. */
  readonly version: number;
  private device: "cpu" | "meta" = "cpu";

  constructor(
    private readonly deps: EditorDeps,
    private readonly doc: vscode.TextDocument,
    readonly target: string,
    private readonly variant: Variant = {},
  ) {
    this.uri = doc.uri.toString();
    this.version = doc.version;
    this.label = target;
    this.progressTitle = `Tracing ${target}`;
  }

  panelTitle(summary: TraceSummary | null): string {
    return editorPanelTitle(summary, this.target);
  }

  get onMeta(): boolean {
    return this.device === "meta";
  }

  /** The same trace with this input instead (a comparison's other side had to use it). */
  withInput(input: string): EditorSource {
    const again = new EditorSource(this.deps, this.doc, this.target, { ...this.variant, input });
    again.device = this.device;
    return again;
  }

  /** A model that needs a GPU: trace it on the meta device from now on (shapes, no data). */
  useMeta(): void {
    this.device = "meta";
  }

  async trace(progress: (message: string) => void, cancel: vscode.CancellationToken): Promise<TraceOutcome> {
    const { server, answers, log } = this.deps;
    const v = this.variant;
    const remembered = answers.get(this.uri, this.target);
    const opts = { runTopLevel: answers.runsTopLevel(this.uri), device: this.device };
    const answered = v.input ? { ...remembered, input: v.input } : remembered;
    const params = traceParams(this.uri, v.text ?? this.doc.getText(), this.target, answered, opts);
    if (v.train !== undefined) params.train = v.train;
    // another text than the editor's (HEAD's): its shapes are not this document's lines
    if (v.text !== undefined) params.hints = false;
    if (v.texts?.length) params.texts = v.texts;
    const t0 = Date.now();
    try {
      const result = await server.trace(params, cancel, progress);
      const line = tracedLine(this.target, result.summary, `request ${Date.now() - t0} ms`);
      log[line.level](line.text);
      return { ok: true, traced: result };
    } catch (e) {
      const f = classifyFailure(e);
      switch (f.kind) {
        case "needs-input":
        case "needs-ctor-args":
        case "runs-code":
        case "needs-gpu":
        case "needs-memory":
        case "slow-build":
          log.info(`${this.target}: ${f.message}`);
          return { ok: false, ...f };
      }
      this.report(f);
      // (stopped on purpose, as a cancel: a panel's graph is not out of date for it)
      return f.kind === "cancelled" || f.kind === "stopped" ? { ok: false, kind: "cancelled" } : { ok: false, kind: "reported", said: f.message };
    }
  }

  /** An input expression, constructor arguments, or consent to run the file's top-level code. */
  async ask(what: Ask): Promise<Answer> {
    if (what.kind === "runs-code") return this.askToRun(what);
    const prev = this.deps.answers.get(this.uri, this.target);
    const isInput = what.kind === "needs-input";
    const box = isInput ? inputBox({ current: what.current, remembered: prev.input, guess: what.guess, template: what.template }) : undefined;
    const value = await vscode.window.showInputBox({
      title: isInput ? `Input for ${this.target}` : `Arguments to build ${this.target}`,
      // (VS Code renders links in a prompt: the model's error is text from outside)
      prompt: asText(what.message || (isInput ? "An expression for the forward's input" : "Arguments for the constructor or factory")),
      // (what the class or factory takes: `d_in, d_hidden, n_layers=2`)
      placeHolder: box ? box.placeHolder : (what.params ?? "arguments, as in a call: 10, hidden=64"),
      // (the arguments the file itself passes, as written, when it has a call of its own)
      value: box ? box.value : (prev.ctorArgs ?? what.guess),
      ignoreFocusOut: true,
    });
    if (!value?.trim()) return undefined;
    await this.deps.answers.set(this.uri, this.target, isInput ? { input: value.trim() } : { ctorArgs: value.trim() });
    return "retry";
  }

  /** Never run a file's top-level code without the user's yes; a yes holds for the file. */
  private async askToRun(what: Ask): Promise<Answer> {
    const statements = what.statements ?? [];
    const choice = await showWarning(
      runsCodeQuestion(this.doc.uri.fsPath, what.message, statements),
      { modal: true, detail: runsCodeDetail(what.message, statements) },
      "Run It",
      "Show Lines",
    );
    if (choice === "Run It") {
      this.deps.log.info(`${this.target}: running the top-level code of ${this.doc.uri.fsPath} (the user agreed)`);
      await this.deps.answers.allowTopLevel(this.uri);
      return "retry";
    }
    const first = statements[0];
    if (choice === "Show Lines" && first) await revealLine(this.doc.uri.fsPath, first.line);
    return undefined;
  }

  private report(f: Failure): void {
    const log = this.deps.log;
    switch (f.kind) {
      case "cancelled":
        log.info("trace cancelled");
        return;
      case "stopped":
        log.info(`${this.target}: stopped: ${f.message}`);
        void showInformation(`torchscope: ${this.target} stopped: ${f.message}. Trace it again when you want its graph.`);
        return;
      case "no-torch": {
        log.warn(`${this.target}: ${f.message}`);
        const hasPython = !!vscode.extensions.getExtension("ms-python.python");
        const buttons = hasPython ? ["Select Interpreter", "Set torchscope.pythonPath"] : ["Set torchscope.pythonPath"];
        void showError(`torchscope: ${f.message || `torch is not installed in ${f.python}`}`, ...buttons).then((c) => {
          if (c === "Select Interpreter") void vscode.commands.executeCommand("python.setInterpreter");
          // where the value in use is set: the workspace's when it sets it (not the User tab)
          else if (c) void openSettingInUse("torchscope.pythonPath", this.doc.uri);
        });
        return;
      }
      case "import-error":
      case "runner-crashed":
        // The traceback once, here (the server logs it only at debug level).
        log.error(`${f.message}\n${f.details}`);
        this.sayFailed(f.message, true, f.kind === "import-error" ? f.line : undefined);
        return;
      case "timeout":
        log.warn(`${this.target}: ${f.message}`);
        void showError(`torchscope: ${f.message}`, "Change Time Limit").then((c) => c && openSettingInUse("torchscope.traceTimeoutSeconds"));
        return;
      case "target-error":
        log.error(f.details ? `${f.message}\n${f.details}` : f.message);
        this.sayFailed(f.message, !!f.details, f.line);
        return;
      default:
        log.error(f.message);
        void showError(`torchscope: ${f.message}`);
        return;
    }
  }

  /** A failure's message, with the user's line it raised at (Go to Line) and the traceback
   * in the log (Show Details) when there are. */
  private sayFailed(message: string, details: boolean, line?: SourceLine): void {
    const buttons = [...(line ? ["Go to Line"] : []), ...(details ? ["Show Details"] : [])];
    void showError(`torchscope: ${message}`, ...buttons).then((c) => {
      if (c === "Go to Line" && line) void revealLine(line.file, line.line);
      else if (c === "Show Details") this.deps.log.show(true);
    });
  }
}

/** A panel of a graph file (not a document's model): nothing to re-trace. */
function sayGraphFile(): void {
  void showInformation("torchscope: this panel shows a graph file; there is no code to re-trace.");
}

/** Panels of models in documents: re-traced from the document as it is now. */
export class EditorSources implements SourceKind {
  constructor(private readonly deps: EditorDeps) {}

  source(doc: vscode.TextDocument, target: string, variant?: Variant): EditorSource {
    return new EditorSource(this.deps, doc, target, variant);
  }

  renamed(renames: readonly Renamed[]): Promise<void> {
    return this.deps.answers.follow(renames);
  }

  /** Every panel another kind does not own: list this kind last. */
  owns(): boolean {
    return true;
  }

  async reopen(origin: PanelOrigin): Promise<TraceSource | undefined> {
    // A graph file's panel ("Open graph file…"): VS Code won't open the binary file as text.
    const uri = vscode.Uri.parse(origin.uri);
    if (uri.scheme === "file" && isGraphFile(uri.path)) {
      sayGraphFile();
      return undefined;
    }
    let doc: vscode.TextDocument;
    try {
      doc = await vscode.workspace.openTextDocument(uri);
    } catch (e) {
      void showWarning(`torchscope: ${origin.uri} can't be opened any more: ${errorText(e)}`);
      return undefined;
    }
    if (doc.languageId !== "python") {
      sayGraphFile();
      return undefined;
    }
    const source = this.source(doc, origin.target);
    if (origin.device === "meta") source.useMeta(); // as its graph was traced ("Trace on Meta Device")
    return source;
  }
}
