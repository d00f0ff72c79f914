// Search over every node of the graph, drawn or not: name, module path, op target.
import type { GraphIndex } from "./model";

/** Ids of matching nodes in graph order (case-insensitive substring). */
export function searchNodes(idx: GraphIndex, query: string): number[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const out: number[] = [];
  for (const n of idx.graph.nodes) {
    if (n.name.toLowerCase().includes(q) || n.path.toLowerCase().includes(q) || n.target.toLowerCase().includes(q)) {
      out.push(n.id);
    }
  }
  return out;
}

/** Drawn keys to highlight: each match's drawn stand-in (a collapsed ancestor if hidden). */
export function highlightKeys(rep: string[], matches: number[]): Set<string> {
  return new Set(matches.map((id) => rep[id]!).filter((k) => k !== undefined));
}

/** Ids of the nodes made on `file:line` (1-based): the editor's cursor line in VS Code. */
export function nodesAtLine(idx: GraphIndex, file: string, line: number): number[] {
  const out: number[] = [];
  for (const n of idx.graph.nodes) if (n.site && n.site.line === line && n.site.file === file) out.push(n.id);
  return out;
}

/** The match one step from position `pos` of `n` (-1: none shown yet): Enter shows the
 * first, Shift+Enter the last, as Next and Previous change do. */
export function stepMatch(pos: number, step: 1 | -1, n: number): number {
  if (pos < 0 || pos >= n) return step === 1 ? 0 : n - 1;
  return (pos + step + n) % n;
}
