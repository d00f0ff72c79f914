// End to end in real VS Code (code-server + Chromium): a hover's "Show in graph" when the
// trace's panel was closed, or when the trace is a side of an open comparison, and Re-trace of
// a graph file's panel. As a user: right-click → Visualize forward pass, close the panel, hover
// a line → Show in graph: the panel comes back as "Forward pass: TinyNet" (not the graph file's
// name), with the node selected, and its Re-trace traces the model again. Compare with training
// mode, hover a line → Show in graph: the comparison's panel shows the node, no other tab
// opens. "torchscope: Open graph file…" on a graph the command line wrote, Re-trace: "there is
// no code to re-trace", not "can't be opened any more". A graph someone else made whose source
// paths are link markdown: a click on a node says the file does not exist, as text — the
// message has no link in it (a command link there ran a shell command at a click).
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  cleanup,
  closeAll,
  contextMenu,
  editorLine,
  launch,
  markOld,
  notifications,
  openFile,
  openWorkbench,
  palette,
  pointerAway,
  PYTHON,
  shot,
  startCodeServer,
  step,
  viewer,
  waitForGraph,
  waitForMessage,
  type CodeServer,
} from "./harness";

const NET = `"""A small net for Show in graph."""
import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)
        self.example_input_array = torch.randn(4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        h = torch.relu(h)
        return self.fc2(h).softmax(dim=-1)
`;

// Training mode differs in its dropout.
const MLP = `import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(16, 4)
        self.example_input_array = torch.randn(4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.fc1(x))
        h = self.drop(h)
        return self.fc2(h)
`;

const CRAFTED_FILE = "/nowhere/model.py [Open the file](command:workbench.action.terminal.new) and [retry](https://example.invalid/x)";

let browser: Browser;
let cs: CodeServer | undefined;
let page: Page;

before(async () => {
  cs = await startCodeServer({
    settings: { "editor.hover.delay": 200, "files.autoSave": "off" },
    files: { "show_net.py": NET, "show_mlp.py": MLP },
  });
  // A graph file written by the command line, never traced in the window.
  execFileSync(PYTHON, ["-m", "torchscope", "trace", "show_net.py:TinyNet", "-o", "cli_graph.msgpack"], { cwd: cs.workspace, stdio: "ignore" });
  // The same graph as a stranger could hand it over: every source path is link markdown.
  const craft = [
    "import json, sys",
    "from torchscope.graph import pack_wire",
    "g = json.load(open('crafted.json'))",
    "for n in g['nodes']:",
    "    if n.get('site'): n['site']['file'] = sys.argv[1]",
    "open('crafted.msgpack', 'wb').write(pack_wire(g))",
  ].join("\n");
  execFileSync(PYTHON, ["-m", "torchscope", "trace", "show_net.py:TinyNet", "-o", "crafted.json", "--format", "json"], {
    cwd: cs.workspace,
    stdio: "ignore",
  });
  execFileSync(PYTHON, ["-c", craft, CRAFTED_FILE], { cwd: cs.workspace, stdio: "ignore" });
  browser = await launch();
  page = await openWorkbench(browser, cs);
});

after(async () => {
  await browser?.close();
  cleanup(cs, "torchscope-show-in-graph");
});

const tabs = (prefix: string) => page.locator(`.tabs-container .tab[aria-label^="${prefix}"]`);

/** Close the tab whose label starts with `prefix` (its close button). */
async function closeTab(prefix: string): Promise<void> {
  const tab = tabs(prefix).first();
  await tab.hover();
  await tab.locator(".codicon-close").click();
  await tab.waitFor({ state: "detached", timeout: 10_000 });
}

/** Hover `word` on the editor line holding `code` until its hover offers Show in graph; click it. */
async function showInGraph(code: string, word: string): Promise<void> {
  const hover = page.locator(".monaco-hover:not(.hidden)", { hasText: "Show in graph" }).first();
  for (let attempt = 0; ; attempt++) {
    await editorLine(page, code).locator("span", { hasText: word }).last().hover();
    try {
      await hover.waitFor({ timeout: attempt < 5 ? 8_000 : 30_000 });
      break;
    } catch (e) {
      if (attempt >= 5) throw e;
      await pointerAway(page); // the hints come once the server indexed the graph
    }
  }
  await hover.locator("a", { hasText: "Show in graph" }).click();
}

