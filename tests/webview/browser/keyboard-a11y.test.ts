// What a screen reader hears and what the keyboard does (QA a11y report): the live status
// line names each box the arrows reach (kind, name, path, shapes), says what Space opened,
// announces search results; letter shortcuts stay out of the buttons' way.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { launch, open, ready } from "./browser";

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const status = async (page: Page): Promise<string> => (await page.locator("[data-role=status]").textContent()) ?? "";
const selectedKey = (page: Page): Promise<string | null> =>
  page.evaluate(() => document.querySelector<HTMLElement>('[data-selected="true"]')?.dataset.key ?? null);

/** Arrow down the focused graph until `want` holds for the selected box's key (at most 40). */
async function walkTo(page: Page, want: (key: string) => boolean): Promise<string> {
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press("ArrowDown");
    const key = await selectedKey(page);
    if (key && want(key)) return key;
  }
  throw new Error("not reached");
}

describe("what the arrows say", () => {
  test("each box is announced with its kind, name, path or count, and its shapes in → out", async () => {
    const o = await open(browser, "gpt2");
    const { page } = o;
    await page.locator(".ts-svg").focus();
    const group = await walkTo(page, (k) => k.startsWith("g"));
    const said = await status(page);
    assert.match(said, /^group GPT2Block ×12 h\.0 … h\.11, \d+(×\d+)+ → \d+(×\d+)+\. .*Space opens or closes it/, said);
    // its <g> is labelled with the same words, and the card is the graph's description
    const g = page.locator(`[data-key="${group}"]`).first();
    assert.equal(await g.getAttribute("aria-label"), said.slice(0, said.indexOf(". ")));
    assert.ok(["img", "treeitem"].includes((await g.getAttribute("role")) ?? ""));
    const tipId = await page.locator(".ts-tooltip").getAttribute("id");
    assert.ok(tipId, "the card has an id");
    assert.equal(await page.locator(".ts-svg").getAttribute("aria-describedby"), tipId);

    // Space: "opened", and what it shows, not the layout's statistics
    await page.keyboard.press(" ");
    await page.waitForTimeout(50);
    await ready(page);
    await page.waitForFunction(() => /opened/.test(document.querySelector("[data-role=status]")?.textContent ?? ""));
    const opened = await status(page);
    assert.match(opened, /^GPT2Block ×12 opened: \d+ boxes$/, opened);

    // two blocks of one class sound different: each says its path
    const a = await walkTo(page, (k) => k.startsWith("n"));
    const first = await status(page);
    assert.ok(a);
    let second = first;
    for (let i = 0; i < 40 && (second === first || !/^module /.test(second)); i++) {
      await page.keyboard.press("ArrowDown");
      second = await status(page);
    }
    assert.notEqual(first, second);

    // − closes it again: "closed"
    await page.keyboard.press("Escape");
    await walkTo(page, (k) => k === group);
    await page.keyboard.press("-");
    await page.waitForTimeout(50);
    await ready(page);
    await page.waitForFunction(() => /closed/.test(document.querySelector("[data-role=status]")?.textContent ?? ""));
    assert.match(await status(page), /^GPT2Block ×12 closed$/);
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });

  test("a module's announcement has its path; Escape puts the status line back", async () => {
    const o = await open(browser, "gpt2");
    const { page } = o;
    const summary = await status(page);
    await page.locator(".ts-svg").focus();
    let said = "";
    for (let i = 0; i < 40 && !said; i++) {
      await page.keyboard.press("ArrowDown");
      const kind = await page.evaluate(() => document.querySelector<HTMLElement>('.ts-nodes [data-selected="true"]')?.dataset.kind);
      if (kind === "module") said = await status(page);
    }
    const path = await page.evaluate(() => document.querySelector<HTMLElement>('[data-selected="true"]')!.dataset.path!);
    assert.ok(said.startsWith("module "), said);
    assert.ok(said.includes(` ${path},`) || said.includes(` ${path}.`), `${said} has the path ${path}`);
    assert.match(said, /→/);
    await page.keyboard.press("Escape");
    assert.equal(await status(page), summary, "Escape clears what the selection said");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });
});

describe("search, the banner, the toolbar", () => {
  test("search counts are announced, Enter says the match it landed on, Escape keeps the focus in the box", async () => {
    const o = await open(browser, "gpt2");
    const { page } = o;
    const count = page.locator("[data-role=search-count]");
    assert.equal(await count.getAttribute("aria-live"), "polite");
    await page.keyboard.press("/");
    await page.keyboard.type("zzzz");
    assert.equal(await count.textContent(), "0 found");
    await page.locator("[data-role=search]").fill("");
    await page.keyboard.type("attn");
    await page.keyboard.press("Enter");
    await page.waitForTimeout(50);
    await ready(page);
    assert.match((await count.textContent()) ?? "", /^1 \/ \d+$/);
    assert.match(await status(page), /^1 of \d+: \S+ /, "the status line says the match it went to");
    await page.keyboard.press("Escape");
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.role), "search", "focus stays in the box");
    assert.equal(await page.locator("[data-role=search]").inputValue(), "");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });

  test("Space on the error banner goes to the error, as Enter does", async () => {
    const o = await open(browser, "error");
    const { page } = o;
    await page.locator(".ts-banner").focus();
    await page.keyboard.press(" ");
    await page.waitForTimeout(50);
    await ready(page);
    await page.waitForSelector('[data-selected="true"]', { timeout: 5000 });
    assert.equal(await page.evaluate(() => window.scrollY), 0, "Space did not scroll the page");
    await page.context().close();
  });

  test("letters and digits are the graph's only where no control has the focus; / still searches", async () => {
    const o = await open(browser, "gpt2");
    const { page } = o;
    const drawn = (): Promise<number> => page.locator("g.ts-node").count();
    const before = await drawn();
    await page.locator("[data-action=export-png]").focus();
    await page.keyboard.press("e");
    await page.keyboard.press("5");
    await page.waitForTimeout(300);
    await ready(page);
    assert.equal(await drawn(), before, "e and 5 on a button did nothing");
    await page.locator("[data-action=fit]").focus();
    await page.keyboard.press("/");
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.role), "search", "/ searches");
    await page.locator(".ts-svg").focus();
    await page.keyboard.press("e");
    await page.waitForTimeout(50);
    await ready(page);
    assert.ok((await drawn()) > before, "e on the graph expands");
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });

  test("the depth buttons and value have names", async () => {
    const o = await open(browser, "gpt2");
    const { page } = o;
    assert.equal(await page.locator("[data-action=depth-down]").getAttribute("aria-label"), "Show one level less");
    assert.equal(await page.locator("[data-action=depth-up]").getAttribute("aria-label"), "Show one level more");
    const snap = await page.locator(".ts-depth").ariaSnapshot();
    assert.match(snap, /Depth/);
    assert.match(snap, /Show one level less/);
    await page.context().close();
  });
});

