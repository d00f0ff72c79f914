// A workspace folder opened through a symlink (`link` → `real`): the graph's sites name the
// real paths (the Python side resolves the traced file), while the workspace folder and the
// editor's documents are under the symlinked one. It must behave as a plain workspace: a click
// on a node opens the document the user has open (no question, no second copy under the real
// path), and the cursor in it marks the nodes of its line. Against real symlinks on disk.
// First: vscode.debug on the stub before the extension's modules load (nothing is paused).
import "./debug-fake";
import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import { GraphPanel, type PanelEvents } from "../../../extension/src/graphPanel";
import { isInside, openDecision } from "../../../extension/src/openGuard";
import { pausedAt } from "../../../extension/src/pausedHere";
import { followCursor, revealLine, revealSite, sameFile } from "../../../extension/src/reveal";
import * as vs from "./vscode-stub";

const root = realpathSync(mkdtempSync(join(tmpdir(), "torchscope-symlink-ws-")));
const real = join(root, "p6");
const link = join(root, "link-ws");
mkdirSync(join(real, "research", "models"), { recursive: true });
mkdirSync(join(root, "elsewhere"));
const SOURCE = "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return self.fc(x)\n";
for (const f of ["net.py", "layers.py"]) writeFileSync(join(real, "research", "models", f), SOURCE);
writeFileSync(join(root, "elsewhere", "x.py"), SOURCE);
symlinkSync(real, link, "dir");

/** As the graph names them (real paths), and as the editor has them (under the symlinked folder). */
const realNet = join(real, "research", "models", "net.py");
const realLayers = join(real, "research", "models", "layers.py");
const linkNet = join(link, "research", "models", "net.py");
const linkLayers = join(link, "research", "models", "layers.py");
const outside = join(root, "elsewhere", "x.py");

/** A document VS Code has open at `file` (its path as the editor spells it). */
function openDoc(file: string) {
  const lines = readFileSync(file, "utf8").split("\n");
  const doc = {
    uri: vs.Uri.file(file),
    languageId: "python",
    lineCount: lines.length,
    getText: () => lines.join("\n"),
    lineAt: (i: number) => ({ text: lines[i] ?? "", firstNonWhitespaceCharacterIndex: (lines[i] ?? "").search(/\S|$/) }),
  };
  vs.workspace.documents.set(doc.uri.toString(), doc);
  return doc;
}

function events(): PanelEvents {
  return { reveal: () => undefined, save: () => undefined, retrace: () => undefined, changeInput: () => undefined, log: vs.logChannel() as never };
}

/** The panel of `Net` traced from the document at `file`, its viewer ready. */
function panelOf(file: string): { panel: GraphPanel; posted: unknown[] } {
  const viewerDir = vs.Uri.file("/ext/viewer") as unknown as import("vscode").Uri;
  const panel = GraphPanel.createOrShow(viewerDir, { uri: vs.Uri.file(file).toString(), target: "Net", title: "Forward pass: Net" }, events());
  const webview = vs.panels.at(-1)!.webview;
  webview.receive({ type: "ready" });
  return { panel, posted: webview.posted };
}

const calls = (api: string) => vs.calls.filter((c) => c.api === api);
const opened = () => calls("openTextDocument").map((c) => (c.args[0] as vs.Uri).toString());
const shown = () => calls("showTextDocument").map((c) => c.args as [{ uri: vs.Uri }, { viewColumn?: number }]);

beforeEach(() => {
  for (const p of GraphPanel.all()) p.dispose();
  vs.reset();
  vs.workspace.workspaceFolders = [{ uri: vs.Uri.file(link) }];
});
afterEach(() => {
  for (const p of GraphPanel.all()) p.dispose();
});

describe("a workspace folder reached through a symlink", () => {
  it("a site under the folder's real path is inside it: opened without a question", () => {
    assert.ok(isInside(realNet, link));
    assert.ok(isInside(linkNet, real));
    const ctx = { folders: [link], known: [] };
    assert.equal(openDecision(realNet, "file", ctx), "open");
    assert.equal(openDecision(realLayers, "file", ctx), "open");
    assert.equal(openDecision(outside, "file", ctx), "ask", "a file outside the folder still asks");
  });

  it("the document open under the symlinked path is the site's file: known", () => {
    const ctx = { folders: [], known: [linkNet] };
    assert.equal(openDecision(realNet, "file", ctx), "open");
    assert.equal(openDecision(realLayers, "file", ctx), "ask");
  });

  it("one file, whether spelled through the symlink or not", () => {
    assert.ok(sameFile(linkNet, realNet));
    assert.ok(sameFile(realNet, linkNet));
    assert.ok(!sameFile(linkNet, realLayers));
    assert.ok(!sameFile(join(link, "gone.py"), join(link, "gone2.py")), "paths that do not exist: by their spelling");
    assert.ok(sameFile(join(link, "gone.py"), join(real, "gone.py")), "…with the folders that do exist resolved");
  });

  it("a click on a node of the panel's own file opens the document open already (its uri), where it is shown", async () => {
    const doc = openDoc(linkNet);
    vs.window.visibleTextEditors = [{ document: doc, viewColumn: vs.ViewColumn.Three }];
    const { panel } = panelOf(linkNet);
    await revealSite({ file: realNet, line: 5, func: "forward", col: 15 }, panel);
    assert.equal(calls("showWarningMessage").length, 0, "no question");
    assert.deepEqual(opened(), [doc.uri.toString()]);
    const [[d, options]] = shown() as [[unknown, { viewColumn?: number }]];
    assert.equal(d, doc, "the document open already, not a second copy");
    assert.equal(options.viewColumn, vs.ViewColumn.Three);
  });

  it("a click on a node of another open file of the workspace opens that document", async () => {
    openDoc(linkNet);
    const layers = openDoc(linkLayers);
    await revealLine(realLayers, 3);
    assert.equal(calls("showWarningMessage").length, 0);
    assert.deepEqual(opened(), [layers.uri.toString()]);
    assert.equal(shown()[0]![0], layers);
  });

  it("a file of the workspace not open yet opens under the workspace folder's path", async () => {
    await revealLine(realLayers, 3);
    assert.equal(calls("showWarningMessage").length, 0);
    assert.deepEqual(
      shown().map(([d]) => d.uri.fsPath),
      [linkLayers],
    );
  });

  it("the cursor in the symlinked document marks the nodes of its line: highlightLine names the file as the graph does", async () => {
    const doc = openDoc(linkNet);
    const { posted } = panelOf(linkNet);
    const follow = followCursor();
    try {
      vs.selectionChanged.fire({ textEditor: { document: doc }, selections: [{ active: { line: 4, character: 0 } }] });
      await new Promise((r) => setTimeout(r, 250));
      assert.deepEqual(
        posted.filter((m) => (m as { type: string }).type === "highlightLine"),
        [{ type: "highlightLine", file: realNet, line: 5 }],
      );
    } finally {
      follow.dispose();
    }
  });

  it("the paused debugger's line, in a file run through the symlinked folder, names the file as the graph does", () => {
    const at = pausedAt({ sessionId: "s", threadId: 1, depth: 2, file: linkNet, func: "forward", line: 5 });
    assert.deepEqual(at, { file: realNet, line: 5, func: "forward" });
  });
});
