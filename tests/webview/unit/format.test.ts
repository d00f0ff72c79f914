import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { encode } from "@msgpack/msgpack";
import { decodeGraph, FORMAT, FormatError, VERSION, type Graph } from "../../../webview/src/format";
import { mlpWithBlocks } from "./builder";

const GOLDEN = new URL("../../golden/mlp.graph.msgpack", import.meta.url);

test("constants match the contract", () => {
  assert.equal(FORMAT, "torchscope.graph");
  assert.equal(VERSION, 1);
});

test("round-trips a built graph through msgpack", () => {
  const { g } = mlpWithBlocks();
  const back = decodeGraph(encode(g));
  assert.deepEqual(back.nodes, g.nodes);
  assert.deepEqual(back.edges, g.edges);
  assert.deepEqual(back.groups, g.groups);
});

test("reads the JSON form of a graph (`trace --format json`) as its msgpack form", () => {
  const { g } = mlpWithBlocks();
  const json = new TextEncoder().encode(`\n  ${JSON.stringify(g, null, 1)}\n`);
  assert.deepEqual(decodeGraph(json), decodeGraph(encode(g)));
  assert.throws(() => decodeGraph(new TextEncoder().encode('{"format": "torchscope.graph", ')), /not valid JSON/);
  assert.throws(() => decodeGraph(new TextEncoder().encode("[1, 2]")), /not a map/);
});

test("ignores unknown fields and tolerates missing optional ones", () => {
  const { g } = mlpWithBlocks();
  const raw = { ...g, future_field: [1, 2], groups: undefined, stats: undefined };
  const back = decodeGraph(encode(raw, { ignoreUndefined: true }));
  assert.equal(back.groups.length, 0);
  assert.equal(back.nodes.length, g.nodes.length);
});

test("rejects another format, a newer version, garbage and empty input", () => {
  const { g } = mlpWithBlocks();
  assert.throws(() => decodeGraph(encode({ ...g, format: "other" })), /not a torchscope graph/);
  assert.throws(() => decodeGraph(encode({ ...g, version: 2 })), /version 2 is newer/);
  assert.throws(() => decodeGraph(new Uint8Array([0xc1, 0x00])), FormatError);
  assert.throws(() => decodeGraph(new Uint8Array()), /empty/);
  assert.throws(() => decodeGraph(encode([1, 2, 3])), /not a map/);
});

test("rejects structurally broken graphs", () => {
  const { g } = mlpWithBlocks();
  const badParent = { ...g, nodes: g.nodes.map((n) => (n.id === 2 ? { ...n, parent: 5 } : n)) };
  assert.throws(() => decodeGraph(encode(badParent)), /parent 5 must be an earlier node/);
  const badEdge = { ...g, edges: [{ src: 0, dst: 99, shape: [1], dtype: "" }] };
  assert.throws(() => decodeGraph(encode(badEdge)), /out of range/);
  const badKind = { ...g, nodes: g.nodes.map((n) => (n.id === 0 ? { ...n, kind: "weird" } : n)) };
  assert.throws(() => decodeGraph(encode(badKind)), /unknown kind/);
});

test("decodes the golden file shared with the Python tests", () => {
  assert.ok(existsSync(GOLDEN), "tests/golden/mlp.graph.msgpack exists");
  const g = decodeGraph(readFileSync(GOLDEN));
  assert.equal(g.format, FORMAT);
  assert.equal(g.version, VERSION);
  assert.ok(g.nodes.length > 0);
  const root = g.nodes.find((n) => n.kind === "module" && n.parent === null);
  assert.ok(root, "has a root module call");
  assert.equal(root.path, "");
  assert.ok(g.nodes.some((n) => n.kind === "input"));
  assert.ok(g.nodes.some((n) => n.kind === "output"));
  // Edges join leaves only.
  const hasKids = new Set(g.nodes.map((n) => n.parent).filter((p) => p !== null));
  for (const e of g.edges) {
    assert.ok(!hasKids.has(e.src) && !hasKids.has(e.dst), "edge ends are leaves");
  }
  // Values and costs: the input's statistics, the model's FLOPs (tests/python/test_golden.py).
  assert.deepEqual(g.values, { stats: true, costs: true });
  const x = g.nodes.find((n) => n.kind === "input")!;
  assert.equal(g.edges.find((e) => e.src === x.id)!.stats!.numel, 12);
  assert.equal(root.cost!.flops, 2 * 3 * (4 * 8 + 2 * 8 * 8 + 8 * 2));
});

// The same broken files the Python reader must reject (tests/python/test_golden.py).
const MALFORMED = new URL("../../golden/malformed.json", import.meta.url);

