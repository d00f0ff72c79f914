// Viewer benchmark: torchscope's standalone page against torchvista's, in the same Chromium
// and the same run. Pages come from bench/viewer/make_pages.py (bench/viewer/pages/).
//
//   node --import tsx bench/viewer/run.ts [--models gpt2,t5,llama32,synth4000] [--tools torchscope,torchvista]
//                                         [--expands 6] [--timeout 120] [--out bench/viewer/results.json]
//
// Per page and model, all timed inside the page (performance.now(), origin = navigation start),
// so the DevTools-protocol round trips of a loaded machine don't count:
// - first draw: navigation start → the first drawn graph. torchscope: the root's
//   data-state becomes "ready" (a MutationObserver injected before the page's scripts records
//   the moment); also its own performance marks (boot, layout-start, worker-ready, layout-done,
//   drawn). torchvista: the first batch of graph nodes (g.node_*) added to the document (its
//   layout and drawing are one synchronous task, so this is the end of that task).
// - one expand: a click on a collapsed module's expand control (a synthetic click event
//   dispatched on it: both pages handle `click`) → drawn again; the click's own timestamp is
//   the start. Different modules, in document order, each from the opening view (torchscope:
//   collapse-all between them, a cached layout; torchvista: its cluster's collapse control).
// - expand all: torchscope: click [data-action=expand-all] → ready. torchvista has no such
//   control: its page written with collapse_modules_after_depth=99 (every module open) is
//   loaded and timed to its first draw.
// - long tasks: a PerformanceObserver({type: "longtask"}) injected with addInitScript; the
//   longest during load, during the expands, during expand-all.
// Each action has a timeout (default 120 s); a page still busy then is reported as such and
// closed.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { launch } from "../../tests/chromium";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { execSync } from "node:child_process";
import { cpus, loadavg } from "node:os";

const HERE = import.meta.dirname;
const PAGES = join(HERE, "pages");

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const MODELS = arg("models", "gpt2,t5,llama32,synth4000").split(",");
const TOOLS = arg("tools", "torchscope,torchvista").split(",");
const EXPANDS = Number(arg("expands", "6"));
const TIMEOUT = Number(arg("timeout", "120")) * 1000;
const OUT = arg("out", join(HERE, "results.json"));

// Injected before any page script: long tasks, data-state changes, graph-node insertions,
// click timestamps.
function probe(): void {
  const b = {
    long: [] as { start: number; dur: number }[],
    states: [] as { t: number; s: string }[],
    draws: [] as { t: number; n: number }[],
    clicks: [] as number[],
  };
  (globalThis as any).__bench = b;
  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) b.long.push({ start: e.startTime, dur: e.duration });
    }).observe({ type: "longtask", buffered: true });
  } catch {
    /* no longtask support */
  }
  document.addEventListener("click", (ev) => b.clicks.push(ev.timeStamp), true);
  const mo = new MutationObserver((recs) => {
    const t = performance.now();
    let n = 0;
    for (const r of recs) {
      if (r.type === "attributes" && r.attributeName === "data-state") {
        const s = (r.target as Element).getAttribute("data-state");
        if (s) b.states.push({ t, s });
      } else if (r.type === "childList") {
        r.addedNodes.forEach((a) => {
          if (a instanceof Element && /(^|\s)node_/.test(a.getAttribute("class") ?? "")) n++;
        });
      }
    }
    if (n) b.draws.push({ t, n });
  });
  const start = () => mo.observe(document.documentElement, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state"] });
  if (document.documentElement) start();
  else document.addEventListener("readystatechange", start, { once: true });
}

interface Action {
  ms: number | null; // null: did not finish
  error?: string;
}

interface Row {
  model: string;
  tool: string;
  status: string;
  error?: string;
  pageBytes?: number;
  first?: Action;
  marks?: Record<string, number>;
  responseEnd?: number;
  domInteractive?: number;
  expands?: { target: string; ms: number | null }[];
  expandMedian?: number | null;
  expandAll?: Action;
  expandAllNodes?: number | null;
  expandAllStatus?: string;
  longest?: { load: number; expands: number; expandAll: number; all: number; stillBusy?: boolean };
  requests?: string[];
}

