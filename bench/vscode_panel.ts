// The graph panel in real VS Code (code-server + Chromium, as the end-to-end tests run it:
// tests/extension/e2e/harness.ts), timed as a user waits for it. Not part of `make test`;
// run with `make bench-vscode` (which builds the .vsix and code-server first) or
//   CHROMIUM=/usr/bin/chromium node --import tsx bench/vscode_panel.ts [--runs 5] [--only gpt2,synth,palette]
// Writes bench/results-vscode.json; bench/vscode_report.py turns it into results-vscode.md.
//
// What is measured (times from the viewer's own performance marks, read in the panel's
// frame, against the moment the action was taken; the test's polling is not counted):
// - right-click → Visualize forward pass → drawn, GPT-2 (examples/gpt2.py), the runner warm:
//   into the panel already open, and into a new panel (the old one closed first);
// - palette → Visualize forward pass (paused frame) → drawn, GPT-2 paused in its forward at a
//   breakpoint (the real debugpy adapter, tests/extension/e2e/debugpy-fixture): the time
//   the list of models takes to show plus Enter → drawn; into a new panel, then into the
//   panel the last run left open;
// - the long tasks (PerformanceObserver 'longtask', installed before any script of every
//   frame) in the panel's frame while a 4,000-op graph arrives (bench/viewer's synthetic
//   model): from the graph message's arrival (mark torchscope:received) to drawn, and from
//   the right-click to drawn (a new panel: its page start too).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { execSync } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import type { Browser, Page } from "playwright-core";
import {
  CODE_SERVER,
  ROOT,
  cleanup,
  closeAll,
  contextMenu,
  lastTrace,
  launch,
  markOld,
  openFile,
  palette,
  startCodeServer,
  viewer,
  waitForGraph,
  type CodeServer,
  installDebugFixture,
} from "../tests/extension/e2e/harness";

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const RUNS = Number(arg("runs", "5"));
const OUT = arg("out", join(ROOT, "bench", "results-vscode.json"));
const ONLY = new Set(arg("only", "gpt2,synth,palette").split(","));
let server: CodeServer | undefined;

/** The extension's log of the last trace: the runner's trace time and the whole request. */
function logged(): { runner_trace_ms: number | null; request_ms: number | null } {
  const t = server ? lastTrace(server) : undefined;
  return { runner_trace_ms: t?.trace_ms ?? null, request_ms: t?.request_ms ?? null };
}

// The viewer benchmarks' synthetic 4,000-op model, as a file of the workspace.
const SYNTH = readFileSync(join(import.meta.dirname, "viewer", "synth4000.py"), "utf8");

// GPT-2 paused in its forward: the program the palette runs debug (shared with
// bench/paused_first_trace.py).
const DEBUG_GPT2 = readFileSync(join(import.meta.dirname, "paused_gpt2.py"), "utf8");

// Every frame records its long tasks from its first script on (epoch ms, so frames compare).
// A string: the compiler would wrap a function with helpers the page lacks.
const LONG_TASKS = `(() => {
  try {
    if (window.__tsLong) return;
    const list = [];
    Object.defineProperty(window, "__tsLong", { value: list });
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) list.push({ at: performance.timeOrigin + e.startTime, ms: e.duration, name: e.name });
    }).observe({ type: "longtask", buffered: true });
  } catch (e) {}
})()`;

interface LongTask {
  at: number;
  ms: number;
  name: string;
}

/** Epoch time of the viewer's last mark `name` in the (last) panel, or null. */
async function mark(page: Page, name: string): Promise<number | null> {
  return viewer(page)
    .locator("#torchscope")
    .evaluate((_el, n) => {
      const e = performance.getEntriesByName(n);
      return e.length ? performance.timeOrigin + e[e.length - 1]!.startTime : null;
    }, name)
    .catch(() => null);
}

/**
 * When the panel's page began to load, and when its first request left (epoch ms): the
 * webview's document (VS Code's fake.html, into which it writes the page) starts its
 * navigation when the webview is created; the gap to its fetch is the browser's own wait
 * (in code-server, a new webview's service worker taking over: see results-vscode.md); the
 * navigation's `workerStart` is when that worker was ready to take the document's request.
 */
