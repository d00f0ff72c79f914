// A hover's "Show in graph" link (`command:torchscope.revealNode?ARGS`, docs/protocol.md): the
// panel that holds that graph shows the node (opened from the graph file when no panel holds it
// any more). And the other way round: after a server start, the graphs the panels show are
// indexed again, so their files keep their hints.
import * as path from "node:path";
import * as vscode from "vscode";
import type { GraphIndexer } from "./pausedHere";
import { parseCompareTarget } from "./compareTargets";
import { GraphPanel } from "./graphPanel";
import { REVEAL_NODE_COMMAND, revealNodeArgs } from "./protocol";
import type { TraceFlow } from "./traceFlow";

/** The panel showing the graph file `graph`, the active one first. */
export function panelOf(graph: string, panels: readonly GraphPanel[], active: GraphPanel | undefined): GraphPanel | undefined {
  const holds = (p: GraphPanel): boolean => p.origin.graphPath === graph;
  return active && holds(active) ? active : panels.find(holds);
}

export function registerRevealNode(flow: TraceFlow, log: vscode.LogOutputChannel): vscode.Disposable {
  return vscode.commands.registerCommand(REVEAL_NODE_COMMAND, async (arg?: unknown) => {
    const a = revealNodeArgs(arg);
    if (!a) {
      log.warn(`${REVEAL_NODE_COMMAND}: not a node of a graph: ${JSON.stringify(arg)}`);
      return;
    }
    let panel = panelOf(a.graph, GraphPanel.all(), GraphPanel.active);
    if (!panel) {
      const name = path.basename(a.graph).replace(/\.msgpack$/, "");
      panel = flow.openPanel({ uri: vscode.Uri.file(a.graph).toString(), target: name, title: `Forward pass: ${name}`, graphPath: a.graph });
      try {
        await panel.load(a.graph);
      } catch (e) {
        panel.dispose();
        void vscode.window.showErrorMessage(`torchscope: the graph of that trace is gone (${a.graph}): trace again. ${String(e)}`);
        return;
      }
    }
    panel.revealNode(a.node, a.nodes);
  });
}

/** Index the graph of every panel again (a restarted server has none). */
export function reindexPanels(server: GraphIndexer, log: vscode.LogOutputChannel): void {
  for (const p of GraphPanel.all()) {
    const file = p.origin.graphPath;
    // A comparison's page puts removed nodes back as ghosts: its lines are not one trace's.
    if (file && parseCompareTarget(p.origin.target) === undefined)
      server.graphShown(file, `torchscope/panel:${p.key}`).catch((e: unknown) => log.info(`re-indexing ${file}: ${String(e)}`));
  }
}
