// What a screen reader is told about a drawn box or frame (pure): its kind, its name, its
// module path (a ×N group: its count and first … last path) and the shapes in → out.
import type { GraphIndex } from "./model";
import type { VCluster, VisibleGraph, VNode } from "./visible";
import { distinctTensors } from "./tensors";
import { shapeText } from "./labels";
import { segmentRange, segmentsOf } from "./segments";

/** Most shapes said on each side; the rest as "+N more". */
const MAX_SHAPES = 3;

interface Drawn {
  /** Each drawn box by key, and each opened frame. */
  nodes: Map<string, VNode>;
  frames: Map<string, VCluster>;
  /** Edges into and out of each drawn key (a hub's reference boxes' edges are its own). */
  ends: Map<string, { in: number[]; out: number[] }>;
}

// (per view, made once: a view of 6,000 boxes is labelled box by box as it is drawn)
const cache = new WeakMap<VisibleGraph, Drawn>();

function drawnOf(vg: VisibleGraph): Drawn {
  const had = cache.get(vg);
  if (had) return had;
  const m = new Map<string, { in: number[]; out: number[] }>();
  const refOf = new Map(vg.nodes.filter((n) => n.refOf).map((n) => [n.key, n.refOf!]));
  const at = (k: string): { in: number[]; out: number[] } => {
    const had = m.get(k);
    if (had) return had;
    const e = { in: [] as number[], out: [] as number[] };
    m.set(k, e);
    return e;
  };
  for (const e of vg.edges) {
    at(e.dst).in.push(...e.edges);
    at(refOf.get(e.src) ?? e.src).out.push(...e.edges);
  }
  const d = { nodes: new Map(vg.nodes.map((n) => [n.key, n])), frames: new Map(vg.clusters.map((c) => [c.key, c])), ends: m };
  cache.set(vg, d);
  return d;
}

function shapes(idx: GraphIndex, ids: number[]): string {
  const ts = distinctTensors(idx.graph.edges, ids).map((t) => shapeText(t.shape));
  const more = ts.length - MAX_SHAPES;
  return ts.slice(0, MAX_SHAPES).join(", ") + (more > 0 ? ` +${more} more` : "");
}

/** "module GPT2Block h.1, 1×64×768 → 1×64×768"; null for a key not drawn. */
export function spokenName(idx: GraphIndex, vg: VisibleGraph, key: string): string | null {
  const drawn = drawnOf(vg);
  const v = drawn.nodes.get(key);
  const c = v ? undefined : drawn.frames.get(key);
  if (!v && !c) return null;
  const kind = v?.kind ?? c!.kind;
  const id = v?.id ?? c!.id;
  let what: string;
  if (kind === "segment") what = `folded ${segmentRange(segmentsOf(idx).list[id]!)}`;
  else if (kind === "group") {
    const g = idx.graph.groups[id]!;
    const first = idx.graph.nodes[g.members[0]!]!;
    const last = idx.graph.nodes[g.members[g.members.length - 1]!]!;
    const n = g.members.length;
    const name = g.name ? (g.name.includes(`×${n}`) ? g.name : `${g.name} ×${n}`) : `${first.name} ×${n}`;
    const paths = first.path === last.path ? `${first.path} called ${n} times` : `${first.path} … ${last.path}`;
    what = `group ${name} ${paths}`;
  } else {
    const node = idx.graph.nodes[id]!;
    if (kind === "ref") what = `reference to ${node.kind === "module" ? node.path || node.name : node.name}`;
    else if (node.kind === "module") what = `module ${node.name} ${node.path || "(root)"}${node.call > 0 ? ` call ${node.call}` : ""}`;
    else what = `${node.kind} ${node.name}`;
  }
  if (c) return `${what}, open`;
  const e = drawn.ends.get(key);
  const ins = e ? shapes(idx, e.in) : "";
  const outs = e ? shapes(idx, e.out) : "";
  const flow = ins && outs ? `${ins} → ${outs}` : ins ? `in ${ins}` : outs ? `out ${outs}` : "";
  return flow ? `${what}, ${flow}` : what;
}
