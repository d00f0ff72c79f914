// The one way a trace goes, whichever program runs it: open the panel at once (the viewer
// boots while the model is traced) → trace with a progress notification and Cancel → when
// the trace lacks an input, ask and trace again → show the graph → a model that raised:
// its line beside the graph, "Go to Line" and "Change Input…". Two sources feed it, each a
// small object with the same interface: the language server for a model in the editor
// (editorSource.ts) and a paused debug session (pausedSource.ts). A panel's Re-trace and
// Change Input… come back here through the source kind that owns the panel.
import * as vscode from "vscode";
import { saveAs } from "./export";
import { GraphPanel, type PanelEvents } from "./graphPanel";
import { panelTitle, modelName, type PanelOrigin, type TraceSummary } from "./protocol";
import { revealLine, revealSite } from "./reveal";

/** A graph file written on this machine, and what its trace said (absent for a graph whose
 * summary never reached the extension: a next call traced in a local debuggee). */
export interface Traced {
  path: string;
  summary?: TraceSummary;
}

/** What the trace lacked: the flow asks the source to ask the user. */
export type Missing = "needs-input" | "needs-ctor-args";

export type TraceOutcome =
  | { ok: true; traced: Traced }
  | { ok: false; kind: Missing; message: string }
  /** Nothing to say (the user cancelled), or the source said what went wrong already. */
  | { ok: false; kind: "cancelled" | "reported" };

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
  /** Ask the user for what the trace lacked (`message`: the tracer's words, may be empty). */
  ask(missing: Missing, message: string): Promise<Answer>;
  /** Trace the next call of the model instead (a running program only); shows its own progress. */
  traceNextCall?(): Promise<TraceOutcome>;
  /** The panel's title when it is not "Forward pass: Model" (a comparison's). */
  panelTitle?(summary: TraceSummary | null): string;
}

/** The sources of one kind: who owns a panel, and its source again for a re-trace. */
export interface SourceKind {
  owns(origin: PanelOrigin): boolean;
  /** The panel's source now, or undefined after telling the user why not (quietly: no questions). */
  reopen(origin: PanelOrigin, quiet: boolean): Promise<TraceSource | undefined>;
}

export interface RunOptions {
  /** Re-trace on save: a status-bar spinner instead of a notification, no questions, no Cancel. */
  quiet?: boolean;
  /** Ask for an input before the first trace (Change Input…, a paused model with none known). */
  askFirst?: boolean;
  /** A panel opened for this trace beforehand; closed again if no graph comes of it. */
  opened?: GraphPanel;
}

/** At most this many traces for one command (each answer is one more). */
const MAX_ATTEMPTS = 4;

export class TraceFlow {
  readonly events: PanelEvents;

  constructor(
    private readonly viewerDir: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly kinds: SourceKind[],
  ) {
    this.events = {
      reveal: (site, panel, side) => void revealSite(site, panel, side),
      save: (name, mime, data) => void saveAs(name, mime, data),
      retrace: (panel) => void this.retrace(panel),
      log,
    };
  }

  /** Panels restored after a reload come back through here (their graph file, else a re-trace). */
  register(): vscode.Disposable[] {
    return [
      vscode.window.registerWebviewPanelSerializer(GraphPanel.viewType, {
        deserializeWebviewPanel: async (panel, state) => void (await GraphPanel.revive(panel, state, this.viewerDir, this.events)),
      }),
    ];
  }

  /** The panel of `origin`, brought forward, or a new one beside the editor. */
  openPanel(origin: PanelOrigin): GraphPanel {
    return GraphPanel.createOrShow(this.viewerDir, origin, this.events);
  }

  /** Trace `source` (asking for inputs as needed) and show the graph; undefined when none came. */
  async run(source: TraceSource, opts: RunOptions = {}): Promise<Traced | undefined> {
    let opened = opts.opened;
    if (!opened && !opts.quiet && !GraphPanel.find(source.uri, source.target)) {
      opened = this.openPanel({ uri: source.uri, target: source.target, title: source.panelTitle?.(null) ?? panelTitle(null, source.label) });
    }
    let missing: { kind: Missing; message: string } | undefined = opts.askFirst ? { kind: "needs-input", message: "" } : undefined;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      let answer: Answer = "retry";
      if (missing) {
        if (opts.quiet) break;
        answer = await source.ask(missing.kind, missing.message);
        if (!answer) break;
      }
      let outcome: TraceOutcome;
      if (answer === "next-call" && source.traceNextCall) {
        // The program may take long to get there: its panel opens when the graph comes.
        opened?.dispose();
        opened = undefined;
        outcome = await source.traceNextCall();
      } else {
        outcome = await this.traceWithProgress(source, opts.quiet ?? false);
      }
      if (outcome.ok) {
        await this.show(source, outcome.traced);
        return outcome.traced;
      }
      if (outcome.kind !== "needs-input" && outcome.kind !== "needs-ctor-args") break;
      missing = { kind: outcome.kind, message: outcome.message };
    }
    opened?.dispose();
    return undefined;
  }

  private traceWithProgress(source: TraceSource, quiet: boolean): Thenable<TraceOutcome> {
    const location = quiet ? vscode.ProgressLocation.Window : vscode.ProgressLocation.Notification;
    return vscode.window.withProgress({ location, title: source.progressTitle, cancellable: !quiet }, (progress, cancel) =>
      source.trace((message) => progress.report({ message }), cancel),
    );
  }

  /** The graph in its panel; a model that raised: its line beside the graph and a way on. */
  private async show(source: TraceSource, traced: Traced): Promise<void> {
    const summary = traced.summary ?? null;
    const title = source.panelTitle?.(summary) ?? panelTitle(summary, source.label);
    const panel = this.openPanel({ uri: source.uri, target: source.target, title });
    try {
      await panel.load(traced.path);
    } catch (e) {
      void vscode.window.showErrorMessage(`torchscope: can't read the graph file ${traced.path}: ${String(e)}`);
      return;
    }
    const err = summary?.error;
    if (!err) return;
    // The graph stops at the failing call; show the line that raised beside it.
    const line = err.file && err.line ? { file: err.file, line: err.line } : undefined;
    if (line) void revealLine(line.file, line.line, panel, true);
    const buttons = line ? ["Go to Line", "Change Input…"] : ["Change Input…"];
    void vscode.window
      .showWarningMessage(`torchscope: ${modelName(summary, source.label)} raised ${err.type}: ${err.message}`, ...buttons)
      .then((c) => {
        if (c === "Go to Line" && line) void revealLine(line.file, line.line, panel);
        else if (c === "Change Input…") void this.changeInput(panel);
      });
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

  private reopen(panel: GraphPanel, quiet: boolean): Promise<TraceSource | undefined> {
    const kind = this.kinds.find((k) => k.owns(panel.origin));
    if (!kind) this.log.warn(`no source for the panel of ${panel.origin.uri}`);
    return kind ? kind.reopen(panel.origin, quiet) : Promise.resolve(undefined);
  }
}
