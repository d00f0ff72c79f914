// How a hover names the nodes and tensors it lists: "mul in layers.0.self_attn", a
// tensor's shape and layout, and names that tell apart tensors that would read the same
// (Llama's `to(mul(cos))` and `to(mul(sin))`, "chunk (output 1)"). Pure.
import type { GraphIndex } from "./model";
import { clip, shapeText } from "./labels";
import type { Tensor } from "./tensors";

/** "[4, 32] float32", and for a DTensor its whole tensor beside this rank's shard:
 * "[4, 32] float32 (local) of [4, 64] Shard(1) on cpu[tp=2]". */
export const tensorText = (t: Tensor): string => {
  const local = `${shapeText(t.shape)} ${t.dtype}`.trim();
  if (t.placements === undefined) return local;
  const mesh = t.mesh ? ` on ${t.mesh}` : "";
  return `${local} (local) of ${shapeText(t.global_shape ?? null)} ${t.placements}${mesh}`;
};

/** How long a name or path a hover line shows whole (the drawing cuts at 60; the hover
 * has the whole text, as long as a hover line may be). */
export const WHOLE = 200;

/** What a node goes by in a hover: a module its path, anything else its name. */
export function ownName(idx: GraphIndex, id: number, max = WHOLE): string {
  const node = idx.graph.nodes[id]!;
  return clip(node.kind === "module" ? node.path || node.name : node.name, max);
}

/** "mul in layers.0.self_attn": a node (or `name` for it) and the module call it ran in. */
export function nodeWhere(idx: GraphIndex, id: number, name = ownName(idx, id)): string {
  const node = idx.graph.nodes[id]!;
  const p = node.parent === null ? null : idx.graph.nodes[node.parent]!;
  return p?.path ? `${name} in ${clip(p.path, WHOLE)}` : name;
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
  for (let at = id; at >= 0 && names.length <= depth; at = firstInput(idx, at)) names.push(ownName(idx, at, names.length ? 24 : WHOLE));
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
export function sourceNames(idx: GraphIndex, noted: [Tensor, string][]): string[] {
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
