// Decoder and validator for the `torchscope.graph` wire format (docs/graph-format.md).
// Everything downstream trusts the shapes checked here, so unknown or malformed
// input fails with one readable FormatError instead of a crash deep in drawing.
import { decode as msgpackDecode } from "@msgpack/msgpack";
import { CompareFormatError, decodeCompare, type CompareData } from "./compare";

export const FORMAT = "torchscope.graph";
export const VERSION = 1;

export type NodeKind = "input" | "output" | "op" | "module" | "constant" | "error";
const KINDS: ReadonlySet<string> = new Set(["input", "output", "op", "module", "constant", "error"]);

export interface Site {
  file: string;
  line: number;
  func?: string;
  /** Where on the line the call's expression starts: 0-based, in UTF-8 bytes (Python's
   * count); absent when not known. */
  col?: number;
}

export type AttrValue = string | number | boolean | null | AttrValue[];

/** FLOPs, output bytes and wall time of a call; inclusive for modules and ×N groups. */
export interface Cost {
  flops: number;
  bytes: number;
  time_ns: number;
}

/**
 * Statistics of one tensor's values. Floating (and complex: of the magnitude) tensors
 * have all fields; integer and bool tensors min, max, mean and numel. min … absmax are
 * null when no value is finite.
 */
export interface TensorStats {
  min: number | null;
  max: number | null;
  mean: number | null;
  std?: number | null;
  absmax?: number | null;
  /** Fraction of the values that are 0. */
  zeros?: number;
  /** How many values are NaN, ±Inf. */
  nan?: number;
  inf?: number;
  numel: number;
}

/** 16 equal bins over [lo, hi] (the finite values' min and max). */
export interface Histogram {
  lo: number;
  hi: number;
  counts: number[];
}

/** What a trace recorded besides the structure. */
export interface Recorded {
  stats: boolean;
  costs: boolean;
}

export interface GraphNode {
  id: number;
  kind: NodeKind;
  name: string;
  parent: number | null;
  target: string;
  path: string;
  call: number;
  site: Site | null;
  defn: Site | null;
  params: number;
  attrs: Record<string, AttrValue>;
  cost?: Cost;
  /** The library frame an op ran in when `site` is the user's line that called it (an op inside
   * a torch helper, the failing call inside `nn.Linear`); absent when there is none. */
  inside?: Site;
}

export interface GraphEdge {
  src: number;
  dst: number;
  /** A DTensor's local shape (this rank's shard). */
  shape: number[] | null;
  dtype: string;
  stats?: TensorStats;
  hist?: Histogram;
  /** DTensor edges only: the whole tensor's shape, its placements ("Shard(0)", "Replicate()",
   * one per mesh dimension) and its device mesh ("cpu[tp=2]"). */
  global_shape?: number[];
  placements?: string;
  mesh?: string;
  /** Which of `src`'s output tensors (0-based), when it made several (q, k, v of a split). */
  output?: number;
}

export interface Group {
  parent: number | null;
  members: number[];
  name: string;
  cost?: Cost;
}

export interface GraphError {
  type: string;
  message: string;
  node: number | null;
  traceback: Site[];
}

export interface ModelInfo {
  name: string;
  qualname: string;
  params: number;
  device: string;
  dtype: string;
  /** This process's place in torch.distributed, when it was initialised for the trace. */
  rank?: number;
  world_size?: number;
}

export interface Graph {
  format: typeof FORMAT;
  version: number;
  model: ModelInfo;
  nodes: GraphNode[];
  edges: GraphEdge[];
  groups: Group[];
  error: GraphError | null;
  stats: { trace_ms: number; ops: number; modules: number };
  /** Absent in files written before values and costs existed (then nothing was recorded). */
  values?: Recorded;
  /** The first op whose output is non-finite while its inputs are finite; null if none. */
  nan_origin?: number | null;
  /** What the trace could not undo (a parameter written behind torch's back); [] normally. */
  warnings: string[];
  /** A compare view (two passes in one graph, compare.ts); absent in a plain trace. */
  compare?: CompareData;
}

