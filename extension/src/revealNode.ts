// A hover's "Show in graph" link (`command:torchscope.revealNode?ARGS`, docs/protocol.md): the
// panel that holds that graph shows the node: the panel showing it, else the open comparison
// it is a side of (at the node's place in the comparison's view), else the panel that showed it
// opened again as it was (its title, document and target: Re-trace traces the model), else a
// panel of the graph file itself. And the other way round: after a server start, the graphs
// the panels show are indexed again, so their files keep their hints.
import * as path from "node:path";
import { decode } from "@msgpack/msgpack";
import * as vscode from "vscode";
import type { PanelGraphs } from "./panelGraphs";
import type { GraphIndexer } from "./pausedHere";
import { parseCompareTarget } from "./compareTargets";
import { GraphPanel, type GraphOf } from "./graphPanel";
import { REVEAL_NODE_COMMAND, revealNodeArgs, type PanelOrigin, type RevealNodeArgs } from "./protocol";
import type { TraceFlow } from "./traceFlow";
import { showError } from "./notify";

/** The panel showing the graph file `graph`, the active one first. */
export function panelOf(graph: string, panels: readonly GraphPanel[], active: GraphPanel | undefined): GraphPanel | undefined {
  const holds = (p: GraphPanel): boolean => p.origin.graphPath === graph;
  return active && holds(active) ? active : panels.find(holds);
}

/** Side `side`'s node `node` (and `nodes`) in a comparison's view (`bytes`: its graph file, with
 * the `compare` field's `a_ids`/`b_ids`, docs/graph-format.md); undefined when the view has none
 * of them (or is no comparison's): `node`'s place, else the first of `nodes` that is there. */
export function comparedNodes(
  bytes: Uint8Array,
  side: "a" | "b",
  node: number,
  nodes: readonly number[] | undefined,
): { node: number; nodes: number[] } | undefined {
  let ids: unknown;
  try {
    const graph = decode(bytes) as { compare?: Record<string, unknown> } | null;
    ids = graph?.compare?.[side === "a" ? "a_ids" : "b_ids"];
  } catch {
    return undefined;
  }
  if (!Array.isArray(ids)) return undefined;
  const merged = new Map<number, number>();
  ids.forEach((id: unknown, i) => {
    const n = typeof id === "bigint" ? Number(id) : id;
    if (typeof n === "number" && !merged.has(n)) merged.set(n, i);
  });
  const there = (ns: readonly number[]): number[] => [...new Set(ns.map((n) => merged.get(n)).filter((n): n is number => n !== undefined))];
  const others = there(nodes ?? [node]);
  const first = merged.get(node) ?? others[0];
  return first === undefined ? undefined : { node: first, nodes: others.length ? others : [first] };
}

/** A panel of `origin` opened again on the graph file `graph` (undefined, and said, when the
 * file can't be read). */
async function reopen(flow: TraceFlow, origin: PanelOrigin & { model?: string }, graph: string, ours = true): Promise<GraphPanel | undefined> {
  const { model, ...shown } = origin;
  const panel = flow.openPanel({ ...shown, graphPath: graph });
  if (model && !panel.model) panel.model = model;
  try {
    await panel.load(graph);
  } catch (e) {
    panel.dispose();
    const gone = ours ? `the graph of that trace is gone (${graph}): trace again.` : `can't read the graph file ${graph}:`;
    void showError(`torchscope: ${gone} ${String(e)}`);
    return undefined;
  }
  return panel;
}

/** The origin of a graph file never shown by a panel of this window (the command line's): a
 * panel of the file itself, named after it; its Re-trace has no code to trace. */
export function graphFileOrigin(graph: string): PanelOrigin {
  const name = path.basename(graph).replace(/\.msgpack$/, "");
  return { uri: vscode.Uri.file(graph).toString(), target: name, title: `Forward pass: ${name}`, graphPath: graph };
}

/**
 * A panel showing the graph file `graph`: the one showing it already; else, when a panel of this
 * window showed it and no panel of that model is open, that panel again (titled, keyed and
 * re-traced as the original); else a panel of the file itself. Undefined when the file can't be
 * read (said).
 */