function median(xs: number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Wait for `fn` in the page, with a Node-side deadline too (a frozen page can't answer).
 * A call that hasn't answered in 5 s stays pending (a busy page answers late) and another
 * starts beside it (a call lost in a navigation never answers). */
async function until<T>(page: Page, fn: (a: any) => T, a: unknown, timeout: number): Promise<T | null> {
  const deadline = Date.now() + timeout;
  let found: T | null = null;
  const pending = new Set<Promise<void>>();
  while (found == null && Date.now() < deadline) {
    let p: Promise<void> | null = null;
    p = page
      .evaluate(fn as any, a)
      .then(
        (v) => {
          if (v && found == null) found = v as T;
        },
        () => {},
      )
      .finally(() => pending.delete(p!));
    pending.add(p);
    await Promise.race([...pending, sleep(Math.min(Math.max(0, deadline - Date.now()), 5000))]);
    if (found == null) await sleep(50);
  }
  return found;
}

async function newPage(b: Browser): Promise<{ ctx: BrowserContext; page: Page; requests: string[] }> {
  const ctx = await b.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const requests: string[] = [];
  page.on("request", (r) => {
    if (!r.url().startsWith("file:") && !r.url().startsWith("blob:") && !r.url().startsWith("data:")) requests.push(r.url());
  });
  // tsx (esbuild keepNames) wraps named inner functions in __name(): define it in the page.
  await page.addInitScript({ content: "globalThis.__name = globalThis.__name || ((f) => f);" });
  await page.addInitScript(probe);
  return { ctx, page, requests };
}

async function close(ctx: BrowserContext): Promise<void> {
  await Promise.race([ctx.close().catch(() => {}), sleep(15_000)]);
}

const longMax = (long: { start: number; dur: number }[], from: number, to: number) =>
  Math.round(Math.max(0, ...long.filter((l) => l.start >= from && l.start < to).map((l) => l.dur)));

// ---- torchscope -------------------------------------------------------------------------

async function benchTorchscope(b: Browser, model: string, file: string): Promise<Row> {
  const row: Row = { model, tool: "torchscope", status: "ok" };
  const { ctx, page, requests } = await newPage(b);
  try {
    await page.goto(pathToFileURL(file).href, { waitUntil: "commit", timeout: TIMEOUT });
    const firstReady = await until(page, () => (globalThis as any).__bench.states.find((s: any) => s.s === "ready")?.t, null, TIMEOUT);
    row.first = { ms: firstReady ?? null };
    if (firstReady == null) throw new Error(`no first draw within ${TIMEOUT / 1000} s`);
    Object.assign(
      row,
      await page.evaluate(() => {
        const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
        const marks: Record<string, number> = {};
        for (const m of performance.getEntriesByType("mark")) if (!(m.name in marks)) marks[m.name] = m.startTime;
        return { marks, responseEnd: n.responseEnd, domInteractive: n.domInteractive };
      }),
    );
    const tLoad = await page.evaluate(() => performance.now());

    // One expand, several modules: collapsed modules and ×N groups in the opening view.
    const targets = await page.evaluate(() =>
      Array.from(document.querySelectorAll(".ts-node [data-toggle]"))
        .map((e) => e.getAttribute("data-toggle")!)
        .filter((k) => /^[ng]\d+$/.test(k)),
    );
    row.expands = [];
    const readyAfter = (n0: number) =>
      until(
        page,
        (n0: number) => {
          const b = (globalThis as any).__bench;
          const s = b.states.slice(n0).find((s: any) => s.s === "ready");
          return s ? s.t - b.clicks[b.clicks.length - 1] : null;
        },
        n0,
        TIMEOUT,
      );
    const nStates = () => page.evaluate(() => (globalThis as any).__bench.states.length as number);
    const expand = async (key: string): Promise<number | null> => {
      const n0 = await nStates();
      await page.evaluate(
        (k) => document.querySelector(`.ts-node [data-toggle="${k}"]`)!.dispatchEvent(new MouseEvent("click", { bubbles: true })),
        key,
      );
      return readyAfter(n0);
    };
    // Level 0: the opening view's modules, collapse-all between them (a cached layout). If
    // it has fewer than EXPANDS, level 1: open a group (or the first module), time those inside,
    // each collapsed again with its own control (cached) before the next.
    let restore = async (_key: string): Promise<void> => {
      const n1 = await nStates();
      await page.evaluate(() => document.querySelector<HTMLElement>("[data-action=collapse-all]")!.click());
      await readyAfter(n1);
    };
    const done = new Set<string>();
    const toggles = () =>
      page.evaluate(() =>
        Array.from(document.querySelectorAll(".ts-node [data-toggle]"))
          .map((e) => e.getAttribute("data-toggle")!)
          .filter((k) => /^[ng]\d+$/.test(k)),
      );
    let level = targets;
    for (let depth = 0; depth < 2 && row.expands.length < EXPANDS; depth++) {
      for (const key of level) {
        if (row.expands.length >= EXPANDS) break;
        if (done.has(key)) continue;
        done.add(key);
        const ms = await expand(key);
        row.expands.push({ target: key, ms });
        if (ms == null) throw new Error(`expand ${key}: not drawn within ${TIMEOUT / 1000} s`);
        await restore(key);
      }
      // open a ×N group if there is one (a one-op wrapper would show no modules inside)
      const base = level.find((k) => k.startsWith("g")) ?? level[0];
      if (row.expands.length >= EXPANDS || !base) break;
      await expand(base);
      level = (await toggles()).filter((k) => !done.has(k));
      restore = async (key: string) => {
        const n1 = await nStates();
        const ok = await page.evaluate((k) => {
          const t = document.querySelector(`[data-toggle="${k}"]`);
          t?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
          return !!t;
        }, key);
        if (ok) await readyAfter(n1);
      };
    }
    // back to the opening view for expand-all
    {
      const n1 = await nStates();
      await page.evaluate(() => document.querySelector<HTMLElement>("[data-action=collapse-all]")!.click());
      await readyAfter(n1);
    }
    row.expandMedian = median(row.expands.map((e) => e.ms!).filter((x) => x != null));
    const tExp = await page.evaluate(() => performance.now());

    // Expand all.
    const n0 = await page.evaluate(() => (globalThis as any).__bench.states.length);
    await page.evaluate(() =>
      document.querySelector<HTMLElement>("[data-action=expand-all]")!.dispatchEvent(new MouseEvent("click", { bubbles: true })),
    );
    const all = await until(
      page,
      (n0: number) => {
        const b = (globalThis as any).__bench;
        const s = b.states.slice(n0).find((s: any) => s.s === "ready");
        return s ? s.t - b.clicks[b.clicks.length - 1] : null;
      },
      n0,
      TIMEOUT,
    );
    row.expandAll = { ms: all };
    if (all != null) row.expandAllStatus = (await page.locator("[data-role=status]").textContent()) ?? "";
    const m = /([\d,]+) drawn/.exec(row.expandAllStatus ?? "");
    row.expandAllNodes = m ? Number(m[1]!.replace(/,/g, "")) : null;
    const long = await Promise.race([
      page.evaluate(() => (globalThis as any).__bench.long as { start: number; dur: number }[]),
      sleep(10_000).then(() => null),
    ]);
    if (long) {
      row.longest = {
        load: longMax(long, 0, tLoad),
        expands: longMax(long, tLoad, tExp),
        expandAll: longMax(long, tExp, Infinity),
        all: longMax(long, 0, Infinity),
      };
    }
    if (all == null) {
      row.status = "timeout";
      row.error = `expand all not drawn within ${TIMEOUT / 1000} s`;
    }
  } catch (e) {
    row.status = row.first?.ms == null ? "fail" : "partial";
    row.error = String((e as Error).message ?? e).split("\n")[0];
  } finally {
    row.requests = requests;
    await close(ctx);
  }
  return row;
}

// ---- torchvista -------------------------------------------------------------------------

/** Load a torchvista page; ms to its first batch of drawn graph nodes, or null. */
async function tvLoad(page: Page, file: string): Promise<{ ms: number | null; nodes: number }> {
  await page.goto(pathToFileURL(file).href, { waitUntil: "commit", timeout: TIMEOUT });
  const t = await until(page, () => (globalThis as any).__bench.draws[0]?.t, null, TIMEOUT);
  if (t == null) return { ms: null, nodes: 0 };
  const nodes = await page.evaluate(() => document.querySelectorAll('g[class^="node_"]').length);
  return { ms: t, nodes };
}

async function benchTorchvista(b: Browser, model: string, file: string, fileAll: string): Promise<Row> {
  const row: Row = { model, tool: "torchvista", status: "ok" };
  let { ctx, page, requests } = await newPage(b);
  let longLoad = 0,
    longExp = 0,
    longAll = 0;
  try {
    const first = await tvLoad(page, file);
    row.first = { ms: first.ms };
    if (first.ms == null) throw new Error(`no first draw within ${TIMEOUT / 1000} s`);
    Object.assign(
      row,
      await page.evaluate(() => {
        const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
        return { responseEnd: n.responseEnd, domInteractive: n.domInteractive };
      }),
    );
    const tLoad = await page.evaluate(() => performance.now());
    // Expandable modules drawn as boxes (d3 keeps [name, data] on each element).
    const targets: string[] = await page.evaluate(() =>
      Array.from(document.querySelectorAll('g[class^="node_"] > circle[class^="collapse-button_"]')).map((c) => (c as any).__data__[0] as string),
    );
    row.expands = [];
    const nDraws = () => page.evaluate(() => (globalThis as any).__bench.draws.length as number);
    const drawnAfter = (n0: number) =>
      until(
        page,
        (n0: number) => {
          const b = (globalThis as any).__bench;
          const d = b.draws[n0];
          return d ? d.t - b.clicks[b.clicks.length - 1] : null;
        },
        n0,
        TIMEOUT,
      );
    const expand = async (name: string): Promise<number | null> => {
      const n0 = await nDraws();
      await page.evaluate((name) => {
        const c = Array.from(document.querySelectorAll('g[class^="node_"] > circle[class^="collapse-button_"]')).find(
          (c) => (c as any).__data__[0] === name,
        )!;
        c.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      }, name);
      return drawnAfter(n0);
    };
    const collapse = async (name: string): Promise<void> => {
      const n1 = await nDraws();
      const ok = await page.evaluate((name) => {
        const c = Array.from(document.querySelectorAll('circle[class^="collapse-button_"]')).find((c) => (c as any).__data__?.[0] === name);
        c?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
        return !!c;
      }, name);
      if (ok) await drawnAfter(n1);
    };
    // As for torchscope: the opening view's modules; if fewer than EXPANDS, those inside the
    // first one (left open). Each is collapsed again with its cluster's control.
    const done = new Set<string>();
    let level = targets;
    for (let depth = 0; depth < 2 && row.expands.length < EXPANDS; depth++) {
      for (const name of level) {
        if (row.expands.length >= EXPANDS) break;
        if (done.has(name)) continue;
        done.add(name);
        const ms = await expand(name);
        row.expands.push({ target: name, ms });
        if (ms == null) throw new Error(`expand ${name}: not drawn within ${TIMEOUT / 1000} s`);
        await collapse(name);
      }
      const base = level[0];
      if (row.expands.length >= EXPANDS || !base) break;
      await expand(base);
      level = (
        await page.evaluate(() =>
          Array.from(document.querySelectorAll('g[class^="node_"] > circle[class^="collapse-button_"]')).map((c) => (c as any).__data__[0] as string),
        )
      ).filter((k) => !done.has(k));
    }
    row.expandMedian = median(row.expands.map((e) => e.ms!).filter((x) => x != null));
    const long = await page.evaluate(() => (globalThis as any).__bench.long as { start: number; dur: number }[]);
    longLoad = longMax(long, 0, tLoad);
    longExp = longMax(long, tLoad, Infinity);
  } catch (e) {
    row.status = row.first?.ms == null ? "fail" : "partial";
    row.error = String((e as Error).message ?? e).split("\n")[0];
  }
  row.requests = requests;
  await close(ctx);
  // Expand all: the page written with every module open.
  if (fileAll && existsSync(fileAll)) {
    ({ ctx, page, requests } = await newPage(b));
    try {
      const t0 = Date.now();
      const all = await tvLoad(page, fileAll);
      row.expandAll = { ms: all.ms };
      row.expandAllNodes = all.ms != null ? all.nodes : null;
      if (all.ms == null) {
        row.expandAll.error = `not drawn within ${TIMEOUT / 1000} s (page still busy: ${Math.round((Date.now() - t0) / 1000)} s)`;
        longAll = Date.now() - t0; // at least this long: the task had not ended
        row.longest = { load: longLoad, expands: longExp, expandAll: longAll, all: Math.max(longLoad, longExp, longAll), stillBusy: true };
      } else {
        const long = await page.evaluate(() => (globalThis as any).__bench.long as { start: number; dur: number }[]);
        longAll = longMax(long, 0, Infinity);
      }
    } catch (e) {
      row.expandAll = { ms: null, error: String((e as Error).message ?? e).split("\n")[0] };
    } finally {
      row.requests.push(...requests);
      await close(ctx);
    }
  }
  row.longest ??= { load: longLoad, expands: longExp, expandAll: longAll, all: Math.max(longLoad, longExp, longAll) };
  return row;
}

// ---- main -------------------------------------------------------------------------------

(async () => {
  const started = new Date();
  const load0 = loadavg();
  const b = await launch();
  // Warm the browser (processes, first context) so the first measured page isn't the cold one.
  {
    const ctx = await b.newContext();
    const p = await ctx.newPage();
    await p.setContent("<p>warm-up</p>");
    await close(ctx);
  }
  const rows: Row[] = [];
  const previous: Row[] = existsSync(OUT) ? (JSON.parse(readFileSync(OUT, "utf8")).rows ?? []) : [];
  try {
    for (const model of MODELS) {
      for (const tool of TOOLS) {
        const file = join(PAGES, `${model}.${tool}.html`);
        process.stdout.write(`${model} ${tool} … `);
        let row: Row;
        if (!existsSync(file)) row = { model, tool, status: "no page", error: `${file} missing (make_pages.py failed?)` };
        else if (tool === "torchscope") row = await benchTorchscope(b, model, file);
        else row = await benchTorchvista(b, model, file, join(PAGES, `${model}.${tool}-all.html`));
        row.pageBytes = existsSync(file) ? readFileSync(file).length : undefined;
        rows.push(row);
        console.log(
          JSON.stringify({
            status: row.status,
            first: row.first?.ms,
            expand: row.expandMedian,
            all: row.expandAll?.ms,
            nodes: row.expandAllNodes,
            longest: row.longest,
            error: row.error,
          }),
        );
      }
    }
  } finally {
    await b.close();
  }
  const version = execSync("/usr/bin/chromium --version 2>/dev/null || true").toString().trim();
  // A partial run (some models or tools) keeps the other rows of the previous results.
  const keep = previous.filter((p) => !rows.some((r) => r.model === p.model && r.tool === p.tool));
  const manifest = existsSync(join(PAGES, "manifest.json")) ? JSON.parse(readFileSync(join(PAGES, "manifest.json"), "utf8")) : {};
  const out = {
    machine: {
      date: started.toISOString().replace(/\.\d+Z$/, "Z"),
      cpu: cpus()[0]?.model,
      cores: cpus().length,
      chromium: version,
      load_start: load0,
      load_end: loadavg(),
      git: execSync("git rev-parse --short HEAD", { cwd: HERE }).toString().trim(),
    },
    args: { models: MODELS, tools: TOOLS, expands: EXPANDS, timeout_s: TIMEOUT / 1000 },
    manifest,
    rows: [...keep, ...rows],
  };
  writeFileSync(OUT, JSON.stringify(out, null, 1));
  console.log(`wrote ${OUT}`);
})();
