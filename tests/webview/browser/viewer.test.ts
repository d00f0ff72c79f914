// The viewer in a real browser (Debian's Chromium) on standalone pages of real traced
// models. Screenshots go to tests/artifacts/screenshots for a person to look at.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { decode, encode } from "@msgpack/msgpack";
import type { Browser, Locator, Page } from "playwright-core";
import { FIXTURES, launch, open, ready, shot, type Opened, vscodePage } from "./browser";

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

type Box = { x: number; y: number; width: number; height: number };

async function box(l: Locator): Promise<Box> {
  const b = await l.boundingBox();
  assert.ok(b, "element is rendered");
  return b;
}

/** Only the page itself, Blob URLs and data URLs: nothing from the network. */
function assertOffline(o: Opened): void {
  const external = o.requests.filter((u) => !/^(file|blob|data):/.test(u));
  assert.deepEqual(external, []);
}

function assertNoErrors(o: Opened): void {
  assert.deepEqual(o.errors, []);
}

/**
 * Only items near the window are in the DOM; after Fit the whole graph is in the window.
 * Waits until `selector` matches `n` elements.
 */
async function countAfterFit(page: Page, selector: string, n: number): Promise<void> {
  await page.click("[data-action=fit]");
  await page
    .waitForFunction(([sel, want]) => document.querySelectorAll(sel as string).length === want, [selector, n] as const, { timeout: 10_000 })
    .catch(async () => assert.equal(await page.locator(selector).count(), n, selector));
}

async function clickAndWait(page: Page, selector: string): Promise<void> {
  await page.click(selector);
  await ready(page);
}

/** Node boxes must not overlap each other on screen. */
async function assertNoOverlaps(page: Page): Promise<void> {
  const rects = await page.$$eval(".ts-nodes > g > .ts-box", (els) =>
    els.map((e) => {
      const r = e.getBoundingClientRect();
      return [r.left, r.top, r.right, r.bottom, (e.parentElement as HTMLElement).dataset.key];
    }),
  );
  for (let i = 0; i < rects.length; i++) {
    for (let j = i + 1; j < rects.length; j++) {
      const [a, b] = [rects[i]!, rects[j]!] as [number, number, number, number, string][];
      const overlap = a[0] < b[2] - 1 && b[0] < a[2] - 1 && a[1] < b[3] - 1 && b[1] < a[3] - 1;
      assert.ok(!overlap, `${a[4]} overlaps ${b[4]}`);
    }
  }
}

/** The stage (the graph's part of the page) in page coordinates. */
async function stage(page: Page): Promise<Box> {
  return box(page.locator(".ts-svg"));
}

const inside = (b: Box, s: Box, slack = 1): boolean =>
  b.x >= s.x - slack && b.y >= s.y - slack && b.x + b.width <= s.x + s.width + slack && b.y + b.height <= s.y + s.height + slack;

/**
 * A frame just opened is brought into view: all of it when it fits the stage, else its
 * header at the top-left; the hover card the click would have popped is away.
 */
async function assertOpenedInView(page: Page, frame: Locator): Promise<void> {
  const s = await stage(page);
  const b = await box(frame);
  if (b.width <= s.width && b.height <= s.height) assert.ok(inside(b, s), `frame ${JSON.stringify(b)} inside the stage ${JSON.stringify(s)}`);
  else assert.ok(inside({ ...b, width: 40, height: 24 }, s), "header in the stage");
  assert.ok(await page.locator(".ts-tooltip").isHidden(), "no hover card over the new content");
}

/** Every drawn box lies inside the stage and, when the overview shows, clear of it. */
async function assertAllBoxesVisible(page: Page, what: string): Promise<void> {
  const s = await stage(page);
  const mini = page.locator("canvas.ts-minimap");
  const m = (await mini.isVisible()) ? await box(mini) : null;
  const rects = await page.$$eval(".ts-nodes > g > .ts-box", (els) =>
    els.map((e) => {
      const r = e.getBoundingClientRect();
      return { x: r.left, y: r.top, width: r.width, height: r.height, key: (e.parentElement as HTMLElement).dataset.key };
    }),
  );
  assert.ok(rects.length > 0);
  for (const r of rects) {
    assert.ok(inside(r, s), `${what}: ${r.key} ${JSON.stringify(r)} outside the stage ${JSON.stringify(s)}`);
    if (m) {
      const under = r.x < m.x + m.width && m.x < r.x + r.width && r.y < m.y + m.height && m.y < r.y + r.height;
      assert.ok(!under, `${what}: ${r.key} under the overview`);
    }
  }
}

/** Smallest on-screen font size of graph text at the current zoom. */
async function minScreenFont(page: Page): Promise<number> {
  return page.$$eval(".ts-scene text", (els) => {
    const vp = document.querySelector(".ts-viewport")!;
    const k = (vp as SVGGraphicsElement).getCTM()!.a;
    return Math.min(...els.map((e) => parseFloat(getComputedStyle(e).fontSize) * k));
  });
}

