// The compare view's pure part: the optional `compare` field of a graph (docs/graph-format.md,
// "Compare view"), validated; what each drawn box, frame and edge is (same, added, removed,
// changed) and how many changes a closed box hides; the order "next change" steps through;
// the hover rows. No DOM: compareDraw.ts puts these on the page.
import type { GraphIndex } from "./model";
import type { VisibleGraph, VEdge } from "./visible";

export type NodeStatus = "same" | "added" | "removed" | "changed";
export type EdgeStatus = "same" | "added" | "removed";
/** A drawn edge carries several tensors: of mixed kinds it is "changed". */
export type DrawnEdgeStatus = NodeStatus;
export type Side = "a" | "b";

const NODE_STATUS: ReadonlySet<string> = new Set(["same", "added", "removed", "changed"]);
const EDGE_STATUS: ReadonlySet<string> = new Set(["same", "added", "removed"]);

export interface CompareSide {
  /** What the side was read from: "model.py:Net", "HEAD", a graph file's path; may be "". */
  source: string;
  model: { name: string; qualname: string; params: number };
  error: { type: string; message: string } | null;
}

/** The `compare` field, per node (index = node id) and per edge. Field names as on the wire. */
export interface CompareData {
  a: CompareSide;
  b: CompareSide;
  status: NodeStatus[];
  side: Side[];
  a_ids: (number | null)[];
  b_ids: (number | null)[];
  details: string[][];
  inside: number[];
  edges: EdgeStatus[];
  changes: number[];
}

/** Thrown for a malformed `compare` field; format.ts turns it into its FormatError. */
export class CompareFormatError extends Error {
  override name = "CompareFormatError";
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

function list(o: Obj, key: string, length: number, what: string): unknown[] {
  const v = o[key];
  if (!Array.isArray(v)) throw new CompareFormatError(`compare: "${key}" should be a list`);
  if (v.length !== length) throw new CompareFormatError(`compare: "${key}" has ${v.length} entries for ${length} ${what}`);
  return v;
}

function idOrNull(v: unknown, key: string, i: number): number | null {
  if (v === null || v === undefined) return null;
  const n = typeof v === "bigint" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) throw new CompareFormatError(`compare: ${key}[${i}] should be a node id or nil`);
  return n;
}

function side(v: unknown, name: string): CompareSide {
  const o = isObj(v) ? v : {};
  const m = isObj(o.model) ? o.model : {};
  const e = isObj(o.error) ? o.error : null;
  const text = (x: unknown): string => (typeof x === "string" ? x : "");
  if (v !== undefined && v !== null && !isObj(v)) throw new CompareFormatError(`compare: "${name}" should be a map`);
  return {
    source: text(o.source),
    model: { name: text(m.name), qualname: text(m.qualname), params: typeof m.params === "number" ? m.params : 0 },
    error: e ? { type: text(e.type) || "Error", message: text(e.message) } : null,
  };
}

/** Validate the `compare` field of a graph with `nodes` nodes and `edges` edges. */
export function decodeCompare(raw: unknown, nodes: number, edges: number): CompareData {
  if (!isObj(raw)) throw new CompareFormatError("compare should be a map");
  const status = list(raw, "status", nodes, "nodes").map((s, i) => {
    if (typeof s !== "string" || !NODE_STATUS.has(s)) throw new CompareFormatError(`compare: status[${i}] is ${JSON.stringify(s)}`);
    return s as NodeStatus;
  });
  const sides = list(raw, "side", nodes, "nodes").map((s, i) => {
    if (s !== "a" && s !== "b") throw new CompareFormatError(`compare: side[${i}] is ${JSON.stringify(s)}, not "a" or "b"`);
    return s as Side;
  });
  const aIds = list(raw, "a_ids", nodes, "nodes").map((v, i) => idOrNull(v, "a_ids", i));
  const bIds = list(raw, "b_ids", nodes, "nodes").map((v, i) => idOrNull(v, "b_ids", i));
  const details = list(raw, "details", nodes, "nodes").map((d, i) => {
    if (!Array.isArray(d)) throw new CompareFormatError(`compare: details[${i}] should be a list of lines`);
    return d.map(String);
  });
  const inside = list(raw, "inside", nodes, "nodes").map((v, i) => {
    const n = typeof v === "bigint" ? Number(v) : v;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) throw new CompareFormatError(`compare: inside[${i}] should be a count`);
    return n;
  });
  const edgeStatus = list(raw, "edges", edges, "edges").map((s, i) => {
    if (typeof s !== "string" || !EDGE_STATUS.has(s)) throw new CompareFormatError(`compare: edges[${i}] is ${JSON.stringify(s)}`);
    return s as EdgeStatus;
  });
  if (!Array.isArray(raw.changes)) throw new CompareFormatError('compare: "changes" should be a list');
  const changes = raw.changes.map((v, i) => {
    const n = idOrNull(v, "changes", i);
    if (n === null || n >= nodes) throw new CompareFormatError(`compare: changes[${i}] is not a node id`);
    return n;
  });
  // Navigation relies on node order (binary search); a file out of order is refused.
  for (let i = 1; i < changes.length; i++) {
    if (changes[i]! <= changes[i - 1]!) throw new CompareFormatError("compare: changes should be node ids in increasing order");
  }
  return {
    a: side(raw.a, "a"),
    b: side(raw.b, "b"),
    status,
    side: sides,
    a_ids: aIds,
    b_ids: bIds,
    details,
    inside,
    edges: edgeStatus,
    changes,
  };
}

// ---- counts and navigation -----------------------------------------------------------

export interface CompareCounts {
  added: number;
  removed: number;
  changed: number;
  same: number;
}

