import { test } from "node:test";
import assert from "node:assert/strict";
import { Cancelled, LayoutClient, SMALL_DOT } from "../../../webview/src/layoutClient";
import { TooManyToDraw } from "../../../webview/src/visible";
import type { View } from "../../../webview/src/compute";
import type { ViewResult } from "../../../webview/src/protocol";

/** A stand-in worker that answers only when told to. */
class FakeWorker {
  static made: FakeWorker[] = [];
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onerror: ((ev: { message: string }) => void) | null = null;
  sent: { type: string; id: number }[] = [];
  terminated = false;
  constructor() {
    FakeWorker.made.push(this);
  }
  postMessage(m: { type: string; id: number }): void {
    if (m.type === "init") this.inits++;
    else this.sent.push(m);
  }
  inits = 0;
  /** Graphviz started: the worker's reply to the graph (its "init"). */
  ready(): void {
    this.onmessage?.({ data: { type: "ready" } });
  }
  terminate(): void {
    this.terminated = true;
  }
  answer(i = this.sent.length - 1): void {
    const result: ViewResult = {
      vg: { nodes: [], clusters: [], edges: [], rep: [] },
      labels: [],
      layout: { width: 1, height: 1, nodes: [], clusters: [], edges: [] },
    };
    const m = this.sent[i]!;
    if (m.type === "dot") this.onmessage?.({ data: { type: "dot", id: m.id, layout: result.layout, ms: 1 } });
    else this.onmessage?.({ data: { type: "layout", id: m.id, result, ms: 1 } });
  }
}

const lists = (modules: number[]) => ({ modules, groups: [], segments: [] });
/** A first view the page computed itself: only its DOT goes to the worker. */
const firstView = (dot: string) => ({ vg: { nodes: [], clusters: [], edges: [], rep: [] }, labels: new Set<string>(), dot }) as unknown as View;

const client = () => {
  FakeWorker.made = [];
  return new LayoutClient(() => new FakeWorker() as unknown as Worker, new Uint8Array([1, 2]), { sans: "s", mono: "m" });
};

test("lays out once per expansion key and serves repeats from the cache", async () => {
  const c = client();
  const p = c.layout("k1", lists([1]));
  FakeWorker.made[0]!.ready();
  FakeWorker.made[0]!.answer();
  const l1 = await p;
  assert.equal(await c.layout("k1", lists([1])), l1);
  assert.equal(FakeWorker.made[0]!.sent.length, 1);
  assert.equal(FakeWorker.made[0]!.inits, 1, "the worker got the graph first");
});

test("a new request cancels the stale one by replacing its worker", async () => {
  const c = client();
  const stale = c.layout("a", lists([1]));
  FakeWorker.made[0]!.ready(); // the worker is laying "a" out now
  assert.equal(FakeWorker.made[0]!.sent.length, 1);
  const fresh = c.layout("b", lists([2]));
  await assert.rejects(stale, Cancelled);
  assert.ok(FakeWorker.made[0]!.terminated);
  assert.equal(FakeWorker.made.length, 2);
  assert.equal(FakeWorker.made[1]!.inits, 1, "the replacement worker gets the graph too");
  FakeWorker.made[1]!.ready();
  FakeWorker.made[1]!.answer();
  assert.ok(await fresh);
  assert.equal(c.cached("a"), undefined);
  assert.ok(c.cached("b"));
});

test("a request made while the worker is still starting Graphviz replaces the waiting one, and the worker is kept", async () => {
  const c = client();
  const first = c.layout("a", lists([1]));
  const second = c.layout("b", lists([2])); // (the paused call's marks: a second view at once)
  await assert.rejects(first, Cancelled);
  const w = FakeWorker.made[0]!;
  assert.equal(w.terminated, false, "a starting worker is not thrown away with its Graphviz");
  assert.equal(FakeWorker.made.length, 1);
  assert.equal(w.sent.length, 0, "nothing sent before Graphviz is up");
  w.ready();
  assert.deepEqual(
    w.sent.map((m) => (m as unknown as { modules: number[] }).modules),
    [[2]],
    "only the newest request, once ready",
  );
  w.answer();
  assert.ok(await second);
  assert.ok(c.cached("b"));
});

