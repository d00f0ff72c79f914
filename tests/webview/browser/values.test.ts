// Values and costs in the viewer, in a real browser: the overlay colours drawn boxes by a
// measure with a legend, the table ranks the heaviest nodes and reveals one on click, the
// hover shows statistics with a histogram, "Find NaN origin" selects the op that made the
// first NaN. Screenshots go to tests/artifacts/screenshots.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { decode } from "@msgpack/msgpack";
import type { Browser, Page } from "playwright-core";
import { FIXTURES, launch, open, ready, shot, type Opened, vscodePage } from "./browser";

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

interface WireNode {
  id: number;
  kind: string;
  name: string;
  parent: number | null;
  path: string;
  site: { file: string; line: number } | null;
  cost?: { flops: number; bytes: number; time_ns: number };
}
interface Wire {
  nodes: WireNode[];
  nan_origin?: number | null;
}

function wire(name: string): Wire {
  return decode(readFileSync(join(FIXTURES, `${name}.msgpack`))) as Wire;
}

async function heats(page: Page): Promise<{ id: string; heat: number; fill: string }[]> {
  return page.$$eval(".ts-nodes > g[data-heat]", (els) =>
    els.map((e) => ({
      id: (e as HTMLElement).dataset.id!,
      heat: Number((e as HTMLElement).dataset.heat),
      fill: getComputedStyle(e.querySelector(".ts-box")!).fill,
    })),
  );
}

async function choose(page: Page, measure: string): Promise<void> {
  await page.selectOption("select[data-role=overlay]", measure);
}

