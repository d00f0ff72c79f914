// The editor's commands: visualize (find the target at the cursor, else pick one of the
// file's models, and hand it to the one trace flow as an editor source), re-trace and change
// the input of a panel (through the flow, for either source), re-trace on save, export, open
// a graph file, restart the server, and the node menu's Go to Definition / Go to Call Site /
// Go to Library Frame.
import * as path from "node:path";
import * as vscode from "vscode";
import { describeInterpreter, type Bundle, type Server } from "./client";
import type { EditorSources } from "./editorSource";
import { saveAs, standaloneHtmlFromBundle } from "./export";
import { GraphPanel } from "./graphPanel";
import { pickInterpreter } from "./interpreter";
import { panelTitle, type NodeContext, type TargetAtResult, type VisualizeArgs } from "./protocol";
import { revealLine } from "./reveal";
import { openGraphFile } from "./revealNode";
import type { TraceFlow, Traced } from "./traceFlow";
import { showError, showInformation, showWarning } from "./notify";

/** The CodeLens / test argument, if the command got one. */
export function visualizeArgs(arg: unknown): VisualizeArgs | undefined {
  const a = arg as Partial<VisualizeArgs> | undefined;
  return a && typeof a.uri === "string" && typeof a.target === "string" ? { uri: a.uri, target: a.target } : undefined;
}

/** The scheme of a notebook's cells (a cell of a .ipynb open in VS Code's notebook editor). */
export const NOTEBOOK_CELL_SCHEME = "vscode-notebook-cell";

/** What a command run on a notebook cell says: a cell is no file the runner can import (it has
 * no path: the server took it for an unsaved, untitled file), and a notebook draws its models
 * itself. */
export const NOTEBOOK_CELL =
  "torchscope: a notebook cell is not traced from the editor. In the notebook, run `torchscope.show(model, x)` in a cell to draw the model's forward pass there.";

/** A notebook's cell (its document is no file to import). */
export function isNotebookCell(uri: { scheme: string }): boolean {
  return uri.scheme === NOTEBOOK_CELL_SCHEME;
}

/** A notebook's cell: said once (NOTEBOOK_CELL), before anything is asked of the server or a
 * panel or a progress notification opens; true then. (The menus leave the commands out in a
 * cell; a keybinding, or the palette with the cell focused, still runs them.) */
export function saidNotebookCell(uri: { scheme: string } | undefined): boolean {
  if (!uri || !isNotebookCell(uri)) return false;
  void showInformation(NOTEBOOK_CELL);
  return true;
}

const NO_TARGET = "torchscope: put the cursor inside an nn.Module class, on a variable assigned from one, or in a function that builds a model.";

const KIND_TEXT: Record<TargetAtResult["kind"], string> = {
  class: "nn.Module class",
  instance: "model built at import",
  factory: "function that builds a model",
};

/** The file's models as quick-pick items, in file order. */
export function targetItems(found: TargetAtResult[]): (vscode.QuickPickItem & { target: string })[] {
  return found.map((t) => ({ label: t.target, description: `${KIND_TEXT[t.kind]} · line ${t.line + 1}`, target: t.target }));
}

/** The quick pick's item for the paused program's live model (its target: none). */
export const PAUSED_ITEM: vscode.QuickPickItem & { target: string } = {
  label: "$(debug-pause) The paused program's live model…",
  description: "torchscope: Visualize forward pass (paused frame)",
  detail: "the model in the paused frame, traced with its real inputs",
  target: "",
};

/** The items when the cursor is on no model: the paused program's live model first while a
 * debug session is paused (the file's classes would be built anew, with guessed inputs). */
export function pickItems(found: TargetAtResult[], paused: boolean): (vscode.QuickPickItem & { target: string })[] {
  return [...(paused ? [PAUSED_ITEM] : []), ...targetItems(found)];
}

// ---- the commands ------------------------------------------------------------------------

export interface CommandDeps {
  flow: TraceFlow;
  editor: EditorSources;
  client: Server;
  bundle: Bundle;
  log: vscode.LogOutputChannel;
}

export class Commands {
  constructor(private readonly deps: CommandDeps) {}

  register(): vscode.Disposable[] {
    const cmd = vscode.commands.registerCommand;
    return [
      cmd("torchscope.visualize", (arg?: unknown) => this.visualize(arg)),
      cmd("torchscope.retrace", () => this.retrace()),
      cmd("torchscope.export", (format?: unknown) => this.export(format)),
      cmd("torchscope.openGraph", (file?: unknown) => this.openGraph(file)),
      cmd("torchscope.goToDefinition", (ctx?: NodeContext) => this.goToDefinition(ctx)),
      cmd("torchscope.goToCallSite", (ctx?: NodeContext) => this.goToCallSite(ctx)),
      cmd("torchscope.goToLibraryFrame", (ctx?: NodeContext) => this.goToLibraryFrame(ctx)),
      cmd("torchscope.changeInput", () => this.deps.flow.changeInput()),
      cmd("torchscope.restartServer", () => this.restartServer()),
      cmd("torchscope.showLog", () => this.deps.log.show()),
      vscode.workspace.onDidSaveTextDocument((doc) => this.onSave(doc)),
    ];
  }

