// Pure logic of the extension: protocol helpers, interpreter choice, server start-up
// options, failure classification, remembered answers, reveal lines, HTML export.
import { strict as assert } from "node:assert";
import { beforeEach, describe, it } from "node:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as vs from "./vscode-stub";
import { isViewerMessage, panelTitle, shortName, targetKey, TORCHSCOPE_ERROR } from "../../../extension/src/protocol";
import { chooseInterpreter, expandPath, resolveInterpreter } from "../../../extension/src/interpreter";
import { debounce, findBundle, interpreterExists, pythonProblem, readInitOptions, serverPythonPath } from "../../../extension/src/client";
import { PAUSED_ITEM, pickItems, targetItems, visualizeArgs } from "../../../extension/src/commands";
import { AnswerStore, classifyFailure, runsCodeDetail, runsCodeQuestion, statementLines, traceParams } from "../../../extension/src/editorSource";
import { afterRaise, metaQuestion, inputBox, inputUsed } from "../../../extension/src/traceFlow";
import type { TraceSummary } from "../../../extension/src/protocol";
import { opensIn } from "../../../extension/src/export";
import { cursorColumn, editorLine, sameFile } from "../../../extension/src/reveal";
import { standaloneHtml } from "../../../extension/src/export";
import { afterRenames, renamedUri } from "../../../extension/src/renames";

const PYTHON = process.env.TORCHSCOPE_PYTHON ?? path.join(__dirname, "..", "..", "..", ".venv", "bin", "python");

beforeEach(() => vs.reset());

describe("the models offered when the cursor is on none", () => {
  const found = [{ target: "Net", kind: "class" as const, line: 4 }];
  it("offers the paused program's live model first while a debug session is paused", () => {
    assert.deepEqual(
      pickItems(found, true).map((i) => i.target),
      ["", "Net"],
    );
    assert.equal(pickItems(found, true)[0], PAUSED_ITEM);
    assert.deepEqual(pickItems(found, false), targetItems(found));
    assert.deepEqual(pickItems([], true), [PAUSED_ITEM]);
  });
});

describe("protocol helpers", () => {
  it("keys a panel by document and target", () => {
    assert.equal(targetKey("file:///w/m.py", "MLP"), "file:///w/m.py#MLP");
  });
  it("titles a panel with the class name", () => {
    assert.equal(panelTitle({ model: "MLP" }, "model"), "Forward pass: MLP");
    assert.equal(panelTitle({ model: "" }, "build"), "Forward pass: build");
    assert.equal(panelTitle(null, "pkg.mod.Net"), "Forward pass: Net");
    assert.equal(panelTitle({ model: "Net", rank: 1, worldSize: 2 }, "m"), "Forward pass: Net (rank 1 of 2)");
    assert.equal(panelTitle({ model: "Net", rank: null, worldSize: null }, "m"), "Forward pass: Net");
    assert.equal(shortName("transformers.GPT2LMHeadModel"), "GPT2LMHeadModel");
  });
  it("accepts only the viewer's message types", () => {
    assert.ok(isViewerMessage({ type: "ready" }));
    assert.ok(isViewerMessage({ type: "reveal", site: { file: "/a.py", line: 3 }, nodeId: 1 }));
    assert.ok(isViewerMessage({ type: "changeInput" }));
    assert.ok(!isViewerMessage({ type: "graph" }));
    assert.ok(!isViewerMessage(null));
    assert.ok(!isViewerMessage("ready"));
  });
});

describe("files renamed in the editor", () => {
  const r = (from: string, to: string) => ({ from, to });
  it("a file, a file in a folder renamed, nothing else", () => {
    assert.equal(renamedUri("file:///w/a.py", r("file:///w/a.py", "file:///w/b.py")), "file:///w/b.py");
    assert.equal(renamedUri("file:///w/pkg/a.py", r("file:///w/pkg", "file:///w/lib")), "file:///w/lib/a.py");
    assert.equal(renamedUri("file:///w/pkg2/a.py", r("file:///w/pkg", "file:///w/lib")), undefined, "not a folder holding it");
    assert.equal(renamedUri("file:///w/a.py", r("file:///w/b.py", "file:///w/c.py")), undefined);
  });
  it("several renames in turn; undefined when none moved it", () => {
    const both = [r("file:///w/a.py", "file:///w/b.py"), r("file:///w", "file:///v")];
    assert.equal(afterRenames("file:///w/a.py", both), "file:///v/b.py");
    assert.equal(afterRenames("file:///x/a.py", both), undefined);
  });
});

