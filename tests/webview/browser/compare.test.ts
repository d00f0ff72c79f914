// The compare page (`torchscope diff A B --format html`) in Chromium: a model before and after
// an edit (tests/webview/make_fixtures.py, compare_page): block 3 of six got a GELU, the norm
// is gone, a dropout is new, the head is wider. Marks, badges, hover, next / previous change.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Browser, Locator, Page } from "playwright-core";
import { readFileSync } from "node:fs";
import { launch, open, ready, shot, type Opened } from "./browser";

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

/** A drawn box by its module path (or for an op, its label) and kind. */
const byPath = (page: Page, path: string): Locator => page.locator(`.ts-node[data-path="${path}"]`);

function assertClean(o: Opened): void {
  assert.deepEqual(o.errors, []);
  assert.deepEqual(
    o.requests.filter((u) => !/^(file|blob|data):/.test(u)),
    [],
  );
}

/** The theme colour a CSS variable resolves to, as the browser writes colours. */
async function themeColor(page: Page, name: string): Promise<string> {
  return page.evaluate((n) => {
    const probe = document.createElement("div");
    probe.style.color = `var(${n})`;
    document.querySelector(".ts-root")!.appendChild(probe);
    const c = getComputedStyle(probe).color;
    probe.remove();
    return c;
  }, name);
}

/** Press a key and wait for the layout it may start to be drawn. */
async function pressAndWait(page: Page, key: string): Promise<void> {
  await page.keyboard.press(key);
  await page.waitForTimeout(50);
  await ready(page);
}

/** The hover card's rows as "label | value" (the label of a continued row is ""). */
async function tipRows(page: Page): Promise<string> {
  const rows = await page.locator(".ts-tooltip tr").evaluateAll((trs) => trs.map((tr) => Array.from(tr.children, (c) => c.textContent).join(" | ")));
  return rows.join("\n");
}

async function status(page: Page): Promise<string> {
  return (await page.locator("[data-role=status]").textContent()) ?? "";
}

/** The selected element: exactly one, and its centre near the stage's centre. */
async function assertSelectedCentred(page: Page): Promise<Locator> {
  const sel = page.locator('[data-selected="true"]');
  await sel.waitFor();
  assert.equal(await sel.count(), 1);
  const s = await box(page.locator(".ts-svg"));
  const frame = sel.locator(":scope > .ts-box, :scope > .ts-frame").first();
  const b = await box(frame);
  const dx = b.x + b.width / 2 - (s.x + s.width / 2);
  const dy = b.y + b.height / 2 - (s.y + s.height / 2);
  assert.ok(Math.abs(dx) < 8 && Math.abs(dy) < 8, `centred: off by ${dx.toFixed(1)}, ${dy.toFixed(1)}`);
  return sel;
}

