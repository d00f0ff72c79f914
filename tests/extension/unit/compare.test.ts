// The comparison commands (extension/src/compareCommands.ts, compareSource.ts, gitHead.ts) as
// the extension wires them, with the vscode stub, a fake language server and real git: what
// each side is traced with, what is compared, the panel it shows in, the messages when there
// is no HEAD, Re-trace of a comparison panel, a click on a node of HEAD's side, and the last
// two graphs of a paused model.
// First: vscode.debug on the stub before the extension's modules load.
import "./debug-fake";
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, it } from "node:test";
import * as vs from "./vscode-stub";
import type { Server } from "../../../extension/src/client";
import { compareTarget, compareTitle, parseCompareTarget } from "../../../extension/src/compareTargets";
import { comparedSummary, PausedHistory } from "../../../extension/src/compareSource";
import { changedFiles, gitFailure, HEAD_SCHEME, headCommand, headText, MAX_HEAD_FILES, NoHeadError } from "../../../extension/src/gitHead";
import { GraphPanel } from "../../../extension/src/graphPanel";
import { DEBUG_URI } from "../../../extension/src/pausedSource";
import type { CompareParams, CompareResult, TraceParams, TraceResult, TraceSummary } from "../../../extension/src/protocol";
import { versionUri } from "../../../extension/src/reveal";
import { SUMMARY, calls, fakeServer, messages, pyDoc as pythonDoc, resetWiring, run, settle, wiredExtension } from "./wiring";

const GRAPH = Buffer.from([0x81, 0xa1, 0x61, 0x01]);
const COMPARED = Buffer.from([0x81, 0xa1, 0x62, 0x02]);
const summary: TraceSummary = { ...SUMMARY, input: "torch.randn(2, 16)" };

const COMMITTED = "class Net(nn.Module):\n    def forward(self, x):\n        return self.fc(x).relu()\n";
const EDITED = COMMITTED.replace("relu", "gelu");

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** A git repository with net.py committed; the editor's text of it is `EDITED` (unsaved). */
function repo(commit = true): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "torchscope-git-"));
  git(dir, "init", "-q");
  git(dir, "config", "user.name", "torchscope tests");
  git(dir, "config", "user.email", "tests@torchscope.invalid");
  const file = join(dir, "net.py");
  writeFileSync(file, COMMITTED);
  if (commit) {
    git(dir, "add", "net.py");
    git(dir, "commit", "-q", "-m", "net");
  }
  return { dir, file };
}

/** net.py as the editor has it: EDITED (unsaved), its lines indented as a method's body. */
const pyDoc = (file: string, text = EDITED) => pythonDoc(file, text, 8);

/** The extension's wiring with a fake server: each trace writes a graph file; compare writes its own. */
function extension(
  opts: { trace?: (p: Omit<TraceParams, "workDoneToken">, n: number) => TraceResult | Promise<TraceResult>; server?: Partial<Server> } = {},
) {
  const out = mkdtempSync(join(tmpdir(), "torchscope-cmp-out-"));
  const traced: Omit<TraceParams, "workDoneToken">[] = [];
  const compared: CompareParams[] = [];
  const server = fakeServer({
    trace: async (p, _cancel, progress) => {
      traced.push(p);
      progress("Tracing");
      if (opts.trace) return opts.trace(p, traced.length);
      const path = join(out, `t${traced.length}.msgpack`);
      writeFileSync(path, GRAPH);
      return { path, size: GRAPH.length, summary: { ...summary, input: p.input ?? summary.input } };
    },
    compare: async (p) => {
      compared.push(p);
      const path = join(out, `c${compared.length}.msgpack`);
      writeFileSync(path, COMPARED);
      const r: CompareResult = { path, size: COMPARED.length, summary: { added: 1, removed: 0, changed: 2, same: 5, changes: 3, model: "Net" } };
      return r;
    },
    ...opts.server,
  });
  const w = wiredExtension(server);
  w.head.register();
  w.compareCommands.register();
  return { ...w, traced, compared };
}

