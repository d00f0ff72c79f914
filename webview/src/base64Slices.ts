// The standalone page's graph is base64 text in the page (2-5 MB for a big model): decoded
// a slice at a time, with a new task between slices, so the page never freezes on it (one
// `atob` of the whole text, after stripping its whitespace, was a task of ~0.1 s).
import { nextTask } from "./tasks";

/** Characters of the page's text per slice (~190 KB of bytes). */
const SLICE_CHARS = 1 << 18;

/** The bytes of base64 `text` (whitespace ignored); throws as `atob` does on bad input. */
export async function base64ToBytesInSlices(text: string, pause: () => Promise<void> = nextTask): Promise<Uint8Array> {
  const out = new Uint8Array(Math.ceil((text.length * 3) / 4));
  let at = 0;
  let carry = ""; // characters of an unfinished quad, for the next slice
  for (let i = 0; i < text.length; i += SLICE_CHARS) {
    if (i > 0) await pause();
    const last = i + SLICE_CHARS >= text.length;
    const s = carry + text.slice(i, i + SLICE_CHARS).replace(/\s+/g, "");
    const whole = last ? s.length : s.length - (s.length % 4);
    carry = s.slice(whole);
    const bin = atob(s.slice(0, whole));
    for (let j = 0; j < bin.length; j++) out[at + j] = bin.charCodeAt(j);
    at += bin.length;
  }
  return out.subarray(0, at);
}
