// Hover details for a drawn item or edge, as plain [label, value] rows (pure). Tensors
// are listed as drawn: one row per distinct tensor, with how often it is used.
import type { AttrValue, GraphNode, Histogram } from "./format";
import type { GraphIndex } from "./model";
import type { VisibleGraph } from "./visible";
import { clip } from "./labels";
import { segmentCost, segmentRange, segmentSummary, segmentsOf } from "./segments";
import { distinctTensors, type Tensor } from "./tensors";
import { nodeWhere, ownName, sourceNames, tensorText, WHOLE } from "./hoverNames";
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

/** "add, mul in fc +3 more": the consumers of one tensor. */
function consumers(idx: GraphIndex, uses: number[]): string {
  const names = uses.map((i) => nodeWhere(idx, idx.graph.edges[i]!.dst));
  const more = names.length - MAX_NAMES;
  return names.slice(0, MAX_NAMES).join(", ") + (more > 0 ? ` +${more} more` : "");
}

const usesText = (t: Tensor): string => (t.uses.length > 1 ? `  (×${t.uses.length} uses)` : "");
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

/** The name version a knew an op by that b changed (b's gelu was a's relu), from its
 * before → after lines; null when b's name is a's too. */
function nameInA(idx: GraphIndex, id: number): string | null {
  const c = idx.graph.compare;
  const node = idx.graph.nodes[id]!;
  if (c?.status[id] !== "changed" || node.kind === "module") return null;
  for (const line of c.details[id] ?? []) {
    const m = /^(target|name): (.+?) → /.exec(line);
    if (!m || m[2] === "-") continue;
    const last = m[1] === "target" ? m[2]!.slice(m[2]!.lastIndexOf(".") + 1) : m[2]!;
    // (as ops are named: `Tensor.__getitem__` is getitem)
    const name = last.startsWith("__") ? last.replace(/^_+|_+$/g, "") : last;
    return name && name !== node.name ? name : null;
  }
  return null;
}

/** Where each tensor is from, as hovers name it; a connection only version a had names a
 * source b changed as a knew it: "relu (now gelu) in block". */
function fromNames(idx: GraphIndex, noted: [Tensor, string][]): string[] {
  const from = sourceNames(idx, noted);
  return from.map((name, i) => {
    const [t, note] = noted[i]!;
    const before = note === REMOVED ? nameInA(idx, t.src) : null;
    // (b's name as sourceNames wrote it, told apart from others' — "(output 2)" — kept)
    const now = ownName(idx, t.src);
    return before && name.startsWith(now) ? `${before} (now ${now})${name.slice(now.length)}` : name;
  });
}