beforeEach(() => {
  resetWiring();
  vs.commands.registered.clear();
});

describe("HEAD through git", () => {
  it("the committed text, whatever the working copy says", async () => {
    const { file } = repo();
    writeFileSync(file, EDITED); // saved but not committed
    assert.equal(await headText(file), COMMITTED);
    assert.deepEqual(headCommand("/w/sub/net.py"), { cwd: "/w/sub", args: ["show", "HEAD:./net.py"] });
  });

  it("no repository, no commit, a file never committed: one clear sentence each", async () => {
    const outside = mkdtempSync(join(tmpdir(), "torchscope-nogit-"));
    writeFileSync(join(outside, "net.py"), COMMITTED);
    const why = (f: string) =>
      headText(f).then(
        () => "",
        (e: unknown) => {
          assert.ok(e instanceof NoHeadError);
          return e.message;
        },
      );
    // tmpdir may itself lie in a repository on some machines; here it does not.
    assert.equal(await why(join(outside, "net.py")), "net.py is not in a git repository: there is no HEAD to compare with");
    const empty = repo(false);
    assert.equal(await why(empty.file), "the git repository of net.py has no commit yet (no HEAD): commit once, then compare");
    const { dir } = repo();
    writeFileSync(join(dir, "new.py"), COMMITTED);
    assert.equal(await why(join(dir, "new.py")), "new.py is not in HEAD (it was never committed): there is no committed version to compare with");
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "sub", "deep.py"), COMMITTED);
    assert.match(await why(join(dir, "sub", "deep.py")), /deep\.py is not in HEAD/);
  });

  it("git missing, and a message it never gave before: still one line", () => {
    assert.equal(gitFailure("/w/net.py", { code: "ENOENT" }, ""), "git is not installed (or not on PATH): comparing with HEAD needs it");
    assert.equal(gitFailure("/w/net.py", { code: 128 }, "fatal: something new\nmore\n"), "git show HEAD:./net.py failed: fatal: something new");
  });
});

describe("the panel's target names the comparison", () => {
  it("round trip, titles, and where a node of HEAD's side opens", () => {
    assert.equal(compareTarget("head", "Net"), "compare:head:Net");
    assert.deepEqual(parseCompareTarget('compare:input:nets["a:b"]'), { kind: "input", target: 'nets["a:b"]' });
    assert.equal(parseCompareTarget("Net"), undefined);
    assert.equal(parseCompareTarget("compare:other:Net"), undefined);
    assert.equal(parseCompareTarget("compare:head:"), undefined);
    assert.equal(compareTitle("train", "Net"), "Compare Net: eval mode → training mode");
    const origin = { uri: vs.Uri.file("/w/net.py").toString(), target: "compare:head:Net" };
    const head = versionUri(origin, "/w/net.py", "a");
    assert.equal(head?.scheme, HEAD_SCHEME);
    assert.equal(head?.fsPath, "/w/net.py");
    assert.equal(versionUri(origin, "/w/net.py", "b"), undefined, "b: the working copy");
    assert.equal(versionUri(origin, "/torch/nn/linear.py", "a"), undefined, "a library line: the file itself");
    assert.equal(versionUri({ ...origin, target: "compare:train:Net" }, "/w/net.py", "a"), undefined);
  });

  it("the summary a comparison shows: b's, with b's error or else a's, said as a's", () => {
    const err = { type: "RuntimeError", message: "x", file: "/w/net.py", line: 3 };
    // HEAD raised, the working copy did not: the error is HEAD's (QA: told as the working
    // copy's, its line opened in the working copy)
    assert.deepEqual(comparedSummary({ ...summary, error: err }, summary, "Net", "HEAD", "working copy").error, {
      ...err,
      side: "HEAD",
      sideName: "HEAD",
    });
    // the working copy (or another input) raised: said as that side's (QA: "Net raised …"
    // did not say which side), its line in the file as it is
    assert.deepEqual(comparedSummary(summary, { ...summary, error: err }, "Net", "HEAD", "working copy").error, {
      ...err,
      sideName: "working copy",
    });
    assert.equal(comparedSummary(undefined, undefined, "Net", "HEAD", "working copy").model, "Net");
  });
});