describe("compare page", () => {
  test("every drawn node says its status; colours, ghosts and badges show what changed", async () => {
    const o = await open(browser, "compare");
    const { page } = o;
    await shot(page, "compare-initial");
    // The opening view: the root frame and its children.
    const nodes = page.locator(".ts-node");
    const n = await nodes.count();
    assert.ok(n >= 7, `${n} boxes drawn`);
    for (let i = 0; i < n; i++) {
      assert.match((await nodes.nth(i).getAttribute("data-status")) ?? "", /^(same|added|removed|changed)$/);
    }
    assert.equal(await byPath(page, "norm").getAttribute("data-status"), "removed");
    assert.equal(await byPath(page, "drop").getAttribute("data-status"), "added");
    assert.equal(await byPath(page, "head").getAttribute("data-status"), "changed");
    assert.equal(await byPath(page, "embed").getAttribute("data-status"), "same");
    assert.equal(await byPath(page, "blocks").getAttribute("data-status"), "same");
    assert.equal(await page.locator(".ts-node[data-kind=output]").getAttribute("data-status"), "changed");
    assert.equal(await page.locator(".ts-cluster[data-path='']").getAttribute("data-status"), "changed", "the model's output changed");

    // Colours from the theme variables: the changed head outlined in --ts-changed, the added
    // dropout in --ts-added; the removed norm a faded, dashed ghost in --ts-removed.
    const look = (path: string) =>
      byPath(page, path).evaluate((g) => {
        const r = g.querySelector(".ts-box")!;
        const cs = getComputedStyle(r);
        return { stroke: cs.stroke, dash: cs.strokeDasharray, opacity: Number(getComputedStyle(g).opacity), fill: cs.fill };
      });
    const [changed, added, removed] = await Promise.all(["--ts-changed", "--ts-added", "--ts-removed"].map((v) => themeColor(page, v)));
    assert.notEqual(changed, added);
    assert.equal((await look("head")).stroke, changed);
    assert.equal((await look("drop")).stroke, added);
    const ghost = await look("norm");
    assert.equal(ghost.stroke, removed);
    assert.notEqual(ghost.dash, "none", "dashed");
    assert.ok(ghost.opacity < 0.8, `faded (${ghost.opacity})`);
    const same = await look("embed");
    assert.notEqual(same.stroke, changed);
    assert.equal(same.opacity, 1);
    // The edges into the ghost and out of the new dropout carry their status too.
    assert.equal(
      await page.locator(`.ts-edge[data-dst="${await byPath(page, "norm").getAttribute("data-key")}"]`).getAttribute("data-status"),
      "removed",
    );
    assert.equal(
      await page.locator(`.ts-edge[data-src="${await byPath(page, "drop").getAttribute("data-key")}"]`).getAttribute("data-status"),
      "added",
    );

    // Closed modules count the changes inside: blocks.3.act and its gelu; head's linear.
    assert.equal(await byPath(page, "blocks").locator("[data-role=change-badge]").textContent(), "2");
    assert.equal(await byPath(page, "head").locator("[data-role=change-badge]").textContent(), "1");
    assert.equal(await byPath(page, "embed").locator("[data-role=change-badge]").count(), 0);
    assert.equal(await byPath(page, "drop").locator("[data-role=change-badge]").count(), 0, "an added module is one change");

    // The toolbar counts nodes by status, as the CLI does.
    assert.deepEqual(await page.locator("[data-role=compare-counts] > *").allTextContents(), ["+2 added", "−2 removed", "~6 changed"]);
    assert.equal(await page.locator("[data-role=change-pos]").textContent(), "8 changes");
    assertClean(o);
    await page.context().close();
  });

  test("hover shows before → after, and what a closed box hides", async () => {
    const o = await open(browser, "compare");
    const { page } = o;
    const tip = page.locator(".ts-tooltip");
    await byPath(page, "head").locator(".ts-box").hover();
    await tip.waitFor();
    const text = await tipRows(page);
    assert.match(
      text,
      /^compare \| changed\nbefore → after \| out_features: 4 → 6\n \| params: 68 → 102\n \| output: \[2, 4\] → \[2, 6\]\nchanges inside \| 1\n/,
    );
    await shot(page, "compare-hover-changed");
    await byPath(page, "norm").locator(".ts-box").hover();
    await page.waitForFunction(() => document.querySelector(".ts-tooltip")?.textContent?.includes("removed"));
    const ghost = await tipRows(page);
    assert.match(ghost, /^compare \| removed \(only in a, before\)\nis \| torch\.nn\.modules\.normalization\.LayerNorm\n/);
    assert.match(ghost, /\nline in \| a: cmp\.py:Cmp \(HEAD\)\n/);
    await byPath(page, "blocks").locator(".ts-box").hover();
    await page.waitForFunction(() => document.querySelector(".ts-tooltip")?.textContent?.includes("changes inside"));
    assert.match(await tipRows(page), /\nchanges inside \| 2\n/);
    // A ghost's line is in version a: the status line says so when it is clicked.
    await byPath(page, "norm").locator(".ts-box").click();
    assert.match(await status(page), /in a, the version before/);
    assertClean(o);
    await page.context().close();
  });

  test("a hover says which connections are version a's (removed), apart from b's own", async () => {
    // GELU's hover said "out … to layer_norm in norm" where the norm exists only in version a
    const o = await open(browser, "compare");
    const { page } = o;
    await byPath(page, "head").locator(".ts-box").hover();
    await page.locator(".ts-tooltip").waitFor();
    const ins = (await tipRows(page)).split("\n").filter((r) => r.startsWith("in |"));
    assert.deepEqual(ins, ["in | 2×16 float32  from dropout in drop", "in | 2×16 float32  from layer_norm in norm  (removed: in a only)"]);
    await byPath(page, "blocks").locator(".ts-box").hover();
    await page.waitForFunction(() => document.querySelector(".ts-tooltip")?.textContent?.includes("changes inside"));
    const outs = (await tipRows(page)).split("\n").filter((r) => r.startsWith("out |"));
    assert.deepEqual(outs, ["out | 2×16 float32  to dropout in drop", "out | 2×16 float32  to layer_norm in norm  (removed: in a only)"]);
    await shot(page, "compare-hover-removed-link");
    assertClean(o);
    await page.context().close();
  });

  test("next / previous change open the way to each change, centre and select it", async () => {
    const o = await open(browser, "compare");
    const { page } = o;
    // 1: the model itself (its output changed): the root frame.
    await pressAndWait(page, "n");
    let sel = await assertSelectedCentred(page);
    assert.equal(await sel.getAttribute("data-path"), "");
    assert.match(await status(page), /^Cmp \(the model\) changed — output: \[2, 4\] → \[2, 6\] · change 1 of 8$/);
    assert.equal(await page.locator("[data-role=change-pos]").textContent(), "1 / 8");
    // 2: inside block 3 of six: blocks and block 3 open, the ×N folds around it stay.
    await page.click("[data-action=next-change]");
    await page.waitForFunction(() => document.querySelector("[data-role=change-pos]")?.textContent === "2 / 8");
    await ready(page);
    sel = await assertSelectedCentred(page);
    assert.equal(await sel.getAttribute("data-path"), "blocks.3.act");
    assert.equal(await sel.getAttribute("data-status"), "changed");
    assert.match(await status(page), /^blocks\.3\.act \(GELU\) changed — target: .* · change 2 of 8$/);
    await page.waitForSelector(".ts-node[data-kind=group]");
    const groups = await page.locator(".ts-node[data-kind=group] .ts-title").allTextContents();
    assert.deepEqual(groups.sort(), ["CmpBlock ×2", "CmpBlock ×3"]);
    assert.equal(await page.locator(".ts-cluster[data-path='blocks.3']").getAttribute("data-status"), "same", "block 3 only has changes inside");
    await shot(page, "compare-next-in-group");
    // 3: the gelu inside blocks.3.act (N from the graph: a focused button keeps its letters).
    await page.locator(".ts-svg").focus();
    await pressAndWait(page, "n");
    sel = await assertSelectedCentred(page);
    assert.equal(await sel.getAttribute("data-kind"), "op");
    assert.equal(await sel.getAttribute("data-status"), "changed");
    assert.match(await status(page), /^gelu changed.* · change 3 of 8$/);
    // 4: the removed norm, drawn as a ghost.
    await pressAndWait(page, "n");
    sel = await assertSelectedCentred(page);
    assert.equal(await sel.getAttribute("data-path"), "norm");
    assert.equal(await sel.getAttribute("data-status"), "removed");
    // Back: 3, and from the first, previous wraps to the last (the output).
    await pressAndWait(page, "p");
    assert.match(await status(page), /^gelu.* · change 3 of 8$/);
    await pressAndWait(page, "p");
    await pressAndWait(page, "p");
    assert.match(await status(page), / · change 1 of 8$/);
    await page.click("[data-action=prev-change]");
    await page.waitForFunction(() => document.querySelector("[data-role=change-pos]")?.textContent === "8 / 8");
    await ready(page);
    sel = await assertSelectedCentred(page);
    assert.equal(await sel.getAttribute("data-kind"), "output");
    assert.match(await status(page), /^output changed — input: \[2, 4\] → \[2, 6\] · change 8 of 8$/);
    // 7: head's linear, opened inside head (a one-op module closed at first).
    await page.locator(".ts-svg").focus();
    await pressAndWait(page, "p");
    sel = await assertSelectedCentred(page);
    assert.equal(await sel.getAttribute("data-kind"), "op");
    assert.equal(await page.locator(".ts-cluster[data-path=head]").getAttribute("data-status"), "changed");
    await shot(page, "compare-prev-head");
    assertClean(o);
    await page.context().close();
  });

  test("a narrow page: the status line says the change first and whole (it wraps), its title the same", async () => {
    const o = await open(browser, "compare", { width: 500, height: 700 });
    const { page } = o;
    await pressAndWait(page, "n");
    await pressAndWait(page, "n");
    const text = await status(page);
    assert.match(text, /^blocks\.3\.act \(GELU\) changed — target: \S+ReLU → \S+GELU · change 2 of 8$/);
    const line = page.locator("[data-role=status]");
    assert.equal(await line.getAttribute("title"), text, "the full text on hover");
    const fits = await line.evaluate((el) => ({ w: [el.scrollWidth, el.clientWidth], h: [el.scrollHeight, el.clientHeight] }));
    assert.ok(fits.w[0]! <= fits.w[1]! + 1 && fits.h[0]! <= fits.h[1]! + 1, `nothing cut: ${JSON.stringify(fits)}`);
    // The longer line takes room from the graph before the change is centred in what is left.
    await assertSelectedCentred(page);
    await shot(page, "compare-status-500");
    assertClean(o);
    await page.context().close();
  });

  test("colour by offers what the traces recorded: their costs, not the statistics they left out", async () => {
    // the fixture's traces recorded costs, not values; the page once offered only params
    const o = await open(browser, "compare");
    const { page } = o;
    const enabled = await page
      .locator('[data-role="overlay"] option')
      .evaluateAll((opts) => (opts as HTMLOptionElement[]).filter((op) => !op.disabled).map((op) => op.value));
    assert.deepEqual(enabled, ["none", "time", "flops", "bytes", "params"]);
    await page.locator('[data-role="overlay"]').selectOption("flops");
    await ready(page);
    const coloured = await page.locator('.ts-node[data-path="head"] .ts-box').evaluate((b) => getComputedStyle(b).fill);
    assert.notEqual(coloured, "none");
    assertClean(o);
    await page.context().close();
  });

  test("colour by leaves version a's ghosts out: no heat, not in the heaviest table", async () => {
    // the table listed a's removed norm among b's modules, and counted it in the total
    const o = await open(browser, "compare");
    const { page } = o;
    const ghosts = await page.locator(".ts-nodes > g[data-status=removed]").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.id));
    assert.ok(ghosts.length > 0, "a ghost is drawn");
    await page.locator('[data-role="overlay"]').selectOption("params");
    await page.waitForSelector("[data-role=table] tbody tr[data-id]");
    const rows = await page.locator("[data-role=table] tbody tr[data-id]").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.id));
    const statuses = await page.evaluate(
      (ids) => ids.map((id) => document.querySelector(`.ts-nodes > g[data-id="${id}"]`)?.getAttribute("data-status") ?? null),
      rows,
    );
    assert.ok(!rows.some((id) => ghosts.includes(id)), `a ghost in the table: ${rows.join(", ")} (ghosts ${ghosts.join(", ")})`);
    assert.ok(!statuses.includes("removed"));
    assert.equal(await page.locator(".ts-nodes > g[data-status=removed][data-heat]").count(), 0, "ghosts are not coloured");
    assert.ok((await page.locator(".ts-nodes > g[data-heat]").count()) > 0, "b's boxes are");
    await shot(page, "compare-colour-by-params");
    assertClean(o);
    await page.context().close();
  });

  test("a narrow window: the compare group wraps like the rest of the toolbar, nothing cut off", async () => {
    // at 360 px "Next change" was cut off at the window's edge, the counts and buttons wrapped inside
    const o = await open(browser, "compare", { width: 360, height: 700, dark: true });
    const { page } = o;
    for (let i = 0; i < 4; i++) await pressAndWait(page, "n");
    const cut = await page.locator(".ts-toolbar").evaluate((bar) => {
      const out: string[] = [];
      const one = (bar.querySelector("[data-action=fit]") as HTMLElement).getBoundingClientRect().height;
      const text = (bar.querySelector(".ts-model") as HTMLElement).getBoundingClientRect().height;
      for (const el of Array.from(bar.querySelectorAll<HTMLElement>("button, select, input, .ts-count, .ts-change-pos"))) {
        const r = el.getBoundingClientRect();
        const what = el.dataset.action ?? el.dataset.role ?? el.className;
        if (r.left < -0.5 || r.right > window.innerWidth + 0.5) out.push(`${what} is off the window: ${Math.round(r.left)}–${Math.round(r.right)}`);
        const line = el.matches(".ts-count, .ts-change-pos") ? text : one;
        if (r.height > line + 1.5) out.push(`${what} wraps: ${r.height} px high`);
      }
      return out;
    });
    assert.deepEqual(cut, []);
    await shot(page, "compare-toolbar-360");
    assertClean(o);
    await page.context().close();
  });

  test("dark palette: the same marks in the dark theme's colours", async () => {
    const o = await open(browser, "compare", { dark: true });
    const { page } = o;
    const changed = await themeColor(page, "--ts-changed");
    assert.equal(changed, "rgb(210, 153, 34)");
    const stroke = await byPath(page, "head").evaluate((g) => getComputedStyle(g.querySelector(".ts-box")!).stroke);
    assert.equal(stroke, changed);
    await shot(page, "compare-dark");
    assertClean(o);
    await page.context().close();
  });
});