describe("interpreter", () => {
  it("prefers the setting, then the Python extension, then python3", () => {
    assert.deepEqual(chooseInterpreter("/opt/py/bin/python", "/venv/bin/python"), { path: "/opt/py/bin/python", source: "setting" });
    assert.deepEqual(chooseInterpreter("  ", "/venv/bin/python"), { path: "/venv/bin/python", source: "python-extension" });
    assert.deepEqual(chooseInterpreter(undefined, undefined), { path: "python3", source: "default" });
  });
  // biome-ignore lint/suspicious/noTemplateCurlyInString: VS Code's ${workspaceFolder}, not a template
  it("expands ~ and ${workspaceFolder}", () => {
    assert.equal(expandPath("~/venv/bin/python", "/w", "/home/u"), "/home/u/venv/bin/python");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: VS Code's ${workspaceFolder}, not a template
    assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", "/w", "/home/u"), "/w/.venv/bin/python");
    assert.equal(expandPath("/usr/bin/python3", undefined), "/usr/bin/python3");
  });
  it("asks the Python extension's environments API for the active interpreter", async () => {
    vs.installedExtensions.set("ms-python.python", {
      isActive: true,
      exports: {
        environments: {
          getActiveEnvironmentPath: () => ({ id: "venv", path: "/w/.venv" }),
          resolveEnvironment: async () => ({ executable: { uri: vs.Uri.file("/w/.venv/bin/python") } }),
          onDidChangeActiveEnvironmentPath: () => new vs.Disposable(),
        },
      },
    });
    assert.deepEqual(await resolveInterpreter(), { path: "/w/.venv/bin/python", source: "python-extension" });
    vs.settings.set("torchscope.pythonPath", "/opt/other/python");
    assert.deepEqual(await resolveInterpreter(), { path: "/opt/other/python", source: "setting" });
  });
  it("says why the Python extension's interpreter was not used when that extension fails", async () => {
    // (the fallback was silent: a user whose selected interpreter was ignored had no clue why)
    const warned: string[] = [];
    vs.installedExtensions.set("ms-python.python", {
      isActive: false,
      activate: async () => {
        throw new Error("activation failed");
      },
    });
    assert.deepEqual(await resolveInterpreter(undefined, (m) => warned.push(m)), { path: "python3", source: "default" });
    assert.deepEqual(warned, ["the Python extension did not start (activation failed): its selected interpreter is not used"]);
    vs.installedExtensions.set("ms-python.python", {
      isActive: true,
      exports: {
        environments: {
          getActiveEnvironmentPath: () => {
            throw new Error("no environment");
          },
          resolveEnvironment: async () => undefined,
          onDidChangeActiveEnvironmentPath: () => new vs.Disposable(),
        },
      },
    });
    warned.length = 0;
    assert.equal((await resolveInterpreter(undefined, (m) => warned.push(m))).source, "default");
    assert.deepEqual(warned, ["the Python extension could not say its selected interpreter (no environment): it is not used"]);
  });
  it("falls back to python3 without the Python extension or a setting", async () => {
    assert.deepEqual(await resolveInterpreter(), { path: "python3", source: "default" });
  });
  it("without the Python extension, reads its python.defaultInterpreterPath setting before python3", async () => {
    // a user who set only that (as for the Python extension) got "torch is not installed in python3"
    // biome-ignore lint/suspicious/noTemplateCurlyInString: VS Code's ${workspaceFolder}, not a template
    vs.settings.set("python.defaultInterpreterPath", "${workspaceFolder}/.venv/bin/python");
    const got = await resolveInterpreter();
    assert.equal(got.source, "python-setting");
    assert.match(got.path, /\.venv\/bin\/python$/);
    vs.settings.set("python.defaultInterpreterPath", "python"); // (the Python extension's default: not a choice)
    assert.deepEqual(await resolveInterpreter(), { path: "python3", source: "default" });
    vs.settings.set("torchscope.pythonPath", "/opt/other/python");
    assert.equal((await resolveInterpreter()).source, "setting");
  });
});

