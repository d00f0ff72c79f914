// The one trace flow (extension/src/traceFlow.ts) over its two sources: the language server
// for a model in the editor (a fake server) and a paused debug session (a fake debugpy
// session answering the entry's requests). Ask and retry, Cancel, a model that raised
// (its line, "Go to Line", "Change Input…"), and Re-trace / Change Input… of a panel of
// either source, all through the flow as the extension wires it.
// First: vscode.debug on the stub before the extension's modules load.
import { fakeDebug } from "./debug-fake";
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, it } from "node:test";
import * as vs from "./vscode-stub";
import type { Server } from "../../../extension/src/client";
import type { DebugRequest } from "../../../extension/src/debugBridge";
import { graphFolders } from "../../../extension/src/extension";
import { GraphPanel } from "../../../extension/src/graphPanel";
import { DEBUG_URI, OTHERS_AGE_MS, pausedGraphName, pruneGraphs } from "../../../extension/src/pausedSource";
import { TORCHSCOPE_ERROR, type TraceParams, type TraceResult, type TraceSummary } from "../../../extension/src/protocol";
import { TraceFlow, type Answer, type TraceOutcome, type TraceSource } from "../../../extension/src/traceFlow";
import { SUMMARY as summary, calls, fail, fakeServer, messages, pyDoc, resetWiring, settle, wiredExtension } from "./wiring";

const dir = mkdtempSync(join(tmpdir(), "torchscope-flow-"));
const GRAPH = Buffer.from([0x81, 0xa1, 0x61, 0x01]);
const graphFile = join(dir, "g.msgpack");
writeFileSync(graphFile, GRAPH);
const raised = (file: string | null, line: number | null): TraceSummary => ({
  ...summary,
  error: { type: "RuntimeError", message: "shapes differ", file, line },
});

/** The extension's wiring with a fake server that answers with `replies` in turn. */
function extension(replies: ((p: Omit<TraceParams, "workDoneToken">) => TraceResult | Promise<TraceResult>)[] = []) {
  const sent: Omit<TraceParams, "workDoneToken">[] = [];
  const server = fakeServer({
    trace: async (p, _cancel, progress) => {
      sent.push(p);
      progress("Tracing");
      return replies.shift()!(p) as TraceResult;
    },
  });
  return { ...wiredExtension(server), sent };
}

/** A paused debugpy session whose entry answers with `handler`. */
function pausedSession(handler: (req: DebugRequest) => unknown) {
  const requests: DebugRequest[] = [];
  const session = {
    id: "s1",
    type: "debugpy",
    name: "Debug nested.py",
    customRequest: async (_command: string, args: Record<string, unknown>) => {
      const m = /\.handle\(("(?:[^"\\]|\\.)*")\)$/.exec(args.expression as string)!;
      const req = JSON.parse(JSON.parse(m[1]!) as string) as DebugRequest;
      requests.push(req);
      return { result: JSON.stringify(await handler(req)) };
    },
  };
  fakeDebug.activeDebugSession = session;
  fakeDebug.activeStackItem = { session, threadId: 1, frameId: 5 };
  return requests;
}

/** The entry tracing: writes the graph where it is told and says what it traced. */
const traces =
  (s: TraceSummary = summary) =>
  (req: DebugRequest) => {
    if (req.op !== "trace") return { ok: false, kind: "bad-request", error: req.op };
    writeFileSync(req.out, GRAPH);
    return { ok: true, path: req.out, size: GRAPH.length, summary: { ...s, input: req.input ?? "paused call" } };
  };

beforeEach(resetWiring);

