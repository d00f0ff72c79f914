// Entry point of the viewer bundle. Picks the host (VS Code webview or standalone page),
// gets the graph bytes, and mounts the viewer. Also exposes `torchscope.mount` for hosts
// that want to drive it themselves.
import workerSource from "virtual:layout-worker";
import "./viewer.css";
import "./paused.css";
import { base64ToBytesInSlices } from "./base64Slices";
import { decodeGraphInSlices } from "./decodeSlices";
import { DeferredWorker, fetchWorkerUrl, type WorkerLike } from "./deferredWorker";
import { decodeGraph, FormatError, type Graph } from "./format";
import { StandaloneHost, VsCodeHost, type Host } from "./host";
import type { HostMessage, ViewState } from "./messages";
import { nextTask } from "./tasks";
import { showFatal } from "./ui";
import { Viewer } from "./viewer";

const WORKER_NAME = "torchscope-layout";

// The standalone page may have started the worker already, from its own inert
// <script type="text/plain" id="torchscope-worker">, before this bundle was parsed.
const booted = globalThis as { __torchscopeWorker?: Worker; __torchscopeWorkerUrl?: string };
let workerUrl: string | null = booted.__torchscopeWorkerUrl ?? null;
let early: WorkerLike | null = booted.__torchscopeWorker ?? null;
// The VS Code webview names the worker's script in <meta name="torchscope-worker">: its
// fetch starts now, beside the page's own start-up.
const workerSrc = document.querySelector<HTMLMetaElement>('meta[name="torchscope-worker"]')?.content;
const fetchedUrl: Promise<string> | null = !workerSource && !workerUrl && workerSrc ? fetchWorkerUrl(workerSrc) : null;

/** The worker's code: in this bundle, or (standalone page) in the page's worker element. */
function workerCode(): string {
  return workerSource || (document.getElementById("torchscope-worker")?.textContent ?? "");
}

/** Workers can't load from file:// or a webview resource; a Blob URL works everywhere. */
function newWorker(): WorkerLike {
  if (fetchedUrl) return new DeferredWorker(fetchedUrl, WORKER_NAME);
  workerUrl ??= URL.createObjectURL(new Blob([workerCode()], { type: "text/javascript" }));
  return new Worker(workerUrl, { name: WORKER_NAME });
}

// In the VS Code panel, a worker started ahead for the next one asked for: each graph the
// panel receives (a re-trace) and each superseded layout ends its worker, and a new one spends
// a few hundred ms starting Graphviz (more on a busy machine) before it can lay anything out.
// The spare starts once a graph is drawn, so its WASM compile never competes with the layout
// it would only speed up next time. (A standalone page or notebook output: no spare.)
const inPanel = typeof (globalThis as Record<string, unknown>).acquireVsCodeApi === "function";
let spare: WorkerLike | null = null;

function makeWorker(): WorkerLike {
  const w = early ?? spare ?? newWorker();
  if (w === early) early = null;
  else if (w === spare) spare = null;
  return w;
}

if (inPanel && typeof PerformanceObserver === "function") {
  new PerformanceObserver((list) => {
    if (!spare && list.getEntriesByName("torchscope:drawn").length) spare = newWorker();
  }).observe({ type: "mark" });
}

// Start the worker (and its WASM compile) right away, in parallel with decoding the graph
// and building the page: it is the longest step before the first picture.
if (!early && (document.getElementById("torchscope-graph") || inPanel)) {
  early = newWorker();
}

export function mount(root: HTMLElement, bytes: Uint8Array | ArrayBuffer, host: Host): Viewer | null {
  try {
    const data = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    const graph = decodeGraph(data);
    return new Viewer(root, graph, data, host, makeWorker);
  } catch (e) {
    failed(root, e);
    return null;
  }
}

function failed(root: HTMLElement, e: unknown): void {
  if (e instanceof FormatError) showFatal(root, "This file can't be shown", e.message);
  else showFatal(root, "The viewer failed to start", String((e as Error)?.stack ?? e));
}

/**
 * `mount` in short tasks, for the page's own start-up and each graph the VS Code panel
 * receives: the graph is decoded a slice at a time (a 4,000-op graph in one call was a
 * 145 ms task), then the viewer is built in a task of its own. `current` says whether this
 * graph is still the one to show once it is decoded (a newer one may have arrived).
 */
async function mountSoon(
  root: HTMLElement,
  data: Uint8Array,
  host: Host,
  current: () => boolean = () => true,
  unreadable: (why: string) => void = () => undefined,
): Promise<Viewer | null> {
  let graph: Graph;
  try {
    graph = await decodeGraphInSlices(data);
  } catch (e) {
    if (current()) {
      failed(root, e);
      if (e instanceof FormatError) unreadable(e.message);
    }
    return null;
  }
  performance.mark("torchscope:decoded");
  await nextTask();
  if (!current()) return null;
  try {
    return new Viewer(root, graph, data, host, makeWorker);
  } catch (e) {
    failed(root, e);
    return null;
  }
}

