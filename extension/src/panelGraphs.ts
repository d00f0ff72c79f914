// The graph each panel of this workspace showed last, kept in the workspace's state. After a
// reload VS Code restores a panel only when its tab is shown, so a restarted server is given
// these too (not only the panels restored by then): every panel's file has its hints again.
import type * as vscode from "vscode";

const KEY = "torchscope.panelGraphs";

export class PanelGraphs {
  constructor(
    private readonly state: vscode.Memento,
    private readonly limit = 50,
  ) {}

  /** Panel key → its graph file, the newest last. */
  entries(): [string, string][] {
    const v = this.state.get<unknown>(KEY);
    if (typeof v !== "object" || v === null) return [];
    return Object.entries(v).filter((e): e is [string, string] => typeof e[1] === "string");
  }

  /** The panel `key` shows `graph` now. */
  record(key: string, graph: string): void {
    const kept = this.entries().filter(([k]) => k !== key);
    kept.push([key, graph]);
    void this.state.update(KEY, Object.fromEntries(kept.slice(-this.limit)));
  }

  /** The panel `key` was closed (or its graph is gone): its file gives no hints any more. */
  forget(key: string): void {
    const all = this.entries();
    const kept = all.filter(([k]) => k !== key);
    if (kept.length !== all.length) void this.state.update(KEY, Object.fromEntries(kept));
  }
}
