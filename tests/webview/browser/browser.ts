// Shared Playwright helpers: Debian's Chromium, never a downloaded browser.
import type { Browser, Page } from "playwright-core";
import { mkdirSync } from "node:fs";
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
