// Rough timings by hand (the real benchmarks live in bench/): first draw, one expand,
// expand all, and the longest main-thread task. Usage: node --import tsx tests/webview/tools/perf.ts llama32
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { FIXTURES, launch, ready, shot } from "../browser/browser";

(async () => {
  const name = process.argv[2] ?? "gpt2";
  const b = await launch();
  const page = await b.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("console", (m) => console.log("console:", m.text()));
  await page.addInitScript(() => {
    (globalThis as any).__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) (globalThis as any).__long.push(Math.round(e.duration));
    }).observe({ type: "longtask", buffered: true });
  });
  const t0 = Date.now();
  await page.goto(pathToFileURL(join(FIXTURES, `${name}.html`)).href);
  await ready(page, 300_000);
  const first = await page.evaluate(() => performance.now());
  console.log(`${name}: first drawn at ${Math.round(first)} ms after navigation start (wall ${Date.now() - t0} ms)`);
  console.log(
    await page.evaluate(() => {
      const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      return `responseEnd ${Math.round(n.responseEnd)} domInteractive ${Math.round(n.domInteractive)} dcl ${Math.round(n.domContentLoadedEventStart)}`;
    }),
  );
  console.log(
    await page.evaluate(() =>
      performance
        .getEntriesByType("mark")
        .map((m) => `${m.name} ${Math.round(m.startTime)}`)
        .join("\n"),
    ),
  );
  const toggle = page.locator("[data-toggle]").nth(1);
  let t = Date.now();
  await toggle.click();
  await ready(page, 300_000);
  console.log(`one expand: ${Date.now() - t} ms`);
  t = Date.now();
  await page.click("[data-action=expand-all]");
  await page.waitForSelector("#torchscope[data-state=busy]", { timeout: 1000 }).catch(() => {});
  await ready(page, 600_000);
  console.log(`expand all: ${Date.now() - t} ms; ${await page.locator("[data-role=status]").textContent()}`);
  await shot(page, `perf-${name}-all`);
  console.log("long tasks (ms):", await page.evaluate(() => (globalThis as any).__long));
  await b.close();
})();
