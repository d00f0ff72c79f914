// VisibleGraph → DOT text for Graphviz. Nodes are fixed-size empty boxes (we draw the
// text ourselves); clusters and edges carry labels only so that dot reserves room.
// Every label is a quoted DOT string: user text is escaped, never interpreted.
import type { GraphIndex } from "./model";
import type { VisibleGraph, VNode } from "./visible";
import { clusterLabel, edgeLabel, refTitle, vnodeLabel, type Label } from "./labels";
import { boxSize, estimateWidth, headerWidth, type Measure, type Size } from "./metrics";

export interface DotResult {
  dot: string;
  sizes: Map<string, Size>;
  labels: Map<string, Label>;
}

export const EDGE_LABEL_LIMIT = 1500;

export function quote(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\r?\n/g, "\\n")}"`;
}

const inches = (px: number): string => (px / 72).toFixed(3);
const CLUSTER_FONT = 12; // (the graph's fontsize: its frames' labels)

/** Labels of all drawn nodes and clusters, keyed by their visible key. */
export function labelsOf(idx: GraphIndex, vg: VisibleGraph): Map<string, Label> {
  const byKey = new Map<string, VNode>(vg.nodes.map((n) => [n.key, n]));
  const labels = new Map<string, Label>();
  for (const v of vg.nodes) {
    const src = v.refOf ? byKey.get(v.refOf) : undefined;
    labels.set(v.key, vnodeLabel(idx, v, src ? refTitle(idx, src) : undefined));
  }
  for (const c of vg.clusters) labels.set(c.key, clusterLabel(idx, c));
  return labels;
}

/** `quick`: dot spends less effort on crossings (a big view: seconds saved). */
export function toDot(idx: GraphIndex, vg: VisibleGraph, measure: Measure = estimateWidth, quick = false): DotResult {
  const labels = labelsOf(idx, vg);
  const sizes = new Map<string, Size>();
  const nodesIn = new Map<string | null, VNode[]>();
  const clustersIn = new Map<string | null, string[]>();
  for (const v of vg.nodes) {
    const list = nodesIn.get(v.cluster) ?? [];
    list.push(v);
    nodesIn.set(v.cluster, list);
  }
  for (const c of vg.clusters) {
    const list = clustersIn.get(c.parent) ?? [];
    list.push(c.key);
    clustersIn.set(c.parent, list);
  }

  const out: string[] = [
    "digraph G {",
    `graph [rankdir=TB, nodesep=0.25, ranksep=0.32, fontname="Courier", fontsize=${CLUSTER_FONT}, labeljust=l, labelloc=t, margin=0, pad=0.2, outputorder=edgesfirst${quick ? ", mclimit=0.2, nslimit=1, nslimit1=1" : ""}];`,
    'node [shape=box, fixedsize=true, label=""];',
    'edge [fontname="Courier", fontsize=10, arrowsize=0.6];',
  ];
  // Clusters nest as deep as modules do: walked with a stack, not recursion. A string
  // entry is a line to write once the cluster's contents are out (its closing brace).
  const todo: (string | { cluster: string | null; depth: number })[] = [{ cluster: null, depth: 1 }];
  for (let t = todo.pop(); t !== undefined; t = todo.pop()) {
    if (typeof t === "string") {
      out.push(t);
      continue;
    }
    const indent = "  ".repeat(t.depth);
    for (const v of nodesIn.get(t.cluster) ?? []) {
      const l = labels.get(v.key)!;
      const nodeKind = v.kind === "group" || v.kind === "ref" || v.kind === "segment" ? v.kind : idx.graph.nodes[v.id]!.kind;
      const s = boxSize(v.kind, nodeKind, l.title, l.sub, measure);
      sizes.set(v.key, s);
      out.push(`${indent}${quote(v.key)} [width=${inches(s.w)}, height=${inches(s.h)}];`);
    }
    const inner = clustersIn.get(t.cluster) ?? [];
    for (let i = inner.length - 1; i >= 0; i--) {
      const ck = inner[i]!;
      const l = labels.get(ck)!;
      // dot sizes the frame to its label, in Courier (each glyph 0.6 em): padded to as many
      // glyphs as the header we draw needs with its own fonts (a bold W is wider than 0.6 em)
      const text = `${l.title}  ${l.sub}`.padStart(Math.ceil(headerWidth(l.title, l.sub, measure) / (CLUSTER_FONT * 0.6)));
      todo.push(`${indent}}`);
      todo.push({ cluster: ck, depth: t.depth + 1 });
      todo.push(`${indent}subgraph ${quote(`cluster_${ck}`)} {\n${indent}  label=${quote(text)}; margin=10;`);
    }
  }
  // Edge labels are virtual nodes to dot and triple its time on big graphs; there they
  // become external labels placed after layout, dropped where they would overlap.
  const labelAttr = vg.edges.length > EDGE_LABEL_LIMIT ? "xlabel" : "label";
  if (labelAttr === "xlabel") out.splice(2, 0, "graph [forcelabels=false];");
  for (const e of vg.edges) {
    const label = edgeLabel(idx.graph.edges, e.edges);
    const attrs = [`id=${quote(e.key)}`];
    if (label) attrs.push(`${labelAttr}=${quote(label)}`);
    out.push(`  ${quote(e.src)} -> ${quote(e.dst)} [${attrs.join(", ")}];`);
  }
  out.push("}");
  return { dot: out.join("\n"), sizes, labels };
}
