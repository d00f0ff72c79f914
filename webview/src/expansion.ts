// Expansion state: which modules are open (drawn as clusters), which repeated-block
// groups are unfolded and which segments of long runs are open. Immutable values so they
// can key the layout cache.
import { ancestors, type GraphIndex } from "./model";
import { segmentPath, segmentsOf } from "./segments";

export interface Expansion {
  /** Expanded container modules (node ids). */
  readonly modules: ReadonlySet<number>;
  /** Unfolded groups (indexes into graph.groups). */
  readonly groups: ReadonlySet<number>;
  /** Open segments of long runs (indexes into segmentsOf(idx).list). */
  readonly segments: ReadonlySet<number>;
}

const NONE: ReadonlySet<number> = new Set();

export function expansionKey(e: Expansion): string {
  const m = [...e.modules].sort((a, b) => a - b).join(",");
  const g = [...e.groups].sort((a, b) => a - b).join(",");
  const s = [...e.segments].sort((a, b) => a - b).join(",");
  return `m${m}|g${g}|s${s}`;
}

/**
 * A module whose only child is one leaf (an nn.Linear around F.linear, a LayerNorm around
 * F.layer_norm) says as much as a box: Expand all and the depth control leave it closed,
 * which also spares dot hundreds of clusters. It still opens when asked.
 */
export function isWrapper(idx: GraphIndex, id: number): boolean {
  const kids = idx.children[id]!;
  return id !== idx.rootModule && kids.length === 1 && idx.children[kids[0]!]!.length === 0;
}

/** The opening view: the top level and the root model's children. */
export function initialExpansion(idx: GraphIndex): Expansion {
  return toDepth(idx, 1);
}

/** Show everything down to `depth` levels below the top level (1 = the root's children). */
export function toDepth(idx: GraphIndex, depth: number): Expansion {
  const modules = new Set<number>();
  for (const id of idx.containers) if (idx.depth[id]! < depth && !isWrapper(idx, id)) modules.add(id);
  const groups = new Set<number>();
  idx.graph.groups.forEach((g, gi) => {
    const first = g.members[0];
    // A group unfolds once its members would be opened themselves.
    if (first !== undefined && idx.depth[first]! < depth) groups.add(gi);
  });
  // Segments stay closed: opening all of them would draw the long run they fold.
  return { modules, groups, segments: NONE };
}

/**
 * `e` with every level from `depth` down closed, and nothing opened: the depth control's
 * "−". (toDepth(depth) would open every box above `depth` a search or a click left closed.)
 */
export function closeFrom(idx: GraphIndex, e: Expansion, depth: number): Expansion {
  const modules = new Set([...e.modules].filter((id) => idx.depth[id]! < depth));
  const groups = new Set(
    [...e.groups].filter((gi) => {
      const first = idx.graph.groups[gi]?.members[0];
      return first !== undefined && idx.depth[first]! < depth;
    }),
  );
  return { modules, groups, segments: e.segments };
}

export function expandAll(idx: GraphIndex): Expansion {
  const modules = new Set(idx.containers.filter((id) => !isWrapper(idx, id)));
  return { modules, groups: new Set(idx.graph.groups.map((_, i) => i)), segments: NONE };
}

export function collapseAll(idx: GraphIndex): Expansion {
  return initialExpansion(idx);
}

export function toggleModule(e: Expansion, id: number): Expansion {
  const modules = new Set(e.modules);
  if (modules.has(id)) modules.delete(id);
  else modules.add(id);
  return { modules, groups: e.groups, segments: e.segments };
}

export function toggleGroup(e: Expansion, gi: number): Expansion {
  const groups = new Set(e.groups);
  if (groups.has(gi)) groups.delete(gi);
  else groups.add(gi);
  return { modules: e.modules, groups, segments: e.segments };
}

export function toggleSegment(e: Expansion, si: number): Expansion {
  const segments = new Set(e.segments);
  if (segments.has(si)) segments.delete(si);
  else segments.add(si);
  return { modules: e.modules, groups: e.groups, segments };
}

/** Open every ancestor of `id` (and unfold their groups and segments) so the node itself is drawn. */
export function reveal(idx: GraphIndex, e: Expansion, id: number): Expansion {
  const segs = segmentsOf(idx);
  const modules = new Set(e.modules);
  const groups = new Set(e.groups);
  const segments = new Set(e.segments);
  const path = ancestors(idx, id);
  for (const a of path) modules.add(a);
  for (const x of [...path, id]) {
    const gi = idx.groupOf[x]!;
    if (gi >= 0) {
      groups.add(gi);
      for (const s of segmentPath(segs, segs.ofGroup[gi]!)) segments.add(s);
    }
    for (const s of segmentPath(segs, segs.ofNode[x]!)) segments.add(s);
  }
  return { modules, groups, segments };
}

/** The depth control's value for a depth asked for: past the deepest level anything still
 * opens at (the `9` key, or Depth + where the deepest boxes each wrap one op and stay
 * closed), the depth that opens the same boxes, as Expand all shows it. */
export function depthFor(idx: GraphIndex, asked: number): number {
  const depth = Math.max(0, Math.min(asked, idx.maxDepth + 1));
  return depth > 0 ? Math.min(depth, currentDepth(idx, toDepth(idx, depth))) : 0;
}

/** Deepest level currently shown (opened modules and unfolded groups that are drawn: a box
 * opened inside one closed or folded since stays open, unseen), for the depth control. */
export function currentDepth(idx: GraphIndex, e: Expansion): number {
  const drawn = (id: number): boolean => {
    for (const x of [id, ...ancestors(idx, id)]) {
      const gi = idx.groupOf[x]!;
      if (gi >= 0 && !e.groups.has(gi)) return false; // (a folded group: one box for them all)
      if (x !== id && !e.modules.has(x)) return false;
    }
    return true;
  };
  let d = 0;
  for (const id of e.modules) if (drawn(id)) d = Math.max(d, idx.depth[id]! + 1);
  for (const gi of e.groups) {
    const first = idx.graph.groups[gi]?.members[0];
    if (first !== undefined && drawn(first)) d = Math.max(d, idx.depth[first]! + 1);
  }
  return d;
}
