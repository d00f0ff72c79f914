// Values and costs in the viewer, in a real browser: the overlay colours drawn boxes by a
// measure with a legend, the table ranks the heaviest nodes and reveals one on click, the
// hover shows statistics with a histogram, "Find NaN origin" selects the op that made the
// first NaN. Screenshots go to tests/artifacts/screenshots.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
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
    assert.match((await page.locator("[data-role=table]").textContent())!, /every node has 0/);
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
    // the bars span the width their range's ends are written under (not 176 px of a 520 px card)
    const span = await tip.locator("[data-role=histogram]").evaluate((h) => {
      const bars = Array.from(h.querySelectorAll(".ts-hist-bar"), (b) => b.getBoundingClientRect());
      const ends = h.querySelector(".ts-hist-ends")!.getBoundingClientRect();
      return { left: Math.min(...bars.map((b) => b.left)), right: Math.max(...bars.map((b) => b.right)), ends: [ends.left, ends.right] };
    });
    assert.ok(Math.abs(span.left - span.ends[0]!) < 2 && Math.abs(span.right - span.ends[1]!) < 2, JSON.stringify(span));
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

describe("the overlay exported", () => {
  test("SVG and PNG export carry the heat colours the screen shows", async () => {
    // the export dropped them: no ts-heat class, and `fill: color-mix(… initial …)` in its CSS
    const o = await open(browser, "gpt2");
    const { page } = o;
    await choose(page, "flops");
    await page.waitForSelector(".ts-nodes > g[data-heat]");
    const live = await heats(page);
    const [svgDl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    const svgPath = join(FIXTURES, "..", "gpt2-export-heat.svg"); // (.svg: a browser shows it as one)
    await svgDl.saveAs(svgPath);
    const [pngDl] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-png]")]);
    const png = readFileSync((await pngDl.path())!).toString("base64");
    const text = readFileSync(svgPath, "utf8");
    assert.doesNotMatch(text, /initial/, "every colour of the CSS resolved");
    // SVG editors and older renderers don't read color-mix(): each mixed colour is the box's own
    assert.doesNotMatch(text, /color-mix/, "no colour left for the reader to mix");
    // The file alone in a browser (a window its size: drawn 1:1): each coloured box as on
    // screen, in the SVG and in the PNG.
    const [w, h] = [/ width="(\d+)"/, / height="(\d+)"/].map((re) => Number(re.exec(text)![1]));
    const file = await page.context().newPage();
    await file.setViewportSize({ width: w!, height: h! });
    await file.goto(pathToFileURL(resolve(svgPath)).href);
    const seen = await file.evaluate(async (data) => {
      const img = new Image();
      img.src = `data:image/png;base64,${data}`;
      await img.decode();
      const svg = document.documentElement.getBoundingClientRect();
      const scale = img.naturalWidth / svg.width;
      // (an SVG document: the canvas is made in the HTML namespace)
      const canvas = document.createElementNS("http://www.w3.org/1999/xhtml", "canvas") as HTMLCanvasElement;
      const pic = canvas.getContext("2d", { willReadFrequently: true })!;
      pic.canvas.width = img.naturalWidth;
      pic.canvas.height = img.naturalHeight;
      pic.drawImage(img, 0, 0);
      return Array.from(document.querySelectorAll<SVGGElement>(".ts-nodes > g[data-heat]"), (g) => {
        const box = g.querySelector(".ts-box")!;
        const r = box.getBoundingClientRect();
        // inside the box, clear of its border, rounded corner and text
        const px = pic.getImageData(Math.round((r.right - 6 - svg.left) * scale), Math.round((r.bottom - 6 - svg.top) * scale), 1, 1).data;
        const own = (box as SVGElement).style.fill; // (its colour, not one left to mix)
        return { id: g.dataset.id!, heat: g.classList.contains("ts-heat"), svg: getComputedStyle(box).fill, own, png: Array.from(px.slice(0, 3)) };
      });
    }, png);
    // every colour as the bytes a canvas paints for it
    const [screen, inFile] = await page.evaluate(
      (lists) =>
        lists.map((fills) =>
          fills.map((f) => {
            const ctx = document.createElement("canvas").getContext("2d", { willReadFrequently: true })!;
            ctx.fillStyle = f;
            ctx.fillRect(0, 0, 1, 1);
            return Array.from(ctx.getImageData(0, 0, 1, 1).data.slice(0, 3));
          }),
        ),
      [live.map((d) => d.fill), live.map((d) => seen.find((x) => x.id === d.id)?.svg ?? "transparent")],
    );
    assert.equal(seen.length, live.length, "every coloured box is coloured in the file");
    const near = (a: number[], b: number[]): boolean => a.every((x, i) => Math.abs(x - b[i]!) <= 3);
    live.forEach((d, i) => {
      const f = seen.find((x) => x.id === d.id);
      assert.ok(f?.heat, `${d.id} keeps its ts-heat class`);
      assert.match(f.own, /^rgb\(\d+, \d+, \d+\)$/, `${d.id}: its own plain colour`);
      assert.ok(near(inFile![i]!, screen![i]!), `${d.id}: SVG ${f.svg} vs screen ${d.fill}`);
      assert.ok(near(f.png, screen![i]!), `${d.id}: PNG ${f.png} vs screen ${screen![i]}`);
    });
    await file.screenshot({ path: join(FIXTURES, "..", "screenshots", "values-export-heat-svg.png") });
    // inside VS Code a theme colour is itself a color-mix() (--ts-heat-high): resolved too
    await page.evaluate(() => document.body.classList.add("vscode-dark"));
    const [themed] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    assert.doesNotMatch(readFileSync((await themed.path())!, "utf8"), /color-mix/, "no colour left to mix in VS Code's themes");
    assertClean(o);
    await page.context().close();
  });
});

