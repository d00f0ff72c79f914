// Messages between the page and the layout worker.
import type { Layout } from "./layout";

export interface WorkerRequest {
  id: number;
  dot: string;
}

export type WorkerReply =
  | { type: "ready" }
  | { type: "layout"; id: number; layout: Layout; ms: number }
  | { type: "error"; id: number; message: string };