export class FormatError extends Error {
  override name = "FormatError";
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function str(o: Obj, key: string, where: string, fallback?: string): string {
  const v = o[key];
  if (typeof v === "string") return v;
  if ((v === undefined || v === null) && fallback !== undefined) return fallback;
  if (!(key in o)) throw new FormatError(`${where}: no field "${key}"`);
  throw new FormatError(`${where}: field "${key}" should be a string`);
}

/** A count, a time, a line: any finite number. */
function number(o: Obj, key: string, where: string, fallback?: number): number {
  const v = o[key];
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "bigint") return Number(v);
  if ((v === undefined || v === null) && fallback !== undefined) return fallback;
  throw new FormatError(`${where}: field "${key}" should be a number`);
}

/** A node id, a call index or a column: a whole number (a fractional id names no node: the drawing
 * would fail on it far from here). */
function int(o: Obj, key: string, where: string, fallback?: number): number {
  const v = o[key];
  if (typeof v === "number" && Number.isInteger(v)) return v;
  if (typeof v === "bigint") return Number(v);
  if ((v === undefined || v === null) && fallback !== undefined) return fallback;
  throw new FormatError(`${where}: field "${key}" should be a whole number`);
}

function site(v: unknown, where: string): Site | null {
  if (v === null || v === undefined) return null;
  if (!isObj(v)) throw new FormatError(`${where}: site should be a map or nil`);
  const s: Site = { file: str(v, "file", where, ""), line: number(v, "line", where, 0) };
  if (typeof v.func === "string") s.func = v.func;
  if (v.col !== undefined && v.col !== null) {
    const col = int(v, "col", where);
    if (col < 0) throw new FormatError(`${where}: field "col" should be a whole number from 0`);
    s.col = col;
  }
  return s;
}

function attrValue(v: unknown): AttrValue {
  if (v === null || v === undefined) return null;
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v)) return v.map(attrValue);
  // Nested maps or bytes are not in the contract; show them as text, never as markup.
  return String(v);
}

function attrs(v: unknown): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  if (!isObj(v)) return out;
  for (const [k, val] of Object.entries(v)) out[k] = attrValue(val);
  return out;
}

function num(v: unknown): number | null {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "bigint") return Number(v);
  return null;
}

/** Optional maps of numbers: malformed ones are dropped, never fatal (they only decorate). */
function cost(v: unknown): Cost | undefined {
  if (!isObj(v)) return undefined;
  const flops = num(v.flops);
  const bytes = num(v.bytes);
  const time = num(v.time_ns);
  if (flops === null || bytes === null || time === null) return undefined;
  return { flops, bytes, time_ns: time };
}

const STAT_KEYS = ["std", "absmax", "zeros", "nan", "inf"] as const;

function tensorStats(v: unknown): TensorStats | undefined {
  if (!isObj(v)) return undefined;
  const numel = num(v.numel);
  if (numel === null) return undefined;
  const out: TensorStats = { min: num(v.min), max: num(v.max), mean: num(v.mean), numel };
  for (const k of STAT_KEYS) {
    if (k in v) {
      const x = num(v[k]);
      if (k === "std" || k === "absmax") out[k] = x;
      else if (x !== null) out[k] = x;
    }
  }
  return out;
}

function histogram(v: unknown): Histogram | undefined {
  if (!isObj(v) || !Array.isArray(v.counts)) return undefined;
  const lo = num(v.lo);
  const hi = num(v.hi);
  const counts = v.counts.map((c) => num(c) ?? 0);
  if (lo === null || hi === null || counts.length === 0) return undefined;
  return { lo, hi, counts };
}

