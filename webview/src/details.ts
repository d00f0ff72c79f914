// Hover details for a drawn item or edge, as plain [label, value] rows (pure). Tensors
// are listed as drawn: one row per distinct tensor, with how often it is used.
import type { AttrValue, GraphNode, Histogram } from "./format";
import type { GraphIndex } from "./model";
import type { VisibleGraph } from "./visible";
import { clip, shapeText } from "./labels";
import { segmentCost, segmentRange, segmentSummary, segmentsOf } from "./segments";
import { distinctTensors, type Tensor } from "./tensors";
import { formatCount } from "./count";
import { costRows, statsRows, valueDetails } from "./valueDetails";

export interface Details {
  title: string;
  rows: [string, string][];
  /** Of the tensor the item outputs, when the trace recorded statistics. */
  hist?: Histogram;
}

function attrText(v: AttrValue): string {
  if (Array.isArray(v)) return `[${v.map(attrText).join(", ")}]`;
  return String(v);
}

const MAX_TENSORS = 6;
const MAX_NAMES = 2;

/** What a node goes by in a hover: a module its path, anything else its name. */
function ownName(idx: GraphIndex, id: number, max = 40): string {
  const node = idx.graph.nodes[id]!;
  return clip(node.kind === "module" ? node.path || node.name : node.name, max);
}

/** "mul in layers.0.self_attn": a node (or `name` for it) and the module call it ran in. */
function nodeWhere(idx: GraphIndex, id: number, name = ownName(idx, id)): string {
  const node = idx.graph.nodes[id]!;
  const p = node.parent === null ? null : idx.graph.nodes[node.parent]!;
  return p?.path ? `${name} in ${clip(p.path, 40)}` : name;
}

/** Each node's first input's producer (-1: none), by graph, made on the first need. */
const firstInputs = new WeakMap<GraphIndex["graph"], Int32Array>();
function firstInput(idx: GraphIndex, id: number): number {
  let first = firstInputs.get(idx.graph);
  if (!first) {
    first = new Int32Array(idx.graph.nodes.length).fill(-1);
    for (const e of idx.graph.edges) if (first[e.dst] === -1) first[e.dst] = e.src;
    firstInputs.set(idx.graph, first);
  }
  return first[id] ?? -1;
}

/** "to(mul(cos))": a node and `depth` producers back along first inputs. */
function lineage(idx: GraphIndex, id: number, depth: number): string {
  const names: string[] = [];
  for (let at = id; at >= 0 && names.length <= depth; at = firstInput(idx, at)) names.push(ownName(idx, at, names.length ? 24 : 40));
  return names.reduceRight((inner, n) => (inner ? `${n}(${inner})` : n), "");
}

const allDistinct = (xs: string[]): boolean => new Set(xs).size === xs.length;

/** Names for calls that read alike (same name, module path): what they were made of
 * (Llama's `to` of cos and `to` of sin), else their order among their module's calls of
 * that name ("transpose #2"), else their order here. */
function namesApart(idx: GraphIndex, ids: number[]): string[] {
  for (let d = 1; d <= 4; d++) {
    const names = ids.map((id) => lineage(idx, id, d));
    if (allDistinct(names)) return names;
  }
  const rank = (id: number): number => {
    const p = idx.graph.nodes[id]!.parent;
    const name = idx.graph.nodes[id]!.name;
    return (p === null ? idx.roots : idx.children[p]!).filter((s) => idx.graph.nodes[s]!.name === name).indexOf(id) + 1;
  };
  const byOrder = ids.map((id) => `${ownName(idx, id)} #${rank(id)}`);
  if (allDistinct(byOrder)) return byOrder;
  const sorted = [...ids].sort((a, b) => a - b);
  return ids.map((id) => `${ownName(idx, id)} #${sorted.indexOf(id) + 1}`);
}

/**
 * Where each tensor comes from, for a hover: its producer (nodeWhere), told apart where two
 * tensors alike (shape, dtype, note) would read the same: two producers by namesApart, two
 * tensors of one producer as its "output 1", "output 2" (in the order they are read).
 */
function sourceNames(idx: GraphIndex, noted: [Tensor, string][]): string[] {
  const out = noted.map(([t]) => nodeWhere(idx, t.src));
  const alike = new Map<string, number[]>();
  noted.forEach(([t, note], i) => {
    const key = `${tensorText(t)}|${note}|${out[i]}`;
    alike.set(key, [...(alike.get(key) ?? []), i]);
  });
  for (const at of alike.values()) {
    if (at.length < 2) continue;
    const srcs = [...new Set(at.map((i) => noted[i]![0].src))];
    const names = srcs.length > 1 ? namesApart(idx, srcs) : [ownName(idx, srcs[0]!)];
    const seen = new Map<number, number>();
    for (const i of at) {
      const src = noted[i]![0].src;
      const k = (seen.get(src) ?? 0) + 1;
      seen.set(src, k);
      const several = at.filter((j) => noted[j]![0].src === src).length > 1;
      out[i] = nodeWhere(idx, src, `${names[srcs.indexOf(src)]}${several ? ` (output ${k})` : ""}`);
    }
  }
  return out;
}