describe("Show in graph and Re-trace of a panel opened again", { timeout: 600_000 }, () => {
  it("the closed panel of a trace comes back as the model's panel, and its Re-trace traces the model", () =>
    step(page, "show-closed", async () => {
      await openFile(page, "show_net.py");
      await contextMenu(page, "h = torch.relu(h)", "Visualize forward pass");
      await waitForGraph(page);
      await tabs("Forward pass: TinyNet").first().waitFor();
      await closeTab("Forward pass: TinyNet");
      assert.equal(await page.locator("iframe.webview.ready").count(), 0, "no panel");

      await showInGraph("h = torch.relu(h)", "relu");
      await viewer(page).locator('.ts-node[data-selected="true"]', { hasText: "relu" }).waitFor({ timeout: 60_000 });
      const labels = await page.locator(".tabs-container .tab").evaluateAll((ts) => ts.map((t) => t.getAttribute("aria-label") ?? ""));
      assert.ok(
        labels.some((l) => l.startsWith("Forward pass: TinyNet")),
        `the model's panel: ${labels.join(", ")}`,
      );
      assert.ok(!labels.some((l) => /TinyNet-\d/.test(l)), `no tab named after the graph file: ${labels.join(", ")}`);
      await pointerAway(page);
      await shot(page, "show-in-graph-reopened");

      // Re-trace: the model from its document, in this panel.
      await markOld(page);
      await palette(page, "Re-trace forward pass");
      await waitForGraph(page);
      assert.ok(!(await notifications(page)).some((n) => /can't be opened/.test(n)), JSON.stringify(await notifications(page)));
      assert.equal(await tabs("Forward pass: TinyNet").count(), 1);
    }));

  it("a trace of an open comparison: the comparison's panel shows the node, no other tab opens", () =>
    step(page, "show-compare", async () => {
      await closeAll(page);
      await openFile(page, "show_mlp.py");
      await editorLine(page, "def forward").click();
      await palette(page, "Compare with training mode");
      await waitForGraph(page);
      await tabs("Compare MLP: eval mode → training mode").first().waitFor();
      // back to the code; the comparison stays open beside it
      await page.locator(".tabs-container .tab", { hasText: "show_mlp.py" }).first().click();

      // (a line of one call: its hover is that call's)
      await showInGraph("h = self.drop(h)", "drop");
      await viewer(page).locator('.ts-node[data-selected="true"]', { hasText: "drop" }).waitFor({ timeout: 60_000 });
      await page.waitForTimeout(1000); // (a stray tab would have opened by now)
      const labels = await page.locator(".tabs-container .tab").evaluateAll((ts) => ts.map((t) => t.getAttribute("aria-label") ?? ""));
      assert.ok(!labels.some((l) => l.startsWith("Forward pass")), `no other panel: ${labels.join(", ")}`);
      assert.equal(await page.locator("iframe.webview.ready").count(), 1);
      await pointerAway(page);
      await shot(page, "show-in-graph-compare");
    }));

  /** "torchscope: Open graph file…" of the workspace's `name`, through code-server's own dialog. */
  async function openGraphFile(name: string): Promise<void> {
    await palette(page, "Open graph file");
    // code-server's own file dialog: a path in a quick input
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ timeout: 15_000 });
    // the dialog puts its folder in the box a moment after it opens, over a path typed
    // before (seen once under load: "Please select a file"): fill until the path stays
    const file = join(cs!.workspace, name);
    for (let i = 0; i < 5; i++) {
      await input.fill(file);
      await page.waitForTimeout(700);
      if ((await input.inputValue()) === file) break;
    }
    await page.keyboard.press("Enter");
  }

  it("Open graph file… of the command line's graph: its Re-trace says there is no code to re-trace", () =>
    step(page, "open-graph-file", async () => {
      await closeAll(page);
      await openGraphFile("cli_graph.msgpack");
      await waitForGraph(page);
      await tabs("Forward pass: cli_graph").first().waitFor();
      await palette(page, "Re-trace forward pass");
      await waitForMessage(page, /this panel shows a graph file; there is no code to re-trace/);
      assert.ok(!(await notifications(page)).some((n) => /can't be opened/.test(n)), JSON.stringify(await notifications(page)));
    }));

  it("Open graph file… of a JSON graph (`trace --format json`) draws it", () =>
    step(page, "open-json-graph", async () => {
      await closeAll(page);
      await markOld(page);
      await openGraphFile("crafted.json");
      await waitForGraph(page);
      await tabs("Forward pass: crafted.json").first().waitFor();
      assert.ok(await viewer(page).locator('g[data-kind="op"]').count(), "its ops drawn");
    }));

  it("a graph whose source paths are link markdown: a click says the file does not exist, with no link in the message", () =>
    step(page, "crafted-graph-links", async () => {
      await closeAll(page);
      await markOld(page);
      await openGraphFile("crafted.msgpack");
      await waitForGraph(page);
      await viewer(page).locator('g[data-kind="op"]').first().click();
      await waitForMessage(page, /does not exist/);
      const message = page.locator(".notification-toast .notification-list-item-message", { hasText: "does not exist" }).first();
      assert.match(await message.innerText(), /\[Open the file\]/, "the path shows as written");
      assert.equal(await message.locator("a").count(), 0, "no link in the message");
    }));
});
