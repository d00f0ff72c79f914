// Layout worker: holds the graph, turns an expansion state into the visible graph and
// DOT, runs Graphviz (WASM) and parses its output. All the heavy work of a re-layout
// happens here so the page never freezes; the page terminates this worker to cancel.
import { instance } from "@viz-js/viz";
import { computeView } from "./compute";
import { errorText } from "./errorText";
import { decodeGraph } from "./format";
import { parseLayout } from "./layout";
import { estimateWidth, type Font, type Measure } from "./metrics";
import { buildIndex, type GraphIndex } from "./model";
import type { Fonts, WorkerReply, WorkerRequest } from "./protocol";
import { TooManyToDraw } from "./visible";

const ctx = self as unknown as DedicatedWorkerGlobalScope;
const vizReady = instance();
let idx: GraphIndex | null = null;
let bytes: Uint8Array | null = null;
let measure: Measure = estimateWidth;

/** The graph is decoded on first need (or right after the first view): the first view's
 * DOT comes from the page, so decoding stays off the path to the first picture. */
function index(): GraphIndex {
  if (!idx) {
    if (!bytes) throw new Error("layout requested before the graph arrived");
    idx = buildIndex(decodeGraph(bytes));
    bytes = null;
  }
  return idx;
}

/** The answer to the graph ("init"): "ready" once Graphviz is up (the page sends requests
 * only then), or the reason it could not start. An answer, not an announcement: a worker
 * started ahead (the spare) may have had no listener yet when Graphviz came up. */
function sayReady(): void {
  vizReady.then(
    () => ctx.postMessage({ type: "ready" } satisfies WorkerReply),
    (e: unknown) => ctx.postMessage({ type: "error", id: -1, message: errorText(e) } satisfies WorkerReply),
  );
}

function canvasMeasure(fonts: Fonts): Measure {
  if (typeof OffscreenCanvas === "undefined") return estimateWidth;
  const c = new OffscreenCanvas(1, 1).getContext("2d");
  if (!c) return estimateWidth;
  const cache = new Map<string, number>();
  return (text: string, f: Font): number => {
    const k = `${f.size}|${f.weight}|${f.mono}|${text}`;
    let w = cache.get(k);
    if (w === undefined) {
      c.font = `${f.weight} ${f.size}px ${f.mono ? fonts.mono : fonts.sans}`;
      w = c.measureText(text).width;
      cache.set(k, w);
    }
    return w;
  };
}

/** Graphviz's layout of `dot`; null when it failed, after telling the page why (request `id`). */
async function render(dot: string, id: number): Promise<ReturnType<typeof parseLayout> | null> {
  const r = (await vizReady).render(dot, { format: "json0" });
  if (r.status === "success" && r.output !== undefined) return parseLayout(r.output);
  const text = r.errors
    .filter((e) => e.level === "error")
    .map((e) => e.message)
    .join("; ");
  ctx.postMessage({ type: "error", id, message: text || "layout failed" } satisfies WorkerReply);
  return null;
}

ctx.onmessage = async (ev: MessageEvent<WorkerRequest>) => {
  const msg = ev.data;
  if (msg.type === "init") {
    bytes = msg.bytes;
    idx = null;
    measure = canvasMeasure(msg.fonts);
    sayReady();
    return;
  }
  const { id } = msg;
  if (msg.type === "dot") {
    try {
      const t0 = performance.now();
      const layout = await render(msg.dot, id);
      if (layout) ctx.postMessage({ type: "dot", id, layout, ms: performance.now() - t0 } satisfies WorkerReply);
    } catch (e) {
      ctx.postMessage({ type: "error", id, message: errorText(e) } satisfies WorkerReply);
    }
    // Ready for the next request (an expand) while the user looks at the first view.
    setTimeout(() => {
      try {
        index();
      } catch {
        /* reported on the next request */
      }
    }, 0);
    return;
  }
  try {
    const t0 = performance.now();
    const view = computeView(index(), { modules: new Set(msg.modules), groups: new Set(msg.groups), segments: new Set(msg.segments) }, measure);
    const layout = await render(view.dot, id);
    if (!layout) return;
    const result = { vg: view.vg, labels: [...view.labels], layout };
    ctx.postMessage({ type: "layout", id, result, ms: performance.now() - t0 } satisfies WorkerReply);
  } catch (e) {
    if (e instanceof TooManyToDraw) ctx.postMessage({ type: "too-many", id, limit: e.limit, what: e.what } satisfies WorkerReply);
    else ctx.postMessage({ type: "error", id, message: errorText(e) } satisfies WorkerReply);
  }
};
