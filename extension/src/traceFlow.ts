// The one way a trace goes, whichever program runs it: open the panel at once (the viewer
// boots while the model is traced) → trace with a progress notification and Cancel → when
// the trace lacks something (an input, constructor arguments, consent to run the file's
// top-level code), ask and trace again → show the graph with the input it used → a model
// that raised: its line beside the graph, "Go to Line" and "Change Input…"; with a guessed
// input, the input box at once (the guess may be wrong, not the model); a model that needs
// a GPU: the meta device. Two sources feed it, each a small object with the same interface:
// the language server for a model in the editor (editorSource.ts) and a paused debug session
// (pausedSource.ts). A panel's Re-trace and Change Input… come back here through the source
// kind that owns the panel.
import * as vscode from "vscode";
import { saveAs } from "./export";
import { GraphPanel, type PanelEvents } from "./graphPanel";
import {
  isGraphFile,
  metaKind,
  panelTitle,
  modelName,
  targetKey,
  type InputUsed,
  type PanelOrigin,
  type TopLevelStatement,
  type TraceSummary,
} from "./protocol";
import { revealLine, revealSite, type LinesNow } from "./reveal";
import { afterRenames, type Renamed } from "./renames";
import { openSettingInUse } from "./settingsScope";
import { asText, showError, showInformation, showWarning } from "./notify";

/** A graph file written on this machine, and what its trace said (absent for a graph whose
 * summary never reached the extension: a next call traced in a local debuggee). */
export interface Traced {
  path: string;
  summary?: TraceSummary;
  /** The live model traced (a paused program's: "pid:id"), to tell when an expression
   * names another one. */
  modelId?: string;
}

/** What the trace lacked: the flow asks the source to ask the user (a GPU or more memory: the
 * flow asks itself, offering the meta device). */
export type Missing = "needs-input" | "needs-ctor-args" | "runs-code" | MetaKind;

/** What the meta device helps with: a model that asks for a GPU, for more memory than there
 * is, or that takes longer to build than the time limit (billions of parameters on a CPU). */
export type MetaKind = "needs-gpu" | "needs-memory" | "slow-build";
const META_KINDS: readonly Missing[] = ["needs-gpu", "needs-memory", "slow-build"];

/** A question before the next trace, with what helps answer it. */
export interface Ask {
  kind: Missing;
  /** The tracer's words, may be empty. */
  message: string;
  /** needs-input: an input expression to start with (the tracer's guess); needs-ctor-args:
   * the arguments the file itself passes, as written. */
  guess?: string;
  /** needs-input: the input of the graph shown now (Change Input…): the box starts with it. */
  current?: string;
  /** needs-input: an expression of the shown input's kind and shape, when it was given as a
   * value (a factory's example): the box's placeholder only (it would trace other values). */
  template?: string;
  /** needs-ctor-args: the parameters the class or factory takes, the box's placeholder. */
  params?: string;
  /** runs-code: what importing the file would run. */
  statements?: TopLevelStatement[];
  /** needs-gpu, needs-memory: the line that asked for one, or for the memory (slow-build: none). */
  line?: { file: string; line: number };
}

export type TraceOutcome =
  | { ok: true; traced: Traced }
  | ({ ok: false } & Ask)
  /** Nothing to say (the user cancelled), or the source said what went wrong already
   * (`said`: what, in one line, for the panel of a graph it did not replace). */
  | { ok: false; kind: "cancelled" | "reported"; said?: string };

/** How the user answered: trace again with the answer, trace the program's next call, or dismissed. */
export type Answer = "retry" | "next-call" | undefined;

export interface TraceSource {
  /** The panel the graph goes to: one per (uri, target). */
  readonly uri: string;
  readonly target: string;
  /** The model's name until its trace names it: panel titles, prompts. */
  readonly label: string;
  /** The progress notification's text while the trace runs. */
  readonly progressTitle: string;
  /** One trace; `progress` shows a line under the notification; the source reports its own failures. */
  trace(progress: (message: string) => void, cancel: vscode.CancellationToken): Promise<TraceOutcome>;
  /** Ask the user for what the trace lacked (an input, constructor arguments, consent). */
  ask(what: Ask): Promise<Answer>;
  /** Trace the next call of the model instead (a running program only); shows its own progress. */
  traceNextCall?(): Promise<TraceOutcome>;
  /** The panel's title when it is not "Forward pass: Model" (a comparison's). */
  panelTitle?(summary: TraceSummary | null): string;
  /** What the trace reads, as a version (the document's): a second command for the same
   * model joins a trace under way only when it would trace the same. */
  readonly version?: number;
  /** Trace on the meta device from now on (a model that needs a GPU); absent: this source can't. */
  useMeta?(): void;
  readonly onMeta?: boolean;
}

