// The README's overlay picture, taken with Chromium from a real page: GPT-2's standalone
// page (tests/artifacts/fixtures/gpt2.html, `make webview-fixtures`) coloured by time,
// the heaviest op revealed from the table (with --hover, its hover card open).
//   node --import tsx tests/webview/tools/overlay-picture.ts [OUT.png] [measure] [--hover]
import { join } from "node:path";
import { launch, open, ready, ROOT } from "../browser/browser";

async function main(): Promise<void> {
  const out = process.argv[2] ?? join(ROOT, "docs", "images", "viewer-overlay-time.png");
  const measure = process.argv[3] ?? "time";
  const browser = await launch();
  try {
    const { page } = await open(browser, "gpt2", { width: 1440, height: 800 });
    await page.selectOption("select[data-role=overlay]", measure);
    await page.click("[data-role=table] tbody tr[data-id]");
    await ready(page);
    await page.waitForTimeout(300);
    if (process.argv.includes("--hover")) {
      await page.locator(".ts-nodes > g[data-selected=true]").hover();
      await page.locator(".ts-tooltip").waitFor({ state: "visible" });
    }
    await page.screenshot({ path: out });
    console.log(out);
  } finally {
    await browser.close();
  }
}

void main();