describe("GPT-2", () => {
  let o: Opened;
  let page: Page;
  before(async () => {
    o = await open(browser, "gpt2");
    page = o.page;
  });
  after(async () => {
    await page.context().close();
  });

  test("first render: collapsed, readable, inputs/outputs, shapes, folded blocks, overview", async () => {
    await shot(page, "gpt2-initial");
    assert.equal(await page.locator("#torchscope").getAttribute("data-state"), "ready");
    // Root expanded as a labelled cluster, its children as boxes.
    assert.equal(await page.locator('.ts-cluster[data-kind=module][data-path=""]').count(), 1);
    for (const path of ["wte", "wpe", "drop", "ln_f"]) {
      assert.equal(await page.locator(`.ts-node[data-kind=module][data-path="${path}"]`).count(), 1, path);
    }
    assert.equal(await page.locator(".ts-node[data-kind=module][data-path^='h.']").count(), 0, "blocks folded");
    const group = page.locator(".ts-node[data-kind=group]");
    assert.equal(await group.count(), 1);
    assert.match((await group.textContent())!, /GPT2Block ×12/);
    assert.equal(await page.locator(".ts-node[data-kind=input]").count(), 1);
    assert.ok((await page.locator(".ts-node[data-kind=output]").count()) >= 1);
    const labels = await page.locator(".ts-elabel").allTextContents();
    assert.ok(
      labels.some((t) => /^1×16×768/.test(t)),
      "tensor shapes on edges",
    );
    // The opening view shows the whole graph at a readable zoom (≥ 0.8: 10 px text ≥ 8 px);
    // the overview only shows when part of the graph is out of sight.
    assert.ok((await minScreenFont(page)) >= 8, "text at least 8 px on screen");
    await assertAllBoxesVisible(page, "opened");
    assert.ok(await page.locator("canvas.ts-minimap").isHidden(), "no overview over a graph that is all in view");
    await assertNoOverlaps(page);
    assertNoErrors(o);
    assertOffline(o);
  });

  test("expand a module and collapse it; the clicked box keeps its place", async () => {
    const sel = '[data-kind=module][data-path="wte"]';
    const key = (await page.locator(`.ts-node${sel}`).getAttribute("data-key"))!;
    const before = await box(page.locator(`.ts-node${sel}`));
    await clickAndWait(page, `[data-toggle="${key}"]`);
    await shot(page, "gpt2-expanded-wte");
    const cluster = page.locator(`.ts-cluster${sel}`);
    assert.equal(await cluster.count(), 1, "drawn as a cluster");
    assert.equal(await page.locator(`.ts-node${sel}`).count(), 0);
    assert.match((await page.locator(`[data-head="${key}"]`).textContent())!, /Embedding/);
    const after = await box(cluster);
    assert.ok(Math.abs(after.x - before.x) <= 2 && Math.abs(after.y - before.y) <= 2, `moved from ${before.x},${before.y} to ${after.x},${after.y}`);
    assert.ok((await page.locator(".ts-node[data-kind=op]").allTextContents()).includes("embedding"));
    await assertNoOverlaps(page);

    await clickAndWait(page, `[data-toggle="${key}"]`);
    const again = await box(page.locator(`.ts-node${sel}`));
    assert.ok(Math.abs(again.x - before.x) <= 2 && Math.abs(again.y - before.y) <= 2, "back in place");
    assert.equal(await page.locator(`.ts-cluster${sel}`).count(), 0);
  });

  test("the ×12 box unfolds into the blocks; double-click expands a block", async () => {
    // The main frame, not the stacked shadows drawn behind the ×N box.
    await page.hover("[data-toggle=g0]");
    await clickAndWait(page, "[data-toggle=g0]");
    // The unfolded group is taller than the window was: the view moves to show all of it.
    await assertOpenedInView(page, page.locator(".ts-cluster[data-kind=group] > .ts-frame"));
    await shot(page, "gpt2-unfolded-group");
    assert.ok(await page.locator("canvas.ts-minimap").isVisible(), "overview shown once part of the graph is out of sight");
    await countAfterFit(page, ".ts-node[data-kind=module][data-path^='h.']", 12);
    // Bring h.3 into view the way a person would: search for it and press Enter.
    await page.fill("[data-role=search]", "h.3");
    await page.press("[data-role=search]", "Enter");
    await ready(page);
    await page.press("[data-role=search]", "Escape");
    const h3 = page.locator('.ts-node[data-kind=module][data-path="h.3"]');
    const p3 = await box(h3);
    await h3.dblclick({ position: { x: p3.width - 6, y: p3.height / 2 } });
    await ready(page);
    await page.waitForSelector('.ts-cluster[data-kind=module][data-path="h.3"]');
    await assertOpenedInView(page, page.locator('.ts-cluster[data-kind=module][data-path="h.3"] > .ts-frame'));
    assert.ok(await page.locator('.ts-node[data-kind=module][data-path="h.3.attn"]').count());
    await shot(page, "gpt2-block-expanded");
    await assertNoOverlaps(page);
    await clickAndWait(page, "[data-action=collapse-all]");
    assert.equal(await page.locator(".ts-node[data-kind=group]").count(), 1);
  });

  test("hover shows kind, target, shapes, dtype, params and site", async () => {
    const wte = page.locator('.ts-node[data-kind=module][data-path="wte"]');
    await wte.hover();
    const tip = page.locator(".ts-tooltip");
    await tip.waitFor({ state: "visible" });
    const text = (await tip.textContent())!;
    assert.match(text, /kind\s*module/);
    assert.match(text, /torch\.nn\.modules\.sparse\.Embedding/);
    assert.match(text, /1×16 int64/);
    assert.match(text, /1×16×768 float32/);
    assert.match(text, /params\s*38\.\d+M/);
    assert.match(text, /modeling_gpt2\.py:\d+/);
    await shot(page, "gpt2-hover");
    await page.mouse.move(2, 300);
  });

  test("search finds a nested op, highlights its collapsed ancestor, Enter steps to it", async () => {
    await clickAndWait(page, "[data-action=collapse-all]");
    await page.fill("[data-role=search]", "scaled_dot_product");
    assert.match((await page.locator("[data-role=search-count]").textContent())!, /^12 found/);
    assert.equal(await page.locator(".ts-node[data-kind=group].ts-match").count(), 1, "folded group highlighted");
    await page.press("[data-role=search]", "Enter");
    await ready(page);
    const cur = page.locator(".ts-current");
    await cur.waitFor();
    assert.equal(await cur.getAttribute("data-kind"), "op");
    assert.match((await cur.textContent())!, /scaled_dot_product_attention/);
    const b = await box(cur);
    const vp = page.viewportSize()!;
    assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.width <= vp.width && b.y + b.height <= vp.height, "zoomed to it");
    assert.match((await page.locator("[data-role=search-count]").textContent())!, /^1 \/ 12/);
    await shot(page, "gpt2-search");
    await page.press("[data-role=search]", "Enter");
    await ready(page);
    assert.match((await page.locator("[data-role=search-count]").textContent())!, /^2 \/ 12/);
    await page.press("[data-role=search]", "Escape");
    assert.equal(await page.locator(".ts-match").count(), 0);
  });

  test("a search step after Collapse all starts from the collapsed view (QA: it brought the old one back)", async () => {
    const step = async () => {
      await page.press("[data-role=search]", "Enter");
      await ready(page);
      return page.locator(".ts-nodes > g").count();
    };
    // the step from a collapsed view, as a fresh search takes it
    await page.keyboard.press("Escape");
    await clickAndWait(page, "[data-action=collapse-all]");
    await page.fill("[data-role=search]", "ln_f");
    const fresh = await step();
    // the same step after a search that began in the expanded view, then Collapse all
    await page.press("[data-role=search]", "Escape");
    await clickAndWait(page, "[data-action=expand-all]");
    const expanded = await page.locator(".ts-nodes > g").count();
    await page.fill("[data-role=search]", "ln_f");
    await step();
    await clickAndWait(page, "[data-action=collapse-all]");
    const after = await step();
    assert.ok(expanded > fresh, `expanded ${expanded}, collapsed ${fresh}`);
    assert.equal(after, fresh, `${after} boxes after the step (the expanded view had ${expanded})`);
    await page.press("[data-role=search]", "Escape");
  });

  test("a pan with the overview survives a resize of the window (QA: back to the opening view)", async () => {
    await clickAndWait(page, "[data-action=expand-all]");
    const translateY = () =>
      page.evaluate(() => {
        const t = document.querySelector(".ts-viewport")!.getAttribute("transform") ?? "";
        return Number(/translate\([^,]+,\s*([^)]+)\)/.exec(t)![1]);
      });
    await page.keyboard.press("0"); // the opening view, which follows the window's size
    await ready(page);
    const opening = await translateY();
    const mm = await box(page.locator(".ts-minimap"));
    await page.mouse.click(mm.x + mm.width / 2, mm.y + mm.height - 4);
    await page.waitForTimeout(300);
    const panned = await translateY();
    assert.ok(Math.abs(panned - opening) > 100, `the overview moved the view: ${opening} → ${panned}`);
    const vp = page.viewportSize()!;
    await page.setViewportSize({ width: vp.width - 20, height: vp.height - 10 });
    await page.waitForTimeout(500);
    const resized = await translateY();
    await page.setViewportSize(vp);
    await page.waitForTimeout(300);
    assert.ok(Math.abs(resized - panned) < 50, `the view moved from ${panned} to ${resized}`);
    await clickAndWait(page, "[data-action=collapse-all]");
  });

  test("clicking a node reveals its source line through the host", async () => {
    await clickAndWait(page, "[data-action=collapse-all]");
    await page.click('.ts-node[data-kind=module][data-path="ln_f"]');
    assert.match((await page.locator("[data-role=status]").textContent())!, /modeling_gpt2\.py:\d+/);
  });

  test("export SVG and PNG", async () => {
    const [svgDl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    assert.match(svgDl.suggestedFilename(), /\.svg$/);
    const svg = readFileSync((await svgDl.path())!, "utf8");
    assert.match(svg, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.ok(svg.includes("GPT2Block ×12") && svg.includes("1×16×768"));
    assert.ok(!/<script|<foreignObject/i.test(svg));
    // Styles travel inside the file, with the theme's values, not the page's variables.
    assert.match(svg, /<style>[^<]*\.ts-box[^<]*<\/style>/);
    // (all but a coloured box's own share of the hot colour, set on the box: values.test.ts)
    assert.ok(!/var\(--ts-(?!heat\))/.test(svg), "theme variables resolved");
    writeFileSync(join(FIXTURES, "..", "gpt2-export.svg"), svg);
    const [pngDl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-png]")]);
    const png = readFileSync((await pngDl.path())!);
    assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
    assert.ok(png.length > 5000);
  });

  test("an exported SVG opens at its own size, with the drawing's style rules only", async () => {
    // Its root had the page's class ts-svg, and the page's `.ts-svg { width: 100%; height: 100% }`
    // came along (with .ts-inputbar, .ts-notice, cursor: grab …): opened on its own, the file
    // was squeezed into the window instead of its width and height.
    const [dl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    const svg = readFileSync((await dl.path())!, "utf8");
    const css = /<style>([^<]*)<\/style>/.exec(svg)![1]!;
    for (const pageOnly of [
      "ts-inputbar",
      "ts-notice",
      "ts-table",
      "ts-legend",
      "ts-toolbar",
      "ts-tooltip",
      "ts-overlay",
      "ts-warnings",
      "ts-stale",
    ]) {
      assert.ok(!css.includes(pageOnly), `${pageOnly} in the exported CSS`);
    }
    assert.doesNotMatch(css, /cursor|user-select|pointer-events|text-overflow/);
    assert.doesNotMatch(css, /(width|height)\s*:\s*100%/);
    const [, w, h] = /^<svg[^>]* width="(\d+)" height="(\d+)"/.exec(svg)!.map(Number);
    // Opened alone, in a window smaller than the drawing: at its own size (it scrolls).
    const file = join(FIXTURES, "..", "gpt2-export-alone.svg");
    writeFileSync(file, svg);
    const ctx = await browser.newContext({ viewport: { width: 320, height: 240 } });
    try {
      const alone = await ctx.newPage();
      await alone.goto(pathToFileURL(file).href);
      const size = await alone.evaluate(() => {
        const r = document.documentElement.getBoundingClientRect();
        return [r.width, r.height];
      });
      assert.deepEqual(size, [w, h]);
      // Still drawn as on screen: text in the theme's colour, the boxes outlined.
      const look = await alone.evaluate(() => ({
        text: getComputedStyle(document.querySelector(".ts-node text")!).fill,
        stroke: getComputedStyle(document.querySelector(".ts-node .ts-box")!).stroke,
      }));
      assert.equal(look.text, "rgb(31, 35, 40)");
      assert.notEqual(look.stroke, "none");
      await alone.setViewportSize({ width: Math.min(w!, 1200), height: Math.min(h!, 900) });
      await alone.screenshot({ path: join(FIXTURES, "..", "screenshots", "gpt2-export-alone-svg.png") });
    } finally {
      await ctx.close();
    }
  });

  test("keyboard: e expands all, c collapses, f fits", async () => {
    await page.click(".ts-svg", { position: { x: 5, y: 5 } });
    await page.keyboard.press("e");
    await ready(page);
    // Containers are open; only one-op wrappers (Dropout, LayerNorm, Embedding) stay boxes.
    assert.equal(await page.locator('.ts-cluster[data-kind=module][data-path="h.0.attn"]').count(), 1);
    const boxes = await page.locator(".ts-node[data-kind=module] .ts-title").allTextContents();
    assert.ok(
      boxes.every((t) => ["Dropout", "LayerNorm", "Embedding", "NewGELUActivation"].includes(t)),
      boxes.join(","),
    );
    await assertNoOverlaps(page);
    await shot(page, "gpt2-expand-all");
    // Fit: the whole graph is in the window, so every box is drawn.
    await page.keyboard.press("f");
    await page.waitForFunction(() => document.querySelectorAll(".ts-node[data-kind=op]").length > 400);
    await shot(page, "gpt2-expand-all-fit");
    await page.keyboard.press("c");
    await ready(page);
    assert.equal(await page.locator(".ts-node[data-kind=group]").count(), 1);
    assertNoErrors(o);
  });
});

/** A PNG's size in px (its IHDR chunk). */
function pngSize(png: Buffer): { w: number; h: number } {
  assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  return { w: png.readUInt32BE(16), h: png.readUInt32BE(20) };
}

/** Every text the status line shows from now on, in window.__statuses. */
async function recordStatus(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __statuses: string[] };
    w.__statuses = [];
    const s = document.querySelector("[data-role=status]")!;
    new MutationObserver(() => w.__statuses.push(s.textContent ?? "")).observe(s, { childList: true, characterData: true, subtree: true });
  });
}