/** "add, mul in fc +3 more": the consumers of one tensor. */
function consumers(idx: GraphIndex, uses: number[]): string {
  const names = uses.map((i) => nodeWhere(idx, idx.graph.edges[i]!.dst));
  const more = names.length - MAX_NAMES;
  return names.slice(0, MAX_NAMES).join(", ") + (more > 0 ? ` +${more} more` : "");
}

const usesText = (t: Tensor): string => (t.uses.length > 1 ? `  (×${t.uses.length} uses)` : "");
/** "[4, 32] float32", and for a DTensor its whole tensor beside this rank's shard:
 * "[4, 32] float32 (local) of [4, 64] Shard(1) on cpu[tp=2]". */
export const tensorText = (t: Tensor): string => {
  const local = `${shapeText(t.shape)} ${t.dtype}`.trim();
  if (t.placements === undefined) return local;
  const mesh = t.mesh ? ` on ${t.mesh}` : "";
  return `${local} (local) of ${shapeText(t.global_shape ?? null)} ${t.placements}${mesh}`;
};

/** A compare page: the edges only version a had (to or from a ghost, or between two
 * nodes that are no longer connected). */
const isRemoved = (idx: GraphIndex, i: number): boolean => idx.graph.compare?.edges[i] === "removed";
const REMOVED = "  (removed: in a only)";

/** Distinct tensors among `ids`, each with the note it needs: on a compare page version a's
 * connections come after b's, said to be a's (a ghost's input is no input of b's). */
function tensorsNoted(idx: GraphIndex, ids: number[]): [Tensor, string][] {
  const gone = ids.filter((i) => isRemoved(idx, i));
  const kept = gone.length ? ids.filter((i) => !isRemoved(idx, i)) : ids;
  return [
    ...distinctTensors(idx.graph.edges, kept).map((t): [Tensor, string] => [t, ""]),
    ...distinctTensors(idx.graph.edges, gone).map((t): [Tensor, string] => [t, REMOVED]),
  ];
}

/** One row per tensor (not per edge): a tensor read twice inside a box is listed once. */
function tensorRows(idx: GraphIndex, edgeIds: number[], end: "in" | "out"): [string, string][] {
  const noted = tensorsNoted(idx, edgeIds);
  const from = sourceNames(idx, noted);
  const texts = noted.map(([t, note], i) =>
    end === "in" ? `${tensorText(t)}  from ${from[i]}${usesText(t)}${note}` : `${tensorText(t)}  to ${consumers(idx, t.uses)}${usesText(t)}${note}`,
  );
  // Two outputs that read alike (cos and sin to the same layers): each says where it is from.
  const count = new Map<string, number>();
  for (const x of texts) count.set(x, (count.get(x) ?? 0) + 1);
  const rows = texts.map((x, i): [string, string] => {
    const [t, note] = noted[i]!;
    if (count.get(x)! < 2) return [end, x];
    return [end, `${tensorText(t)}  from ${from[i]}  to ${consumers(idx, t.uses)}${usesText(t)}${note}`];
  });
  if (rows.length > MAX_TENSORS) return [...rows.slice(0, MAX_TENSORS), [end, `… ${rows.length - MAX_TENSORS} more`]];
  return rows;
}

/** The name a drawn box goes by in an edge's title. */
function keyName(idx: GraphIndex, vg: VisibleGraph, key: string): string {
  const v = vg.nodes.find((n) => n.key === key);
  if (!v) return key;
  if (v.kind === "group") return groupName(idx, v.id);
  if (v.kind === "segment") return segmentRange(segmentsOf(idx).list[v.id]!);
  if (v.kind === "ref") return `↳ ${keyName(idx, vg, v.refOf ?? "")}`;
  const node = idx.graph.nodes[v.id]!;
  return clip(node.kind === "module" ? node.path || node.name : node.name, 40);
}

function groupName(idx: GraphIndex, gi: number): string {
  const g = idx.graph.groups[gi]!;
  return clip(g.name || `${idx.graph.nodes[g.members[0]!]!.name} ×${g.members.length}`, 40);
}

