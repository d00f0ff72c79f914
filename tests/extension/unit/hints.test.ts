// The extension's side of shapes in the code: the hover link's command arguments, the panel
// that holds a graph, the paused frame's place on its stack ("you are here") and what the
// panel posts to the viewer for them.
import { strict as assert } from "node:assert";
import { beforeEach, describe, it } from "node:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as vs from "./vscode-stub";
import { revealNodeArgs } from "../../../extension/src/protocol";
import { framesToMark, graphKey, placeOf, sourceFile, stillInCall, type DapFrame } from "../../../extension/src/pausedHere";
import { GraphPanel, type PanelEvents } from "../../../extension/src/graphPanel";
import { panelOf } from "../../../extension/src/revealNode";

const viewerDir = vs.Uri.file("/ext/viewer") as unknown as import("vscode").Uri;
const dir = mkdtempSync(join(tmpdir(), "torchscope-hints-"));
const graphA = join(dir, "a.msgpack");
const graphB = join(dir, "b.msgpack");
writeFileSync(graphA, Buffer.from([0x81, 0xa1, 0x61, 0x01]));
writeFileSync(graphB, Buffer.from([0x81, 0xa1, 0x62, 0x02]));

function events(): PanelEvents {
  return { reveal: () => undefined, save: () => undefined, retrace: () => undefined, changeInput: () => undefined, log: vs.logChannel() as never };
}

beforeEach(() => {
  for (const p of GraphPanel.all()) p.dispose();
  vs.reset();
});

describe("hover link arguments", () => {
  it("takes the array a command: link passes, or its one element", () => {
    const a = { graph: "/g/t.msgpack", node: 7, nodes: [7, 9] };
    assert.deepEqual(revealNodeArgs([a]), a);
    assert.deepEqual(revealNodeArgs(a), a);
    assert.deepEqual(revealNodeArgs([{ graph: "/g/t.msgpack", node: 0 }]), { graph: "/g/t.msgpack", node: 0 });
  });
  it("refuses what is not a node of a graph, and drops bad ids from nodes", () => {
    assert.equal(revealNodeArgs(undefined), undefined);
    assert.equal(revealNodeArgs([{ graph: "", node: 1 }]), undefined);
    assert.equal(revealNodeArgs([{ graph: "/g", node: -1 }]), undefined);
    assert.equal(revealNodeArgs([{ graph: "/g", node: "3" }]), undefined);
    assert.deepEqual(revealNodeArgs([{ graph: "/g", node: 3, nodes: [3, -2, 1.5, "x", 4] }]), { graph: "/g", node: 3, nodes: [3, 4] });
  });
});

describe("the panel of a graph", () => {
  it("is the one showing that file, the active one first", async () => {
    const a = GraphPanel.createOrShow(viewerDir, { uri: "file:///w/a.py", target: "A", title: "A" }, events());
    await a.load(graphA);
    const b = GraphPanel.createOrShow(viewerDir, { uri: "file:///w/b.py", target: "B", title: "B" }, events());
    await b.load(graphB);
    assert.equal(panelOf(graphA, GraphPanel.all(), b), a);
    assert.equal(panelOf(graphB, GraphPanel.all(), a), b);
    assert.equal(panelOf("/gone.msgpack", GraphPanel.all(), a), undefined);
  });

  it("reveals a node once its viewer has the graph, and posts the paused point after every graph", async () => {
    const panel = GraphPanel.createOrShow(viewerDir, { uri: "torchscope-debug:paused-frame", target: "self", title: "T" }, events());
    await panel.load(graphA);
    const w = vs.panels[0]!.webview;
    panel.revealNode(4, [4, 5]);
    panel.setPausedAt({ file: "/w/m.py", line: 12, func: "forward" });
    assert.equal(w.posted.length, 0, "nothing before ready");
    w.receive({ type: "ready" });
    assert.deepEqual(
      w.posted.map((m) => (m as { type: string }).type),
      ["graph", "pausedAt", "revealNode"],
    );
    assert.deepEqual(w.posted[1], { type: "pausedAt", at: { file: "/w/m.py", line: 12, func: "forward" } });
    assert.deepEqual(w.posted[2], { type: "revealNode", node: 4, nodes: [4, 5] });
    // A step moves the mark; a reload gets the graph and the point again, not the old reveal.
    panel.setPausedAt({ file: "/w/m.py", line: 13, func: "forward" });
    w.receive({ type: "ready" });
    assert.deepEqual(w.posted.slice(3), [
      { type: "pausedAt", at: { file: "/w/m.py", line: 13, func: "forward" } },
      w.posted[4],
      { type: "pausedAt", at: { file: "/w/m.py", line: 13, func: "forward" } },
    ]);
    assert.equal((w.posted[4] as { type: string }).type, "graph");
    // A new graph forgets the point until the paused trace says where it is.
    await panel.load(graphB);
    assert.deepEqual(
      w.posted.slice(6).map((m) => (m as { type: string }).type),
      ["graph"],
    );
    panel.setPausedAt(null);
    assert.equal(w.posted.length, 7, "clearing a point that is not set posts nothing");
  });
});