describe("overlay, legend and table (GPT-2)", () => {
  let o: Opened;
  let page: Page;
  const g = wire("gpt2");
  before(async () => {
    o = await open(browser, "gpt2");
    page = o.page;
  });
  after(async () => {
    await page.context().close();
  });

  test("the selector offers every measure; none is chosen at first", async () => {
    const options = await page.$$eval("select[data-role=overlay] option", (els) =>
      els.map((e) => [(e as HTMLOptionElement).value, (e as HTMLOptionElement).disabled]),
    );
    assert.deepEqual(
      options.map(([v]) => v),
      ["none", "time", "flops", "bytes", "params", "absmax", "nonfinite"],
    );
    assert.ok(
      options.every(([, disabled]) => !disabled),
      "GPT-2 was traced with values and costs",
    );
    assert.equal(await page.locator(".ts-nodes > g[data-heat]").count(), 0);
    assert.ok(await page.locator("[data-role=legend]").isHidden());
    assert.ok(await page.locator("[data-role=table]").isHidden());
    assert.ok(await page.locator("[data-role=nan-banner]").isHidden(), "no NaN in GPT-2");
  });

  test("FLOPs: every drawn box with a cost carries its heat, colours follow it, the legend has the ends in FLOP", async () => {
    await choose(page, "flops");
    await page.waitForSelector(".ts-nodes > g[data-heat]");
    const drawn = await heats(page);
    assert.ok(drawn.length >= 4);
    assert.ok(drawn.every((d) => d.heat >= 0 && d.heat <= 1));
    // The heaviest box is the ×12 blocks (inclusive FLOPs): heat 1, and the darkest colour.
    const top = drawn.reduce((a, b) => (b.heat > a.heat ? b : a));
    assert.equal(top.heat, 1);
    assert.equal(await page.locator(`.ts-nodes > g[data-id="${top.id}"]`).getAttribute("data-kind"), "group");
    const low = drawn.reduce((a, b) => (b.heat < a.heat ? b : a));
    assert.notEqual(top.fill, low.fill, "different heat, different fill");
    // Heat is the drawn value on the log scale between the legend's ends.
    const ends = await page.$$eval("[data-role=legend] [data-role^=legend-]", (els) => els.map((e) => e.textContent));
    assert.equal(ends.length, 2);
    assert.match(ends[0]!, /^\d+(\.\d)? [KMGT]?FLOP$/);
    assert.match(ends[1]!, /^\d+(\.\d)? [KMGT]?FLOP$/);
    // Collapsed, only the ×12 box does matmuls: a scale from 0 (a log scale needs two values)
    assert.match((await page.locator("[data-role=legend]").textContent())!, /^FLOPs0 FLOP/);
    await shot(page, "values-overlay-flops");
    assertClean(o);
  });

  test("the table lists the 20 heaviest ops by FLOPs, sorts, and a row reveals its op", async () => {
    const rows = page.locator("[data-role=table] tbody tr[data-id]");
    assert.equal(await rows.count(), 20);
    const ids = await rows.evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.id)));
    const flops = (id: number): number => g.nodes[id]!.cost!.flops;
    const want = g.nodes
      .filter((n) => n.kind === "op")
      .sort((a, b) => flops(b.id) - flops(a.id) || a.id - b.id)
      .slice(0, 20);
    assert.deepEqual(
      ids,
      want.map((n) => n.id),
    );
    // Sort by name, then back by value ascending.
    await page.click("[data-role=table] th[data-sort=name]");
    const names = await page.locator("[data-role=table] tbody tr td:nth-child(2)").allTextContents();
    assert.deepEqual(
      names,
      [...names].sort((a, b) => a.localeCompare(b)),
    );
    await page.click("[data-role=table] th[data-sort=value]");
    await page.click("[data-role=table] th[data-sort=value]");
    const asc = await rows.evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.id)));
    assert.deepEqual(
      asc.map(flops),
      [...ids].map(flops).sort((a, b) => a - b),
    );
    // The heaviest op sits inside a folded block: a click unfolds, selects and centres it.
    const heaviest = want[0]!;
    await page.click(`[data-role=table] tbody tr[data-id="${heaviest.id}"]`);
    const el = page.locator(`.ts-nodes > g[data-id="${heaviest.id}"][data-selected="true"]`);
    await el.waitFor({ timeout: 15_000 });
    await ready(page);
    const b = (await el.boundingBox())!;
    const vp = page.viewportSize()!;
    assert.ok(b.x > 0 && b.x + b.width < vp.width && b.y > 0 && b.y + b.height < vp.height, "on screen");
    // The standalone host shows where the op is (VS Code opens the line instead).
    assert.ok((await page.locator("[data-role=status]").textContent())!.includes(`:${heaviest.site!.line}`));
    // The overlay follows the new drawing, now on a log scale over many values.
    assert.ok((await heats(page)).some((d) => d.id === String(heaviest.id)));
    assert.match((await page.locator("[data-role=legend]").textContent())!, /FLOPs · log scale/);
    await shot(page, "values-table-reveal");
    // The table folds to its caption and back.
    await page.click("[data-role=table] [data-action=table-fold]");
    assert.equal(await rows.count(), 0);
    await page.click("[data-role=table] [data-action=table-fold]");
    assert.equal(await rows.count(), 20);
    assertClean(o);
  });

  test("time, bytes, parameters, largest |value| and NaN/Inf colour too; none clears", async () => {
    for (const [m, unit] of [
      ["time", /(µs|ms| s)$/],
      ["bytes", /B$/],
      ["params", /^\d/],
      ["absmax", /^\d/],
    ] as const) {
      await choose(page, m);
      await page.waitForFunction(() => document.querySelector("[data-role=legend]:not([hidden])"));
      const hi = await page.locator("[data-role=legend-hi]").textContent();
      assert.match(hi!, unit, m);
      assert.ok((await heats(page)).length > 0, m);
      assert.ok((await page.locator("[data-role=table] tbody tr[data-id]").count()) > 0, m);
      // a share of the total only where values add up (not of a largest |value|)
      const heads = await page.locator("[data-role=table] thead th").allTextContents();
      assert.equal(heads.includes("share"), m !== "absmax", `${m}: ${heads.join(", ")}`);
    }
    await choose(page, "nonfinite");
    assert.match((await page.locator("[data-role=table]").textContent())!, /no node has a value above 0/);
    await choose(page, "none");
    assert.equal(await page.locator(".ts-nodes > g[data-heat]").count(), 0);
    assert.ok(await page.locator("[data-role=legend]").isHidden());
    assert.ok(await page.locator("[data-role=table]").isHidden());
    assertClean(o);
  });

  test("hover: FLOPs, bytes, time, statistics and a 16-bar histogram; on an edge too", async () => {
    const lnF = g.nodes.find((n) => n.kind === "module" && n.path === "ln_f")!.id;
    await page.click("[data-action=collapse-all]");
    await ready(page);
    await page.hover('.ts-node[data-kind=module][data-path="ln_f"] .ts-box');
    const tip = page.locator(".ts-tooltip");
    await tip.waitFor({ state: "visible" });
    const text = (await tip.textContent())!;
    for (const label of ["FLOPs", "out bytes", "time", "min … max", "mean ± std", "|max|", "zeros"]) {
      assert.ok(text.includes(label), label);
    }
    assert.match(text, /\d+(\.\d)? (K|M)?B/);
    assert.match(text, /\d+(\.\d+)? (µs|ms|s)/);
    assert.equal(await tip.locator("[data-role=histogram] rect.ts-hist-bar").count(), 16);
    await shot(page, "values-hover");
    // An edge with one tensor: its statistics and histogram as well.
    await page.mouse.move(5, 400);
    await tip.waitFor({ state: "hidden" });
    // the middle of the edge out of ln_f (as view.test.ts hovers an edge)
    const p = await page
      .locator(`.ts-edge[data-src="n${lnF}"] path`)
      .first()
      .evaluate((path) => {
        const el = path as SVGPathElement;
        const pt = el.getPointAtLength(el.getTotalLength() / 2);
        const m = el.getScreenCTM()!;
        return { x: pt.x * m.a + pt.y * m.c + m.e, y: pt.x * m.b + pt.y * m.d + m.f };
      });
    await page.mouse.move(p.x - 30, p.y - 30);
    await page.mouse.move(p.x, p.y, { steps: 4 });
    await tip.waitFor({ state: "visible" });
    assert.match((await tip.textContent())!, /min … max/);
    assert.equal(await tip.locator("[data-role=histogram] rect.ts-hist-bar").count(), 16);
    assertClean(o);
  });
});

