// The decoder that spreads a graph over several tasks (webview/src/decodeSlices.ts) gives
// exactly the Graph of `fromObject(decode(bytes))`, pauses on a big graph, and refuses a
// broken file with `decodeGraph`'s own words.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { decode, encode } from "@msgpack/msgpack";
import { decodeGraphInSlices, decodeInSlices } from "../../../webview/src/decodeSlices";
import { decodeGraph, fromObject, FormatError, STEP_ITEMS } from "../../../webview/src/format";

const GOLDEN = new URL("../../golden/mlp.graph.msgpack", import.meta.url);
const MALFORMED = new URL("../../golden/malformed.json", import.meta.url);

/** Pauses counted, without waiting for a real task. */
function counting(): { pause: () => Promise<void>; count: () => number } {
  let n = 0;
  return {
    pause: async () => {
      n++;
    },
    count: () => n,
  };
}

/** A wire map shaped like bench/viewer's synthetic model: stages × blocks × 4 ops, every
 * optional field the format has (statistics, histograms, costs, library frames, groups,
 * an error, warnings, 64-bit and float values). */
function synthetic(stages: number, blocks: number): Record<string, unknown> {
  const nodes: Record<string, unknown>[] = [];
  const edges: Record<string, unknown>[] = [];
  const groups: Record<string, unknown>[] = [];
  const add = (kind: string, name: string, parent: number | null = null, extra: Record<string, unknown> = {}): number => {
    const id = nodes.length;
    nodes.push({ id, kind, name, parent, target: "", path: "", call: 0, site: null, defn: null, params: 0, attrs: {}, ...extra });
    return id;
  };
  const input = add("input", "x");
  const root = add("module", "Sequential", null, { target: "torch.nn.Sequential", params: 2 ** 40 + 3 });
  let prev = input;
  for (let s = 0; s < stages; s++) {
    const stage = add("module", "Stage", root, { path: `${s}`, defn: { file: "/m.py", line: 30 } });
    const seq = add("module", "Sequential", stage, { path: `${s}.blocks` });
    const members: number[] = [];
    for (let b = 0; b < blocks; b++) {
      const block = add("module", "Block", seq, {
        path: `${s}.blocks.${b}`,
        site: { file: "/m.py", line: 40, func: "forward" },
        defn: { file: "/m.py", line: 10 },
        params: 2112,
        attrs: { dim: 32, name: "blk", flag: true, shape: [1, 8, 32], none: null },
        cost: { flops: 16_896.5, bytes: 1024, time_ns: 2 ** 33 + 7 },
      });
      members.push(block);
      for (const op of ["linear", "layer_norm", "gelu", "__add__"]) {
        const id = add("op", op, block, {
          target: `torch.nn.functional.${op}`,
          site: { file: "/m.py", line: 20 + b, func: "forward" },
          inside: { file: "/torch/nn/modules/linear.py", line: 134, func: "forward" },
          attrs: { eps: 1e-5, approximate: "none" },
          cost: { flops: 4096, bytes: 1024.25, time_ns: 1500 },
        });
        edges.push({
          src: prev,
          dst: id,
          shape: [1, 8, 32],
          dtype: "float32",
          stats: { min: -3.5, max: 4.25, mean: 0.01, std: 1.0, absmax: 4.25, zeros: 0, nan: 0, inf: 0, numel: 256 },
          hist: { lo: -3.5, hi: 4.25, counts: Array.from({ length: 16 }, (_, i) => i * 3) },
        });
        prev = id;
      }
    }
    groups.push({ parent: seq, members, name: `Block ×${blocks}`, cost: { flops: 1, bytes: 2, time_ns: 3 } });
  }
  const out = add("output", "output", null);
  edges.push({ src: prev, dst: out, shape: [1, 8, 32], dtype: "float32" });
  return {
    format: "torchscope.graph",
    version: 1,
    model: { name: "Sequential", qualname: "torch.nn.Sequential", params: 2 ** 40 + 3, device: "cpu", dtype: "float32" },
    nodes,
    edges,
    groups,
    error: { type: "ValueError", message: "é ☃ 🚀 over a slice boundary", node: out, traceback: [{ file: "/m.py", line: 3, func: "f" }] },
    stats: { trace_ms: 12.5, ops: stages * blocks * 4, modules: 2 + stages * (2 + blocks) },
    values: { stats: true, costs: true },
    nan_origin: null,
    warnings: ["0.weight was written behind torch's back"],
  };
}

