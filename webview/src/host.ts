// What the viewer needs from where it runs: reveal a source line, keep view state,
// save an exported file. Implemented for VS Code and for a standalone page.
import type { GraphNode, Site } from "./format";

export interface ViewState {
  /** Which graph the state belongs to: a new trace starts fresh, a reload restores. */
  graph?: string;
  expanded: number[];
  groups: number[];
  /** Open segments of long runs (absent in state saved before segments existed). */
  segments?: number[];
  transform?: { x: number; y: number; k: number };
}

export interface Host {
  readonly kind: "vscode" | "standalone";
  reveal(site: Site, node: GraphNode): void;
  saveState(state: ViewState): void;
  loadState(): ViewState | undefined;
  saveFile(name: string, mime: string, data: Blob): void;
}

/** Anchor download; works from file:// and inside notebook iframes. */
export function downloadBlob(name: string, data: Blob): void {
  const url = URL.createObjectURL(data);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.rel = "noopener";
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export class StandaloneHost implements Host {
  readonly kind = "standalone";
  private state: ViewState | undefined;

  constructor(private readonly status: (text: string) => void) {}

  reveal(site: Site): void {
    this.status(`${site.file}:${site.line}${site.func ? ` (${site.func})` : ""}`);
  }
  saveState(state: ViewState): void {
    this.state = state;
  }
  loadState(): ViewState | undefined {
    return this.state;
  }
  saveFile(name: string, _mime: string, data: Blob): void {
    downloadBlob(name, data);
  }
}

interface VsCodeApi {
  postMessage(msg: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}

/** Messages the viewer posts to the VS Code extension. */
export type ToExtension =
  | { type: "ready" }
  | { type: "reveal"; site: Site; nodeId: number }
  | { type: "save"; name: string; mime: string; data: ArrayBuffer }
  | { type: "error"; message: string };

/** What the VS Code extension's panel shows; kept in the webview state for a reload. */
export interface Origin {
  uri: string;
  target: string;
  title: string;
  graphPath?: string;
}

/** Messages the VS Code extension posts to the viewer (extension/src/protocol.ts). */
export type FromExtension =
  | { type: "graph"; data: ArrayBuffer | Uint8Array; origin?: Origin }
  | { type: "highlightLine"; file: string; line: number }
  | { type: "export"; format: "svg" | "png" };

/** The webview state: the viewer's view plus the panel's origin (the extension's). */
type StoredState = Partial<ViewState> & { origin?: Origin };

export class VsCodeHost implements Host {
  readonly kind = "vscode";
  constructor(private readonly api: VsCodeApi) {}

  post(msg: ToExtension): void {
    this.api.postMessage(msg);
  }
  reveal(site: Site, node: GraphNode): void {
    this.post({ type: "reveal", site, nodeId: node.id });
  }
  private stored(): StoredState {
    return (this.api.getState() as StoredState | undefined) ?? {};
  }
  saveState(state: ViewState): void {
    this.api.setState({ ...state, origin: this.stored().origin } satisfies StoredState);
  }
  loadState(): ViewState | undefined {
    const s = this.stored();
    return Array.isArray(s.expanded) && Array.isArray(s.groups) ? (s as ViewState) : undefined;
  }
  /** A graph of another target starts from a fresh view; the same target keeps its view. */
  setOrigin(origin: Origin): void {
    const s = this.stored();
    const same = s.origin?.uri === origin.uri && s.origin?.target === origin.target;
    this.api.setState((same ? { ...s, origin } : { origin }) satisfies StoredState);
  }
  saveFile(name: string, mime: string, data: Blob): void {
    // Webviews can't download; the extension writes the file.
    void data.arrayBuffer().then((buf) => this.post({ type: "save", name, mime, data: buf }));
  }
}