describe("server start-up", () => {
  it("finds the helper in the .vsix layout, else in the repository", () => {
    const ext = "/ext";
    const inVsix = findBundle(ext, (p) => p.startsWith("/ext/bundled"));
    assert.deepEqual(inVsix, {
      toolDir: "/ext/bundled/tool",
      libsDir: "/ext/bundled/libs",
      viewerDir: "/ext/bundled/tool/torchscope/static",
    });
    const inRepo = findBundle(ext, () => false);
    assert.deepEqual(inRepo, { toolDir: "/ext/python_helper", libsDir: undefined, viewerDir: "/ext/python_helper/torchscope/static" });
  });
  it("puts the bundled libraries first on PYTHONPATH and keeps the user's", () => {
    const b = { toolDir: "/e/tool", libsDir: "/e/libs", viewerDir: "/e/tool/torchscope/static" };
    assert.equal(serverPythonPath(b, undefined), ["/e/libs", "/e/tool"].join(path.delimiter));
    assert.equal(serverPythonPath(b, "/mine"), ["/e/libs", "/e/tool", "/mine"].join(path.delimiter));
  });
  it("passes the settings as initializationOptions", () => {
    assert.deepEqual(readInitOptions("/s"), { storageDir: "/s", traceTimeoutSeconds: 60, logLevel: "info", inlayHints: true });
    vs.settings.set("torchscope.traceTimeoutSeconds", 5);
    vs.settings.set("torchscope.logLevel", "debug");
    vs.settings.set("torchscope.inlayHints", false);
    assert.deepEqual(readInitOptions("/s"), { storageDir: "/s", traceTimeoutSeconds: 5, logLevel: "debug", inlayHints: false });
    vs.settings.set("torchscope.traceTimeoutSeconds", -1);
    vs.settings.set("torchscope.logLevel", "loud");
    vs.settings.set("torchscope.inlayHints", "yes");
    assert.deepEqual(readInitOptions("/s"), { storageDir: "/s", traceTimeoutSeconds: 60, logLevel: "info", inlayHints: true });
  });
  it("passes each of the server's four log levels, and only those", () => {
    const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "..", "package.json"), "utf8")) as {
      contributes: { configuration: { properties: Record<string, { enum?: string[] }> } };
    };
    const levels = manifest.contributes.configuration.properties["torchscope.logLevel"]!.enum!;
    assert.deepEqual(levels, ["error", "warning", "info", "debug"]);
    for (const level of levels) {
      vs.settings.set("torchscope.logLevel", level);
      assert.equal(readInitOptions("/s").logLevel, level);
    }
  });
  it("restarts once for a burst of changes", async () => {
    let n = 0;
    const d = debounce(() => n++, 20);
    d();
    d();
    d();
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(n, 1);
    d();
    d.cancel();
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(n, 1);
  });
});