/** Nodes by status, as the diff's own summary counts them (every node once). */
export function countStatus(c: CompareData): CompareCounts {
  const out: CompareCounts = { added: 0, removed: 0, changed: 0, same: 0 };
  for (const s of c.status) out[s]++;
  return out;
}

/** Index of the first change with id >= `id` (changes.length when none). */
function lowerBound(changes: readonly number[], id: number): number {
  let lo = 0;
  let hi = changes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (changes[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The change one step from node `from` (null: nothing chosen yet), as a position in
 * `changes`: the next one after it in node order (step 1) or the one before it (step -1),
 * wrapping around at the ends. A `from` that is not a change counts from where it lies.
 */
export function stepChange(changes: readonly number[], from: number | null, step: 1 | -1): number | null {
  const n = changes.length;
  if (n === 0) return null;
  if (from === null) return step === 1 ? 0 : n - 1;
  const at = lowerBound(changes, from);
  const on = at < n && changes[at] === from;
  if (step === 1) return on ? (at + 1) % n : at % n;
  return (at - 1 + n) % n;
}

// ---- what the drawn view shows -------------------------------------------------------

export interface ViewMarks {
  /** Status of each drawn box and frame, by key. */
  status: Map<string, NodeStatus>;
  /** Changes a closed box (module, ×N group, segment) hides, by key; only keys with some. */
  hidden: Map<string, number>;
  /** Status of each drawn edge, by key. */
  edges: Map<string, DrawnEdgeStatus>;
}

function edgeStatus(c: CompareData, ve: VEdge): DrawnEdgeStatus {
  let first: EdgeStatus | null = null;
  for (const i of ve.edges) {
    const s = c.edges[i]!;
    if (first === null) first = s;
    else if (s !== first) return "changed";
  }
  return first ?? "same";
}

/** What to mark in a drawn view. A box's own status is its node's; a ×N group and a
 * segment are "same" (groups are cut around changed blocks) and count what they hide. */
export function viewMarks(c: CompareData, vg: VisibleGraph): ViewMarks {
  const status = new Map<string, NodeStatus>();
  for (const v of vg.nodes) {
    const own = v.kind === "node" || v.kind === "module" || v.kind === "ref";
    status.set(v.key, own ? c.status[v.id]! : "same");
  }
  for (const cl of vg.clusters) status.set(cl.key, cl.kind === "module" ? c.status[cl.id]! : "same");
  const hidden = new Map<string, number>();
  for (const id of c.changes) {
    const key = vg.rep[id];
    // Drawn as itself (a box or an open frame): marked by its status, not counted.
    if (key === undefined || key === `n${id}`) continue;
    hidden.set(key, (hidden.get(key) ?? 0) + 1);
  }
  const edges = new Map<string, DrawnEdgeStatus>();
  for (const ve of vg.edges) edges.set(ve.key, edgeStatus(c, ve));
  return { status, hidden, edges };
}

// ---- words ---------------------------------------------------------------------------

const STATUS_TEXT: Record<NodeStatus, string> = {
  same: "unchanged",
  added: "added (only in b, after)",
  removed: "removed (only in a, before)",
  changed: "changed",
};

/** A node's status in words; a side that raised never reached what came after its error:
 * "removed" (or "added") may mean just that (QA: counted as removed, nothing said). */
export function statusText(c: CompareData, st: NodeStatus): string {
  if (st === "removed" && c.b.error) return `${STATUS_TEXT.removed}, or not reached: ${sideName(c.b, "b")} raised first`;
  if (st === "added" && c.a.error) return `${STATUS_TEXT.added}, or not reached: ${sideName(c.a, "a")} raised first`;
  return STATUS_TEXT[st];
}

/** The error a compare view's banner says: b's (the graph's own), else a's; with its side. */
export function sideError(c: CompareData): { side: string; type: string; message: string } | null {
  const raised = c.b.error ? ("b" as const) : c.a.error ? ("a" as const) : null;
  return raised ? { side: sideName(c[raised], raised), ...c[raised].error! } : null;
}

function sideName(s: CompareSide, which: Side): string {
  return s.source ? `${which}: ${s.source}` : which === "a" ? "a (before)" : "b (after)";
}

/** Hover rows for a drawn box or frame: its status, its before → after lines, what it hides. */
export function compareRows(c: CompareData, vg: VisibleGraph, marks: ViewMarks, key: string): [string, string][] {
  const rows: [string, string][] = [];
  const v = vg.nodes.find((n) => n.key === key) ?? vg.clusters.find((n) => n.key === key);
  if (!v) return rows;
  const own = v.kind === "node" || v.kind === "module" || v.kind === "ref";
  if (own) {
    const st = c.status[v.id]!;
    rows.push(["compare", statusText(c, st)]);
    const label = st === "changed" ? "before → after" : st === "same" ? "" : "is";
    for (const [i, line] of c.details[v.id]!.entries()) rows.push([i === 0 ? label : "", line]);
    if (c.side[v.id] === "a") rows.push(["line in", sideName(c.a, "a")]);
  }
  const hidden = marks.hidden.get(key);
  if (hidden) rows.push(["changes inside", String(hidden)]);
  return rows;
}

/** The status line for change number `pos` (0-based) of the list: the change first (a
 * narrow page shows the start of a line), where it is in the list last. */
export function changeText(c: CompareData, idx: GraphIndex, pos: number): string {
  const id = c.changes[pos]!;
  const node = idx.graph.nodes[id]!;
  const what = node.kind !== "module" ? node.name : node.path ? `${node.path} (${node.name})` : `${node.name} (the model)`;
  const first = c.details[id]![0];
  return `${what} ${c.status[id]}${first ? ` — ${first}` : ""} · change ${pos + 1} of ${c.changes.length}`;
}
