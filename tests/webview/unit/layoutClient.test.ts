import { test } from "node:test";
import assert from "node:assert/strict";
import { Cancelled, LayoutClient } from "../../../webview/src/layoutClient";
import type { Layout } from "../../../webview/src/layout";

/** A stand-in worker that answers only when told to. */
class FakeWorker {
  static made: FakeWorker[] = [];
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onerror: ((ev: { message: string }) => void) | null = null;
  sent: { id: number; dot: string }[] = [];
  terminated = false;
  constructor() {
    FakeWorker.made.push(this);
  }
  postMessage(m: { id: number; dot: string }): void {
    this.sent.push(m);
  }
  terminate(): void {
    this.terminated = true;
  }
  answer(i = this.sent.length - 1): void {
    const layout: Layout = { width: 1, height: 1, nodes: [], clusters: [], edges: [] };
    this.onmessage?.({ data: { type: "layout", id: this.sent[i]!.id, layout, ms: 1 } });
  }
}

const client = () => {
  FakeWorker.made = [];
  return new LayoutClient(() => new FakeWorker() as unknown as Worker);
};

test("lays out once per expansion key and serves repeats from the cache", async () => {
  const c = client();
  const p = c.layout("k1", "digraph{}");
  FakeWorker.made[0]!.answer();
  const l1 = await p;
  assert.equal(await c.layout("k1", "digraph{}"), l1);
  assert.equal(FakeWorker.made[0]!.sent.length, 1);
});

test("a new request cancels the stale one by replacing its worker", async () => {
  const c = client();
  const stale = c.layout("a", "digraph{a}");
  const fresh = c.layout("b", "digraph{b}");
  await assert.rejects(stale, Cancelled);
  assert.ok(FakeWorker.made[0]!.terminated);
  assert.equal(FakeWorker.made.length, 2);
  FakeWorker.made[1]!.answer();
  assert.ok(await fresh);
  assert.equal(c.cached("a"), undefined);
  assert.ok(c.cached("b"));
});

test("layout errors reject; a late answer for an old id is ignored", async () => {
  const c = client();
  const p = c.layout("x", "bad");
  const w = FakeWorker.made[0]!;
  w.onmessage?.({ data: { type: "error", id: 999, message: "old" } });
  w.onmessage?.({ data: { type: "error", id: w.sent[0]!.id, message: "syntax error" } });
  await assert.rejects(p, /syntax error/);
});
