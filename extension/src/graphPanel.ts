// The panel beside the editor that shows one traced model in the viewer, shaped like
// CatCodingPanel (webview-sample): createOrShow, revive through a serializer after a
// reload, a nonce CSP with default-src 'none', resources only from the viewer bundle.
// One panel per (document, target); the graph bytes go to the viewer as an ArrayBuffer
// once it says "ready", and again whenever it reloads.
import * as crypto from "node:crypto";
import * as fs from "node:fs/promises";
import * as vscode from "vscode";
import type { PanelGraphs } from "./panelGraphs";
import {
  distinctTails,
  isViewerMessage,
  targetKey,
  type HostMessage,
  type InputUsed,
  type PanelOrigin,
  type PausedAt,
  type Site,
  type ViewerMessage,
  type ViewState,
} from "./protocol";

export interface PanelEvents {
  /** `side`: a comparison's node, from version "a" (before) or "b" (after). */
  reveal(site: Site, panel: GraphPanel, side?: "a" | "b"): void;
  save(name: string, mime: string, data: Uint8Array): void;
  /** The panel was restored after a reload but its graph file is gone. */
  retrace(panel: GraphPanel): void;
  /** The viewer's Change button next to the input. */
  changeInput(panel: GraphPanel): void;
  log: vscode.LogOutputChannel;
}

export function nonce(): string {
  return crypto.randomBytes(18).toString("base64url");
}

/** The webview page: the viewer's page bundle with a strict CSP (Graphviz WASM needs
 * 'wasm-unsafe-eval'). The page fetches the layout worker's code itself (connect-src),
 * so the small page bundle starts, and can take the graph, while the large worker loads;
 * the preload starts that fetch as the page is parsed, beside the bundle's own (the page's
 * fetch of the same URL, same mode, takes it). */
export function panelHtml(opts: {
  cspSource: string;
  scriptUri: string;
  workerUri: string;
  styleUri: string;
  nonce: string;
  title: string;
  waiting?: string;
}): string {
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${opts.nonce}' 'wasm-unsafe-eval'`,
    `style-src ${opts.cspSource}`,
    `img-src ${opts.cspSource} blob: data:`,
    `font-src ${opts.cspSource}`,
    "worker-src blob:",
    `connect-src ${opts.cspSource}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
  const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${esc(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="torchscope-worker" content="${esc(opts.workerUri)}">
<link rel="preload" href="${esc(opts.workerUri)}" as="fetch" crossorigin="anonymous">
<link rel="stylesheet" href="${esc(opts.styleUri)}">
<title>${esc(opts.title)}</title>
</head>
<body>
<div id="torchscope"><p>${esc(opts.waiting ?? "")}</p></div>
<script nonce="${opts.nonce}" src="${esc(opts.scriptUri)}"></script>
</body>
</html>
`;
}

/** The ArrayBuffer holding exactly a Buffer's bytes (a small Buffer shares a larger pool). */
export function exactArrayBuffer(buf: Uint8Array): ArrayBuffer {
  return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
}

/** What a graph file shown in this window was: the origin of the panel that showed it last
 * (its title, document, target and input; `model`: its class) and, for a trace a comparison
 * made, the comparison's view it is side `a` or `b` of. */
export interface GraphOf {
  origin?: PanelOrigin & { model?: string };
  side?: { of: string; side: "a" | "b" };
}

/** The graph files of this window, by path, the last `limit` only (the newest kept): where a
 * hover's "Show in graph" finds the panel of a graph whose panel was closed, and what a graph
 * file opened again was (its model's panel again, whose Re-trace traces the model). */
export class GraphOrigins {
  private readonly byPath = new Map<string, GraphOf>();

  constructor(private readonly limit = 100) {}

  /** A panel showed `path`. */
  shown(path: string, origin: PanelOrigin & { model?: string }): void {
    this.put(path, { ...this.byPath.get(path), origin: { ...origin, graphPath: path } });
  }

  /** `path` is side `side` of the comparison whose view is the file `of`. */
  side(path: string, of: string, side: "a" | "b"): void {
    this.put(path, { ...this.byPath.get(path), side: { of, side } });
  }

  of(path: string): GraphOf | undefined {
    return this.byPath.get(path);
  }

  clear(): void {
    this.byPath.clear();
  }

  private put(path: string, of: GraphOf): void {
    this.byPath.delete(path); // the newest last
    this.byPath.set(path, of);
    for (const old of this.byPath.keys()) {
      if (this.byPath.size <= this.limit) break;
      this.byPath.delete(old);
    }
  }
}