type Path = (string | number)[];
interface Case {
  name: string;
  set?: [Path, unknown];
  append?: [Path, unknown];
}

function mutate(raw: Record<string, unknown>, c: Case): unknown {
  const copy = structuredClone(raw);
  const [path, value] = (c.set ?? c.append)!;
  let obj: any = copy;
  for (const k of path.slice(0, -1)) obj = obj[k];
  const last = path[path.length - 1]!;
  if (c.set) obj[last] = value;
  else obj[last].push(value);
  return copy;
}

test("rejects every shared malformed case with one FormatError", async () => {
  const { decode } = await import("@msgpack/msgpack");
  const golden = decode(readFileSync(GOLDEN)) as Record<string, unknown>;
  const cases = (JSON.parse(readFileSync(MALFORMED, "utf8")) as { cases: Case[] }).cases;
  assert.ok(cases.length >= 10);
  for (const c of cases) {
    assert.throws(() => decodeGraph(encode(mutate(golden, c))), FormatError, c.name);
  }
});

test("says what is wrong with a malformed group or parent", () => {
  const { g } = mlpWithBlocks();
  const msg = (raw: unknown): string => {
    try {
      decodeGraph(encode(raw));
    } catch (e) {
      assert.ok(e instanceof FormatError);
      return e.message;
    }
    return "";
  };
  assert.match(msg({ ...g, version: 0 }), /version 0/);
  const opParent = { ...g, nodes: g.nodes.map((n) => (n.id === 4 ? { ...n, parent: 3 } : n)) };
  assert.match(msg(opParent), /node 4: parent 3 is an? op, not a module call/);
  assert.match(msg({ ...g, groups: [{ parent: 1, members: [], name: "" }] }), /group 0: .*at least 2 members/);
  const twice = { ...g, groups: [...g.groups, { ...g.groups[0]! }] };
  assert.match(msg(twice), /group 1: node \d+ is already a member of group 0/);
});

/** The FormatError message `raw` is refused with ("" when it is accepted). */
function refusal(raw: unknown): string {
  try {
    decodeGraph(encode(raw));
  } catch (e) {
    assert.ok(e instanceof FormatError, String(e));
    return e.message;
  }
  return "";
}

test("refuses a fractional number where a node id goes, as it refuses other bad fields", () => {
  // QA: src 1.5 crashed the layout, parent 1.5 the start-up, error.node 4.5 the banner's click
  const { g } = mlpWithBlocks();
  const edges = (e: Partial<Graph["edges"][number]>) => ({ ...g, edges: g.edges.map((x, i) => (i === 0 ? { ...x, ...e } : x)) });
  assert.equal(refusal(edges({ src: 1.5 })), 'edge 0: field "src" should be a whole number');
  assert.equal(refusal(edges({ dst: 2.9999 })), 'edge 0: field "dst" should be a whole number');
  const parent = { ...g, nodes: g.nodes.map((n) => (n.id === 3 ? { ...n, parent: 1.5 } : n)) };
  assert.equal(refusal(parent), 'node 3: field "parent" should be a whole number');
  const call = { ...g, nodes: g.nodes.map((n) => (n.id === 3 ? { ...n, call: 0.5 } : n)) };
  assert.equal(refusal(call), 'node 3: field "call" should be a whole number');
  const error = (node: unknown) => ({ ...g, error: { type: "X", message: "boom", node, traceback: [] } });
  assert.equal(refusal(error(4.5)), 'error: field "node" should be a whole number');
  assert.equal(refusal(error("4")), 'error: field "node" should be a whole number');
  // a fractional time, parameter count or source line is no id: still read
  const { g: fine } = mlpWithBlocks();
  assert.equal(refusal({ ...fine, stats: { trace_ms: 1.5, ops: 1, modules: 2 }, error: error(4).error }), "");
});

test("refuses a node without a name and an error naming a node that is not there", () => {
  // QA: a node without a name was a blank box; error.node 99 a banner whose click did nothing
  const { g } = mlpWithBlocks();
  const { name: _, ...nameless } = g.nodes[5]!;
  assert.equal(refusal({ ...g, nodes: g.nodes.map((n) => (n.id === 5 ? nameless : n)) }), 'node 5: no field "name"');
  const nullName = { ...g, nodes: g.nodes.map((n) => (n.id === 5 ? { ...n, name: null } : n)) };
  assert.equal(refusal(nullName), 'node 5: field "name" should be a string');
  const error = (node: unknown) => ({ ...g, error: { type: "X", message: "boom", node, traceback: [] } });
  assert.equal(refusal(error(99)), "error names missing node 99");
  assert.equal(refusal(error(-1)), "error names missing node -1");
  // an error at no node (a comparison's other side raised) is still read
  assert.equal(refusal(error(null)), "");
});
