// Real VS Code for the end-to-end tests: code-server (VS Code 1.100 in the browser) with
// the extension installed from the .vsix, driven by playwright-core and Debian's Chromium.
// See shared/notes/vscode-e2e.md for why this setup and its traps.
import type { Browser, FrameLocator, Page } from "playwright-core";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { launch } from "../../chromium";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

export const ROOT = resolve(__dirname, "..", "..", "..");
export const ARTIFACTS = join(ROOT, "tests", "artifacts", "extension");
const VERSION = "4.100.3";
export const CODE_SERVER = resolve(
  ROOT,
  process.env.TORCHSCOPE_CODE_SERVER ?? `.cache/code-server-${VERSION}/node_modules/code-server/out/node/entry.js`,
);
export const VSIX = resolve(ROOT, process.env.TORCHSCOPE_VSIX ?? "build/torchscope-0.1.0.vsix");
export const PYTHON = process.env.TORCHSCOPE_PYTHON ?? join(ROOT, ".venv", "bin", "python");

/** The fixture extension that gives VS Code the `debugpy` debug type on the real adapter
 * (tests/extension/e2e/debugpy-fixture), copied into a profile's extensions folder before
 * code-server starts (`startCodeServer`'s `beforeStart`). */
export function installDebugFixture(extensions: string): void {
  const id = "torchscope-test.debugpy-fixture";
  const version = "0.0.1";
  const rel = `${id}-${version}`;
  const dest = join(extensions, rel);
  cpSync(join(__dirname, "debugpy-fixture"), dest, { recursive: true });
  writeFileSync(join(dest, "config.json"), JSON.stringify({ python: PYTHON }));
  const manifest = join(extensions, "extensions.json");
  const list = existsSync(manifest) ? (JSON.parse(readFileSync(manifest, "utf8")) as unknown[]) : [];
  list.push({
    identifier: { id },
    version,
    location: { $mid: 1, fsPath: dest, external: `file://${dest}`, path: dest, scheme: "file" },
    relativeLocation: rel,
    metadata: { installedTimestamp: Date.now(), source: "vsix" },
  });
  writeFileSync(manifest, JSON.stringify(list));
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
    s.on("error", rej);
  });
}

/** A workspace folder: a copy of examples/ plus fixture files. */
export function makeWorkspace(base: string, extra: Record<string, string> = {}): string {
  const ws = join(base, "workspace");
  cpSync(join(ROOT, "examples"), ws, { recursive: true, filter: (p) => !p.includes("__pycache__") });
  cpSync(join(__dirname, "fixtures"), ws, { recursive: true });
  for (const [name, text] of Object.entries(extra)) {
    mkdirSync(dirname(join(ws, name)), { recursive: true }); // ("lib/layers.py")
    writeFileSync(join(ws, name), text);
  }
  return ws;
}

export interface CodeServer {
  url: string;
  base: string;
  workspace: string;
  log: string[];
  stop(): void;
}