describe("PNG export of an expanded graph", () => {
  test("GPT-2, Expand all: a PNG at full size at least (readable text), and the status says while it is written", async () => {
    const o = await open(browser, "gpt2");
    const page = o.page;
    await clickAndWait(page, "[data-action=expand-all]");
    const [svgDl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    const svg = readFileSync((await svgDl.path())!, "utf8");
    const [, w, h] = /^<svg[^>]* width="(\d+)" height="(\d+)"/.exec(svg)!.map(Number);
    assert.ok(h! > 16_000, `a tall graph (${w}×${h})`);
    await recordStatus(page);
    const [pngDl] = await Promise.all([page.waitForEvent("download", { timeout: 60_000 }), page.click("[data-action=export-png]")]);
    const png = pngSize(readFileSync((await pngDl.path())!));
    // Scale 1 or more (CSS px): text as big as on screen at 100 %, never shrunk to fit a cap.
    assert.ok(png.w >= w! && png.h >= h!, `PNG ${png.w}×${png.h} for a ${w}×${h} graph`);
    const said = await page.evaluate(() => (window as unknown as { __statuses: string[] }).__statuses);
    assert.ok(
      said.some((t) => /^Exporting PNG…/.test(t)),
      `status while exporting: ${JSON.stringify(said)}`,
    );
    assert.doesNotMatch((await page.locator("[data-role=status]").textContent())!, /Exporting/, "and not after");
    assertNoErrors(o);
    await page.context().close();
  });

  test("GPT-2, Expand all: the status says while an SVG is written, as for a PNG, and not after", async () => {
    // QA: the SVG, made in slices over many tasks on a big graph, showed no busy status
    const o = await open(browser, "gpt2");
    const page = o.page;
    await clickAndWait(page, "[data-action=expand-all]");
    await recordStatus(page);
    const [svgDl] = await Promise.all([page.waitForEvent("download", { timeout: 60_000 }), page.click("[data-action=export-svg]")]);
    assert.match(svgDl.suggestedFilename(), /\.svg$/);
    const said = await page.evaluate(() => (window as unknown as { __statuses: string[] }).__statuses);
    assert.ok(
      said.some((t) => /^Exporting SVG…/.test(t)),
      `status while exporting: ${JSON.stringify(said)}`,
    );
    assert.doesNotMatch((await page.locator("[data-role=status]").textContent())!, /Exporting/, "and not after");
    assertNoErrors(o);
    await page.context().close();
  });

  test("an SVG export that fails: the busy status goes, a message says why", async () => {
    const o = await open(browser, "mlp");
    const page = o.page;
    await page.evaluate(() => {
      XMLSerializer.prototype.serializeToString = () => {
        throw new Error("refused by the test");
      };
    });
    await page.click("[data-action=export-svg]");
    await page.waitForFunction(() => /SVG/.test(document.querySelector("[data-role=notice]")?.textContent ?? ""), undefined, { timeout: 10_000 });
    const notice = (await page.locator("[data-role=notice]").textContent())!;
    assert.match(notice, /^SVG export failed: refused by the test/);
    assert.equal(await page.locator("[data-role=status]").textContent(), notice, "the busy status is replaced");
    assert.equal(await page.locator("#torchscope").getAttribute("data-state"), "ready", "the graph is still there");
    assertNoErrors(o);
    await page.context().close();
  });

  test("T5, Expand all: too big for the browser's canvas at full size: no shrunken picture, a message that points to SVG", async () => {
    const o = await open(browser, "t5");
    const page = o.page;
    await clickAndWait(page, "[data-action=expand-all]");
    const downloads: string[] = [];
    page.on("download", (d) => downloads.push(d.suggestedFilename()));
    await page.click("[data-action=export-png]");
    await page.waitForFunction(() => /PNG/.test(document.querySelector("[data-role=notice]")?.textContent ?? ""));
    const notice = (await page.locator("[data-role=notice]").textContent())!;
    assert.ok(await page.locator("[data-role=notice]").isVisible());
    assert.match(notice, /too big/i);
    assert.match(notice, /SVG/);
    assert.equal(await page.locator("[data-role=status]").textContent(), notice);
    assert.equal(await page.locator("#torchscope").getAttribute("data-state"), "ready", "the graph is still there");
    await shot(page, "t5-png-too-big");
    // SVG has no such limit: it is written.
    const [svgDl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    assert.match(svgDl.suggestedFilename(), /\.svg$/);
    assert.ok(await page.locator("[data-role=notice]").isHidden(), "the message goes with the next action");
    assert.deepEqual(downloads, [svgDl.suggestedFilename()], "no PNG");
    assertNoErrors(o);
    await page.context().close();
  });
});

/**
 * One export (the button's click to the download) with the page's long tasks (50 ms or more)
 * recorded: the file, those tasks and the export's whole time (ms, the page's clock).
 */
async function exportTimed(page: Page, format: "svg" | "png"): Promise<{ file: Buffer; long: number[]; total: number }> {
  const t0 = await page.evaluate(() => {
    const w = window as unknown as { __long: number[] };
    w.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.__long.push(Math.round(e.duration));
    }).observe({ type: "longtask" });
    return performance.now();
  });
  const [dl] = await Promise.all([page.waitForEvent("download", { timeout: 60_000 }), page.click(`[data-action=export-${format}]`)]);
  const file = readFileSync((await dl.path())!);
  const total = Math.round((await page.evaluate(() => performance.now())) - t0);
  await page.waitForTimeout(300); // (the browser reports a long task a little after it)
  return { file, long: await page.evaluate(() => (window as unknown as { __long: number[] }).__long), total };
}

