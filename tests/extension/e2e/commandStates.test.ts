// End to end in real VS Code (code-server + Chromium): the commands in the states a user
// reaches besides the plain one. Visualize twice while the first trace runs: one trace. The
// language server restarted while a trace runs: the trace says so (not "out of memory", no
// raw client error), its panel goes. Export while the panel waits for its first graph: says
// there is none yet. torchscope.pythonPath set to a path that does not exist, then back: the
// server starts again by itself; set to a program that is not Python: one message of
// torchscope's own, no language-client toasts, no unhandled errors in the extension host. An
// untitled Python file: asked to be saved, then traced.
import { strict as assert } from "node:assert";
import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  PYTHON,
  cleanup,
  closeAll,
  contextMenu,
  logText,
  notifications,
  openFile,
  palette,
  startWorkbench,
  step,
  waitForGraph,
  writeWorkspaceSettings,
  type CodeServer,
} from "./harness";

let browser: Browser;
let cs: CodeServer | undefined;
let page: Page;

/** The raw messages of the language client (not torchscope's own words). */
const CLIENT_NOISE = /EPIPE|connection to server|Pending response rejected|couldn't create connection|crashed \d+ times/;

const workspaceSettings = (settings: Record<string, unknown>): void => writeWorkspaceSettings(cs!, settings);

/** The extension host's log (where an unhandled rejection of an extension is written). */
function extensionHostLog(): string {
  const logs = join(cs!.base, "user-data", "logs");
  if (!existsSync(logs)) return "";
  return (readdirSync(logs, { recursive: true }) as string[])
    .filter((f) => /exthost\.log$/.test(f))
    .map((f) => readFileSync(join(logs, f), "utf8"))
    .join("\n");
}

/** The torchscope log from `mark` on (a length of logText). */
function logSince(mark: number): string {
  return logText(cs!).slice(mark);
}

async function logHas(mark: number, re: RegExp, timeout = 60_000): Promise<string> {
  const end = Date.now() + timeout;
  for (;;) {
    const log = logSince(mark);
    if (re.test(log)) return log;
    if (Date.now() > end) throw new Error(`no log line ${re} in:\n${log}`);
    await page.waitForTimeout(500);
  }
}

const toast = (text: string | RegExp) => page.locator(".notification-toast", { hasText: text });
const lens = () => page.locator(".editor-group-container.active .codelens-decoration a", { hasText: "Visualize forward pass" });

async function tabLabels(): Promise<string[]> {
  return page.locator(".tabs-container .tab").evaluateAll((tabs) => tabs.map((t) => t.getAttribute("aria-label") ?? ""));
}

async function clearNotifications(): Promise<void> {
  await palette(page, "Notifications: Clear All Notifications");
  await page.waitForTimeout(300);
}

before(async () => {
  ({ cs, browser, page } = await startWorkbench());
});

after(async () => {
  await browser?.close();
  cleanup(cs, "torchscope-command-states");
});