/** Hover of a drawn edge: each tensor it carries, its shape and dtype, from → to. */
export function describeEdge(idx: GraphIndex, vg: VisibleGraph, key: string): Details | null {
  const e = vg.edges.find((x) => x.key === key);
  if (!e) return null;
  const noted = tensorsNoted(idx, e.edges);
  const ts = noted.map(([t]) => t);
  const from = sourceNames(idx, noted);
  const rows: [string, string][] = [["tensors", ts.length === 1 ? "1" : `${ts.length}`]];
  for (const [i, [t, note]] of noted.slice(0, MAX_TENSORS).entries()) {
    rows.push([tensorText(t), `${from[i]} → ${consumers(idx, t.uses)}${usesText(t)}${note}`]);
  }
  if (ts.length > MAX_TENSORS) rows.push(["", `… ${ts.length - MAX_TENSORS} more`]);
  const title = `${keyName(idx, vg, e.src)} → ${keyName(idx, vg, e.dst)}`;
  // One tensor: its values too (several: the boxes' hovers have each).
  const first = ts.length === 1 ? e.edges.map((i) => idx.graph.edges[i]!).find((x) => x.stats) : undefined;
  if (!first?.stats) return { title, rows };
  rows.push(...statsRows(first.stats));
  return { title, rows, ...(first.hist ? { hist: first.hist } : {}) };
}

function siteText(s: GraphNode["site"]): string {
  return s ? `${s.file}:${s.line}` : "";
}

export function describe(idx: GraphIndex, vg: VisibleGraph, key: string): Details | null {
  const v = vg.nodes.find((n) => n.key === key);
  const c = v ? undefined : vg.clusters.find((x) => x.key === key);
  if (!v && !c) return null;
  const rows: [string, string][] = [];
  // Every edge drawn into or out of this box; a hub's reference boxes draw its other edges.
  const refs = new Set(vg.nodes.filter((n) => n.refOf === key).map((n) => n.key));
  const inIds = vg.edges.filter((e) => e.dst === key).flatMap((e) => e.edges);
  const outIds = vg.edges.filter((e) => e.src === key || refs.has(e.src)).flatMap((e) => e.edges);
  const addTensors = (): void => {
    rows.push(...tensorRows(idx, inIds, "in"), ...tensorRows(idx, outIds, "out"));
  };
  const kind = v?.kind ?? c!.kind;
  const id = v?.id ?? c!.id;

  if (kind === "segment") {
    const segs = segmentsOf(idx);
    const seg = segs.list[id]!;
    const where =
      seg.container === null
        ? "the top level"
        : seg.container.startsWith("g")
          ? groupName(idx, Number(seg.container.slice(1)))
          : nodeWhere(idx, Number(seg.container.slice(1)));
    rows.push(["kind", "a run of consecutive calls, folded"]);
    rows.push(["calls", `${segmentRange(seg)} in ${where}`]);
    rows.push(["holds", segmentSummary(idx, segs, id)]);
    rows.push(...costRows(segmentCost(idx, segs, id)));
    addTensors();
    if (v) rows.push(["", "open it with + to see the calls"]);
    return { title: segmentRange(seg), rows };
  }
  if (kind === "group") {
    const g = idx.graph.groups[id]!;
    const first = idx.graph.nodes[g.members[0]!]!;
    const last = idx.graph.nodes[g.members[g.members.length - 1]!]!;
    rows.push(["kind", `${g.members.length} repeated blocks`]);
    rows.push(["target", first.target]);
    // one module called again and again folds too: its path once, its parameters once
    rows.push(["blocks", first.path === last.path ? `${first.path} (called ${g.members.length} times)` : `${first.path} … ${last.path}`]);
    const byPath = new Map(g.members.map((m) => [idx.graph.nodes[m]!.path, idx.graph.nodes[m]!.params]));
    const params = [...byPath.values()].reduce((s, p) => s + p, 0);
    if (params) rows.push(["params", formatCount(params)]);
    addTensors();
    const values = valueDetails(idx, id, inIds, outIds, true);
    rows.push(...values.rows);
    if (first.site) rows.push(["site", siteText(first.site)]);
    return { title: g.name || `${first.name} ×${g.members.length}`, rows, ...(values.hist ? { hist: values.hist } : {}) };
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
  const err = idx.graph.error;
  const failed = err && err.node === node.id ? err : null;
  for (const [k, val] of Object.entries(node.attrs)) {
    if (failed && k === "message") continue; // (the error row below says it, whole)
    rows.push([k, attrText(val)]);
  }
  const values = valueDetails(idx, id, inIds, outIds);
  rows.push(...values.rows);
  if (node.site) rows.push(["site", siteText(node.site)]);
  // The library frame behind the user's line, one right-click away ("Go to Library Frame").
  if (node.inside) rows.push(["inside", `${siteText(node.inside)}${node.inside.func ? ` (${node.inside.func})` : ""}`]);
  if (node.defn) rows.push(["defined", siteText(node.defn)]);
  if (failed) rows.push(["error", `${failed.type}: ${failed.message}`]);
  if (idx.graph.nan_origin === node.id) rows.push(["NaN/Inf", "first made here: its inputs are finite"]);
  return { title: node.name, rows, ...(values.hist ? { hist: values.hist } : {}) };
}
