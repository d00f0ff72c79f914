// The comparison commands: "Compare forward pass with HEAD", "Compare with training mode",
// "Compare with another input…" for the model at the cursor (or named by an argument, or the
// active panel's), and at a breakpoint "Compare with the previous paused trace". Each finds
// what to compare and hands a comparison source (compareSource.ts) to the one trace flow.
import * as vscode from "vscode";
import type { Server } from "./client";
import type { CompareSources } from "./compareSource";
import { parseCompareTarget, type CompareKind } from "./compareTargets";
import { saidNotebookCell, saySyntaxError, syntaxError, visualizeArgs } from "./commands";
import { GraphPanel } from "./graphPanel";
import { DEBUG_URI } from "./pausedSource";
import type { TraceFlow, Traced } from "./traceFlow";
import { showError, showInformation } from "./notify";

export interface CompareCommandDeps {
  flow: TraceFlow;
  compare: CompareSources;
  server: Server;
  log: vscode.LogOutputChannel;
}

const NO_MODEL =
  "torchscope: put the cursor inside an nn.Module class, on a variable assigned from one, or in a function that builds a model, then compare.";

export class CompareCommands {
  constructor(private readonly deps: CompareCommandDeps) {}

  register(): vscode.Disposable[] {
    const cmd = vscode.commands.registerCommand;
    return [
      cmd("torchscope.compareWithHead", (arg?: unknown) => this.compare("head", arg)),
      cmd("torchscope.compareWithTraining", (arg?: unknown) => this.compare("train", arg)),
      cmd("torchscope.compareWithInput", (arg?: unknown) => this.compare("input", arg)),
      cmd("torchscope.compareWithPreviousPaused", (arg?: unknown) => this.comparePaused(arg)),
    ];
  }

  /** The model to compare: named by `arg`, else at the cursor, else the active panel's. */
  async model(arg?: unknown): Promise<{ doc: vscode.TextDocument; target: string } | undefined> {
    const named = visualizeArgs(arg);
    if (saidNotebookCell(named ? vscode.Uri.parse(named.uri) : vscode.window.activeTextEditor?.document.uri)) return undefined;
    if (named) return { doc: await vscode.workspace.openTextDocument(vscode.Uri.parse(named.uri)), target: named.target };
    const editor = vscode.window.activeTextEditor;
    if (editor?.document.languageId === "python") {
      const doc = editor.document;
      const pos = editor.selection.active;
      let found: Awaited<ReturnType<Server["targetAt"]>>;
      try {
        found = await this.deps.server.targetAt({
          uri: doc.uri.toString(),
          position: { line: pos.line, character: pos.character },
          text: doc.getText(),
        });
      } catch (e) {
        this.deps.log.error(`language server: ${String(e)}`);
        void showError("torchscope: the language server did not answer; see the torchscope output.");
        return undefined;
      }
      if (found) return { doc, target: found.target };
      if (await this.doesNotParse(doc)) return undefined;
    }
    // From a graph panel: its model (a comparison panel's model too).
    const panel = GraphPanel.active;
    if (panel && panel.origin.uri !== DEBUG_URI && !editor) {
      const target = parseCompareTarget(panel.origin.target)?.target ?? panel.origin.target;
      try {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(panel.origin.uri));
        if (doc.languageId === "python") return { doc, target };
      } catch {
        /* a graph file's panel: no document */
      }
    }
    void showInformation(NO_MODEL);
    return undefined;
  }

  /** No model at the cursor because the file does not parse: said where (with Go to Line),
   * as Visualize says it, not "put the cursor inside an nn.Module class". */
  private async doesNotParse(doc: vscode.TextDocument): Promise<boolean> {
    try {
      await this.deps.server.targets({ uri: doc.uri.toString(), text: doc.getText() });
      return false;
    } catch (e) {
      const syntax = syntaxError(e);
      if (syntax) saySyntaxError(doc, syntax);
      return syntax !== undefined;
    }
  }

  async compare(kind: Exclude<CompareKind, "paused">, arg?: unknown): Promise<Traced | undefined> {
    const m = await this.model(arg);
    if (!m) return undefined;
    const uri = m.doc.uri.toString();
    if (kind === "input") {
      // the box starts with the other input given before, else the input its panel shows
      const input = GraphPanel.find(uri, m.target)?.origin.input;
      const shown = input?.expr;
      const value = await vscode.window.showInputBox({
        title: `Compare ${m.target} with another input`,
        prompt: "The other input: an expression (a tuple → positional arguments, a dict → keywords). The first side uses the model's own input.",
        placeHolder: shown ?? input?.template ?? "an expression, as in a call: torch.randn(8, 64)",
        value: this.deps.compare.otherInput(uri, m.target) ?? shown,
        ignoreFocusOut: true,
      });
      if (!value?.trim()) return undefined;
      await this.deps.compare.setOtherInput(uri, m.target, value.trim());
    }
    const source = await this.deps.compare.source(kind, m.doc, m.target);
    return source && this.deps.flow.run(source);
  }

  /** The last two graphs traced at breakpoints of the active paused panel's model (or the last one traced). */
  async comparePaused(arg?: unknown): Promise<Traced | undefined> {
    const panel = GraphPanel.active;
    const named = typeof arg === "string" ? arg : undefined;
    const own = panel?.origin.uri === DEBUG_URI ? (parseCompareTarget(panel.origin.target)?.target ?? panel.origin.target) : undefined;
    const expr = named ?? own ?? this.deps.compare.deps.history.lastTarget;
    if (!expr) {
      void showInformation(
        "torchscope: no model was traced at a breakpoint yet. Run “Visualize forward pass (paused frame)” at one breakpoint and again at another, then compare.",
      );
      return undefined;
    }
    return this.deps.flow.run(this.deps.compare.pausedSource(expr));
  }
}
