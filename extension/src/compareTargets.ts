// What a comparison panel compares, kept in its origin's target ("compare:head:Net"), so a
// reload or a re-trace knows it again, and what its sides are called. Pure.

export type CompareKind = "head" | "train" | "input" | "paused";
const KINDS: readonly CompareKind[] = ["head", "train", "input", "paused"];
const PREFIX = "compare:";

/** The two sides of each kind of comparison, as the page and the panel title name them. */
export const SIDES: Readonly<Record<CompareKind, { a: string; b: string }>> = {
  head: { a: "HEAD", b: "working copy" },
  train: { a: "eval mode", b: "training mode" },
  input: { a: "its input", b: "another input" },
  paused: { a: "previous paused trace", b: "last paused trace" },
};

/** The panel target of a comparison of `target` (a class, instance, factory or paused expression). */
export function compareTarget(kind: CompareKind, target: string): string {
  return `${PREFIX}${kind}:${target}`;
}

export function parseCompareTarget(t: string): { kind: CompareKind; target: string } | undefined {
  if (!t.startsWith(PREFIX)) return undefined;
  const rest = t.slice(PREFIX.length);
  const i = rest.indexOf(":");
  const kind = rest.slice(0, i) as CompareKind;
  if (i < 0 || !KINDS.includes(kind) || i === rest.length - 1) return undefined;
  return { kind, target: rest.slice(i + 1) };
}

export function compareTitle(kind: CompareKind, model: string): string {
  return `Compare ${model}: ${SIDES[kind].a} → ${SIDES[kind].b}`;
}
