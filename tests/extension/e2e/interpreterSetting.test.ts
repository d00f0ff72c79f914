// End to end in real VS Code (code-server, no Python extension): the settings that choose the
// interpreter. torchscope.pythonPath empty, the workspace's python.defaultInterpreterPath a
// venv without torch: a trace says so. The workspace's settings.json edited on disk to name the
// project's venv: the language server restarts once with it (the log says why) and a trace
// draws. Then torchscope.pythonPath set in the workspace to the venv without torch: its
// message's "Set torchscope.pythonPath" opens the Workspace settings, where the value in use
// is (it opened the User tab, where an edit changed nothing).
import { strict as assert } from "node:assert";
import { after, before, describe, it } from "node:test";
import { rmSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import {
  cleanup,
  closeAll,
  contextMenu,
  launch,
  logText,
  openFile,
  openWorkbench,
  PYTHON,
  startCodeServer,
  step,
  venvWithoutTorch,
  waitForGraph,
  writeWorkspaceSettings,
  type CodeServer,
} from "./harness";

let browser: Browser;
let cs: CodeServer | undefined;
let page: Page;
const { python: NO_TORCH, dir: venvDir } = venvWithoutTorch();

const workspaceSettings = (settings: Record<string, unknown>): void => writeWorkspaceSettings(cs!, settings);

/** Wait until the extension's log has a line matching `re`; returns the log. */
async function logHas(re: RegExp, timeout = 90_000): Promise<string> {
  const end = Date.now() + timeout;
  for (;;) {
    const log = logText(cs!);
    if (re.test(log)) return log;
    if (Date.now() > end) throw new Error(`no log line ${re} in:\n${log}`);
    await page.waitForTimeout(500);
  }
}

/** The no-torch message of a trace of mlp.py's MLP; returns its text. */
async function noTorchMessage(): Promise<string> {
  await closeAll(page);
  await openFile(page, "mlp.py");
  await contextMenu(page, "def forward", "Visualize forward pass");
  const toast = page.locator(".notification-toast", { has: page.getByRole("button", { name: "Set torchscope.pythonPath" }) }).first();
  await toast.waitFor({ timeout: 120_000 });
  return toast.innerText();
}

/** Click the message's button: whether the Settings editor comes to show `expected` (User,
 * Workspace, …) as its selected tab; else the tab it shows. (An editor opened before still
 * shows its old tab until it takes the new target: the wait is for the one asked for.) */
async function settingsTabOpened(expected: string): Promise<string> {
  const toast = page.locator(".notification-toast", { has: page.getByRole("button", { name: "Set torchscope.pythonPath" }) }).first();
  await toast.getByRole("button", { name: "Set torchscope.pythonPath" }).click();
  const checked = page.locator(".settings-editor .settings-tabs-widget .action-label.checked").first();
  try {
    await page.locator(".settings-editor .settings-tabs-widget .action-label.checked", { hasText: expected }).first().waitFor({ timeout: 30_000 });
  } catch {
    await checked.waitFor({ timeout: 5_000 });
  }
  return (await checked.innerText()).trim();
}

const restarts = (log: string): string[] => log.split("\n").filter((l) => /restarting the language server/.test(l));

before(async () => {
  cs = await startCodeServer({
    // torchscope.pythonPath empty in the user settings: python.defaultInterpreterPath decides
    settings: { "torchscope.pythonPath": "" },
    files: { ".vscode/settings.json": JSON.stringify({ "python.defaultInterpreterPath": NO_TORCH }, null, 2) },
  });
  browser = await launch();
  page = await openWorkbench(browser, cs);
});

after(async () => {
  await browser?.close();
  cleanup(cs, "torchscope-interpreter-setting");
  rmSync(venvDir, { recursive: true, force: true });
});

describe("the setting that chooses the interpreter", { timeout: 600_000 }, () => {
  it("python.defaultInterpreterPath without torch: a trace says so; the button opens the User settings (set there)", () =>
    step(page, "interp-no-torch", async () => {
      assert.match(await noTorchMessage(), new RegExp(`torch is not installed.*${NO_TORCH.replace(/[.]/g, "\\.")}`));
      await logHas(/starting the language server: .*notorch.* \(python-setting\)/);
      assert.equal(await settingsTabOpened("User"), "User");
      await closeAll(page);
    }));

  it("python.defaultInterpreterPath edited in the workspace's settings.json restarts the server once, with it", () =>
    step(page, "interp-default-path", async () => {
      workspaceSettings({ "python.defaultInterpreterPath": PYTHON });
      const log = await logHas(
        new RegExp(`the language server is running again with ${PYTHON.replace(/[.]/g, "\\.")} \\(python\\.defaultInterpreterPath\\)`),
      );
      assert.deepEqual(
        restarts(log).map((l) => l.replace(/^.*\] /, "")),
        ["python.defaultInterpreterPath changed: restarting the language server"],
      );
      await openFile(page, "mlp.py");
      await contextMenu(page, "def forward", "Visualize forward pass");
      await waitForGraph(page);
      assert.equal(restarts(logText(cs!)).length, 1, "restarted once");
    }));

  it("torchscope.pythonPath set in the workspace: its no-torch message's button opens the Workspace settings", () =>
    step(page, "interp-workspace-button", async () => {
      workspaceSettings({ "python.defaultInterpreterPath": PYTHON, "torchscope.pythonPath": NO_TORCH });
      await logHas(/the language server is running again with .*notorch.* \(torchscope\.pythonPath\)/);
      assert.match(await noTorchMessage(), /torch is not installed/);
      assert.equal(await settingsTabOpened("Workspace"), "Workspace");
    }));
});
