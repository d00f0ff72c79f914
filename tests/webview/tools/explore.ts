// Manual exploration: open a fixture, unfold, expand all; screenshots in tests/artifacts.
// Usage: node --import tsx tests/webview/tools/explore.ts gpt2
import { launch, open, shot, ready } from "../browser/browser";
(async () => {
  const b = await launch();
  const name = process.argv[2] ?? "gpt2";
  const o = await open(b, name);
  const p = o.page;
  await shot(p, `x-${name}-initial`);
  let t0 = Date.now();
  await p.click("[data-toggle=g0]").catch(() => {});
  await ready(p);
  console.log("toggle g0", Date.now() - t0, await p.locator("[data-role=status]").textContent());
  await shot(p, `x-${name}-g0`);
  t0 = Date.now();
  await p.click("[data-action=expand-all]");
  await p.waitForSelector("#torchscope[data-state=busy]", { timeout: 2000 }).catch(() => {});
  await ready(p, 120000);
  console.log("expand all", Date.now() - t0, await p.locator("[data-role=status]").textContent());
  await shot(p, `x-${name}-all`);
  await p.click("[data-action=fit]");
  await shot(p, `x-${name}-all-fit`);
  console.log(o.errors);
  await b.close();
})();
