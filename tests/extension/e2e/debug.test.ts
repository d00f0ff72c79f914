// End to end in real VS Code (code-server + Chromium): tracing at a breakpoint. A fixture
// extension (debugpy-fixture/) contributes the `debugpy` debug type backed by the real
// adapter (`python -m debugpy.adapter`, as the Python debugger extension does) and a
// command that launches the active file with a breakpoint on its "# BREAK" line. Then, as
// a user: palette → "Visualize forward pass (paused frame)" → pick the first candidate →
// the graph → click an op → its line; remove the breakpoints, continue, and the program
// ends printing what a plain run prints. Palette→drawn times go to timings.json.
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  ARTIFACTS,
  PYTHON,
  shownInAGroup,
  chooseMenuItem,
  contextMenu,
  cleanup,
  closeAll,
  cursorLine,
  launch,
  markOld,
  notifications,
  openFile,
  openWorkbench,
  palette,
  pointerAway,
  saveLog,
  shot,
  startCodeServer,
  step,
  viewer,
  waitForGraph,
  installDebugFixture,
  type CodeServer,
} from "./harness";

const BLOCKS = `"""Paused in a block's forward (torchscope e2e: tracing at a breakpoint)."""
import os

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(self.norm(x))  # BREAK
        return self.drop(torch.relu(h)) + x


class Net(nn.Module):
    def __init__(self, d: int = 32, n: int = 2) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))
        self.head = nn.Linear(d, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.head(x).softmax(dim=-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    net = Net()
    out = net(torch.randn(4, 32))
    text = f"{tuple(out.shape)} {out.sum().item():.6f} {torch.rand(1).item():.6f} {net.training}\\n"
    print(text, end="")
    with open(os.path.splitext(os.path.abspath(__file__))[0] + ".out", "w") as f:
        f.write(text)
`;

const GPT2 = `"""GPT-2 (12 layers, random weights) paused in its wrapper's forward (torchscope e2e)."""
import os

import torch
from torch import nn
from transformers import GPT2Config, GPT2Model


class LM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gpt2 = GPT2Model(GPT2Config(n_layer=12))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.gpt2(input_ids=input_ids).last_hidden_state  # BREAK
        return hidden.mean()


if __name__ == "__main__":
    torch.manual_seed(0)
    lm = LM().eval()
    with torch.no_grad():
        y = lm(torch.randint(0, 50257, (1, 64)))
    text = f"{y.item():.6f} {torch.rand(1).item():.6f}\\n"
    print(text, end="")
    with open(os.path.splitext(os.path.abspath(__file__))[0] + ".out", "w") as f:
        f.write(text)
`;

const LOOP = `"""A training-style loop paused before its model runs: no input yet (torchscope e2e: next call)."""
import os

import torch
from torch import nn

if __name__ == "__main__":
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    lines = []
    for step in range(3):
        lines.append(f"step {step}")  # BREAK
        batch = torch.randn(8, 16)
        lines.append(f"{net(batch).sum().item():.6f}")
    text = " ".join(lines) + f" {torch.rand(1).item():.6f}\\n"
    print(text, end="")
    with open(os.path.splitext(os.path.abspath(__file__))[0] + ".out", "w") as f:
        f.write(text)
`;

const NAN = `"""A model that makes NaN, paused in its forward (torchscope e2e: Find NaN origin)."""
import os

import torch
from torch import nn


class Shift(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x) - 100.0
        return torch.log(h)  # ORIGIN


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(4, 8)
        self.shift = Shift()
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)  # BREAK
        return self.head(self.shift(h))


if __name__ == "__main__":
    torch.manual_seed(0)
    net = Net().eval()
    with torch.no_grad():
        out = net(torch.randn(3, 4))
    text = f"{tuple(out.shape)} {bool(out.isnan().all())} {torch.rand(1).item():.6f}\\n"
    print(text, end="")
    with open(os.path.splitext(os.path.abspath(__file__))[0] + ".out", "w") as f:
        f.write(text)
`;

