// (graph index, expansion) → visible graph, labels and DOT: the pure pipeline the worker
// runs before Graphviz. Kept in one place so tests run exactly what the page runs.
import { toDot } from "./dot";
import type { Expansion } from "./expansion";
import { replaceHubEdges } from "./hubs";
import type { Label } from "./labels";
import type { Measure } from "./metrics";
import type { GraphIndex } from "./model";
import { buildVisible, type VisibleGraph } from "./visible";

/** Above this many drawn nodes, dot spends less effort on crossings (seconds saved). */
export const BIG_GRAPH = 1500;

export interface View {
  vg: VisibleGraph;
  labels: Map<string, Label>;
  dot: string;
}

export function computeView(idx: GraphIndex, exp: Expansion, measure?: Measure): View {
  const vg = replaceHubEdges(buildVisible(idx, exp));
  const { dot, labels } = toDot(idx, vg, measure);
  const tuned =
    vg.nodes.length > BIG_GRAPH ? dot.replace("outputorder=edgesfirst", "outputorder=edgesfirst, mclimit=0.2, nslimit=1, nslimit1=1") : dot;
  return { vg, labels, dot: tuned };
}
