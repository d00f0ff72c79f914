// Text shown for drawn items, cut to LABEL_MAX characters (the hover has the whole text).
// Pure; the drawing layer only ever sets these as text.
import type { GraphEdge, GraphNode, ModelInfo } from "./format";
import type { GraphIndex } from "./model";
import type { VCluster, VNode } from "./visible";
import { distinctTensors } from "./tensors";
import { segmentRange, segmentSummary, segmentsOf } from "./segments";

export interface Label {
  title: string;
  sub: string;
}

export function shapeText(shape: number[] | null): string {
  if (shape === null) return "?";
  if (shape.length === 0) return "scalar";
  return shape.join("×");
}

/** Longest text drawn in a box, a cluster header or on an edge; the hover has the rest. */
export const LABEL_MAX = 60;

/** Characters as people see them: an accented letter, a flag, a family emoji is one. */
const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** Whether `text` has more than `max` characters (counts no further: a label may be
 * megabytes long). */
function longer(text: string, max: number): boolean {
  // UTF-16 length ≥ characters: short text is never counted
  if (text.length <= max) return false;
  let n = 0;
  for (const _ of graphemes.segment(text)) if (++n > max) return true;
  return false;
}

/** The first `n` characters of `text`. */
function head(text: string, n: number): string {
  let end = 0;
  let k = 0;
  for (const s of graphemes.segment(text)) {
    if (k++ === n) break;
    end = s.index + s.segment.length;
  }
  return text.slice(0, end);
}

/** The last `n` characters of `text`, found from its end (never reading the middle). */
function tail(text: string, n: number): string {
  const segs = graphemes.segment(text);
  let start = text.length;
  for (let k = 0; k < n && start > 0; k++) start = segs.containing(start - 1)!.index;
  return text.slice(start);
}

/** `text` cut to `max` characters with "…" in the middle (a path keeps its head and tail),
 * never inside a character. */
export function clip(text: string, max = LABEL_MAX): string {
  if (!longer(text, max)) return text;
  const first = Math.ceil((max - 1) * 0.6);
  return `${head(text, first)}…${tail(text, max - 1 - first)}`;
}

/**
 * Label of a drawn edge: the distinct tensors it carries (a tensor used twice inside the
 * box it enters is one tensor), two shapes at most and how many more.
 */
export function edgeLabel(edges: GraphEdge[], ids: number[]): string {
  const ts = distinctTensors(edges, ids);
  if (ts.length === 0) return "";
  const shown = ts
    .slice(0, 2)
    .map((t) => shapeText(t.shape))
    .join(", ");
  return clip(ts.length > 2 ? `${shown} +${ts.length - 2} more` : shown, 48);
}

function groupRange(idx: GraphIndex, gi: number): string {
  const g = idx.graph.groups[gi]!;
  const a = idx.graph.nodes[g.members[0]!]!;
  const b = idx.graph.nodes[g.members[g.members.length - 1]!]!;
  return a.path && b.path ? `${clip(a.path, 29)} … ${clip(b.path, 29)}` : "";
}

function groupTitle(idx: GraphIndex, gi: number): string {
  const g = idx.graph.groups[gi]!;
  if (g.name) return g.name;
  const first = idx.graph.nodes[g.members[0]!]!;
  return `${first.name} ×${g.members.length.toLocaleString("en-US")}`;
}

/** An op of collective communication (`attrs.collective`: all_reduce, all_gather_into_tensor…). */
export function isCollective(node: GraphNode): boolean {
  return node.kind === "op" && node.attrs.collective === true;
}

function nodeLabelOf(node: GraphNode): Label {
  switch (node.kind) {
    case "module": {
      const path = node.call > 0 ? `${node.path} #${node.call}` : node.path;
      // A wrapper (torch.compile, DDP, fully_shard) is a mark on the module it wraps.
      const wrapped = typeof node.attrs.wrapped_by === "string" ? `[${node.attrs.wrapped_by}]` : "";
      return { title: node.name, sub: [path, wrapped].filter(Boolean).join(" ") };
    }
    case "constant":
      return { title: node.name || node.target, sub: "" };
    default:
      // Communication with other ranks: marked in the label as well as by its colours.
      return { title: isCollective(node) ? `⇄ ${node.name}` : node.name, sub: "" };
  }
}

export function vnodeLabel(idx: GraphIndex, v: VNode, refTitle?: string): Label {
  if (v.kind === "group") return clipped({ title: groupTitle(idx, v.id), sub: groupRange(idx, v.id) });
  if (v.kind === "segment") return segmentLabel(idx, v.id);
  if (v.kind === "ref") return clipped({ title: `↳ ${refTitle ?? "?"}`, sub: "" });
  return clipped(nodeLabelOf(idx.graph.nodes[v.id]!));
}

export function clusterLabel(idx: GraphIndex, c: VCluster): Label {
  if (c.kind === "group") return clipped({ title: groupTitle(idx, c.id), sub: groupRange(idx, c.id) });
  if (c.kind === "segment") return segmentLabel(idx, c.id);
  return clipped(nodeLabelOf(idx.graph.nodes[c.id]!));
}

/** Name a reference node shows for the drawn node it stands for. */
export function refTitle(idx: GraphIndex, src: VNode): string {
  if (src.kind === "group") return groupTitle(idx, src.id);
  if (src.kind === "segment") return segmentRange(segmentsOf(idx).list[src.id]!);
  const node = idx.graph.nodes[src.id]!;
  return node.kind === "module" ? node.path || node.name : node.name;
}

function segmentLabel(idx: GraphIndex, si: number): Label {
  const segs = segmentsOf(idx);
  return clipped({ title: segmentRange(segs.list[si]!), sub: segmentSummary(idx, segs, si) });
}

const clipped = (l: Label): Label => ({ title: clip(l.title), sub: clip(l.sub) });

/** " · rank 1 of 2" for a trace in one rank of a torch.distributed program; else "". */
export function rankText(model: ModelInfo): string {
  if (model.rank === undefined) return "";
  return model.world_size === undefined ? ` · rank ${model.rank}` : ` · rank ${model.rank} of ${model.world_size}`;
}