describe("the heaviest-nodes table", () => {
  test("without a mouse: Tab reaches its sort heads and rows; Enter and Space sort, or show a row's node", async () => {
    const o = await open(browser, "gpt2");
    const { page } = o;
    await choose(page, "flops");
    await page.waitForSelector("[data-role=table] tbody tr[data-id]");
    await page.locator("[data-role=table] [data-action=table-fold]").focus();
    const focused = (): Promise<string> =>
      page.evaluate(() => {
        const a = document.activeElement as HTMLElement;
        // (a row is reached at its button)
        return `${a.tagName}:${a.dataset.sort ?? a.closest<HTMLElement>("tr[data-id]")?.dataset.id ?? ""}`;
      });
    await page.keyboard.press("Tab");
    assert.equal(await focused(), "TH:name");
    await page.keyboard.press("Enter");
    assert.equal(await focused(), "TH:name", "the head keeps the focus once sorted");
    assert.equal(await page.locator("[data-role=table] th[data-sort=name]").getAttribute("data-dir"), "asc");
    await page.keyboard.press(" ");
    assert.equal(await page.locator("[data-role=table] th[data-sort=name]").getAttribute("data-dir"), "desc");
    for (const next of ["TH:where", "TH:value", "TH:share"]) {
      await page.keyboard.press("Tab");
      assert.equal(await focused(), next);
    }
    const rows = await page.locator("[data-role=table] tbody tr[data-id]").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.id));
    await page.keyboard.press("Tab");
    assert.equal(await focused(), `BUTTON:${rows[0]}`);
    await page.keyboard.press("Enter");
    await page.locator(`.ts-nodes > g[data-id="${rows[0]}"][data-selected="true"]`).waitFor({ timeout: 15_000 });
    await ready(page);
    await page.keyboard.press("Tab");
    assert.equal(await focused(), `BUTTON:${rows[1]}`);
    await page.keyboard.press(" ");
    await page.locator(`.ts-nodes > g[data-id="${rows[1]}"][data-selected="true"]`).waitFor({ timeout: 15_000 });
    await ready(page);
    await shot(page, "values-table-keyboard");
    assertClean(o);
    await page.context().close();
  });

  for (const [width, height] of [
    [480, 760],
    [360, 600],
  ]) {
    test(`a narrow page (${width} px): a row's node is centred clear of the table and the legend, not under them`, async () => {
      // at 480 px the table covers most of the graph: the node was centred under it; at 360 px
      // the band below the table reached down over the legend, and the node landed under that
      const o = await open(browser, "gpt2", { width, height });
      const { page } = o;
      await choose(page, "absmax");
      await page.waitForSelector("[data-role=table] tbody tr[data-id]");
      const row = page.locator("[data-role=table] tbody tr[data-id]").nth(2);
      const id = await row.getAttribute("data-id");
      await row.click();
      const el = page.locator(`.ts-nodes > g[data-id="${id}"][data-selected="true"]`);
      await el.waitFor({ timeout: 15_000 });
      await ready(page);
      const [b, t, l, s] = await Promise.all([
        el.locator(":scope > .ts-box").boundingBox(),
        page.locator("[data-role=table]").boundingBox(),
        page.locator("[data-role=legend]").boundingBox(),
        page.locator(".ts-svg").boundingBox(),
      ]);
      assert.ok(b && t && l && s);
      type Box = { x: number; y: number; width: number; height: number };
      const under = (c: Box) => b.x < c.x + c.width && c.x < b.x + b.width && b.y < c.y + c.height && c.y < b.y + b.height;
      assert.ok(!under(t), `the node ${JSON.stringify(b)} is under the table ${JSON.stringify(t)}`);
      assert.ok(!under(l), `the node ${JSON.stringify(b)} is under the legend ${JSON.stringify(l)}`);
      assert.ok(b.x >= s.x && b.y >= s.y && b.x + b.width <= s.x + s.width && b.y + b.height <= s.y + s.height, "in the stage");
      await shot(page, `values-table-row-narrow-${width}`);
      assertClean(o);
      await page.context().close();
    });
  }

  test("a narrow page: the numbers show whole, the node's name gives way", async () => {
    // at 500 px only # and node showed; the values were cut off
    const o = await open(browser, "gpt2", { width: 500 });
    const { page } = o;
    await choose(page, "flops");
    await page.waitForSelector("[data-role=table] tbody tr[data-id]");
    const cut = await page.locator("[data-role=table]").evaluate((t) => {
      const box = t.getBoundingClientRect();
      const out: string[] = [];
      if (t.scrollWidth > t.clientWidth) out.push(`the table scrolls sideways: ${t.scrollWidth} > ${t.clientWidth}`);
      for (const td of Array.from(t.querySelectorAll<HTMLElement>("tbody td:nth-child(1), tbody td:nth-child(n+4)"))) {
        const r = td.getBoundingClientRect();
        if (r.right > box.right + 0.5 || td.scrollWidth > td.clientWidth) out.push(`"${td.textContent}" is cut`);
      }
      return out;
    });
    assert.deepEqual(cut, []);
    await shot(page, "values-table-narrow");
    assertClean(o);
    await page.context().close();
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

describe("Colour by NaN/Inf values", () => {
  test("a box with any NaN/Inf is clearly warmer than one with none; the legend says log scale with 0 apart", async () => {
    // QA: on a linear scale the head's 6 NaN beside the blocks' 24 were near the cold colour of none
    const o = await open(browser, "nan");
    const { page } = o;
    await choose(page, "nonfinite");
    await page.waitForSelector(".ts-nodes > g[data-heat]");
    const drawn = await heats(page);
    const none = drawn.filter((d) => d.heat === 0);
    const some = drawn.filter((d) => d.heat > 0);
    assert.ok(none.length > 0 && some.length >= 2, JSON.stringify(drawn));
    for (const d of some) assert.ok(d.heat >= 0.4, `node ${d.id}: heat ${d.heat} of a box with NaN/Inf`);
    // the fills apart as a user sees them: every warm box far from the cold one
    // (Chromium gives a mixed colour as `color(srgb r g b)`, 0..1 a channel)
    const rgb = (c: string): number[] =>
      c
        .match(/[\d.]+/g)!
        .slice(0, 3)
        .map((v) => Number(v) * (c.startsWith("color(") ? 255 : 1));
    const apart = (a: string, b: string): number => Math.max(...rgb(a).map((v, i) => Math.abs(v - rgb(b)[i]!)));
    for (const d of some) assert.ok(apart(d.fill, none[0]!.fill) >= 40, `${d.fill} against ${none[0]!.fill}`);
    const legend = page.locator("[data-role=legend]");
    assert.match((await legend.textContent())!, /NaN\/Inf values · log scale/);
    assert.equal(await legend.locator("[data-role=legend-zero]").textContent(), "0");
    assert.equal(await legend.locator("[data-role=legend-lo]").textContent(), "6");
    assert.equal(await legend.locator("[data-role=legend-hi]").textContent(), "24");
    await shot(page, "values-nonfinite-log");
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

describe("the table over a small graph", () => {
  type Box = { x: number; y: number; width: number; height: number };
  const over = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  async function drawn(page: Page): Promise<Box[]> {
    return page.$$eval(".ts-nodes > g > .ts-box", (els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        return { x: r.x, y: r.y, width: r.width, height: r.height };
      }),
    );
  }

  test("Colour by on: a view the page chose moves clear of the table and legend; one the user moved stays", async () => {
    // QA: at a VS Code panel's width the table opened over the MLP's input and its edge label
    const o = await open(browser, "mlp", { width: 560, height: 720 });
    const { page } = o;
    await choose(page, "flops");
    await page.waitForSelector("[data-role=table] tbody tr[data-id]");
    await ready(page);
    const [t, l] = await Promise.all([page.locator("[data-role=table]").boundingBox(), page.locator("[data-role=legend]").boundingBox()]);
    assert.ok(t && l);
    const boxes = await drawn(page);
    assert.ok(boxes.length >= 5, `${boxes.length} boxes drawn`);
    const under = boxes.filter((b) => over(b, t) || over(b, l));
    assert.deepEqual(under, [], "no box under the table or the legend");
    await shot(page, "values-table-small-graph");
    // the table folded to its caption: the view takes the room back
    const folded = await page.locator("[data-role=table]").boundingBox();
    await page.locator("[data-action=table-fold]").click();
    await ready(page);
    const after = await page.locator("[data-role=table]").boundingBox();
    assert.ok(folded && after && after.height < folded.height);
    assert.deepEqual(
      (await drawn(page)).filter((b) => over(b, after)),
      [],
      "none under the folded table",
    );
    // a view the user moved stays where it is when the table opens
    await choose(page, "none");
    await ready(page);
    await page.mouse.move(200, 400);
    await page.mouse.down();
    await page.mouse.move(260, 430, { steps: 5 });
    await page.mouse.up();
    const moved = await drawn(page);
    await choose(page, "time");
    await ready(page);
    assert.deepEqual(await drawn(page), moved, "the user's view stays");
    assertClean(o);
    await page.context().close();
  });
});