describe("trace failures", () => {
  const err = (kind: string, extra: Record<string, unknown> = {}, message = "msg") => ({
    code: TORCHSCOPE_ERROR,
    message,
    data: { kind, ...extra },
  });
  it("maps each error kind of docs/protocol.md to a way forward", () => {
    assert.deepEqual(classifyFailure(err("needs-input")), { kind: "needs-input", message: "msg" });
    assert.deepEqual(classifyFailure(err("target-error", { needsCtorArgs: true })), { kind: "needs-ctor-args", message: "msg" });
    assert.deepEqual(classifyFailure(err("target-error")), { kind: "target-error", message: "msg" });
    assert.deepEqual(classifyFailure(err("no-torch", { details: "/usr/bin/python3" })), {
      kind: "no-torch",
      message: "msg",
      python: "/usr/bin/python3",
    });
    assert.deepEqual(classifyFailure(err("import-error", { details: "Traceback…" })), {
      kind: "import-error",
      message: "msg",
      details: "Traceback…",
    });
    assert.deepEqual(classifyFailure(err("timeout")), { kind: "timeout", message: "msg" });
    // stopped on purpose (a restart): not a crash, not "out of memory" though the runner was killed
    assert.deepEqual(classifyFailure(err("runner-stopped", { details: "killed by SIGKILL" })), { kind: "stopped", message: "msg" });
    assert.deepEqual(classifyFailure(err("timeout", { stage: "trace" })), { kind: "timeout", message: "msg" });
    // stopped while building: the meta device builds a big model in no time
    assert.deepEqual(classifyFailure(err("timeout", { stage: "build" })), { kind: "slow-build", message: "msg" });
    assert.deepEqual(classifyFailure(err("runner-crashed", { details: "exit 3" })), { kind: "runner-crashed", message: "msg", details: "exit 3" });
  });
  it("runs-code with its statements, needs-input with its guess, and code that asks for a GPU", () => {
    const statements = [{ line: 40, text: "for step in range(30):" }, { bad: true }];
    assert.deepEqual(classifyFailure(err("runs-code", { statements })), {
      kind: "runs-code",
      message: "msg",
      statements: [{ line: 40, text: "for step in range(30):" }],
    });
    assert.deepEqual(classifyFailure(err("needs-input", { guess: "torch.randn(1, 64)" })), {
      kind: "needs-input",
      message: "msg",
      guess: "torch.randn(1, 64)",
    });
    const tb = 'File "/w/gpu.py", line 12, in __init__\nFile "/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 310';
    assert.deepEqual(
      classifyFailure(err("target-error", { details: tb }, "building Net raised AssertionError: Torch not compiled with CUDA enabled")),
      {
        kind: "needs-gpu",
        message: "building Net raised AssertionError: Torch not compiled with CUDA enabled",
        line: { file: "/w/gpu.py", line: 12 },
      },
    );
    assert.equal(classifyFailure(err("import-error", { details: "RuntimeError: Found no NVIDIA driver on your system" })).kind, "needs-gpu");
    // more memory than there is: torch's allocator refused, or the system stopped the runner
    const alloc = "building Huge raised RuntimeError: [enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory";
    assert.deepEqual(classifyFailure(err("target-error", { details: tb }, alloc)), {
      kind: "needs-memory",
      message: alloc,
      line: { file: "/w/gpu.py", line: 12 },
    });
    assert.equal(classifyFailure(err("target-error", {}, "building Huge raised MemoryError")).kind, "needs-memory");
    assert.equal(
      classifyFailure(err("runner-crashed", {}, "the Python runner was killed by SIGKILL (most likely out of memory)")).kind,
      "needs-memory",
    );
    assert.equal(classifyFailure(err("runner-crashed", {}, "the Python runner was killed by SIGSEGV")).kind, "runner-crashed");
    assert.equal(classifyFailure(err("import-error", { details: "ModuleNotFoundError: cuda_helpers" })).kind, "import-error");
  });
  it("an __init__ or an import that raised keeps the user's line it raised at, for Go to Line", () => {
    const tb =
      'Traceback:\n  File "/w/m.py", line 9, in __init__\n    self.fc = nn.Linear(4)\n  File "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 99\nTypeError: …';
    assert.deepEqual(classifyFailure(err("target-error", { details: tb }, "building Net raised TypeError: …")), {
      kind: "target-error",
      message: "building Net raised TypeError: …",
      details: tb,
      line: { file: "/w/m.py", line: 9 },
    });
    assert.deepEqual(classifyFailure(err("import-error", { details: tb })), {
      kind: "import-error",
      message: "msg",
      details: tb,
      line: { file: "/w/m.py", line: 9 },
    });
  });
  it("asks to run a file's top-level code naming what would run, and why the model needs it", () => {
    const st = [
      { line: 40, text: "for step in range(30):" },
      { line: 52, text: "torch.save(m, 'x.pt')" },
    ];
    // The runner's message (runner.py, build_target.RunsCode).
    const message =
      "importing train.py without its top-level code failed (KeyError: 'hidden'); it runs code at import: line 40: for step in range(30):; line 52: torch.save(m, 'x.pt')";
    assert.equal(
      runsCodeQuestion("/w/train.py", message, st),
      "torchscope: importing train.py runs code at import (for step in range(30): at line 40, torch.save(m, 'x.pt') at line 52). Run it to trace?",
    );
    assert.equal(
      runsCodeDetail(message, st),
      "Without it, building the model failed: KeyError: 'hidden'.\n\nline 40: for step in range(30):\nline 52: torch.save(m, 'x.pt')",
    );
    // No statements: the server's own list.
    assert.equal(
      runsCodeQuestion("/w/train.py", "importing train.py runs code: a for loop at line 40, torch.save at line 52 …", []),
      "torchscope: importing train.py runs code at import (a for loop at line 40, torch.save at line 52). Run it to trace?",
    );
    assert.equal(statementLines(st), "line 40: for step in range(30):\nline 52: torch.save(m, 'x.pt')");
  });
  it("the input box: the input traced now, else the one typed, else the guess; the placeholder is the guess", () => {
    assert.deepEqual(inputBox({ current: "a", remembered: "b", guess: "c" }), { value: "a", placeHolder: "c" });
    assert.deepEqual(inputBox({ remembered: "b", guess: "c" }), { value: "b", placeHolder: "c" });
    assert.deepEqual(inputBox({ guess: "c" }), { value: "c", placeHolder: "c" });
    // no guess (a factory's example, example_input_array): the input traced, not an image
    assert.deepEqual(inputBox({ current: "torch.randn(2, 16)" }), { value: "torch.randn(2, 16)", placeHolder: "torch.randn(2, 16)" });
    assert.deepEqual(inputBox({ remembered: "b" }), { value: "b", placeHolder: "b" });
    // a factory's example: its kind and shape as the placeholder, the box empty (Enter on a
    // filled box would trace random values for the model's own)
    assert.deepEqual(inputBox({ template: "torch.randn(2, 16)" }), { value: "", placeHolder: "torch.randn(2, 16)" });
    assert.match(inputBox({}).placeHolder, /^torch\.randn\(1, 3, 224, 224\)/);
  });
  it("after a forward raised: a guess → another input; a GPU → the meta device; else the model's error", () => {
    const base: TraceSummary = {
      model: "Net",
      qualname: "m.Net",
      nodes: 1,
      edges: 0,
      ops: 0,
      modules: 1,
      params: 0,
      trace_ms: 1,
      input: "g",
      error: null,
    };
    const error = { type: "RuntimeError", message: "bad\nmore", file: "/w/m.py", line: 7 };
    assert.equal(afterRaise(base, "Net"), undefined);
    assert.equal(afterRaise({ ...base, error, inputKind: "typed" }, "Net"), undefined);
    assert.equal(afterRaise({ ...base, error }, "Net"), undefined, "an older server without inputKind");
    assert.deepEqual(afterRaise({ ...base, error, inputKind: "guess", inputExpr: "torch.randn(1, 4)" }, "Net"), {
      kind: "needs-input",
      message: "The guessed input (g) may be wrong: Net raised RuntimeError at line 7: bad. Give the input to trace it with.",
      guess: "torch.randn(1, 4)",
    });
    // an error about the code itself (a missing attribute or name), whatever the input: the
    // model is broken, no input box (it offered "the guess may be wrong" and asked)
    for (const type of ["AttributeError", "NameError", "NotImplementedError", "UnboundLocalError", "ModuleNotFoundError"]) {
      assert.equal(afterRaise({ ...base, error: { ...error, type }, inputKind: "guess", inputExpr: "torch.randn(1, 4)" }, "Net"), undefined, type);
    }
    // but an attribute the guessed tensor lacks (a forward reading `data.x` of a batch object)
    const lacks = { ...error, type: "AttributeError", message: "'Tensor' object has no attribute 'x'" };
    assert.equal(afterRaise({ ...base, error: lacks, inputKind: "guess", inputExpr: "torch.randn(1, 4)" }, "Net")?.kind, "needs-input");
    // the error points at top-level code that did not run: offer to run it (not "broken")
    const skippedSuspect = [{ line: 4, text: "CACHE.update(scale=2.0)" }];
    const keyError = { ...error, type: "KeyError", message: "'scale'" };
    assert.deepEqual(afterRaise({ ...base, error: keyError, inputKind: "guess", skippedSuspect }, "Net"), {
      kind: "runs-code",
      message: "Net raised KeyError: 'scale' at line 7, which the file's top-level code that did not run may make.",
      statements: skippedSuspect,
    });
    assert.equal(afterRaise({ ...base, error: keyError, inputKind: "typed", skippedSuspect: [] }, "Net"), undefined);
    // "Run It" runs all of the file's top-level code: the question names all of it, the
    // statements the error points at first (it named line 4 and then ran line 5's loop too)
    const skipped = [
      { line: 3, text: "torch.save({}, 'x.pt')" },
      { line: 4, text: "CACHE.update(scale=2.0)" },
      { line: 5, text: "for step in range(3):" },
    ];
    assert.deepEqual(afterRaise({ ...base, error: keyError, inputKind: "guess", skippedSuspect, skipped }, "Net")?.statements, [
      skipped[1],
      skipped[0],
      skipped[2],
    ]);
    const cuda = { ...error, type: "AssertionError", message: "Torch not compiled with CUDA enabled" };
    assert.deepEqual(afterRaise({ ...base, error: cuda, inputKind: "guess" }, "Net"), {
      kind: "needs-gpu",
      message: "AssertionError: Torch not compiled with CUDA enabled",
      line: { file: "/w/m.py", line: 7 },
    });
    const gpu = { kind: "needs-gpu" as const, message: "AssertionError: Torch not compiled with CUDA enabled", line: { file: "/w/m.py", line: 7 } };
    assert.deepEqual(metaQuestion(gpu, "Net", "can").buttons, ["Trace on Meta Device", "Go to Line"]);
    assert.match(metaQuestion(gpu, "Net", "tried").text, /also on the meta device/);
    assert.deepEqual(metaQuestion({ ...gpu, line: undefined }, "Net", "cannot"), {
      text: "torchscope: Net needs a GPU: AssertionError: Torch not compiled with CUDA enabled.",
      buttons: [],
    });
    const oom = { ...error, type: "RuntimeError", message: "DefaultCPUAllocator: can't allocate memory: you tried to allocate 939524096 bytes" };
    assert.deepEqual(afterRaise({ ...base, error: oom, inputKind: "typed" }, "Net"), {
      kind: "needs-memory",
      message: "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 939524096 bytes",
      line: { file: "/w/m.py", line: 7 },
    });
    const memory = { kind: "needs-memory" as const, message: "the Python runner was killed by SIGKILL" };
    assert.deepEqual(metaQuestion(memory, "Huge", "can"), {
      text: "torchscope: Huge does not fit in memory here: the Python runner was killed by SIGKILL. Trace it on the meta device (shapes only, no memory needed)?",
      buttons: ["Trace on Meta Device"],
    });
    assert.match(metaQuestion(memory, "Huge", "tried").text, /^torchscope: Huge does not fit in memory here, also on the meta device/);
    const slow = { kind: "slow-build" as const, message: "importing and building Big ran past 60 s and was stopped" };
    assert.deepEqual(metaQuestion(slow, "Big", "can"), {
      text: "torchscope: Big takes long to build here: importing and building Big ran past 60 s and was stopped. Trace it on the meta device (shapes only, built in no time)?",
      buttons: ["Trace on Meta Device", "Change Time Limit"],
    });
    assert.deepEqual(metaQuestion(slow, "Big", "tried"), {
      text: "torchscope: Big takes long to build here, also on the meta device: importing and building Big ran past 60 s and was stopped.",
      buttons: ["Change Time Limit"],
    });
    assert.equal(
      metaQuestion(memory, "Huge", "cannot").text,
      "torchscope: Huge does not fit in memory here: the Python runner was killed by SIGKILL.",
    );
    assert.deepEqual(inputUsed({ ...base, input: "torch.ones(2)", inputExpr: "torch.ones(2)" }), { text: "torch.ones(2)", expr: "torch.ones(2)" });
    assert.deepEqual(inputUsed({ ...base, input: "the paused call's arguments", inputExpr: null }), { text: "the paused call's arguments" });
    assert.equal(inputUsed(null), undefined);
    assert.deepEqual(
      inputUsed({ ...base, input: "torch.randn(2, 12)", inputExpr: "torch.randn(2, 12)", builtAs: "Wide(12), as line 41 builds it" }),
      {
        text: "torch.randn(2, 12); model built as Wide(12), as line 41 builds it",
        expr: "torch.randn(2, 12)",
      },
    );
  });
  it("names the file's models in a pick list, and where a saved file opens", () => {
    assert.deepEqual(
      targetItems([{ target: "build", kind: "factory", line: 9 }]).map((i) => [i.label, i.description, i.target]),
      [["build", "function that builds a model · line 10", "build"]],
    );
    assert.equal(opensIn("text/html"), "browser");
    assert.equal(opensIn("image/png"), "editor");
  });
  it("treats a cancelled request as cancelled and anything else as other", () => {
    assert.deepEqual(classifyFailure({ code: -32800, message: "Canceled" }), { kind: "cancelled" });
    assert.deepEqual(classifyFailure(new Error("boom")), { kind: "other", message: "boom" });
    assert.deepEqual(classifyFailure({ code: TORCHSCOPE_ERROR, message: "x", data: null }), { kind: "other", message: "x" });
    assert.deepEqual(classifyFailure(err("something-new")), { kind: "other", message: "msg" });
  });
  it("reads the CodeLens argument", () => {
    assert.deepEqual(visualizeArgs({ uri: "file:///a.py", target: "Net" }), { uri: "file:///a.py", target: "Net" });
    assert.equal(visualizeArgs(undefined), undefined);
    assert.equal(visualizeArgs({ uri: 3 }), undefined);
  });
  it("sends only the answers there are", () => {
    assert.deepEqual(traceParams("u", "text", "Net", {}), { uri: "u", text: "text", target: "Net" });
    assert.deepEqual(traceParams("u", undefined, "Net", { input: "torch.randn(1, 3)", ctorArgs: "10" }), {
      uri: "u",
      target: "Net",
      input: "torch.randn(1, 3)",
      ctorArgs: "10",
    });
    assert.deepEqual(traceParams("u", undefined, "Net", {}, { runTopLevel: true, device: "meta" }), {
      uri: "u",
      target: "Net",
      runTopLevel: true,
      device: "meta",
    });
    assert.deepEqual(traceParams("u", undefined, "Net", {}, { runTopLevel: false, device: "cpu" }), { uri: "u", target: "Net" });
  });
});