describe("commands in the states a user reaches", { timeout: 900_000 }, () => {
  it("Visualize twice while the first trace runs: one trace; a restart then stops it with its reason", () =>
    step(page, "states-twice-restart", async () => {
      await closeAll(page);
      await openFile(page, "slow.py");
      await lens().first().waitFor({ timeout: 90_000 });
      const mark = logText(cs!).length;
      await contextMenu(page, "def forward", "Visualize forward pass");
      await toast("Tracing Slow").first().waitFor({ timeout: 60_000 });
      await palette(page, "torchscope: Visualize forward pass");
      // (the second command said so in the log: it joined the first)
      for (
        const end = Date.now() + 30_000;
        !/Slow: traced already; waiting for that trace/.test(logText(cs!).slice(mark));
        await page.waitForTimeout(200)
      ) {
        if (Date.now() > end) throw new Error("the second command did not join the first trace");
      }
      assert.equal(await toast("Tracing Slow").count(), 1, `one trace: ${JSON.stringify(await notifications(page))}`);
      await palette(page, "torchscope: Restart language server");
      await toast(/Slow stopped: the language server restarted/)
        .first()
        .waitFor({ timeout: 60_000 });
      await logHas(mark, /the language server is running again/);
      await page.waitForTimeout(1500);
      const said = await notifications(page);
      assert.ok(!said.some((n) => /does not fit in memory|SIGKILL/.test(n)), `not "out of memory": ${JSON.stringify(said)}`);
      assert.ok(!said.some((n) => CLIENT_NOISE.test(n)), `no raw client error: ${JSON.stringify(said)}`);
      assert.ok(!logSince(mark).includes("most likely out of memory"), logSince(mark));
      // the panel opened for the trace goes: no graph came
      assert.ok(!(await tabLabels()).some((l) => l.startsWith("Forward pass: Slow")), JSON.stringify(await tabLabels()));
    }));

  it("Export while the panel waits for its first graph: says there is none yet", () =>
    step(page, "states-export-waiting", async () => {
      await clearNotifications();
      await closeAll(page);
      await openFile(page, "slow.py");
      await contextMenu(page, "def forward", "Visualize forward pass");
      await toast("Tracing Slow").first().waitFor({ timeout: 60_000 });
      await page.locator(".tabs-container .tab", { hasText: "Forward pass: Slow" }).first().click();
      await palette(page, "torchscope: Export forward-pass graph");
      await toast(/Slow has no graph to export yet/)
        .first()
        .waitFor({ timeout: 15_000 });
      await toast("Tracing Slow").first().getByRole("button", { name: "Cancel" }).click();
      await toast("Tracing Slow").first().waitFor({ state: "detached", timeout: 30_000 });
    }));

  it("torchscope.pythonPath set to a path that does not exist, then back: the server starts again by itself", () =>
    step(page, "states-missing-python", async () => {
      await clearNotifications();
      await closeAll(page);
      await openFile(page, "mlp.py");
      await lens().first().waitFor({ timeout: 90_000 });
      let mark = logText(cs!).length;
      workspaceSettings({ "torchscope.pythonPath": "/nonexistent/bin/python" });
      await logHas(mark, /does not exist/);
      mark = logText(cs!).length;
      workspaceSettings({ "torchscope.pythonPath": PYTHON });
      await logHas(mark, /the language server is running again with .*\(torchscope\.pythonPath\)/);
      await lens().first().waitFor({ timeout: 60_000 });
    }));

  it("torchscope.pythonPath set to a program that is not Python: torchscope's one message, no client noise", () =>
    step(page, "states-not-python", async () => {
      await clearNotifications();
      await closeAll(page);
      const fake = join(cs!.base, "not-python");
      writeFileSync(fake, "#!/bin/sh\necho 'this environment is broken' >&2\nexit 1\n");
      chmodSync(fake, 0o755);
      const hostBefore = extensionHostLog().length;
      const mark = logText(cs!).length;
      workspaceSettings({ "torchscope.pythonPath": fake });
      await logHas(mark, /pythonPath changed/);
      await openFile(page, "mlp.py");
      await contextMenu(page, "def forward", "Visualize forward pass");
      await toast(/the language server did not start with/)
        .first()
        .waitFor({ timeout: 60_000 });
      await page.waitForTimeout(5000); // (the client's own messages, when it makes them, come in this time)
      const said = await notifications(page);
      assert.ok(!said.some((n) => CLIENT_NOISE.test(n)), `no raw client messages: ${JSON.stringify(said)}`);
      assert.equal(said.filter((n) => /did not start with/.test(n)).length, 1, JSON.stringify(said));
      const host = extensionHostLog().slice(hostBefore);
      assert.doesNotMatch(host, /Client is not running|write EPIPE|Cannot call write after a stream was destroyed/);
      assert.ok(!/crashed \d+ times/.test(logSince(mark)), "not restarted over and over");
      // back to a Python with torch: the server starts again by itself
      const back = logText(cs!).length;
      workspaceSettings({ "torchscope.pythonPath": PYTHON });
      await logHas(back, /the language server is running again with/);
    }));

  it("An untitled Python file: asked to be saved, then traced", () =>
    step(page, "states-untitled", async () => {
      await clearNotifications();
      await closeAll(page);
      await palette(page, "File: New Untitled Text File");
      await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
      await page.keyboard.insertText(
        "import torch\nfrom torch import nn\n\nnet = nn.Sequential(nn.Linear(4, 8), nn.ReLU())\nx = torch.randn(2, 4)\n",
      );
      await palette(page, "Change Language Mode");
      await page.locator(".quick-input-widget input").fill("python");
      await page
        .locator(".quick-input-list .monaco-list-row", { hasText: /^Python/ })
        .first()
        .click();
      await page.locator(".editor-group-container.active .view-line", { hasText: "net = nn.Sequential" }).first().click();
      await palette(page, "torchscope: Visualize forward pass");
      const ask = toast(/has no file to import/).first();
      await ask.waitFor({ timeout: 30_000 });
      await ask.getByRole("button", { name: "Save As…" }).click();
      // code-server's own save dialog: a path in a quick input
      const input = page.locator(".quick-input-widget input");
      await input.waitFor({ timeout: 15_000 });
      const where = join(cs!.workspace, "untitled_net.py");
      await page.waitForFunction(() => /\.py$/.test((document.querySelector(".quick-input-widget input") as HTMLInputElement | null)?.value ?? ""));
      await input.fill(where);
      assert.equal(await input.inputValue(), where);
      await page.keyboard.press("Enter");
      await waitForGraph(page);
      assert.ok(existsSync(join(cs!.workspace, "untitled_net.py")), "saved where asked");
      assert.ok(
        (await tabLabels()).some((l) => l.startsWith("Forward pass: Sequential")),
        JSON.stringify(await tabLabels()),
      );
    }));
});
