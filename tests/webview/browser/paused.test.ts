// "You are here" and a hover's "Show in graph" in the VS Code webview page, in Chromium: the
// extension's `pausedAt` marks the paused line's calls (`data-here`) and what is still ahead
// (`data-ahead`); a step (another `pausedAt`) moves them; null clears them; `revealNode` opens
// the way to a node and selects it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { decode } from "@msgpack/msgpack";
import type { Browser, Page } from "playwright-core";
import { FIXTURES, launch, ready, shot, vscodePage } from "./browser";

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser.close();
});

interface RawNode {
  id: number;
  kind: string;
  path: string;
  parent: number | null;
  site: { file: string; line: number; func: string } | null;
}

async function post(page: Page, msg: unknown): Promise<void> {
  await page.evaluate((m) => window.postMessage(m, "*"), msg);
}

async function postGraph(page: Page, bytes: Buffer): Promise<void> {
  await page.evaluate(
    (data) => {
      const u8 = new Uint8Array(data);
      window.postMessage(
        { type: "graph", data: u8.buffer, origin: { uri: "torchscope-debug:paused-frame", target: "self", title: "Forward pass: GPT2Model" } },
        "*",
      );
    },
    [...bytes],
  );
}

/** The drawn boxes carrying `attr`, by module path (op boxes by their data-key). */
function marked(page: Page, attr: "data-here" | "data-ahead"): Promise<string[]> {
  return page.$$eval(`.ts-node[${attr}="true"]`, (els) => els.map((e) => (e as HTMLElement).dataset.path || (e as HTMLElement).dataset.key || "?"));
}

describe("paused frame marks", () => {
  test("the paused line's call is here, later calls ahead; a step moves the mark; null clears it", async () => {
    const bytes = readFileSync(join(FIXTURES, "gpt2.msgpack"));
    const nodes = (decode(bytes) as { nodes: RawNode[] }).nodes;
    // GPT2Model.forward, paused on the line that calls self.wte (the embeddings), then on ln_f's.
    const wte = nodes.find((n) => n.kind === "module" && n.path === "wte")!;
    const lnf = nodes.find((n) => n.kind === "module" && n.path === "ln_f")!;
    const inFile = wte.site!.file;
    const { page, errors, close } = await vscodePage(browser);
    await postGraph(page, bytes);
    await ready(page);
    await post(page, { type: "pausedAt", at: { file: inFile, line: wte.site!.line, func: wte.site!.func } });
    await page.waitForSelector('.ts-node[data-path="wte"][data-here="true"]');
    await ready(page);
    const ahead = await marked(page, "data-ahead");
    assert.ok(ahead.includes("ln_f"), `ln_f runs after wte: ${ahead.join(", ")}`);
    assert.ok(!ahead.includes("wte"));
    assert.deepEqual(await marked(page, "data-here"), ["wte"]);
    // The model's input has run; it is neither here nor ahead.
    assert.equal(await page.locator('.ts-node[data-kind="input"][data-ahead]').count(), 0);
    // Drawn distinctly: the here box outlined in the debugger's current-line colour, ahead faded.
    const stroke = await page.locator('.ts-node[data-path="wte"] .ts-box').evaluate((e) => getComputedStyle(e).stroke);
    assert.equal(stroke, "rgb(255, 204, 0)");
    const faded = await page.locator('.ts-node[data-path="ln_f"]').evaluate((e) => getComputedStyle(e).opacity);
    assert.ok(Number(faded) < 1, `ahead is faded (${faded})`);
    await shot(page, "paused-here-wte");

    // A step to ln_f's line: the mark moves, what ran before is no longer ahead.
    await post(page, { type: "pausedAt", at: { file: inFile, line: lnf.site!.line, func: lnf.site!.func } });
    await page.waitForSelector('.ts-node[data-path="ln_f"][data-here="true"]');
    await ready(page);
    assert.deepEqual(await marked(page, "data-here"), ["ln_f"]);
    const after = await marked(page, "data-ahead");
    assert.ok(!after.includes("wte") && !after.includes("h"), `ran before ln_f: ${after.join(", ")}`);
    await shot(page, "paused-here-lnf");

    // The program left the call: no marks.
    await post(page, { type: "pausedAt", at: null });
    await page.waitForFunction(() => !document.querySelector("[data-here], [data-ahead]"));
    assert.deepEqual(errors, []);
    await close();
  });

  test("revealNode opens the way to a node inside a collapsed module and selects it", async () => {
    const bytes = readFileSync(join(FIXTURES, "gpt2.msgpack"));
    const nodes = (decode(bytes) as { nodes: RawNode[] }).nodes;
    // An op inside the first block's attention: hidden in the opening view.
    const attn = nodes.find((n) => n.kind === "module" && n.path === "h.0.attn")!;
    const inner = nodes.find((n) => n.parent === attn.id && n.kind === "op")!;
    const { page, errors, close } = await vscodePage(browser);
    await postGraph(page, bytes);
    await ready(page);
    assert.equal(await page.locator(`[data-key="n${inner.id}"]`).count(), 0, "hidden at first");
    await post(page, { type: "revealNode", node: inner.id, nodes: [inner.id] });
    await page.waitForSelector(`.ts-node[data-key="n${inner.id}"][data-selected="true"]`);
    assert.deepEqual(errors, []);
    await close();
  });

  test("stale marks a graph its re-trace failed to replace, until the next graph comes", async () => {
    const bytes = readFileSync(join(FIXTURES, "gpt2.msgpack"));
    const { page, errors, close } = await vscodePage(browser);
    await postGraph(page, bytes);
    await ready(page);
    const stale = page.locator('[data-role="stale"]');
    assert.equal(await stale.isVisible(), false, "a graph just traced is not out of date");
    await post(page, { type: "stale", message: "syntax error in model.py:5: '(' was never closed" });
    await stale.waitFor({ state: "visible" });
    assert.match(
      (await stale.textContent()) ?? "",
      /^Out of date: syntax error in model\.py:5: '\(' was never closed\. This graph is from the last trace that worked\.$/,
    );
    await shot(page, "stale-after-failed-retrace");
    await post(page, { type: "stale", message: null });
    await stale.waitFor({ state: "hidden" });
    await post(page, { type: "stale", message: "the model raised." });
    await stale.waitFor({ state: "visible" });
    assert.equal(await stale.textContent(), "Out of date: the model raised. This graph is from the last trace that worked.");
    // the next graph (the re-trace that worked) comes without the mark
    await postGraph(page, bytes);
    await ready(page);
    assert.equal(await page.locator('[data-role="stale"]').isVisible(), false);
    assert.deepEqual(errors, []);
    await close();
  });
});