/** 1-based line of the first line holding `text`. */
function lineOf(src: string, text: string): number {
  const i = src.split("\n").findIndex((l) => l.includes(text));
  assert.ok(i >= 0, `no line with ${text}`);
  return i + 1;
}

/** What the program prints when run plainly (no debugger). */
function plainOutput(name: string, src: string): string {
  const dir = mkdtempSync(join(tmpdir(), "torchscope-plain-"));
  writeFileSync(join(dir, name), src);
  const r = spawnSync(PYTHON, [join(dir, name)], { encoding: "utf8", cwd: dir });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

/** Copy the fixture extension into the profile and list it in extensions.json. */
interface DebugTiming {
  /** From Enter on the palette command to the graph drawn, without the time spent in the quick pick
   * (the test sees the drawing when its polling of the webview's DOM does). */
  palette_to_drawn_ms: number;
  /** The same from the page's own times: the list shown (a mutation observer) and the viewer's
   * `torchscope:drawn` mark (set once the picture is on the page). */
  palette_to_drawn_mark_ms?: number;
  palette_to_list_mark_ms?: number;
  /** From Enter on the palette command to the candidates listed; to the extension having them. */
  palette_to_candidates_ms: number;
  palette_to_candidates_reply_ms?: number;
  /** From Enter on the candidate to the graph drawn; to the bytes posted to the viewer; to its layout start. */
  pick_to_drawn_ms: number;
  pick_to_posted_ms?: number;
  pick_to_layout_ms?: number;
  layout_and_draw_ms?: number;
  /** The panel opened this long before Enter on the candidate (while the list was shown). */
  panel_opened_before_pick_ms?: number;
  /** From the panel's page created to VS Code's webview fetching it (its service worker). */
  webview_fetch_start_ms?: number;
  /** From the extension's log: the candidates evaluate, the trace evaluate, the tracer. */
  candidates_ms?: number;
  trace_request_ms?: number;
  trace_ms?: number;
  graph_bytes?: number;
}
const timings: Record<string, DebugTiming> = {};

let browser: Browser;
let cs: CodeServer | undefined;
let page: Page;

before(async () => {
  cs = await startCodeServer({
    settings: { "debug.openDebug": "neverOpen", "debug.internalConsoleOptions": "neverOpen", "debug.confirmOnExit": "never" },
    files: { "debug_blocks.py": BLOCKS, "debug_gpt2.py": GPT2, "debug_loop.py": LOOP, "debug_nan.py": NAN },
    beforeStart: ({ extensions }) => installDebugFixture(extensions),
  });
  browser = await launch();
  page = await openWorkbench(browser, cs);
});

after(async () => {
  await browser?.close();
  cleanup(cs, "torchscope-debug");
  mkdirSync(ARTIFACTS, { recursive: true });
  const load = (await import("node:os")).loadavg().map((x) => Math.round(x * 100) / 100);
  const entry = { when: new Date().toISOString(), loadavg: load, timings };
  writeFileSync(join(ARTIFACTS, "timings-debug.json"), `${JSON.stringify(entry, null, 2)}\n`);
  // Also in timings.json beside the editor path's (kept; this file's entries under "debug").
  const file = join(ARTIFACTS, "timings.json");
  let all: Record<string, unknown> = {};
  try {
    all = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    /* none yet */
  }
  writeFileSync(file, `${JSON.stringify({ ...all, debug: entry }, null, 2)}\n`);
});

/** The extension's log lines so far. */
function logLines(): string[] {
  const f = cs ? saveLog(cs, "torchscope-debug") : undefined;
  return f ? readFileSync(f, "utf8").split("\n") : [];
}

/** Start debugging the open file (fixture command) and wait until it stops at its BREAK line. */
async function debugUntilStopped(file: string, breakLine: number): Promise<void> {
  await openFile(page, file);
  await palette(page, "torchscope test: debug the active file");
  // Stopped: the toolbar offers Continue, and the editor is on the breakpoint's line.
  await page.locator(".debug-toolbar .codicon-debug-continue").first().waitFor({ timeout: 180_000 });
  await page.waitForFunction(
    (n) => new RegExp(`Ln ${n},`).test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ""),
    breakLine,
    { timeout: 30_000 },
  );
}

