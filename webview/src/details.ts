// Hover details for a drawn item, as plain [label, value] rows (pure).
import type { AttrValue, GraphNode } from "./format";
import type { GraphIndex } from "./model";
import type { VisibleGraph } from "./visible";
import { shapeText } from "./labels";
import { formatCount } from "./count";

export interface Details {
  title: string;
  rows: [string, string][];
}

function attrText(v: AttrValue): string {
  if (Array.isArray(v)) return `[${v.map(attrText).join(", ")}]`;
  return String(v);
}

const MAX_TENSORS = 6;

function tensors(idx: GraphIndex, edgeIds: number[], end: "src" | "dst"): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const i of edgeIds) {
    const e = idx.graph.edges[i]!;
    const other = idx.graph.nodes[e[end]]!;
    const text = `${`${shapeText(e.shape)} ${e.dtype}`.trim()}  ${end === "src" ? "from" : "to"} ${other.name}`;
    if (seen.has(text)) continue;
    seen.add(text);
    out.push(text);
  }
  if (out.length > MAX_TENSORS) return [...out.slice(0, MAX_TENSORS), `… ${out.length - MAX_TENSORS} more`];
  return out;
}

function siteText(s: GraphNode["site"]): string {
  return s ? `${s.file}:${s.line}` : "";
}

export function describe(idx: GraphIndex, vg: VisibleGraph, key: string): Details | null {
  const v = vg.nodes.find((n) => n.key === key);
  const c = v ? undefined : vg.clusters.find((x) => x.key === key);
  if (!v && !c) return null;
  const rows: [string, string][] = [];
  const inIds = vg.edges.filter((e) => e.dst === key).flatMap((e) => e.edges);
  const outIds = vg.edges.filter((e) => e.src === key).flatMap((e) => e.edges);
  const addTensors = (): void => {
    for (const t of tensors(idx, inIds, "src")) rows.push(["in", t]);
    for (const t of tensors(idx, outIds, "dst")) rows.push(["out", t]);
  };
  const kind = v?.kind ?? c!.kind;
  const id = v?.id ?? c!.id;

  if (kind === "group") {
    const g = idx.graph.groups[id]!;
    const first = idx.graph.nodes[g.members[0]!]!;
    const last = idx.graph.nodes[g.members[g.members.length - 1]!]!;
    rows.push(["kind", `${g.members.length} repeated blocks`]);
    rows.push(["target", first.target]);
    rows.push(["blocks", `${first.path} … ${last.path}`]);
    const params = g.members.reduce((s, m) => s + idx.graph.nodes[m]!.params, 0);
    if (params) rows.push(["params", formatCount(params)]);
    addTensors();
    if (first.site) rows.push(["site", siteText(first.site)]);
    return { title: g.name || `${first.name} ×${g.members.length}`, rows };
  }
  const node = idx.graph.nodes[id]!;
  if (kind === "ref") {
    rows.push(["kind", "reference"]);
    rows.push(["source", node.kind === "module" ? node.path || node.name : node.name]);
    addTensors();
    rows.push(["", "click to go to the source"]);
    return { title: `↳ ${node.name}`, rows };
  }
  rows.push(["kind", node.kind]);
  if (node.target) rows.push(["target", node.target]);
  if (node.kind === "module") {
    rows.push(["path", node.path || "(root)"]);
    if (node.call > 0) rows.push(["call", `#${node.call}`]);
    rows.push(["params", formatCount(node.params)]);
  }
  addTensors();
  for (const [k, val] of Object.entries(node.attrs)) rows.push([k, attrText(val)]);
  if (node.site) rows.push(["site", siteText(node.site)]);
  // The library frame behind the user's line, one right-click away ("Go to Library Frame").
  if (node.inside) rows.push(["inside", `${siteText(node.inside)}${node.inside.func ? ` (${node.inside.func})` : ""}`]);
  if (node.defn) rows.push(["defined", siteText(node.defn)]);
  const err = idx.graph.error;
  if (err && err.node === node.id) rows.push(["error", `${err.type}: ${err.message}`]);
  return { title: node.name, rows };
}