// ---- pure parts (unit-tested) ------------------------------------------------------------

function firstLine(text: string): string {
  return text.split("\n", 1)[0]!.trim();
}

/** What an input box starts with: the input traced now, else the one typed before, else the
 * guess; its placeholder is the guess, else the input it started with (an example only when
 * nothing is known: an image tensor read as the model's input). */
export function inputBox(opts: {
  current?: string | undefined;
  remembered?: string | undefined;
  guess?: string | undefined;
  template?: string | undefined;
}): {
  value: string;
  placeHolder: string;
} {
  return {
    value: opts.current || opts.remembered || opts.guess || "",
    placeHolder:
      opts.guess || opts.current || opts.remembered || opts.template || "torch.randn(1, 3, 224, 224)   (a tuple → positional, a dict → keywords)",
  };
}

/** The input a trace used, as the panel shows it (none for a graph whose summary never came);
 * `meta`: traced on the meta device, which the panel says too. */
export function inputUsed(summary: TraceSummary | null | undefined, meta = false): InputUsed | undefined {
  if (!summary?.input) return undefined;
  // a class that needs arguments, built as the file builds it: said beside the input
  const built = summary.builtAs ? `${summary.input}; model built as ${summary.builtAs}` : summary.input;
  const text = meta ? `${built}; on the meta device (shapes, no values)` : built;
  return {
    text,
    ...(summary.inputExpr ? { expr: summary.inputExpr } : {}),
    ...(summary.inputTemplate ? { template: summary.inputTemplate } : {}),
  };
}

/** Whether a panel's graph is now of another live model than before ("pid:id" each): another
 * debug session selected, or `self` paused in another module's forward; not the same model
 * by name in a program run again (another process). */
function anotherLiveModel(was: { id?: string; model?: string }, now: { id?: string; model?: string }): boolean {
  if (!was.id || !now.id || was.id === now.id || !was.model) return false;
  const rerun = was.id.split(":")[0] !== now.id.split(":")[0] && was.model === now.model;
  return !rerun;
}

/** Errors about the code itself, whatever its input: no other input would help. */
const CODE_ERRORS = new Set(["AttributeError", "NameError", "UnboundLocalError", "NotImplementedError", "ImportError", "ModuleNotFoundError"]);

/** An error no other input would change; not an attribute the guessed input lacks (a
 * forward reading `data.x` of a batch object was given a tensor). */
function codeError(type: string, message: string): boolean {
  return CODE_ERRORS.has(type) && !/^'(Tensor|tuple|list|dict|int|float)' object has no attribute/.test(message);
}

/**
 * What to ask after a graph came with an error, instead of calling the model broken: a model
 * that asked for a GPU → the meta device; an error about what the file's skipped top-level
 * code would make → running that code; a guessed input → another input (the guess may be
 * wrong). Undefined: the model raised with an input it was given; say so.
 */
export function afterRaise(summary: TraceSummary, label: string): Ask | undefined {
  const err = summary.error;
  if (!err) return undefined;
  const line = err.file && err.line ? { file: err.file, line: err.line } : undefined;
  const meta = metaKind(`${err.type}: ${err.message}`);
  if (meta) return { kind: meta, message: `${err.type}: ${firstLine(err.message)}`, ...(line ? { line } : {}) };
  const where = line ? ` at line ${line.line}` : "";
  if (summary.skippedSuspect?.length) {
    // a yes runs all of the file's top-level code: name all of it, what the error points at first
    const suspect = summary.skippedSuspect;
    const rest = (summary.skipped ?? []).filter((s) => !suspect.some((t) => t.line === s.line));
    return {
      kind: "runs-code",
      message: `${modelName(summary, label)} raised ${err.type}: ${firstLine(err.message)}${where}, which the file's top-level code that did not run may make.`,
      statements: [...suspect, ...rest],
    };
  }
  if (summary.inputKind !== "guess" || codeError(err.type, err.message)) return undefined;
  return {
    kind: "needs-input",
    message: `The guessed input (${summary.input}) may be wrong: ${modelName(summary, label)} raised ${err.type}${where}: ${firstLine(err.message)}. Give the input to trace it with.`,
    ...(summary.inputExpr ? { guess: summary.inputExpr } : {}),
  };
}