/** No task of the export holds a third of its time: it was one long task, now it is made in
 * short ones (a share, not a time: the machine running the tests may be loaded). */
function assertSliced(what: string, t: { long: number[]; total: number }): void {
  const longest = Math.max(0, ...t.long);
  assert.ok(longest < t.total / 3, `${what}: long tasks ${JSON.stringify(t.long)} ms in an export of ${t.total} ms`);
}

describe("export keeps the page responsive", () => {
  // QA: a PNG was drawn and encoded in one task (canvas.toDataURL: 330–1,500 ms for
  // 2268×10970 px), and an SVG of an expanded 2,500-box graph was drawn in one of 0.2–1.1 s
  test("PNG of GPT-2 expanded (722×30,866 px and more): in short tasks, at its size", async () => {
    const o = await open(browser, "gpt2");
    const page = o.page;
    await clickAndWait(page, "[data-action=expand-all]");
    const [svgDl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    const [, w, h] = /^<svg[^>]* width="(\d+)" height="(\d+)"/.exec(readFileSync((await svgDl.path())!, "utf8"))!.map(Number);
    await page.waitForTimeout(500);
    const png = await exportTimed(page, "png");
    // as pngScale gives it: 32,767 px down, the width in proportion
    const scale = 32_767 / h!;
    assert.deepEqual(pngSize(png.file), { w: Math.floor(w! * scale), h: Math.floor(h! * scale) });
    assertSliced("PNG", png);
    assertNoErrors(o);
    await page.context().close();
  });

  test("a browser that can't draw an SVG into an ImageBitmap or encode in a worker: the same PNG, made on the page", async () => {
    const o = await open(browser, "gpt2");
    const page = o.page;
    const png = async () => {
      const [dl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-png]")]);
      return readFileSync((await dl.path())!);
    };
    const offThread = await png();
    await page.evaluate(() => {
      const w = window as unknown as { __cib: unknown };
      w.__cib = window.createImageBitmap;
      window.createImageBitmap = () => Promise.reject(new Error("not for an SVG image"));
    });
    const onPage = await png();
    assert.ok(offThread.equals(onPage), `${offThread.length} and ${onPage.length} bytes`);
    await page.evaluate(() => {
      window.createImageBitmap = (window as unknown as { __cib: typeof createImageBitmap }).__cib;
      (window as unknown as { Worker: unknown }).Worker = class {
        constructor() {
          throw new Error("refused by the page's policy");
        }
      };
    });
    assert.ok(offThread.equals(await png()), "without workers");
    assertNoErrors(o);
    await page.context().close();
  });

  test("SVG of T5 expanded on a CPU 6× slower: drawn in short tasks, the same file", async () => {
    const o = await open(browser, "t5");
    const page = o.page;
    await clickAndWait(page, "[data-action=expand-all]");
    const [before] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    const expected = readFileSync((await before.path())!, "utf8");
    await page.waitForTimeout(500);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: 6 });
    const svg = await exportTimed(page, "svg");
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: 1 });
    assertSliced("SVG", svg);
    assert.equal(svg.file.toString("utf8"), expected, "the same file");
    assertNoErrors(o);
    await page.context().close();
  });
});