export class GraphPanel {
  static readonly viewType = "torchscope.graph";
  /** Every graph file a panel of this window showed, and comparisons' sides. */
  static readonly graphs = new GraphOrigins(100);
  /** Each panel's graph, kept for the next window of the workspace (set at activation). */
  static remembered: PanelGraphs | undefined;
  private static readonly panels = new Map<string, GraphPanel>();
  private static lastActive: GraphPanel | undefined;

  private readonly disposables: vscode.Disposable[] = [];
  private ready = false;
  private graph: Uint8Array | undefined;
  private lastView: ViewState | undefined;
  private disposed = false;
  private readonly closedByUser = new vscode.EventEmitter<void>();
  /** Posted after each graph (a reload too): the paused debugger's point, a node to reveal. */
  private pausedAt: PausedAt | null = null;
  /** Why the graph shown is out of date (its re-trace failed); null: it is not. */
  private staleBecause: string | null = null;
  /** The viewer could not show the graph posted last (unreadable), and why. */
  private unreadableWhy: string | null = null;
  /** Restored after a reload: a graph file the viewer can't read is traced again. */
  private retraceIfUnreadable = false;
  private pendingReveal: HostMessage | undefined;

  static get active(): GraphPanel | undefined {
    const p = GraphPanel.lastActive;
    return p && !p.disposed && p.shown.target ? p : undefined; // an unnamed panel has nothing to act on
  }

  static all(): GraphPanel[] {
    return [...GraphPanel.panels.values()];
  }

  static find(uri: string, target: string): GraphPanel | undefined {
    return GraphPanel.panels.get(targetKey(uri, target));
  }