/** One row per tensor (not per edge): a tensor read twice inside a box is listed once. */
function tensorRows(idx: GraphIndex, edgeIds: number[], end: "in" | "out"): [string, string][] {
  const noted = tensorsNoted(idx, edgeIds);
  const from = fromNames(idx, noted);
  const texts = noted.map(([t, note], i) =>
    end === "in" ? `${tensorText(t)}  from ${from[i]}${usesText(t)}${note}` : `${tensorText(t)}  to ${consumers(idx, t.uses)}${usesText(t)}${note}`,
  );
  // Two outputs that read alike (cos and sin to the same layers): each says where it is from;
  // then so does every output named apart from its producer's others (chunk's output 1
  // read apart by its uses still says it is output 1 when outputs 2 to 4 say theirs).
  const count = new Map<string, number>();
  for (const x of texts) count.set(x, (count.get(x) ?? 0) + 1);
  const someLong = texts.some((x) => count.get(x)! > 1);
  const rows = texts.map((x, i): [string, string] => {
    const [t, note] = noted[i]!;
    const namedApart = end === "out" && someLong && from[i] !== nodeWhere(idx, t.src);
    if (count.get(x)! < 2 && !namedApart) return [end, x];
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
  return clip(node.kind === "module" ? node.path || node.name : node.name, WHOLE);
}

function groupName(idx: GraphIndex, gi: number): string {
  const g = idx.graph.groups[gi]!;
  return clip(g.name || `${idx.graph.nodes[g.members[0]!]!.name} ×${g.members.length}`, WHOLE);
}

/** Hover of a drawn edge: each tensor it carries, its shape and dtype, from → to. */
export function describeEdge(idx: GraphIndex, vg: VisibleGraph, key: string): Details | null {
  const e = vg.edges.find((x) => x.key === key);
  if (!e) return null;
  const noted = tensorsNoted(idx, e.edges);
  const ts = noted.map(([t]) => t);
  const from = fromNames(idx, noted);
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
  // A compare page: values of b's boxes are b's; a tensor only a had (a ghost's, drawn from
  // the closed box that holds it) is listed, said to be removed, but its values are a's.
  const own = (ids: number[], ghost = false): number[] => (idx.graph.compare && !ghost ? ids.filter((i) => !isRemoved(idx, i)) : ids);
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
    rows.push(["kind", `${g.members.length.toLocaleString("en-US")} repeated blocks`]);
    rows.push(["target", first.target]);
    // one module called again and again folds too: its path once, its parameters once
    rows.push(["blocks", first.path === last.path ? `${first.path} (called ${g.members.length} times)` : `${first.path} … ${last.path}`]);
    const byPath = new Map(g.members.map((m) => [idx.graph.nodes[m]!.path, idx.graph.nodes[m]!.params]));
    const params = [...byPath.values()].reduce((s, p) => s + p, 0);
    if (params) rows.push(["params", formatCount(params)]);
    addTensors();
    const values = valueDetails(idx, id, own(inIds), own(outIds), true);
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
  const ghost = idx.graph.compare?.status[id] === "removed";
  const values = valueDetails(idx, id, own(inIds, ghost), own(outIds, ghost));
  rows.push(...values.rows);
  if (node.site) rows.push(["site", siteText(node.site)]);
  // The library frame behind the user's line, one right-click away ("Go to Library Frame").
  if (node.inside) rows.push(["inside", `${siteText(node.inside)}${node.inside.func ? ` (${node.inside.func})` : ""}`]);
  if (node.defn) rows.push(["defined", siteText(node.defn)]);
  if (failed) rows.push(["error", `${failed.type}: ${failed.message}`]);
  if (idx.graph.nan_origin === node.id) {
    // (a weight or buffer holds them; an op or a box turned finite values non-finite)
    rows.push(["NaN/Inf", node.kind === "constant" ? "first here: this tensor holds them" : "first made here, from finite values"]);
  }
  return { title: node.name, rows, ...(values.hist ? { hist: values.hist } : {}) };
}

/** Rows a card in a short window can do without, in the order they go (a statistics row may
 * end in " (finite)"): details before the structure they describe. */
const SPARE = [
  "defined",
  "zeros",
  "|max|",
  "mean",
  "mean ± std",
  "time",
  "out bytes",
  "FLOPs",
  "values of",
  "min … max",
  "call",
  "params",
  "path",
  "target",
];
/** Rows a card always keeps: what the box is, its tensors' shapes, its lines, what went wrong. */
const KEEP = new Set([
  "kind",
  "in",
  "out",
  "site",
  "inside",
  "error",
  "NaN / Inf",
  "NaN/Inf",
  "compare",
  "before → after",
  "is",
  "changes inside",
  "tensors",
]);

/** Indexes of `rows` in the order a card too tall for its window leaves them out: the known
 * spare rows (SPARE's order), then the others but KEEP's from the last one up. */
export function spareOrder(rows: [string, string][]): number[] {
  const label = (i: number): string => rows[i]![0].replace(/ \(finite\)$/, "");
  const ids = rows.map((_, i) => i);
  const known = ids.filter((i) => SPARE.includes(label(i))).sort((a, b) => SPARE.indexOf(label(a)) - SPARE.indexOf(label(b)));
  const others = ids.filter((i) => !SPARE.includes(label(i)) && !KEEP.has(label(i))).reverse();
  return [...known, ...others];
}