async function pageStart(page: Page): Promise<{ navigation: number; worker: number; fetch: number } | null> {
  return viewer(page)
    .locator("#torchscope")
    .evaluate(() => {
      const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
      const at = performance.timeOrigin;
      return n ? { navigation: at, worker: at + n.workerStart, fetch: at + n.fetchStart } : null;
    })
    .catch(() => null);
}

/** The long tasks the panel's frame saw (null: the init script did not reach it). */
async function panelLongTasks(page: Page): Promise<LongTask[] | null> {
  return viewer(page)
    .locator("#torchscope")
    .evaluate(() => {
      const w = window as unknown as { __tsLong?: LongTask[] };
      return w.__tsLong ? [...w.__tsLong] : null;
    })
    .catch(() => null);
}

/** The workbench's own long tasks (VS Code's main frame). */
async function workbenchLongTasks(page: Page): Promise<LongTask[]> {
  return page.evaluate(() => [...((window as unknown as { __tsLong?: LongTask[] }).__tsLong ?? [])]);
}

function longest(tasks: LongTask[] | null, from: number, to: number, self = true): LongTask | null {
  const inside = (tasks ?? []).filter((t) => t.at + t.ms > from && t.at < to && (!self || t.name === "self"));
  return inside.reduce<LongTask | null>((a, t) => (a && a.ms >= t.ms ? a : t), null);
}

const round = (x: number | null | undefined): number | null => (x === null || x === undefined ? null : Math.round(x));

interface Run {
  total_ms: number | null;
  [k: string]: number | string | null | undefined;
}

async function rightClickGpt2(page: Page, newPanel: boolean): Promise<Run> {
  if (newPanel) {
    await closeAll(page);
    await openFile(page, "gpt2.py");
  } else await markOld(page);
  const t0 = await contextMenu(page, "model = GPT2Model", "Visualize forward pass");
  await waitForGraph(page);
  const drawn = await mark(page, "torchscope:drawn");
  const received = await mark(page, "torchscope:received");
  const layout = await mark(page, "torchscope:layout-start");
  const started = newPanel ? await pageStart(page) : null;
  return {
    total_ms: round(drawn && drawn - t0),
    to_received_ms: round(received && received - t0),
    to_layout_ms: round(layout && layout - t0),
    ...(newPanel
      ? {
          to_page_navigation_ms: round(started && started.navigation - t0),
          to_page_worker_ms: round(started && started.worker - t0),
          to_page_fetch_ms: round(started && started.fetch - t0),
        }
      : {}),
    layout_and_draw_ms: round(drawn && layout && drawn - layout),
    received_to_drawn_ms: round(drawn && received && drawn - received),
    ...logged(),
    polled_ms: Date.now() - t0,
  };
}

/** Palette → the paused frame's list → Enter at once → drawn: into a new panel (the editors
 * closed first; the session stays stopped), or into the paused model's panel left open by the
 * run before (as when the program stops again and the command is run again). */
