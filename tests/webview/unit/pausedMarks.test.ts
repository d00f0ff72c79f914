import assert from "node:assert/strict";
import { test } from "node:test";
import { buildIndex } from "../../../webview/src/model";
import { pausedKeys, pausedNodes } from "../../../webview/src/pausedMarks";
import { GraphBuilder } from "./builder";

const F = "/w/net.py";
const L = "/lib/torch/nn/modules/linear.py";
const at = (line: number, func = "forward") => ({ file: F, line, func });
const site = (line: number, func = "forward", file = F) => ({ site: { file, line, func } });

/** x → Net{ fc1 (line 10) {linear}, relu (11), fc2 (12) {linear}, add (13) } → output */
function net() {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const fc1 = b.add("module", "Linear", root, { path: "fc1", ...site(10) });
  const lin1 = b.add("op", "linear", fc1, site(125, "forward", L));
  const relu = b.add("op", "relu", root, site(11));
  const fc2 = b.add("module", "Linear", root, { path: "fc2", ...site(12) });
  const lin2 = b.add("op", "linear", fc2, site(125, "forward", L));
  const add = b.add("op", "add", root, site(13));
  const out = b.add("output", "output", null);
  return { idx: buildIndex(b.build()), ids: { x, root, fc1, lin1, relu, fc2, lin2, add, out } };
}

test("the paused line's calls (with what runs inside them) are here; later calls are ahead", () => {
  const { idx, ids } = net();
  const p = pausedNodes(idx, at(12));
  assert.deepEqual(p.here, [ids.fc2, ids.lin2]);
  // The root call encloses the paused point: neither run nor ahead.
  assert.deepEqual(p.ahead, [ids.add, ids.out]);
});

test("a line that made nothing: what comes after it in the function is ahead, nothing is here", () => {
  const { idx, ids } = net();
  const p = pausedNodes(idx, at(9));
  assert.deepEqual(p.here, []);
  assert.deepEqual(p.ahead, [ids.fc1, ids.lin1, ids.relu, ids.fc2, ids.lin2, ids.add, ids.out]);
  // Past the last line that made tensors (the return): everything has run.
  assert.deepEqual(pausedNodes(idx, at(14)), { here: [], ahead: [] });
});

test("another function's line with the same number, or another file, marks nothing", () => {
  const { idx, ids } = net();
  assert.deepEqual(pausedNodes(idx, at(12, "helper")), { here: [], ahead: [] });
  assert.deepEqual(pausedNodes(idx, { file: "/w/other.py", line: 12 }), { here: [], ahead: [] });
  // A debugger's qualified frame name is the same function.
  assert.deepEqual(pausedNodes(idx, at(12, "Net.forward")).here, [ids.fc2, ids.lin2]);
});

test("a line of a block's forward run by two block calls marks the first call only", () => {
  const b = new GraphBuilder();
  const root = b.module("Net", "", null);
  const b0 = b.add("module", "Block", root, { path: "blocks.0", ...site(20) });
  const r0 = b.add("op", "relu", b0, site(5, "forward"));
  const m0 = b.add("op", "mul", b0, site(6, "forward"));
  const b1 = b.add("module", "Block", root, { path: "blocks.1", ...site(20) });
  const r1 = b.add("op", "relu", b1, site(5, "forward"));
  const m1 = b.add("op", "mul", b1, site(6, "forward"));
  const idx = buildIndex(b.build());
  const p = pausedNodes(idx, at(5));
  assert.deepEqual(p.here, [r0]);
  assert.deepEqual(p.ahead, [m0, b1, r1, m1]);
});

test("drawn keys: a collapsed box is here when it hides a call of the line, ahead only when all of it is", () => {
  const { idx, ids } = net();
  const p = pausedNodes(idx, at(12));
  // fc2 collapsed (its linear drawn by it), the rest drawn as themselves.
  const rep = idx.graph.nodes.map((n) => `n${n.id === ids.lin2 ? ids.fc2 : n.id === ids.lin1 ? ids.fc1 : n.id}`);
  const k = pausedKeys(rep, p);
  assert.deepEqual([...k.here], [`n${ids.fc2}`]);
  assert.deepEqual([...k.ahead].sort(), [`n${ids.add}`, `n${ids.out}`].sort());
  // The whole model collapsed into its root box: here, never ahead.
  const all = idx.graph.nodes.map((n) => (n.id === ids.x || n.id === ids.out ? `n${n.id}` : `n${ids.root}`));
  const k2 = pausedKeys(all, p);
  assert.deepEqual([...k2.here], [`n${ids.root}`]);
  assert.deepEqual([...k2.ahead], [`n${ids.out}`]);
});