function node(v: unknown, i: number): GraphNode {
  const where = `node ${i}`;
  if (!isObj(v)) throw new FormatError(`${where} is not a map`);
  const kind = str(v, "kind", where);
  if (!KINDS.has(kind)) throw new FormatError(`${where}: unknown kind "${kind}"`);
  const id = int(v, "id", where, i);
  if (id !== i) throw new FormatError(`${where}: id is ${id}, expected ${i}`);
  const parentRaw = v.parent;
  let parent: number | null = null;
  if (parentRaw !== null && parentRaw !== undefined) {
    parent = int(v, "parent", where);
    if (!(parent >= 0 && parent < i)) {
      throw new FormatError(`${where}: parent ${parent} must be an earlier node`);
    }
  }
  const n: GraphNode = {
    id,
    kind: kind as NodeKind,
    name: str(v, "name", where),
    parent,
    target: str(v, "target", where, ""),
    path: str(v, "path", where, ""),
    call: int(v, "call", where, 0),
    site: site(v.site, where),
    defn: site(v.defn, where),
    params: number(v, "params", where, 0),
    attrs: attrs(v.attrs),
  };
  const c = cost(v.cost);
  if (c) n.cost = c;
  const inside = site(v.inside, where);
  if (inside) n.inside = inside;
  return n;
}

function edge(v: unknown, i: number, n: number): GraphEdge {
  const where = `edge ${i}`;
  if (!isObj(v)) throw new FormatError(`${where} is not a map`);
  const src = int(v, "src", where);
  const dst = int(v, "dst", where);
  if (src < 0 || src >= n || dst < 0 || dst >= n) {
    throw new FormatError(`${where}: src/dst out of range`);
  }
  const shape = sizes(v.shape);
  if (shape === undefined) throw new FormatError(`${where} has a bad shape`);
  const e: GraphEdge = { src, dst, shape, dtype: str(v, "dtype", where, "") };
  const stats = tensorStats(v.stats);
  if (stats) e.stats = stats;
  const hist = histogram(v.hist);
  if (hist) e.hist = hist;
  // A DTensor's layout: a decoration, dropped rather than refused when malformed.
  if (Array.isArray(v.global_shape) && typeof v.placements === "string") {
    const global = sizes(v.global_shape);
    if (global) {
      e.global_shape = global;
      e.placements = v.placements;
      if (typeof v.mesh === "string") e.mesh = v.mesh;
    }
  }
  // Which output of its producer: a decoration too (anything but a whole number ≥ 0: none).
  if (typeof v.output === "number" && Number.isInteger(v.output) && v.output >= 0) e.output = v.output;
  return e;
}

/** A shape: a list of sizes (whole numbers, none negative) or nil; undefined: neither. */
function sizes(v: unknown): number[] | null | undefined {
  if (v === null || v === undefined) return null;
  if (!Array.isArray(v)) return undefined;
  const out = v.map((d) => (typeof d === "bigint" ? Number(d) : d));
  return out.every((d) => typeof d === "number" && Number.isInteger(d) && d >= 0) ? (out as number[]) : undefined;
}

/** `rank` and `world_size` of a trace in one rank of a torch.distributed program. */
function rankOf(m: Obj): { rank?: number; world_size?: number } {
  const rank = m.rank;
  const size = m.world_size;
  if (typeof rank !== "number" || !Number.isInteger(rank)) return {};
  return typeof size === "number" && Number.isInteger(size) ? { rank, world_size: size } : { rank };
}

/** A node's parent is the module call it ran inside: anything else would hide it. */
function checkParents(nodes: GraphNode[]): void {
  for (const n of nodes) {
    if (n.parent === null) continue;
    const p = nodes[n.parent]!;
    if (p.kind !== "module") {
      const article = /^[aeiou]/.test(p.kind) ? "an" : "a";
      throw new FormatError(`node ${n.id}: parent ${p.id} is ${article} ${p.kind}, not a module call`);
    }
  }
}

