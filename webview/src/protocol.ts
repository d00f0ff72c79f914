// Messages between the page and the layout worker. The worker holds its own copy of the
// graph, so a layout request is just an expansion state and the main thread stays free.
import type { Layout } from "./layout";
import type { Label } from "./labels";
import type { VisibleGraph } from "./visible";

export interface Fonts {
  sans: string;
  mono: string;
}

/** An expansion state as plain lists (what a worker message can carry). */
export interface ExpansionLists {
  modules: number[];
  groups: number[];
  segments: number[];
}

export type WorkerRequest =
  | { type: "init"; bytes: Uint8Array; fonts: Fonts }
  | ({ type: "layout"; id: number } & ExpansionLists)
  /** The first view: the page computed its DOT already; only Graphviz runs here. */
  | { type: "dot"; id: number; dot: string };

/** Everything the page needs to draw one expansion state. */
export interface ViewResult {
  vg: VisibleGraph;
  labels: [string, Label][];
  layout: Layout;
}

export type WorkerReply =
  | { type: "ready" }
  | { type: "layout"; id: number; result: ViewResult; ms: number }
  | { type: "dot"; id: number; layout: Layout; ms: number }
  | { type: "error"; id: number; message: string }
  /** The view would hold more than `limit` boxes and frames (or levels): refused, nothing laid out. */
  | { type: "too-many"; id: number; limit: number; what: "boxes" | "levels" };
