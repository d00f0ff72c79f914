// Which files a graph may open. A graph file names paths (a node's site, its class's
// definition, the frame the error came from) and the panel opens them on a click; a graph
// written elsewhere (or crafted) could name anything. Open only files that exist and are
// regular files; ask before opening one outside the workspace folders, unless it is the
// panel's own document, a document open already, or a library file of the interpreter (torch's
// `linear.py`, a site under site-packages): those are what a click into library code is for.
// Paths compare by their spelling or by their real paths (realPath.ts): the graph names a file
// by its real path, VS Code by the path its workspace folder was opened through.
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { realPath } from "./realPath";

export type OpenDecision = "open" | "ask" | "missing" | "not-a-file";

/** A library of the interpreter: an installed package, or the standard library. */
export function isLibraryFile(file: string): boolean {
  const parts = path.normalize(file).split(/[\\/]+/);
  if (parts.includes("site-packages") || parts.includes("dist-packages")) return true;
  // <prefix>/lib/python3.11/x.py (the standard library), also lib64 and Windows' Lib.
  const i = parts.findIndex((p, k) => /^(lib|lib64|Lib)$/.test(p) && /^python\d+(\.\d+)?t?$/.test(parts[k + 1] ?? ""));
  return i >= 0 || parts.some((p, k) => p === "Lib" && k > 0 && /^python/i.test(parts[k - 1] ?? ""));
}

/** `file` inside `folder` (or the folder itself), by path: as spelled, else with both's
 * symlinks resolved (a folder opened through a symlink, a site naming the real path). */
export function isInside(file: string, folder: string, caseInsensitive = process.platform === "win32"): boolean {
  return insideByPath(file, folder, caseInsensitive) || insideByPath(realPath(file), realPath(folder), caseInsensitive);
}

/** `file` inside `folder` (or the folder itself), by path as spelled. */
export function insideByPath(file: string, folder: string, caseInsensitive = process.platform === "win32"): boolean {
  const norm = (p: string): string => (caseInsensitive ? path.resolve(p).toLowerCase() : path.resolve(p));
  const rel = path.relative(norm(folder), norm(file));
  return rel === "" || (!!rel && !rel.startsWith("..") && !path.isAbsolute(rel));
}

export interface OpenContext {
  /** The workspace folders' paths. */
  folders: readonly string[];
  /** Files that need no question: the panel's own document, documents open already, files allowed before. */
  known: readonly string[];
}

/** A file VS Code has open already, or the user allowed before (spelled so, or the same real
 * path): no question, no look at what it is on disk. */
export function isKnown(file: string, ctx: OpenContext): boolean {
  const abs = path.resolve(file);
  if (ctx.known.some((k) => path.resolve(k) === abs)) return true;
  const real = realPath(abs);
  return ctx.known.some((k) => realPath(k) === real);
}

/** Where `file` stands, given what it is on disk (`kind`: undefined when it does not exist). */
export function openDecision(file: string, kind: "file" | "other" | undefined, ctx: OpenContext): OpenDecision {
  if (isKnown(file, ctx)) return "open";
  if (kind === undefined) return "missing";
  if (kind !== "file") return "not-a-file";
  if (ctx.folders.some((f) => isInside(file, f))) return "open";
  if (isLibraryFile(file)) return "open";
  return "ask";
}

/** What `file` is on disk: a regular file (through symlinks), something else, or nothing. */
export async function fileKind(file: string): Promise<"file" | "other" | undefined> {
  if (!path.isAbsolute(file)) return undefined;
  try {
    return (await fs.stat(file)).isFile() ? "file" : "other";
  } catch {
    return undefined;
  }
}

/** The innermost frame of a Python traceback text that is the user's code (not a library). */
export function userFrame(traceback: string): { file: string; line: number } | undefined {
  const frames = [...traceback.matchAll(/File "([^"]+)", line (\d+)/g)].map((m) => ({ file: m[1]!, line: Number(m[2]) }));
  return frames.filter((f) => !isLibraryFile(f.file) && !f.file.startsWith("<")).at(-1);
}
