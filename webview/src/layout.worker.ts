// Layout worker: DOT in, positioned shapes out. Graphviz (WASM) runs here so the page
// never freezes; the main thread terminates this worker to cancel a stale layout.
import { instance } from "@viz-js/viz";
import { parseLayout } from "./layout";
import type { WorkerReply, WorkerRequest } from "./protocol";

const ctx = self as unknown as DedicatedWorkerGlobalScope;
const vizReady = instance();

vizReady.then(
  () => ctx.postMessage({ type: "ready" } satisfies WorkerReply),
  (e: unknown) => ctx.postMessage({ type: "error", id: -1, message: String(e) } satisfies WorkerReply),
);

ctx.onmessage = async (ev: MessageEvent<WorkerRequest>) => {
  const { id, dot } = ev.data;
  try {
    const viz = await vizReady;
    const t0 = performance.now();
    const r = viz.render(dot, { format: "json0" });
    if (r.status !== "success" || r.output === undefined) {
      const msg = r.errors.filter((e) => e.level === "error").map((e) => e.message).join("; ");
      ctx.postMessage({ type: "error", id, message: msg || "layout failed" } satisfies WorkerReply);
      return;
    }
    const layout = parseLayout(r.output);
    ctx.postMessage({ type: "layout", id, layout, ms: performance.now() - t0 } satisfies WorkerReply);
  } catch (e) {
    ctx.postMessage({ type: "error", id, message: String(e) } satisfies WorkerReply);
  }
};