/** The warning about a model that needs a GPU (or more memory than there is: `needs-memory`),
 * and its buttons; `meta`: whether the source can trace on the meta device, already did, or
 * can't at all (a paused program). */
export function metaQuestion(what: Ask, label: string, meta: "can" | "tried" | "cannot"): { text: string; buttons: string[] } {
  const where = what.line ? ` (line ${what.line.line} of ${what.line.file.split(/[\\/]/).pop()})` : "";
  const memory = what.kind === "needs-memory";
  const slow = what.kind === "slow-build";
  const lacks = slow ? "takes long to build here" : memory ? "does not fit in memory here" : "needs a GPU";
  const helps = slow ? "built in no time" : `no ${memory ? "memory" : "GPU"} needed`;
  const text =
    meta === "can"
      ? `torchscope: ${label} ${lacks}${where}: ${what.message}. Trace it on the meta device (shapes only, ${helps})?`
      : meta === "tried"
        ? `torchscope: ${label} ${lacks}${where}, also on the meta device: ${what.message}.${memory || slow ? "" : " Make that line use the CPU to trace it here."}`
        : `torchscope: ${label} ${lacks}${where}: ${what.message}.`;
  return {
    text,
    buttons: [...(meta === "can" ? ["Trace on Meta Device"] : []), ...(what.line ? ["Go to Line"] : []), ...(slow ? ["Change Time Limit"] : [])],
  };
}

/** The sources of one kind: who owns a panel, and its source again for a re-trace. */
export interface SourceKind {
  owns(origin: PanelOrigin): boolean;
  /** Files renamed in the editor: what the kind remembers of them follows. */
  renamed?(renames: readonly Renamed[]): Promise<void>;
  /** The panel's source now, or undefined after telling the user why not (quietly: no questions). */
  reopen(origin: PanelOrigin, quiet: boolean): Promise<TraceSource | undefined>;
}

export interface RunOptions {
  /** Re-trace on save: a status-bar spinner instead of a notification, no questions, no Cancel. */
  quiet?: boolean;
  /** Ask for an input before the first trace (Change Input…, a paused model with none known):
   * the box starts with the input of the graph shown now. */
  askFirst?: boolean;
  /** A panel opened for this trace beforehand; closed again if no graph comes of it. */
  opened?: GraphPanel;
}

/** At most this many traces for one command (each answer is one more). */
const MAX_ATTEMPTS = 4;

/** Told after each graph a trace put in a panel (paused graphs: hints and "you are here"). */
export type ShownListener = (source: TraceSource, traced: Traced, panel: GraphPanel) => void;

export class TraceFlow {
  readonly events: PanelEvents;
  private readonly shownListeners: ShownListener[] = [];
  /** The run under way for a (uri, target): a second command for it joins that one. */
  private readonly running = new Map<string, { run: Promise<Traced | undefined>; version: number | undefined }>();

  constructor(
    private readonly viewerDir: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly kinds: SourceKind[],
    /** Where a graph's lines are now (a click on a node after edits above it). */
    linesNow?: LinesNow,
  ) {
    this.events = {
      reveal: (site, panel, side) => void revealSite(site, panel, side, linesNow),
      save: (name, mime, data) => void saveAs(name, mime, data),
      retrace: (panel) => void this.retrace(panel),
      changeInput: (panel) => void this.changeInput(panel),
      log,
    };
  }

  onShown(listener: ShownListener): vscode.Disposable {
    this.shownListeners.push(listener);
    return {
      dispose: () => {
        const i = this.shownListeners.indexOf(listener);
        if (i >= 0) this.shownListeners.splice(i, 1);
      },
    };
  }

