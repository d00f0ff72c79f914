// Bundles the extension (node, CommonJS; `vscode` is provided by the host) into
// extension/dist/extension.js.
import { build } from "esbuild";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const t0 = Date.now();
await build({
  entryPoints: [join(here, "src/extension.ts")],
  outfile: join(here, "dist/extension.js"),
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["vscode"],
  minify: !process.argv.includes("--dev"),
  sourcemap: process.argv.includes("--dev") ? "inline" : false,
  legalComments: "none",
  logLevel: "warning",
});
console.log(`extension built in ${Date.now() - t0} ms → extension/dist/extension.js`);
