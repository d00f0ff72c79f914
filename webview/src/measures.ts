// What the overlay colours by and the table ranks: one number per node for each measure,
// a scale over the drawn items, and the heaviest nodes. Pure: no DOM.
import type { Graph, GraphNode } from "./format";
import type { GraphIndex } from "./model";
import type { VisibleGraph, VNode } from "./visible";
import { segmentsOf, type Item } from "./segments";
import { formatCount } from "./count";
import { formatBytes, formatFlops, formatTime, formatValue } from "./units";

export type Measure = "none" | "time" | "flops" | "bytes" | "params" | "absmax" | "nonfinite";

export interface MeasureInfo {
  label: string;
  /** What the trace must have recorded for the measure to exist. */
  needs: "costs" | "stats" | null;
  /** Sums over parts (a group's FLOPs are its members'); else the largest part counts. */
  additive: boolean;
  /** Colours on a log scale (values spread over orders of magnitude). */
  log: boolean;
  /** The heat of the smallest value above 0 on a log scale (else 0): any at all is an alarm,
   * told apart from none. */
  floor?: number;
  format: (n: number) => string;
}

export const MEASURES: Record<Measure, MeasureInfo> = {
  none: { label: "none", needs: null, additive: true, log: false, format: formatValue },
  time: { label: "time", needs: "costs", additive: true, log: true, format: formatTime },
  flops: { label: "FLOPs", needs: "costs", additive: true, log: true, format: formatFlops },
  bytes: { label: "output bytes", needs: "costs", additive: true, log: true, format: formatBytes },
  params: { label: "parameters", needs: null, additive: true, log: true, format: formatCount },
  absmax: { label: "largest |value|", needs: "stats", additive: false, log: true, format: formatValue },
  // (log: 1 NaN and 1,000,000 were both near the cold end of a linear scale, as none is)
  nonfinite: {
    label: "NaN/Inf values",
    needs: "stats",
    additive: false,
    log: true,
    floor: 0.4,
    format: (n) => `${Math.round(n)}`,
  },
};

export const MEASURE_ORDER: readonly Measure[] = ["none", "time", "flops", "bytes", "params", "absmax", "nonfinite"];

/** Whether the graph has the data for a measure. */
export function available(graph: Graph, m: Measure): boolean {
  const needs = MEASURES[m].needs;
  if (needs === "costs") return graph.values?.costs === true;
  // A meta-device trace asks for statistics but has no numbers to take them from.
  if (needs === "stats") return graph.values?.stats === true && graph.edges.some((e) => e.stats);
  return true;
}

/** A compare view's node of pass a only (a removed node's ghost): its numbers are a's, not
 * those of the pass the page measures (b). */
function isGhost(idx: GraphIndex, id: number): boolean {
  return idx.graph.compare?.status[id] === "removed";
}

/**
 * measure[id] for every graph node, NaN where it has none. Costs of modules are inclusive
 * (as recorded); a module's largest |value| and NaN/Inf count are the largest of any
 * tensor made inside it. A compare view's ghosts (pass a's removed nodes) and the tensors
 * only pass a had have none: the measures are pass b's.
 */
export function nodeValues(idx: GraphIndex, m: Measure): Float64Array {
  const { nodes, edges } = idx.graph;
  const out = new Float64Array(nodes.length).fill(NaN);
  if (m === "none") return out;
  const compare = idx.graph.compare;
  const own = (n: GraphNode): boolean => !isGhost(idx, n.id);
  if (m === "time" || m === "flops" || m === "bytes") {
    const field = m === "time" ? "time_ns" : m;
    for (const n of nodes) if (n.cost && own(n)) out[n.id] = n.cost[field];
    return out;
  }
  if (m === "params") {
    for (const n of nodes) if (n.kind === "module" && own(n)) out[n.id] = n.params;
    return out;
  }
  // absmax, nonfinite: from the statistics of the tensors each node made, rolled up
  for (const [i, e] of edges.entries()) {
    const s = e.stats;
    if (!s || (compare && (compare.edges[i] === "removed" || isGhost(idx, e.src)))) continue;
    const v = m === "absmax" ? (s.absmax ?? null) : (s.nan ?? 0) + (s.inf ?? 0);
    if (v === null) continue;
    const cur = out[e.src]!;
    if (Number.isNaN(cur) || v > cur) out[e.src] = v;
  }
  for (let i = nodes.length - 1; i >= 0; i--) {
    const p = nodes[i]!.parent;
    const v = out[i]!;
    if (p === null || Number.isNaN(v)) continue;
    const cur = out[p]!;
    if (Number.isNaN(cur) || v > cur) out[p] = v;
  }
  return out;
}

