// Builds the viewer: the layout worker first (its code becomes a string the page turns
// into a Blob URL, since workers can't load from file:// or webview resources), then the
// page bundle (viewer-page.js, without the worker; viewer.css). Copies
// them and the standalone page's template (src/page.html) into the Python package's
// static/ folder, where render_html() (torchscope/html.py) and the extension's HTML export
// (extension/src/export.ts) fill the template into one self-contained HTML file.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const staticDir = join(here, "..", "python_helper", "torchscope", "static");
const minify = !process.argv.includes("--dev");
const common = {
  bundle: true,
  format: "iife",
  target: "es2022",
  platform: "browser",
  minify,
  legalComments: "none",
  charset: "ascii", // keep the inlined WASM bytes escaped, safe inside <script>
  logLevel: "warning",
};

const t0 = Date.now();
const worker = await build({ ...common, entryPoints: [join(here, "src/layout.worker.ts")], write: false });
const workerJs = worker.outputFiles[0].text;
mkdirSync(dist, { recursive: true });
writeFileSync(join(dist, "layout.worker.js"), workerJs);

const workerPlugin = (contents) => ({
  name: "layout-worker",
  setup(b) {
    b.onResolve({ filter: /^virtual:layout-worker$/ }, (a) => ({ path: a.path, namespace: "worker" }));
    b.onLoad({ filter: /.*/, namespace: "worker" }, () => ({ contents, loader: "text" }));
  },
});
// viewer-page.js leaves the worker out: the VS Code webview fetches layout.worker.js
// beside it, and the standalone page carries the worker in its own inert
// <script type="text/plain"> and starts it before the main bundle is even parsed.
await build({
  ...common,
  entryPoints: { "viewer-page": join(here, "src/main.ts") },
  outdir: dist,
  plugins: [workerPlugin("")],
});
renameSync(join(dist, "viewer-page.css"), join(dist, "viewer.css")); // (the page's one style sheet)

copyFileSync(join(here, "src/page.html"), join(dist, "page.html"));

mkdirSync(staticDir, { recursive: true });
for (const f of ["viewer.css", "viewer-page.js", "layout.worker.js", "page.html"]) {
  copyFileSync(join(dist, f), join(staticDir, f));
}
// (the one-file bundle of earlier builds, the worker inside it: nothing reads it now, and the
// package would ship its 2 MB)
for (const dir of [dist, staticDir]) rmSync(join(dir, "viewer.js"), { force: true });
console.log(`webview built in ${Date.now() - t0} ms → webview/dist, python_helper/torchscope/static`);
