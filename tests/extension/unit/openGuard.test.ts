// Which files a graph may open (issue 15, item 8): only files that exist and are regular
// files; outside the workspace folders a question first, unless it is a library file of the
// interpreter, the panel's own document or one open already. The decision (pure), then the
// panel's reveal through it, against real files on disk.
import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, it } from "node:test";
import { fileKind, isInside, isLibraryFile, openDecision, userFrame } from "../../../extension/src/openGuard";
import { revealLine } from "../../../extension/src/reveal";
import * as vs from "./vscode-stub";

const root = mkdtempSync(join(tmpdir(), "torchscope-guard-"));
const ws = join(root, "ws");
const outside = join(root, "elsewhere");
const site = join(root, "venv", "lib", "python3.11", "site-packages", "torch", "nn", "modules");
for (const d of [ws, outside, site, join(ws, "pkg")]) mkdirSync(d, { recursive: true });
const inWs = join(ws, "pkg", "model.py");
const out = join(outside, "x.py");
const out2 = join(outside, "y.py");
const lib = join(site, "linear.py");
for (const f of [inWs, out, out2, lib]) writeFileSync(f, "import torch\n\nclass A:\n    pass\n");
symlinkSync(out, join(ws, "link.py"));

const calls = (api: string) => vs.calls.filter((c) => c.api === api);

describe("the decision", () => {
  const ctx = { folders: ["/w"], known: ["/tmp/own.py"] };

  it("library files of the interpreter: site-packages, dist-packages, the standard library", () => {
    assert.ok(isLibraryFile("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py"));
    assert.ok(isLibraryFile("/usr/lib/python3/dist-packages/numpy/core.py"));
    assert.ok(isLibraryFile("/usr/lib/python3.11/json/__init__.py"));
    assert.ok(isLibraryFile("/opt/py/lib64/python3.13t/os.py"));
    assert.ok(isLibraryFile("C:\\Python311\\Lib\\os.py"));
    assert.ok(!isLibraryFile("/home/u/project/model.py"));
    assert.ok(!isLibraryFile("/home/u/library/model.py"));
  });

  it("inside a folder, by path (not by a shared prefix)", () => {
    assert.ok(isInside("/w/a/b.py", "/w"));
    assert.ok(isInside("/w/./a/../b.py", "/w"));
    assert.ok(!isInside("/work/b.py", "/w"));
    assert.ok(!isInside("/w/../etc/passwd", "/w"));
  });

  it("open, ask, missing, not a file", () => {
    assert.equal(openDecision("/w/m.py", "file", ctx), "open");
    assert.equal(openDecision("/tmp/own.py", undefined, ctx), "open", "a document VS Code has open");
    assert.equal(openDecision("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", "file", ctx), "open");
    assert.equal(openDecision("/etc/x.py", "file", ctx), "ask");
    assert.equal(openDecision("/w/gone.py", undefined, ctx), "missing");
    assert.equal(openDecision("/w/pkg", "other", ctx), "not-a-file");
  });

  it("what a path is on disk (through symlinks; relative paths are nothing)", async () => {
    assert.equal(await fileKind(inWs), "file");
    assert.equal(await fileKind(join(ws, "link.py")), "file");
    assert.equal(await fileKind(ws), "other");
    assert.equal(await fileKind(join(ws, "nope.py")), undefined);
    assert.equal(await fileKind("pkg/model.py"), undefined);
  });

  it("the user's innermost frame of a traceback", () => {
    const tb = [
      "Traceback (most recent call last):",
      '  File "/w/train.py", line 40, in <module>',
      "    model = Net()",
      '  File "/w/train.py", line 12, in __init__',
      "    self.fc = nn.Linear(4, 2).cuda()",
      '  File "/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 310, in _lazy_init',
      "AssertionError: Torch not compiled with CUDA enabled",
    ].join("\n");
    assert.deepEqual(userFrame(tb), { file: "/w/train.py", line: 12 });
    assert.equal(userFrame("no frames"), undefined);
  });
});

describe("a click in the panel opens only what it should", () => {
  beforeEach(() => {
    vs.reset();
    vs.workspace.workspaceFolders = [{ uri: vs.Uri.file(ws) }];
  });
  const opened = () => calls("showTextDocument").map((c) => (c.args[0] as { uri: { fsPath: string } }).uri.fsPath);

  it("a file in the workspace and a library file: at once", async () => {
    await revealLine(inWs, 3);
    await revealLine(lib, 2);
    assert.deepEqual(opened(), [inWs, lib]);
    assert.equal(calls("showWarningMessage").length, 0);
  });

  it("outside the workspace: asks first; Open opens (and is not asked again), anything else does not", async () => {
    vs.answers.push(undefined);
    assert.equal(await revealLine(out, 1), undefined);
    assert.deepEqual(opened(), []);
    const q = calls("showWarningMessage")[0]!;
    assert.equal(q.args[0], `Open ${out} (outside the workspace)?`);
    assert.deepEqual(q.args.slice(1), [{ modal: true }, "Open"]);
    vs.answers.push("Open");
    await revealLine(out, 1);
    await revealLine(out, 2);
    assert.deepEqual(opened(), [out, out]);
    assert.equal(calls("showWarningMessage").length, 2, "asked once more, then allowed");
  });

  it("a missing file or a folder: says so, opens nothing", async () => {
    await revealLine(join(ws, "gone.py"), 3);
    await revealLine(join(ws, "pkg"), 1);
    assert.deepEqual(opened(), []);
    const said = calls("showWarningMessage").map((c) => String(c.args[0]));
    assert.match(said[0]!, /gone\.py does not exist/);
    assert.match(said[1]!, /pkg is not a file/);
  });

  it("a path made of link markdown shows as text, never as a link the message renders", async () => {
    // (a crafted graph's site: VS Code renders `[label](command:…)` in a notification as a link)
    const crafted = join(ws, "m.py [Open the file](command:workbench.action.terminal.new) and [x](https://e.example/p)");
    await revealLine(crafted, 3);
    const said = calls("showWarningMessage").map((c) => String(c.args[0]));
    assert.equal(said.length, 1);
    assert.match(said[0]!, /does not exist/);
    assert.doesNotMatch(said[0]!, /\]\(/, "no `](` left to make a link");
    assert.ok(said[0]!.includes("Open the file") && said[0]!.includes("command:workbench.action.terminal.new"), "the text itself stays");
  });

  it("beside the graph, unasked (the error's line): never a question; a file outside is left alone", async () => {
    await revealLine(out2, 1, undefined, true);
    await revealLine(join(ws, "gone.py"), 1, undefined, true);
    assert.equal(calls("showWarningMessage").length, 0);
    assert.deepEqual(opened(), []);
  });
});