async function paletteAtBreakpoint(page: Page, newPanel = true): Promise<Run> {
  if (newPanel) await closeAll(page);
  else await markOld(page);
  await page.evaluate(`(() => {
    window.__listShownAt = undefined;
    const obs = new MutationObserver(() => {
      const title = document.querySelector(".quick-input-widget .quick-input-title");
      const row = document.querySelector(".quick-input-widget .quick-input-list .monaco-list-row");
      if (title && title.textContent === "Visualize forward pass (paused frame)" && row && row.offsetParent !== null) {
        window.__listShownAt = Date.now();
        obs.disconnect();
      }
    });
    obs.observe(document.body, { subtree: true, childList: true, characterData: true });
  })()`);
  const t0 = await palette(page, "Visualize forward pass (paused frame)");
  await page.locator(".quick-input-widget", { hasText: "Visualize forward pass (paused frame)" }).waitFor({ timeout: 60_000 });
  const first = page.locator(".quick-input-list .monaco-list-row").first();
  await first.waitFor({ timeout: 60_000 });
  const tSeen = Date.now();
  const t1 = Date.now();
  await page.keyboard.press("Enter");
  await waitForGraph(page);
  const shownAt = (await page.evaluate(() => (window as unknown as { __listShownAt?: number }).__listShownAt)) ?? tSeen;
  const drawn = await mark(page, "torchscope:drawn");
  const received = await mark(page, "torchscope:received");
  const boot = newPanel ? await mark(page, "torchscope:boot") : null;
  const started = newPanel ? await pageStart(page) : null;
  return {
    // The user's wait: the list appearing, then Enter → drawn (the test's own delay between
    // the list appearing and its Enter left out).
    total_ms: round(drawn && shownAt - t0 + (drawn - t1)),
    list_ms: shownAt - t0,
    pick_to_boot_ms: round(boot && boot - t1),
    pick_to_received_ms: round(received && received - t1),
    pick_to_drawn_ms: round(drawn && drawn - t1),
    // the panel's page: its navigation began, its first fetch left (vs Enter)
    pick_to_page_navigation_ms: round(started && started.navigation - t1),
    pick_to_page_worker_ms: round(started && started.worker - t1),
    pick_to_page_fetch_ms: round(started && started.fetch - t1),
    polled_ms: shownAt - t0 + (Date.now() - t1),
  };
}

interface TraceEvent {
  name: string;
  cat?: string;
  ph: string;
  ts: number;
  dur?: number;
  tdur?: number;
  pid: number;
  tid: number;
}

/**
 * From a Chromium trace: the tasks of the thread the panel's marks were set on (the panel
 * shares it with the workbench: same origin) between `torchscope:received` and 200 ms after
 * `torchscope:drawn`; the longest by wall time and by the thread's own CPU time. On a
 * loaded machine a task's wall time is mostly waiting for a core; its CPU time is the work.
 */
function tracedTasks(trace: Buffer): { wall: number; cpu: number; cpuOfLongest: number; count: number } | null {
  const events = (JSON.parse(trace.toString()) as { traceEvents: TraceEvent[] }).traceEvents;
  const marks = events.filter((e) => e.cat?.includes("blink.user_timing") && e.name.startsWith("torchscope:"));
  // A viewer without the arrival mark (main before issue 14's panel work): its decode ran in
  // the task just before its first layout-start; the window starts 1 s before that.
  const layoutStart = marks.find((m) => m.name === "torchscope:layout-start");
  const received =
    marks.filter((m) => m.name === "torchscope:received").at(-1) ?? (layoutStart && { ...layoutStart, ts: layoutStart.ts - 1_000_000 });
  const drawn = marks.filter((m) => m.name === "torchscope:drawn").at(-1);
  if (!received || !drawn) return null;
  const end = drawn.ts + 200_000;
  const tasks = events.filter(
    (e) =>
      e.name === "RunTask" && e.ph === "X" && e.pid === received.pid && e.tid === received.tid && e.ts + (e.dur ?? 0) > received.ts && e.ts < end,
  );
  if (!tasks.length) return { wall: 0, cpu: 0, cpuOfLongest: 0, count: 0 };
  const longest = tasks.reduce((a, t) => ((t.dur ?? 0) > (a.dur ?? 0) ? t : a));
  return {
    wall: (longest.dur ?? 0) / 1000,
    cpuOfLongest: (longest.tdur ?? 0) / 1000,
    cpu: Math.max(...tasks.map((t) => t.tdur ?? 0)) / 1000,
    count: tasks.filter((t) => (t.dur ?? 0) > 50_000).length,
  };
}

/** Right-click the 4,000-op model → drawn; the panel frame's long tasks meanwhile (and, with
 * `browser`, a Chromium trace of the same window's tasks with their CPU time). */