/** Parts' values together: summed (additive measures) or the largest; NaN ones left out. */
function combine(acc: number, x: number, additive: boolean): number {
  if (Number.isNaN(x)) return acc;
  if (Number.isNaN(acc)) return x;
  return additive ? acc + x : Math.max(acc, x);
}

/** A ×N group's value: its recorded cost, else its members' together; none for a group of
 * ghosts (pass a's numbers). */
function groupValue(idx: GraphIndex, values: Float64Array, m: Measure, gi: number): number {
  const g = idx.graph.groups[gi]!;
  if (idx.graph.compare && g.members.every((id) => isGhost(idx, id))) return NaN;
  if (g.cost && (m === "time" || m === "flops" || m === "bytes")) {
    return m === "time" ? g.cost.time_ns : g.cost[m];
  }
  let acc = NaN;
  for (const id of g.members) acc = combine(acc, values[id]!, MEASURES[m].additive);
  return acc;
}

/** A segment's value (a stretch of a long run): its calls' together, as a ×N group's. */
function segmentValue(idx: GraphIndex, values: Float64Array, m: Measure, si: number): number {
  const segs = segmentsOf(idx);
  const additive = MEASURES[m].additive;
  let acc = NaN;
  const todo: Item[] = [...segs.list[si]!.items];
  for (let it = todo.pop(); it; it = todo.pop()) {
    if (it.kind === "segment") todo.push(...segs.list[it.id]!.items);
    else acc = combine(acc, it.kind === "group" ? groupValue(idx, values, m, it.id) : values[it.id]!, additive);
  }
  return acc;
}

/** The value a drawn box stands for: its node's, a ×N group's or a segment's from what it
 * holds. */
export function drawnValue(idx: GraphIndex, values: Float64Array, m: Measure, v: VNode): number {
  if (v.kind === "ref") return NaN;
  if (v.kind === "group") return groupValue(idx, values, m, v.id);
  if (v.kind === "segment") return segmentValue(idx, values, m, v.id);
  return values[v.id]!;
}

export interface Scale {
  lo: number;
  hi: number;
  log: boolean;
  /** A log scale's heat at `lo` (MeasureInfo.floor): 0 alone is below it; absent: 0. */
  floor?: number;
}

/** The range the colours span: over the given values (NaN ignored; log: positives only). */
export function scaleOf(values: Iterable<number>, log: boolean, floor = 0): Scale | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (Number.isNaN(v) || (log && v <= 0)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (hi === -Infinity) return null;
  // one distinct positive value says nothing on a log scale: from 0 then
  if (log && lo === hi) return { lo: 0, hi, log: false };
  if (log && floor > 0) return { lo, hi, log, floor };
  return { lo: log ? lo : Math.min(lo, 0), hi, log };
}

/** A value on the scale, 0 (low) … 1 (high). */
export function heat(s: Scale, v: number): number {
  if (Number.isNaN(v)) return NaN;
  if (s.log) {
    if (v <= 0) return 0;
    if (s.hi <= s.lo) return 1;
    const h = Math.min(1, Math.max(0, (Math.log(v) - Math.log(s.lo)) / (Math.log(s.hi) - Math.log(s.lo))));
    const floor = s.floor ?? 0;
    return floor + (1 - floor) * h;
  }
  if (s.hi <= s.lo) return v > 0 ? 1 : 0;
  return Math.min(1, Math.max(0, (v - s.lo) / (s.hi - s.lo)));
}