  /** Panels restored after a reload come back through here (their graph file, else a re-trace). */
  register(): vscode.Disposable[] {
    return [
      vscode.window.registerWebviewPanelSerializer(GraphPanel.viewType, {
        deserializeWebviewPanel: async (panel, state) => void (await GraphPanel.revive(panel, state, this.viewerDir, this.events)),
      }),
      vscode.workspace.onDidRenameFiles((e) => void this.followRenames(e.files.map((f) => ({ from: f.oldUri.toString(), to: f.newUri.toString() })))),
    ];
  }

  /** Files renamed in the editor (F2, a refactoring): their panels follow, then trace the file
   * under its new name quietly, so that their nodes' lines name it (a graph file's panel
   * only follows: it has no code to trace). A file renamed outside the editor: see reopen. */
  async followRenames(renames: readonly Renamed[]): Promise<void> {
    const moved: GraphPanel[] = [];
    for (const panel of GraphPanel.all()) {
      const uri = afterRenames(panel.origin.uri, renames);
      if (!uri) continue;
      this.log.info(`${panel.origin.target}: its file is ${uri} now`);
      panel.moveTo(uri);
      moved.push(panel);
    }
    await Promise.all(this.kinds.map((k) => k.renamed?.(renames))); // (the answers remembered: before a trace asks)
    for (const panel of moved) if (!isGraphFile(vscode.Uri.parse(panel.origin.uri).path)) await this.retrace(panel, true);
  }

  /** The panel of `origin`, brought forward, or a new one beside the editor. */
  openPanel(origin: PanelOrigin, reveal = true): GraphPanel {
    return GraphPanel.createOrShow(this.viewerDir, origin, this.events, reveal);
  }

  /** A panel for a model of `uri` not yet named (see GraphPanel.openUnnamed); `waiting`: what
   * it says until a graph comes. None when `uri` has a panel open: the command most likely
   * wants that one. */
  openUnnamedPanel(uri: string, waiting: string): GraphPanel | undefined {
    if (GraphPanel.all().some((p) => p.origin.uri === uri)) return undefined;
    return GraphPanel.openUnnamed(this.viewerDir, uri, this.events, waiting);
  }

  /** `unnamed` (opened by openUnnamedPanel, if it was) becomes `target`'s panel; the options
   * that hand it to `run`. Only a panel opened for this trace is handed over (run closes it if
   * no graph comes): when the target had a panel already, claim brought that one forward. */
  claimFor(unnamed: GraphPanel | undefined, target: string, title: string): RunOptions {
    const claimed = unnamed?.claim(target, title);
    return claimed && claimed === unnamed ? { opened: claimed } : {};
  }

  /** Trace `source` (asking for inputs as needed) and show the graph; undefined when none came.
   * While the same model is traced already from the same text (Visualize twice), its panel
   * comes forward and this waits for that run: the runner traces one model at a time, so a
   * second trace would only start when the first ends, to make the same graph. Text edited
   * since (a re-trace on save), Change Input… (it asks first): a trace of its own. */
  run(source: TraceSource, opts: RunOptions = {}): Promise<Traced | undefined> {
    const key = targetKey(source.uri, source.target);
    const under = this.running.get(key);
    if (under && !opts.askFirst && !opts.quiet && under.version === source.version) {
      const panel = GraphPanel.find(source.uri, source.target);
      if (opts.opened && opts.opened !== panel) opts.opened.dispose();
      panel?.bringForward();
      this.log.info(`${source.label}: traced already; waiting for that trace`);
      return under.run;
    }
    const run = this.runOnce(source, opts).finally(() => {
      if (this.running.get(key)?.run === run) this.running.delete(key);
    });
    this.running.set(key, { run, version: source.version });
    return run;
  }