/** A log line's time: "2026-12-02 11:08:06.936 [info] ..." in local time. */
function lineTime(line: string | undefined): number | undefined {
  const m = line ? /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+)/.exec(line) : null;
  return m ? new Date(`${m[1]}T${m[2]}`).getTime() : undefined;
}

/** Epoch times of the viewer's last layout start and drawing (performance marks). */
async function viewerMarks(): Promise<(number | null)[]> {
  return viewer(page)
    .locator("#torchscope")
    .evaluate(() =>
      ["torchscope:layout-start", "torchscope:drawn"].map((n) => {
        const e = performance.getEntriesByName(n);
        return e.length ? performance.timeOrigin + e[e.length - 1]!.startTime : null;
      }),
    )
    .catch(() => [null, null]);
}

/** When the viewer's page started loading (epoch), and how long VS Code's webview took to
 * begin fetching it (its service worker): time the viewer's code can't shorten. */
async function viewerPageStart(): Promise<{ origin: number; fetchStart: number } | null> {
  return viewer(page)
    .locator("#torchscope")
    .evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
      return nav ? { origin: performance.timeOrigin, fetchStart: Math.round(nav.fetchStart) } : null;
    })
    .catch(() => null);
}

/** Palette → "Visualize forward pass (paused frame)" → the first candidate → the graph drawn.
 * `readMs`: time spent reading the list before Enter, as a person does (the viewer and the
 * tracer's imports warm up meanwhile); not counted in the timings. */
