// The settings that choose the interpreter: a change of the one in use restarts the language
// server (python.defaultInterpreterPath without the Python extension was not heard), and the
// no-torch message's "Set torchscope.pythonPath" opens the settings where the value in use is
// set (it opened the User tab when the workspace set it, where an edit changed nothing).
// First: vscode.debug on the stub before the extension's modules load (nothing is paused).
import "./debug-fake";
import { strict as assert } from "node:assert";
import { afterEach, beforeEach, describe, it } from "node:test";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as vs from "./vscode-stub";
import { pythonInterpreterChanged, settingsChanged } from "../../../extension/src/extension";
import { interpreterSettings, pickInterpreter, type Interpreter } from "../../../extension/src/interpreter";
import { PER_FOLDER, scopeInUse } from "../../../extension/src/settingsScope";
import type { Server } from "../../../extension/src/client";
import { TORCHSCOPE_ERROR } from "../../../extension/src/protocol";
import { fakeServer as tracingServer, wiredExtension } from "./wiring";

const dir = mkdtempSync(join(tmpdir(), "torchscope-unit-interp-"));

/** Values per scope for the stub's `inspect` ("section.name" → scope values). */
const scoped = new Map<string, { globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown }>();
const plainGetConfiguration = vs.workspace.getConfiguration;
const ws = vs.workspace as typeof vs.workspace & { workspaceFile?: vs.Uri };

beforeEach(() => {
  vs.reset();
  scoped.clear();
  ws.workspaceFile = undefined;
  // The stub's configuration with `inspect`, as VS Code's (the value in use from the most specific scope).
  vs.workspace.getConfiguration = (section?: string) => ({
    ...plainGetConfiguration(section),
    inspect: (name: string) => {
      const s = scoped.get(section ? `${section}.${name}` : name);
      return s ? { key: `${section}.${name}`, ...s } : undefined;
    },
  });
});
afterEach(() => {
  vs.workspace.getConfiguration = plainGetConfiguration;
  ws.workspaceFile = undefined;
});

