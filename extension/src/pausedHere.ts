// Graphs traced at a breakpoint, after they are shown: the language server indexes them
// (`torchscope/graphShown`: inlay hints and hovers for paused traces too), and the panel marks
// where the debugger is in the traced call ("you are here"). Stepping moves the mark without a
// new trace while the frame the trace came from is still the same call; leaving that call or
// ending the session clears it. The call is told apart by the frame's place on its thread's
// stack (counted from the bottom), its file and its function.
import * as vscode from "vscode";
import type { GraphPanel } from "./graphPanel";
import { PausedSource } from "./pausedSource";
import type { PausedAt } from "./protocol";
import { realPath } from "./realPath";
import type { Traced, TraceSource } from "./traceFlow";

/** A DAP stack frame, as much of it as this needs. */
export interface DapFrame {
  id: number;
  name: string;
  line: number;
  source?: { path?: string };
}

/** A frame's place: the call it belongs to (`depth` from the bottom of its thread's stack). */
export interface FramePlace {
  sessionId: string;
  threadId: number;
  depth: number;
  file: string;
  func: string;
  line: number;
}

/** A DAP source path as a file path: VS Code in a browser (code-server, remote) hands the
 * extension `vscode-remote://host/path` URIs where the adapter said `/path`. */
export function sourceFile(p: string): string {
  if (!/^[a-z][\w+.-]+:\/\//i.test(p)) return p;
  try {
    return decodeURIComponent(new URL(p).pathname);
  } catch {
    return p;
  }
}

/** The place of frame `frameId` in a whole stack (top first; `total` frames in all). */
export function placeOf(frames: DapFrame[], total: number, frameId: number, sessionId: string, threadId: number): FramePlace | undefined {
  const i = frames.findIndex((f) => f.id === frameId);
  const f = frames[i];
  if (!f?.source?.path) return undefined;
  return { sessionId, threadId, depth: total - i, file: sourceFile(f.source.path), func: f.name, line: f.line };
}

/** The frame at the traced frame's depth now, when it is still that call (same file and
 * function there; a step into a callee leaves it below, at the line that called). */
export function stillInCall(traced: FramePlace, frames: DapFrame[], total: number): FramePlace | undefined {
  const f = frames[total - traced.depth];
  if (!f?.source?.path || sourceFile(f.source.path) !== traced.file || f.name !== traced.func) return undefined;
  return { ...traced, line: f.line };
}

/** Where the panel marks the paused line: the frame's file as the graph names files (its real
 * path: the program may run through a symlinked folder). */
export function pausedAt(p: FramePlace): PausedAt {
  return { file: realPath(p.file), line: p.line, func: p.func };
}

/** The key a paused panel's graph is indexed under: each panel's graph replaces its previous one. */
export function graphKey(target: string): string {
  return `torchscope/paused:${target}`;
}

export interface GraphIndexer {
  graphShown(path: string, key: string): Promise<unknown>;
}

interface Tracked {
  panel: GraphPanel;
  place: FramePlace;
  session: vscode.DebugSession;
}

/** The frames whose line the marks may show, in order: the one the trace was asked in, then
 * the frame paused now in that session (a next call's graph comes after the program went on:
 * the frame it was armed in is gone, and the program may be paused in the traced call). */
export function framesToMark(traced: number | undefined, active: unknown, sessionId: string): number[] {
  const item = active as { session?: { id?: string }; frameId?: number } | undefined;
  const now = item?.session?.id === sessionId && typeof item.frameId === "number" ? item.frameId : undefined;
  return [traced, now].filter((id, i, all): id is number => id !== undefined && all.indexOf(id) === i);
}

export class PausedHere implements vscode.Disposable {
  private readonly tracked = new Map<GraphPanel, Tracked>();
  private readonly subs: vscode.Disposable[];

  constructor(
    private readonly server: GraphIndexer,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subs = [
      vscode.debug.onDidChangeActiveStackItem((item) => void this.stepped(item)),
      vscode.debug.onDidTerminateDebugSession((s) => {
        for (const t of [...this.tracked.values()]) if (t.session.id === s.id) this.clear(t.panel);
      }),
    ];
  }

  /** A graph was shown in a panel (TraceFlow's onShown): index it and mark the paused line. */
  async shown(source: TraceSource, traced: Traced, panel: GraphPanel): Promise<void> {
    if (!(source instanceof PausedSource)) return;
    this.server.graphShown(traced.path, graphKey(source.target)).catch((e: unknown) => this.log.warn(`graphShown: ${String(e)}`));
    const { session, frameId } = source.bridge.frame;
    const tries = framesToMark(frameId, vscode.debug.activeStackItem, session.id);
    if (!tries.length) return this.clear(panel);
    let place: FramePlace | undefined;
    for (const id of tries) {
      place = await this.place(session, id).catch((e: unknown) => {
        this.log.info(`debug: no stack for the paused mark: ${String(e)}`);
        return undefined;
      });
      if (place) break;
    }
    if (!place) {
      this.log.info(`debug: frame ${tries.join(" or ")} is not on a stack of ${session.name}; no "you are here" marks`);
      return this.clear(panel);
    }
    this.log.info(`debug: paused at ${place.file}:${place.line} in ${place.func} (depth ${place.depth}): marked in the panel`);
    this.tracked.set(panel, { panel, place, session });
    panel.setPausedAt(pausedAt(place));
  }

  /** The traced frame's place: on the selected thread, else found among the session's threads. */
  private async place(session: vscode.DebugSession, frameId: number): Promise<FramePlace | undefined> {
    const item = vscode.debug.activeStackItem;
    const threads: number[] = [];
    if (item?.session.id === session.id) threads.push(item.threadId);
    const all = (await session.customRequest("threads")) as { threads?: { id: number }[] };
    for (const t of all.threads ?? []) if (!threads.includes(t.id)) threads.push(t.id);
    for (const threadId of threads) {
      const st = await stack(session, threadId);
      const p = st && placeOf(st.frames, st.total, frameId, session.id, threadId);
      if (p) return p;
    }
    return undefined;
  }

  private async stepped(item: vscode.DebugThread | vscode.DebugStackFrame | undefined): Promise<void> {
    // Running (no item): the marks stay until the program stops again.
    if (!item) return;
    for (const t of [...this.tracked.values()]) {
      if (t.session.id !== item.session.id || t.place.threadId !== item.threadId) continue;
      const st = await stack(t.session, t.place.threadId).catch(() => undefined);
      if (!st) continue;
      const now = stillInCall(t.place, st.frames, st.total);
      if (!now) {
        this.log.info(`debug: the paused program left the traced call of ${t.place.func}; the marks are cleared`);
        this.clear(t.panel);
        continue;
      }
      t.place = now;
      this.log.debug(`debug: stepped to line ${now.line} of ${now.func}`);
      t.panel.setPausedAt(pausedAt(now));
    }
  }

  private clear(panel: GraphPanel): void {
    this.tracked.delete(panel);
    panel.setPausedAt(null);
  }

  dispose(): void {
    for (const s of this.subs.splice(0)) s.dispose();
    this.tracked.clear();
  }
}

/** The whole stack of a thread, top first. */
async function stack(session: vscode.DebugSession, threadId: number): Promise<{ frames: DapFrame[]; total: number } | undefined> {
  const r = (await session.customRequest("stackTrace", { threadId, startFrame: 0, levels: 0 })) as {
    stackFrames?: DapFrame[];
    totalFrames?: number;
  };
  if (!r.stackFrames) return undefined;
  return { frames: r.stackFrames, total: Math.max(r.totalFrames ?? 0, r.stackFrames.length) };
}