describe("remembered answers", () => {
  it("keeps input and constructor arguments per target", async () => {
    const data = new Map<string, unknown>();
    const memento = {
      get: <T>(k: string, d?: T) => (data.has(k) ? data.get(k) : d) as T,
      update: async (k: string, v: unknown) => void data.set(k, v),
    };
    const store = new AnswerStore(memento as never);
    assert.deepEqual(store.get("file:///a.py", "Net"), {});
    await store.set("file:///a.py", "Net", { input: "torch.randn(1, 3)" });
    await store.set("file:///a.py", "Net", { ctorArgs: "10, hidden=64" });
    await store.set("file:///a.py", "Other", { input: "torch.zeros(2)" });
    assert.deepEqual(store.get("file:///a.py", "Net"), { input: "torch.randn(1, 3)", ctorArgs: "10, hidden=64" });
    assert.deepEqual(store.get("file:///a.py", "Other"), { input: "torch.zeros(2)" });
    assert.deepEqual(store.get("file:///b.py", "Net"), {});
  });
  it("keeps the consent to run a file's top-level code per file", async () => {
    const data = new Map<string, unknown>();
    const memento = {
      get: <T>(k: string, d?: T) => (data.has(k) ? data.get(k) : d) as T,
      update: async (k: string, v: unknown) => void data.set(k, v),
    };
    const store = new AnswerStore(memento as never);
    assert.equal(store.runsTopLevel("file:///train.py"), false);
    await store.allowTopLevel("file:///train.py");
    await store.allowTopLevel("file:///train.py");
    assert.equal(store.runsTopLevel("file:///train.py"), true);
    assert.equal(store.runsTopLevel("file:///other.py"), false);
    assert.deepEqual(data.get(AnswerStore.RUN_KEY), ["file:///train.py"]);
  });
});