/** Install the .vsix into a fresh profile and start code-server on 127.0.0.1. */
export async function startCodeServer(
  opts: {
    settings?: Record<string, unknown>;
    files?: Record<string, string>;
    /** Runs after the .vsix is installed, before code-server starts (e.g. to add a fixture extension). */
    beforeStart?: (dirs: { base: string; userData: string; extensions: string }) => void;
    /** Open the workspace through a symlink to its folder (`link-ws` → `workspace`). */
    throughSymlink?: boolean;
  } = {},
): Promise<CodeServer> {
  const base = mkdtempSync(join(tmpdir(), "torchscope-e2e-"));
  const ud = join(base, "user-data");
  const ext = join(base, "extensions");
  mkdirSync(join(ud, "User"), { recursive: true });
  mkdirSync(ext, { recursive: true });
  const settings = {
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": false,
    "telemetry.telemetryLevel": "off",
    "git.enabled": false,
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "editor.minimap.enabled": false,
    "window.restoreWindows": "none",
    "files.hotExit": "off",
    "torchscope.pythonPath": PYTHON,
    // The box running the tests is shared and slow at times: measure, don't time out.
    "torchscope.traceTimeoutSeconds": 300,
    ...opts.settings,
  };
  writeFileSync(join(ud, "User", "settings.json"), JSON.stringify(settings, null, 2));
  const env = { ...process.env, XDG_CONFIG_HOME: join(base, "xdg-config"), XDG_DATA_HOME: join(base, "xdg-data") };
  const inst = spawnSync("node", [CODE_SERVER, "--user-data-dir", ud, "--extensions-dir", ext, "--install-extension", VSIX], {
    env,
    encoding: "utf8",
  });
  if (inst.status !== 0) throw new Error(`installing the vsix failed:\n${inst.stdout}\n${inst.stderr}`);
  opts.beforeStart?.({ base, userData: ud, extensions: ext });
  const made = makeWorkspace(base, opts.files);
  const workspace = opts.throughSymlink ? join(base, "link-ws") : made;
  if (opts.throughSymlink) symlinkSync(made, workspace, "dir");
  const port = await freePort();
  const proc: ChildProcess = spawn(
    "node",
    [
      CODE_SERVER,
      "--bind-addr",
      `127.0.0.1:${port}`,
      "--auth",
      "none",
      "--user-data-dir",
      ud,
      "--extensions-dir",
      ext,
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--disable-getting-started-override",
      "--ignore-last-opened",
      workspace,
    ],
    { env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  const log: string[] = [];
  await new Promise<void>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`code-server did not start:\n${log.join("")}`)), 60_000);
    const onData = (b: Buffer): void => {
      log.push(b.toString());
      if (log.join("").includes("HTTP server listening")) {
        clearTimeout(timer);
        res();
      }
    };
    proc.stdout!.on("data", onData);
    proc.stderr!.on("data", onData);
    proc.on("exit", (code) => rej(new Error(`code-server exited (${code}):\n${log.join("")}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`,
    base,
    workspace,
    log,
    stop() {
      // The whole process group: code-server, its extension host, the language server and runner.
      try {
        process.kill(-proc.pid!, "SIGTERM");
      } catch {
        /* gone already */
      }
      setTimeout(() => {
        try {
          process.kill(-proc.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }, 1500).unref();
    },
  };
}

/** The extension's log files, oldest first (a reload starts a new extension host and log). */
function findLogs(cs: CodeServer): string[] {
  const logs = join(cs.base, "user-data", "logs");
  if (!existsSync(logs)) return [];
  return (readdirSync(logs, { recursive: true }) as string[])
    .filter((f) => f.endsWith(join("torchscope.torchscope", "torchscope.log")))
    .map((f) => join(logs, f))
    .sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
}

function findLog(cs: CodeServer): string | undefined {
  return findLogs(cs).at(-1);
}

export interface LoggedTrace {
  trace_ms: number;
  request_ms: number;
  target_at_ms?: number;
  /** Wall-clock time the extension posted the graph to the viewer (epoch ms). */
  posted_at?: number;
}

/** A log line's time: "2026-12-02 11:08:06.936 [info] ..." in local time. */
function lineTime(line: string): number | undefined {
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+)/.exec(line);
  return m ? new Date(`${m[1]}T${m[2]}`).getTime() : undefined;
}

/** From the extension's log: the last trace's timings (see extension/src/commands.ts). */
export function lastTrace(cs: CodeServer): LoggedTrace | undefined {
  const f = findLog(cs);
  if (!f) return undefined;
  const text = readFileSync(f, "utf8").split("\n");
  // The extension's one line per trace ("[info] traced X: ...", "[warning] traced X: the forward raised ...").
  const tracedAt = text.map((l, i) => (/\[(info|warning)\] traced /.test(l) ? i : -1)).filter((i) => i >= 0);
  const i = tracedAt.at(-1);
  if (i === undefined) return undefined;
  const m = /in (\d+(?:\.\d+)?) ms \(request (\d+) ms\)/.exec(text[i]!);
  if (!m) return undefined;
  const out: LoggedTrace = { trace_ms: Math.round(Number(m[1])), request_ms: Number(m[2]) };
  // The target lookup of this command: after the previous trace, before this one.
  const found = text
    .slice((tracedAt.at(-2) ?? -1) + 1, i)
    .filter((l) => l.includes("at the cursor, found in "))
    .at(-1);
  const t = found ? /found in (\d+) ms/.exec(found) : null;
  if (t) out.target_at_ms = Number(t[1]);
  const posted = text.slice(i).find((l) => l.includes(": posted the graph ("));
  const at = posted ? lineTime(posted) : undefined;
  if (at !== undefined) out.posted_at = at;
  return out;
}

/** The extension's log so far (every extension host's, oldest first). */
export function logText(cs: CodeServer): string {
  return findLogs(cs)
    .map((f) => readFileSync(f, "utf8"))
    .join("\n");
}

/** Keep the extension's output channel (the torchscope log) as an artifact. */
export function saveLog(cs: CodeServer, name: string): string | undefined {
  const files = findLogs(cs);
  if (!files.length) return undefined;
  mkdirSync(ARTIFACTS, { recursive: true });
  const out = join(ARTIFACTS, `${name}.log`);
  writeFileSync(out, files.map((f) => `==> ${f.slice(cs.base.length)}\n${readFileSync(f, "utf8")}`).join("\n"));
  return out;
}

export function cleanup(cs: CodeServer | undefined, logName?: string): void {
  if (!cs) return;
  if (logName) saveLog(cs, logName);
  cs.stop();
  setTimeout(() => rmSync(cs.base, { recursive: true, force: true }), 2500).unref();
}

export { launch };

/** What a test file starts with: code-server with the .vsix, Chromium, the workbench open. */
export async function startWorkbench(opts: Parameters<typeof startCodeServer>[0] = {}): Promise<{ cs: CodeServer; browser: Browser; page: Page }> {
  const cs = await startCodeServer(opts);
  const browser = await launch();
  return { cs, browser, page: await openWorkbench(browser, cs) };
}

/** The workspace's .vscode/settings.json, written as `settings` (VS Code reads it at once). */
export function writeWorkspaceSettings(cs: CodeServer, settings: Record<string, unknown>): void {
  mkdirSync(join(cs.workspace, ".vscode"), { recursive: true });
  writeFileSync(join(cs.workspace, ".vscode", "settings.json"), JSON.stringify(settings, null, 2));
}

export async function openWorkbench(browser: Browser, cs: CodeServer): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  await page.goto(cs.url);
  await page.waitForSelector(".monaco-workbench", { timeout: 60_000 });
  await page.waitForSelector(".explorer-folders-view .monaco-list-row", { timeout: 60_000 });
  return page;
}

export async function openFile(page: Page, name: string): Promise<void> {
  // (first off the explorer: a row's hover card, left by a pointer that stayed where the rows
  // moved since — a .vscode folder added at the top —, covers the row below and takes the click)
  await page.mouse.move(20, 500);
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first().click();
  await page.waitForSelector(`.tabs-container .tab.active[aria-label^="${name}"]`, { timeout: 20_000 });
  await page.locator(".monaco-editor .view-lines").first().waitFor();
}

/** The editor line (a `.view-line`) holding `text`. */
export function editorLine(page: Page, text: string) {
  return page.locator(".editor-group-container.active .monaco-editor .view-lines .view-line", { hasText: text }).first();
}

/**
 * Right-click `text` in the editor and pick `item` from the context menu. The extension's
 * menu items appear 1–4 s after the workbench: retry until the item is there.
 */
export async function contextMenu(page: Page, text: string, item: string, timeoutMs = 45_000, x = 40): Promise<number> {
  const line = editorLine(page, text);
  const end = Date.now() + timeoutMs;
  for (;;) {
    await line.click({ button: "right", position: { x, y: 5 } });
    try {
      const t0 = await chooseMenuItem(page, item, 2500);
      return t0;
    } catch (e) {
      if (Date.now() > end) throw e;
      await page.keyboard.press("Escape");
      await page.waitForTimeout(1000);
    }
  }
}

/**
 * Click a context-menu item; returns the time of the click. Right after start-up a menu can
 * ignore the click and stay open: then choose the item with the keyboard.
 */
export async function chooseMenuItem(page: Page, item: string, appearTimeout = 10_000): Promise<number> {
  const entry = page.getByRole("menuitem", { name: item });
  await entry.waitFor({ timeout: appearTimeout });
  let t0 = Date.now();
  await entry.click();
  try {
    await entry.waitFor({ state: "detached", timeout: 1500 });
  } catch {
    await entry.focus();
    t0 = Date.now(); // time from the action that worked, not the wait for the one that didn't
    await page.keyboard.press("Enter");
    await entry.waitFor({ state: "detached", timeout: 1500 });
    console.log(`# the menu ignored the click on "${item}"; chose it with Enter`);
  }
  return t0;
}

/**
 * Run a command from the palette; returns the time of the Enter. A palette opened while an
 * editor is still taking the focus (just after a notification's button opened a file) closes
 * at once: then open it again.
 */
export async function palette(page: Page, command: string): Promise<number> {
  const input = page.locator(".quick-input-widget input");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: command }).first();
  for (let attempt = 1; ; attempt++) {
    const last = attempt >= 4;
    await page.keyboard.press("F1");
    try {
      // The palette can also close between appearing and being typed into (an editor or a
      // notification taking the focus late): the whole open-type-find is what is retried.
      await input.waitFor({ timeout: last ? 30_000 : 5000 });
      await input.fill(`>${command}`, { timeout: last ? 30_000 : 5000 });
      await row.waitFor({ timeout: 15_000 });
      break;
    } catch (e) {
      if (last) throw e;
      console.log(`# the palette did not stay open (attempt ${attempt}); opening it again`);
      await page.keyboard.press("Escape");
    }
  }
  const t0 = Date.now();
  await page.keyboard.press("Enter");
  return t0;
}

