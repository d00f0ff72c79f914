// A layout worker whose code is still being fetched. The VS Code webview loads the small
// page bundle and fetches the 1.5 MB worker (Graphviz WASM) beside it, so the page is
// ready for the graph before the worker's code has even arrived; messages posted
// meanwhile wait here and go to the real worker once it starts.

/** What LayoutClient needs of a worker: a real Worker or a DeferredWorker. */
export interface WorkerLike {
  postMessage(msg: unknown): void;
  terminate(): void;
  onmessage: ((ev: MessageEvent) => unknown) | null;
  onerror: ((ev: ErrorEvent) => unknown) | null;
}

export class DeferredWorker implements WorkerLike {
  onmessage: ((ev: MessageEvent) => unknown) | null = null;
  onerror: ((ev: ErrorEvent) => unknown) | null = null;
  private real: Worker | null = null;
  private pending: unknown[] = [];
  private terminated = false;
  /** The fetch failed: said to whoever listens, now or at the next message. */
  private failure: ErrorEvent | null = null;

  /** `url`: a Blob URL of the worker's code, once fetched. */
  constructor(url: Promise<string>, name: string) {
    url.then(
      (u) => {
        if (this.terminated) return;
        const w = new Worker(u, { name });
        w.onmessage = (ev) => this.onmessage?.(ev);
        w.onerror = (ev) => this.onerror?.(ev);
        for (const m of this.pending) w.postMessage(m);
        this.pending = [];
        this.real = w;
      },
      (e: unknown) => {
        this.failure = new ErrorEvent("error", { message: `can't load the layout worker: ${String(e)}` });
        if (!this.terminated && this.pending.length) this.onerror?.(this.failure);
      },
    );
  }

  postMessage(msg: unknown): void {
    if (this.terminated) return;
    const failure = this.failure;
    if (failure) queueMicrotask(() => this.onerror?.(failure));
    else if (this.real) this.real.postMessage(msg);
    else this.pending.push(msg);
  }

  terminate(): void {
    this.terminated = true;
    this.pending = [];
    this.real?.terminate();
    this.real = null;
  }
}

/** Fetch a worker script (same rules as the page's scripts) into a Blob URL: workers
 * can't start from a webview resource URL directly. */
export async function fetchWorkerUrl(src: string): Promise<string> {
  const res = await fetch(src);
  if (!res.ok) throw new Error(`${src}: HTTP ${res.status}`);
  return URL.createObjectURL(new Blob([await res.arrayBuffer()], { type: "text/javascript" }));
}