/** Let the message's `.then` run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

function fakeServer(python: Interpreter | undefined) {
  const restarts: (string | undefined)[] = [];
  let hints = 0;
  let runnerStops = 0;
  return {
    python,
    restarts,
    get hints() {
      return hints;
    },
    get runnerStops() {
      return runnerStops;
    },
    restartSoon: (reason?: string) => void restarts.push(reason),
    inlayHintsChanged: () => void hints++,
    shutdownRunner: async () => void runnerStops++,
  };
}

const changeOf = (...keys: string[]) => ({ affectsConfiguration: (k: string) => keys.includes(k) }) as import("vscode").ConfigurationChangeEvent;

describe("a change of the setting that chose the interpreter", () => {
  it("python.defaultInterpreterPath, the interpreter in use, restarts the server once and says why", () => {
    const server = fakeServer({ path: "/w/.venv/bin/python", source: "python-setting" });
    settingsChanged(changeOf("python.defaultInterpreterPath"), server);
    assert.deepEqual(server.restarts, ["python.defaultInterpreterPath changed"]);
  });
  it("python.defaultInterpreterPath when python3 ran for want of it (it was 'python' or not set)", () => {
    const server = fakeServer({ path: "python3", source: "default" });
    settingsChanged(changeOf("python.defaultInterpreterPath"), server);
    assert.deepEqual(server.restarts, ["python.defaultInterpreterPath changed"]);
  });
  it("not when torchscope.pythonPath or the Python extension chose it (that extension's own event says so)", () => {
    for (const source of ["setting", "python-extension"] as const) {
      const server = fakeServer({ path: "/opt/py", source });
      settingsChanged(changeOf("python.defaultInterpreterPath"), server);
      assert.deepEqual(server.restarts, [], source);
    }
  });
  it("torchscope's own settings restart it as before: once for several, named in the reason", () => {
    const server = fakeServer({ path: "/opt/py", source: "setting" });
    settingsChanged(changeOf("torchscope.pythonPath", "torchscope.logLevel"), server);
    assert.deepEqual(server.restarts, ["torchscope.pythonPath, torchscope.logLevel changed"]);
    settingsChanged(changeOf("torchscope.inlayHints"), server);
    assert.equal(server.restarts.length, 1, "inlay hints: no restart");
    assert.equal(server.hints, 1, "the running server is told");
    settingsChanged(changeOf("editor.fontSize"), server);
    assert.equal(server.restarts.length, 1);
  });
  it("lists the settings that decide each kind of interpreter", () => {
    assert.deepEqual(interpreterSettings({ path: "/opt/py", source: "setting" }), ["torchscope.pythonPath"]);
    assert.deepEqual(interpreterSettings({ path: "/v/bin/python", source: "python-extension" }), ["torchscope.pythonPath"]);
    assert.deepEqual(interpreterSettings({ path: "/v/bin/python", source: "python-setting" }), [
      "torchscope.pythonPath",
      "python.defaultInterpreterPath",
    ]);
    assert.deepEqual(interpreterSettings(undefined), ["torchscope.pythonPath", "python.defaultInterpreterPath"]);
  });
  it("the Python extension's interpreter change restarts a server that runs in its interpreter, not one torchscope.pythonPath chose", () => {
    const mine = fakeServer({ path: "/v/bin/python", source: "python-extension" });
    pythonInterpreterChanged(mine);
    assert.deepEqual(mine.restarts, ["the Python extension's interpreter changed"]);
    assert.equal(mine.runnerStops, 1);
    const pinned = fakeServer({ path: "/opt/py", source: "setting" });
    pythonInterpreterChanged(pinned);
    assert.deepEqual(pinned.restarts, []);
    assert.equal(pinned.runnerStops, 0, "its warm runner stays");
  });
});

describe("where a setting's value in use is set", () => {
  it("the most specific scope that sets it; a folder's own settings only in a multi-root workspace", () => {
    assert.equal(scopeInUse(undefined, false), "user");
    assert.equal(scopeInUse({}, false), "user");
    assert.equal(scopeInUse({ globalValue: "/u/py" }, false), "user");
    assert.equal(scopeInUse({ globalValue: "/u/py", workspaceValue: "/w/py" }, false), "workspace");
    // an empty string set in the workspace is a value: it hides the user's
    assert.equal(scopeInUse({ globalValue: "/u/py", workspaceValue: "" }, false), "workspace");
    // one folder open: its settings are the workspace's
    assert.equal(scopeInUse({ workspaceValue: "/w/py", workspaceFolderValue: "/w/py" }, false), "workspace");
    assert.equal(scopeInUse({ workspaceValue: "/w/py", workspaceFolderValue: "/f/py" }, true), "workspace-folder");
    assert.equal(scopeInUse({ workspaceValue: "/w/py" }, true), "workspace");
  });

  it("a window's setting (the time limit) ignores a folder's value: VS Code does not use it", () => {
    assert.equal(scopeInUse({ globalValue: 60, workspaceFolderValue: 5 }, true, false), "user");
    assert.equal(scopeInUse({ workspaceValue: 30, workspaceFolderValue: 5 }, true, false), "workspace");
    assert.equal(scopeInUse({ workspaceValue: 30, workspaceFolderValue: 30 }, false, false), "workspace");
    const settings = JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "package.json"), "utf8")).contributes.configuration
      .properties as Record<string, { scope?: string }>;
    const perFolder = Object.keys(settings).filter((k) => settings[k]!.scope === "resource");
    assert.deepEqual([...PER_FOLDER].sort(), perFolder.sort(), "as package.json declares them");
  });
});

/** The extension wired to `server`, `doc` open in the active editor of a one-folder workspace. */
function wiredFor(server: Server, doc: { uri: vs.Uri }) {
  vs.window.activeTextEditor = { document: doc, selection: { active: new vs.Position(0, 4) } };
  vs.workspace.documents.set(doc.uri.toString(), doc);
  vs.workspace.workspaceFolders = [{ uri: vs.Uri.file(dir) }];
  return wiredExtension(server, { storage: dir, toolDir: "/t", viewerDir: "/v" });
}