/** Position of each node among its parent's children (siblings are in id order). */
function siblingIndex(nodes: GraphNode[]): Int32Array {
  const pos = new Int32Array(nodes.length);
  const count = new Map<number | null, number>();
  for (const n of nodes) {
    const k = count.get(n.parent) ?? 0;
    pos[n.id] = k;
    count.set(n.parent, k + 1);
  }
  return pos;
}

/**
 * A group folds consecutive sibling module calls into one box: a member that is not such
 * a call (or is in two groups) would vanish from the drawing, so the file is refused.
 */
function group(v: unknown, i: number, nodes: GraphNode[], pos: Int32Array, groupOf: Int32Array): Group {
  const where = `group ${i}`;
  if (!isObj(v)) throw new FormatError(`${where} is not a map`);
  if (!Array.isArray(v.members)) throw new FormatError(`${where}: members should be a list`);
  const members = v.members.map((m) => Number(m));
  if (members.length < 2) throw new FormatError(`${where}: a group needs at least 2 members, it has ${members.length}`);
  const parent = v.parent === null || v.parent === undefined ? null : int(v, "parent", where);
  members.forEach((m, j) => {
    if (!(Number.isInteger(m) && m >= 0 && m < nodes.length)) throw new FormatError(`${where}: member ${m} out of range`);
    const node = nodes[m]!;
    if (node.kind !== "module") throw new FormatError(`${where}: member ${m} is not a module call (it is ${node.kind})`);
    if (node.parent !== parent) {
      throw new FormatError(`${where}: member ${m} has parent ${node.parent}, not the group's parent ${parent}`);
    }
    if (groupOf[m] !== -1) throw new FormatError(`${where}: node ${m} is already a member of group ${groupOf[m]}`);
    groupOf[m] = i;
    const prev = members[j - 1];
    if (prev !== undefined && pos[m] !== pos[prev]! + 1) {
      throw new FormatError(`${where}: members ${prev} and ${m} are not consecutive siblings`);
    }
  });
  const out: Group = { parent, members, name: str(v, "name", where, "") };
  const c = cost(v.cost);
  if (c) out.cost = c;
  return out;
}

function graphError(v: unknown, n: number): GraphError | null {
  if (v === null || v === undefined) return null;
  if (!isObj(v)) throw new FormatError("error should be a map or nil");
  for (const key of ["type", "message", "node", "traceback"]) if (!(key in v)) throw new FormatError(`error: no field "${key}"`);
  if (!Array.isArray(v.traceback)) throw new FormatError('error: field "traceback" should be a list of sites');
  const tb = v.traceback;
  // nil: no node of this graph raised (a comparison's other side did); else the banner's target
  const nodeId = v.node === null ? null : int(v, "node", "error");
  if (nodeId !== null && !(nodeId >= 0 && nodeId < n)) throw new FormatError(`error names missing node ${nodeId}`);
  return {
    type: str(v, "type", "error", "Error"),
    message: str(v, "message", "error", ""),
    node: nodeId,
    traceback: tb.map((f, i) => site(f, `traceback ${i}`)).filter((s): s is Site => s !== null),
  };
}

