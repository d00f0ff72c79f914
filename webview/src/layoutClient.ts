// Main-thread side of layout: a cache keyed by expansion state, one request in flight,
// and cancellation of a stale request by terminating its worker (Graphviz can't be
// interrupted from inside). Every new worker gets the graph first and answers "ready" once
// Graphviz is up; a request waits here until then, so one that a newer request supersedes
// meanwhile (a new panel's first view, then the paused call's marks) never reaches the
// worker, and the starting worker, with the Graphviz it is compiling, is kept.
import type { View } from "./compute";
import type { WorkerLike } from "./deferredWorker";
import type { ExpansionLists, Fonts, ViewResult, WorkerReply, WorkerRequest } from "./protocol";
import { TooManyToDraw } from "./visible";

export class Cancelled extends Error {
  override name = "Cancelled";
}

interface Job {
  id: number;
  key: string;
  resolve: (r: ViewResult) => void;
  reject: (e: Error) => void;
  /** Set when the page computed the view itself and only asked for Graphviz. */
  view?: View;
  msg: WorkerRequest;
}

/** A superseded first view (DOT the page made) at most this long is left to finish: laying
 * out a few dozen boxes takes tens of ms, a new worker's Graphviz start a few hundred. */
export const SMALL_DOT = 20_000;

export class LayoutClient {
  private worker: WorkerLike | null = null;
  /** The worker said "ready": Graphviz is up. */
  private ready = false;
  /** The id of the request the worker is computing (a superseded one left to finish, too):
   * the current request went to the worker when it is this one. */
  private busy: number | null = null;
  private current: Job | null = null;
  private nextId = 1;
  private readonly cache = new Map<string, ViewResult>();

  constructor(
    private readonly makeWorker: () => WorkerLike,
    private readonly bytes: Uint8Array,
    private readonly fonts: Fonts,
    private readonly cacheSize = 24,
  ) {}

  /** Start the worker (WASM compile, graph decode) before the first request. */
  warm(): void {
    this.ensureWorker();
  }

  cached(key: string): ViewResult | undefined {
    return this.cache.get(key);
  }

  /** `view`: the page already computed this state's visible graph and DOT (the first view:
   * the worker then needn't decode the graph before it can lay it out). */
  layout(key: string, state: ExpansionLists, view?: View): Promise<ViewResult> {
    const hit = this.cache.get(key);
    this.cancelCurrent();
    if (hit) {
      // Refresh LRU order.
      this.cache.delete(key);
      this.cache.set(key, hit);
      return Promise.resolve(hit);
    }
    return new Promise<ViewResult>((resolve, reject) => {
      const id = this.nextId++;
      const msg: WorkerRequest = view ? { type: "dot", id, dot: view.dot } : { type: "layout", id, ...state };
      this.current = { id, key, resolve, reject, view, msg };
      this.ensureWorker();
      this.sendWaiting();
    });
  }

  dispose(): void {
    this.cancelCurrent();
    this.dropWorker();
  }

  /** The waiting request goes to the worker once Graphviz is up and nothing else runs there. */
  private sendWaiting(): void {
    const job = this.current;
    if (!job || !this.worker || !this.ready || this.busy !== null) return;
    this.busy = job.id;
    this.worker.postMessage(job.msg);
  }

  private cancelCurrent(): void {
    const job = this.current;
    if (!job) return;
    this.current = null;
    // The worker is busy with a layout nobody wants: kill it, a fresh one starts on demand —
    // unless it is a small first view, done sooner than a new worker would start. (A request
    // still waiting for the worker just goes: the worker is kept.)
    const sent = this.busy === job.id;
    if (sent && !(job.msg.type === "dot" && job.msg.dot.length <= SMALL_DOT)) this.dropWorker();
    job.reject(new Cancelled("superseded by a newer layout"));
  }

  /** The worker broke: the current request fails with `message`, the next gets a new worker. */
  private fail(message: string): void {
    const job = this.current;
    this.current = null;
    this.dropWorker();
    job?.reject(new Error(message));
  }

  private dropWorker(): void {
    this.worker?.terminate();
    this.worker = null;
    this.ready = false;
    this.busy = null;
  }

  private ensureWorker(): WorkerLike {
    if (this.worker) return this.worker;
    const w = this.makeWorker();
    w.onmessage = (ev: MessageEvent<WorkerReply>) => this.onReply(ev.data);
    w.onerror = (ev) => this.fail(`layout worker failed: ${ev.message}`);
    // A copy: the page keeps its bytes for the next worker. The worker answers "ready".
    w.postMessage({ type: "init", bytes: this.bytes.slice(), fonts: this.fonts } satisfies WorkerRequest);
    this.worker = w;
    return w;
  }

  private onReply(msg: WorkerReply): void {
    if (msg.type === "ready") {
      performance.mark("torchscope:worker-ready");
      this.ready = true;
      this.sendWaiting();
      return;
    }
    if (msg.type === "error" && msg.id === -1) {
      // Graphviz did not start in this worker: what waits for it fails; the next gets a new one.
      this.fail(msg.message);
      return;
    }
    const finished = msg.id === this.busy;
    if (finished) this.busy = null;
    const job = this.current;
    if (!job || job.id !== msg.id) {
      // A superseded request that was left to finish: its answer is dropped (after an error
      // Graphviz may be broken: the waiting request gets a new worker). Other ids: stale.
      if (finished && msg.type === "error") {
        this.dropWorker();
        if (this.current) this.ensureWorker();
      }
      this.sendWaiting();
      return;
    }
    if (msg.type === "error") {
      // Graphviz's WASM may be left broken by a failure (out of bounds, out of memory):
      // the next layout gets a fresh worker.
      this.fail(msg.message);
      return;
    }
    this.current = null;
    if (msg.type === "too-many") {
      job.reject(new TooManyToDraw(msg.limit, msg.what));
      return;
    }
    const result: ViewResult = msg.type === "dot" ? { vg: job.view!.vg, labels: [...job.view!.labels], layout: msg.layout } : msg.result;
    this.cache.set(job.key, result);
    while (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value as string);
    job.resolve(result);
  }
}
