// Comparisons as trace sources of the one trace flow (traceFlow.ts): a panel opens, progress
// with Cancel, an input asked for when missing, the graph shown. A comparison of a model in the
// editor traces it twice through the language server (HEAD's text and the editor's, eval and
// training mode, two inputs: the same runner, the same target), then asks the server for the
// compare view of the two graph files (torchscope/compare); a comparison at a breakpoint
// compares the last two graphs traced of the paused model. The panel's target says which
// comparison it is (compareTargets.ts), so Re-trace compares again.
import * as fs from "node:fs/promises";
import * as vscode from "vscode";
import type { Server } from "./client";
import { compareTarget, compareTitle, parseCompareTarget, SIDES, type CompareKind } from "./compareTargets";
import type { AnswerStore, EditorSource, EditorSources } from "./editorSource";
import { type HeadDocuments, type HeadFile, headText, headTexts, NoHeadError } from "./gitHead";
import { GraphPanel } from "./graphPanel";
import { errorText } from "./logChannel";
import { DEBUG_URI } from "./pausedSource";
import { modelName, type CompareResult, type PanelOrigin, type TraceSummary } from "./protocol";
import type { Answer, Ask, SourceKind, TraceOutcome, TraceSource, Traced } from "./traceFlow";
import { showError, showInformation, showWarning } from "./notify";

// ---- the last graphs traced at breakpoints ---------------------------------------------

export interface PausedGraph {
  path: string;
  model: string;
  /** The live model traced ("pid:id", from the debuggee); undefined from an older one. */
  identity?: string;
}

/** The last two graphs traced of each paused target (an expression in the paused frame),
 * both of one live model: `self` in another module's forward, or `model` in another program,
 * starts again (comparing them would compare two models). */
export class PausedHistory {
  private readonly byTarget = new Map<string, PausedGraph[]>();
  private newest: string | undefined;

  record(target: string, model: string, path: string, identity?: string): void {
    // (a reply that names no model, from an older debuggee: taken as the same one)
    const before = (this.byTarget.get(target) ?? []).filter((g) => !identity || !g.identity || g.identity === identity);
    this.byTarget.set(target, [...before, { path, model, ...(identity ? { identity } : {}) }].slice(-2));
    this.newest = target;
  }

  /** The target traced last (the default when no paused panel is active). */
  get lastTarget(): string | undefined {
    return this.newest;
  }

  /** The graphs of `target`, older first: two when it was traced twice. */
  graphs(target: string): readonly PausedGraph[] {
    return this.byTarget.get(target) ?? [];
  }
}

// ---- what a comparison reports ----------------------------------------------------------

/** The summary the flow shows a comparison with: b's trace, b's error else a's, named by its
 * side ("working copy", "input torch.randn(2, 7)"). */
export function comparedSummary(a: TraceSummary | undefined, b: TraceSummary | undefined, model: string, aName: string, bName: string): TraceSummary {
  const base: TraceSummary = b ??
    a ?? { model, qualname: model, nodes: 0, edges: 0, ops: 0, modules: 0, params: 0, trace_ms: 0, input: "", error: null };
  // a's error alone is said as a's ("HEAD"), its line opened in a's version of the file
  const error = b?.error ? { ...b.error, sideName: bName } : a?.error ? { ...a.error, side: aName, sideName: aName } : null;
  return { ...base, error };
}

/** One line for the log and the "no difference" message. */
export function compareLine(r: CompareResult): string {
  const s = r.summary;
  return `${s.added} added, ${s.removed} removed, ${s.changed} changed, ${s.same} same`;
}

export interface CompareDeps {
  server: Server;
  editor: EditorSources;
  answers: AnswerStore;
  head: HeadDocuments;
  history: PausedHistory;
  log: vscode.LogOutputChannel;
}

const VALUES_IGNORED = 1e9; // a tolerance no statistic's change reaches

async function compareFiles(
  deps: CompareDeps,
  kind: CompareKind,
  model: string,
  a: string,
  b: string,
  names?: { a: string; b: string },
): Promise<TraceOutcome & { result?: CompareResult }> {
  const sides = names ?? SIDES[kind];
  let r: CompareResult;
  // eval → training mode: dropout's randomness changes every value after it; what differs is
  // what the model does (dropout and batch norm switched, NaN/Inf counts, compared exactly)
  const tolerance = kind === "train" ? { statsTolerance: VALUES_IGNORED } : {};
  try {
    r = await deps.server.compare({ a, b, aSource: sides.a, bSource: sides.b, ...tolerance });
  } catch (e) {
    const message = errorText(e);
    deps.log.error(`compare ${model}: ${message}`);
    void showError(`torchscope: comparing ${model} failed: ${message}`);
    return { ok: false, kind: "reported", said: `comparing failed: ${message}` };
  }
  deps.log.info(`compared ${model} (${sides.a} → ${sides.b}): ${compareLine(r)}, ${r.summary.changes} changes to step through → ${r.path}`);
  // A hover's "Show in graph" on a line of either trace finds this comparison's panel.
  GraphPanel.graphs.side(a, r.path, "a");
  GraphPanel.graphs.side(b, r.path, "b");
  if (r.summary.changes === 0) {
    void showInformation(`torchscope: the forward pass of ${model} is the same with ${sides.a} and ${sides.b}.`);
  }
  return { ok: true, traced: { path: r.path }, result: r };
}

