// "You are here": which nodes of a graph traced from a paused frame the paused line makes,
// and which the paused program has not run yet in this call. Pure: node ids from the graph
// index, drawn keys from the visible graph's `rep`; the viewer draws the marks (scene.ts).
import type { GraphIndex } from "./model";
import type { PausedAt } from "./messages";

export interface PausedNodes {
  /** The calls the paused line makes (and everything inside them), in this call of the function. */
  here: number[];
  /** What the program has not run yet: every node after the paused point that does not enclose it. */
  ahead: number[];
}

/** The nodes of `idx` the paused point `at` divides: ids are in execution order, so what comes
 * after the paused line's first call (or, for a line that made nothing, after the first call of
 * a later line of the same function) is still ahead. A line run by several module calls (the
 * same block's forward in 12 layers) marks the first call's runs. */
export function pausedNodes(idx: GraphIndex, at: PausedAt): PausedNodes {
  const nodes = idx.graph.nodes;
  const inFunction = (id: number): boolean => {
    const s = nodes[id]!.site;
    return !!s && s.file === at.file && sameFunction(s.func, at.func);
  };
  const onLine = nodes.filter((n) => n.site?.line === at.line && inFunction(n.id)).map((n) => n.id);
  let here: number[] = [];
  let boundary: number | undefined;
  if (onLine.length) {
    // One call of the function: the line's calls that share the first one's enclosing call.
    const call = nodes[onLine[0]!]!.parent;
    const tops = onLine.filter((id) => nodes[id]!.parent === call);
    here = withDescendants(idx, tops);
    boundary = tops[0];
  } else {
    boundary = nodes.find((n) => inFunction(n.id) && n.site!.line > at.line && n.kind !== "output")?.id;
  }
  if (boundary === undefined) return { here, ahead: [] };
  const hereSet = new Set(here);
  const enclosing = new Set<number>();
  for (let p = nodes[boundary]!.parent; p !== null; p = nodes[p]!.parent) enclosing.add(p);
  const ahead: number[] = [];
  for (let id = boundary; id < nodes.length; id++) if (!hereSet.has(id) && !enclosing.has(id)) ahead.push(id);
  return { here, ahead };
}

/** A debugger may name a frame by its qualified name (`Net.forward`); sites by the code's name. */
function sameFunction(site: string | undefined, frame: string | undefined): boolean {
  return !site || !frame || site === frame || frame.endsWith(`.${site}`);
}

function withDescendants(idx: GraphIndex, tops: number[]): number[] {
  const out: number[] = [];
  const stack = [...tops].reverse();
  while (stack.length) {
    const id = stack.pop()!;
    out.push(id);
    const kids = idx.children[id]!;
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
  }
  return out.sort((a, b) => a - b);
}

/** Drawn keys to mark: a box is "here" when it draws (or hides) a call of the paused line, and
 * "ahead" when everything it stands for is still ahead. */
export function pausedKeys(rep: readonly (string | undefined)[], p: PausedNodes): { here: Set<string>; ahead: Set<string> } {
  const here = new Set<string>();
  for (const id of p.here) {
    const k = rep[id];
    if (k) here.add(k);
  }
  const aheadIds = new Set(p.ahead);
  const allAhead = new Map<string, boolean>();
  rep.forEach((k, id) => {
    if (!k) return;
    allAhead.set(k, (allAhead.get(k) ?? true) && aheadIds.has(id));
  });
  const ahead = new Set<string>();
  for (const [k, all] of allAhead) if (all && !here.has(k)) ahead.add(k);
  return { here, ahead };
}