async function visualizePaused(name: string, expectFirst: RegExp, readMs = 0): Promise<void> {
  // When the list of models appears, as the page sees it (the test's own polling is coarse).
  // (A string: the test's compiler would wrap a named inner function with a helper the page lacks.)
  await page.evaluate(`(() => {
    window.__listShownAt = undefined;
    const obs = new MutationObserver(() => {
      // Our list has this title; the command palette (which lists the command) has none.
      const title = document.querySelector(".quick-input-widget .quick-input-title");
      const row = document.querySelector(".quick-input-widget .quick-input-list .monaco-list-row");
      if (title && title.textContent === "Visualize forward pass (paused frame)" && row && row.offsetParent !== null) {
        window.__listShownAt = Date.now();
        obs.disconnect();
      }
    });
    obs.observe(document.body, { subtree: true, childList: true, characterData: true });
  })()`);
  await markOld(page); // (a panel drawn before must not end the wait for this graph)
  const t0 = await palette(page, "Visualize forward pass (paused frame)");
  const first = page.locator(".quick-input-list .monaco-list-row").first();
  // (the title of torchscope's pick: the palette's own row reads the same)
  await page.locator(".quick-input-widget .quick-input-title", { hasText: "Visualize forward pass (paused frame)" }).waitFor({ timeout: 60_000 });
  await first.waitFor({ timeout: 60_000 });
  const tShown = Date.now();
  assert.match(await first.innerText(), expectFirst);
  await shot(page, `${name}-candidates`);
  if (readMs) await page.waitForTimeout(readMs);
  const t1 = Date.now();
  await page.keyboard.press("Enter");
  await waitForGraph(page);
  const t2 = Date.now();
  // The time a user waits: the candidates, then the graph (their picking and the test's screenshot left out).
  const t: DebugTiming = { palette_to_drawn_ms: tShown - t0 + (t2 - t1), palette_to_candidates_ms: tShown - t0, pick_to_drawn_ms: t2 - t1 };
  const lines = logLines();
  const cand = lines.filter((l) => /debug: \d+ candidates .* in \d+ ms/.test(l)).at(-1);
  if (cand) t.candidates_ms = Number(/in (\d+) ms/.exec(cand)![1]);
  const candAt = lineTime(cand);
  if (candAt) t.palette_to_candidates_reply_ms = candAt - t0;
  const tracedAt = lines
    .map((l, i) => (l.includes("debug: traced ") ? i : -1))
    .filter((i) => i >= 0)
    .at(-1);
  if (tracedAt !== undefined) {
    const m = /in (\d+(?:\.\d+)?) ms \(evaluate .*request (\d+) ms.*?(\d+) bytes\)/.exec(lines[tracedAt]!);
    if (m) Object.assign(t, { trace_ms: Math.round(Number(m[1])), trace_request_ms: Number(m[2]), graph_bytes: Number(m[3]) });
    const posted = lineTime(lines.slice(tracedAt).find((l) => l.includes(": posted the graph (")));
    if (posted) t.pick_to_posted_ms = posted - t1;
  }
  const [layoutStart, drawn] = await viewerMarks();
  if (layoutStart && drawn) {
    t.pick_to_layout_ms = Math.round(layoutStart - t1);
    t.layout_and_draw_ms = Math.round(drawn - layoutStart);
    const shownAt = await page.evaluate(() => (window as unknown as { __listShownAt?: number }).__listShownAt);
    t.palette_to_drawn_mark_ms = Math.round((shownAt !== undefined && shownAt >= t0 ? shownAt : tShown) - t0 + (drawn - t1));
    if (shownAt !== undefined && shownAt >= t0) t.palette_to_list_mark_ms = shownAt - t0;
  }
  const page0 = await viewerPageStart();
  if (page0) {
    t.panel_opened_before_pick_ms = Math.round(t1 - page0.origin);
    t.webview_fetch_start_ms = page0.fetchStart;
  }
  timings[name] = t;
  console.log(
    `# timing ${name}: palette→drawn ${t.palette_to_drawn_ms} ms (by the page's marks ${t.palette_to_drawn_mark_ms ?? "?"} ms, list at ${t.palette_to_list_mark_ms ?? "?"} ms; palette→candidates ${t.palette_to_candidates_ms} ms, palette→reply ${t.palette_to_candidates_reply_ms ?? "?"} ms, ` +
      `candidates evaluate ${t.candidates_ms ?? "?"} ms; pick→drawn ${t.pick_to_drawn_ms} ms: trace request ${t.trace_request_ms ?? "?"} ms ` +
      `of which tracing ${t.trace_ms ?? "?"} ms, pick→posted ${t.pick_to_posted_ms ?? "?"} ms, pick→layout ${t.pick_to_layout_ms ?? "?"} ms, ` +
      `layout+draw ${t.layout_and_draw_ms ?? "?"} ms; panel opened ${t.panel_opened_before_pick_ms ?? "?"} ms before the pick, ` +
      `its page fetched after ${t.webview_fetch_start_ms ?? "?"} ms)`,
  );
}

/** Remove the breakpoints, continue (F5 in the editor) and wait for the session to end. */
async function continueToEnd(): Promise<void> {
  await palette(page, "Remove All Breakpoints");
  await page.waitForTimeout(300);
  await page.locator(".editor-group-container .monaco-editor .view-lines").first().click();
  await page.keyboard.press("F5");
  await page.locator(".debug-toolbar").first().waitFor({ state: "hidden", timeout: 120_000 });
}

async function waitForFile(path: string, timeout = 60_000): Promise<string> {
  const end = Date.now() + timeout;
  while (!existsSync(path) && Date.now() < end) await page.waitForTimeout(250);
  assert.ok(existsSync(path), `${path} written`);
  return readFileSync(path, "utf8");
}

