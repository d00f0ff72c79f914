// (graph index, expansion) → visible graph, labels and DOT: the pure pipeline the worker
// runs before Graphviz. Kept in one place so tests run exactly what the page runs.
import { toDot } from "./dot";
import type { Expansion } from "./expansion";
import { replaceHubEdges } from "./hubs";
import type { Label } from "./labels";
import type { Measure } from "./metrics";
import type { GraphIndex } from "./model";
import { buildVisible, type Limits, type VisibleGraph } from "./visible";

/** Above this many drawn nodes, dot spends less effort on crossings (seconds saved). */
export const BIG_GRAPH = 1500;

/**
 * What one view may draw. Beyond 6,000 boxes and frames Graphviz takes minutes, runs out of
 * memory or of stack (a chain of ~20,000 boxes; the 4,000-op benchmark draws 4,002); it
 * fails on frames nested 250-300 deep (real models nest under 20).
 */
export const DRAW_LIMITS: Limits = { boxes: 6000, levels: 100 };

export interface View {
  vg: VisibleGraph;
  labels: Map<string, Label>;
  dot: string;
}

/** Throws TooManyToDraw (visible.ts) for a view beyond DRAW_LIMITS. */
export function computeView(idx: GraphIndex, exp: Expansion, measure?: Measure): View {
  const vg = replaceHubEdges(buildVisible(idx, exp, DRAW_LIMITS));
  const { dot, labels } = toDot(idx, vg, measure, vg.nodes.length > BIG_GRAPH);
  return { vg, labels, dot };
}
