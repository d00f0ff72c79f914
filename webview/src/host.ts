// What the viewer needs from where it runs: reveal a source line, keep view state,
// save an exported file. Implemented for VS Code and for a standalone page.
import type { GraphNode, Site } from "./format";

export interface ViewState {
  expanded: number[];
  groups: number[];
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

export class VsCodeHost implements Host {
  readonly kind = "vscode";
  constructor(private readonly api: VsCodeApi) {}

  post(msg: ToExtension): void {
    this.api.postMessage(msg);
  }
  reveal(site: Site, node: GraphNode): void {
    this.post({ type: "reveal", site, nodeId: node.id });
  }
  saveState(state: ViewState): void {
    this.api.setState(state);
  }
  loadState(): ViewState | undefined {
    return (this.api.getState() as ViewState | undefined) ?? undefined;
  }
  saveFile(name: string, mime: string, data: Blob): void {
    // Webviews can't download; the extension writes the file.
    void data.arrayBuffer().then((buf) => this.post({ type: "save", name, mime, data: buf }));
  }
}
