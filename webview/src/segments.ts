// Long runs at one level (an unrolled RNN, a scan loop: thousands of ops in one forward)
// fold into segments of consecutive calls, each a box that opens like a module. Graphviz
// lays out a cluster of n boxes in about n² time and overflows its stack on the longest
// chains; with segments no container holds more than SEGMENT_LIMIT items. Derived from the
// graph alone (never from the expansion), so a segment's number names the same calls in
// every view. Pure.
import type { Cost } from "./format";
import type { GraphIndex } from "./model";

/** Most items drawn directly in one container (the top level, a module, a group, a segment). */
export const SEGMENT_LIMIT = 100;

/** One thing drawn in a container: a node, a ×N group, or a segment. */
export type Item = { kind: "node" | "group" | "segment"; id: number };

export interface Segment {
  /** Key of the real container it lies in: null (top level), "n<id>" or "g<gi>". */
  container: string | null;
  /** Enclosing segment (a long run is split in levels), or -1. */
  parent: number;
  /** What it shows when opened: nodes and groups, or segments of a lower level. */
  items: Item[];
  /** Its first and last call (0-based, inclusive) in the container's run, and the run's
   * number of calls: a ×N group counts N. */
  from: number;
  to: number;
  total: number;
}

export interface Segments {
  list: Segment[];
  /** Items of each container that has segments: its top-level segments. */
  top: Map<string | null, Item[]>;
  /** Innermost segment holding node id (a node or the group it belongs to), or -1. */
  ofNode: Int32Array;
  /** Innermost segment holding group gi, or -1. */
  ofGroup: Int32Array;
}

const cache = new WeakMap<GraphIndex, Segments>();

/** The segments of a graph (computed once per index). */
export function segmentsOf(idx: GraphIndex): Segments {
  let s = cache.get(idx);
  if (!s) {
    s = build(idx);
    cache.set(idx, s);
  }
  return s;
}

/** A container's items before folding: children in order, each group's members as one. */
export function rawItems(idx: GraphIndex, ids: readonly number[]): Item[] {
  const out: Item[] = [];
  let lastGroup = -1;
  for (const id of ids) {
    const gi = idx.groupOf[id]!;
    if (gi < 0) out.push({ kind: "node", id });
    else if (gi !== lastGroup) out.push({ kind: "group", id: gi });
    lastGroup = gi;
  }
  return out;
}

/** Container keys and their members, for every container that can hold items. */
function containers(idx: GraphIndex): [string | null, readonly number[]][] {
  const out: [string | null, readonly number[]][] = [];
  if (idx.roots.length > SEGMENT_LIMIT) out.push([null, idx.roots]);
  idx.children.forEach((kids, id) => {
    if (kids.length > SEGMENT_LIMIT) out.push([`n${id}`, kids]);
  });
  idx.graph.groups.forEach((g, gi) => {
    if (g.members.length > SEGMENT_LIMIT) out.push([`g${gi}`, g.members]);
  });
  return out;
}

function build(idx: GraphIndex): Segments {
  const list: Segment[] = [];
  const top = new Map<string | null, Item[]>();
  const ofNode = new Int32Array(idx.graph.nodes.length).fill(-1);
  const ofGroup = new Int32Array(idx.graph.groups.length).fill(-1);
  for (const [container, ids] of containers(idx)) {
    // A group's own cluster holds its members one by one; elsewhere a group is one item.
    const items: Item[] = container?.startsWith("g") ? ids.map((id) => ({ kind: "node", id })) : rawItems(idx, ids);
    if (items.length <= SEGMENT_LIMIT) continue;
    top.set(container, split(items, 0, items.length, -1, container, callStarts(idx, items), list, ofNode, ofGroup));
  }
  return { list, top, ofNode, ofGroup };
}

/** Where each item's calls start in its run (one more entry: the run's calls), a ×N group
 * counting N: a segment's label counts calls, not boxes. */
function callStarts(idx: GraphIndex, items: readonly Item[]): number[] {
  const starts = [0];
  for (const it of items) starts.push(starts[starts.length - 1]! + (it.kind === "group" ? idx.graph.groups[it.id]!.members.length : 1));
  return starts;
}

