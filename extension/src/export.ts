// Saving what the viewer exports (SVG, PNG) and writing a standalone HTML page of a
// graph: the same page `torchscope trace -o x.html` writes (python_helper/torchscope/html.py),
// with the viewer bundle, CSS and data inlined under a strict CSP.
import * as crypto from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import * as vscode from "vscode";

function inlineScript(js: string): string {
  // Inside <script>, only "</script" and "<!--" can end or confuse the element.
  return js.replace(/<\/(script)/gi, "<\\/$1").replace(/<!--/g, "<\\!--");
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" })[c]!);
}

/** One self-contained page that shows `bytes` (torchscope.graph msgpack) offline. */
export function standaloneHtml(bytes: Uint8Array, js: string, css: string, title: string, nonce = crypto.randomBytes(18).toString("base64url")): string {
  const csp =
    "default-src 'none'; " +
    `script-src 'nonce-${nonce}' 'wasm-unsafe-eval'; ` +
    `style-src 'nonce-${nonce}'; ` +
    "worker-src blob:; img-src blob: data:; font-src 'none'; connect-src 'none'; " +
    "base-uri 'none'; form-action 'none'";
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  return (
    "<!DOCTYPE html>\n" +
    '<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">\n` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    `<title>${escapeHtml(title)}</title>\n` +
    `<style nonce="${nonce}">${css.replace(/<\/(style)/gi, "<\\/$1")}</style>\n` +
    "</head>\n<body>\n" +
    '<div id="torchscope"></div>\n' +
    `<script type="application/octet-stream" id="torchscope-graph">${data}</script>\n` +
    `<script nonce="${nonce}">${inlineScript(js)}</script>\n` +
    "</body>\n</html>\n"
  );
}

export async function standaloneHtmlFromBundle(bytes: Uint8Array, viewerDir: string, title: string): Promise<string> {
  const [js, css] = await Promise.all([
    fs.readFile(path.join(viewerDir, "viewer.js"), "utf8"),
    fs.readFile(path.join(viewerDir, "viewer.css"), "utf8"),
  ]);
  return standaloneHtml(bytes, js, css, title);
}

const FILTERS: Record<string, Record<string, string[]>> = {
  "image/svg+xml": { "SVG image": ["svg"] },
  "image/png": { "PNG image": ["png"] },
  "text/html": { "HTML page": ["html"] },
};

/** Ask where to save, then write. Returns the file written, if any. */
export async function saveAs(name: string, mime: string, data: Uint8Array): Promise<vscode.Uri | undefined> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const target = await vscode.window.showSaveDialog({
    defaultUri: folder ? vscode.Uri.joinPath(folder, name) : undefined,
    filters: FILTERS[mime] ?? {},
    title: `Save ${name}`,
  });
  if (!target) return undefined;
  await vscode.workspace.fs.writeFile(target, data);
  void vscode.window.showInformationMessage(`torchscope: saved ${vscode.workspace.asRelativePath(target)}`);
  return target;
}
