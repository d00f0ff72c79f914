// Test fixture (not shipped): the `debugpy` debug type backed by the real adapter, and a
// command that puts a breakpoint on the active Python file's "# BREAK" line and launches it.
// config.json (written by the test) names the Python to use.
const fs = require("fs");
const path = require("path");
const vscode = require("vscode");

function python() {
  try {
    return JSON.parse(fs.readFileSync(path.join(__dirname, "config.json"), "utf8")).python;
  } catch {
    return "python3";
  }
}

exports.activate = function activate(context) {
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory("debugpy", {
      createDebugAdapterDescriptor: () => new vscode.DebugAdapterExecutable(python(), ["-m", "debugpy.adapter"]),
    }),
    // A setting changed as the Settings editor changes it (a write to the settings file is
    // picked up late in code-server).
    vscode.commands.registerCommand("torchscopeTest.toggleInlayHints", () => {
      const cfg = vscode.workspace.getConfiguration("torchscope");
      return cfg.update("inlayHints", cfg.get("inlayHints", true) === false, vscode.ConfigurationTarget.Global);
    }),
    vscode.commands.registerCommand("torchscopeTest.debugActiveFile", async () => {
      const doc = vscode.window.activeTextEditor && vscode.window.activeTextEditor.document;
      if (!doc) throw new Error("no active editor");
      const line = doc.getText().split("\n").findIndex((l) => l.includes("# BREAK"));
      if (line < 0) throw new Error(`no "# BREAK" line in ${doc.uri.fsPath}`);
      vscode.debug.addBreakpoints([new vscode.SourceBreakpoint(new vscode.Location(doc.uri, new vscode.Position(line, 0)))]);
      const folder = vscode.workspace.getWorkspaceFolder(doc.uri);
      return vscode.debug.startDebugging(folder, {
        type: "debugpy",
        name: `Debug ${path.basename(doc.uri.fsPath)}`,
        request: "launch",
        program: doc.uri.fsPath,
        python: [python()],
        console: "internalConsole",
        justMyCode: true,
        cwd: path.dirname(doc.uri.fsPath),
      });
    }),
  );
};

exports.deactivate = function deactivate() {};
