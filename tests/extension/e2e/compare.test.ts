// End to end in real VS Code (code-server + Chromium): the workspace is a git repository with
// a commit; the model is edited in the editor and left unsaved; "Compare forward pass with
// HEAD" from the palette traces HEAD's text and the editor's in the real runner and shows the
// comparison in a panel: the edited layer is marked changed, the layer the edit dropped is a
// ghost, and a click on the ghost opens its line in HEAD's (read-only) version of the file.
// Then "Compare with training mode" on a dropout + batch-norm model shows what training mode
// does differently (those two calls), not dropout's noise in every value after it; and a save
// with torchscope.retraceOnSave re-traces the file's panels where they are, without bringing
// one forward. The window has no Python extension and no torchscope.pythonPath: the
// interpreter is python.defaultInterpreterPath's.
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  activeTab,
  shownInAGroup,
  cleanup,
  cursorLine,
  editorLine,
  launch,
  logText,
  markOld,
  openFile,
  openWorkbench,
  palette,
  panelCount,
  pointerAway,
  shot,
  startCodeServer,
  step,
  viewer,
  waitForGraph,
  waitForNewPanel,
  PYTHON,
  type CodeServer,
} from "./harness";

const MODEL = `import torch
from torch import nn


class CompareMe(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.norm = nn.LayerNorm(32)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        return self.out(self.norm(self.act(self.fc(x))))


if __name__ == "__main__":
    CompareMe()(torch.randn(2, 16))
`;
// A model whose training mode differs in two calls: batch norm (batch statistics) and dropout.
const TRAIN_MODE = `import torch
from torch import nn


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.norm = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(torch.relu(self.drop(self.norm(self.fc(x)))))


def noisy_input():
    return torch.randn(8, 16)
`;

// A model whose layers come from another file of the project: the edit is in that file.
const USES_HELPER = `import torch
from torch import nn
from helper_layers import Head


class UsesHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        return self.head(x)


if __name__ == "__main__":
    UsesHelper()(torch.randn(2, 16))
`;
const HELPER_LAYERS = `from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.norm(self.fc(x)))
`;
/** The edit saved in helper_layers.py: two lines above, the norm no longer called. */
const HELPER_EDITED = `# edited\n# since HEAD\n${HELPER_LAYERS.replace("self.act(self.norm(self.fc(x)))", "self.act(self.fc(x))")}`;
/** 1-based line of Head.forward's return in HEAD's helper_layers.py. */
const HELPER_RETURN_LINE = 12;

/** 1-based line of the forward's return in the committed text. */
const RETURN_LINE = 14;

let browser: Browser;
let cs: CodeServer | undefined;
let page: Page;

function git(...args: string[]): void {
  execFileSync("git", args, { cwd: cs!.workspace, stdio: "ignore" });
}

before(async () => {
  // Unsaved means unsaved: code-server may save edits on its own otherwise.
  cs = await startCodeServer({
    files: { "compare_me.py": MODEL, "train_mode.py": TRAIN_MODE, "uses_helper.py": USES_HELPER, "helper_layers.py": HELPER_LAYERS },
    settings: {
      "files.autoSave": "off",
      "torchscope.retraceOnSave": true,
      // no torchscope.pythonPath and no Python extension: the Python extension's own setting
      "torchscope.pythonPath": "",
      "python.defaultInterpreterPath": PYTHON,
    },
  });
  // The workspace as a repository with one commit (the user's name set here, not globally).
  git("init", "-q");
  git("config", "user.name", "torchscope e2e");
  git("config", "user.email", "e2e@torchscope.invalid");
  git("add", "-A");
  git("commit", "-q", "-m", "the model as committed");
  browser = await launch();
  page = await openWorkbench(browser, cs);
});

after(async () => {
  await browser?.close();
  cleanup(cs, "torchscope-compare");
});

/** Replace the code of the editor line holding `text` (its indentation kept) with `code`.
 * The click must put the cursor on that line (MODEL's line: edits here keep the line count);
 * a hover or widget left over the editor by the previous edit can take the click instead. */
async function replaceLine(p: Page, text: string, code: string): Promise<void> {
  const want = MODEL.split("\n").findIndex((l) => l.includes(text)) + 1;
  for (let attempt = 0; ; attempt++) {
    await editorLine(p, text).click();
    const end = Date.now() + 1_000;
    while ((await cursorLine(p)) !== want && Date.now() < end) await p.waitForTimeout(100);
    if ((await cursorLine(p)) === want) break;
    if (attempt === 4) throw new Error(`clicking "${text}" left the cursor on line ${await cursorLine(p)}, not ${want}`);
    await p.keyboard.press("Escape");
    await p.waitForTimeout(300);
  }
  await p.keyboard.press("End");
  await p.keyboard.press("Shift+Home");
  await p.keyboard.insertText(code);
  await editorLine(p, code).waitFor({ timeout: 10_000 });
}