test("the golden file: the same Graph as fromObject(decode(bytes)), whatever the slice size", async () => {
  const bytes = readFileSync(GOLDEN);
  const want = fromObject(decode(bytes));
  for (const sliceBytes of [1, 7, 64, 4096, 1 << 20]) {
    // decodeInSlices: the paused path alone (decodeGraphInSlices falls back to one call on errors).
    const got = await decodeInSlices(bytes, { sliceBytes, budgetMs: 0, pause: counting().pause });
    assert.deepEqual(got, want, `slices of ${sliceBytes} bytes`);
  }
  // With the page's own pause (a new task) and default slices too.
  assert.deepEqual(await decodeGraphInSlices(new Uint8Array(bytes).buffer), want);
});

test("a 4,000-op graph: the same Graph, decoded in many pauses", async () => {
  const bytes = encode(synthetic(40, 25));
  assert.ok(bytes.length > 1_000_000, `${bytes.length} bytes`);
  const want = fromObject(decode(bytes));
  assert.equal(want.nodes.filter((n) => n.kind === "op").length, 4000);
  const c = counting();
  const got = await decodeInSlices(bytes, { sliceBytes: 32 * 1024, budgetMs: 0, pause: c.pause });
  assert.deepEqual(got, want);
  assert.deepEqual(got, decodeGraph(bytes));
  // Every slice of bytes and every step of the validation (STEP_ITEMS nodes or edges) may pause.
  const slices = Math.ceil(bytes.length / (32 * 1024));
  const steps = Math.floor(want.nodes.length / STEP_ITEMS) + Math.floor(want.edges.length / STEP_ITEMS);
  assert.equal(c.count(), slices + steps);
});

test("pauses only once the budget is spent", async () => {
  const bytes = encode(synthetic(4, 25));
  const c = counting();
  // A clock that never moves: the budget is never spent, so no pause at all.
  await decodeInSlices(bytes, { sliceBytes: 256, budgetMs: 25, pause: c.pause, now: () => 0 });
  assert.equal(c.count(), 0);
  // A clock that moves 10 ms per look: a pause every third look or so, not at every one.
  let t = 0;
  const d = counting();
  await decodeInSlices(bytes, { sliceBytes: 256, budgetMs: 25, pause: d.pause, now: () => (t += 10) });
  const looks = Math.ceil(bytes.length / 256) + Math.floor((4 * 25 * 5 + 4 * 2 + 3) / STEP_ITEMS);
  assert.ok(d.count() > 0 && d.count() < looks, `${d.count()} pauses for ${looks} looks`);
});

/** The message `fn` throws (it must throw). */
async function errorOf(fn: () => unknown): Promise<Error> {
  try {
    await fn();
  } catch (e) {
    return e as Error;
  }
  assert.fail("did not throw");
}

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

test("refuses what decodeGraph refuses, with the same FormatError message", async () => {
  const golden = readFileSync(GOLDEN);
  const raw = decode(golden) as Record<string, unknown>;
  const cases = (JSON.parse(readFileSync(MALFORMED, "utf8")) as { cases: Case[] }).cases;
  const broken: [string, Uint8Array][] = cases.map((c) => [c.name, encode(mutate(raw, c))]);
  broken.push(
    ["empty", new Uint8Array()],
    ["truncated", golden.subarray(0, golden.length - 5)],
    ["trailing bytes", new Uint8Array([...golden, 0x01, 0x02])],
    ["not msgpack", new Uint8Array([0xc1, 0x00, 0x00])],
    ["a list", encode([1, 2, 3])],
  );
  for (const [name, bytes] of broken) {
    const want = await errorOf(() => decodeGraph(bytes));
    const got = await errorOf(() => decodeGraphInSlices(bytes, { sliceBytes: 16, budgetMs: 0, pause: counting().pause }));
    assert.ok(got instanceof FormatError, name);
    assert.equal(got.message, want.message, name);
  }
});

test("base64 in slices: the bytes of the one-call atob, for any length and padding", async () => {
  const { base64ToBytesInSlices } = await import("../../../webview/src/base64Slices");
  const pause = counting();
  for (const n of [0, 1, 2, 3, 4, 5, 196_607, 196_608, 196_609, 2_500_001]) {
    const bytes = new Uint8Array(n).map((_, i) => (i * 7919) % 256);
    const text = Buffer.from(bytes).toString("base64");
    assert.deepEqual(await base64ToBytesInSlices(text, pause.pause), bytes, `${n} bytes`);
    // Line breaks and spaces, as a page may wrap its data (quads then straddle slices).
    const wrapped = ` ${text.replace(/(.{75})/g, "$1\n ")}\n`;
    assert.deepEqual(await base64ToBytesInSlices(wrapped, pause.pause), bytes, `${n} bytes, wrapped`);
  }
  assert.ok(pause.count() >= 3, "a 2.5 MB file takes several slices");
  await assert.rejects(base64ToBytesInSlices("not base64!", pause.pause));
});
