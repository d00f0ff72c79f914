// Real 2-rank programs (torchrun, gloo, CPU; rank 0's graph, tests/webview/make_fixtures.py)
// in Chromium: collectives drawn distinctly with their group and bytes, the FSDP2 wrapper as a
// mark on each module, a DTensor edge's hover with its local and global shapes, placements and
// mesh, and the rank in the title.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { launch, open, ready, shot } from "./browser";

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

async function hoverText(page: Page, selector: string): Promise<string> {
  await page.locator(selector).first().hover();
  const tip = page.locator(".ts-tooltip");
  await tip.waitFor({ state: "visible" });
  const text = (await tip.textContent()) ?? "";
  await page.mouse.move(2, 300);
  return text;
}

describe("FSDP2, rank 0 of 2", () => {
  let page: Page;
  let errors: string[];
  before(async () => {
    ({ page, errors } = await open(browser, "fsdp2", { width: 1440, height: 900 }));
  });

  test("the rank in the title; the fully_shard mark on the model and its blocks", async () => {
    assert.match((await page.locator(".ts-model").textContent())!, /^Net · rank 0 of 2$/);
    const subs = await page.locator(".ts-cluster-head .ts-sub, .ts-node[data-kind=module] .ts-sub").allTextContents();
    assert.ok(
      subs.some((s) => s.includes("[fully_shard]")),
      subs.join(" | "),
    );
    assert.match((await page.locator("[data-role=status]").textContent())!, /3 collectives/);
  });

  test("expanded, the all-gathers are drawn as collectives, with their group and bytes", async () => {
    await page.click("[data-action=expand-all]");
    await ready(page);
    // one parameter all-gather per fully_shard module (the root's too: the program's first forward)
    const gathers = page.locator(".ts-node.ts-collective[data-collective=true]");
    assert.equal(await gathers.count(), 3);
    assert.deepEqual(await gathers.locator(".ts-label").allTextContents(), Array(3).fill("⇄ all_gather_into_tensor"));
    // its own colours: not those of a plain op
    const stroke = (sel: string) =>
      page
        .locator(sel)
        .first()
        .locator(".ts-box")
        .evaluate((e) => getComputedStyle(e).stroke);
    assert.notEqual(await stroke(".ts-node.ts-collective"), await stroke(".ts-node[data-kind=op]:not(.ts-collective)"));
    const text = await hoverText(page, ".ts-node.ts-collective");
    assert.match(text, /collective\s*true/);
    assert.match(text, /group_size\s*2/);
    assert.match(text, /bytes\s*\d+/);
    await page.click("[data-action=fit]");
    await shot(page, "fsdp2-expanded");
    assert.deepEqual(errors, []);
  });
});

describe("tensor parallel, rank 0 of 2", () => {
  test("a sharded edge's hover: this rank's shard, the whole tensor, placements, mesh", async () => {
    const { page, errors } = await open(browser, "tensor_parallel", { width: 1280, height: 800 });
    await page.click("[data-action=expand-all]");
    await ready(page);
    assert.equal(await page.locator(".ts-node.ts-collective").count(), 1);
    // the two linears read DTensors: up a replicated input, down its shard of up's output
    const linears = page.locator(".ts-node[data-kind=op]", { hasText: /^linear$/ });
    assert.equal(await linears.count(), 2);
    const texts: string[] = [];
    for (let i = 0; i < 2; i++) texts.push(await hoverText(page, `.ts-node[data-id="${await linears.nth(i).getAttribute("data-id")}"]`));
    assert.ok(
      texts.some((t) => /4×16 float32 \(local\) of 4×16 Replicate\(\) on cpu\[tp=2\]/.test(t)),
      texts.join("\n"),
    );
    assert.ok(
      texts.some((t) => /4×32 float32 \(local\) of 4×64 Shard\(1\) on cpu\[tp=2\]/.test(t)),
      texts.join("\n"),
    );
    await shot(page, "tensor-parallel-expanded");
    assert.deepEqual(errors, []);
  });
});