describe("the flow itself, over a scripted source", () => {
  /** A source that gives `outcomes` in turn and answers questions with `answers`. */
  function scripted(outcomes: (TraceOutcome | (() => Promise<TraceOutcome>))[], answers: Answer[] = [], nextCall?: TraceOutcome) {
    const asked: string[] = [];
    let traced = 0;
    const source: TraceSource = {
      uri: "file:///w/net.py",
      target: "Net",
      label: "Net",
      progressTitle: "Tracing Net",
      trace: async () => {
        traced++;
        const o = outcomes.shift()!;
        return typeof o === "function" ? o() : o;
      },
      ask: async (what) => {
        asked.push(what.kind);
        return answers.shift();
      },
      ...(nextCall ? { traceNextCall: async () => nextCall } : {}),
    };
    return { source, asked, traced: () => traced };
  }
  const shown: TraceOutcome = { ok: true, traced: { path: graphFile, summary } };
  const flow = () => new TraceFlow(vs.Uri.file("/ext/viewer") as never, vs.logChannel() as never, []);

  it("opens the panel before the trace, and shows the graph there", async () => {
    let openDuringTrace = false;
    const s = scripted([
      async () => {
        openDuringTrace = !!GraphPanel.find("file:///w/net.py", "Net");
        return shown;
      },
    ]);
    const r = await flow().run(s.source);
    assert.ok(openDuringTrace, "the viewer boots while the model is traced");
    assert.equal(vs.panels.length, 1);
    assert.deepEqual(r, { path: graphFile, summary });
    assert.deepEqual([...GraphPanel.find("file:///w/net.py", "Net")!.bytes!], [...GRAPH]);
  });

  it("a second command for the model traced now joins that trace; edited text since: its own", async () => {
    let release!: () => void;
    const slow = () => new Promise<TraceOutcome>((done) => (release = () => done(shown)));
    const s = scripted([slow, shown, shown]);
    const f = flow();
    const first = f.run({ ...s.source, version: 3 });
    const again = f.run({ ...s.source, version: 3 });
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(s.traced(), 1, "one trace for both commands");
    release();
    assert.deepEqual(await again, await first);
    const edited = f.run({ ...s.source, version: 3 });
    const later = f.run({ ...s.source, version: 4 }); // (the text changed: a trace of its own)
    await Promise.all([edited, later]);
    assert.equal(s.traced(), 3);
  });

  it("asks for what the trace lacked and traces again; dismissed: no graph, its panel closed", async () => {
    const s = scripted([{ ok: false, kind: "needs-ctor-args", message: "Net() needs hidden" }, shown], ["retry"]);
    assert.ok(await flow().run(s.source));
    assert.deepEqual(s.asked, ["needs-ctor-args"]);
    assert.equal(s.traced(), 2);
    for (const p of GraphPanel.all()) p.dispose();
    const d = scripted([{ ok: false, kind: "needs-input", message: "" }], [undefined]);
    assert.equal(await flow().run(d.source), undefined);
    assert.equal(GraphPanel.all().length, 0);
  });

  it("asks at most a few times", async () => {
    const needs: TraceOutcome = { ok: false, kind: "needs-input", message: "" };
    const s = scripted([needs, needs, needs, needs, needs, needs], ["retry", "retry", "retry", "retry", "retry"]);
    assert.equal(await flow().run(s.source), undefined);
    assert.equal(s.traced(), 4);
  });

  it("quietly (re-trace on save): no panel opened, no question, a status-bar spinner without Cancel", async () => {
    const s = scripted([{ ok: false, kind: "needs-input", message: "" }], ["retry"]);
    assert.equal(await flow().run(s.source, { quiet: true }), undefined);
    assert.deepEqual(s.asked, []);
    assert.equal(vs.panels.length, 0);
    const opts = calls("withProgress")[0]!.args[0] as { location: number; cancellable: boolean };
    assert.deepEqual([opts.location, opts.cancellable], [vs.ProgressLocation.Window, false]);
  });

  it("the next call instead: the panel opened for the trace closes meanwhile, the graph opens its own", async () => {
    const s = scripted([], ["next-call"], shown);
    const warm = flow().openPanel({ uri: "file:///w/net.py", target: "Net", title: "Forward pass: Net" });
    const r = await flow().run(s.source, { askFirst: true, opened: warm });
    assert.ok(r);
    assert.equal(s.traced(), 0);
    assert.equal(vs.panels.length, 2);
    assert.ok(vs.panels[0]!.disposed);
    assert.equal(calls("withProgress").length, 0, "the source shows its own progress while it waits");
  });
});

