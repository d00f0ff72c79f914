// End to end in real VS Code (code-server + Chromium): panels across a reload of the window.
// Two panels, one a tab not shown: after Developer: Reload Window both models' lines have
// their hints again (VS Code restores a hidden panel only when its tab is shown). A panel whose
// graph file was damaged meanwhile traces again by itself, as one whose file is gone. A graph
// the viewer can't show is not exported as an empty page: Export says why.
import { strict as assert } from "node:assert";
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  cleanup,
  closeAll,
  contextMenu,
  editorLine,
  markOld,
  notifications,
  openFile,
  openIn,
  palette,
  panelCount,
  startWorkbench,
  step,
  viewer,
  waitForGraph,
  waitForNewPanel,
  type CodeServer,
} from "./harness";

let browser: Browser;
let cs: CodeServer | undefined;
let page: Page;

/** Classes M00, M01, …: Linear(8, 4 + i) then relu, so their lines' shapes differ. */
function models(n: number): string {
  let s = "import torch\nfrom torch import nn\n\n";
  for (let i = 0; i < n; i++) {
    const id = `M0${i}`;
    s += `\nclass ${id}(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, ${4 + i})\n        self.example_input_array = torch.randn(2, 8)\n\n    def forward(self, x):\n        return torch.relu(self.fc(x))  # ${id}\n\n`;
  }
  return s;
}

const tab = (prefix: string) => page.locator(`.tabs-container .tab[aria-label^="${prefix}"]`).first();

/** Trace model `id` of models.py through the palette's pick (the cursor on no model). */
async function trace(id: string): Promise<void> {
  await markOld(page); // (an earlier panel's drawn graph must not end the wait for this one's)
  await tab("models.py").click();
  await editorLine(page, "import torch").click();
  await palette(page, "torchscope: Visualize forward pass");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: /M0\d/ }).first().waitFor({ timeout: 60_000 });
  await page.locator(".quick-input-widget input").fill(id);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: id }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press("Enter");
  await tab(`Forward pass: ${id}`).waitFor({ timeout: 60_000 });
  await waitForGraph(page);
}

/** Until the line ending in `# id` shows `shape` as its hint. */
async function hintOn(id: string, shape: string, timeout = 90_000): Promise<void> {
  await tab("models.py").click();
  const line = editorLine(page, `# ${id}`);
  const end = Date.now() + timeout;
  for (;;) {
    const text = (await line.innerText()).replace(/\s+/g, " ");
    if (text.includes(shape)) return;
    if (Date.now() > end) throw new Error(`no hint ${shape} on ${id}'s line: ${text}`);
    await page.waitForTimeout(500);
  }
}

async function reload(): Promise<void> {
  // (the page loaded again: the old page's workbench must not answer the waits below)
  const loaded = page.waitForEvent("load", { timeout: 60_000 });
  await palette(page, "Developer: Reload Window");
  await loaded;
  await page.waitForSelector(".monaco-workbench", { timeout: 60_000 });
  await page.waitForSelector(".explorer-folders-view .monaco-list-row", { timeout: 60_000 });
}

function graphFileOf(id: string): string {
  const dir = join(cs!.base, "user-data", "User", "globalStorage", "torchscope.torchscope", "graphs", "editor");
  const files = readdirSync(dir)
    .filter((f) => f.startsWith(`${id}-`) && f.endsWith(".msgpack"))
    .map((f) => join(dir, f));
  return files.sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs).at(-1)!;
}

before(async () => {
  const twin =
    "import torch\nfrom torch import nn\n\n\nclass Twin(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 4)\n        self.example_input_array = torch.randn(2, 8)\n\n    def forward(self, x):\n        return torch.relu(self.fc(x))\n";
  ({ cs, browser, page } = await startWorkbench({
    files: { "models.py": models(3), "damaged.msgpack": "", "twin_a/twin.py": `# the a copy\n${twin}`, "twin_b/twin.py": `# the b copy\n${twin}` },
  }));
});

after(async () => {
  await browser?.close();
  cleanup(cs, "torchscope-reload-window");
});

describe("panels across a reload of the window", { timeout: 900_000 }, () => {
  it("both models' lines have their hints again, the hidden panel's too", () =>
    step(page, "reload-hidden-hints", async () => {
      await closeAll(page);
      await openFile(page, "models.py");
      await trace("M00");
      await trace("M01"); // (its tab is the one shown of the two)
      await hintOn("M00", "2×4");
      await hintOn("M01", "2×5");
      await reload();
      await openFile(page, "models.py");
      await hintOn("M01", "2×5");
      await hintOn("M00", "2×4"); // (its panel not restored: its tab was never shown)
    }));

  it("two same-named models' panels: the one restored first keeps the file in its title", () =>
    step(page, "reload-same-names", async () => {
      await closeAll(page);
      for (const folder of ["twin_a", "twin_b"]) {
        await openIn(page, folder, "twin.py", `# the ${folder.slice(-1)} copy`);
        const panels = await panelCount(page);
        await contextMenu(page, "def forward", "Visualize forward pass");
        await waitForNewPanel(page, panels);
        await waitForGraph(page);
      }
      await tab("Forward pass: Twin · twin_a/twin.py").waitFor({ timeout: 30_000 });
      await tab("Forward pass: Twin · twin_b/twin.py").waitFor({ timeout: 30_000 });
      await reload();
      // (b's panel, the one shown, is restored; a's waits for its tab to be shown)
      await waitForGraph(page);
      const expected = ["Forward pass: Twin · twin_a/twin.py", "Forward pass: Twin · twin_b/twin.py"];
      let titles: string[] = [];
      for (const end = Date.now() + 15_000; Date.now() < end; await page.waitForTimeout(300)) {
        titles = (await page.locator(".tabs-container .tab", { hasText: "Forward pass: Twin" }).allInnerTexts())
          .map((t) => t.trim().split("\n")[0]!)
          .sort();
        if (JSON.stringify(titles) === JSON.stringify(expected)) break;
      }
      assert.deepEqual(titles, expected);
    }));

  it("a panel whose graph file was damaged traces again by itself", () =>
    step(page, "reload-damaged-graph", async () => {
      await closeAll(page);
      await openFile(page, "models.py");
      await trace("M02");
      writeFileSync(graphFileOf("M02"), "");
      await reload();
      await tab("Forward pass: M02").click();
      await waitForGraph(page);
      assert.equal(await viewer(page).locator(".ts-model").innerText(), "M02");
    }));

  it("Export of a graph the viewer can't show says why, and writes nothing", () =>
    step(page, "export-unreadable", async () => {
      await closeAll(page);
      await palette(page, "torchscope: Open graph file…");
      // code-server's own open dialog: a path in a quick input, once it has settled on the folder
      const input = page.locator(".quick-input-widget input");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "damaged.msgpack" }).first().waitFor({ timeout: 15_000 });
      await input.fill(join(cs!.workspace, "damaged.msgpack"));
      await page.keyboard.press("Enter");
      await viewer(page).locator("#torchscope", { hasText: "can't be shown" }).waitFor({ timeout: 60_000 });
      await palette(page, "torchscope: Export forward-pass graph");
      const said = page.locator(".notification-toast", { hasText: /can't show its graph .*nothing to export/ });
      await said.first().waitFor({ timeout: 15_000 });
      assert.equal(await page.locator(".quick-input-widget").isVisible(), false, "no format asked");
      assert.deepEqual(
        readdirSync(cs!.workspace).filter((f) => f.endsWith(".html")),
        [],
        JSON.stringify(await notifications(page)),
      );
    }));
});