  private async runOnce(source: TraceSource, opts: RunOptions): Promise<Traced | undefined> {
    let opened = opts.opened;
    const existing = GraphPanel.find(source.uri, source.target);
    if (!opened && !opts.quiet && !existing) {
      opened = this.openPanel({ uri: source.uri, target: source.target, title: source.panelTitle?.(null) ?? panelTitle(null, source.label) });
    }
    const current = existing?.origin.input?.expr;
    const template = existing?.origin.input?.template;
    let missing: Ask | undefined = opts.askFirst
      ? { kind: "needs-input", message: "", ...(current ? { current } : {}), ...(template ? { template } : {}) }
      : undefined;
    let shown: Traced | undefined;
    let failed: string | undefined; // why the last attempt made no graph
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      let answer: Answer = "retry";
      if (missing) {
        if (opts.quiet) {
          failed = missing.message;
          break;
        }
        const meta = META_KINDS.includes(missing.kind);
        answer = meta ? await this.askMeta(source, missing) : await source.ask(missing);
        if (!answer) {
          // a trace that stopped on a question left unanswered (not Change Input…'s own box):
          // the panel's graph is not of the code as it is now
          if (missing.message && !(opts.askFirst && missing.kind === "needs-input")) failed = missing.message;
          break;
        }
      }
      let outcome: TraceOutcome;
      if (answer === "next-call" && source.traceNextCall) {
        // The program may take long to get there: its panel opens when the graph comes.
        if (!shown) opened?.dispose();
        opened = undefined;
        outcome = await source.traceNextCall();
      } else {
        outcome = await this.traceWithProgress(source, opts.quiet ?? false, opened ?? existing);
      }
      if (outcome.ok) {
        shown = outcome.traced;
        missing = await this.show(source, outcome.traced, opts.quiet ?? false);
        if (!missing) return shown;
        continue;
      }
      // Cancelled, or the source said what went wrong: nothing to ask.
      if (!("message" in outcome)) {
        failed = outcome.said;
        break;
      }
      const { ok: _ok, ...ask } = outcome;
      missing = ask;
    }
    if (!shown) opened?.dispose();
    // a panel whose graph this trace should have replaced says it is out of date
    if (!shown && existing && failed) existing.markStale(failed);
    return shown;
  }

  /** One trace with its notification; cancelled by the notification's Cancel, or when the
   * user closes `panel`, the panel it draws into (no one waits for that graph any more, and
   * the runner traces one model at a time: the next command would wait behind it). */
  private traceWithProgress(source: TraceSource, quiet: boolean, panel: GraphPanel | undefined): Thenable<TraceOutcome> {
    const location = quiet ? vscode.ProgressLocation.Window : vscode.ProgressLocation.Notification;
    return vscode.window.withProgress({ location, title: asText(source.progressTitle), cancellable: !quiet }, async (progress, cancel) => {
      const stop = new vscode.CancellationTokenSource();
      const watching = [cancel.onCancellationRequested(() => stop.cancel()), ...(panel ? [panel.onClosed(() => stop.cancel())] : [])];
      try {
        return await source.trace((message) => progress.report({ message: asText(message) }), stop.token);
      } finally {
        for (const w of watching) w.dispose();
        stop.dispose();
      }
    });
  }

  /** A model that needs a GPU or more memory: the meta device (when the source can), or its line. */
  private async askMeta(source: TraceSource, what: Ask): Promise<Answer> {
    const q = metaQuestion(what, source.label, !source.useMeta ? "cannot" : source.onMeta ? "tried" : "can");
    const choice = await showWarning(q.text, ...q.buttons);
    if (choice === "Trace on Meta Device" && source.useMeta) {
      source.useMeta();
      return "retry";
    }
    if (choice === "Go to Line" && what.line) void revealLine(what.line.file, what.line.line, GraphPanel.find(source.uri, source.target));
    if (choice === "Change Time Limit") void openSettingInUse("torchscope.traceTimeoutSeconds");
    return undefined;
  }

  /** The graph in its panel with the input it used; a model that raised: its line beside the
   * graph and a way on. Returns what to ask next instead of calling the model broken. */
  private async show(source: TraceSource, traced: Traced, quiet: boolean): Promise<Ask | undefined> {
    const summary = traced.summary ?? null;
    const title = source.panelTitle?.(summary) ?? panelTitle(summary, source.label);
    const panel = this.openPanel({ uri: source.uri, target: source.target, title }, !quiet);
    panel.setTracedWith(inputUsed(summary, source.onMeta), source.onMeta === true);
    const was = { id: panel.modelId, model: panel.model };
    if (summary?.model) panel.model = modelName(summary, source.label);
    panel.modelId = traced.modelId;
    if (summary?.model && anotherLiveModel(was, { id: traced.modelId, model: panel.model })) {
      void showInformation(`torchscope: ${source.label} in the paused frame is another model now: ${panel.model} (the panel showed ${was.model}).`);
    }
    try {
      await panel.load(traced.path);
    } catch (e) {
      void showError(`torchscope: can't read the graph file ${traced.path}: ${String(e)}`);
      return undefined;
    }
    for (const l of this.shownListeners) l(source, traced, panel);
    const name = modelName(summary, source.label);
    if (summary?.warnings?.length) {
      const text = `torchscope: tracing ${name} left changes it could not undo: ${summary.warnings.join("; ")}`;
      this.log.warn(text.replace(/^torchscope: /, ""));
      void showWarning(text);
    }
    const err = summary?.error;
    if (!err) return undefined;
    // The graph stops at the failing call; show the line that raised beside it. A comparison
    // whose first side alone raised: that side's (HEAD's text), on Go to Line only.
    const line = err.file && err.line ? { file: err.file, line: err.line } : undefined;
    const goTo = (l: { file: string; line: number }) =>
      err.side ? revealSite({ file: l.file, line: l.line, func: "" }, panel, "a") : revealLine(l.file, l.line, panel);
    if (line && !err.side) void revealLine(line.file, line.line, panel, true);
    const who = err.sideName ? `${name} (${err.sideName})` : name;
    const next = quiet ? undefined : afterRaise(summary, source.label);
    if (next?.kind === "needs-input") {
      // Not "the model is broken": the guess may be. The box opens at once; this stays.
      void showWarning(
        `torchscope: ${who} raised ${err.type} with a guessed input (${summary.input}): the guess may be wrong.`,
        ...(line ? ["Go to Line"] : []),
      ).then((c) => {
        if (c === "Go to Line" && line) void goTo(line);
      });
    }
    if (next) return next;
    const buttons = line ? ["Go to Line", "Change Input…"] : ["Change Input…"];
    void showWarning(`torchscope: ${who} raised ${err.type}: ${err.message}`, ...buttons).then((c) => {
      if (c === "Go to Line" && line) void goTo(line);
      else if (c === "Change Input…") void this.changeInput(panel);
    });
    return undefined;
  }

  /** Trace a panel's model again: the document as it is now, or the frame paused now. */
  async retrace(panel: GraphPanel, quiet = false): Promise<Traced | undefined> {
    const source = await this.reopen(panel, quiet);
    return source ? this.run(source, { quiet }) : undefined;
  }

  /** Ask for another input for a panel's model, then trace it with that. */
  async changeInput(panel: GraphPanel | undefined = GraphPanel.active): Promise<Traced | undefined> {
    const source = panel && (await this.reopen(panel, false));
    return source ? this.run(source, { askFirst: true }) : undefined;
  }

  private async reopen(panel: GraphPanel, quiet: boolean): Promise<TraceSource | undefined> {
    const kind = this.kinds.find((k) => k.owns(panel.origin));
    if (!kind) {
      this.log.warn(`no source for the panel of ${panel.origin.uri}`);
      return undefined;
    }
    const gone = await fileGone(panel.origin.uri);
    if (gone) {
      // (renamed or deleted since its trace: the graph stays, said to be of the file as it was)
      const why = `${gone} is not there any more (renamed or deleted?)`;
      panel.markStale(why); // (the banner adds that the graph is the last trace's that worked)
      if (!quiet) void showWarning(`torchscope: ${why}: the panel keeps its last graph`);
      return undefined;
    }
    return kind.reopen(panel.origin, quiet);
  }
}

/** The file's name when `uri` is a file on disk that is gone and no editor holds it open
 * (an open document is traced from its text); undefined otherwise. */
async function fileGone(uri: string): Promise<string | undefined> {
  let parsed: vscode.Uri;
  try {
    parsed = vscode.Uri.parse(uri, true);
  } catch {
    return undefined;
  }
  if (parsed.scheme !== "file" || vscode.workspace.textDocuments.some((d) => d.uri.toString() === parsed.toString())) return undefined;
  try {
    await vscode.workspace.fs.stat(parsed);
    return undefined;
  } catch (e) {
    // (FileSystemError's code; any other failure: let the source say what it is)
    return (e as { code?: unknown } | undefined)?.code === "FileNotFound" ? parsed.path.split("/").pop() : undefined;
  }
}