describe("the no-torch message's Set torchscope.pythonPath", () => {
  const doc = { uri: vs.Uri.file(join(dir, "net.py")), languageId: "python", getText: () => "class Net(nn.Module): ..." };
  function noTorch(): Promise<unknown> {
    const server = tracingServer({
      python: { path: "/tmp/x/notorch/bin/python", source: "setting" },
      trace: async () => {
        throw Object.assign(new Error("torch is not installed in this Python (/tmp/x/notorch/bin/python)"), {
          code: TORCHSCOPE_ERROR,
          data: { kind: "no-torch", details: "/tmp/x/notorch/bin/python" },
        });
      },
    });
    const { commands } = wiredFor(server, doc);
    vs.answers.push("Set torchscope.pythonPath");
    return commands.visualize();
  }
  const executed = () => vs.calls.filter((c) => c.api === "executeCommand" && String(c.args[0]).startsWith("workbench.")).map((c) => c.args);

  it("set in the workspace: opens the Workspace settings at the setting", async () => {
    scoped.set("torchscope.pythonPath", {
      globalValue: "",
      workspaceValue: "/tmp/x/notorch/bin/python",
      workspaceFolderValue: "/tmp/x/notorch/bin/python",
    });
    await noTorch();
    await settle();
    assert.ok(vs.calls.some((c) => c.api === "showErrorMessage" && c.args.includes("Set torchscope.pythonPath")));
    assert.deepEqual(executed(), [["workbench.action.openWorkspaceSettings", { query: "torchscope.pythonPath" }]]);
  });
  it("set in the user settings, or nowhere: opens the User settings at the setting", async () => {
    scoped.set("torchscope.pythonPath", { globalValue: "/tmp/x/notorch/bin/python" });
    await noTorch();
    await settle();
    assert.deepEqual(executed(), [["workbench.action.openGlobalSettings", { query: "torchscope.pythonPath" }]]);
    vs.calls.length = 0;
    scoped.clear();
    await noTorch();
    await settle();
    assert.deepEqual(executed(), [["workbench.action.openGlobalSettings", { query: "torchscope.pythonPath" }]]);
  });
  it("set in a folder of a multi-root workspace: opens that folder's settings.json at the key", async () => {
    mkdirSync(join(dir, ".vscode"), { recursive: true });
    writeFileSync(join(dir, ".vscode", "settings.json"), '{\n  "editor.tabSize": 2,\n  "torchscope.pythonPath": "/tmp/x/notorch/bin/python"\n}\n');
    ws.workspaceFile = vs.Uri.file(join(dir, "..", "all.code-workspace"));
    scoped.set("torchscope.pythonPath", { workspaceValue: "/w/py", workspaceFolderValue: "/tmp/x/notorch/bin/python" });
    await noTorch();
    await settle();
    assert.deepEqual(executed(), []);
    const shown = vs.calls.find((c) => c.api === "showTextDocument");
    assert.ok(shown, "the folder's settings.json is shown");
    assert.equal((shown.args[0] as { uri: vs.Uri }).uri.fsPath, join(dir, ".vscode", "settings.json"));
    const sel = (shown.args[1] as { selection: vs.Range }).selection;
    assert.equal(sel.start.line, 2, "at the key's line");
  });
  it("Select Interpreter without the Python extension opens the setting where it is set too", async () => {
    scoped.set("torchscope.pythonPath", { workspaceValue: "/w/py", workspaceFolderValue: "/w/py" });
    await pickInterpreter();
    assert.deepEqual(executed(), [["workbench.action.openWorkspaceSettings", { query: "torchscope.pythonPath" }]]);
  });
});

describe("a trace's Change Time Limit", () => {
  it("opens the setting where its value in use is set (the workspace's when it sets it)", async () => {
    const doc = { uri: vs.Uri.file(join(dir, "slow.py")), languageId: "python", getText: () => "class Net(nn.Module): ..." };
    const server = tracingServer({
      python: { path: "/v/bin/python", source: "setting" },
      trace: async () => {
        throw Object.assign(new Error("the trace ran past 5 s and was stopped"), { code: TORCHSCOPE_ERROR, data: { kind: "timeout" } });
      },
    });
    scoped.set("torchscope.traceTimeoutSeconds", { globalValue: 60, workspaceValue: 5 });
    const { commands } = wiredFor(server, doc);
    vs.answers.push("Change Time Limit");
    await commands.visualize();
    await settle();
    const executed = vs.calls.filter((c) => c.api === "executeCommand" && String(c.args[0]).startsWith("workbench.")).map((c) => c.args);
    assert.deepEqual(executed, [["workbench.action.openWorkspaceSettings", { query: "torchscope.traceTimeoutSeconds" }]]);
  });
});