  /** Right-click, palette or CodeLens: trace the model at the cursor (or the one named). */
  async visualize(arg?: unknown): Promise<Traced | undefined> {
    const named = visualizeArgs(arg);
    if (saidNotebookCell(named ? vscode.Uri.parse(named.uri) : vscode.window.activeTextEditor?.document.uri)) return undefined;
    let doc = named ? await vscode.workspace.openTextDocument(vscode.Uri.parse(named.uri)) : vscode.window.activeTextEditor?.document;
    if (doc?.languageId !== "python") {
      void showInformation("torchscope: open a Python file with a model first.");
      return undefined;
    }
    // (the cursor as it is now: a document saved as a file below opens with it at its start)
    const cursor = vscode.window.activeTextEditor?.selection.active ?? new vscode.Position(0, 0);
    if (doc.isUntitled) {
      doc = await saveUntitled(doc);
      if (!doc) return undefined;
    }
    let target = named?.target;
    if (target) return this.deps.flow.run(this.deps.editor.source(doc, target));
    // A window just opened: the language server, which names the model, is still starting
    // (about a second). The panel opens now, so its viewer boots meanwhile (unless the file
    // has a panel already: the click most likely wants that one).
    const unnamed = this.deps.client.running ? undefined : this.deps.flow.openUnnamedPanel(doc.uri.toString(), "Starting the language server…");
    const t0 = Date.now();
    const found = await this.targetAt(doc, cursor);
    if (found && found !== "failed") this.deps.log.info(`target ${found.target} (${found.kind}) at the cursor, found in ${Date.now() - t0} ms`);
    target = found === "failed" ? undefined : found ? found.target : await this.pickTarget(doc);
    if (!target) {
      unnamed?.dispose();
      return undefined;
    }
    // Claimed: the target's panel now (a panel the target had already stays, and this closes).
    const claimed = this.deps.flow.claimFor(unnamed, target, panelTitle(null, target));
    return this.deps.flow.run(this.deps.editor.source(doc, target), claimed);
  }

