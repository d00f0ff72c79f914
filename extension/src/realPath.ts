// Paths as the graph names them. The Python side writes a node's `site`/`defn` files with their
// symlinks resolved (the traced file's real path), while VS Code names a workspace folder and
// its documents as they were opened: through a symlinked folder (`~/link-ws` → `~/p6`), or a
// symlinked system folder (macOS's /tmp → /private/tmp), the two spell one file differently.
// The extension compares them by their real paths, and maps an editor's path to the graph's.
import * as fs from "node:fs";
import * as path from "node:path";

const MAX_CACHED = 512;
/** Absolute path → its real path, for paths that exist (a symlink changes seldom; the cache is
 * dropped whole when full). */
const cache = new Map<string, string>();

/**
 * `file` with its symlinks resolved, absolute and normalised. A path that does not exist (or
 * can't be read) keeps its missing tail and has the part that exists resolved, as Python's
 * `os.path.realpath` does; never throws.
 */
export function realPath(file: string): string {
  const abs = path.resolve(file);
  const hit = cache.get(abs);
  if (hit !== undefined) return hit;
  let tail = "";
  for (let p = abs; ; ) {
    try {
      const real = fs.realpathSync(p);
      if (!tail) {
        if (cache.size >= MAX_CACHED) cache.clear();
        cache.set(abs, real);
        return real;
      }
      return path.join(real, tail);
    } catch {
      const up = path.dirname(p);
      if (up === p) return abs;
      tail = tail ? path.join(path.basename(p), tail) : path.basename(p);
      p = up;
    }
  }
}