  /** The panel of this target, brought forward (unless `reveal` is false: a quiet re-trace
   * updates it where it is), or a new one beside the editor. */
  static createOrShow(viewerDir: vscode.Uri, origin: PanelOrigin, events: PanelEvents, reveal = true): GraphPanel {
    const existing = GraphPanel.find(origin.uri, origin.target);
    if (existing) {
      existing.retitle(origin.title);
      if (reveal) existing.panel.reveal(undefined, true);
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(
      GraphPanel.viewType,
      origin.title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      GraphPanel.webviewOptions(viewerDir),
    );
    return new GraphPanel(panel, viewerDir, origin, events);
  }

  /**
   * A panel for a model of `uri` not yet named: a click in a window just opened waits about a
   * second for the language server to start and name the model, and the viewer boots
   * meanwhile. It has no target until `claim`; until then no one finds it.
   */
  static openUnnamed(viewerDir: vscode.Uri, uri: string, events: PanelEvents, waiting: string): GraphPanel {
    const panel = vscode.window.createWebviewPanel(
      GraphPanel.viewType,
      "Forward pass",
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      GraphPanel.webviewOptions(viewerDir),
    );
    return new GraphPanel(panel, viewerDir, { uri, target: "", title: "Forward pass" }, events, waiting);
  }

  /** The target of a panel opened unnamed: this panel becomes its panel, titled `title`. When
   * the target has a panel already, that one is brought forward and this one closed. */
  claim(target: string, title: string): GraphPanel {
    if (this.shown.target) throw new Error(`the panel of ${this.shown.target} is not unnamed`);
    const existing = GraphPanel.find(this.shown.uri, target);
    if (existing) {
      this.dispose();
      existing.retitle(title);
      existing.panel.reveal(undefined, true);
      return existing;
    }
    this.shown = { ...this.shown, target, title };
    GraphPanel.panels.set(this.key, this);
    GraphPanel.showTitles();
    return this;
  }

  /** Each panel's title; panels of same-named models from different files add the file's
   * name (`Forward pass: MLP · mlp2.py`), with as many of its folders as tell the files apart
   * (`· a/mlp.py`), else two tabs can't be told apart. */
  private static showTitles(): void {
    const open = GraphPanel.all();
    const waiting = GraphPanel.tabsNotRestored(open);
    for (const p of open) {
      const files = [...new Set(open.filter((o) => o.shown.title === p.shown.title).map((o) => vscode.Uri.parse(o.shown.uri).path))];
      // (after a reload, a same-named panel whose tab was not shown yet is not restored: this
      // one keeps the file it names rather than lose it until that one comes back)
      if (files.length === 1 && p.panel.title.startsWith(`${p.shown.title} · `) && waiting.some((t) => t.startsWith(`${p.shown.title} · `))) continue;
      const title =
        files.length > 1 ? `${p.shown.title} · ${distinctTails(files)[files.indexOf(vscode.Uri.parse(p.shown.uri).path)]}` : p.shown.title;
      if (p.panel.title !== title) p.panel.title = title;
    }
  }

  /** The titles of torchscope's tabs whose panel VS Code has not restored yet (it restores a
   * panel when its tab is shown): the tabs' labels beyond those of the panels restored. */
  private static tabsNotRestored(open: GraphPanel[]): string[] {
    const labels = (vscode.window.tabGroups?.all ?? []).flatMap((g) =>
      g.tabs.filter((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith(GraphPanel.viewType)).map((t) => t.label),
    );
    for (const p of open) {
      const i = labels.indexOf(p.panel.title);
      if (i >= 0) labels.splice(i, 1);
    }
    return labels;
  }

  /** Restore a panel VS Code kept across a reload; its origin is in the webview state. */
  static async revive(panel: vscode.WebviewPanel, state: unknown, viewerDir: vscode.Uri, events: PanelEvents): Promise<GraphPanel | undefined> {
    const origin = (state as { origin?: PanelOrigin } | undefined)?.origin;
    if (!origin?.uri || !origin.target) {
      panel.dispose();
      return undefined;
    }
    panel.webview.options = GraphPanel.webviewOptions(viewerDir);
    const p = new GraphPanel(panel, viewerDir, origin, events);
    if (
      origin.graphPath &&
      (await p.load(origin.graphPath).then(
        () => true,
        () => false,
      ))
    ) {
      p.retraceIfUnreadable = true;
      return p;
    }
    events.retrace(p);
    return p;
  }

  static webviewOptions(viewerDir: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    return { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [viewerDir], enableFindWidget: false };
  }

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    private readonly viewerDir: vscode.Uri,
    private shown: PanelOrigin,
    private readonly events: PanelEvents,
    /** Shown until the first graph arrives (the viewer replaces it). */
    private readonly waiting = `Tracing ${shown.target}…`,
  ) {
    if (shown.target) {
      GraphPanel.panels.set(this.key, this); // an unnamed one: once claimed
      GraphPanel.showTitles();
    }
    GraphPanel.lastActive = this;
    void vscode.commands.executeCommand("setContext", "torchscope.hasPanel", true);
    panel.webview.html = this.html();
    this.disposables.push(this.closedByUser);
    panel.onDidDispose(
      () => {
        if (!this.disposed) {
          this.closedByUser.fire(); // (ours sets `disposed` first)
          GraphPanel.remembered?.forget(this.key);
        }
        this.dispose();
      },
      null,
      this.disposables,
    );
    panel.onDidChangeViewState(
      (e) => {
        if (e.webviewPanel.active) GraphPanel.lastActive = this;
      },
      null,
      this.disposables,
    );
    panel.webview.onDidReceiveMessage((m: unknown) => this.onMessage(m), null, this.disposables);
  }

  get key(): string {
    return targetKey(this.shown.uri, this.shown.target);
  }

  /** What the panel shows: its target (fixed for the panel's life), title and graph file. */
  get origin(): Readonly<PanelOrigin> {
    return this.shown;
  }

  get title(): string {
    return this.panel.title;
  }

  get viewColumn(): vscode.ViewColumn | undefined {
    return this.panel.viewColumn;
  }

  /** The traced model's class (`ConvNet`), once a trace named it: what an export is named
   * after, as the viewer names its SVG (the title may say more: `ConvNet (build)`). */
  model: string | undefined;
  /** The live model the graph is of (a paused program's, "pid:id"), when known. */
  modelId: string | undefined;

  /** A new title (the traced model's name, known once its trace is done). */
  retitle(title: string): void {
    this.shown = { ...this.shown, title };
    GraphPanel.showTitles();
  }

  /** Its file was renamed (or a folder holding it): the panel is that file's now, found and
   * titled by its new name. A panel of the new name already (its file overwritten) closes. */
  moveTo(uri: string): void {
    GraphPanel.panels.delete(this.key);
    this.shown = { ...this.shown, uri };
    const there = GraphPanel.panels.get(this.key);
    if (there && there !== this) there.dispose();
    GraphPanel.panels.set(this.key, this);
    GraphPanel.showTitles();
  }

  /** What the next graph was traced with: its input (shown in the viewer's toolbar; none: a
   * graph file shown as it is) and whether on the meta device (a re-trace keeps it). */
  setTracedWith(input: InputUsed | undefined, meta: boolean): void {
    const { input: _input, device: _device, ...rest } = this.shown;
    this.shown = { ...rest, ...(input ? { input } : {}), ...(meta ? { device: "meta" as const } : {}) };
  }

  /** Read a graph file written by the server (or the CLI) and show it. */
  async load(graphPath: string): Promise<void> {
    const bytes = await fs.readFile(graphPath);
    this.shown = { ...this.shown, graphPath };
    if (this.shown.target) {
      GraphPanel.graphs.shown(graphPath, { ...this.shown, ...(this.model ? { model: this.model } : {}) });
      GraphPanel.remembered?.record(this.key, graphPath);
    }
    this.pausedAt = null; // a new graph: the old point means nothing in it
    this.show(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  show(bytes: Uint8Array): void {
    this.graph = bytes;
    this.staleBecause = null;
    this.unreadableWhy = null;
    this.retraceIfUnreadable = false;
    if (this.ready) this.postGraph();
  }

  /** The graph shown is older than its source: `why` the trace that would replace it failed
   * (marked in the panel until a new graph comes). */
  markStale(why: string): void {
    this.staleBecause = why;
    if (this.graph) this.post({ type: "stale", message: why });
  }

  post(msg: HostMessage): void {
    if (!this.disposed && this.ready) void this.panel.webview.postMessage(msg);
  }

  private postGraph(): void {
    if (!this.graph) return;
    void this.panel.webview.postMessage({ type: "graph", data: exactArrayBuffer(this.graph), origin: this.shown } satisfies HostMessage);
    this.events.log.info(`panel ${this.origin.target}: posted the graph (${this.graph.byteLength} bytes)`);
    if (this.pausedAt) this.post({ type: "pausedAt", at: this.pausedAt });
    if (this.staleBecause) this.post({ type: "stale", message: this.staleBecause });
    if (this.pendingReveal) this.post(this.pendingReveal);
    this.pendingReveal = undefined;
  }

  /** Where the paused debugger is in this panel's graph ("you are here"); null: no marks. */
  setPausedAt(at: PausedAt | null): void {
    if (!at && !this.pausedAt) return;
    this.pausedAt = at;
    this.post({ type: "pausedAt", at });
  }

  /** Bring the panel forward (keeping the focus where it is). */
  bringForward(): void {
    if (!this.disposed) this.panel.reveal(undefined, true);
  }

  /** Show `node` of this panel's graph (a hover's "Show in graph"), once the viewer has it. */
  revealNode(node: number, nodes?: number[]): void {
    const msg: HostMessage = { type: "revealNode", node, ...(nodes ? { nodes } : {}) };
    this.panel.reveal(undefined, true);
    if (this.ready && this.graph) this.post(msg);
    else this.pendingReveal = msg;
  }

  private onMessage(m: unknown): void {
    if (!isViewerMessage(m)) return;
    const msg: ViewerMessage = m;
    switch (msg.type) {
      case "ready":
        this.ready = true;
        this.postGraph();
        return;
      case "reveal":
        this.events.reveal(msg.site, this, msg.side);
        return;
      case "save":
        this.events.save(msg.name, msg.mime, new Uint8Array(msg.data));
        return;
      case "error":
        this.events.log.error(`viewer: ${msg.message}`);
        return;
      case "unreadable":
        this.unreadableWhy = msg.message;
        this.events.log.warn(`panel ${this.origin.target}: its graph can't be shown: ${msg.message}`);
        if (this.retraceIfUnreadable) {
          // (a panel restored after a reload whose graph file was damaged: traced again, as
          // one whose file is gone)
          this.retraceIfUnreadable = false;
          this.events.retrace(this);
        }
        return;
      case "view":
        this.lastView = msg.view;
        return;
      case "changeInput":
        this.events.changeInput(this);
        return;
    }
  }

  private html(): string {
    const w = this.panel.webview;
    return panelHtml({
      cspSource: w.cspSource,
      scriptUri: w.asWebviewUri(vscode.Uri.joinPath(this.viewerDir, "viewer-page.js")).toString(),
      workerUri: w.asWebviewUri(vscode.Uri.joinPath(this.viewerDir, "layout.worker.js")).toString(),
      styleUri: w.asWebviewUri(vscode.Uri.joinPath(this.viewerDir, "viewer.css")).toString(),
      nonce: nonce(),
      title: this.origin.title,
      waiting: this.waiting,
    });
  }

  /** The graph bytes shown now (for the HTML export). */
  get bytes(): Uint8Array | undefined {
    return this.graph;
  }

  /** Why the viewer can't show the graph posted last (a damaged file); null: it can. */
  get unreadable(): string | null {
    return this.unreadableWhy;
  }

  /** Calls `listener` when the user closes the panel (not when torchscope closes it: the
   * panel a trace opened and got no graph for). */
  onClosed(listener: () => void): vscode.Disposable {
    return this.closedByUser.event(listener);
  }

  /** The viewer's view of the graph shown now (which modules are open), if it said. */
  get view(): ViewState | undefined {
    return this.lastView;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (GraphPanel.panels.get(this.key) === this) GraphPanel.panels.delete(this.key);
    GraphPanel.showTitles();
    if (GraphPanel.lastActive === this) GraphPanel.lastActive = GraphPanel.all()[0];
    void vscode.commands.executeCommand("setContext", "torchscope.hasPanel", GraphPanel.panels.size > 0);
    this.panel.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