/**
 * Items [from, to) of a run as at most SEGMENT_LIMIT items: segments of equal size, in
 * as many levels as needed (100 items a level: 10⁴ calls in two levels, 10⁶ in three).
 */
function split(
  items: Item[],
  from: number,
  to: number,
  parent: number,
  container: string | null,
  starts: readonly number[],
  list: Segment[],
  ofNode: Int32Array,
  ofGroup: Int32Array,
): Item[] {
  const n = to - from;
  let span = SEGMENT_LIMIT;
  while (n / span > SEGMENT_LIMIT) span *= SEGMENT_LIMIT;
  const count = Math.ceil(n / span);
  const size = Math.ceil(n / count);
  const out: Item[] = [];
  for (let a = from; a < to; a += size) {
    const b = Math.min(a + size, to);
    const si = list.length;
    const seg: Segment = { container, parent, items: [], from: starts[a]!, to: starts[b]! - 1, total: starts[items.length]! };
    list.push(seg);
    out.push({ kind: "segment", id: si });
    if (b - a > SEGMENT_LIMIT) {
      seg.items = split(items, a, b, si, container, starts, list, ofNode, ofGroup);
    } else {
      seg.items = items.slice(a, b);
      for (const it of seg.items) (it.kind === "group" ? ofGroup : ofNode)[it.id] = si;
    }
  }
  return out;
}

/** The segments (outermost first) that must be open for item (node id or group gi) to be drawn. */
export function segmentPath(segs: Segments, si: number): number[] {
  const out: number[] = [];
  for (let s = si; s >= 0; s = segs.list[s]!.parent) out.push(s);
  return out.reverse();
}

const summaries = new WeakMap<Segment, string>();

/** What a segment holds, by name, most frequent first: "add ×98 · mul ×2", "add ×10,000". */
export function segmentSummary(idx: GraphIndex, segs: Segments, si: number): string {
  const seg = segs.list[si]!;
  let text = summaries.get(seg);
  if (text !== undefined) return text;
  const counts = new Map<string, number>();
  // In call order (names used as often keep that order).
  const todo: Item[] = [...seg.items].reverse();
  for (let it = todo.pop(); it; it = todo.pop()) {
    if (it.kind === "segment") {
      todo.push(...[...segs.list[it.id]!.items].reverse());
      continue;
    }
    // A ×N group is N calls of its members' name.
    const members = it.kind === "group" ? idx.graph.groups[it.id]!.members : [it.id];
    const name = idx.graph.nodes[members[0]!]!.name;
    counts.set(name, (counts.get(name) ?? 0) + members.length);
  }
  const top = [...counts].sort((a, b) => b[1] - a[1]);
  text =
    top
      .slice(0, 2)
      .map(([name, c]) => (c > 1 ? `${name} ×${withCommas(c)}` : name))
      .join(" · ") + (top.length > 2 ? " · …" : "");
  summaries.set(seg, text);
  return text;
}

/** A count of calls as people read it: 10,000. */
const withCommas = (n: number): string => n.toLocaleString("en-US");

/** "calls 1–100 of 5,000": where a segment lies in its run. */
export function segmentRange(seg: Segment): string {
  return `calls ${withCommas(seg.from + 1)}–${withCommas(seg.to + 1)} of ${withCommas(seg.total)}`;
}

/**
 * What the calls a segment folds cost together (FLOPs, output bytes, time), summed as a ×N
 * group's members are; undefined when none of them has a cost.
 */
export function segmentCost(idx: GraphIndex, segs: Segments, si: number): Cost | undefined {
  let total: Cost | undefined;
  for (const it of segs.list[si]!.items) {
    const c =
      it.kind === "segment" ? segmentCost(idx, segs, it.id) : it.kind === "group" ? idx.graph.groups[it.id]!.cost : idx.graph.nodes[it.id]!.cost;
    if (!c) continue;
    total ??= { flops: 0, bytes: 0, time_ns: 0 };
    total.flops += c.flops;
    total.bytes += c.bytes;
    total.time_ns += c.time_ns;
  }
  return total;
}