describe("compare page marks (QA)", () => {
  test("colour by paints added and changed boxes too, their change kept in the outline", async () => {
    // QA: the status fill won over the heat: added and changed boxes stayed green and amber
    const o = await open(browser, "compare");
    const { page } = o;
    const head = page.locator('.ts-node[data-path="head"] > .ts-box').first();
    const style = () => head.evaluate((b) => ({ fill: getComputedStyle(b).fill, stroke: getComputedStyle(b).stroke }));
    const plain = await style();
    await page.locator('[data-role="overlay"]').selectOption("flops");
    await ready(page);
    assert.ok(await page.locator('.ts-node[data-path="head"][data-heat]').count(), "the head has a heat");
    const heated = await style();
    assert.notEqual(heated.fill, plain.fill, "its fill is the heat's");
    assert.equal(heated.stroke, plain.stroke, "its outline still says changed");
    assertClean(o);
    await page.context().close();
  });

  test("an unchanged input and output look like every other unchanged box, on the page and exported; changed ones keep their colour", async () => {
    // QA: on every compare page the unchanged input was the green of "added", the output an
    // orange close to the amber of "changed" (the input / output pills' own colours)
    for (const dark of [false, true]) {
      const o = await open(browser, "compare_inner", { dark });
      const { page } = o;
      const io = page.locator(".ts-node[data-kind=input], .ts-node[data-kind=output]");
      assert.equal(await io.count(), 2);
      assert.deepEqual(await io.evaluateAll((els) => els.map((e) => e.getAttribute("data-status"))), ["same", "same"]);
      const neutral = { fill: await themeColor(page, "--ts-node"), stroke: await themeColor(page, "--ts-node-border") };
      const paint = (els: Element[]) =>
        els.map((e) => {
          const cs = getComputedStyle(e.querySelector(".ts-box")!);
          return { fill: cs.fill, stroke: cs.stroke };
        });
      assert.deepEqual(await io.evaluateAll(paint), [neutral, neutral], dark ? "dark" : "light");
      await shot(page, `compare-same-io${dark ? "-dark" : ""}`);
      // The exported picture draws them so too.
      const [download] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
      const alone = await page.context().newPage();
      await alone.setContent(readFileSync((await download.path())!, "utf8"));
      assert.deepEqual(
        await alone.locator(".ts-node[data-kind=input], .ts-node[data-kind=output]").evaluateAll(paint),
        [neutral, neutral],
        "exported",
      );
      assertClean(o);
      await page.context().close();
    }
    // An output that changed or was added keeps its status colour.
    for (const [name, st] of [
      ["compare", "changed"],
      ["compare_a_raised", "added"],
    ] as const) {
      const o = await open(browser, name);
      const out = o.page.locator(".ts-node[data-kind=output]");
      assert.equal(await out.getAttribute("data-status"), st);
      const stroke = await out.locator(":scope > .ts-box").evaluate((b) => getComputedStyle(b).stroke);
      assert.equal(stroke, await themeColor(o.page, `--ts-${st}`), `${name}: the ${st} output`);
      assertClean(o);
      await o.page.context().close();
    }
  });

  test("HEAD alone raised: the banner says so, and is no button (nothing of a's to show)", async () => {
    const o = await open(browser, "compare_a_raised");
    const { page } = o;
    const banner = page.locator(".ts-banner").first();
    await banner.waitFor();
    assert.match((await banner.textContent()) ?? "", /^a: raised\.py:CmpRaised \(HEAD\) raised ValueError: /);
    assert.equal(await banner.getAttribute("role"), "status");
    const added = page.locator('[data-role=compare-counts] [data-status="added"]');
    assert.match((await added.textContent()) ?? "", /added \/ not reached$/);
    assertClean(o);
    await page.context().close();
  });

  test("a changed module hiding the failing call of b is outlined in red", async () => {
    // QA: the changed amber outline won over the error's red
    const o = await open(browser, "compare_raised");
    const { page } = o;
    const head = page.locator('.ts-node[data-path="head"]').first();
    await head.waitFor();
    assert.equal(await head.getAttribute("data-status"), "changed");
    assert.match((await head.getAttribute("class")) ?? "", /ts-has-error/);
    const stroke = await head.locator(":scope > .ts-box").evaluate((b) => getComputedStyle(b).stroke);
    assert.equal(stroke, await themeColor(page, "--ts-error"));
    await shot(page, "compare-raised-error-outline");
    // QA: the banner said "ValueError: …" without the side, and what b never reached after
    // its error was counted as removed without a word
    const banner = page.locator(".ts-banner").first();
    assert.match((await banner.textContent()) ?? "", /^b: raised\.py:CmpRaised raised ValueError: /);
    const removed = page.locator('[data-role=compare-counts] [data-status="removed"]');
    assert.match((await removed.textContent()) ?? "", /removed \/ not reached$/);
    assert.match((await removed.getAttribute("title")) ?? "", /raised ValueError/);
    // the exported picture outlines it too (review: the export drew the comparison's marks only)
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("[data-action=export-svg]")]);
    const svg = readFileSync((await download.path())!, "utf8");
    const exported = new DOMParserLike(svg).classOf('[data-path="head"]');
    assert.match(exported, /ts-has-error/, `the exported head: class "${exported}"`);
    assertClean(o);
    await page.context().close();
  });
});

/** The class of the first element of an exported SVG's text whose attributes match `sel`
 * (`[data-path="head"]`), read with a regular expression: no DOM in node. */
class DOMParserLike {
  constructor(private readonly text: string) {}
  classOf(sel: string): string {
    const attr = /^\[([\w-]+)="([^"]*)"\]$/.exec(sel)!;
    const tag = new RegExp(`<g\\b[^>]*${attr[1]}="${attr[2]}"[^>]*>`).exec(this.text)?.[0] ?? "";
    return /class="([^"]*)"/.exec(tag)?.[1] ?? "";
  }
}