/** The view's zoom: the scale of the viewport's transform. */
const scale = async (page: Page): Promise<number> => {
  const t = (await page.locator(".ts-viewport").getAttribute("transform")) ?? "";
  return Number(/scale\(([\d.e-]+)/.exec(t)?.[1] ?? "1");
};
/** Whether the selected box lies whole in the graph area. */
const selectedInView = (page: Page): Promise<boolean> =>
  page.evaluate(() => {
    const s = document.querySelector(".ts-svg")!.getBoundingClientRect();
    const b = document.querySelector('.ts-nodes [data-selected="true"] .ts-box')!.getBoundingClientRect();
    return b.left >= s.left && b.top >= s.top && b.right <= s.right && b.bottom <= s.bottom;
  });

describe("zooming from the keyboard", () => {
  test("after Fit on a large graph, ] and [ zoom in and out about the selected box, which stays in view", async () => {
    const o = await open(browser, "gpt2");
    const { page } = o;
    await page.locator(".ts-svg").focus();
    await page.keyboard.press("e");
    await page.waitForTimeout(50);
    await ready(page);
    await page.keyboard.press("f");
    const fitted = await scale(page);
    assert.ok(fitted < 0.3, `the whole graph fitted: tiny boxes (${fitted})`);
    // a box far from the view's middle: the zoom must come to it
    for (let i = 0; i < 25; i++) await page.keyboard.press("ArrowDown");
    const key = await selectedKey(page);
    assert.ok(key);
    let k = fitted;
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press("]");
      const now = await scale(page);
      assert.ok(now > k, `] zooms in: ${k} → ${now}`);
      k = now;
      assert.ok(await selectedInView(page), "the selected box is in view");
    }
    assert.ok(k >= 0.8, `a few presses reach a readable zoom (${k})`);
    assert.equal(await selectedKey(page), key, "the selection stays");
    assert.match(await status(page), /^Zoom \d+ %/);
    await page.keyboard.press("[");
    assert.ok((await scale(page)) < k, "[ zooms out");
    assert.ok(await selectedInView(page));
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });
});

describe("the heaviest-nodes table", () => {
  test("each row has a button named for its node and what activating does; Tab, Enter and Space use it", async () => {
    const o = await open(browser, "gpt2");
    const { page } = o;
    await page.selectOption("[data-role=overlay]", "flops");
    await page.waitForSelector("[data-role=table] tbody tr[data-id]");
    const rows = page.locator("[data-role=table] tbody tr[data-id]");
    const ids = await rows.evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.id!));
    // (one button per row, its name the row's node, where it is, its value, then the action)
    const names = await rows.evaluateAll((els) => els.map((e) => e.querySelectorAll("td")[1]!.textContent!));
    const snap = await page.locator("[data-role=table] tbody").ariaSnapshot();
    for (const name of names.slice(0, 3)) {
      assert.match(
        snap,
        new RegExp(`button "${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} in .*FLOPs.*: show it in the graph and open its line"`),
        snap,
      );
    }
    assert.equal(await rows.first().getByRole("button").count(), 1);
    const focused = (): Promise<{ role: string; row: string | null }> =>
      page.evaluate(() => {
        const a = document.activeElement as HTMLElement;
        return { role: a.getAttribute("role") ?? a.tagName.toLowerCase(), row: a.closest<HTMLElement>("tr[data-id]")?.dataset.id ?? null };
      });
    await page.locator("[data-role=table] th[data-sort=share]").focus();
    await page.keyboard.press("Tab");
    assert.deepEqual(await focused(), { role: "button", row: ids[0] });
    await page.keyboard.press("Enter");
    await page.locator(`.ts-nodes > g[data-id="${ids[0]}"][data-selected="true"]`).waitFor({ timeout: 15_000 });
    await ready(page);
    await page.keyboard.press("Tab");
    assert.deepEqual(await focused(), { role: "button", row: ids[1] });
    await page.keyboard.press(" ");
    await page.locator(`.ts-nodes > g[data-id="${ids[1]}"][data-selected="true"]`).waitFor({ timeout: 15_000 });
    assert.deepEqual(o.errors, []);
    await page.context().close();
  });
});
