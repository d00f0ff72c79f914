// End to end in real VS Code (code-server): a multi-root workspace whose second folder has
// settings of its own. Each folder's files trace as that folder's settings say: the second
// folder's .env reaches its code (a size the model reads), and a folder's torchscope.pythonPath
// holds for its files only — the first folder's model traces with the user's interpreter while
// the second's names one without torch (the server followed whichever folder's file was in the
// editor when it started: the first folder's trace failed for lack of torch, or the second's
// setting was never used).
import { strict as assert } from "node:assert";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  cleanup,
  contextMenu,
  launch,
  logText,
  markOld,
  openFile,
  startCodeServer,
  step,
  venvWithoutTorch,
  viewer,
  waitForGraph,
  waitForHint,
  waitForMessage,
  type CodeServer,
} from "./harness";

let browser: Browser;
let cs: CodeServer | undefined;
let page: Page;
let folderB = "";
const { python: NO_TORCH, dir: venvDir } = venvWithoutTorch();

const model = (cls: string, width: string) => `import os
import torch
from torch import nn


class ${cls}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, ${width})
        self.example_input_array = torch.randn(2, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))
`;

before(async () => {
  cs = await startCodeServer({ files: { "a_model.py": model("ANet", "4") } });
  folderB = join(cs.base, "projB");
  mkdirSync(folderB, { recursive: true });
  writeFileSync(join(folderB, "b_model.py"), model("BNet", 'int(os.environ.get("WIDTH", "3"))'));
  writeFileSync(join(folderB, ".env"), "WIDTH=7\n");
  const workspaceFile = join(cs.base, "two.code-workspace");
  writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: cs.workspace }, { path: folderB }] }, null, 2));
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  await page.goto(`${cs.url.replace(/\?.*$/, "")}?workspace=${encodeURIComponent(workspaceFile)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: 60_000 });
  await page.waitForSelector(".explorer-folders-view .monaco-list-row", { timeout: 60_000 });
});

after(async () => {
  await browser?.close();
  cleanup(cs, "torchscope-multi-root");
  rmSync(venvDir, { recursive: true, force: true });
});

describe("a multi-root workspace", { timeout: 600_000 }, () => {
  it("the second folder's .env reaches its model", () =>
    step(page, "multi-root-env", async () => {
      await openFile(page, "b_model.py"); // (the explorer shows both folders' files)
      await contextMenu(page, "def forward", "Visualize forward pass");
      await waitForGraph(page);
      await waitForHint(page, "return torch.relu(self.fc(x))", /2×7/);
    }));

  it("each folder's interpreter for its own files", () =>
    step(page, "multi-root-interpreter", async () => {
      // the second folder's files run in a Python without torch
      mkdirSync(join(folderB, ".vscode"), { recursive: true });
      writeFileSync(join(folderB, ".vscode", "settings.json"), JSON.stringify({ "torchscope.pythonPath": NO_TORCH }, null, 2));
      const restarted = (logText(cs!).match(/torchscope\.pythonPath changed/g) ?? []).length;
      for (
        const end = Date.now() + 60_000;
        (logText(cs!).match(/torchscope\.pythonPath changed/g) ?? []).length === restarted;
        await page.waitForTimeout(300)
      ) {
        if (Date.now() > end) throw new Error("the setting's change did not reach the extension");
      }
      // the first folder's model: the user's interpreter, which has torch
      await openFile(page, "a_model.py");
      await markOld(page);
      await contextMenu(page, "def forward", "Visualize forward pass");
      await waitForGraph(page);
      assert.equal(await viewer(page).locator(".ts-model").innerText(), "ANet");
      await waitForHint(page, "return torch.relu(self.fc(x))", /2×4/);
      // the second folder's: its own setting's interpreter, which has none
      await openFile(page, "b_model.py"); // (the explorer shows both folders' files)
      await contextMenu(page, "def forward", "Visualize forward pass");
      const said = await waitForMessage(page, /torch is not installed/, 120_000);
      assert.ok(said.includes(NO_TORCH), said);
      assert.match(logText(cs!), /b_model\.py is in the workspace folder projB, which runs /);
    }));
});
