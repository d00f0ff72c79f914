// Saving what the viewer exports (SVG, PNG) and writing a standalone HTML page of a graph:
// the page `torchscope trace -o x.html` writes (python_helper/torchscope/html.py), from the
// same template (webview/src/page.html, in the viewer's folder as page.html) filled the
// same way: the layout worker in an inert element started before the main bundle, the
// viewer, CSS and data inlined, a strict nonce CSP.
import * as crypto from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import * as vscode from "vscode";
import type { ViewState } from "./protocol";
import { showInformation } from "./notify";

function inlineScript(js: string): string {
  // Inside <script>, only "</script" and "<!--" can end or confuse the element.
  return js.replace(/<\/(script)/gi, "<\\/$1").replace(/<!--/g, "<\\!--");
}

function inlineStyle(css: string): string {
  return css.replace(/<\/(style)/gi, "<\\/$1");
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" })[c]!);
}

/** The template with each `{{name}}` replaced by `values[name]`, in one pass (so a value that
 * contains `{{…}}`, as a bundle may, is left as it is). As html.py's `fill_page`. */
export function fillPage(template: string, values: Record<string, string>): string {
  const missing = [...template.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]!).filter((k) => !(k in values));
  if (missing.length) throw new Error(`no value for ${[...new Set(missing)].sort().join(", ")} in the page template`);
  return template.replace(/\{\{(\w+)\}\}/g, (_m, k: string) => values[k]!);
}

/** The viewer's files the page is made of. */
export interface PageParts {
  template: string;
  worker: string;
  viewer: string;
  css: string;
}

/** One self-contained page that shows `bytes` (torchscope.graph msgpack) offline, opening at
 * `view` (the panel's expansion) when given. */
export function standaloneHtml(
  bytes: Uint8Array,
  parts: PageParts,
  title: string,
  nonce = crypto.randomBytes(18).toString("base64url"),
  view?: ViewState,
): string {
  return fillPage(parts.template, {
    nonce,
    title: escapeHtml(title),
    style: inlineStyle(parts.css),
    view: view ? escapeHtml(JSON.stringify(view)) : "",
    graph: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"),
    worker: inlineScript(parts.worker),
    viewer: inlineScript(parts.viewer),
  });
}

/** The page from the viewer's folder (the split bundles, as the panel loads them). */
export async function standaloneHtmlFromBundle(bytes: Uint8Array, viewerDir: string, title: string, view?: ViewState): Promise<string> {
  const read = (f: string): Promise<string> => fs.readFile(path.join(viewerDir, f), "utf8");
  const [template, worker, viewer, css] = await Promise.all([
    read("page.html"),
    read("layout.worker.js"),
    read("viewer-page.js"),
    read("viewer.css"),
  ]);
  return standaloneHtml(bytes, { template, worker, viewer, css }, title, undefined, view);
}

const FILTERS: Record<string, Record<string, string[]>> = {
  "image/svg+xml": { "SVG image": ["svg"] },
  "image/png": { "PNG image": ["png"] },
  "text/html": { "HTML page": ["html"] },
};

/** Where the saved notice's Open button shows a file: an image in VS Code's own preview, a
 * page (the interactive viewer, which needs a browser) outside it. */
export function opensIn(mime: string): "editor" | "browser" {
  return mime === "text/html" ? "browser" : "editor";
}

/** Ask where to save, then write; the notice that says so opens the file. Returns the file written, if any. */
export async function saveAs(name: string, mime: string, data: Uint8Array): Promise<vscode.Uri | undefined> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const target = await vscode.window.showSaveDialog({
    defaultUri: folder ? vscode.Uri.joinPath(folder, name) : undefined,
    filters: FILTERS[mime] ?? {},
    title: `Save ${name}`,
  });
  if (!target) return undefined;
  await vscode.workspace.fs.writeFile(target, data);
  void showInformation(`torchscope: saved ${vscode.workspace.asRelativePath(target)}`, "Open").then((c) => {
    if (c !== "Open") return;
    if (opensIn(mime) === "browser") void vscode.env.openExternal(target);
    else void vscode.commands.executeCommand("vscode.open", target);
  });
  return target;
}