async function synthArrives(page: Page, newPanel: boolean, browser?: Browser): Promise<Run> {
  if (newPanel) {
    await closeAll(page);
    await openFile(page, "synth4000.py");
  } else {
    await markOld(page);
  }
  if (browser) await browser.startTracing(page, { categories: ["disabled-by-default-devtools.timeline", "blink.user_timing"] });
  const t0 = await contextMenu(page, "model = nn.Sequential", "Visualize forward pass");
  await waitForGraph(page);
  await page.waitForTimeout(500); // a task that ends after the drawing is reported a bit later
  const traced = browser ? tracedTasks(await browser.stopTracing()) : null;
  const drawn = await mark(page, "torchscope:drawn");
  const received = await mark(page, "torchscope:received");
  const decoded = await mark(page, "torchscope:decoded");
  const layout = await mark(page, "torchscope:layout-start");
  const tasks = await panelLongTasks(page);
  const wb = await workbenchLongTasks(page);
  const end = (drawn ?? Date.now()) + 200;
  const arriving = received ? longest(tasks, received, end) : null;
  const whole = longest(tasks, t0, end);
  const anyName = longest(tasks, t0, end, false);
  const workbench = longest(wb, t0, end);
  return {
    total_ms: round(drawn && drawn - t0),
    to_received_ms: round(received && received - t0),
    decode_ms: round(decoded && received && decoded - received),
    ...logged(),
    longest_task_arriving_ms: round(arriving?.ms),
    longest_task_click_to_drawn_ms: round(whole?.ms),
    longest_task_any_attribution_ms: round(anyName?.ms),
    longest_task_any_attribution_name: anyName?.name ?? null,
    longest_workbench_task_ms: round(workbench?.ms),
    long_tasks_arriving: received ? (tasks ?? []).filter((t) => t.at + t.ms > received && t.at < end && t.name === "self").length : null,
    // Where they fall: "start ms+duration ms" after the graph's arrival, beside the marks.
    arriving_tasks: received
      ? (tasks ?? [])
          .filter((t) => t.at + t.ms > received && t.at < end)
          .map((t) => `${Math.round(t.at - received)}+${Math.round(t.ms)}${t.name === "self" ? "" : ` (${t.name})`}`)
          .join(", ")
      : null,
    marks_after_arrival: received
      ? `decoded ${round(decoded && decoded - received)}, layout-start ${round(layout && layout - received)}, drawn ${round(drawn && drawn - received)}`
      : null,
    observer_in_frame: tasks ? "yes" : "no",
    // The Chromium trace of the panel's thread (shared with the workbench), same window.
    traced_longest_task_wall_ms: round(traced?.wall),
    traced_longest_task_cpu_ms: round(traced?.cpuOfLongest),
    traced_most_cpu_in_one_task_ms: round(traced?.cpu),
    traced_tasks_over_50ms_wall: traced?.count ?? null,
  };
}

async function debugUntilStopped(page: Page): Promise<void> {
  await closeAll(page);
  await openFile(page, "paused_lm.py");
  await palette(page, "torchscope test: debug the active file");
  await page.locator(".debug-toolbar .codicon-debug-continue").first().waitFor({ timeout: 180_000 });
  const line = DEBUG_GPT2.split("\n").findIndex((l) => l.includes("# BREAK")) + 1;
  await page.waitForFunction((n) => new RegExp(`Ln ${n},`).test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ""), line, {
    timeout: 60_000,
  });
}