export async function openGraphFile(flow: TraceFlow, graph: string): Promise<GraphPanel | undefined> {
  const open = panelOf(graph, GraphPanel.all(), GraphPanel.active);
  if (open) {
    open.bringForward();
    return open;
  }
  const origin = GraphPanel.graphs.of(graph)?.origin;
  // (a panel of that model open on another graph keeps its graph: this one opens apart)
  if (origin && !GraphPanel.find(origin.uri, origin.target)) return reopen(flow, origin, graph);
  return reopen(flow, graphFileOrigin(graph), graph, false);
}

/** Show the hover's node: see the file's head. */
export async function showInGraph(flow: TraceFlow, a: RevealNodeArgs, log: vscode.LogOutputChannel): Promise<void> {
  const open = panelOf(a.graph, GraphPanel.all(), GraphPanel.active);
  if (open) {
    open.revealNode(a.node, a.nodes);
    return;
  }
  const known: GraphOf | undefined = GraphPanel.graphs.of(a.graph);
  const side = known?.side;
  // A trace of a comparison: the comparison's panel, at the node's place in its view.
  const inComparison = (panel: GraphPanel): void => {
    const at = side && panel.bytes && panel.origin.graphPath === side.of ? comparedNodes(panel.bytes, side.side, a.node, a.nodes) : undefined;
    if (at) panel.revealNode(at.node, at.nodes);
    else {
      log.info(`show in graph: node ${a.node} of ${a.graph} is not in the comparison ${panel.origin.graphPath ?? ""}`);
      panel.bringForward();
    }
  };
  const comparison = side && panelOf(side.of, GraphPanel.all(), GraphPanel.active);
  if (comparison) {
    inComparison(comparison);
    return;
  }
  // The panel that showed it, closed since: that panel again.
  const origin = known?.origin;
  if (origin) {
    const now = GraphPanel.find(origin.uri, origin.target);
    if (now) {
      // it shows a newer trace now, whose nodes may be others
      log.info(`show in graph: ${origin.title} shows ${now.origin.graphPath ?? "another graph"} now, not ${a.graph}`);
      now.bringForward();
      return;
    }
    (await reopen(flow, origin, a.graph))?.revealNode(a.node, a.nodes);
    return;
  }
  // The comparison it was a side of, closed (or compared again) since.
  const compared = side && GraphPanel.graphs.of(side.of)?.origin;
  if (side && compared) {
    const now = GraphPanel.find(compared.uri, compared.target);
    if (now) inComparison(now);
    else {
      const panel = await reopen(flow, compared, side.of);
      if (panel) inComparison(panel);
    }
    return;
  }
  // Never shown here (a graph of the command line, or of a window before a reload).
  (await openGraphFile(flow, a.graph))?.revealNode(a.node, a.nodes);
}

export function registerRevealNode(flow: TraceFlow, log: vscode.LogOutputChannel): vscode.Disposable {
  return vscode.commands.registerCommand(REVEAL_NODE_COMMAND, async (arg?: unknown) => {
    const a = revealNodeArgs(arg);
    if (!a) {
      log.warn(`${REVEAL_NODE_COMMAND}: not a node of a graph: ${JSON.stringify(arg)}`);
      return;
    }
    await showInGraph(flow, a, log);
  });
}

/** Index the graph of every panel again (a restarted server has none): the panels open,
 * and those of the workspace VS Code has not restored yet (`remembered`: a tab not shown
 * since a reload); a remembered graph that is gone is forgotten. */
export function reindexPanels(server: GraphIndexer, log: vscode.LogOutputChannel, remembered?: PanelGraphs): void {
  const graphs = new Map<string, string>(remembered?.entries() ?? []);
  for (const p of GraphPanel.all()) if (p.origin.graphPath) graphs.set(p.key, p.origin.graphPath);
  for (const [key, file] of graphs) {
    // A comparison's page puts removed nodes back as ghosts: its lines are not one trace's.
    if (parseCompareTarget(key.slice(key.indexOf("#") + 1)) !== undefined) continue;
    server.graphShown(file, `torchscope/panel:${key}`).catch((e: unknown) => {
      log.info(`re-indexing ${file}: ${String(e)}`);
      if (!GraphPanel.all().some((p) => p.key === key)) remembered?.forget(key);
    });
  }
}
