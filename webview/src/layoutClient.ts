// Main-thread side of layout: a cache keyed by expansion state, one request in flight,
// and cancellation of a stale request by terminating its worker (Graphviz can't be
// interrupted from inside). Every new worker gets the graph first.
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
}

export class LayoutClient {
  private worker: WorkerLike | null = null;
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
      const job: Job = { id: this.nextId++, key, resolve, reject, view };
      this.current = job;
      const msg: WorkerRequest = view ? { type: "dot", id: job.id, dot: view.dot } : { type: "layout", id: job.id, ...state };
      this.ensureWorker().postMessage(msg);
    });
  }

  dispose(): void {
    this.cancelCurrent();
    this.worker?.terminate();
    this.worker = null;
  }

  private cancelCurrent(): void {
    const job = this.current;
    if (!job) return;
    this.current = null;
    // The worker is busy with a layout nobody wants: kill it, a fresh one starts on demand.
    this.worker?.terminate();
    this.worker = null;
    job.reject(new Cancelled("superseded by a newer layout"));
  }

  private ensureWorker(): WorkerLike {
    if (this.worker) return this.worker;
    const w = this.makeWorker();
    w.onmessage = (ev: MessageEvent<WorkerReply>) => this.onReply(ev.data);
    w.onerror = (ev) => {
      const job = this.current;
      this.current = null;
      this.worker?.terminate();
      this.worker = null;
      job?.reject(new Error(`layout worker failed: ${ev.message}`));
    };
    // A copy: the page keeps its bytes for the next worker.
    w.postMessage({ type: "init", bytes: this.bytes.slice(), fonts: this.fonts } satisfies WorkerRequest);
    this.worker = w;
    return w;
  }

  private onReply(msg: WorkerReply): void {
    if (msg.type === "ready") {
      performance.mark("torchscope:worker-ready");
      return;
    }
    const job = this.current;
    if (!job || job.id !== msg.id) return;
    this.current = null;
    if (msg.type === "error") {
      // Graphviz's WASM may be left broken by a failure (out of bounds, out of memory):
      // the next layout gets a fresh worker.
      this.worker?.terminate();
      this.worker = null;
      job.reject(new Error(msg.message));
      return;
    }
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
