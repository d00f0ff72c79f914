// What the viewer needs from where it runs: reveal a source line, keep view state,
// save an exported file. Implemented for VS Code and for a standalone page.
import type { GraphNode, Site } from "./format";
import type { PanelOrigin, ViewState, ViewerMessage, WebviewState } from "./messages";

export interface Host {
  readonly kind: "vscode" | "standalone";
  /** `side`: in a compare view, the version the node's site belongs to ("a": before). */
  reveal(site: Site, node: GraphNode, side?: "a" | "b"): void;
  saveState(state: ViewState): void;
  loadState(): ViewState | undefined;
  saveFile(name: string, mime: string, data: Blob): void;
  /** Whether the graph is of the live model in a paused debugger frame (real inputs). */
  live?(): boolean;
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

  /** `state`: the view to open at (an HTML export of a VS Code panel's view). */
  constructor(
    private readonly status: (text: string) => void,
    private state?: ViewState,
  ) {}

  reveal(site: Site, _node?: GraphNode, side?: "a" | "b"): void {
    const version = side === "a" ? " — in a, the version before" : "";
    this.status(`${site.file}:${site.line}${site.func ? ` (${site.func})` : ""}${version}`);
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

/** Scheme of a paused-frame graph's origin uri (extension/src/pausedSource.ts DEBUG_URI). */
export const PAUSED_FRAME_SCHEME = "torchscope-debug:";

export class VsCodeHost implements Host {
  readonly kind = "vscode";
  constructor(private readonly api: VsCodeApi) {}

  post(msg: ViewerMessage): void {
    this.api.postMessage(msg);
  }
  reveal(site: Site, node: GraphNode, side?: "a" | "b"): void {
    this.post({ type: "reveal", site, nodeId: node.id, ...(side ? { side } : {}) });
  }
  private stored(): WebviewState {
    return (this.api.getState() as WebviewState | undefined) ?? {};
  }
  saveState(state: ViewState): void {
    this.api.setState({ ...state, origin: this.stored().origin } satisfies WebviewState);
    this.post({ type: "view", view: state });
  }
  loadState(): ViewState | undefined {
    const s = this.stored();
    return Array.isArray(s.expanded) && Array.isArray(s.groups) ? (s as ViewState) : undefined;
  }
  /** A graph of another target starts from a fresh view; the same target keeps its view. */
  setOrigin(origin: PanelOrigin): void {
    const s = this.stored();
    const same = s.origin?.uri === origin.uri && s.origin?.target === origin.target;
    this.api.setState((same ? { ...s, origin } : { origin }) satisfies WebviewState);
  }
  /** The extension names paused-frame graphs' origin with this scheme (DEBUG_URI). */
  live(): boolean {
    return this.stored().origin?.uri?.startsWith(PAUSED_FRAME_SCHEME) ?? false;
  }
  saveFile(name: string, mime: string, data: Blob): void {
    // Webviews can't download; the extension writes the file.
    void data.arrayBuffer().then((buf) => this.post({ type: "save", name, mime, data: buf }));
  }
}