describe("tracing at a breakpoint (real debugpy in VS Code)", { timeout: 900_000 }, () => {
  it("paused in a block's forward: palette → the block's graph → click an op → its line; the program goes on", () =>
    step(page, "debug-blocks", async () => {
      const expected = plainOutput("debug_blocks.py", BLOCKS);
      const breakLine = lineOf(BLOCKS, "# BREAK");
      const reluLine = lineOf(BLOCKS, "torch.relu(h)");
      await debugUntilStopped("debug_blocks.py", breakLine);
      await shot(page, "debug-01-stopped");

      await visualizePaused("debug_blocks_palette_to_drawn", /self[\s\S]*Block/);
      await page.locator(".tabs-container .tab", { hasText: "Forward pass: Block" }).first().waitFor({ timeout: 10_000 });
      const v = viewer(page);
      assert.equal(await v.locator(".ts-model").innerText(), "Block");
      await pointerAway(page);
      await shot(page, "debug-02-block-graph");

      // The relu in Block.forward → that line of debug_blocks.py.
      await v.locator('g[data-kind="op"]', { hasText: "relu" }).first().click();
      await page.waitForFunction(
        (n) => new RegExp(`Ln ${n},`).test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ""),
        reluLine,
        { timeout: 15_000 },
      );
      assert.equal(await cursorLine(page), reluLine);
      assert.ok(await shownInAGroup(page, "debug_blocks.py"), "the model's file is shown");
      await pointerAway(page);
      await shot(page, "debug-03-reveal");
      assert.ok(!(await notifications(page)).some((t) => /torchscope: .*(error|failed|can't)/i.test(t)), "no error message");

      // The Variables view: right-click `self` → Visualize forward pass (its evaluateName).
      await markOld(page);
      await palette(page, "View: Show Run and Debug");
      const selfRow = page.locator(".debug-variables .monaco-list-row", { hasText: /^\s*self\b/ }).first();
      const locals = page.locator(".debug-variables .monaco-list-row", { hasText: /^\s*Locals/ }).first();
      await locals.waitFor({ timeout: 30_000 });
      if ((await locals.getAttribute("aria-expanded")) !== "true") await locals.click();
      await selfRow.waitFor({ timeout: 30_000 });
      const t0 = Date.now();
      for (let i = 0; ; i++) {
        await selfRow.click({ button: "right" });
        try {
          await chooseMenuItem(page, "Visualize forward pass", 3000);
          break;
        } catch (e) {
          if (i >= 3) throw e;
          await page.keyboard.press("Escape");
        }
      }
      await waitForGraph(page);
      console.log(`# timing debug_variables_menu_to_drawn: ${Date.now() - t0} ms`);
      assert.equal(await viewer(page).locator(".ts-model").innerText(), "Block");
      await pointerAway(page);
      await shot(page, "debug-03b-variables-view");
      await palette(page, "View: Show Explorer");

      // The session goes on untouched: same output as a plain run.
      await continueToEnd();
      const out = await waitForFile(join(cs!.workspace, "debug_blocks.out"));
      assert.equal(out, expected);
    }));

  it("no input in the frame → trace the next call → continue → the graph appears; the program ends as a plain run", () =>
    step(page, "debug-next-call", async () => {
      await closeAll(page);
      const expected = plainOutput("debug_loop.py", LOOP);
      await debugUntilStopped("debug_loop.py", lineOf(LOOP, "# BREAK"));
      // the editor's command on a line with no model, while paused: the live model first
      // (it offered only the file's models, built anew with a guessed input)
      await contextMenu(page, 'lines.append(f"step {step}")', "Visualize forward pass");
      const offered = page.locator(".quick-input-list .monaco-list-row").first();
      await offered.waitFor({ timeout: 60_000 });
      assert.match(await offered.innerText(), /paused program's live model/);
      await shot(page, "debug-04b-editor-command-while-paused");
      await page.keyboard.press("Escape");
      await palette(page, "Visualize forward pass (paused frame)");
      const first = page.locator(".quick-input-list .monaco-list-row").first();
      await page.waitForFunction(() => /input unknown/.test(document.querySelector(".quick-input-list .monaco-list-row")?.textContent ?? ""), null, {
        timeout: 60_000,
      });
      assert.match(await first.innerText(), /net[\s\S]*Sequential/);
      await page.keyboard.press("Enter");
      const next = page.locator(".quick-input-list .monaco-list-row", { hasText: "Trace the next call" }).first();
      await next.waitFor({ timeout: 30_000 });
      await shot(page, "debug-05-no-input-choice");
      await next.click();
      await page.locator(".notification-toast", { hasText: "continue the program" }).first().waitFor({ timeout: 30_000 });
      await shot(page, "debug-06-next-call-armed");
      const t0 = Date.now();
      await continueToEnd();
      await waitForGraph(page);
      console.log(`# timing debug_next_call_continue_to_drawn: ${Date.now() - t0} ms`);
      await page.locator(".tabs-container .tab", { hasText: "Forward pass: Sequential" }).first().waitFor({ timeout: 10_000 });
      assert.equal(await viewer(page).locator(".ts-model").innerText(), "Sequential");
      // which input it was traced with, as any graph's panel says (the reply beside the graph)
      assert.match(await viewer(page).locator('[data-role="input"]').innerText(), /^next call \(tensor \[/);
      await pointerAway(page);
      await shot(page, "debug-07-next-call-graph");
      assert.equal(await waitForFile(join(cs!.workspace, "debug_loop.out")), expected);
    }));

  it("paused in a model that makes NaN: palette → the graph says so, live → Find NaN origin → the editor is on the log's line", () =>
    step(page, "debug-nan-origin", async () => {
      await closeAll(page);
      const expected = plainOutput("debug_nan.py", NAN);
      const originLine = lineOf(NAN, "# ORIGIN");
      await debugUntilStopped("debug_nan.py", lineOf(NAN, "# BREAK"));
      await visualizePaused("debug_nan_palette_to_drawn", /self[\s\S]*Net/);
      const v = viewer(page);
      // The page knows it shows the paused frame's live values, and that NaN appeared.
      await v.locator("[data-role=live-note]").waitFor({ timeout: 10_000 });
      const banner = v.locator("[data-role=nan-banner]");
      await banner.waitFor({ timeout: 10_000 });
      assert.match(await banner.innerText(), /Non-finite values \(NaN\/Inf\) appeared in the live model.*log/);
      await shot(page, "debug-08-nan-banner");
      // The origin sits inside the collapsed Shift: the action opens it, selects the op and
      // the editor goes to its line.
      await v.locator("[data-action=nan-origin]").click();
      await v.locator('g[data-kind="op"][data-selected="true"]', { hasText: "log" }).waitFor({ timeout: 30_000 });
      await page.waitForFunction(
        (n) => new RegExp(`Ln ${n},`).test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ""),
        originLine,
        { timeout: 15_000 },
      );
      assert.equal(await cursorLine(page), originLine);
      assert.ok(await shownInAGroup(page, "debug_nan.py"), "the model's file is shown");
      await pointerAway(page);
      await shot(page, "debug-09-nan-origin");
      assert.ok(!(await notifications(page)).some((t) => /torchscope: .*(error|failed|can't)/i.test(t)), "no error message");
      await continueToEnd();
      assert.equal(await waitForFile(join(cs!.workspace, "debug_nan.out")), expected);
    }));

  // Twice, each in a new debuggee (a first trace both times): Enter at once on the list, so
  // the new panel's start-up competes with the trace for the 2 cores; and after a second
  // of reading the list, as a person picks.
  for (const [name, readMs] of [
    ["debug_gpt2_palette_to_drawn", 0],
    ["debug_gpt2_palette_to_drawn_read_1s", 1000],
  ] as const) {
    it(`GPT-2 (12 layers) paused in its forward: palette → graph drawn, picked after ${readMs} ms (benchmark)`, () =>
      step(page, name, async () => {
        await closeAll(page);
        const expected = plainOutput("debug_gpt2.py", GPT2);
        rmSync(join(cs!.workspace, "debug_gpt2.out"), { force: true });
        await debugUntilStopped("debug_gpt2.py", lineOf(GPT2, "# BREAK"));
        await visualizePaused(name, /self[\s\S]*LM/, readMs);
        await page.locator(".tabs-container .tab", { hasText: "Forward pass: LM" }).first().waitFor({ timeout: 10_000 });
        await pointerAway(page);
        await shot(page, readMs ? "debug-04-gpt2-graph" : "debug-04-gpt2-graph-at-once");
        await continueToEnd();
        assert.equal(await waitForFile(join(cs!.workspace, "debug_gpt2.out")), expected);
      }));
  }
});