describe("ResNet-50", () => {
  test("renders, expands the encoder, dark palette", async () => {
    const o = await open(browser, "resnet50", { dark: true });
    const page = o.page;
    await shot(page, "resnet50-initial-dark");
    assert.ok((await minScreenFont(page)) >= 10);
    const enc = '[data-kind=module][data-path="encoder"]';
    const key = (await page.locator(`.ts-node${enc}`).getAttribute("data-key"))!;
    await clickAndWait(page, `[data-toggle="${key}"]`);
    await assertOpenedInView(page, page.locator(`.ts-cluster${enc} > .ts-frame`));
    await shot(page, "resnet50-encoder-dark");
    await assertNoOverlaps(page);
    // Depth control: the encoder is open (depth 2); one more level.
    assert.equal(await page.locator("[data-role=depth]").textContent(), "2");
    await clickAndWait(page, "[data-action=depth-up]");
    assert.equal(await page.locator("[data-role=depth]").textContent(), "3");
    await countAfterFit(page, ".ts-node[data-kind=group]", 4); // the stages show their ×N boxes
    await shot(page, "resnet50-depth3-dark");
    await clickAndWait(page, "[data-action=depth-up]");
    await countAfterFit(page, ".ts-node[data-kind=group]", 0); // groups unfold one level deeper
    assertNoErrors(o);
    assertOffline(o);
    await page.context().close();
  });
});