export interface Overlay {
  measure: Measure;
  /** null: nothing drawn has a value, or (`zeros`) every value drawn is 0. */
  scale: Scale | null;
  /** Heat of each drawn box (key → 0..1); boxes without a value are left out. */
  heat: Map<string, number>;
  /** Every drawn box with a value has 0 (an unrolled `x + 1` has no FLOPs): no range to
   * span; those boxes get the cold end. */
  zeros: boolean;
}

/** Heat of every drawn box for measure m, on a scale over what is drawn. */
export function overlay(idx: GraphIndex, vg: VisibleGraph, m: Measure, values = nodeValues(idx, m)): Overlay {
  const out = new Map<string, number>();
  if (m === "none") return { measure: m, scale: null, heat: out, zeros: false };
  const drawn = vg.nodes.map((v) => [v.key, drawnValue(idx, values, m, v)] as const);
  const some = drawn.filter(([, x]) => !Number.isNaN(x));
  if (some.length && some.every(([, x]) => x <= 0)) {
    for (const [key] of some) out.set(key, 0);
    return { measure: m, scale: null, heat: out, zeros: true };
  }
  const scale = scaleOf(
    some.map(([, x]) => x),
    MEASURES[m].log,
    MEASURES[m].floor,
  );
  if (scale) for (const [key, x] of some) out.set(key, heat(scale, x));
  return { measure: m, scale, heat: out, zeros: false };
}

/** A short name for where a node is: a module's path ("(root)" for the model itself). */
function displayPath(node: GraphNode): string {
  return node.kind === "module" ? node.path || "(root)" : node.name;
}

export interface Row {
  id: number;
  name: string;
  /** Where it is: the enclosing module's path (an op) or its own path (a module). */
  where: string;
  value: number;
  /** Of the total over all candidates (additive measures), else null. */
  share: number | null;
}

/** Which nodes compete in the table: ops, or for parameters the innermost modules. */
function candidates(idx: GraphIndex, m: Measure): GraphNode[] {
  const { nodes } = idx.graph;
  if (m === "params") {
    return nodes.filter((n) => n.kind === "module" && !idx.children[n.id]!.some((c) => nodes[c]!.kind === "module"));
  }
  // a constant with a cost is a tensor a factory call made (`torch.randn(…)`): an op's kin
  return nodes.filter(
    (n) =>
      n.kind === "op" ||
      (n.kind === "constant" && n.cost !== undefined && n.cost !== null) ||
      (n.kind === "module" && idx.children[n.id]!.length === 0),
  );
}

/** Whether the nodes the table ranks have values, all of them 0 (so it has no rows). */
export function onlyZeros(idx: GraphIndex, m: Measure, values = nodeValues(idx, m)): boolean {
  if (m === "none") return false;
  let some = false;
  for (const n of candidates(idx, m)) {
    const x = values[n.id]!;
    if (x > 0) return false;
    if (!Number.isNaN(x)) some = true;
  }
  return some;
}

/** The `limit` heaviest nodes for measure m (value > 0), heaviest first; a compare view's
 * ghosts have no value (nodeValues), so they are neither ranked nor in the total. */
export function topRows(idx: GraphIndex, m: Measure, limit = 20, values = nodeValues(idx, m)): Row[] {
  if (m === "none") return [];
  const { nodes } = idx.graph;
  const pool = candidates(idx, m).filter((n) => values[n.id]! > 0);
  const total = MEASURES[m].additive ? pool.reduce((s, n) => s + values[n.id]!, 0) : 0;
  pool.sort((a, b) => values[b.id]! - values[a.id]! || a.id - b.id);
  return pool.slice(0, limit).map((n) => {
    const parent = n.parent === null ? null : nodes[n.parent]!;
    const where = n.kind === "module" ? displayPath(n) : parent ? displayPath(parent) : "";
    const value = values[n.id]!;
    return { id: n.id, name: n.name, where, value, share: total > 0 ? value / total : null };
  });
}
