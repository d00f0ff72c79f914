// The README's distributed picture, taken with Chromium from a real page: rank 0's graph of a
// 2-rank FSDP2 program (tests/artifacts/fixtures/fsdp2.html, `make webview-fixtures`), expanded,
// with the hover card of a parameter all-gather open.
//   node --import tsx tests/webview/tools/fsdp2-picture.ts [OUT.png]
import { join } from "node:path";
import { launch, open, ready, ROOT } from "../browser/browser";

async function main(): Promise<void> {
  const out = process.argv[2] ?? join(ROOT, "docs", "images", "viewer-fsdp2.png");
  const browser = await launch();
  try {
    const { page } = await open(browser, "fsdp2", { width: 1440, height: 900 });
    await page.click("[data-action=expand-all]");
    await ready(page);
    await page.click("[data-action=fit]");
    await page.waitForTimeout(300);
    await page.locator(".ts-node.ts-collective").nth(1).hover();
    await page.locator(".ts-tooltip").waitFor({ state: "visible" });
    await page.screenshot({ path: out });
    console.log(out);
  } finally {
    await browser.close();
  }
}

void main();
