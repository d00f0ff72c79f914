// Opens pages in Chromium and reports, as JSON on stdout, whether the viewer in each drew.
// Used by the distribution tests (tests/dist, pytest), which check the report. The viewer
// may sit inside nested iframes (a notebook output inside a sandboxed renderer frame):
// `frames` is how many iframes deep it is, following the first iframe at each level.
// Usage: node --import tsx tests/webview/tools/drawn.ts SPEC.json
//   SPEC.json: [{"name": "cli", "url": "file:///tmp/x/page.html", "frames": 0}, ...]
import { readFileSync } from "node:fs";
import type { FrameLocator, Page } from "playwright-core";
import { launch, shot } from "../browser/browser";

interface Spec {
  name: string;
  url: string;
  frames: number;
}

interface Report {
  name: string;
  state: string | null;
  /** data-kind and data-path of every drawn box. */
  nodes: { kind: string | null; path: string | null }[];
  /** Page errors, console errors and warnings, dialogs: from every frame. */
  errors: string[];
  /** Requests to anything but file:, blob:, data: and about: URLs. */
  external: string[];
  /** Navigations of the top-level page after it loaded (a sandbox must prevent any). */
  topNavigations: string[];
  /** The state after clicking a box (the viewer must stay usable). */
  stateAfterClick: string | null;
  screenshot: string;
}

const LOCAL = /^(file|blob|data|about):/;

function emptyReport(name: string): Report {
  return { name, state: null, nodes: [], errors: [], external: [], topNavigations: [], stateAfterClick: null, screenshot: "" };
}

async function check(page: Page, spec: Spec, report: Report): Promise<void> {
  page.on("pageerror", (e) => report.errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => (m.type() === "error" || m.type() === "warning") && report.errors.push(`${m.type()}: ${m.text()}`));
  page.on("dialog", (d) => {
    report.errors.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  page.on("request", (r) => LOCAL.test(r.url()) || report.external.push(r.url()));
  await page.goto(spec.url);
  page.on("framenavigated", (f) => f === page.mainFrame() && report.topNavigations.push(f.url()));

  let scope: Page | FrameLocator = page;
  for (let i = 0; i < spec.frames; i++) scope = scope.frameLocator("iframe");
  const root = scope.locator("#torchscope");
  try {
    await scope.locator("#torchscope[data-state=ready]").waitFor({ timeout: 90_000 });
  } finally {
    report.state = await root.getAttribute("data-state", { timeout: 5_000 }).catch(() => null);
    report.screenshot = await shot(page, `dist-${spec.name}`);
  }
  report.nodes = await scope
    .locator(".ts-node")
    .evaluateAll((els) => els.map((e) => ({ kind: e.getAttribute("data-kind"), path: e.getAttribute("data-path") })));
  await scope.locator(".ts-node").first().click();
  await page.waitForTimeout(300);
  await scope.locator("#torchscope[data-state=ready]").waitFor({ timeout: 30_000 });
  report.stateAfterClick = await root.getAttribute("data-state");
}

async function main(): Promise<void> {
  const specs = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as Spec[];
  const browser = await launch();
  const reports: Report[] = [];
  try {
    for (const spec of specs) {
      const report = emptyReport(spec.name);
      reports.push(report);
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      try {
        await check(await ctx.newPage(), spec, report);
      } catch (e) {
        report.errors.push(`check failed: ${(e as Error).message}`);
      } finally {
        await ctx.close();
      }
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(reports));
}

void main();