/** Validate an already-decoded map (msgpack or JSON) into a Graph. */
export function fromObject(raw: unknown): Graph {
  const steps = fromObjectSteps(raw);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** How many nodes or edges `fromObjectSteps` validates between two pauses. */
export const STEP_ITEMS = 200;

/**
 * `fromObject` as steps: it pauses (yields) after every STEP_ITEMS nodes or edges, so a
 * caller can spread a big graph over several tasks (decodeSlices.ts). The one validation
 * both paths run: driven to the end without pausing, it is `fromObject`.
 */
export function* fromObjectSteps(raw: unknown): Generator<void, Graph, void> {
  if (!isObj(raw)) throw new FormatError("not a torchscope graph: the file is not a map");
  if (raw.format !== FORMAT) {
    throw new FormatError(`not a torchscope graph: format is ${JSON.stringify(raw.format ?? null)}`);
  }
  const version = number(raw, "version", "graph");
  if (!Number.isInteger(version) || version < 1) {
    throw new FormatError(`graph format version ${version} is not a valid version (versions start at 1)`);
  }
  if (version > VERSION) {
    throw new FormatError(`graph format version ${version} is newer than this viewer understands (version ${VERSION}); update torchscope`);
  }
  if (!Array.isArray(raw.nodes)) throw new FormatError("graph: nodes should be a list");
  if (!Array.isArray(raw.edges)) throw new FormatError("graph: edges should be a list");
  const rawNodes: unknown[] = raw.nodes;
  const rawEdges: unknown[] = raw.edges;
  const nodes: GraphNode[] = [];
  for (let i = 0; i < rawNodes.length; i++) {
    nodes.push(node(rawNodes[i], i));
    if ((i + 1) % STEP_ITEMS === 0) yield;
  }
  const edges: GraphEdge[] = [];
  for (let i = 0; i < rawEdges.length; i++) {
    edges.push(edge(rawEdges[i], i, nodes.length));
    if ((i + 1) % STEP_ITEMS === 0) yield;
  }
  checkParents(nodes);
  const pos = siblingIndex(nodes);
  const groupOf = new Int32Array(nodes.length).fill(-1);
  const groups = Array.isArray(raw.groups) ? raw.groups.map((g, i) => group(g, i, nodes, pos, groupOf)) : [];
  const m = isObj(raw.model) ? raw.model : {};
  const s = isObj(raw.stats) ? raw.stats : {};
  const v = isObj(raw.values) ? raw.values : {};
  const origin = num(raw.nan_origin);
  const compare = compareField(raw.compare, nodes.length, edges.length);
  return {
    format: FORMAT,
    version,
    model: {
      name: str(m, "name", "model", ""),
      qualname: str(m, "qualname", "model", ""),
      params: number(m, "params", "model", 0),
      device: str(m, "device", "model", ""),
      dtype: str(m, "dtype", "model", ""),
      ...rankOf(m),
    },
    nodes,
    edges,
    groups,
    error: graphError(raw.error, nodes.length),
    stats: {
      trace_ms: number(s, "trace_ms", "stats", 0),
      ops: number(s, "ops", "stats", 0),
      modules: number(s, "modules", "stats", 0),
    },
    values: { stats: v.stats === true, costs: v.costs === true },
    nan_origin: origin !== null && Number.isInteger(origin) && origin >= 0 && origin < nodes.length ? origin : null,
    warnings: Array.isArray(raw.warnings) ? raw.warnings.map((w) => String(w)) : [],
    ...(compare ? { compare } : {}),
  };
}

function compareField(v: unknown, nodes: number, edges: number): CompareData | undefined {
  if (v === undefined || v === null) return undefined;
  try {
    return decodeCompare(v, nodes, edges);
  } catch (e) {
    if (e instanceof CompareFormatError) throw new FormatError(e.message);
    throw e;
  }
}

/** Decode a graph file's bytes — msgpack, or the same object as JSON (`trace --format
 * json`) — into a validated Graph; throws FormatError with a readable message. */
export function decodeGraph(bytes: Uint8Array | ArrayBuffer): Graph {
  const data = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (data.length === 0) throw new FormatError("the graph file is empty");
  const json = looksLikeJson(data);
  let raw: unknown;
  try {
    raw = json ? JSON.parse(new TextDecoder().decode(data)) : msgpackDecode(data, { useBigInt64: false });
  } catch (e) {
    throw new FormatError(`the graph file is not valid ${json ? "JSON" : "msgpack"} (${(e as Error).message})`);
  }
  return fromObject(raw);
}

/** Text that opens an object or array (after white space): JSON. A msgpack graph starts with
 * a map's header byte (0x80–0x8f, 0xde, 0xdf), never `{`, `[` or white space. */
function looksLikeJson(data: Uint8Array): boolean {
  for (const byte of data.subarray(0, 64)) {
    if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
    return byte === 0x7b || byte === 0x5b; // { [
  }
  return false;
}