describe("reveal", () => {
  it("turns a 1-based wire line into a 0-based editor line inside the document", () => {
    assert.equal(editorLine(1, 10), 0);
    assert.equal(editorLine(10, 10), 9);
    assert.equal(editorLine(99, 10), 9);
    assert.equal(editorLine(0, 10), 0);
    assert.equal(editorLine(Number.NaN, 10), 0);
  });
  it("puts the cursor where the call starts (Python's UTF-8 column), else at the line's code", () => {
    const line = "        x = self.act(self.act(x))";
    assert.equal(cursorColumn(line, line.indexOf("self.act")), line.indexOf("self.act"));
    assert.equal(cursorColumn(line, line.lastIndexOf("self.act")), line.lastIndexOf("self.act"));
    assert.equal(cursorColumn(line, undefined), 8); // (no column: the code's start, as before)
    // bytes, not UTF-16 units: `größe` is 7 bytes, 5 units; `𝑥` 4 bytes, 2 units
    const wide = "    größe = 𝑥 + self.fc(x)";
    const bytes = Buffer.byteLength(wide.slice(0, wide.indexOf("self.fc")));
    assert.equal(cursorColumn(wide, bytes), wide.indexOf("self.fc"));
    // a column that can't be the call's (the line changed since): the code's start
    assert.equal(cursorColumn(line, 2), 8); // in the indentation
    assert.equal(cursorColumn(line, 200), 8); // past the end
    assert.equal(cursorColumn("    a = (b +  c)", 12), 4); // on a space
    assert.equal(cursorColumn(wide, bytes - 1), 4); // the space before the call
    assert.equal(cursorColumn(wide, Buffer.byteLength("    gr") + 1), 4); // between ö's two bytes
  });
  it("compares file paths however they are spelled", () => {
    assert.ok(sameFile("/a/./b.py", "/a/b.py"));
    assert.ok(!sameFile("/a/B.py", "/a/b.py", false));
    assert.ok(sameFile("/a/B.py", "/a/b.py", true));
  });
});