function machine(): Record<string, unknown> {
  const sh = (c: string): string => {
    try {
      return execSync(c, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    } catch {
      return "?";
    }
  };
  return {
    cpu: cpus()[0]?.model ?? "?",
    cores: cpus().length,
    chromium: sh(`${process.env.CHROMIUM ?? "/usr/bin/chromium"} --version`),
    // the code-server the harness started, and the Node that runs it (the first on PATH)
    code_server: codeServerVersion(),
    node: sh("node --version"),
    commit: sh(`git -C ${ROOT} rev-parse --short HEAD`),
    dirty: sh(`git -C ${ROOT} status --porcelain --untracked-files=no`) !== "",
  };
}

/** The version in the package.json of the code-server that CODE_SERVER (its entry.js) is in. */
function codeServerVersion(): string {
  try {
    return JSON.parse(readFileSync(join(dirname(CODE_SERVER), "..", "..", "package.json"), "utf8")).version ?? "?";
  } catch {
    return "?";
  }
}

async function main(): Promise<void> {
  const load = (): number[] => loadavg().map((x) => Math.round(x * 100) / 100);
  const started = { when: new Date().toISOString(), loadavg: load() };
  const results: Record<string, Run[]> = {
    gpt2_warm_existing_panel: [],
    gpt2_warm_new_panel: [],
    synth4000_new_panel: [],
    synth4000_existing_panel: [],
    palette_breakpoint_new_panel: [],
    palette_breakpoint_existing_panel: [],
  };
  const loads: Record<string, number[]> = {};
  let cs: CodeServer | undefined;
  let browser: Browser | undefined;
  try {
    cs = await startCodeServer({
      settings: { "debug.openDebug": "neverOpen", "debug.internalConsoleOptions": "neverOpen", "debug.confirmOnExit": "never" },
      files: { "synth4000.py": SYNTH, "paused_lm.py": DEBUG_GPT2 },
      beforeStart: ({ extensions }) => installDebugFixture(extensions),
    });
    server = cs;
    browser = await launch();
    const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
    await context.addInitScript(LONG_TASKS);
    const page = await context.newPage();
    await page.goto(cs.url);
    await page.waitForSelector(".explorer-folders-view .monaco-list-row", { timeout: 60_000 });
    const log = (name: string, r: Run): void => console.log(`${name}: ${JSON.stringify(r)}`);

    // GPT-2 from the editor: the first (cold) trace warms the runner; not counted.
    if (ONLY.has("gpt2")) await openFile(page, "gpt2.py");
    if (ONLY.has("gpt2")) log("gpt2 cold (not counted)", await rightClickGpt2(page, false));
    for (let i = 0; ONLY.has("gpt2") && i < RUNS; i++) {
      const r = await rightClickGpt2(page, false);
      results.gpt2_warm_existing_panel!.push(r);
      log("gpt2 warm, existing panel", r);
    }
    for (let i = 0; ONLY.has("gpt2") && i < RUNS; i++) {
      const r = await rightClickGpt2(page, true);
      results.gpt2_warm_new_panel!.push(r);
      log("gpt2 warm, new panel", r);
    }
    loads.gpt2 = load();

    // The 4,000-op model: the first trace builds it in the runner; each run's long tasks.
    for (let i = 0; ONLY.has("synth") && i < Math.max(2, Math.ceil(RUNS / 2)); i++) {
      const r = await synthArrives(page, true, browser);
      results.synth4000_new_panel!.push(r);
      log("synth4000, new panel", r);
      const s = await synthArrives(page, false, browser);
      results.synth4000_existing_panel!.push(s);
      log("synth4000, existing panel", s);
    }
    loads.synth4000 = load();

    // At a breakpoint: one debug session, stopped; the palette several times.
    if (ONLY.has("palette")) await debugUntilStopped(page);
    for (let i = 0; ONLY.has("palette") && i < RUNS; i++) {
      const r = await paletteAtBreakpoint(page);
      results.palette_breakpoint_new_panel!.push(r);
      log("palette at a breakpoint, new panel", r);
    }
    // The panel the last run opened stays: the same command again draws into it.
    for (let i = 0; ONLY.has("palette") && i < RUNS; i++) {
      const r = await paletteAtBreakpoint(page, false);
      results.palette_breakpoint_existing_panel!.push(r);
      log("palette at a breakpoint, its open panel", r);
    }
    loads.palette = load();
  } finally {
    await browser?.close();
    cleanup(cs, "bench-vscode-panel");
  }
  const out = { started, ended: { when: new Date().toISOString(), loadavg: load() }, loads, machine: machine(), runs: RUNS, results };
  mkdirSync(join(ROOT, "bench"), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote ${OUT}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