/** The viewer inside the (last) webview panel. */
export function viewer(page: Page): FrameLocator {
  return page.frameLocator("iframe.webview.ready >> nth=-1").frameLocator("#active-frame");
}

/** The viewer's own performance marks in the (last) panel (`torchscope:boot`, `received`,
 * `decoded`, `worker-ready`, `layout-start`, `drawn`, …): each mark's last time, epoch ms. */
export async function panelMarks(page: Page): Promise<Record<string, number>> {
  return viewer(page)
    .locator("#torchscope")
    .evaluate(() => {
      const out: Record<string, number> = {};
      for (const e of performance.getEntriesByType("mark"))
        if (e.name.startsWith("torchscope:")) out[e.name.slice("torchscope:".length)] = Math.round(performance.timeOrigin + e.startTime);
      out["page-start"] = Math.round(performance.timeOrigin);
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
      if (nav) out["page-parsing"] = Math.round(performance.timeOrigin + nav.domInteractive);
      // The page's own files (through VS Code's webview resource loading): when each arrived.
      for (const e of performance.getEntriesByType("resource") as PerformanceResourceTiming[]) {
        const file = e.name.split(/[?#]/)[0]!.split("/").pop()!;
        if (!/\.(js|css)$/.test(file)) continue;
        out[`asked ${file}`] = Math.round(performance.timeOrigin + e.startTime);
        out[`loaded ${file}`] = Math.round(performance.timeOrigin + e.responseEnd);
      }
      return out;
    })
    .catch(() => ({}));
}

/** Mark the drawn graph as old, so `waitForGraph` waits for the next one. */
export async function markOld(page: Page): Promise<void> {
  const v = viewer(page);
  if ((await v.locator("svg.ts-svg").count()) > 0) await v.locator("svg.ts-svg").evaluate((el) => el.setAttribute("data-old", "1"));
}

/** How many panels have loaded their page: taken before a command that opens a panel, for
 * waitForNewPanel (viewer() reads the last of them, which until then is an older panel). */
export async function panelCount(page: Page): Promise<number> {
  return page.locator("iframe.webview.ready").count();
}

/** Until a panel beyond the `before` ones has loaded its page: viewer() is that panel's then. */
export async function waitForNewPanel(page: Page, before: number, timeout = 60_000): Promise<void> {
  await page.locator("iframe.webview.ready").nth(before).waitFor({ state: "attached", timeout });
}

export async function waitForGraph(page: Page, timeout = 240_000): Promise<void> {
  await viewer(page).locator('#torchscope[data-state="ready"] svg.ts-svg:not([data-old])').waitFor({ timeout });
}

/** The text of the editor line holding `code`, its hint included (spaces as spaces). */
export async function lineText(page: Page, code: string): Promise<string> {
  return (await editorLine(page, code).innerText()).replace(/\u00a0/g, " ");
}

/** Until the editor line holding `code` shows a hint matching `hint` after the code. */
export async function waitForHint(page: Page, code: string, hint: RegExp, timeout = 60_000): Promise<void> {
  const end = Date.now() + timeout;
  for (;;) {
    const t = await lineText(page, code);
    if (hint.test(t.slice(t.indexOf(code) + code.length))) return;
    if (Date.now() > end) throw new Error(`no hint ${hint} on "${code}": "${t}"`);
    await page.waitForTimeout(300);
  }
}

/** Until a notification matches `text`; returns it. */
export async function waitForMessage(page: Page, text: RegExp, timeout = 30_000): Promise<string> {
  const end = Date.now() + timeout;
  for (;;) {
    const m = (await notifications(page)).find((n) => text.test(n));
    if (m) return m;
    if (Date.now() > end) throw new Error(`no message ${text}: ${JSON.stringify(await notifications(page))}`);
    await page.waitForTimeout(300);
  }
}

/** Open `folder`'s `name` from the explorer (two files may share a name): the folder expanded,
 * its file opened (until the editor shows `line`: the tabs of the two read the same), the
 * folder collapsed again. */
export async function openIn(page: Page, folder: string, name: string, line: string): Promise<void> {
  const row = page.locator(".explorer-folders-view .monaco-list-row", { has: page.getByText(folder, { exact: true }) }).first();
  const inside = page.locator('.explorer-folders-view .monaco-list-row[aria-level="2"]', { hasText: name });
  await row.click();
  await inside.first().click();
  await editorLine(page, line).waitFor({ timeout: 20_000 });
  await row.click();
  await inside.first().waitFor({ state: "detached", timeout: 10_000 });
}

/** A venv of the system's python3 without torch (nor pip): its interpreter and its folder,
 * to remove after. */
export function venvWithoutTorch(): { python: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "torchscope-notorch-"));
  const made = spawnSync("python3", ["-m", "venv", "--without-pip", dir], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`python3 -m venv: ${made.stderr}`);
  return { python: join(dir, "bin", "python"), dir };
}

