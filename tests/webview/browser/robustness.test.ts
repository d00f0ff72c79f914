// Graphs no tidy model makes: thousands of ops at one level, a 10,000-deep chain, more
// boxes than Graphviz can lay out, broken files, megabyte labels. The page draws what it
// can, says what it doesn't, and is never "ready" over a failed layout.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { decode, encode } from "@msgpack/msgpack";
import type { Browser, Page } from "playwright-core";
import { FIXTURES, ROOT, launch, open, ready, shot } from "./browser";

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const state = (page: Page): Promise<string | null> => page.locator("#torchscope").getAttribute("data-state");
const status = async (page: Page): Promise<string> => (await page.locator("[data-role=status]").textContent()) ?? "";

async function fit(page: Page): Promise<void> {
  await page.click("[data-action=fit]");
  await page.waitForTimeout(300); // drawing near the window catches up in chunks
}

/** A standalone page of graph `data` (the hostile fixture's page with other bytes). */
function pageFile(name: string, data: Uint8Array): string {
  const html = readFileSync(join(FIXTURES, "hostile.html"), "utf8").replace(
    /(id="torchscope-graph">)[^<]*/,
    (_m, tag: string) => tag + Buffer.from(data).toString("base64"),
  );
  const file = join(FIXTURES, `${name}.html`);
  writeFileSync(file, html);
  return file;
}

describe("long runs of ops at one level", () => {
  test("5,000 ops (`x = x + 1` in a loop) draw as 50 segments that open", async () => {
    const o = await open(browser, "flat5000", { width: 1000, height: 800 });
    const page = o.page;
    assert.equal(await state(page), "ready");
    assert.doesNotMatch(await status(page), /failed/i);
    assert.match(await status(page), /5000 ops · .* · 52 drawn/);
    await shot(page, "flat5000-initial");
    await fit(page);
    const segs = page.locator(".ts-node[data-kind=segment]");
    assert.equal(await segs.count(), 50);
    assert.match((await segs.first().textContent())!, /calls 1–100 of 5,000.*add ×100/);
    // Open the third segment with its +: a frame of its 100 calls, brought into view.
    await page.keyboard.press("0");
    const third = segs.nth(2);
    const key = (await third.getAttribute("data-key"))!;
    await page.click(`[data-toggle="${key}"]`);
    await ready(page);
    const frame = page.locator(`.ts-cluster[data-key="${key}"]`);
    assert.equal(await frame.count(), 1);
    assert.match((await page.locator(`[data-head="${key}"]`).textContent())!, /calls 201–300 of 5,000/);
    await page.waitForTimeout(300);
    const s = (await page.locator(".ts-svg").boundingBox())!;
    const f = (await frame.boundingBox())!;
    assert.ok(f.y >= s.y - 1 && f.x >= s.x - 1, "its header is in view");
    assert.ok((await page.locator(".ts-node[data-kind=op]").count()) > 5);
    await shot(page, "flat5000-segment-open");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });

  test("50,000 calls: the folds write their counts as people read them; FLOPs all 0 says so", async () => {
    // "add ×10000" stood under "calls 1–10,000 of 50,000"; with every add at 0 FLOPs the table
    // said "Heaviest 0 by FLOPs" and the legend "nothing drawn has a value"
    const o = await open(browser, "flat50000", { width: 1000, height: 800 });
    const page = o.page;
    await fit(page);
    const segs = page.locator(".ts-node[data-kind=segment]");
    assert.equal(await segs.count(), 5);
    assert.match((await segs.first().textContent())!, /calls 1–10,000 of 50,000.*add ×10,000/);
    await page.selectOption("select[data-role=overlay]", "flops");
    const legend = page.locator("[data-role=legend]");
    await legend.waitFor();
    assert.match((await legend.textContent())!, /every drawn node has 0/);
    const table = (await page.locator("[data-role=table]").textContent())!;
    assert.doesNotMatch(table, /Heaviest 0/);
    assert.match(table, /every node has 0/);
    // 0 is the pale end of the scale
    assert.deepEqual(await segs.evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.heat ?? NaN))), [0, 0, 0, 0, 0]);
    await shot(page, "flat50000-flops-zero");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });

  test("50,000 ops draw; search steps into the segments to one op", async () => {
    const o = await open(browser, "flat50000", { width: 1000, height: 800 });
    const page = o.page;
    assert.equal(await state(page), "ready");
    assert.match(await status(page), /50000 ops · .* · 7 drawn/);
    await fit(page);
    assert.equal(await page.locator(".ts-node[data-kind=segment]").count(), 5);
    await page.fill("[data-role=search]", "add");
    assert.match((await page.locator("[data-role=search-count]").textContent())!, /^50000 found/);
    await page.press("[data-role=search]", "Enter");
    await ready(page);
    const cur = page.locator(".ts-current");
    await cur.waitFor();
    assert.equal(await cur.getAttribute("data-kind"), "op");
    assert.equal(await page.locator(".ts-cluster[data-kind=segment]").count(), 2, "one segment open per level");
    await shot(page, "flat50000-search");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });
});

