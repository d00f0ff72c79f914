// A hover's "Show in graph" (torchscope.revealNode) and "Open graph file…" with the panels
// closed, a comparison open, a graph file never traced here: which panel shows the node, under
// which title and key, and what its Re-trace does. The extension's wiring with the vscode stub
// and a fake language server (as compare.test.ts).
// First: vscode.debug on the stub before the extension's modules load.
import "./debug-fake";
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, it } from "node:test";
import { encode } from "@msgpack/msgpack";
import * as vs from "./vscode-stub";
import { GraphOrigins, GraphPanel } from "../../../extension/src/graphPanel";
import type { CompareParams, CompareResult, RevealNodeArgs, TraceParams, TraceSummary } from "../../../extension/src/protocol";
import { comparedNodes, registerRevealNode } from "../../../extension/src/revealNode";
import { SUMMARY, fakeServer, messages, pyDoc, resetWiring, run, wiredExtension } from "./wiring";

const GRAPH = Buffer.from([0x81, 0xa1, 0x61, 0x01]);
// A compare view: merged node i is a's a_ids[i] and b's b_ids[i] (docs/graph-format.md).
const COMPARED = Buffer.from(encode({ format: "torchscope.graph", compare: { a_ids: [0, 1, null, 2, 3], b_ids: [0, null, 1, 2, 3] } }));
const summary: TraceSummary = { ...SUMMARY, input: "torch.randn(2, 16)", inputExpr: "torch.randn(2, 16)" };

/** The extension's wiring with a fake server: each trace writes a graph file, a comparison its view. */
function extension() {
  const out = mkdtempSync(join(tmpdir(), "torchscope-show-out-"));
  const traced: Omit<TraceParams, "workDoneToken">[] = [];
  const compared: CompareParams[] = [];
  const server = fakeServer({
    trace: async (p, _cancel, progress) => {
      traced.push(p);
      progress("Tracing");
      // named as the server names its files: not the model's panel title
      const path = join(out, `Net-980-17965237${traced.length}-10.msgpack`);
      writeFileSync(path, GRAPH);
      return { path, size: GRAPH.length, summary };
    },
    compare: async (p) => {
      compared.push(p);
      const path = join(out, `compare-${compared.length}.msgpack`);
      writeFileSync(path, COMPARED);
      const r: CompareResult = { path, size: COMPARED.length, summary: { added: 1, removed: 1, changed: 0, same: 3, changes: 2, model: "Net" } };
      return r;
    },
  });
  const w = wiredExtension(server);
  w.compareCommands.register();
  w.commands.register();
  registerRevealNode(w.flow, w.log as never);
  return { ...w, traced, compared, out };
}

const showInGraph = (a: RevealNodeArgs) => run("torchscope.revealNode", [a]);

/** The stub panel of a GraphPanel (by its title). */
const stubOf = (p: GraphPanel) => vs.panels.find((s) => !s.disposed && s.title === p.title)!;

/** What a panel's viewer was sent after it said "ready": the revealNode messages. */
function revealed(p: GraphPanel): unknown[] {
  const w = stubOf(p).webview;
  w.receive({ type: "ready" });
  return w.posted.filter((m) => (m as { type: string }).type === "revealNode");
}

/** Real VS Code refuses a binary file as a text document ("File seems to be binary"). */
function binaryFilesRefused(): void {
  const open = vs.workspace.openTextDocument;
  vs.workspace.openTextDocument = (uri: vs.Uri) =>
    uri.fsPath.endsWith(".msgpack") ? Promise.reject(new Error("File seems to be binary and cannot be opened as text")) : open(uri);
  restore = () => (vs.workspace.openTextDocument = open);
}
let restore = (): void => undefined;

beforeEach(() => {
  restore();
  resetWiring();
  GraphPanel.graphs.clear();
  vs.commands.registered.clear();
});

