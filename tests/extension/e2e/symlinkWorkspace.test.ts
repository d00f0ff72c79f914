// End to end in real VS Code (code-server + Chromium): a workspace opened through a symlinked
// folder (`link-ws` → `workspace`). The graph names files by their real paths, VS Code by the
// link: a click on a node must open the document already open (not a second copy under the
// real path, not "outside the workspace?"), and the cursor's line must mark its nodes.
import { strict as assert } from "node:assert";
import { realpathSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { cleanup, closeAll, contextMenu, cursorLine, openFile, startWorkbench, step, viewer, waitForGraph, type CodeServer } from "./harness";

let browser: Browser;
let cs: CodeServer | undefined;
let page: Page;

before(async () => {
  ({ cs, browser, page } = await startWorkbench({ throughSymlink: true }));
});

after(async () => {
  await browser?.close();
  cleanup(cs, "torchscope-symlink-workspace");
});

describe("a workspace opened through a symlink", { timeout: 600_000 }, () => {
  it("a click on a node opens the open document at its line; the cursor's line marks the node", () =>
    step(page, "symlink-click", async () => {
      assert.notEqual(realpathSync(cs!.workspace), cs!.workspace, "the workspace is a symlink");
      await closeAll(page);
      await openFile(page, "mlp.py");
      await contextMenu(page, "def forward", "Visualize forward pass");
      await waitForGraph(page);
      const v = viewer(page);
      // The softmax in MLP.forward: mlp.py line 18.
      await v.locator('g[data-kind="op"]', { hasText: "softmax" }).first().click();
      await page.waitForFunction(() => /Ln 18,/.test(document.querySelector('[id="status.editor.selection"]')?.textContent ?? ""), null, {
        timeout: 15_000,
      });
      assert.equal(await cursorLine(page), 18);
      assert.equal(await page.locator(".monaco-dialog-box").count(), 0, "no 'outside the workspace?' question");
      const tabs = await page.locator(".tabs-container .tab").evaluateAll((all) => all.map((t) => t.getAttribute("aria-label") ?? ""));
      assert.equal(tabs.filter((label) => label.startsWith("mlp.py")).length, 1, `one mlp.py tab: ${tabs.join(" | ")}`);
      // The cursor's line comes back to the graph: what line 18 made is marked.
      await v.locator(".ts-match", { hasText: "softmax" }).first().waitFor({ timeout: 10_000 });
    }));
});