describe("Compare forward pass with HEAD", { timeout: 600_000 }, () => {
  it("an unsaved edit → Compare with HEAD → the edited layer is marked in the panel; a ghost's line opens in HEAD", () =>
    step(page, "compare-head", async () => {
      await openFile(page, "compare_me.py");
      // ReLU → GELU (a changed layer); the norm call replaced by a second act call (norm removed).
      await replaceLine(page, "self.act = nn.ReLU()", "self.act = nn.GELU()");
      await replaceLine(page, "return self.out(self.norm(", "return self.out(self.act(self.act(self.fc(x))))");
      assert.match(await activeTab(page), /compare_me\.py/);
      assert.ok((await page.locator(".tabs-container .tab.active.dirty").count()) === 1, "the edit is unsaved");

      const t0 = await palette(page, "Compare forward pass with HEAD");
      await waitForGraph(page);
      console.log(`# timing compare_with_head_palette_to_drawn: ${Date.now() - t0} ms`);
      await page.locator(".tabs-container .tab", { hasText: "Compare CompareMe: HEAD → working copy" }).first().waitFor();
      const v = viewer(page);
      const act = v.locator('.ts-node[data-path="act"]').first();
      await act.waitFor();
      assert.equal(await act.getAttribute("data-status"), "changed");
      const norm = v.locator('.ts-node[data-path="norm"]').first();
      assert.equal(await norm.getAttribute("data-status"), "removed");
      // both sides built from one seed: what runs before the edit has the same values
      assert.equal(await v.locator('.ts-node[data-path="fc"]').first().getAttribute("data-status"), "same");
      // changed: act's module and op; out's linear op too, its output values (its statistics)
      assert.deepEqual(await v.locator("[data-role=compare-counts] > *").allTextContents(), ["+2 added", "−2 removed", "~3 changed"]);
      await pointerAway(page);
      await shot(page, "compare-head-panel");

      // The ghost of the removed norm: its line is HEAD's, opened from git, not the edited file.
      await norm.click();
      // (the edited file's cursor is on that line number too: HEAD's document must be the one shown)
      await page.locator('.tabs-container .tab.active[aria-label^="compare_me.py (HEAD)"]').first().waitFor({ timeout: 15_000 });
      await page.waitForFunction(
        (n) => new RegExp(`Ln ${n},`).test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ""),
        RETURN_LINE,
        {
          timeout: 15_000,
        },
      );
      assert.equal(await cursorLine(page), RETURN_LINE);
      // (in whichever group shows it: the click may leave the focus on the panel)
      const shown = (text: string) => page.locator(".monaco-editor .view-lines .view-line", { hasText: text });
      await shown("return self.out(self.norm(self.act(").first().waitFor({ timeout: 10_000 });
      assert.equal(await shown("self.act = nn.ReLU()").count(), 1, "HEAD's text");
      assert.equal(await page.locator(".tabs-container .tab.active.dirty").count(), 0, "a read-only document, not the edited one");
      assert.ok(await shownInAGroup(page, "compare_me.py (HEAD)"), "HEAD's document is shown");
      await shot(page, "compare-head-ghost-line");
    }));

  it("Compare with training mode: the calls training mode switches are marked, not dropout's noise after them", () =>
    step(page, "compare-train", async () => {
      await openFile(page, "train_mode.py");
      await editorLine(page, "def forward").click();
      await markOld(page);
      await palette(page, "Compare with training mode");
      await waitForGraph(page);
      await page.locator(".tabs-container .tab", { hasText: "Compare Noisy" }).first().waitFor();
      const v = viewer(page);
      // the changes each closed box hides (its badge): batch norm and dropout are called with
      // training=True (and batch norm counts its batches); the layers after the dropout get
      // other values (its noise), which this comparison is not about
      const hidden = async (path: string) => {
        const badge = v.locator(`.ts-node[data-path="${path}"]`).first().locator("[data-role=change-badge]");
        return (await badge.count()) ? Number(await badge.getAttribute("data-count")) : 0;
      };
      assert.ok((await hidden("norm")) >= 1, "batch norm switched");
      assert.equal(await hidden("drop"), 1, "dropout switched");
      assert.equal(await hidden("out"), 0, "dropout's noise is not a change of the output layer");
      assert.equal(await hidden("fc"), 0, "one input on both sides: nothing before the switch changed");
      const counts = await v.locator("[data-role=compare-counts] > *").allTextContents();
      console.log(`# compare with training mode: ${JSON.stringify(counts)}`);
      assert.ok(
        counts.some((c) => /^~[1-4] changed$/.test(c)),
        `a few changes, the switched calls: ${JSON.stringify(counts)}`,
      );
      await pointerAway(page);
      await shot(page, "compare-train-panel");
    }));

  it("a save re-traces the file's panels where they are (retraceOnSave): none comes forward, the editor keeps the focus", () =>
    step(page, "retrace-on-save", async () => {
      await openFile(page, "compare_me.py");
      await editorLine(page, "def forward").click();
      await markOld(page);
      await palette(page, "torchscope: Visualize forward pass");
      await waitForGraph(page);
      // the shown tab of each group, by title ("Forward pass: CompareMe, Editor Group 2")
      const front = async () =>
        (
          await page
            .locator(".tabs-container .tab.active")
            .evaluateAll((tabs) => tabs.map((t) => (t.getAttribute("aria-label") ?? "").split(",")[0]!))
        ).filter((l) => /^(Forward pass:|Compare) /.test(l));
      assert.deepEqual(await front(), ["Forward pass: CompareMe"], "the graph panel is in front of the comparison in their group");
      const count = (re: RegExp) =>
        logText(cs!)
          .split("\n")
          .filter((l) => re.test(l)).length;
      const traced = count(/\[(info|warning)\] traced CompareMe/);
      const compared = count(/\[info\] compared CompareMe \(HEAD/);
      await editorLine(page, "def forward").click();
      await page.keyboard.press("Control+s");
      // both of the file's panels are traced again: the graph and the comparison with HEAD
      const end = Date.now() + 180_000;
      while ((count(/\[(info|warning)\] traced CompareMe/) <= traced || count(/\[info\] compared CompareMe \(HEAD/) <= compared) && Date.now() < end)
        await page.waitForTimeout(250);
      assert.ok(count(/\[(info|warning)\] traced CompareMe/) > traced, "the graph was traced again on save");
      assert.ok(count(/\[info\] compared CompareMe \(HEAD/) > compared, "the comparison was made again on save");
      await page.waitForTimeout(1000); // (a panel brought forward would be by now)
      assert.deepEqual(await front(), ["Forward pass: CompareMe"], "the panel in front stays in front");
      assert.match(await activeTab(page), /compare_me\.py/, "the editor keeps the focus");
      assert.equal(await page.locator(".tabs-container .tab.active.dirty").count(), 0, "saved");
    }));

  it("a save that does not parse leaves the panels' graphs marked out of date, until a save that traces", () =>
    step(page, "stale-on-failed-save", async () => {
      await openFile(page, "compare_me.py");
      // (the return line as the first step left it, saved by the last one)
      const line = "return self.out(self.act(self.act(self.fc(x))))";
      // (an operator left dangling: a paren left open is closed by the editor as it is typed)
      await replaceLine(page, "return self.out(", `${line} +`);
      await page.keyboard.press("Control+s");
      const stale = viewer(page).locator('[data-role="stale"]');
      await stale.waitFor({ state: "visible", timeout: 120_000 });
      assert.match(await stale.innerText(), /^Out of date: .*compare_me\.py.*This graph is from the last trace that worked\.$/s);
      await shot(page, "compare-stale-after-failed-save");
      await replaceLine(page, "return self.out(", line);
      await page.keyboard.press("Control+s");
      await stale.waitFor({ state: "hidden", timeout: 120_000 });
      assert.equal(await page.locator(".tabs-container .tab.active.dirty").count(), 0, "saved");
    }));

  it("an edit saved in an imported file → Compare with HEAD marks it; its HEAD side opens HEAD's text of that file", () =>
    step(page, "compare-head-imported-file", async () => {
      writeFileSync(join(cs!.workspace, "helper_layers.py"), HELPER_EDITED);
      await openFile(page, "uses_helper.py");
      await editorLine(page, "def forward").click();
      // (the CompareMe panel may still draw again after the step before's save)
      const panels = await panelCount(page);
      await palette(page, "Compare forward pass with HEAD");
      await waitForNewPanel(page, panels);
      await waitForGraph(page);
      await page.locator(".tabs-container .tab", { hasText: "Compare UsesHelper: HEAD → working copy" }).first().waitFor();
      const v = viewer(page);
      await v.locator('[data-action="expand-all"]').click(); // (Head's box opens)
      const norm = v.locator('.ts-node[data-path="head.norm"]').first();
      await norm.waitFor();
      assert.equal(await norm.getAttribute("data-status"), "removed", "the norm the edit in helper_layers.py dropped");
      assert.equal(await v.locator('.ts-node[data-path="head.fc"]').first().getAttribute("data-status"), "same");
      await pointerAway(page);
      await shot(page, "compare-head-imported-file");
      // The ghost's line is in HEAD's helper_layers.py (two lines up from the saved file's).
      await norm.click();
      await page.waitForFunction(
        (n) => new RegExp(`Ln ${n},`).test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ""),
        HELPER_RETURN_LINE,
        { timeout: 15_000 },
      );
      assert.ok(await shownInAGroup(page, "helper_layers.py (HEAD)"), "HEAD's document of the imported file is shown");
      const shown = (text: string) => page.locator(".monaco-editor .view-lines .view-line", { hasText: text });
      await shown("return self.act(self.norm(self.fc(x)))").first().waitFor({ timeout: 10_000 });
      await shot(page, "compare-head-imported-file");
    }));

  it("the interpreter is python.defaultInterpreterPath's when neither torchscope.pythonPath nor the Python extension names one", () =>
    step(page, "interpreter-setting", async () => {
      const started = logText(cs!)
        .split("\n")
        .filter((l) => l.includes("starting the language server"));
      assert.ok(started.length >= 1, "the server was started");
      assert.ok(
        started.every((l) => l.includes(`${PYTHON} -m torchscope.server (python-setting)`)),
        `started with python.defaultInterpreterPath's interpreter: ${started.join(" | ")}`,
      );
    }));
});