describe("you are here: the traced frame's call", () => {
  const frames = (lines: [string, string, number][]): DapFrame[] =>
    lines.map(([file, name, line], i) => ({ id: 100 + i, name, line, source: { path: file } }));
  const traced = frames([
    ["/w/m.py", "forward", 12],
    ["/t/module.py", "_call_impl", 1750],
    ["/w/train.py", "<module>", 40],
  ]);

  it("places a frame by its depth from the bottom of the stack", () => {
    assert.deepEqual(placeOf(traced, 3, 100, "s1", 1), { sessionId: "s1", threadId: 1, depth: 3, file: "/w/m.py", func: "forward", line: 12 });
    // a next call's graph: the frame it was armed in is gone; the frame paused now is tried
    const session = { id: "s1" };
    assert.deepEqual(framesToMark(100, { session, threadId: 1, frameId: 7 }, "s1"), [100, 7]);
    assert.deepEqual(framesToMark(100, { session, threadId: 1, frameId: 100 }, "s1"), [100]);
    assert.deepEqual(framesToMark(100, { session: { id: "s2" }, threadId: 1, frameId: 7 }, "s1"), [100]);
    assert.deepEqual(framesToMark(undefined, { session, threadId: 1 }, "s1"), []);
    assert.equal(placeOf(traced, 3, 999, "s1", 1), undefined);
  });

  it("follows a step in the same call, and a step into a callee keeps the calling line", () => {
    const place = placeOf(traced, 3, 100, "s1", 1)!;
    const stepped = frames([
      ["/w/m.py", "forward", 13],
      ["/t/module.py", "_call_impl", 1750],
      ["/w/train.py", "<module>", 40],
    ]);
    assert.equal(stillInCall(place, stepped, 3)?.line, 13);
    const into = frames([
      ["/w/m.py", "helper", 30],
      ["/w/m.py", "forward", 14],
      ["/t/module.py", "_call_impl", 1750],
      ["/w/train.py", "<module>", 40],
    ]);
    assert.equal(stillInCall(place, into, 4)?.line, 14);
  });

  it("reads the frame's file from a path or from the URI a browser-hosted VS Code gives", () => {
    assert.equal(sourceFile("/w/m.py"), "/w/m.py");
    assert.equal(sourceFile("vscode-remote://127.0.0.1:8080/tmp/w%20s/m.py"), "/tmp/w s/m.py");
    assert.equal(sourceFile("C:\\w\\m.py"), "C:\\w\\m.py");
    const remote = traced.map((f) => ({ ...f, source: { path: `vscode-remote://h:1${f.source!.path}` } }));
    assert.equal(placeOf(remote, 3, 100, "s1", 1)?.file, "/w/m.py");
    assert.equal(stillInCall(placeOf(traced, 3, 100, "s1", 1)!, remote, 3)?.file, "/w/m.py");
  });

  it("lets go when the program returned from the call", () => {
    const place = placeOf(traced, 3, 100, "s1", 1)!;
    const back = frames([
      ["/t/module.py", "_call_impl", 1750],
      ["/w/train.py", "<module>", 41],
    ]);
    assert.equal(stillInCall(place, back, 2), undefined);
    // Same depth, another function (the next module's forward): not this call.
    const other = frames([
      ["/w/other.py", "forward", 3],
      ["/t/module.py", "_call_impl", 1750],
      ["/w/train.py", "<module>", 41],
    ]);
    assert.equal(stillInCall(place, other, 3), undefined);
  });

  it("indexes each paused panel's graph under its own key", () => {
    assert.equal(graphKey("self"), "torchscope/paused:self");
    assert.notEqual(graphKey("self"), graphKey("self.model"));
  });
});
