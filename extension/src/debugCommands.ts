// The commands at a breakpoint: "Visualize forward pass (paused frame)" from the palette and
// "Visualize forward pass" on a variable in the Variables view, while a Python (debugpy)
// session is paused. They choose what to trace (the modules reachable from the selected
// frame, likeliest first, in a quick pick) and hand it to the one trace flow (traceFlow.ts)
// as a paused-frame source (pausedSource.ts).
import * as vscode from "vscode";
import { candidateItems, type CandidatesReply } from "./debugBridge";
import { DEBUG_URI, reportDebugError, type PausedSources } from "./pausedSource";
import type { TraceFlow } from "./traceFlow";
import { showInformation } from "./notify";

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

export interface DebugDeps {
  flow: TraceFlow;
  paused: PausedSources;
  log: vscode.LogOutputChannel;
}

export class DebugCommands {
  constructor(private readonly deps: DebugDeps) {}

  register(): vscode.Disposable[] {
    const cmd = vscode.commands.registerCommand;
    return [
      cmd("torchscope.visualizePausedFrame", () => this.visualizePausedFrame()),
      cmd("torchscope.visualizeVariable", (arg?: unknown) => this.visualizeVariable(arg)),
    ];
  }

  /** Palette: the modules of the selected frame, likeliest first → trace the one picked. */
  async visualizePausedFrame(): Promise<void> {
    const { flow, paused, log } = this.deps;
    const frame = await paused.pausedFrame();
    if (!frame) return;
    const bridge = paused.bridge(frame);
    // The panel opens now, unnamed: VS Code takes about a second to start a new webview's
    // page, which runs while the frame's models are listed and the user picks; the pick names
    // it (whichever model it is). Escape, or no model, closes it again. With a paused-frame
    // panel open already (the same breakpoint again), the pick most likely wants that one.
    const unnamed = flow.openUnnamedPanel(DEBUG_URI, "Finding the models of the paused frame…");
    const t0 = Date.now();
    const r = await bridge.request<CandidatesReply>({ op: "candidates" });
    if (!r.ok || !r.modules.length) unnamed?.dispose();
    if (!r.ok) return reportDebugError(r, log);
    log.info(`debug: ${r.modules.length} candidates (${r.more} more) in ${Date.now() - t0} ms`);
    if (!r.modules.length) {
      const c = await showInformation(
        "torchscope: no nn.Module is reachable from the selected frame. Select another frame in the Call Stack, or type an expression for the model.",
        "Enter an Expression…",
      );
      if (!c) return;
      const expr = await vscode.window.showInputBox({
        title: "Model to trace",
        prompt: "An expression evaluated in the paused frame",
        placeHolder: "self.model",
        ignoreFocusOut: true,
      });
      if (expr?.trim()) await flow.run(paused.source(bridge, expr.trim(), expr.trim()));
      return;
    }
    // While the user reads the list: the tracer's imports (a few hundred ms the first time),
    // and for the model listed first, the statistics of its weights a first trace reads.
    const first = r.modules[0]!;
    void bridge.request({ op: "warm", ...(first.inputs ? { expr: first.expr } : {}) });
    const items = candidateItems(r.modules);
    const pick = await vscode.window.showQuickPick(items, {
      title: "Visualize forward pass (paused frame)",
      placeHolder: r.more ? `Pick a model (${r.more} more not listed: right-click one in the Variables view)` : "Pick a model",
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!pick) {
      unnamed?.dispose();
      return;
    }
    const c = pick.candidate;
    // Claimed: the picked model's panel now (a panel it had already stays, and this closes).
    const claimed = flow.claimFor(unnamed, c.expr, `Forward pass: ${c.cls}`);
    await flow.run(paused.source(bridge, c.expr, c.name, c.guess ?? undefined), { askFirst: !c.inputs, ...claimed });
  }

  /** Variables view: right-click a variable holding a module. */
  async visualizeVariable(arg?: unknown): Promise<void> {
    const v = variableExpression(arg);
    if (!v) {
      void showInformation("torchscope: this variable has no expression to evaluate; use “Visualize forward pass (paused frame)” from the palette.");
      return;
    }
    const frame = await this.deps.paused.pausedFrame((arg as VariableMenuArg | undefined)?.sessionId);
    if (frame) await this.deps.flow.run(this.deps.paused.source(this.deps.paused.bridge(frame), v.expr, v.name));
  }
}
