// The standalone page's graph is base64 text in the page (2-5 MB for a big model): decoded
// a slice at a time, with a new task between slices, so the page never freezes on it.
import { nextTask } from "./tasks";

/** Characters per slice: a multiple of 4 (whole base64 quads), ~0.75 MB of bytes. */
const SLICE_CHARS = 1 << 20;

/** The bytes of base64 `text` (whitespace ignored); throws as `atob` does on bad input. */
export async function base64ToBytesInSlices(text: string, pause: () => Promise<void> = nextTask): Promise<Uint8Array> {
  const clean = text.replace(/\s+/g, "");
  const pad = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  const out = new Uint8Array(Math.max(0, Math.floor((clean.length * 3) / 4) - pad));
  let at = 0;
  for (let i = 0; i < clean.length; i += SLICE_CHARS) {
    if (i > 0) await pause();
    const bin = atob(clean.slice(i, i + SLICE_CHARS));
    for (let j = 0; j < bin.length; j++) out[at + j] = bin.charCodeAt(j);
    at += bin.length;
  }
  return at === out.length ? out : out.subarray(0, at);
}
