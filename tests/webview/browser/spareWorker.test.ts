// The VS Code panel keeps a layout worker started ahead (issue 16's warm re-trace): each graph
// the panel receives ends the old viewer's worker, and a new one would spend a few hundred ms
// starting Graphviz before the new graph could be laid out. In Chromium, on the page as
// GraphPanel writes it: the second graph's layout goes to a worker that was started before
// that graph arrived.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { FIXTURES, launch, ready, vscodePage } from "./browser";

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser.close();
});

// Every Worker the page makes: when it was made, and when it got its first layout request
// ("dot" or "layout"), in the page's clock.
const RECORD_WORKERS = `
window.__workers = [];
const RealWorker = window.Worker;
window.Worker = class extends RealWorker {
  constructor(...args) {
    super(...args);
    const rec = { made: performance.now(), firstLayout: null };
    window.__workers.push(rec);
    const post = this.postMessage.bind(this);
    this.postMessage = (m, ...rest) => {
      if (rec.firstLayout === null && m && (m.type === "dot" || m.type === "layout")) rec.firstLayout = performance.now();
      return post(m, ...rest);
    };
  }
};
`;

interface WorkerRecord {
  made: number;
  firstLayout: number | null;
}

async function postGraph(page: Page, bytes: Buffer): Promise<number> {
  return page.evaluate(
    (data) => {
      const at = performance.now();
      window.postMessage(
        { type: "graph", data: new Uint8Array(data).buffer, origin: { uri: "file:///m.py", target: "M", title: "Forward pass: M" } },
        "*",
      );
      return at;
    },
    [...bytes],
  );
}

const workers = (page: Page): Promise<WorkerRecord[]> => page.evaluate(() => (window as unknown as { __workers: WorkerRecord[] }).__workers);

describe("the panel's spare layout worker", () => {
  test("a re-traced graph is laid out by a worker started before it came", async () => {
    const bytes = readFileSync(join(FIXTURES, "compare.msgpack"));
    const { page, errors, close } = await vscodePage(browser, { init: RECORD_WORKERS });
    await postGraph(page, bytes);
    await ready(page);
    // Once the page is quiet, a second worker starts: the spare.
    await page.waitForFunction(() => (window as unknown as { __workers: unknown[] }).__workers.length >= 2, undefined, { timeout: 15_000 });
    const arrived = await postGraph(page, bytes);
    await page.waitForFunction(
      (t) => (window as unknown as { __workers: WorkerRecord[] }).__workers.some((w) => w.firstLayout !== null && w.firstLayout >= t),
      arrived,
      { timeout: 30_000 },
    );
    await ready(page);
    const all = await workers(page);
    const second = all.find((w) => w.firstLayout !== null && w.firstLayout >= arrived)!;
    assert.ok(second.made < arrived, `the second graph's worker was started ${(second.made - arrived).toFixed(0)} ms after the graph came`);
    assert.equal(all.filter((w) => w.firstLayout !== null).length, 2, "one worker per graph laid out");
    assert.deepEqual(errors, []);
    await close();
  });
});