// ---- a model in the editor, traced twice ------------------------------------------------

/** `target` of a document traced as two sides (`a` before, `b` after), then compared. */
export class EditorCompareSource implements TraceSource {
  readonly uri: string;
  readonly target: string;
  readonly progressTitle: string;

  constructor(
    private readonly deps: CompareDeps,
    readonly kind: Exclude<CompareKind, "paused">,
    doc: vscode.TextDocument,
    readonly label: string,
    private readonly a: EditorSource,
    private readonly b: EditorSource,
  ) {
    this.uri = doc.uri.toString();
    this.target = compareTarget(kind, label);
    this.progressTitle = `Comparing ${label}: ${SIDES[kind].a} → ${SIDES[kind].b}`;
  }

  async trace(progress: (message: string) => void, cancel: vscode.CancellationToken): Promise<TraceOutcome> {
    const { a: nameA, b: nameB } = SIDES[this.kind];
    let ra = await this.a.trace((m) => progress(`${nameA}: ${m}`), cancel);
    if (!ra.ok) return ra;
    if (cancel.isCancellationRequested) return { ok: false, kind: "cancelled" };
    const rb = await this.b.trace((m) => progress(`${nameB}: ${m}`), cancel);
    if (!rb.ok) return rb;
    // One input on both sides (HEAD, training mode): where b's guess had to differ from a's
    // (batch norm in training mode refuses a batch of one), every node would differ by it;
    // a again with b's input, unless a can't take it (b's first layer wants another size)
    const input = this.kind === "input" ? undefined : otherGuess(ra.traced.summary, rb.traced.summary);
    if (input !== undefined) {
      if (cancel.isCancellationRequested) return { ok: false, kind: "cancelled" };
      const again = await this.a.withInput(input).trace((m) => progress(`${nameA}: ${m}`), cancel);
      if (!again.ok && again.kind === "cancelled") return again;
      if (again.ok && (!again.traced.summary?.error || ra.traced.summary?.error)) ra = again;
    }
    progress("comparing");
    // Two inputs: the page names each side by its input expression.
    const names =
      this.kind === "input" ? { a: `input ${ra.traced.summary?.input ?? "?"}`, b: `input ${rb.traced.summary?.input ?? "?"}` } : undefined;
    const out = await compareFiles(this.deps, this.kind, this.label, ra.traced.path, rb.traced.path, names);
    if (!out.ok) return out;
    const summary = comparedSummary(ra.traced.summary, rb.traced.summary, this.label, names?.a ?? nameA, names?.b ?? nameB);
    // The panel's input bar names both inputs of a comparison of two inputs, not b's alone.
    if (names) {
      summary.input = `${ra.traced.summary?.input ?? "?"} → ${rb.traced.summary?.input ?? "?"}`;
      delete summary.inputExpr;
    }
    const traced: Traced = { path: out.traced.path, summary };
    return { ok: true, traced };
  }

  /** What both sides lack (an input, constructor arguments, consent to run the file's
   * top-level code): asked once, for the model. */
  ask(what: Ask): Promise<Answer> {
    return this.a.ask(what);
  }

  panelTitle(summary: TraceSummary | null): string {
    return compareTitle(this.kind, modelName(summary, this.label));
  }
}

/** b's input expression when both sides' inputs were guesses and b's is another one. */
function otherGuess(a: TraceSummary | undefined, b: TraceSummary | undefined): string | undefined {
  if (a?.inputKind !== "guess" || b?.inputKind !== "guess" || !b.inputExpr) return undefined;
  return a.inputExpr === b.inputExpr ? undefined : b.inputExpr;
}

// ---- two graphs traced at breakpoints ---------------------------------------------------

/** The last two graphs of a paused target, compared (nothing traced again). */
export class PausedCompareSource implements TraceSource {
  readonly uri = DEBUG_URI;
  readonly target: string;
  readonly label: string;
  readonly progressTitle: string;

  constructor(
    private readonly deps: CompareDeps,
    private readonly expr: string,
  ) {
    this.target = compareTarget("paused", expr);
    const graphs = deps.history.graphs(expr);
    this.label = graphs.at(-1)?.model || expr;
    this.progressTitle = `Comparing the last two paused traces of ${this.label}`;
  }

