import { launch, open, shot } from "/work/main/tests/webview/browser/browser.ts";
(async () => {
const b = await launch();
for (const name of ["gpt2", "resnet50", "error", "hostile"]) {
  try {
    const t0 = Date.now();
    const o = await open(b, name);
    console.log(name, "ready in", Date.now() - t0, "ms", o.errors, o.requests.filter(u => !u.startsWith("file:") && !u.startsWith("blob:") && !u.startsWith("data:")));
    await shot(o.page, `smoke-${name}`);
    console.log(await o.page.locator("[data-role=status]").textContent());
  } catch (e) { console.log(name, "FAILED", e); }
}
await b.close();
})();