describe("error graph", () => {
  test("banner with type and message; clicking it selects the error node, drawn in the error colour", async () => {
    const o = await open(browser, "error");
    const page = o.page;
    const banner = page.locator(".ts-banner");
    assert.ok(await banner.isVisible());
    assert.match((await banner.textContent())!, /RuntimeError: mat1 and mat2 shapes cannot be multiplied/);
    // Collapsed: the module holding the error is marked.
    assert.equal(await page.locator(".ts-has-error").count(), 1);
    await shot(page, "error-initial");
    await banner.click();
    await ready(page);
    const err = page.locator(".ts-node[data-kind=error]");
    await err.waitFor();
    assert.match((await err.getAttribute("class"))!, /ts-selected/);
    const colors = await err.evaluate((g) => {
      const rect = g.querySelector(".ts-box")!;
      const banner = document.querySelector(".ts-banner")!;
      return { text: getComputedStyle(g.querySelector("text")!).fill, banner: getComputedStyle(banner).color, stroke: getComputedStyle(rect).stroke };
    });
    assert.equal(colors.text, colors.banner, "error node text in the error colour");
    assert.equal(colors.stroke, colors.banner);
    await shot(page, "error-revealed");
    assertNoErrors(o);
    await page.context().close();
  });
});

describe("error graph in a small window", () => {
  test("clicking the banner shows the failing call with the whole graph, none of it under the banner", async () => {
    const o = await open(browser, "error", { width: 800, height: 600 });
    const page = o.page;
    await page.locator(".ts-banner").click();
    await ready(page);
    await page.locator(".ts-node[data-kind=error].ts-selected").waitFor();
    // Everything fits at this size: the stage (below the banner) shows every box, the inputs too.
    await assertAllBoxesVisible(page, "after the banner's click");
    const banner = await box(page.locator(".ts-banner"));
    const input = await box(page.locator(".ts-node[data-kind=input] > .ts-box").first());
    assert.ok(input.y >= banner.y + banner.height, `input ${JSON.stringify(input)} below the banner ${JSON.stringify(banner)}`);
    await shot(page, "error-banner-click-800");
    assertNoErrors(o);
    await page.context().close();
  });
});

describe("a trace that could not undo a write", () => {
  test("the page says so above the graph (data-role=warnings), as text", async () => {
    const o = await open(browser, "warned");
    const warnings = o.page.locator("[data-role=warnings]");
    assert.ok(await warnings.isVisible());
    assert.match((await warnings.textContent())!, /fc\.weight was written by the forward .*could not be restored/);
    await shot(o.page, "warnings");
    assertNoErrors(o);
    await o.page.context().close();
  });

  test("a graph without warnings shows none", async () => {
    const o = await open(browser, "hostile");
    assert.equal(await o.page.locator("[data-role=warnings]").isVisible(), false);
    await o.page.context().close();
  });
});

describe("a page that opens at a view (the extension's HTML export)", () => {
  test("the modules open in the panel are open in the page", async () => {
    const g = decode(readFileSync(join(FIXTURES, "gpt2.msgpack"))) as {
      model: { qualname: string };
      nodes: { id: number; kind: string; parent: number | null; path: string }[];
      edges: unknown[];
    };
    const root = g.nodes.find((n) => n.kind === "module" && n.parent === null && n.path === "")!;
    const wte = g.nodes.find((n) => n.kind === "module" && n.path === "wte")!;
    const view = { graph: `${g.model.qualname}|${g.nodes.length}|${g.edges.length}`, expanded: [root.id, wte.id], groups: [] };
    const attr = JSON.stringify(view).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    const page = readFileSync(join(FIXTURES, "gpt2.html"), "utf8").replace(
      '<div id="torchscope" data-view="">',
      `<div id="torchscope" data-view="${attr}">`,
    );
    assert.ok(page.includes(attr), "the fixture page has the template's data-view");
    writeFileSync(join(FIXTURES, "gpt2-view.html"), page);
    const o = await open(browser, "gpt2-view");
    assert.equal(await o.page.locator('.ts-cluster[data-kind=module][data-path="wte"]').count(), 1, "wte open from the start");
    assert.equal(await o.page.locator('.ts-node[data-kind=module][data-path="wpe"]').count(), 1, "the others as they were");
    await shot(o.page, "gpt2-opened-at-view");
    assertNoErrors(o);
    assertOffline(o);
    await o.page.context().close();
  });
});

describe("hostile names", () => {
  test("a module named <img src=x onerror=alert(1)> shows those characters", async () => {
    const o = await open(browser, "hostile");
    const page = o.page;
    const evil = page.locator('.ts-node[data-kind=module]:not([data-path="fc"])');
    assert.equal(await evil.count(), 1);
    assert.equal(await evil.locator(".ts-title").textContent(), "<img src=x onerror=alert(1)>");
    assert.equal(await evil.getAttribute("data-path"), "<img src=x onerror=alert(1)>");
    assert.equal(await page.locator("img").count(), 0, "no element was created from the label");
    await evil.hover();
    assert.match((await page.locator(".ts-tooltip").textContent())!, /<img src=x onerror=alert\(1\)>/);
    await shot(page, "hostile");
    assert.equal(await page.locator(".ts-tooltip img").count(), 0);
    assertNoErrors(o); // also: no alert() dialog fired
    await page.context().close();
  });
});