describe("standalone HTML export", () => {
  const ROOT = path.resolve(__dirname, "..", "..", "..");
  const template = readFileSync(path.join(ROOT, "webview", "src", "page.html"), "utf8");

  it("inlines the viewer and the data under a nonce CSP", () => {
    const parts = { template, worker: "", viewer: 'var s = "</script>";', css: "a{}</style>" };
    const html = standaloneHtml(new Uint8Array([1, 2, 3]), parts, "Forward pass: <MLP>", "NONCE");
    assert.ok(html.includes("default-src &#x27;none&#x27;; script-src &#x27;nonce-NONCE&#x27; &#x27;wasm-unsafe-eval&#x27;"));
    assert.match(html, /<script type="application\/octet-stream" id="torchscope-graph">AQID<\/script>/);
    assert.ok(html.includes('var s = "<\\/script>";'));
    assert.ok(html.includes("a{}<\\/style>"));
    assert.ok(html.includes("<title>Forward pass: &lt;MLP&gt;</title>"));
  });

  it("is the page the CLI writes, byte for byte: one template, filled the same way", { skip: !existsSync(PYTHON) && "no venv python" }, () => {
    const parts = {
      template,
      worker: "onmessage = () => postMessage('</script>'); // {{title}}",
      viewer: "var s = '</SCRIPT><!-- x'; var t = '{{nonce}}';",
      css: ".ts-root{color:red} /* </style> */",
    };
    const dir = mkdtempSync(path.join(tmpdir(), "torchscope-page-"));
    for (const [f, text] of [
      ["page.html", parts.template],
      ["layout.worker.js", parts.worker],
      ["viewer-page.js", parts.viewer],
      ["viewer.css", parts.css],
    ]) {
      writeFileSync(path.join(dir, f!), text!);
    }
    const bytes = new Uint8Array([0x81, 0xa1, 0x61, 0x01]);
    const title = `it's <b>"Net"</b> & co`;
    const code =
      "import sys, pathlib, secrets\n" +
      "from torchscope import html\n" +
      "html._read_static = lambda name: (pathlib.Path(sys.argv[1]) / name).read_text(encoding='utf-8')\n" +
      "secrets.token_urlsafe = lambda n: 'NONCE'\n" +
      "sys.stdout.write(html.render_html(bytes.fromhex(sys.argv[2]), sys.argv[3]))";
    const r = spawnSync(PYTHON, ["-c", code, dir, Buffer.from(bytes).toString("hex"), title], {
      encoding: "utf8",
      env: { ...process.env, PYTHONPATH: path.join(ROOT, "python_helper") },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(standaloneHtml(bytes, parts, title, "NONCE"), r.stdout);
    // A bundle's own "{{...}}" text is not a place to fill.
    assert.ok(r.stdout.includes("var t = '{{nonce}}';") && r.stdout.includes("// {{title}}"));
  });

  it("opens at the panel's view when it has one", () => {
    const view = { graph: `m.<Net>|3|2`, expanded: [1, 4], groups: [0] };
    const html = standaloneHtml(new Uint8Array([1]), { template, worker: "", viewer: "", css: "" }, "t", "N", view);
    const attr = /<div id="torchscope" data-view="([^"]*)">/.exec(html)![1]!;
    assert.ok(!attr.includes("<"));
    const decoded = attr
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&#x27;/g, "'")
      .replace(/&amp;/g, "&");
    assert.deepEqual(JSON.parse(decoded), view);
  });
});

