// Hover rows for values and costs: FLOPs, bytes, time of a call, and the statistics (and
// histogram) of the tensor a box outputs. Pure; the tooltip sets everything as text.
import type { Cost, GraphEdge, Histogram, TensorStats } from "./format";
import type { GraphIndex } from "./model";
import { formatBytes, formatFlops, formatRange, formatShare, formatTime, formatValue } from "./units";

export interface ValueDetails {
  rows: [string, string][];
  hist?: Histogram;
}

export function costRows(cost: Cost | undefined): [string, string][] {
  if (!cost) return [];
  return [
    ["FLOPs", formatFlops(cost.flops)],
    ["out bytes", formatBytes(cost.bytes)],
    ["time", formatTime(cost.time_ns)],
  ];
}

export function statsRows(s: TensorStats): [string, string][] {
  const rows: [string, string][] = [];
  // the range, mean and |max| are of the finite values: said where others are there
  const finite = (s.nan ?? 0) > 0 || (s.inf ?? 0) > 0 ? " (finite)" : "";
  const [lo, hi] = formatRange(s.min, s.max);
  rows.push([`min … max${finite}`, `${lo} … ${hi}`]);
  if (s.std !== undefined) rows.push(["mean ± std", `${formatValue(s.mean)} ± ${formatValue(s.std)}`]);
  else rows.push(["mean", formatValue(s.mean)]);
  if (s.absmax !== undefined && s.absmax !== null) rows.push([`|max|${finite}`, formatValue(s.absmax)]);
  if (s.zeros !== undefined) rows.push(["zeros", formatShare(s.zeros)]);
  if ((s.nan ?? 0) > 0 || (s.inf ?? 0) > 0) rows.push(["NaN / Inf", `${s.nan ?? 0} / ${s.inf ?? 0}`]);
  return rows;
}

/** The tensor a box stands for: its first output (an output node: the tensor it receives). */
function tensorOf(idx: GraphIndex, id: number, inIds: number[], outIds: number[]): GraphEdge | undefined {
  const edges = idx.graph.edges;
  const read = outIds.map((i) => edges[i]!).filter((e) => e.stats);
  // (a call of several outputs, q, k, v of a split: the first of them)
  const own = read.reduce<GraphEdge | undefined>((a, e) => (a === undefined || (e.output ?? 0) < (a.output ?? 0) ? e : a), undefined);
  if (own) return own;
  if (idx.graph.nodes[id]?.kind === "output") return inIds.map((i) => edges[i]!).find((e) => e.stats);
  return undefined;
}

/**
 * Rows for a drawn node (or ×N group when `group` is set): its cost, then the statistics
 * of the tensor it outputs. inIds/outIds: indexes into graph.edges of the drawn edges
 * into and out of the box.
 */
export function valueDetails(idx: GraphIndex, id: number, inIds: number[], outIds: number[], group = false): ValueDetails {
  const rows: [string, string][] = [];
  const cost = group ? idx.graph.groups[id]?.cost : idx.graph.nodes[id]?.cost;
  rows.push(...costRows(cost));
  const e = group ? outIds.map((i) => idx.graph.edges[i]!).find((x) => x.stats) : tensorOf(idx, id, inIds, outIds);
  if (!e?.stats) return { rows };
  if (e.output !== undefined) rows.push(["values of", `output ${e.output + 1}`]); // (one of several)
  rows.push(...statsRows(e.stats));
  return e.hist ? { rows, hist: e.hist } : { rows };
}