/** `Ln N` from the status bar. */
export async function cursorLine(page: Page): Promise<number> {
  const text = (await page.locator('[id="status.editor.selection"]').innerText()).trim();
  const m = /Ln (\d+)/.exec(text);
  if (!m) throw new Error(`no line in the status bar: ${text}`);
  return Number(m[1]);
}

/** Whether a tab whose label starts with `prefix` is the shown tab of one of the editor
 * groups: where an editor was opened from the panel, the focus may stay on the panel's group. */
export async function shownInAGroup(page: Page, prefix: string): Promise<boolean> {
  const labels = await page.locator(".tabs-container .tab.active").evaluateAll((tabs) => tabs.map((t) => t.getAttribute("aria-label") ?? ""));
  return labels.some((label) => label.startsWith(prefix));
}

export async function activeTab(page: Page): Promise<string> {
  return (await page.locator(".editor-group-container.active .tabs-container .tab.active").first().getAttribute("aria-label")) ?? "";
}

export async function closeAll(page: Page): Promise<void> {
  await palette(page, "View: Close All Editors");
  await page.waitForTimeout(500);
  // Dismiss notifications from earlier steps.
  await page.keyboard.press("Escape");
}

export async function shot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/** Notification toasts' text. */
export async function notifications(page: Page): Promise<string[]> {
  return page.locator(".notification-toast .notification-list-item-message").allInnerTexts();
}

/** Run a test step; on failure keep a screenshot and the visible messages for the report. */
export async function step(page: Page, name: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    await shot(page, `fail-${name}`).catch(() => undefined);
    const msgs = await notifications(page).catch(() => []);
    if (msgs.length) console.log(`# messages at failure: ${JSON.stringify(msgs)}`);
    throw e;
  }
}

/** Move the pointer off the graph so no tooltip covers a screenshot. */
export async function pointerAway(page: Page): Promise<void> {
  await page.mouse.move(5, 500);
  await page.waitForTimeout(200);
}
