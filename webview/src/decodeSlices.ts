// Decoding a graph without freezing the page: the msgpack bytes are fed to the decoder a
// slice at a time and the validation runs in steps (format.ts `fromObjectSteps`), and
// whenever the work since the last pause reaches a budget the decoder waits for a new task.
// A 4,000-op graph (2.3 MB) took one 145 ms task in a single call; here no task is much
// longer than the budget. The Graph is the one `decodeGraph` gives: the same decoder and
// the same validation, only paused. A file it refuses is decoded again in one call, so
// the error is `decodeGraph`'s, word for word.
import { Decoder } from "@msgpack/msgpack";
import { decodeGraph, fromObjectSteps, type Graph } from "./format";
import { nextTask } from "./tasks";

export interface SliceOptions {
  /** Work between two pauses, in ms (default 10: on a loaded machine a task's wall time is
   * several times its work, and it must still stay under the 50 ms of a "long task"). */
  budgetMs?: number;
  /** Bytes handed to the msgpack decoder at a time (default 16 KB, ~1 ms of decoding). */
  sliceBytes?: number;
  /** How to pause (default: a new task, `nextTask`). */
  pause?: () => Promise<void>;
  /** The clock (default `performance.now`). */
  now?: () => number;
}

/** Decode msgpack bytes into a validated Graph over as many tasks as it takes. */
export async function decodeGraphInSlices(bytes: Uint8Array | ArrayBuffer, opts: SliceOptions = {}): Promise<Graph> {
  const data = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (data.length === 0) return decodeGraph(data); // its "empty" FormatError
  try {
    return await decodeInSlices(data, opts);
  } catch {
    // A file the one-call path refuses gets its exact error (bad msgpack, a broken graph:
    // rare, and its message is what the user sees).
    return decodeGraph(data);
  }
}

/** The paused decode itself; its errors are the msgpack decoder's and the validation's. */
export async function decodeInSlices(data: Uint8Array, opts: SliceOptions = {}): Promise<Graph> {
  const budget = opts.budgetMs ?? 10;
  const sliceBytes = Math.max(1, opts.sliceBytes ?? 16 * 1024);
  const pause = opts.pause ?? nextTask;
  const now = opts.now ?? (() => performance.now());
  let start = now();
  const breathe = async (): Promise<void> => {
    if (now() - start < budget) return;
    await pause();
    start = now();
  };
  async function* slices(): AsyncGenerator<Uint8Array> {
    for (let at = 0; at < data.length; at += sliceBytes) {
      await breathe();
      yield data.subarray(at, at + sliceBytes);
    }
  }
  const raw = await new Decoder({ useBigInt64: false }).decodeAsync(slices());
  const steps = fromObjectSteps(raw);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await breathe();
  }
}