test("a small first view superseded while it is laid out finishes; the newer request follows on the same worker", async () => {
  const c = client();
  const first = c.layout("first", lists([]), firstView("digraph { a -> b }"));
  const w = FakeWorker.made[0]!;
  w.ready();
  assert.equal(w.sent.length, 1, "the first view is being laid out");
  const marks = c.layout("paused", lists([1]));
  await assert.rejects(first, Cancelled);
  assert.equal(w.terminated, false, "not killed for a few boxes: a new worker starts slower");
  assert.equal(w.sent.length, 1, "the newer request waits for the worker");
  w.answer(0); // the superseded view's answer: dropped, and the waiting request goes
  assert.equal(c.cached("first"), undefined);
  assert.equal(w.sent.length, 2);
  w.answer(1);
  assert.ok(await marks);
  assert.equal(FakeWorker.made.length, 1);
});

test("a superseded first view that fails on its worker: the waiting request gets a new worker", async () => {
  const c = client();
  void c.layout("first", lists([]), firstView("digraph { a -> b }")).catch(() => {});
  const w = FakeWorker.made[0]!;
  w.ready();
  const next = c.layout("next", lists([1]));
  w.onmessage?.({ data: { type: "error", id: w.sent[0]!.id, message: "graphviz: out of memory" } });
  assert.ok(w.terminated, "Graphviz may be broken after a failure");
  const fresh = FakeWorker.made[1]!;
  fresh.ready();
  assert.equal(fresh.sent.length, 1);
  fresh.answer();
  assert.ok(await next);
});

test("a large first view superseded while it is laid out is stopped with its worker", async () => {
  const c = client();
  const first = c.layout("first", lists([]), firstView(`digraph { ${"n; ".repeat(SMALL_DOT / 3)} }`));
  FakeWorker.made[0]!.ready();
  const next = c.layout("next", lists([1]));
  await assert.rejects(first, Cancelled);
  assert.ok(FakeWorker.made[0]!.terminated);
  FakeWorker.made[1]!.ready();
  FakeWorker.made[1]!.answer();
  assert.ok(await next);
});

test("a worker whose Graphviz fails to start rejects the waiting request; the next gets a new worker", async () => {
  const c = client();
  const p = c.layout("x", lists([1]));
  const w = FakeWorker.made[0]!;
  w.onmessage?.({ data: { type: "error", id: -1, message: "wasm: out of memory" } });
  await assert.rejects(p, /out of memory/);
  assert.ok(w.terminated);
  void c.layout("y", lists([1])).catch(() => {});
  assert.equal(FakeWorker.made.length, 2);
});

test("layout errors reject; a late answer for an old id is ignored", async () => {
  const c = client();
  const p = c.layout("x", lists([]));
  const w = FakeWorker.made[0]!;
  w.ready();
  w.onmessage?.({ data: { type: "error", id: 999, message: "old" } });
  w.onmessage?.({ data: { type: "error", id: w.sent[0]!.id, message: "syntax error" } });
  await assert.rejects(p, /syntax error/);
  // Graphviz may be broken after a failure: the next layout gets a fresh worker.
  assert.ok(w.terminated);
  void c.layout("y", lists([1])).catch(() => {});
  assert.equal(FakeWorker.made.length, 2);
});

test("a view too big to draw is refused with a readable reason", async () => {
  const c = client();
  const p = c.layout("big", lists([1]));
  const w = FakeWorker.made[0]!;
  w.ready();
  w.onmessage?.({ data: { type: "too-many", id: w.sent[0]!.id, limit: 6000, what: "boxes" } });
  await assert.rejects(
    p,
    (e: unknown) => e instanceof TooManyToDraw && /more than 6,000 boxes: too many nodes to draw at once; expand fewer/.test(e.message),
  );
  assert.equal(c.cached("big"), undefined);
});
