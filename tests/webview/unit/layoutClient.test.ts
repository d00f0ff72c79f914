import { test } from "node:test";
import assert from "node:assert/strict";
import { Cancelled, LayoutClient } from "../../../webview/src/layoutClient";
import { TooManyToDraw } from "../../../webview/src/visible";
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
    if (m.type === "layout") this.sent.push(m);
    else this.inits++;
  }
  inits = 0;
  terminate(): void {
    this.terminated = true;
  }
  answer(i = this.sent.length - 1): void {
    const result: ViewResult = {
      vg: { nodes: [], clusters: [], edges: [], rep: [] },
      labels: [],
      layout: { width: 1, height: 1, nodes: [], clusters: [], edges: [] },
    };
    this.onmessage?.({ data: { type: "layout", id: this.sent[i]!.id, result, ms: 1 } });
  }
}

const lists = (modules: number[]) => ({ modules, groups: [], segments: [] });

const client = () => {
  FakeWorker.made = [];
  return new LayoutClient(() => new FakeWorker() as unknown as Worker, new Uint8Array([1, 2]), { sans: "s", mono: "m" });
};

test("lays out once per expansion key and serves repeats from the cache", async () => {
  const c = client();
  const p = c.layout("k1", lists([1]));
  FakeWorker.made[0]!.answer();
  const l1 = await p;
  assert.equal(await c.layout("k1", lists([1])), l1);
  assert.equal(FakeWorker.made[0]!.sent.length, 1);
  assert.equal(FakeWorker.made[0]!.inits, 1, "the worker got the graph first");
});

test("a new request cancels the stale one by replacing its worker", async () => {
  const c = client();
  const stale = c.layout("a", lists([1]));
  const fresh = c.layout("b", lists([2]));
  await assert.rejects(stale, Cancelled);
  assert.ok(FakeWorker.made[0]!.terminated);
  assert.equal(FakeWorker.made.length, 2);
  assert.equal(FakeWorker.made[1]!.inits, 1, "the replacement worker gets the graph too");
  FakeWorker.made[1]!.answer();
  assert.ok(await fresh);
  assert.equal(c.cached("a"), undefined);
  assert.ok(c.cached("b"));
});

test("layout errors reject; a late answer for an old id is ignored", async () => {
  const c = client();
  const p = c.layout("x", lists([]));
  const w = FakeWorker.made[0]!;
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
  w.onmessage?.({ data: { type: "too-many", id: w.sent[0]!.id, limit: 6000, what: "boxes" } });
  await assert.rejects(
    p,
    (e: unknown) => e instanceof TooManyToDraw && /more than 6,000 boxes: too many nodes to draw at once; expand fewer/.test(e.message),
  );
  assert.equal(c.cached("big"), undefined);
});