/** The view a page opens at (`data-view` on the root: an HTML export of a panel's view). */
function pageView(root: HTMLElement): ViewState | undefined {
  try {
    const v = JSON.parse(root.dataset.view || "null") as Partial<ViewState> | null;
    return v && Array.isArray(v.expanded) && Array.isArray(v.groups) ? (v as ViewState) : undefined;
  } catch {
    return undefined;
  }
}

function rootElement(): HTMLElement {
  let root = document.getElementById("torchscope");
  if (!root) {
    root = document.createElement("div");
    root.id = "torchscope";
    document.body.appendChild(root);
  }
  return root;
}

declare function acquireVsCodeApi(): ConstructorParameters<typeof VsCodeHost>[0];

/** Sets `data-vscode-context` on the right-clicked node: its definition and call site. */
function nodeContext(viewer: Viewer, ev: Event): void {
  const el = (ev.target as Element | null)?.closest<SVGGElement>("[data-key],[data-head]");
  const key = el?.dataset.key ?? el?.dataset.head;
  if (!el || !key) return;
  const g = viewer.idx.graph;
  const id = key.startsWith("g") ? g.groups[Number(key.slice(1))]?.members[0] : key.startsWith("n") ? Number(key.slice(1)) : undefined;
  const node = id !== undefined ? g.nodes[id] : undefined;
  if (!node) return;
  el.dataset.vscodeContext = JSON.stringify({
    preventDefaultContextMenuItems: true,
    torchscopeNode: node.id,
    torchscopeHasDefn: !!node.defn,
    torchscopeHasSite: !!node.site,
    torchscopeHasInside: !!node.inside,
    ...(node.defn ? { defnFile: node.defn.file, defnLine: node.defn.line } : {}),
    ...(node.site ? { siteFile: node.site.file, siteLine: node.site.line, ...(node.site.col !== undefined ? { siteCol: node.site.col } : {}) } : {}),
    ...(node.inside ? { insideFile: node.inside.file, insideLine: node.inside.line } : {}),
  });
}

async function boot(): Promise<void> {
  performance.mark("torchscope:boot");
  const data = document.getElementById("torchscope-graph");
  if (data) {
    const root = rootElement();
    const host = new StandaloneHost((text) => {
      const s = root.querySelector<HTMLElement>("[data-role=status]");
      if (s) s.textContent = text;
    }, pageView(root));
    // Short tasks from here on: the layout worker (created above) starts meanwhile.
    await nextTask();
    let bytes: Uint8Array;
    try {
      bytes = await base64ToBytesInSlices(data.textContent ?? "");
    } catch {
      showFatal(root, "This file can't be shown", "the embedded graph data is not valid base64");
      return;
    }
    await nextTask();
    await mountSoon(root, bytes, host);
    return;
  }
  if (typeof acquireVsCodeApi === "function") {
    const host = new VsCodeHost(acquireVsCodeApi());
    let viewer: Viewer | null = null;
    let arrivals = 0;
    // The viewer of the latest graph once it is decoded and mounted: messages about it (the
    // paused line, a node to reveal) that come while it decodes wait for it.
    let latest: Promise<Viewer | null> = Promise.resolve(null);
    window.addEventListener("message", (ev: MessageEvent<HostMessage | undefined>) => {
      const m = ev.data;
      if (m?.type === "graph" && m.data) {
        performance.mark("torchscope:received");
        // A new trace replaces the old view; its layouts are stale.
        viewer?.dispose();
        viewer = null;
        host.setOrigin(m.origin);
        const arrival = ++arrivals;
        const data = m.data instanceof Uint8Array ? m.data : new Uint8Array(m.data);
        // (a graph that can't be shown: the extension is told, for Export and a restored panel)
        const unreadable = (message: string) => host.post({ type: "unreadable", message });
        latest = mountSoon(rootElement(), data, host, () => arrival === arrivals, unreadable).then((v) => {
          if (arrival !== arrivals) {
            v?.dispose();
            return null;
          }
          viewer = v;
          // Which input this graph was traced with, and a way to trace it with another.
          viewer?.setInput(m.origin.input?.text, () => host.post({ type: "changeInput" }));
          return v;
        });
      } else if (m?.type === "highlightLine") {
        void latest.then((v) => v?.highlightLine(m.file, m.line));
      } else if (m?.type === "revealNode") {
        void latest.then((v) => v?.showNodes(m.node, m.nodes));
      } else if (m?.type === "pausedAt") {
        // The extension posts it after each graph of a paused frame (again after a reload).
        void latest.then((v) => v?.setPausedAt(m.at));
      } else if (m?.type === "stale") {
        void latest.then((v) => v?.setStale(m.message));
      } else if (m?.type === "export") {
        rootElement().querySelector<HTMLElement>(`[data-action="export-${m.format}"]`)?.click();
      }
    });
    // A right-click on a node tells VS Code's webview context menu what the node is.
    document.addEventListener("contextmenu", (ev) => viewer && nodeContext(viewer, ev), true);
    host.post({ type: "ready" });
  }
}

(globalThis as unknown as { torchscope: unknown }).torchscope = { mount, StandaloneHost, VsCodeHost };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => void boot());
else void boot();