describe("the editor's source", () => {
  const uri = () => vs.Uri.file("/w/net.py").toString();

  it("needs-input → the input box → traced with the answer, remembered for the next trace", async () => {
    pyDoc("/w/net.py");
    const result: TraceResult = { path: graphFile, size: 4, summary };
    const x = extension([fail("needs-input"), () => result, () => result]);
    vs.answers.push("torch.randn(1, 8)");
    assert.equal(await x.commands.visualize({ uri: uri(), target: "Net" }), result);
    assert.deepEqual(
      x.sent.map((p) => p.input ?? null),
      [null, "torch.randn(1, 8)"],
    );
    await x.commands.visualize({ uri: uri(), target: "Net" });
    assert.equal(x.sent[2]!.input, "torch.randn(1, 8)");
    assert.equal(calls("showInputBox").length, 1);
  });

  it("the input box says why as text: a link in the model's error is no link there", async () => {
    // (VS Code renders `[label](command:…)` in an input box's prompt, as in a notification)
    pyDoc("/w/net.py");
    const linked = () => {
      throw Object.assign(new Error("Net raised ValueError: see [the docs](command:workbench.action.terminal.new)"), {
        code: TORCHSCOPE_ERROR,
        data: { kind: "needs-input" },
      });
    };
    const x = extension([linked]);
    vs.answers.push(undefined);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    const [box] = calls("showInputBox").map((c) => c.args[0] as { prompt?: string });
    assert.ok(box?.prompt?.includes("[the docs]"), JSON.stringify(box));
    assert.doesNotMatch(box!.prompt!, /\]\(/);
  });

  it("Cancel: the server's request is cancelled; no message, the panel opened for it closes", async () => {
    pyDoc("/w/net.py");
    const x = extension([
      async () => {
        vs.progressCancel.press();
        throw Object.assign(new Error("Canceled"), { code: -32800 });
      },
    ]);
    assert.equal(await x.commands.visualize({ uri: uri(), target: "Net" }), undefined);
    assert.equal(messages("showErrorMessage").length, 0);
    assert.equal(GraphPanel.all().length, 0);
    assert.ok(x.log.lines.includes("info trace cancelled"));
  });

  it("closing the panel while its model is traced cancels that trace (QA: it ran on, and later traces waited)", async () => {
    pyDoc("/w/net.py");
    let cancelled = false;
    const server = fakeServer({
      trace: async (_p, cancel) => {
        vs.panels.at(-1)!.dispose(); // the user closes the panel the trace draws into
        cancelled = cancel.isCancellationRequested;
        throw Object.assign(new Error("Canceled"), { code: -32800 });
      },
    });
    const x = wiredExtension(server);
    assert.equal(await x.commands.visualize({ uri: uri(), target: "Net" }), undefined);
    assert.ok(cancelled, "the server's request was not cancelled");
    assert.equal(messages("showErrorMessage").length, 0);
    assert.equal(GraphPanel.all().length, 0);
  });

  it("a panel torchscope closes itself cancels no trace (review: a second command's trace was cancelled by the first's)", async () => {
    pyDoc("/w/net.py");
    let cancelled = true;
    const server = fakeServer({
      trace: async (_p, cancel) => {
        GraphPanel.find(uri(), "Net")!.dispose(); // as `run` closes a panel that got no graph
        cancelled = cancel.isCancellationRequested;
        return { path: graphFile, size: 4, summary };
      },
    });
    const x = wiredExtension(server);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    assert.equal(cancelled, false);
    assert.ok(GraphPanel.find(uri(), "Net"), "the graph is shown in a panel again");
  });

  it("a model that raised: its line beside the graph; Go to Line opens it", async () => {
    const doc = pyDoc("/w/net.py");
    const x = extension([() => ({ path: graphFile, size: 4, summary: raised("/w/net.py", 12) })]);
    vs.answers.push("Go to Line");
    await x.commands.visualize({ uri: uri(), target: "Net" });
    await settle();
    const warn = calls("showWarningMessage")[0]!;
    assert.equal(warn.args[0], "torchscope: Net raised RuntimeError: shapes differ");
    assert.deepEqual(warn.args.slice(1), ["Go to Line", "Change Input…"]);
    const shown = calls("showTextDocument").map((c) => c.args as [typeof doc, { preserveFocus: boolean; selection: { start: { line: number } } }]);
    assert.deepEqual(
      shown.map(([d, o]) => [d, o.preserveFocus, o.selection.start.line]),
      [
        [doc, true, 11],
        [doc, false, 11],
      ],
    );
  });

  it("Change Input… after a model raised: the input box, then traced again with the answer", async () => {
    pyDoc("/w/net.py");
    const x = extension([
      () => ({ path: graphFile, size: 4, summary: raised(null, null) }),
      (p) => ({ path: graphFile, size: 4, summary: { ...summary, input: p.input! } }),
    ]);
    vs.answers.push("Change Input…", "torch.randn(2, 8)");
    await x.commands.visualize({ uri: uri(), target: "Net" });
    await settle();
    assert.deepEqual(calls("showWarningMessage")[0]!.args.slice(1), ["Change Input…"]);
    assert.deepEqual(
      x.sent.map((p) => p.input ?? null),
      [null, "torch.randn(2, 8)"],
    );
    assert.equal(vs.panels.length, 1);
  });

  it("Re-trace of an editor panel traces the document as it is now, in the same panel", async () => {
    pyDoc("/w/net.py", "v1");
    const x = extension([() => ({ path: graphFile, size: 4, summary }), () => ({ path: graphFile, size: 4, summary })]);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    pyDoc("/w/net.py", "v2");
    await x.commands.retrace();
    assert.deepEqual(
      x.sent.map((p) => p.text),
      ["v1", "v2"],
    );
    assert.equal(vs.panels.length, 1);
    const opts = calls("withProgress").at(-1)!.args[0] as { location: number; title: string };
    assert.deepEqual([opts.location, opts.title], [vs.ProgressLocation.Notification, "Tracing Net"]);
  });

  it("a quiet re-trace (on save) updates its panel where it is, without bringing it forward", async () => {
    // two panels in one group: saving re-traced both, and the last one came to the front
    pyDoc("/w/net.py", "v1");
    const reply = () => ({ path: graphFile, size: 4, summary });
    const x = extension([reply, reply, reply]);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    const panel = vs.panels[0]!;
    const before = panel.revealed;
    await x.flow.retrace(GraphPanel.all()[0]!, true);
    assert.equal(x.sent.length, 2, "traced again");
    assert.equal(panel.revealed, before, "not brought forward");
    await x.commands.retrace(); // (asked for: forward, as before)
    assert.ok(panel.revealed > before);
  });

  it("Re-trace of a panel whose document is gone says so", async () => {
    const x = extension();
    const panel = x.flow.openPanel({ uri: "file:///gone.py", target: "Net", title: "Forward pass: Net" });
    await x.flow.retrace(panel);
    assert.match(messages("showWarningMessage")[0]!, /gone\.py can't be opened any more/);
    assert.equal(x.sent.length, 0);
  });

  // QA: a panel whose file was renamed (F2) kept the old name: Re-trace could only say the
  // file was gone, and its nodes' lines named a file no longer there.
  it("a file renamed in the editor: its panel follows, traces the file under its new name, with its answers", async () => {
    pyDoc("/w/net.py", "v1");
    const reply = () => ({ path: graphFile, size: 4, summary });
    const x = extension([fail("needs-input"), reply, reply]);
    vs.answers.push("torch.randn(1, 8)");
    await x.commands.visualize({ uri: uri(), target: "Net" });
    const panel = GraphPanel.all()[0]!;
    vs.workspace.documents.delete(uri());
    pyDoc("/w/models/net.py", "v1 renamed");
    const moved = vs.Uri.file("/w/models/net.py").toString();
    await x.flow.followRenames([{ from: uri(), to: moved }]);
    assert.equal(panel.origin.uri, moved);
    assert.equal(GraphPanel.find(moved, "Net"), panel, "found by its new name");
    assert.equal(GraphPanel.find(uri(), "Net"), undefined);
    assert.deepEqual(
      x.sent.map((p) => [p.uri, p.text, p.input ?? null]),
      [
        [uri(), "v1", null],
        [uri(), "v1", "torch.randn(1, 8)"],
        [moved, "v1 renamed", "torch.randn(1, 8)"],
      ],
      "traced quietly under the new name, with the input remembered for the old one",
    );
    assert.equal(vs.panels.length, 1);
    assert.equal(calls("showInputBox").length, 1, "not asked again");
    assert.equal(messages("showWarningMessage").length, 0);
  });

  it("a folder renamed: the panels of files in it follow; others stay", async () => {
    pyDoc("/w/a/net.py", "a");
    pyDoc("/w/b/net.py", "b");
    const reply = () => ({ path: graphFile, size: 4, summary });
    const x = extension([reply, reply, reply]);
    const a = vs.Uri.file("/w/a/net.py").toString();
    const b = vs.Uri.file("/w/b/net.py").toString();
    await x.commands.visualize({ uri: a, target: "Net" });
    await x.commands.visualize({ uri: b, target: "Net" });
    pyDoc("/w/c/net.py", "a moved");
    await x.flow.followRenames([{ from: vs.Uri.file("/w/a").toString(), to: vs.Uri.file("/w/c").toString() }]);
    assert.deepEqual(
      GraphPanel.all()
        .map((p) => p.origin.uri)
        .sort(),
      [b, vs.Uri.file("/w/c/net.py").toString()],
    );
    assert.deepEqual(x.sent.at(-1)!.text, "a moved");
    assert.equal(x.sent.length, 3);
  });

  it("writes its graphs to its own folder, apart from the paused frame's", () => {
    const x = extension();
    const f = graphFolders(x.storage);
    assert.deepEqual([f.editor, f.paused], [join(x.storage, "graphs", "editor"), join(x.storage, "graphs", "paused")]);
  });
});

describe("the paused frame's source", () => {
  it("needs-input → type an expression → traced with it in the paused frame", async () => {
    const requests = pausedSession((req) =>
      req.op === "trace" && !req.input ? { ok: false, kind: "needs-input", error: "no input for Net" } : traces()(req),
    );
    const x = extension();
    vs.answers.push({ id: "type" }, "x[:2]");
    await x.debug.visualizeVariable({ sessionId: "s1", variable: { name: "net", evaluateName: "net" } });
    assert.deepEqual(
      requests.filter((r) => r.op === "trace").map((r) => (r as { input?: string }).input ?? null),
      [null, "x[:2]"],
    );
    const panel = GraphPanel.find(DEBUG_URI, "net")!;
    assert.equal(panel.title, "Forward pass: Net");
    // Its graph went to the paused frame's own folder.
    assert.equal(panel.origin.graphPath!.startsWith(graphFolders(x.storage).paused), true);
  });

  it("Cancel writes the cancel file; no message, no panel", async () => {
    let cancelFile = "";
    pausedSession(async (req) => {
      if (req.op !== "trace") return { ok: false, kind: "bad-request", error: req.op };
      cancelFile = req.cancelFile!;
      vs.progressCancel.press();
      await settle();
      return { ok: false, kind: readdirSync(join(cancelFile, "..")).some((f) => f.endsWith(".cancel")) ? "cancelled" : "internal", error: "x" };
    });
    const x = extension();
    await x.debug.visualizeVariable({ sessionId: "s1", variable: { name: "net", evaluateName: "net" } });
    assert.ok(cancelFile.endsWith(".msgpack.cancel"));
    assert.equal(messages("showErrorMessage").length, 0, "cancelled, not an error");
    assert.equal(GraphPanel.all().length, 0);
  });

  it("a model that raised: its line and Go to Line, as from the editor", async () => {
    const doc = pyDoc("/w/loop.py");
    pausedSession(traces(raised("/w/loop.py", 7)));
    const x = extension();
    vs.answers.push("Go to Line");
    await x.debug.visualizeVariable({ sessionId: "s1", variable: { name: "net", evaluateName: "net" } });
    await settle();
    assert.equal(messages("showWarningMessage")[0], "torchscope: Net raised RuntimeError: shapes differ");
    assert.deepEqual(
      calls("showTextDocument").map((c) => [c.args[0], (c.args[1] as { preserveFocus: boolean }).preserveFocus]),
      [
        [doc, true],
        [doc, false],
      ],
    );
  });

  it("Re-trace and Change Input… of a paused-frame panel: the same expression in the frame paused now", async () => {
    const requests = pausedSession(traces());
    const x = extension();
    await x.debug.visualizeVariable({ sessionId: "s1", variable: { name: "net", evaluateName: "self.net" } });
    const panel = GraphPanel.find(DEBUG_URI, "self.net")!;
    await x.flow.retrace(panel);
    vs.answers.push({ id: "type" }, "torch.zeros(1, 8)");
    await x.flow.changeInput(panel);
    const t = requests.filter((r): r is Extract<DebugRequest, { op: "trace" }> => r.op === "trace");
    assert.deepEqual(
      t.map((r) => [r.expr, r.input ?? null]),
      [
        ["self.net", null],
        ["self.net", null],
        ["self.net", "torch.zeros(1, 8)"],
      ],
    );
    assert.equal(GraphPanel.all().length, 1);
    assert.equal(messages("showWarningMessage").length, 0);
    // the session's first trace comes after a cheap request: debugpy reads its slow-evaluation
    // threshold as each evaluation begins, and that request raises it for the trace (debug.py)
    const ops = requests.map((r) => r.op);
    assert.equal(ops[0], "warm");
    assert.equal(ops.filter((op) => op === "warm").length, 1, ops.join(" "));
  });

  it("Re-trace of a paused-frame panel that finds another live model there says so", async () => {
    // (another session selected, or paused in another module's forward: `self` is another model)
    let id = 1;
    const models = ["MLP", "MLP", "ConvNet", "ConvNet"];
    const ids = ["100:1", "100:1", "100:3", "200:3"]; // the last: the program run again
    pausedSession((req) => {
      if (req.op !== "trace") return { ok: false, kind: "bad-request", error: req.op };
      const reply = traces({ ...summary, model: models.shift()! })(req) as Record<string, unknown>;
      return { ...reply, modelId: ids.shift(), _n: id++ };
    });
    const x = extension();
    await x.debug.visualizeVariable({ sessionId: "s1", variable: { name: "self", evaluateName: "self" } });
    const panel = GraphPanel.find(DEBUG_URI, "self")!;
    await x.flow.retrace(panel); // the same live model: nothing to say
    assert.equal(messages("showInformationMessage").filter((m) => /another model/.test(m)).length, 0);
    await x.flow.retrace(panel);
    assert.deepEqual(
      messages("showInformationMessage").filter((m) => /another model/.test(m)),
      ["torchscope: self in the paused frame is another model now: ConvNet (the panel showed MLP)."],
    );
    await x.flow.retrace(panel); // the same model by name in a new run: nothing more to say
    assert.equal(messages("showInformationMessage").filter((m) => /another model/.test(m)).length, 1);
  });

  it("Re-trace of a paused-frame panel when nothing is paused: a message, no evaluate; never on save", async () => {
    const x = extension();
    const panel = x.flow.openPanel({ uri: DEBUG_URI, target: "self", title: "Forward pass: Block" });
    assert.equal(await x.flow.retrace(panel, true), undefined);
    assert.equal(messages("showInformationMessage").length, 0, "quietly: nothing at all");
    await x.flow.retrace(panel);
    assert.match(messages("showInformationMessage")[0]!, /start debugging a Python program/);
  });

  it("keeps its folder to the newest graphs", async () => {
    const folder = mkdtempSync(join(tmpdir(), "torchscope-prune-"));
    for (let i = 0; i < 25; i++) {
      const f = join(folder, `g${i}.msgpack`);
      writeFileSync(f, GRAPH);
      utimesSync(f, 1000 + i, 1000 + i);
    }
    writeFileSync(join(folder, "notes.txt"), "kept");
    const removed = await pruneGraphs(folder, 20);
    assert.deepEqual(
      removed.map((f) => f.slice(folder.length + 1)),
      ["g0.msgpack", "g1.msgpack", "g2.msgpack", "g3.msgpack", "g4.msgpack", "g5.msgpack"],
    );
    assert.equal(readdirSync(folder).length, 20, "19 graphs, room for the next, and the other file");
  });

  it("leaves other windows' graphs, but those a day old whose window is gone", async () => {
    const folder = mkdtempSync(join(tmpdir(), "torchscope-prune-"));
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!; // (ended and reaped)
    const name = (pid: number, i: number) => `debug-${pid}-${1000 + i}-abcd${i}.msgpack`;
    const made = (pid: number, i: number, ageMs: number) => {
      const f = join(folder, name(pid, i));
      writeFileSync(f, GRAPH);
      const at = (Date.now() - ageMs) / 1000;
      utimesSync(f, at, at);
      return name(pid, i);
    };
    const mine = [0, 1, 2, 3].map((i) => made(process.pid, i, 1000 * (10 - i)));
    const another = made(process.ppid, 4, OTHERS_AGE_MS * 2); // a window that runs: never
    const recent = made(dead, 5, 60_000); // a window reloaded a minute ago: its panels read it
    const old = made(dead, 6, OTHERS_AGE_MS + 60_000);
    const removed = (await pruneGraphs(folder, 3)).map((f) => f.slice(folder.length + 1));
    assert.deepEqual(removed.sort(), [mine[0], mine[1], old].sort());
    assert.deepEqual(readdirSync(folder).sort(), [mine[2], mine[3], another, recent].sort());
    assert.match(pausedGraphName(), new RegExp(`^debug-${process.pid}-\\d+-[0-9a-f]{8}\\.msgpack$`));
  });

  it("takes a pruned graph's side files with it, and those of a next call whose graph never came", async () => {
    const folder = mkdtempSync(join(tmpdir(), "torchscope-prune-"));
    for (let i = 0; i < 3; i++) {
      const f = join(folder, `g${i}.msgpack`);
      writeFileSync(f, GRAPH);
      writeFileSync(`${f}.reply.json`, "{}");
      utimesSync(f, 1000 + i, 1000 + i);
    }
    writeFileSync(join(folder, "lost.msgpack.part"), GRAPH); // its rename failed, long ago
    writeFileSync(join(folder, "lost.msgpack.error.json"), "{}");
    for (const f of ["lost.msgpack.part", "lost.msgpack.error.json"]) utimesSync(join(folder, f), 1000, 1000);
    writeFileSync(join(folder, "now.msgpack.reply.json"), "{}"); // a next call under way: its graph comes next
    await pruneGraphs(folder, 3);
    assert.deepEqual(readdirSync(folder).sort(), [
      "g1.msgpack",
      "g1.msgpack.reply.json",
      "g2.msgpack",
      "g2.msgpack.reply.json",
      "now.msgpack.reply.json",
    ]);
  });
});

describe("the first ten minutes (issue 16)", () => {
  const uri = (f = "/w/net.py") => vs.Uri.file(f).toString();
  const failWith =
    (kind: string, message: string, extra: object = {}) =>
    () => {
      throw Object.assign(new Error(message), { code: TORCHSCOPE_ERROR, data: { kind, ...extra } });
    };
  const ok = (s: Partial<TraceSummary> = {}): TraceResult => ({ path: graphFile, size: 4, summary: { ...summary, ...s } });
  const inputBoxes = () => calls("showInputBox").map((c) => c.args[0] as { value?: string; placeHolder?: string; prompt?: string; title?: string });
  const statements = [
    { line: 40, text: "for step in range(30):" },
    { line: 52, text: "torch.save(model.state_dict(), 'ckpt.pt')" },
  ];
  const runsCode = failWith(
    "runs-code",
    "importing train.py without its top-level code failed (NameError: name 'WIDTH' is not defined); it runs code at import: line 40: for step in range(30):; line 52: torch.save(…)",
    { statements },
  );

  it("a file that runs code at import: a modal question first; Run It traces with runTopLevel, remembered for the file", async () => {
    pyDoc("/w/train.py");
    const x = extension([runsCode, () => ok(), () => ok()]);
    vs.answers.push("Run It");
    assert.ok(await x.commands.visualize({ uri: uri("/w/train.py"), target: "Net" }));
    const q = calls("showWarningMessage")[0]!;
    assert.equal(
      q.args[0],
      "torchscope: importing train.py runs code at import (for step in range(30): at line 40, torch.save(model.state_dict(), 'ckpt.pt') at line 52). Run it to trace?",
    );
    assert.deepEqual(q.args.slice(1), [
      {
        modal: true,
        detail:
          "Without it, building the model failed: NameError: name 'WIDTH' is not defined.\n\nline 40: for step in range(30):\nline 52: torch.save(model.state_dict(), 'ckpt.pt')",
      },
      "Run It",
      "Show Lines",
    ]);
    assert.deepEqual(
      x.sent.map((p) => p.runTopLevel ?? false),
      [false, true],
    );
    // The yes holds for the file: no question the next time.
    await x.commands.visualize({ uri: uri("/w/train.py"), target: "Other" });
    assert.equal(x.sent[2]!.runTopLevel, true);
    assert.equal(calls("showWarningMessage").length, 1);
  });

  it("never runs it without a yes: Show Lines opens the first statement; dismissed: nothing", async () => {
    const doc = pyDoc("/w/train.py");
    const x = extension([runsCode, runsCode]);
    vs.answers.push("Show Lines");
    assert.equal(await x.commands.visualize({ uri: uri("/w/train.py"), target: "Net" }), undefined);
    const shown = calls("showTextDocument").map((c) => [c.args[0], (c.args[1] as { selection: { start: { line: number } } }).selection.start.line]);
    assert.deepEqual(shown, [[doc, 39]]);
    vs.answers.push(undefined);
    assert.equal(await x.commands.visualize({ uri: uri("/w/train.py"), target: "Net" }), undefined);
    assert.deepEqual(
      x.sent.map((p) => p.runTopLevel ?? false),
      [false, false],
    );
    assert.equal(GraphPanel.all().length, 0, "no panel left for a trace that never ran");
  });

  it("the panel shows the input used; its Change button asks, starting with that input", async () => {
    pyDoc("/w/net.py");
    const x = extension([
      () => ok({ input: "torch.randn(2, 64)", inputExpr: "torch.randn(2, 64)", inputKind: "call" }),
      (p) => ok({ input: p.input!, inputExpr: p.input!, inputKind: "typed" }),
    ]);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    const panel = vs.panels[0]!;
    panel.webview.receive({ type: "ready" });
    const posted = panel.webview.posted.at(-1) as { type: string; origin: { input?: unknown } };
    assert.equal(posted.type, "graph");
    assert.deepEqual(posted.origin.input, { text: "torch.randn(2, 64)", expr: "torch.randn(2, 64)" });
    vs.answers.push("torch.randn(4, 64)");
    panel.webview.receive({ type: "changeInput" });
    await settle();
    await settle();
    assert.deepEqual(
      inputBoxes().map((b) => b.value),
      ["torch.randn(2, 64)"],
    );
    assert.deepEqual(
      x.sent.map((p) => p.input ?? null),
      [null, "torch.randn(4, 64)"],
    );
    assert.deepEqual((panel.webview.posted.at(-1) as { origin: { input?: unknown } }).origin.input, {
      text: "torch.randn(4, 64)",
      expr: "torch.randn(4, 64)",
    });
  });

  it("a guessed input that makes the forward raise: the guess may be wrong, the input box opens with it", async () => {
    pyDoc("/w/net.py");
    const guessed = ok({
      input: "guessed from Conv2d(3, …): tensor [1, 3, 64, 64] float32",
      inputExpr: "torch.randn(1, 3, 64, 64)",
      inputKind: "guess",
      error: { type: "RuntimeError", message: "mat1 and mat2 shapes cannot be multiplied", file: "/w/net.py", line: 30 },
    });
    const x = extension([() => guessed, (p) => ok({ input: p.input!, inputExpr: p.input!, inputKind: "typed" })]);
    vs.answers.push(undefined, "torch.randn(1, 3, 32, 32)"); // the notification, then the box
    const r = await x.commands.visualize({ uri: uri(), target: "Net" });
    assert.equal(r?.summary?.inputKind, "typed");
    const box = inputBoxes()[0]!;
    assert.equal(box.value, "torch.randn(1, 3, 64, 64)");
    assert.equal(box.placeHolder, "torch.randn(1, 3, 64, 64)");
    assert.match(box.prompt!, /guessed input \(guessed from Conv2d\(3, …\): tensor \[1, 3, 64, 64\] float32\) may be wrong/);
    assert.match(box.prompt!, /Net raised RuntimeError at line 30: mat1 and mat2/);
    assert.deepEqual(
      calls("showWarningMessage").map((c) => c.args),
      [
        [
          "torchscope: Net raised RuntimeError with a guessed input (guessed from Conv2d(3, …): tensor [1, 3, 64, 64] float32): the guess may be wrong.",
          "Go to Line",
        ],
      ],
      "not reported as a broken model",
    );
    assert.deepEqual(
      x.sent.map((p) => p.input ?? null),
      [null, "torch.randn(1, 3, 32, 32)"],
    );
    assert.equal(vs.panels.length, 1);
  });

  it("needs-input with the server's guess: the box starts with it and its placeholder is the guess", async () => {
    pyDoc("/w/net.py");
    const x = extension([
      failWith("needs-input", "forward(q, k, mask) takes 3 tensors: give them as a tuple", {
        guess: "(torch.randn(1, 8, 16), torch.randn(1, 8, 16), torch.ones(1, 8, dtype=torch.bool))",
      }),
    ]);
    vs.answers.push(undefined);
    await x.commands.visualize({ uri: uri(), target: "Attn" });
    const box = inputBoxes()[0]!;
    assert.equal(box.value, "(torch.randn(1, 8, 16), torch.randn(1, 8, 16), torch.ones(1, 8, dtype=torch.bool))");
    assert.equal(box.placeHolder, box.value);
    assert.equal(box.prompt, "forward(q, k, mask) takes 3 tensors: give them as a tuple");
  });

  it("a model that needs a GPU: the meta device is offered, with its line; on meta too: only the line", async () => {
    pyDoc("/w/gpu.py");
    const cuda = { type: "AssertionError", message: "Torch not compiled with CUDA enabled", file: "/w/gpu.py", line: 10 };
    const x = extension([() => ok({ error: cuda, inputKind: "typed" }), () => ok({ error: cuda })]);
    vs.answers.push("Trace on Meta Device", undefined);
    await x.commands.visualize({ uri: uri("/w/gpu.py"), target: "Net" });
    const [first, second] = calls("showWarningMessage");
    assert.equal(
      first!.args[0],
      "torchscope: Net needs a GPU (line 10 of gpu.py): AssertionError: Torch not compiled with CUDA enabled. Trace it on the meta device (shapes only, no GPU needed)?",
    );
    assert.deepEqual(first!.args.slice(1), ["Trace on Meta Device", "Go to Line"]);
    assert.deepEqual(
      x.sent.map((p) => p.device ?? "cpu"),
      ["cpu", "meta"],
    );
    assert.match(String(second!.args[0]), /needs a GPU \(line 10 of gpu\.py\), also on the meta device/);
    assert.deepEqual(second!.args.slice(1), ["Go to Line"]);
  });

  it("a graph traced on the meta device: the panel says so and Re-trace keeps it", async () => {
    // QA: Re-trace went back to the CPU (timed out, asked again), the panel never said "meta"
    pyDoc("/w/gpu.py");
    const cuda = { type: "AssertionError", message: "Torch not compiled with CUDA enabled", file: "/w/gpu.py", line: 10 };
    const x = extension([() => ok({ error: cuda, inputKind: "typed" }), () => ok(), () => ok()]);
    vs.answers.push("Trace on Meta Device");
    await x.commands.visualize({ uri: uri("/w/gpu.py"), target: "Net" });
    const panel = GraphPanel.all()[0]!;
    assert.match(panel.origin.input!.text, /; on the meta device \(shapes, no values\)$/);
    await x.commands.retrace();
    assert.deepEqual(
      x.sent.map((p) => p.device ?? "cpu"),
      ["cpu", "meta", "meta"],
    );
    assert.equal(vs.panels.length, 1);
  });

  it("a re-trace that stops on a question left unanswered marks the graph out of date", async () => {
    pyDoc("/w/slow.py");
    const x = extension([() => ok(), failWith("slow-build", "Net takes long to build here (past 4 s, stopped while building it)")]);
    await x.commands.visualize({ uri: uri("/w/slow.py"), target: "Net" });
    const panel = vs.panels[0]!;
    panel.webview.receive({ type: "ready" });
    vs.answers.push(undefined); // the meta device declined
    await x.commands.retrace();
    const stale = panel.webview.posted.filter((m) => (m as { type?: string }).type === "stale");
    assert.equal(stale.length, 1, "the panel says its graph is out of date");
    assert.match(JSON.stringify(stale[0]), /takes long to build/);
  });

  it("Change Input… with an input that fails, then Escape: the graph is not out of date", async () => {
    // (a review: the second box's Escape marked a graph that still matched its code stale)
    pyDoc("/w/net.py");
    const x = extension([() => ok(), failWith("needs-input", "the input torch.oops(1) failed: AttributeError")]);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    const panel = vs.panels[0]!;
    panel.webview.receive({ type: "ready" });
    vs.answers.push("torch.oops(1)", undefined);
    await x.flow.changeInput(GraphPanel.all()[0]!);
    assert.equal(x.sent.length, 2);
    assert.equal(panel.webview.posted.filter((m) => (m as { type?: string }).type === "stale").length, 0);
  });

  it("Change Input…, then another question left unanswered: the graph is out of date", async () => {
    // (a review: only the input's own boxes are Change Input's; the class now needing
    // constructor arguments is the code changing under the graph)
    pyDoc("/w/net.py");
    const x = extension([() => ok(), failWith("needs-ctor-args", "Net() needs arguments: dim", { params: "dim" })]);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    const panel = vs.panels[0]!;
    panel.webview.receive({ type: "ready" });
    vs.answers.push("torch.randn(2, 8)", undefined);
    await x.flow.changeInput(GraphPanel.all()[0]!);
    assert.equal(panel.webview.posted.filter((m) => (m as { type?: string }).type === "stale").length, 1);
  });

  it("building a model that asks for CUDA: the same question, with the user's line from the traceback", async () => {
    pyDoc("/w/gpu.py");
    const details =
      'Traceback:\n  File "/w/gpu.py", line 16, in __init__\n  File "/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 310\n';
    const x = extension([
      failWith("target-error", "building Built raised AssertionError: Torch not compiled with CUDA enabled", { details }),
      () => ok(),
    ]);
    vs.answers.push("Trace on Meta Device");
    await x.commands.visualize({ uri: uri("/w/gpu.py"), target: "Built" });
    assert.match(messages("showWarningMessage")[0]!, /^torchscope: Built needs a GPU \(line 16 of gpu\.py\): building Built raised/);
    assert.equal(x.sent[1]!.device, "meta");
    assert.equal(messages("showErrorMessage").length, 0);
  });

  it("a model too big for memory (the system stopped the runner): the meta device is offered", async () => {
    pyDoc("/w/huge.py");
    const x = extension([
      failWith(
        "runner-crashed",
        "the Python runner was killed by SIGKILL (most likely out of memory: the system stops a process that takes more than there is)",
      ),
      () => ok(),
    ]);
    vs.answers.push("Trace on Meta Device");
    await x.commands.visualize({ uri: uri("/w/huge.py"), target: "Huge" });
    assert.match(messages("showWarningMessage")[0]!, /^torchscope: Huge does not fit in memory here: the Python runner was killed by SIGKILL/);
    assert.deepEqual(
      x.sent.map((p) => p.device ?? "cpu"),
      ["cpu", "meta"],
    );
    assert.equal(messages("showErrorMessage").length, 0);
  });

  it("what a trace could not undo: a warning, in the log too", async () => {
    pyDoc("/w/net.py");
    const x = extension([() => ok({ warnings: ["fc.weight was replaced by a new Parameter"] })]);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    assert.equal(
      messages("showWarningMessage")[0],
      "torchscope: tracing Net left changes it could not undo: fc.weight was replaced by a new Parameter",
    );
    assert.ok(x.log.lines.includes("warn tracing Net left changes it could not undo: fc.weight was replaced by a new Parameter"));
  });

  it("one log line per trace: a forward that raised is a warning that says so", async () => {
    pyDoc("/w/net.py");
    const x = extension([() => ok({ error: { type: "RuntimeError", message: "bad", file: "/w/net.py", line: 3 }, inputKind: "typed" })]);
    await x.commands.visualize({ uri: uri(), target: "Net" });
    const traced = x.log.lines.filter((l) => / traced /.test(` ${l}`));
    assert.equal(traced.length, 1);
    assert.match(traced[0]!, /^warn traced Net: the forward raised RuntimeError: bad at net\.py:3; /);
  });

  it("the cursor on no model: the file's models in a quick pick", async () => {
    const doc = pyDoc("/w/net.py");
    const x = extension([(p) => ok({ model: p.target })]);
    vs.window.activeTextEditor = { document: doc, selection: { active: new vs.Position(0, 0) } };
    (x.commands as unknown as { deps: { client: Server } }).deps.client.targetAt = async () => null;
    (x.commands as unknown as { deps: { client: Server } }).deps.client.targets = async () => [
      { target: "Net", kind: "class", line: 3 },
      { target: "model", kind: "instance", line: 20 },
    ];
    vs.answers.push({ label: "model", target: "model" });
    await x.commands.visualize();
    const items = calls("showQuickPick")[0]!.args[0] as { label: string; description: string }[];
    assert.deepEqual(
      items.map((i) => [i.label, i.description]),
      [
        ["Net", "nn.Module class · line 4"],
        ["model", "model built at import · line 21"],
      ],
    );
    assert.deepEqual(
      x.sent.map((p) => p.target),
      ["model"],
    );
  });

  it("Restart language server says when it is back, with the interpreter", async () => {
    const x = extension();
    let restarted = 0;
    (x.commands as unknown as { deps: { client: Server } }).deps.client.restart = async () => void restarted++;
    await x.commands.restartServer();
    assert.equal(restarted, 1);
    assert.equal(
      messages("showInformationMessage")[0],
      "torchscope: the language server is running again with /venv/bin/python (torchscope.pythonPath).",
    );
  });

  it("a paused model with no input: the typed-input box starts with the candidate's guess", async () => {
    pausedSession(traces());
    const x = extension();
    const frame = await x.paused.pausedFrame();
    vs.answers.push({ id: "type" }, undefined);
    await x.flow.run(x.paused.source(x.paused.bridge(frame!), "self.net", "net", "torch.randn(1, 64)"), { askFirst: true });
    const box = inputBoxes()[0]!;
    assert.deepEqual([box.value, box.placeHolder], ["torch.randn(1, 64)", "torch.randn(1, 64)"]);
  });
});

describe("export's saved notice", () => {
  it("Open shows an image in VS Code and a page in the browser", async () => {
    const { saveAs } = await import("../../../extension/src/export");
    for (const [name, mime, api] of [
      ["g.svg", "image/svg+xml", "executeCommand"],
      ["g.html", "text/html", "openExternal"],
    ] as const) {
      vs.reset();
      vs.answers.push(vs.Uri.file(`/out/${name}`), "Open");
      await saveAs(name, mime, new Uint8Array([1]));
      await settle();
      assert.deepEqual(calls("showInformationMessage")[0]!.args, [`torchscope: saved ${name}`, "Open"]);
      const opened = calls(api)[0]!;
      assert.ok(opened, `${name}: ${api}`);
      const target = (api === "executeCommand" ? opened.args[1] : opened.args[0]) as { fsPath: string };
      assert.equal(target.fsPath, `/out/${name}`);
      if (api === "executeCommand") assert.equal(opened.args[0], "vscode.open");
    }
  });
});