describe("views too big or too deep for Graphviz", () => {
  test("a 10,000-deep chain of module calls opens; Expand all opens as many levels as can be drawn", async () => {
    const o = await open(browser, "deep10000");
    const page = o.page;
    assert.equal(await state(page), "ready");
    await page.click("[data-action=expand-all]");
    await ready(page);
    const notice = page.locator("[data-role=notice]");
    await notice.waitFor({ state: "visible" });
    assert.match((await notice.textContent())!, /Expanded 100 levels deep: everything at once would be too many nodes to draw/);
    assert.equal(await page.locator("[data-role=depth]").textContent(), "100");
    assert.equal(await state(page), "ready");
    assert.match(await status(page), /· 3 drawn/); // input, output and the box inside the frames
    await fit(page);
    assert.equal(await page.locator(".ts-cluster[data-kind=module]").count(), 100);
    await shot(page, "deep10000-expand-all");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });

  test("a view of more than 6,000 boxes is not drawn: the drawn one stays, with a message", async () => {
    const o = await open(browser, "toomany");
    const page = o.page;
    assert.match(await status(page), /· 72 drawn/);
    await page.click(".ts-svg", { position: { x: 5, y: 5 } });
    await page.keyboard.press("e");
    await ready(page);
    const notice = page.locator("[data-role=notice]");
    await notice.waitFor({ state: "visible" });
    assert.match((await notice.textContent())!, /Expanded 1 level deep: everything at once would be too many nodes to draw \(6,000 boxes at most/);
    // Asking for depth 2 directly: refused before any layout, the view stays as it was.
    await page.keyboard.press("2");
    await page.waitForFunction(() => /Not drawn/.test(document.querySelector("[data-role=notice]")?.textContent ?? ""));
    assert.match((await notice.textContent())!, /^Not drawn: more than 6,000 boxes: too many nodes to draw at once; expand fewer\.$/);
    await ready(page);
    assert.match(await status(page), /· 72 drawn/);
    assert.equal(await page.locator("[data-role=depth]").textContent(), "1", "the depth shown is the one drawn");
    await shot(page, "toomany-refused");
    // One module opens fine.
    await page.locator("[data-toggle]").nth(1).click();
    await ready(page);
    assert.ok(await notice.isHidden(), "the message goes with the next drawn view");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });
});

describe("files that are broken", () => {
  const GOLDEN = join(ROOT, "tests", "golden", "mlp.graph.msgpack");
  const CASES = JSON.parse(readFileSync(join(ROOT, "tests", "golden", "malformed.json"), "utf8")).cases as {
    name: string;
    set?: [(string | number)[], unknown];
    append?: [(string | number)[], unknown];
  }[];

  async function pageFor(name: string, data: Uint8Array): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    await page.goto(pathToFileURL(pageFile(name, data)).href);
    await page.waitForSelector("#torchscope[data-state=error]", { timeout: 10_000 });
    return page;
  }

  /** The golden graph after `change`, decoded as the Python reader would take it. */
  function golden(change: (raw: Record<string, any>) => void): Uint8Array {
    const raw = decode(readFileSync(GOLDEN)) as Record<string, any>;
    change(raw);
    return encode(raw);
  }

  // QA: a fractional id crashed the layout, the start-up or the banner's click with a raw
  // TypeError; a nameless node was a blank box; an error at node 99 a banner that did nothing
  for (const [which, change, pattern] of [
    ["edge src 1.5", (g) => (g.edges[0].src = 1.5), /edge 0: field "src" should be a whole number/],
    ["edge dst 2.9999", (g) => (g.edges[0].dst = 2.9999), /edge 0: field "dst" should be a whole number/],
    ["node parent 1.5", (g) => (g.nodes[3].parent = 1.5), /node 3: field "parent" should be a whole number/],
    [
      "error at node 4.5",
      (g) => (g.error = { type: "X", message: "boom", node: 4.5, traceback: [] }),
      /error: field "node" should be a whole number/,
    ],
    ["node without a name", (g) => delete g.nodes[5].name, /node 5: no field "name"/],
    ["node named nil", (g) => (g.nodes[5].name = null), /node 5: field "name" should be a string/],
    ["error at a missing node", (g) => (g.error = { type: "X", message: "boom", node: 99, traceback: [] }), /error names missing node 99/],
  ] as [string, (g: Record<string, any>) => void, RegExp][]) {
    test(`refused with one line, never a TypeError: ${which}`, async () => {
      const page = await pageFor(`bad-${which.replace(/\W+/g, "-")}`, golden(change));
      const text = (await page.locator(".ts-fatal").textContent())!;
      assert.match(text, /This file can't be shown/);
      assert.match(text, pattern);
      assert.doesNotMatch(text, /TypeError/);
      await page.context().close();
    });
  }

  for (const [which, pattern] of [
    ["version 0", /version 0 is not a valid version/],
    ["parent is an op", /node 7: parent 3 is an op, not a module call/],
    ["group member is an op", /group 1: member 18 is not a module call \(it is op\)/],
    ["node in two groups", /group 1: node 5 is already a member of group 0/],
  ] as const) {
    test(`one clear message, nothing hidden silently: ${which}`, async () => {
      const c = CASES.find((x) => x.name === which)!;
      const raw = decode(readFileSync(GOLDEN)) as Record<string, any>;
      const [path, value] = (c.set ?? c.append)!;
      let obj = raw;
      for (const k of path.slice(0, -1)) obj = obj[k];
      if (c.set) obj[path.at(-1)!] = value;
      else obj[path.at(-1)!].push(value);
      const page = await pageFor(`bad-${which.replace(/\W+/g, "-")}`, encode(raw));
      const text = (await page.locator(".ts-fatal").textContent())!;
      assert.match(text, /This file can't be shown/);
      assert.match(text, pattern);
      await page.context().close();
    });
  }

  test("a megabyte-long name is cut short in its box and whole (up to a limit) in the hover", async () => {
    const o = await open(browser, "hugelabel");
    const page = o.page;
    const huge = page.locator('.ts-node[data-kind=module]:not([data-path=""])');
    assert.equal(await huge.count(), 1);
    const title = (await huge.locator(".ts-title").textContent())!;
    assert.ok([...title].length <= 60 && title.startsWith("NNNN") && title.includes("…"), title);
    const w = (await huge.locator(".ts-box").boundingBox())!.width;
    assert.ok(w < 1000, `box ${w} px wide`);
    await huge.hover();
    const tip = page.locator(".ts-tooltip");
    await tip.waitFor({ state: "visible" });
    const head = (await tip.locator(".ts-tip-title").textContent())!;
    assert.ok(head.startsWith("N".repeat(1000)) && /… \(999,000 more characters\)$/.test(head), head.slice(-60));
    const tb = (await tip.boundingBox())!;
    assert.ok(tb.height < 800, "the card stays on screen");
    await shot(page, "hugelabel");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });

  test("a 330-character model name is cut in the status line as in the toolbar; the counts stay in sight (QA)", async () => {
    const raw = decode(readFileSync(join(ROOT, "tests", "golden", "mlp.graph.msgpack"))) as Record<string, any>;
    const name = `Model${"VeryLongClassName".repeat(20)}End`;
    raw.model.name = name;
    const ctx = await browser.newContext({ viewport: { width: 360, height: 700 } });
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(pathToFileURL(pageFile("longname", encode(raw))).href);
    await ready(page);
    const line = page.locator("[data-role=status]");
    await page.waitForFunction(() => /drawn/.test(document.querySelector("[data-role=status]")?.textContent ?? ""));
    const text = (await line.textContent())!;
    assert.match(text, / · \d+ ops · \d+ module calls · \d+ drawn · layout \d+ ms$/);
    const shown = text.split(" · ")[0]!;
    assert.ok(shown.startsWith("ModelVeryLong") && shown.endsWith("End") && shown.includes("…"), shown);
    assert.ok([...shown].length <= 60, `cut in the middle as the toolbar cuts it: ${shown}`);
    const fits = await line.evaluate((el) => el.scrollHeight <= el.clientHeight + 1);
    assert.ok(fits, "every line of the status is in its box");
    const b = (await line.boundingBox())!;
    assert.ok(b.y + b.height <= 700 + 1, "and the box is in the window");
    await shot(page, "longname-status-360");
    assert.deepEqual(errors, []);
    await ctx.close();
  });
});
