// What a drawn edge carries: the graph's edges are one per (tensor, consumer), so one
// tensor read by two calls inside a collapsed module arrives as two edges. Labels and
// hovers count tensors, not edges. Pure.
import type { GraphEdge } from "./format";

export interface Tensor {
  src: number;
  shape: number[] | null;
  dtype: string;
  /** A DTensor's layout (format.ts GraphEdge), when the edge has one. */
  global_shape?: number[];
  placements?: string;
  mesh?: string;
  /** Indexes into graph.edges: one per use (consumer) of this tensor. */
  uses: number[];
}

/**
 * Distinct tensors among `ids`. An edge's `output` names which of its producer's outputs it
 * carries (a call of several); without it (a call of one output, an older file) a tensor is
 * its producer, shape and dtype, and one consumer reading two such (q and k of one `chunk`)
 * gets two edges by contract, so the k-th of them at each consumer is the k-th tensor.
 */
export function distinctTensors(edges: GraphEdge[], ids: readonly number[]): Tensor[] {
  const out: Tensor[] = [];
  const byKey = new Map<string, Tensor>();
  const seenAtDst = new Map<string, number>();
  for (const i of ids) {
    const e = edges[i];
    if (!e) continue;
    let key: string;
    if (e.output !== undefined) key = `${e.src}|out ${e.output}`;
    else {
      const base = `${e.src}|${e.shape?.join(",") ?? "?"}|${e.dtype}`;
      const nth = seenAtDst.get(`${base}|${e.dst}`) ?? 0;
      seenAtDst.set(`${base}|${e.dst}`, nth + 1);
      key = `${base}|${nth}`;
    }
    let t = byKey.get(key);
    if (!t) {
      t = { src: e.src, shape: e.shape, dtype: e.dtype, uses: [] };
      if (e.placements !== undefined) {
        t.global_shape = e.global_shape;
        t.placements = e.placements;
        t.mesh = e.mesh;
      }
      byKey.set(key, t);
      out.push(t);
    }
    t.uses.push(i);
  }
  return out;
}
