// Builds the viewer: the layout worker first (its code becomes a string the page turns
// into a Blob URL, since workers can't load from file:// or webview resources), then the
// page bundle (viewer.js + viewer.css). Copies both into the Python package's static/
// folder, where render_html() inlines them into one self-contained HTML file.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
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
// viewer.js carries the worker inside it (the VS Code webview loads this one file);
// viewer-page.js does not: the standalone page carries the worker in its own inert
// <script type="text/plain"> and starts it before the main bundle is even parsed.
await build({
  ...common,
  entryPoints: { viewer: join(here, "src/main.ts") },
  outdir: dist,
  plugins: [workerPlugin(workerJs)],
});
await build({
  ...common,
  entryPoints: { "viewer-page": join(here, "src/main.ts") },
  outdir: dist,
  plugins: [workerPlugin("")],
});

mkdirSync(staticDir, { recursive: true });
for (const f of ["viewer.js", "viewer.css", "viewer-page.js", "layout.worker.js"]) {
  copyFileSync(join(dist, f), join(staticDir, f));
}
console.log(`webview built in ${Date.now() - t0} ms → webview/dist, python_helper/torchscope/static`);
