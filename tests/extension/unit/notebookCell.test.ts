// A notebook cell is no file to import: the editor's commands are not offered there (the menus'
// `when` clauses), and run anyway (a keybinding, the palette with a cell focused) they say once
// that notebooks draw a model with torchscope.show(model, x) in a cell, without asking the
// language server, opening a panel or showing a progress notification (it said "save the file
// first: an untitled document cannot be imported" after a progress toast).
// First: vscode.debug on the stub before the extension's modules load (nothing is paused).
import "./debug-fake";
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, it } from "node:test";
import * as vs from "./vscode-stub";
import { isNotebookCell, NOTEBOOK_CELL } from "../../../extension/src/commands";
import { GraphPanel } from "../../../extension/src/graphPanel";
import { calls, fakeServer, messages, resetWiring, run, settle, wiredExtension } from "./wiring";

const CELL_URI = "vscode-notebook-cell:/w/nb.ipynb#W0sZmlsZQ%3D%3D";

/** A notebook's code cell as VS Code hands it over: a python document of its own scheme. */
function cell() {
  const doc = { uri: vs.Uri.parse(CELL_URI), languageId: "python", isUntitled: false, lineCount: 9, getText: () => "class Net(nn.Module): ...\n" };
  vs.workspace.documents.set(doc.uri.toString(), doc);
  return doc;
}

/** The extension with a server that records what it was asked (it finds and traces `Net`). */
function extension() {
  const asked: string[] = [];
  const server = fakeServer({
    targetAt: async () => {
      asked.push("targetAt");
      return { target: "Net", kind: "class", line: 0 };
    },
    targets: async () => {
      asked.push("targets");
      return [];
    },
    trace: async () => {
      asked.push("trace");
      throw new Error("save the file first: an untitled document cannot be imported");
    },
  });
  const w = wiredExtension(server);
  w.commands.register();
  w.compareCommands.register();
  return { asked };
}

beforeEach(() => {
  resetWiring();
  vs.commands.registered.clear();
});

describe("a notebook cell", () => {
  it("is told apart by its scheme; a file, an untitled file and a HEAD version are not cells", () => {
    assert.equal(isNotebookCell(vs.Uri.parse(CELL_URI)), true);
    assert.equal(isNotebookCell(vs.Uri.file("/w/nb.ipynb")), false);
    assert.equal(isNotebookCell(vs.Uri.file("/w/net.py")), false);
    assert.equal(isNotebookCell(vs.Uri.parse("untitled:Untitled-1")), false);
  });

  const commands: [string, unknown[]][] = [
    ["torchscope.visualize", []],
    ["torchscope.visualize", [{ uri: CELL_URI, target: "Net" }]], // (a CodeLens's argument)
    ["torchscope.compareWithHead", []],
    ["torchscope.compareWithTraining", []],
    ["torchscope.compareWithInput", []],
    ["torchscope.compareWithTraining", [{ uri: CELL_URI, target: "Net" }]],
  ];
  for (const [command, args] of commands) {
    it(`${command}${args.length ? " (named)" : ""} says once to use torchscope.show in a cell, and nothing else`, async () => {
      const doc = cell();
      vs.window.activeTextEditor = { document: doc, selection: { active: new vs.Position(0, 4) } };
      const x = extension();
      await run(command, ...args);
      await settle();
      assert.deepEqual(messages("showInformationMessage"), [NOTEBOOK_CELL]);
      assert.match(NOTEBOOK_CELL, /torchscope\.show\(model, x\)/);
      assert.deepEqual([...messages("showWarningMessage"), ...messages("showErrorMessage")], []);
      assert.deepEqual(calls("withProgress"), [], "no progress notification");
      assert.deepEqual(calls("showInputBox"), []);
      assert.deepEqual(x.asked, [], "the language server is not asked");
      assert.equal(GraphPanel.all().length, 0, "no panel");
    });
  }
});

describe("the menus", () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "package.json"), "utf8")) as {
    contributes: { menus: Record<string, { command?: string; submenu?: string; when?: string }[]> };
  };
  const menus = manifest.contributes.menus;
  const EDITOR_COMMANDS = ["torchscope.visualize", "torchscope.compareWithHead", "torchscope.compareWithTraining", "torchscope.compareWithInput"];
  const NOT_IN_A_CELL = "!notebookEditorFocused";

  it("the editor's context menu offers Visualize and Compare only outside notebook cells", () => {
    const items = menus["editor/context"]!;
    assert.deepEqual(items.map((m) => m.command ?? m.submenu).sort(), ["torchscope.compare", "torchscope.visualize"]);
    for (const m of items) assert.ok(m.when?.includes(`editorLangId == python && ${NOT_IN_A_CELL}`), `${m.command ?? m.submenu}: ${m.when}`);
  });

  it("the palette agrees: the editor commands are offered for a python editor that is no cell", () => {
    for (const command of EDITOR_COMMANDS) {
      const m = menus.commandPalette!.find((p) => p.command === command);
      assert.ok(m?.when, command);
      // every alternative that offers it for a python editor excludes cells (`a && b || c`: && binds first)
      for (const alt of m.when.split("||").map((s) => s.trim())) {
        if (alt.includes("editorLangId")) assert.ok(alt.includes(NOT_IN_A_CELL), `${command}: ${m.when}`);
      }
    }
  });
});