describe("Show in graph", () => {
  it("with the model's panel closed: reopens the model's panel (its title, document and target), which re-traces the model", async () => {
    binaryFilesRefused();
    const doc = pyDoc("/w/net.py");
    const x = extension();
    const t = (await x.commands.visualize({ uri: doc.uri.toString(), target: "Net" }))!;
    assert.equal(GraphPanel.all().length, 1);
    vs.panels[0]!.dispose(); // the user closes "Forward pass: Net"
    assert.equal(GraphPanel.all().length, 0);

    await showInGraph({ graph: t.path, node: 2, nodes: [2, 3] });
    const [p] = GraphPanel.all();
    assert.ok(p, "a panel again");
    assert.equal(GraphPanel.all().length, 1);
    assert.equal(p.title, "Forward pass: Net");
    assert.equal(vs.panels.at(-1)!.title, "Forward pass: Net", "the tab's title");
    assert.deepEqual([p.origin.uri, p.origin.target, p.origin.graphPath], [doc.uri.toString(), "Net", t.path]);
    assert.equal(p.origin.input?.expr, "torch.randn(2, 16)", "the input bar says what it was traced with");
    assert.deepEqual(revealed(p), [{ type: "revealNode", node: 2, nodes: [2, 3] }]);

    // Its Re-trace traces the model from its document, in the same panel.
    await x.commands.retrace();
    assert.deepEqual(messages("showWarningMessage"), []);
    assert.deepEqual(messages("showInformationMessage"), []);
    assert.deepEqual(
      x.traced.map((q) => [q.uri, q.target]),
      [
        [doc.uri.toString(), "Net"],
        [doc.uri.toString(), "Net"],
      ],
    );
    assert.equal(GraphPanel.all().length, 1);
    assert.notEqual(p.origin.graphPath, t.path, "the new graph");
  });

  it("a trace whose graph file is gone since: says so, and leaves no empty panel", async () => {
    const doc = pyDoc("/w/net.py");
    const x = extension();
    const t = (await x.commands.visualize({ uri: doc.uri.toString(), target: "Net" }))!;
    vs.panels[0]!.dispose();
    rmSync(t.path);
    await showInGraph({ graph: t.path, node: 2 });
    assert.equal(GraphPanel.all().length, 0);
    assert.match(messages("showErrorMessage")[0]!, /the graph of that trace is gone .*: trace again/);
  });

  it("with the model's panel open: that panel, no other", async () => {
    const doc = pyDoc("/w/net.py");
    const x = extension();
    const t = (await x.commands.visualize({ uri: doc.uri.toString(), target: "Net" }))!;
    const [p] = GraphPanel.all();
    await showInGraph({ graph: t.path, node: 1 });
    assert.equal(GraphPanel.all().length, 1);
    assert.equal(GraphPanel.all()[0], p);
    assert.deepEqual(revealed(p!), [{ type: "revealNode", node: 1 }]);
  });

  it("a side of an open comparison: the comparison panel comes forward, at the merged node", async () => {
    const doc = pyDoc("/w/net.py");
    const x = extension();
    await run("torchscope.compareWithTraining", { uri: doc.uri.toString(), target: "Net" });
    const [c] = GraphPanel.all();
    assert.equal(c?.title, "Compare Net: eval mode → training mode");
    const [a, b] = [x.compared[0]!.a, x.compared[0]!.b];
    const before = stubOf(c!).revealed;
    assert.deepEqual(revealed(c!), [], "(its viewer is ready)");

    // b's node 1 is merged node 2; a's node 1 is merged node 1 (a ghost)
    await showInGraph({ graph: b, node: 1, nodes: [1, 2] });
    assert.equal(GraphPanel.all().length, 1, "no stray panel");
    assert.ok(stubOf(c!).revealed > before, "brought forward");
    await showInGraph({ graph: a, node: 1 });
    assert.equal(GraphPanel.all().length, 1);
    assert.deepEqual(
      stubOf(c!).webview.posted.filter((m) => (m as { type: string }).type === "revealNode"),
      [
        { type: "revealNode", node: 2, nodes: [2, 3] },
        { type: "revealNode", node: 1, nodes: [1] },
      ],
    );
  });

  it("a side of a closed comparison: the comparison panel again, which compares again on Re-trace", async () => {
    binaryFilesRefused();
    const doc = pyDoc("/w/net.py");
    const x = extension();
    await run("torchscope.compareWithTraining", { uri: doc.uri.toString(), target: "Net" });
    const b = x.compared[0]!.b;
    vs.panels[0]!.dispose();
    assert.equal(GraphPanel.all().length, 0);

    await showInGraph({ graph: b, node: 3 });
    const [c] = GraphPanel.all();
    assert.equal(GraphPanel.all().length, 1);
    assert.equal(c?.title, "Compare Net: eval mode → training mode");
    assert.deepEqual([c!.origin.uri, c!.origin.target], [doc.uri.toString(), "compare:train:Net"]);
    assert.deepEqual(revealed(c!), [{ type: "revealNode", node: 4, nodes: [4] }], "b's node 3 is the view's 4");
    await x.commands.retrace();
    assert.deepEqual(messages("showWarningMessage"), []);
    assert.equal(x.compared.length, 2, "compared again");
    assert.equal(x.traced.length, 4);
  });

  it("a graph never shown in this window: a panel of the graph file, whose Re-trace says there is no code", async () => {
    binaryFilesRefused();
    const x = extension();
    const graph = join(x.out, "cli.msgpack");
    writeFileSync(graph, GRAPH);
    await showInGraph({ graph, node: 0 });
    const [p] = GraphPanel.all();
    assert.equal(p?.title, "Forward pass: cli");
    assert.deepEqual(revealed(p!), [{ type: "revealNode", node: 0 }]);
    await x.commands.retrace();
    assert.deepEqual(messages("showWarningMessage"), []);
    assert.deepEqual(messages("showInformationMessage"), ["torchscope: this panel shows a graph file; there is no code to re-trace."]);
  });
});