describe("comparing a model in the editor", () => {
  it("with HEAD: HEAD's text then the unsaved editor text, the same target; compared; shown in a comparison panel", async () => {
    const { file } = repo();
    const doc = pyDoc(file);
    const x = extension();
    const r = await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" });
    assert.ok(r, "a graph was shown");
    assert.deepEqual(
      x.traced.map((p) => [p.uri, p.target, p.text]),
      [
        [doc.uri.toString(), "Net", COMMITTED],
        [doc.uri.toString(), "Net", EDITED],
      ],
    );
    // HEAD's trace gives the document no hints (its lines are HEAD's, not the editor's)
    assert.deepEqual(
      x.traced.map((p) => p.hints),
      [false, undefined],
    );
    assert.equal(x.compared.length, 1);
    const c = x.compared[0]!;
    assert.deepEqual([c.aSource, c.bSource], ["HEAD", "working copy"]);
    assert.match(c.a, /t1\.msgpack$/);
    assert.match(c.b, /t2\.msgpack$/);
    const panel = GraphPanel.find(doc.uri.toString(), "compare:head:Net")!;
    assert.ok(panel, "one panel per comparison");
    assert.equal(panel.title, "Compare Net: HEAD → working copy");
    assert.deepEqual([...panel.bytes!], [...COMPARED]);
    // the progress says which side is being traced
    const progress = calls("progress").map((p) => (p.args[0] as { message: string }).message);
    assert.deepEqual(progress, ["HEAD: Tracing", "working copy: Tracing", "comparing"]);
    assert.ok(x.log.lines.some((l) => l.startsWith("info compared Net (HEAD → working copy): 1 added, 0 removed, 2 changed, 5 same")));
  });

  it("a click on a node of HEAD's side opens HEAD's text, read-only, at its line", async () => {
    const { file } = repo();
    const doc = pyDoc(file);
    const x = extension();
    await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" });
    const panel = GraphPanel.find(doc.uri.toString(), "compare:head:Net")!;
    // what VS Code shows for the torchscope-head URI: the text the comparison traced
    const provider = vs.workspace.contentProviders.get(HEAD_SCHEME) as { provideTextDocumentContent(u: unknown): Promise<string> };
    const headDoc = vs.Uri.file(file).with({ scheme: HEAD_SCHEME, query: "HEAD" });
    assert.equal(await provider.provideTextDocumentContent(headDoc), COMMITTED);
    vs.workspace.documents.set(headDoc.toString(), { ...pyDoc(file, COMMITTED), uri: headDoc });
    const webview = vs.panels.find((p) => p.title === panel.title)!.webview;
    webview.receive({ type: "reveal", site: { file, line: 3 }, nodeId: 7, side: "a" });
    await settle();
    const opened = calls("openTextDocument").map((c) => String(c.args[0]));
    assert.equal(opened.at(-1), headDoc.toString());
    // the same node clicked on the working copy's side opens the document itself
    webview.receive({ type: "reveal", site: { file, line: 3 }, nodeId: 8, side: "b" });
    await settle();
    assert.equal(String(calls("openTextDocument").at(-1)!.args[0]), doc.uri.toString());
    void x;
  });

  it("with HEAD: the other Python files that changed since HEAD go as HEAD has them; a click in one opens HEAD's", async () => {
    // QA: an edit in a module the compared file imports was compared with itself (the file on
    // disk on both sides): "no differences"
    const { dir, file } = repo();
    const layers = join(dir, "layers.py");
    const gone = join(dir, "sub", "old.py");
    mkdirSync(join(dir, "sub"));
    writeFileSync(layers, "ACT = 'relu'\n");
    writeFileSync(gone, "X = 1\n");
    writeFileSync(join(dir, "same.py"), "Y = 2\n");
    writeFileSync(join(dir, "notes.txt"), "not python\n");
    git(dir, "add", ".");
    git(dir, "commit", "-q", "-m", "helpers");
    writeFileSync(layers, "ACT = 'gelu'\n"); // saved, not staged
    git(dir, "rm", "-q", "sub/old.py"); // deleted since
    writeFileSync(join(dir, "added.py"), "Z = 3\n");
    git(dir, "add", "added.py"); // added since (staged)
    writeFileSync(join(dir, "notes.txt"), "changed, not python\n");
    writeFileSync(file, EDITED); // the compared file itself goes as `text`, not in `texts`
    const doc = pyDoc(file);
    const x = extension();
    await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" });
    const [head, working] = x.traced;
    const byFile = (t: { file: string; text: string | null }[] = []) => Object.fromEntries(t.map((f) => [f.file, f.text]));
    assert.deepEqual(byFile(head!.texts), { [layers]: "ACT = 'relu'\n", [gone]: "X = 1\n", [join(dir, "added.py")]: null });
    assert.equal(head!.text, COMMITTED);
    assert.equal(working!.texts, undefined, "the working copy: the files on disk");
    const panel = GraphPanel.find(doc.uri.toString(), "compare:head:Net")!;
    const headLayers = vs.Uri.file(layers).with({ scheme: HEAD_SCHEME, query: "HEAD" });
    const provider = vs.workspace.contentProviders.get(HEAD_SCHEME) as { provideTextDocumentContent(u: unknown): Promise<string> };
    assert.equal(await provider.provideTextDocumentContent(headLayers), "ACT = 'relu'\n");
    assert.equal(versionUri(panel.origin, layers, "a")?.toString(), headLayers.toString());
    assert.equal(versionUri(panel.origin, join(dir, "same.py"), "a"), undefined, "unchanged: the file itself");
    assert.equal(versionUri(panel.origin, layers, "b"), undefined);
  });

  it("more changed files than it takes, or git failing: the other files as saved, said in the log", async () => {
    assert.deepEqual(changedFiles("M\0a.py\0A\0b/c.py\0D\0d.py\0"), [
      { file: "a.py", inHead: true },
      { file: "b/c.py", inHead: false },
      { file: "d.py", inHead: true },
    ]);
    const { dir, file } = repo();
    for (let i = 0; i <= MAX_HEAD_FILES; i++) writeFileSync(join(dir, `m${i}.py`), "");
    git(dir, "add", ".");
    const doc = pyDoc(file);
    const x = extension();
    await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" });
    assert.equal(x.traced[0]!.texts, undefined);
    assert.ok(
      x.log.lines.some((l) => l.includes(`${MAX_HEAD_FILES + 1} Python files changed since HEAD`)),
      x.log.lines.join("\n"),
    );
    assert.equal(x.compared.length, 1, "compared all the same");
  });

  it("HEAD raised, the working copy did not: said as HEAD's, Go to Line opens HEAD's text", async () => {
    // QA: the working copy's fix was compared with a committed version that raised; the error
    // was told as the model's, the cursor jumped in the fixed working copy
    const { file } = repo();
    const doc = pyDoc(file);
    const error = { type: "RuntimeError", message: "mat1 and mat2 shapes cannot be multiplied", file, line: 3 };
    const out = mkdtempSync(join(tmpdir(), "torchscope-cmp-raised-"));
    extension({
      trace: (p, n) => {
        const path = join(out, `r${n}.msgpack`);
        writeFileSync(path, GRAPH);
        return { path, size: GRAPH.length, summary: { ...summary, error: p.text === COMMITTED ? error : null } };
      },
    });
    const headDoc = vs.Uri.file(file).with({ scheme: HEAD_SCHEME, query: "HEAD" });
    vs.workspace.documents.set(headDoc.toString(), { ...pyDoc(file, COMMITTED), uri: headDoc });
    pyDoc(file); // (the working copy's text again: the line above set the file's too)
    vs.answers.push("Go to Line");
    await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" });
    await settle();
    assert.deepEqual(messages("showWarningMessage"), ["torchscope: Net (HEAD) raised RuntimeError: mat1 and mat2 shapes cannot be multiplied"]);
    const opened = calls("openTextDocument").map((c) => String(c.args[0]));
    assert.equal(opened.at(-1), headDoc.toString(), "Go to Line opens HEAD's text");
    // (the command opens the document it compares; nothing reveals the working copy's line)
    assert.deepEqual(opened.slice(0, -1), [doc.uri.toString()]);
  });

  it("a file without HEAD: a message, nothing traced, no panel", async () => {
    const { file } = repo(false);
    const doc = pyDoc(file);
    const x = extension();
    assert.equal(await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" }), undefined);
    assert.deepEqual(messages("showWarningMessage"), [
      "torchscope: the git repository of net.py has no commit yet (no HEAD): commit once, then compare.",
    ]);
    assert.equal(x.traced.length, 0);
    assert.equal(GraphPanel.all().length, 0);
  });

  it("with training mode: eval then training mode, the editor's text both times", async () => {
    const doc = pyDoc("/w/net.py");
    const x = extension();
    await run("torchscope.compareWithTraining", { uri: doc.uri.toString(), target: "Net" });
    assert.deepEqual(
      x.traced.map((p) => [p.train, p.text]),
      [
        [false, EDITED],
        [true, EDITED],
      ],
    );
    assert.deepEqual([x.compared[0]!.aSource, x.compared[0]!.bSource], ["eval mode", "training mode"]);
    assert.equal(GraphPanel.find(doc.uri.toString(), "compare:train:Net")!.title, "Compare Net: eval mode → training mode");
    // dropout's randomness changes every value after it: the comparison is of what the model
    // does (dropout and batch norm switched, NaN or Inf counts), not of values (~85 changes
    // for GPT-2, the one that matters buried among them)
    assert.ok((x.compared[0]!.statsTolerance ?? 0) >= 1e6);
  });

  it("with training mode, a guess the training side had to change: eval mode traced again with that input", async () => {
    // batch norm in training mode refuses a batch of one: the runner's guess for that side
    // is another size, and two sizes would make every node a change
    const doc = pyDoc("/w/net.py");
    const guessed = (expr: string): TraceSummary => ({ ...summary, input: `guessed: ${expr}`, inputKind: "guess", inputExpr: expr });
    const x = extension({
      trace: (p, n) => {
        const path = join(mkdtempSync(join(tmpdir(), "torchscope-cmp-g-")), `t${n}.msgpack`);
        writeFileSync(path, GRAPH);
        const s = p.input
          ? { ...summary, input: p.input, inputKind: "typed" as const, inputExpr: p.input }
          : guessed(p.train ? "torch.randn(2, 16)" : "torch.randn(1, 16)");
        return { path, size: GRAPH.length, summary: s };
      },
    });
    await run("torchscope.compareWithTraining", { uri: doc.uri.toString(), target: "Net" });
    assert.deepEqual(
      x.traced.map((p) => [p.train, p.input]),
      [
        [false, undefined],
        [true, undefined],
        [false, "torch.randn(2, 16)"],
      ],
    );
    assert.equal(x.compared.length, 1);
    assert.ok(x.compared[0]!.a.endsWith("t3.msgpack"), "the eval side traced with the training side's input is compared");
  });

  it("with HEAD, a guess of the edited model that HEAD's can't take: HEAD's own guess kept", async () => {
    // the edit changed the first layer's size: HEAD's model raises with the new size
    const { file } = repo();
    const doc = pyDoc(file);
    const x = extension({
      trace: (p, n) => {
        const path = join(mkdtempSync(join(tmpdir(), "torchscope-cmp-g-")), `t${n}.msgpack`);
        writeFileSync(path, GRAPH);
        const head = p.text === COMMITTED;
        const s: TraceSummary = p.input
          ? {
              ...summary,
              input: p.input,
              inputKind: "typed",
              inputExpr: p.input,
              error: { type: "RuntimeError", message: "mat1 and mat2 shapes cannot be multiplied", file: null, line: null },
            }
          : { ...summary, inputKind: "guess", inputExpr: head ? "torch.randn(1, 16)" : "torch.randn(1, 32)" };
        return { path, size: GRAPH.length, summary: s };
      },
    });
    await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" });
    assert.deepEqual(
      x.traced.map((p) => p.input),
      [undefined, undefined, "torch.randn(1, 32)"],
    );
    assert.ok(x.compared[0]!.a.endsWith("t1.msgpack"), "HEAD's graph with its own input is compared");
  });

  it("with HEAD, both sides guessed alike: each traced once", async () => {
    const { file } = repo();
    const doc = pyDoc(file);
    const x = extension({
      trace: (_p, n) => {
        const path = join(mkdtempSync(join(tmpdir(), "torchscope-cmp-g-")), `t${n}.msgpack`);
        writeFileSync(path, GRAPH);
        return { path, size: GRAPH.length, summary: { ...summary, inputKind: "guess", inputExpr: "torch.randn(1, 16)" } };
      },
    });
    await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" });
    assert.equal(x.traced.length, 2);
  });

  it("with another input: asked (and remembered), the model's own input on the other side", async () => {
    const doc = pyDoc("/w/net.py");
    const x = extension();
    vs.answers.push("torch.randn(8, 16)");
    await run("torchscope.compareWithInput", { uri: doc.uri.toString(), target: "Net" });
    assert.deepEqual(
      x.traced.map((p) => p.input ?? null),
      [null, "torch.randn(8, 16)"],
    );
    assert.deepEqual([x.compared[0]!.aSource, x.compared[0]!.bSource], ["input torch.randn(2, 16)", "input torch.randn(8, 16)"]);
    // the next time the box offers the same input
    vs.answers.push(undefined);
    await run("torchscope.compareWithInput", { uri: doc.uri.toString(), target: "Net" });
    const box = calls("showInputBox").at(-1)!.args[0] as { value?: string };
    assert.equal(box.value, "torch.randn(8, 16)");
    assert.equal(x.traced.length, 2, "dismissed: nothing traced");
  });

  it("a side that lacks an input: asked once for the model, both sides traced again with it", async () => {
    const doc = pyDoc("/w/net.py");
    const out = mkdtempSync(join(tmpdir(), "torchscope-cmp-ni-"));
    const x = extension({
      trace: (p, n) => {
        if (!p.input) throw Object.assign(new Error("cannot tell what input Net takes"), { code: -32001, data: { kind: "needs-input" } });
        const path = join(out, `t${n}.msgpack`);
        writeFileSync(path, GRAPH);
        return { path, size: GRAPH.length, summary };
      },
    });
    vs.answers.push("torch.randn(1, 16)");
    assert.ok(await run("torchscope.compareWithTraining", { uri: doc.uri.toString(), target: "Net" }));
    assert.deepEqual(
      x.traced.map((p) => [p.train, p.input ?? null]),
      [
        [false, null],
        [false, "torch.randn(1, 16)"],
        [true, "torch.randn(1, 16)"],
      ],
    );
    assert.equal(calls("showInputBox").length, 1);
  });

  it("Re-trace of a comparison panel compares again (HEAD read again, both sides traced)", async () => {
    const { file } = repo();
    const doc = pyDoc(file);
    const x = extension();
    await run("torchscope.compareWithHead", { uri: doc.uri.toString(), target: "Net" });
    const panel = GraphPanel.find(doc.uri.toString(), "compare:head:Net")!;
    await x.flow.retrace(panel);
    assert.equal(x.traced.length, 4);
    assert.equal(x.traced[2]!.text, COMMITTED);
    assert.equal(x.compared.length, 2);
  });

  it("the model at the cursor, as Visualize finds it", async () => {
    const doc = pyDoc("/w/net.py");
    vs.window.activeTextEditor = { document: doc, selection: { active: new vs.Position(2, 4) } };
    const x = extension();
    await run("torchscope.compareWithTraining");
    assert.equal(x.traced[0]!.target, "Net");
    assert.equal(x.traced[0]!.uri, doc.uri.toString());
  });
});

describe("comparing a file that does not parse", () => {
  it("says where, with Go to Line, as Visualize does; not 'put the cursor inside an nn.Module class'", async () => {
    const doc = pyDoc("/w/net.py");
    vs.window.activeTextEditor = { document: doc, selection: { active: new vs.Position(13, 4) } };
    const broken = Object.assign(new Error("net.py does not parse: line 15: '(' was never closed"), { data: { kind: "syntax-error", line: 15 } });
    const x = extension({ server: { targetAt: async () => null, targets: async () => Promise.reject(broken) } });
    await run("torchscope.compareWithHead");
    assert.equal(x.traced.length, 0);
    const said = [...calls("showWarningMessage"), ...calls("showInformationMessage")].map((c) => c.args);
    assert.deepEqual(said, [["torchscope: net.py does not parse: line 15: '(' was never closed", "Go to Line"]]);
  });
});

describe("comparing the last two paused traces", () => {
  it("the paused source records each graph; the command compares the older with the newer", async () => {
    const x = extension();
    const dir = mkdtempSync(join(tmpdir(), "torchscope-paused-"));
    const a = join(dir, "a.msgpack");
    const b = join(dir, "b.msgpack");
    writeFileSync(a, GRAPH);
    writeFileSync(b, GRAPH);
    // one trace so far: nothing to compare yet
    x.paused.deps.onTraced!("self.model", "Net", a);
    assert.equal(await run("torchscope.compareWithPreviousPaused"), undefined);
    assert.match(messages("showInformationMessage").at(-1)!, /Net was traced at a breakpoint once/);
    x.paused.deps.onTraced!("self.model", "Net", b);
    assert.ok(await run("torchscope.compareWithPreviousPaused"));
    assert.deepEqual(
      x.compared.map((c) => [c.a, c.b, c.aSource, c.bSource]),
      [[a, b, "previous paused trace", "last paused trace"]],
    );
    const panel = GraphPanel.find(DEBUG_URI, "compare:paused:self.model")!;
    assert.equal(panel.title, "Compare Net: previous paused trace → last paused trace");
    // its Re-trace compares the last two again (the paused kind does not take the panel)
    await x.flow.retrace(panel);
    assert.equal(x.compared.length, 2);
  });

  it("no paused trace at all: says how to get two", async () => {
    extension();
    assert.equal(await run("torchscope.compareWithPreviousPaused"), undefined);
    assert.match(messages("showInformationMessage")[0]!, /no model was traced at a breakpoint yet/);
  });

  it("keeps the last two per target", () => {
    const h = new PausedHistory();
    h.record("m", "Net", "/1");
    h.record("m", "Net", "/2");
    h.record("other", "Enc", "/x");
    h.record("m", "Net", "/3");
    assert.deepEqual(
      h.graphs("m").map((g) => g.path),
      ["/2", "/3"],
    );
    assert.equal(h.lastTarget, "m");
  });

  it("pairs only traces of one live model: `self` in another forward, another program", () => {
    const h = new PausedHistory();
    h.record("self", "Block", "/1", "100:1");
    h.record("self", "Net", "/2", "100:2"); // another module's forward: not a second trace of Block
    assert.deepEqual(
      h.graphs("self").map((g) => g.path),
      ["/2"],
    );
    h.record("self", "Net", "/3", "100:2");
    assert.deepEqual(
      h.graphs("self").map((g) => g.path),
      ["/2", "/3"],
    );
    h.record("self", "Net", "/4", "200:2"); // the same id in another process: another model
    assert.deepEqual(
      h.graphs("self").map((g) => g.path),
      ["/4"],
    );
    h.record("self", "Net", "/5"); // a reply that does not say (an older debuggee): as before
    assert.deepEqual(
      h.graphs("self").map((g) => g.path),
      ["/4", "/5"],
    );
  });
});