describe("Find NaN origin", () => {
  test("a banner says non-finite values appeared; the action unfolds the ×6 block and selects the op", async () => {
    const o = await open(browser, "nan");
    const { page } = o;
    const g = wire("nan");
    const origin = g.nan_origin!;
    assert.equal(g.nodes[origin]!.name, "sqrt");
    const banner = page.locator("[data-role=nan-banner]");
    assert.ok(await banner.isVisible());
    assert.match((await banner.textContent())!, /Non-finite values \(NaN\/Inf\) appeared.*sqrt/);
    // Hidden at first: inside blocks.3, one of the folded blocks.
    assert.equal(await page.locator(`[data-id="${origin}"]`).count(), 0);
    await page.click("[data-action=nan-origin]");
    const el = page.locator(`.ts-nodes > g[data-id="${origin}"][data-selected="true"]`);
    await el.waitFor({ timeout: 15_000 });
    await ready(page);
    assert.equal(await page.locator('.ts-cluster[data-path="blocks.3"]').count(), 1, "its block is open");
    assert.equal(await page.locator("[data-selected=true]").count(), 1);
    const status = (await page.locator("[data-role=status]").textContent())!;
    assert.ok(status.includes(`make_fixtures.py:${g.nodes[origin]!.site!.line}`), status);
    // The overlay of NaN/Inf values lights up from the origin on.
    await choose(page, "nonfinite");
    assert.ok((await heats(page)).some((d) => d.id === String(origin) && d.heat === 1));
    await shot(page, "values-nan-origin");
    assertClean(o);
    await page.context().close();
  });
});

describe("VS Code host", () => {
  test("a paused-frame graph says its numbers are the live model's; Find NaN origin opens the line", async () => {
    const { page, errors, close } = await vscodePage(browser);
    try {
      const b64 = readFileSync(join(FIXTURES, "nan.msgpack")).toString("base64");
      await page.evaluate((data) => {
        const bin = atob(data);
        const bytes = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        const origin = { uri: "torchscope-debug:paused-frame", target: "model", title: "Forward pass: NanDeep" };
        window.postMessage({ type: "graph", data: bytes.buffer, origin }, "*");
      }, b64);
      await ready(page);
      const note = page.locator("[data-role=live-note]");
      assert.ok(await note.isVisible());
      assert.match((await note.getAttribute("title"))!, /live model's real numbers.*paused/);
      const origin = wire("nan").nan_origin!;
      await page.click("[data-action=nan-origin]");
      await page.locator(`[data-id="${origin}"][data-selected="true"]`).waitFor({ timeout: 15_000 });
      const reveal = await page.evaluate(() => (window as any).__posted.find((m: any) => m.type === "reveal"));
      assert.equal(reveal.nodeId, origin);
      assert.match(reveal.site.file, /make_fixtures\.py$/);
      await shot(page, "values-vscode-live");
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  test("a graph traced from the editor has no live note", async () => {
    const { page, close } = await vscodePage(browser);
    try {
      const b64 = readFileSync(join(FIXTURES, "gpt2.msgpack")).toString("base64");
      await page.evaluate((data) => {
        const bin = atob(data);
        const bytes = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        const origin = { uri: "file:///w/gpt2.py", target: "model", title: "Forward pass: GPT2" };
        window.postMessage({ type: "graph", data: bytes.buffer, origin }, "*");
      }, b64);
      await ready(page);
      assert.equal(await page.locator("[data-role=live-note]").count(), 0);
    } finally {
      await close();
    }
  });
});

function assertClean(o: Opened): void {
  assert.deepEqual(o.errors, []);
  assert.deepEqual(
    o.requests.filter((u) => !/^(file|blob|data):/.test(u)),
    [],
  );
}