describe("a document that does not parse", () => {
  it("the server's syntax-error answer is read as where to look, anything else is not", async () => {
    const { syntaxError } = await import("../../../extension/src/commands");
    const answer = { message: "m.py does not parse: line 10: expected ':'", code: -32001, data: { kind: "syntax-error", line: 10 } };
    assert.deepEqual(syntaxError(answer), { message: "m.py does not parse: line 10: expected ':'", line: 10 });
    assert.equal(syntaxError({ message: "boom", data: { kind: "target-error" } }), undefined);
    assert.equal(syntaxError(new Error("the server died")), undefined);
    assert.equal(syntaxError(null), undefined);
  });
});

describe("an interpreter path that names no file (checked before the server starts)", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "torchscope-python-"));
  writeFileSync(path.join(dir, "python3"), "");
  writeFileSync(path.join(dir, "python.exe"), "");

  it("a bare command is found on PATH when it starts", () => {
    assert.equal(interpreterExists("python3", undefined), true);
  });

  it("an absolute path, or one relative to the workspace folder", () => {
    assert.equal(interpreterExists(path.join(dir, "python3"), undefined), true);
    assert.equal(interpreterExists("/nonexistent/bin/python3", undefined), false);
    assert.equal(interpreterExists("./python3", dir), true);
    assert.equal(interpreterExists(".venv/bin/python", dir), false);
  });

  it("a program that is not Python, a folder, an old Python: why, before the client starts it (real processes)", async () => {
    assert.equal(await pythonProblem("python3", undefined), undefined);
    const broken = path.join(dir, "broken");
    writeFileSync(broken, "#!/bin/sh\necho 'this environment is broken' >&2\nexit 1\n", { mode: 0o755 });
    assert.equal(await pythonProblem(broken, undefined), `${broken} does not run as Python (this environment is broken)`);
    assert.match((await pythonProblem(dir, undefined)) ?? "", /does not run as Python \(EACCES\)/);
    assert.equal(await pythonProblem("/bin/true", undefined), "/bin/true does not run as Python (it told no Python version)");
    const old = path.join(dir, "python2");
    // (as the version check prints and exits for Python < 3.10)
    writeFileSync(old, "#!/bin/sh\necho 3.8.10\nexit 3\n", { mode: 0o755 });
    assert.equal(await pythonProblem(old, undefined), `torchscope needs Python 3.10 or newer: ${old} is Python 3.8.10`);
  });

  it("on Windows, a path without its .exe (review: refused, though Windows starts it)", () => {
    assert.equal(interpreterExists(path.join(dir, "python"), undefined, "win32"), true);
    assert.equal(interpreterExists(path.join(dir, "python"), undefined, "linux"), false);
  });
});
