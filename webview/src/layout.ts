// Parse Graphviz "json0" output into plain positioned shapes in screen coordinates
// (y down, origin top-left, 1 unit = 1 px at zoom 1). Runs in the worker.

export interface LNode {
  key: string;
  x: number; // centre
  y: number;
  w: number;
  h: number;
}

export interface LCluster {
  key: string;
  x: number; // top-left
  y: number;
  w: number;
  h: number;
}

export interface LEdge {
  key: string;
  /** Cubic B-spline control points: p0, then triples. */
  points: [number, number][];
  /** Arrow tip, when dot drew an arrowhead. */
  end: [number, number] | null;
  label: [number, number] | null;
}

export interface Layout {
  width: number;
  height: number;
  nodes: LNode[];
  clusters: LCluster[];
  edges: LEdge[];
}

interface GvObject {
  name: string;
  bb?: string;
  pos?: string;
  width?: string;
  height?: string;
}

interface GvEdge {
  id?: string;
  pos?: string;
  lp?: string;
}

interface GvJson {
  bb: string;
  _subgraph_cnt?: number;
  objects?: GvObject[];
  edges?: GvEdge[];
}

const nums = (s: string): number[] => s.split(",").map(Number);

export function parseLayout(json: string): Layout {
  const g = JSON.parse(json) as GvJson;
  const [, , bw, bh] = nums(g.bb) as [number, number, number, number];
  const flip = (y: number): number => bh - y;
  const nodes: LNode[] = [];
  const clusters: LCluster[] = [];
  for (const o of g.objects ?? []) {
    if (o.name.startsWith("cluster_") && o.bb) {
      const [x0, y0, x1, y1] = nums(o.bb) as [number, number, number, number];
      clusters.push({ key: o.name.slice(8), x: x0, y: flip(y1), w: x1 - x0, h: y1 - y0 });
    } else if (o.pos) {
      const [x, y] = nums(o.pos) as [number, number];
      nodes.push({ key: o.name, x, y: flip(y), w: Number(o.width ?? 0) * 72, h: Number(o.height ?? 0) * 72 });
    }
  }
  const edges: LEdge[] = [];
  for (const e of g.edges ?? []) {
    if (!e.pos || !e.id) continue;
    let end: [number, number] | null = null;
    const points: [number, number][] = [];
    for (const part of e.pos.split(" ")) {
      if (part.startsWith("e,")) {
        const [x, y] = nums(part.slice(2)) as [number, number];
        end = [x, flip(y)];
      } else if (part.startsWith("s,")) {
        continue; // start arrowheads are never requested
      } else if (part) {
        const [x, y] = nums(part) as [number, number];
        points.push([x, flip(y)]);
      }
    }
    let label: [number, number] | null = null;
    if (e.lp) {
      const [x, y] = nums(e.lp) as [number, number];
      label = [x, flip(y)];
    }
    edges.push({ key: e.id, points, end, label });
  }
  return { width: bw, height: bh, nodes, clusters, edges };
}
