// Turning anything thrown into a message a person can read (the worker's failures end up
// in the page's error state and status line).

/**
 * One readable line for whatever was thrown: Graphviz's WASM throws plain objects (after
 * running out of memory), which String() would turn into "[object Object]".
 */
export function errorText(e: unknown): string {
  if (e instanceof Error) return e.name && e.name !== "Error" ? `${e.name}: ${e.message}` : e.message;
  if (typeof e === "object" && e !== null) {
    const m = (e as { message?: unknown }).message;
    if (typeof m === "string" && m) return m;
    try {
      const json = JSON.stringify(e);
      if (json && json !== "{}") return `Graphviz failed: ${json.slice(0, 300)}`;
    } catch {
      /* fall through */
    }
    return "Graphviz failed (it may have run out of memory): open fewer modules";
  }
  return String(e);
}