describe("Open graph file…", () => {
  it("a graph file of the command line: its Re-trace says there is no code to re-trace (not “can't be opened”)", async () => {
    binaryFilesRefused();
    const x = extension();
    const graph = join(x.out, "m.msgpack");
    writeFileSync(graph, GRAPH);
    const p = (await x.commands.openGraph(graph))!;
    assert.equal(p.title, "Forward pass: m");
    await x.commands.retrace();
    assert.deepEqual(messages("showWarningMessage"), []);
    assert.deepEqual(messages("showInformationMessage"), ["torchscope: this panel shows a graph file; there is no code to re-trace."]);
    assert.equal(x.traced.length, 0);
  });

  it("a graph a panel of this window traced: the model's panel again, whose Re-trace traces the model", async () => {
    binaryFilesRefused();
    const doc = pyDoc("/w/net.py");
    const x = extension();
    const t = (await x.commands.visualize({ uri: doc.uri.toString(), target: "Net" }))!;
    vs.panels[0]!.dispose();
    const p = (await x.commands.openGraph(t.path))!;
    assert.equal(p.title, "Forward pass: Net");
    assert.deepEqual([p.origin.uri, p.origin.target], [doc.uri.toString(), "Net"]);
    await x.commands.retrace();
    assert.deepEqual(messages("showWarningMessage"), []);
    assert.equal(x.traced.length, 2);
  });
});

describe("the graphs a window showed", () => {
  it("remembers the last ones only, a graph shown again as new", () => {
    const g = new GraphOrigins(3);
    const origin = (n: number) => ({ uri: "file:///w/m.py", target: `M${n}`, title: `Forward pass: M${n}` });
    for (let n = 1; n <= 4; n++) g.shown(`/g/${n}.msgpack`, origin(n));
    assert.equal(g.of("/g/1.msgpack"), undefined);
    assert.equal(g.of("/g/2.msgpack")?.origin?.target, "M2");
    g.shown("/g/2.msgpack", origin(2)); // the newest now
    g.side("/g/5.msgpack", "/g/c.msgpack", "b");
    assert.equal(g.of("/g/3.msgpack"), undefined);
    assert.deepEqual(g.of("/g/5.msgpack")?.side, { of: "/g/c.msgpack", side: "b" });
    assert.equal(g.of("/g/2.msgpack")?.origin?.target, "M2");
  });

  it("maps a side's node to the compare view's", () => {
    assert.deepEqual(comparedNodes(COMPARED, "b", 1, [1, 2, 9]), { node: 2, nodes: [2, 3] });
    assert.deepEqual(comparedNodes(COMPARED, "a", 1, undefined), { node: 1, nodes: [1] });
    assert.deepEqual(comparedNodes(COMPARED, "a", 9, [9, 3]), { node: 4, nodes: [4] }, "the first node that is there");
    assert.equal(comparedNodes(COMPARED, "a", 9, undefined), undefined);
    assert.equal(comparedNodes(GRAPH, "a", 0, undefined), undefined, "not a compare view");
  });
});