describe("bad files", () => {
  async function pageWithData(name: string, base64: string): Promise<Page> {
    const html = readFileSync(join(FIXTURES, "hostile.html"), "utf8").replace(/(id="torchscope-graph">)[^<]*/, (_m, open: string) => open + base64);
    const file = join(FIXTURES, `${name}.html`);
    writeFileSync(file, html);
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector("#torchscope[data-state=error]");
    return page;
  }

  test("a malformed file shows a clear message", async () => {
    const page = await pageWithData("bad-garbage", Buffer.from("not msgpack at all \xc1").toString("base64"));
    assert.match((await page.locator(".ts-fatal").textContent())!, /can't be shown.*(not valid msgpack|not a map|not a torchscope graph)/s);
    await shot(page, "bad-garbage");
    await page.context().close();
  });

  test("a newer format version says to update", async () => {
    const data = Buffer.from(encode({ format: "torchscope.graph", version: 99, nodes: [], edges: [] })).toString("base64");
    const page = await pageWithData("bad-version", data);
    assert.match((await page.locator(".ts-fatal").textContent())!, /version 99 is newer.*update torchscope/);
    await page.context().close();
  });
});

describe("notebook", () => {
  test("two views in one page (sandboxed srcdoc iframes) both draw", async () => {
    const page1 = readFileSync(join(FIXTURES, "gpt2.html"), "utf8");
    const page2 = readFileSync(join(FIXTURES, "resnet50.html"), "utf8");
    const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    const frame = (s: string) => `<iframe srcdoc="${esc(s)}" sandbox="allow-scripts allow-downloads" style="width:100%;height:420px"></iframe>`;
    const file = join(FIXTURES, "notebook.html");
    writeFileSync(file, `<!DOCTYPE html><html><body>${frame(page1)}${frame(page2)}</body></html>`);
    const ctx = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    await page.goto(pathToFileURL(file).href);
    for (const f of page.frames().slice(1)) await ready(f as unknown as Page);
    assert.equal(page.frames().length, 3);
    await shot(page, "notebook-two-views");
    assert.deepEqual(errors, []);
    await ctx.close();
  });
});

async function postGraph(page: Page, b64: string): Promise<void> {
  await page.evaluate((data) => {
    const bin = atob(data);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    // As GraphPanel posts it: with the panel's origin (kept in the webview state for a reload).
    window.postMessage(
      { type: "graph", data: bytes.buffer, origin: { uri: "file:///w/gpt2.py", target: "model", title: "Forward pass: GPT2Model" } },
      "*",
    );
  }, b64);
}

describe("VS Code host", () => {
  test("ready → graph handshake, reveal and state through the webview API, theme colours", async () => {
    // The page says "ready" (and takes the graph) while the worker's code is still on its way.
    const { page, errors, close } = await vscodePage(browser, { workerDelayMs: 1500, width: 1000, height: 700 });
    assert.equal(await page.evaluate(() => typeof (window as any).torchscope?.mount), "function");
    const b64 = readFileSync(join(FIXTURES, "gpt2.msgpack")).toString("base64");
    await postGraph(page, b64);
    await ready(page);
    await page.click('.ts-node[data-kind=module][data-path="wte"] .ts-title');
    const reveal = await page.evaluate(() => (window as any).__posted.find((m: any) => m.type === "reveal"));
    assert.match(reveal.site.file, /modeling_gpt2\.py$/);
    assert.ok(reveal.site.line > 0);
    // The editor's cursor line marks the nodes made there.
    await page.evaluate((site) => window.postMessage({ type: "highlightLine", file: site.file, line: site.line }, "*"), reveal.site);
    await page.waitForSelector('.ts-node.ts-match[data-path="wte"]');
    const state = await page.evaluate(() => (window as any).__state);
    assert.ok(Array.isArray(state.expanded) && state.expanded.length >= 1, "view state saved");
    assert.match(state.graph, /GPT2Model/);
    // A reload of the same graph restores the view: expand wte, then send the graph again.
    await page.click('[data-toggle="n3"]');
    await ready(page);
    await postGraph(page, b64);
    await page.waitForSelector('.ts-cluster[data-path="wte"]');
    await ready(page);
    const bg = await page.locator("#torchscope").evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.equal(bg, "rgb(30, 31, 32)", "colours from --vscode-* variables");
    await shot(page, "vscode-host");
    assert.deepEqual(errors, []);
    await close();
  });

  test("each new view goes to the extension too (an HTML export opens at it)", async () => {
    const { page, errors, close } = await vscodePage(browser, { workerDelayMs: 0, width: 1000, height: 700 });
    await postGraph(page, readFileSync(join(FIXTURES, "gpt2.msgpack")).toString("base64"));
    await ready(page);
    const views = () => page.evaluate(() => (window as any).__posted.filter((m: any) => m.type === "view").map((m: any) => m.view));
    const first = await views();
    assert.ok(first.length >= 1);
    await page.click('[data-toggle="n3"]');
    await ready(page);
    const last = (await views()).at(-1);
    assert.ok(last.expanded.includes(3) && !first.at(-1).expanded.includes(3), "wte's expansion was posted");
    // The same view the webview state keeps (without the panel's origin).
    const { origin, ...saved } = await page.evaluate(() => (window as any).__state);
    assert.equal(origin.target, "model");
    assert.deepEqual(last, saved);
    assert.deepEqual(errors, []);
    await close();
  });

  test("the input the graph was traced with, Change → the extension; warnings; the error's library frame", async () => {
    const { page, errors, close } = await vscodePage(browser, { workerDelayMs: 0, width: 1000, height: 700 });
    // The error fixture as a trace with the new fields: the error node's library frame
    // (`inside`) and a warning the trace could not undo.
    const raw = decode(readFileSync(join(FIXTURES, "error.msgpack"))) as {
      nodes: { kind: string; site: { file: string; line: number } | null; inside?: unknown }[];
      warnings?: string[];
    };
    const errNode = raw.nodes.find((n) => n.kind === "error")!;
    errNode.inside = { file: "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line: 134, func: "forward" };
    raw.warnings = ["fc.weight was replaced by a new Parameter during the forward"];
    const input = { text: "guessed from Linear(16, …): tensor [1, 16] float32", expr: "torch.randn(1, 16)" };
    await page.evaluate(
      ({ bytes, input }) => {
        const data = new Uint8Array(bytes).buffer;
        window.postMessage(
          { type: "graph", data, origin: { uri: "file:///w/broken.py", target: "Broken", title: "Forward pass: Broken", input } },
          "*",
        );
      },
      { bytes: [...encode(raw)], input },
    );
    await ready(page);
    assert.equal(await page.locator("[data-role=input]").textContent(), input.text);
    assert.ok(await page.locator("[data-role=input]").isVisible());
    assert.match((await page.locator("[data-role=warnings]").textContent())!, /fc\.weight was replaced/);
    await page.click("[data-action=change-input]");
    const posted = await page.evaluate(() => (window as any).__posted.filter((m: any) => m.type === "changeInput"));
    assert.deepEqual(posted, [{ type: "changeInput" }]);
    // The error node: a click reveals its site (the user's line), the hover and the context
    // menu name the library frame.
    await page.click(".ts-banner");
    await ready(page);
    const err = page.locator(".ts-node[data-kind=error]");
    await err.hover();
    await page.locator(".ts-tooltip:not([hidden])").waitFor();
    assert.match((await page.locator(".ts-tooltip").textContent())!, /inside.*linear\.py:134 \(forward\)/);
    await shot(page, "vscode-input-warnings-inside");
    await err.click({ button: "right" });
    const ctx = JSON.parse((await err.getAttribute("data-vscode-context"))!);
    assert.equal(ctx.torchscopeHasInside, true);
    assert.match(ctx.insideFile, /linear\.py$/);
    assert.equal(ctx.insideLine, 134);
    await err.click();
    const reveal = await page.evaluate(() => (window as any).__posted.filter((m: any) => m.type === "reveal").at(-1));
    assert.deepEqual(reveal.site, errNode.site, "a click opens the node's site");
    assert.deepEqual(errors, []);
    await close();
  });

  test("the extension's export request: the SVG and PNG come back as save messages with their bytes", async () => {
    const { page, errors, close } = await vscodePage(browser, { workerDelayMs: 0, width: 1000, height: 700 });
    await postGraph(page, readFileSync(join(FIXTURES, "gpt2.msgpack")).toString("base64"));
    await ready(page);
    const saved = async (format: "svg" | "png") => {
      await page.evaluate((f) => window.postMessage({ type: "export", format: f }, "*"), format);
      await page.waitForFunction((f) => (window as any).__posted.some((m: any) => m.type === "save" && m.name.endsWith(`.${f}`)), format);
      return page.evaluate((f) => {
        const m = (window as any).__posted.find((x: any) => x.type === "save" && x.name.endsWith(`.${f}`));
        return {
          name: m.name,
          mime: m.mime,
          buffer: m.data instanceof ArrayBuffer,
          head: [...new Uint8Array(m.data).subarray(0, 5)],
          size: m.data.byteLength,
        };
      }, format);
    };
    const svg = await saved("svg");
    assert.deepEqual(
      { ...svg, size: svg.size > 1000 },
      { name: "GPT2Model.svg", mime: "image/svg+xml", buffer: true, head: [...Buffer.from("<svg ")], size: true },
    );
    const png = await saved("png");
    assert.deepEqual(
      { ...png, size: png.size > 1000 },
      { name: "GPT2Model.png", mime: "image/png", buffer: true, head: [0x89, 0x50, 0x4e, 0x47, 0x0d], size: true },
    );
    assert.deepEqual(errors, []);
    await close();
  });

  test("a graph file shown as it is: no input bar", async () => {
    const { page, close } = await vscodePage(browser, { workerDelayMs: 0, width: 1000, height: 700 });
    await postGraph(page, readFileSync(join(FIXTURES, "gpt2.msgpack")).toString("base64"));
    await ready(page);
    assert.equal(await page.locator("[data-role=input]").isVisible(), false);
    assert.equal(await page.locator("[data-role=warnings]").isVisible(), false);
    await close();
  });

  test("a worker that can't be loaded: the error state, with the reason, never ready", async () => {
    const { page, close } = await vscodePage(browser, { workerDelayMs: null, width: 1000, height: 700 });
    try {
      await postGraph(page, readFileSync(join(FIXTURES, "gpt2.msgpack")).toString("base64"));
      await page.waitForSelector("#torchscope[data-state=error]", { timeout: 10_000 });
      const notice = (await page.locator("[data-role=notice]").textContent())!;
      assert.match(notice, /Layout failed: .*can't load the layout worker.*404/);
      assert.match((await page.locator("[data-role=status]").textContent())!, /Layout failed/);
      await shot(page, "vscode-host-no-worker");
    } finally {
      await close();
    }
  });
});

describe("hub tensors (T5)", () => {
  test("a tensor feeding every decoder layer becomes reference boxes; clicking one selects the source", async () => {
    const o = await open(browser, "t5");
    const page = o.page;
    await page.click(".ts-svg", { position: { x: 5, y: 5 } });
    await page.keyboard.press("4");
    await ready(page);
    await page.click("[data-action=fit]");
    await page.waitForSelector(".ts-node[data-kind=ref]");
    const refs = page.locator(".ts-node[data-kind=ref]");
    // (scene.ts creates boxes in time-boxed chunks: under load the first was there alone)
    await page
      .waitForFunction(() => document.querySelectorAll(".ts-node[data-kind=ref]").length >= 5, undefined, { timeout: 10_000 })
      .catch(() => undefined);
    assert.ok((await refs.count()) >= 5, "one reference per consumer");
    const ref = refs.filter({ hasText: "↳ encoder.dropout" }).last();
    const source = `n${await ref.getAttribute("data-ref")}`;
    // The box is tiny at this zoom; click it through the page's own handler.
    await ref.evaluate((el) => el.dispatchEvent(new MouseEvent("click", { bubbles: true })));
    const sel = page.locator(".ts-selected");
    await sel.waitFor();
    assert.equal(await sel.getAttribute("data-key"), source);
    const b = await box(sel);
    const vp = page.viewportSize()!;
    assert.ok(b.x >= 0 && b.y >= 0 && b.x < vp.width && b.y < vp.height, "zoomed to the source");
    await shot(page, "t5-ref-source");
    // from the keyboard: the hint says where Enter takes a reference (its source, no line)
    await page.locator(".ts-svg").focus();
    let hint = "";
    for (let i = 0; i < 150 && !hint; i++) {
      await page.keyboard.press("ArrowDown");
      const kind = await page.locator('[data-selected="true"]').first().getAttribute("data-kind");
      if (kind === "ref") hint = (await page.locator("[data-role=status]").textContent()) ?? "";
    }
    assert.match(hint, /^reference to .+\. Enter goes to its source$/);
    assertNoErrors(o);
    await page.context().close();
  });
});