  /** The cursor is on no model: the file's models in a quick pick (none: say where to go). */
  private async pickTarget(doc: vscode.TextDocument): Promise<string | undefined> {
    let found: TargetAtResult[];
    try {
      found = await this.deps.client.targets({ uri: doc.uri.toString(), text: doc.getText() });
    } catch (e) {
      const syntax = syntaxError(e);
      if (syntax) {
        // its models can't be read until it parses: where, not "this file defines none"
        saySyntaxError(doc, syntax);
        return undefined;
      }
      this.serverFailed(e);
      return undefined;
    }
    const item = vscode.debug.activeStackItem;
    const paused = !!item && "frameId" in item;
    if (!found.length && !paused) {
      void showInformation(`${NO_TARGET} This file defines none.`);
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(pickItems(found, paused), {
      title: "Visualize forward pass",
      placeHolder: paused
        ? "The cursor is on no model: the paused program's, or one of this file's"
        : "The cursor is on no model: pick one of this file's",
      matchOnDescription: true,
    });
    if (pick === PAUSED_ITEM) {
      void vscode.commands.executeCommand("torchscope.visualizePausedFrame");
      return undefined;
    }
    return pick?.target;
  }

  /** Stop the server, start it again, and say which interpreter it runs in. */
  async restartServer(): Promise<void> {
    try {
      await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: "torchscope: restarting the language server" }, () =>
        this.deps.client.restart(),
      );
    } catch (e) {
      this.serverFailed(e);
      return;
    }
    const python = this.deps.client.python;
    this.deps.log.info(`the language server is running again${python ? ` with ${describeInterpreter(python)}` : ""}`);
    void showInformation(`torchscope: the language server is running again${python ? ` with ${describeInterpreter(python)}` : ""}.`);
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
    void showError(`torchscope: the language server did not start with ${python}.`, "Select Interpreter", "Show Log").then((c) =>
      c === "Select Interpreter" ? pickInterpreter() : c === "Show Log" ? this.deps.log.show() : undefined,
    );
  }

  async retrace(): Promise<void> {
    const panel = GraphPanel.active;
    if (!panel) {
      void showInformation("torchscope: no forward-pass panel to re-trace.");
      return;
    }
    await this.deps.flow.retrace(panel);
  }

  /** Re-trace on save (the setting): quietly, each open panel of the saved file. */
  private onSave(doc: vscode.TextDocument): void {
    if (!vscode.workspace.getConfiguration("torchscope", doc.uri).get<boolean>("retraceOnSave", false)) return;
    for (const p of GraphPanel.all()) if (p.origin.uri === doc.uri.toString()) void this.deps.flow.retrace(p, true);
  }

  async export(format?: unknown): Promise<void> {
    const panel = GraphPanel.active;
    if (!panel) {
      void showInformation("torchscope: open a forward-pass panel first.");
      return;
    }
    if (!panel.bytes) {
      // (its trace still runs, or made no graph: the viewer has nothing to draw from)
      void showInformation(`torchscope: ${panel.origin.title} has no graph to export yet.`);
      return;
    }
    if (panel.unreadable) {
      void showWarning(`torchscope: ${panel.origin.title} can't show its graph (${panel.unreadable}): nothing to export. Re-trace makes it again.`);
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
    else if (kind === "html") {
      // Without the zoom: the page fits its own window, at the panel's expansion.
      const view = panel.view && { graph: panel.view.graph, expanded: panel.view.expanded, groups: panel.view.groups, segments: panel.view.segments };
      const html = await standaloneHtmlFromBundle(panel.bytes, this.deps.bundle.viewerDir, panel.origin.title, view);
      // Named like the viewer's SVG and PNG: after the model's class.
      const model = panel.model ?? (panel.origin.title.replace(/^Forward pass: /, "") || panel.origin.target);
      const name = `${model.replace(/[^\w.-]+/g, "_")}.html`;
      await saveAs(name, "text/html", new TextEncoder().encode(html));
    }
  }

  /** Show a graph file written earlier (by the CLI, say) in a panel: a graph a panel of this
   * window traced opens as that model's panel again (its Re-trace traces the model); any other
   * as the file's own panel (its Re-trace: there is no code to re-trace). */
  async openGraph(file?: unknown): Promise<GraphPanel | undefined> {
    let fsPath = typeof file === "string" ? file : file instanceof vscode.Uri ? file.fsPath : undefined;
    if (!fsPath) {
      const picked = await vscode.window.showOpenDialog({ filters: { "torchscope graph": ["msgpack", "json"] }, canSelectMany: false });
      fsPath = picked?.[0]?.fsPath;
    }
    if (!fsPath) return undefined;
    return openGraphFile(this.deps.flow, path.resolve(fsPath));
  }

  private async goToDefinition(ctx?: NodeContext): Promise<void> {
    if (ctx?.defnFile && ctx.defnLine) await revealLine(ctx.defnFile, ctx.defnLine, GraphPanel.active);
  }

  private async goToCallSite(ctx?: NodeContext): Promise<void> {
    if (ctx?.siteFile && ctx.siteLine) await revealLine(ctx.siteFile, ctx.siteLine, GraphPanel.active, false, ctx.siteCol);
  }

  /** The library frame the node ran in (the error's `linear.py:134` behind the user's line). */
  private async goToLibraryFrame(ctx?: NodeContext): Promise<void> {
    if (ctx?.insideFile && ctx.insideLine) await revealLine(ctx.insideFile, ctx.insideLine, GraphPanel.active);
  }
}

/** A file never saved has no path to import: asked to be saved (Save As…); the saved
 * document, or undefined when the user would not. */
async function saveUntitled(doc: vscode.TextDocument): Promise<vscode.TextDocument | undefined> {
  const name = path.basename(doc.uri.path);
  const choice = await showWarning(`torchscope: ${name} has no file to import: save it to trace its model.`, "Save As…");
  if (choice !== "Save As…") return undefined;
  const saved = await vscode.workspace.save(doc.uri);
  if (!saved || saved.scheme === "untitled") return undefined;
  return vscode.workspace.openTextDocument(saved);
}

/** "m.py does not parse: line 10: …" with Go to Line, which puts the cursor there. */
export function saySyntaxError(doc: vscode.TextDocument, syntax: { message: string; line: number }): void {
  void showWarning(`torchscope: ${syntax.message}`, "Go to Line").then((c) => (c ? revealLine(doc.uri.fsPath, syntax.line) : undefined));
}

/** The server's answer for a document that does not parse (`syntax-error`), else undefined. */
export function syntaxError(e: unknown): { message: string; line: number } | undefined {
  const err = e as { message?: unknown; data?: { kind?: unknown; line?: unknown } } | null;
  if (err?.data?.kind !== "syntax-error" || typeof err.message !== "string") return undefined;
  return { message: err.message, line: typeof err.data.line === "number" ? err.data.line : 1 };
}