  async trace(): Promise<TraceOutcome> {
    const graphs = this.deps.history.graphs(this.expr);
    if (graphs.length < 2) {
      void showInformation(
        `torchscope: ${this.label} was traced at a breakpoint ${graphs.length === 1 ? "once" : "never"} in this window. Visualize it when the program is paused (again), then compare.`,
      );
      return { ok: false, kind: "reported" };
    }
    const [older, newer] = graphs as [PausedGraph, PausedGraph];
    for (const g of graphs) {
      if (
        !(await fs.access(g.path).then(
          () => true,
          () => false,
        ))
      ) {
        void showWarning(`torchscope: the graph file ${g.path} is gone; visualize ${this.label} at a breakpoint again.`);
        return { ok: false, kind: "reported" };
      }
    }
    return compareFiles(this.deps, "paused", this.label, older.path, newer.path);
  }

  ask(): Promise<Answer> {
    return Promise.resolve(undefined);
  }

  panelTitle(summary: TraceSummary | null): string {
    return compareTitle("paused", modelName(summary, this.label));
  }
}

// ---- the kind of source that owns comparison panels -------------------------------------

export class CompareSources implements SourceKind {
  constructor(readonly deps: CompareDeps) {}

  /** Comparison panels only: list this kind first (the editor's kind takes every other panel). */
  owns(origin: PanelOrigin): boolean {
    return parseCompareTarget(origin.target) !== undefined;
  }

  /** The model's other input (Compare with another input…), remembered per model. */
  otherInput(uri: string, target: string): string | undefined {
    return this.deps.answers.get(uri, compareTarget("input", target)).input;
  }

  async setOtherInput(uri: string, target: string, input: string): Promise<void> {
    await this.deps.answers.set(uri, compareTarget("input", target), { input });
  }

  /** A comparison of `target` in `doc`; undefined after saying why there can't be one. */
  async source(
    kind: Exclude<CompareKind, "paused">,
    doc: vscode.TextDocument,
    target: string,
    quiet = false,
  ): Promise<EditorCompareSource | undefined> {
    const editor = this.deps.editor;
    switch (kind) {
      case "head": {
        if (doc.uri.scheme !== "file") {
          if (!quiet) void showInformation("torchscope: save the file in a git repository first: an unsaved document has no HEAD.");
          return undefined;
        }
        let text: string;
        try {
          text = await headText(doc.uri.fsPath);
        } catch (e) {
          const message = e instanceof NoHeadError ? e.message : String(e);
          this.deps.log.warn(`compare with HEAD: ${message}`);
          if (!quiet) void showWarning(`torchscope: ${message}.`);
          return undefined;
        }
        // The model's imports as committed too: an edit in a module the file imports shows.
        let texts: HeadFile[] = [];
        try {
          texts = await headTexts(doc.uri.fsPath);
        } catch (e) {
          this.deps.log.warn(`compare with HEAD: the other files are taken as saved, not as in HEAD: ${(e as Error).message ?? e}`);
        }
        // Clicks on HEAD's nodes open these texts, the ones traced.
        this.deps.head.remember(doc.uri.fsPath, text, texts);
        return new EditorCompareSource(this.deps, kind, doc, target, editor.source(doc, target, { text, texts }), editor.source(doc, target));
      }
      case "train":
        return new EditorCompareSource(
          this.deps,
          kind,
          doc,
          target,
          editor.source(doc, target, { train: false }),
          editor.source(doc, target, { train: true }),
        );
      case "input": {
        const other = this.otherInput(doc.uri.toString(), target);
        if (!other) {
          if (!quiet) void showInformation(`torchscope: run “Compare with another input…” to give ${target} its other input.`);
          return undefined;
        }
        return new EditorCompareSource(this.deps, kind, doc, target, editor.source(doc, target), editor.source(doc, target, { input: other }));
      }
    }
  }

  pausedSource(expr: string): PausedCompareSource {
    return new PausedCompareSource(this.deps, expr);
  }

  /** Re-trace a comparison panel: compare again, as it was asked (quietly on save: no messages). */
  async reopen(origin: PanelOrigin, quiet: boolean): Promise<TraceSource | undefined> {
    const c = parseCompareTarget(origin.target);
    if (!c) return undefined;
    if (c.kind === "paused") return quiet ? undefined : this.pausedSource(c.target);
    let doc: vscode.TextDocument;
    try {
      doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(origin.uri));
    } catch (e) {
      if (!quiet) void showWarning(`torchscope: ${origin.uri} can't be opened any more: ${errorText(e)}`);
      return undefined;
    }
    return this.source(c.kind, doc, c.target, quiet);
  }
}
