// A graph's line numbers and the editor's, once the file has been edited since its trace:
// the language server follows the edits for its hints (torchscope/lines gives, per line
// that made something, where it is now); a click on a node and the cursor's marks go
// through the same pairs. Pure: unit-tested.

/** `[traced, now]`, 0-based, as torchscope/lines gives them. */
export type LinePairs = readonly (readonly [number, number])[];

/** Where the graph's (1-based) line `traced` is now: its own place if the server knows it,
 * else moved as the nearest known line above it moved (the line itself was edited, or made
 * nothing: a statement's second line), else as the nearest below, else where it was. */
export function lineNow(pairs: LinePairs, traced: number): number {
  return shifted(pairs, traced, 0, 1);
}

/** Which of the graph's (1-based) lines the editor's line `now` was at the trace (the
 * inverse of lineNow: the cursor's line, for the graph's marks); 0, a line no node is on,
 * for a line typed since that the shift would take for a traced line now elsewhere. */
export function lineTraced(pairs: LinePairs, now: number): number {
  const traced = shifted(pairs, now, 1, 0);
  const exact = pairs.some((p) => p[1] === now - 1);
  return !exact && pairs.some((p) => p[0] === traced - 1) ? 0 : traced;
}

function shifted(pairs: LinePairs, line: number, from: 0 | 1, to: 0 | 1): number {
  const at = line - 1;
  let above: readonly [number, number] | undefined;
  let below: readonly [number, number] | undefined;
  for (const p of pairs) {
    if (p[from] === at) return p[to] + 1;
    if (p[from] < at && (!above || p[from] > above[from])) above = p;
    if (p[from] > at && (!below || p[from] < below[from])) below = p;
  }
  const near = above ?? below;
  return near ? line + near[to] - near[from] : line;
}
