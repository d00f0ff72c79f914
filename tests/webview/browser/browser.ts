// Shared Playwright helpers: Debian's Chromium, never a downloaded browser.
import type { Browser, Page } from "playwright-core";
import { mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const ROOT = join(import.meta.dirname, "..", "..", "..");
export const FIXTURES = process.env.TORCHSCOPE_FIXTURES ?? join(ROOT, "tests", "artifacts", "fixtures");
export const ARTIFACTS = join(ROOT, "tests", "artifacts", "screenshots");

export { launch } from "../../chromium";

export interface Opened {
  page: Page;
  errors: string[];
  requests: string[];
}

/** Open a fixture page from disk and wait for the first drawn layout. */
export async function open(browser: Browser, name: string, opts: { width?: number; height?: number; dark?: boolean } = {}): Promise<Opened> {
  const ctx = await browser.newContext({
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
    colorScheme: opts.dark ? "dark" : "light",
    acceptDownloads: true,
  });
  const page = await ctx.newPage();
  const errors: string[] = [];
  const requests: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => (m.type() === "error" || m.type() === "warning") && errors.push(`${m.type()}: ${m.text()}`));
  page.on("dialog", (d) => {
    errors.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(pathToFileURL(join(FIXTURES, `${name}.html`)).href);
  await ready(page);
  return { page, errors, requests };
}

export async function ready(page: Page, timeout = 30_000): Promise<void> {
  await page.waitForSelector("#torchscope[data-state=ready]", { timeout });
}

export async function shot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

export interface VsCodePage {
  page: Page;
  errors: string[];
  close: () => Promise<void>;
}

/**
 * The VS Code webview page as GraphPanel writes it: the page bundle, and the worker's code
 * named in <meta name="torchscope-worker"> and fetched by the page; a dark theme's variables,
 * `acquireVsCodeApi` keeping the posted messages in `window.__posted` and the webview state.
 * Served over HTTP (a fetch from file:// is refused), the worker after `workerDelayMs` or
 * (null) never (404); `init`: a script run in the page before its own. Resolves once the
 * viewer said "ready".
 */
export async function vscodePage(
  browser: Browser,
  opts: { workerDelayMs?: number | null; width?: number; height?: number; init?: string } = {},
): Promise<VsCodePage> {
  const { workerDelayMs = 0, width = 1100, height = 750 } = opts;
  const dist = join(ROOT, "webview", "dist");
  const html = `<!DOCTYPE html><html><head><meta name="torchscope-worker" content="/layout.worker.js">
<link rel="stylesheet" href="/viewer.css"></head>
<body class="vscode-dark" style="--vscode-editor-background: rgb(30, 31, 32); --vscode-editor-foreground: rgb(200, 201, 202); --vscode-debugIcon-breakpointCurrentStackframeForeground: rgb(255, 204, 0)">
<div id="torchscope"><p>Tracing…</p></div>
<script>
window.__posted = []; window.__state = undefined;
function acquireVsCodeApi() {
  return { postMessage: (m) => window.__posted.push(m), getState: () => window.__state, setState: (s) => { window.__state = s; } };
}
</script>
<script src="/viewer-page.js"></script></body></html>`;
  const server = createServer((req, res) => {
    const send = (type: string, body: string | Buffer) => res.writeHead(200, { "content-type": type }).end(body);
    if (req.url === "/") send("text/html", html);
    else if (req.url === "/viewer-page.js") send("text/javascript", readFileSync(join(dist, "viewer-page.js")));
    else if (req.url === "/viewer.css") send("text/css", readFileSync(join(dist, "viewer.css")));
    else if (req.url === "/layout.worker.js" && workerDelayMs !== null)
      setTimeout(() => send("text/javascript", readFileSync(join(dist, "layout.worker.js"))), workerDelayMs);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const ctx = await browser.newContext({ viewport: { width, height } });
  const page = await ctx.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  if (opts.init) await page.addInitScript(opts.init);
  await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  await page.waitForFunction(() => (window as any).__posted.some((m: { type: string }) => m.type === "ready"));
  return {
    page,
    errors,
    close: async () => {
      await ctx.close();
      server.close();
    },
  };
}
