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
  /** SVG path: dot's cubic B-spline, then a line to the arrow tip. A string clones cheaply. */
  path: string;
  /** Bounding box of the path. */
  box: [number, number, number, number];
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
  xlp?: string;
  xlabel?: string;
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
      } else if (part && !part.startsWith("s,")) {
        // ("s,": a start arrowhead, never requested)
        const [x, y] = nums(part) as [number, number];
        points.push([x, flip(y)]);
      }
    }
    let label: [number, number] | null = null;
    const lp = e.lp ?? e.xlp;
    if (lp) {
      const [x, y] = nums(lp) as [number, number];
      label = [x, flip(y)];
    }
    edges.push({ key: e.id, path: pathOf(points, end), box: boxOf(end ? [...points, end] : points), label });
  }
  const layout = { width: bw, height: bh, nodes, clusters, edges };
  if ((g.edges ?? []).some((e) => e.xlp)) {
    const lengths = new Map((g.edges ?? []).map((e) => [e.id ?? "", [...(e.xlabel ?? "")].length]));
    dropCrowdedLabels(layout, lengths);
  }
  return layout;
}

function pathOf(p: [number, number][], end: [number, number] | null): string {
  if (p.length === 0) return "";
  let s = `M${p[0]![0]},${p[0]![1]}`;
  for (let i = 1; i + 2 < p.length; i += 3) {
    s += `C${p[i]![0]},${p[i]![1]} ${p[i + 1]![0]},${p[i + 1]![1]} ${p[i + 2]![0]},${p[i + 2]![1]}`;
  }
  if (end) s += `L${end[0]},${end[1]}`;
  return s;
}

function boxOf(p: [number, number][]): [number, number, number, number] {
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const [x, y] of p) {
    x0 = Math.min(x0, x);
    y0 = Math.min(y0, y);
    x1 = Math.max(x1, x);
    y1 = Math.max(y1, y);
  }
  return p.length ? [x0, y0, x1, y1] : [0, 0, 0, 0];
}

interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

const CELL = 64;

/**
 * External edge labels (big graphs) are placed by dot after layout and may land on a
 * cluster's title band or on each other; drop those rather than draw overlapping text.
 * The shape is still in the hover details.
 */
export function dropCrowdedLabels(layout: Layout, lengths: Map<string, number>): void {
  const grid = new Map<string, Box[]>();
  const cells = (b: Box): string[] => {
    const out: string[] = [];
    for (let i = Math.floor(b.x0 / CELL); i <= Math.floor(b.x1 / CELL); i++) {
      for (let j = Math.floor(b.y0 / CELL); j <= Math.floor(b.y1 / CELL); j++) out.push(`${i},${j}`);
    }
    return out;
  };
  const add = (b: Box): void => {
    for (const c of cells(b)) {
      const list = grid.get(c);
      if (list) list.push(b);
      else grid.set(c, [b]);
    }
  };
  const hits = (b: Box): boolean => cells(b).some((c) => (grid.get(c) ?? []).some((o) => b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1));
  for (const n of layout.nodes) add({ x0: n.x - n.w / 2, y0: n.y - n.h / 2, x1: n.x + n.w / 2, y1: n.y + n.h / 2 });
  for (const c of layout.clusters) add({ x0: c.x, y0: c.y, x1: c.x + c.w, y1: c.y + 24 });
  for (const e of layout.edges) {
    if (!e.label) continue;
    // 10 px monospace, 6.2 px a character: its glyphs ±5 px of the point, clear of boxes;
    // two labels need their 3 px halos apart too, so a kept label claims 4 px more around
    const half = ((lengths.get(e.key) ?? 0) * 6.2) / 2 + 2;
    const [x, y] = e.label;
    if (hits({ x0: x - half, y0: y - 5, x1: x + half, y1: y + 5 })) e.label = null;
    else add({ x0: x - half - 1, y0: y - 9, x1: x + half + 1, y1: y + 9 });
  }
}
