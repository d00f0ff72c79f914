// A node's library frame (`inside`: where an op ran inside torch, when `site` is the user's
// line that called it) and a graph's `warnings` (what the trace could not undo): decoded when
// present, absent otherwise, and the hover names the library frame.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encode } from "@msgpack/msgpack";
import { describe } from "../../../webview/src/details";
import { expandAll } from "../../../webview/src/expansion";
import { decodeGraph } from "../../../webview/src/format";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible } from "../../../webview/src/visible";
import { GraphBuilder } from "./builder";

function graphWithError() {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const relu = b.op("relu", root);
  const err = b.add("error", "linear", root, {
    target: "torch.nn.functional.linear",
    site: { file: "/w/net.py", line: 12, func: "forward" },
  });
  b.edge(x, relu).edge(relu, err);
  return { raw: b.build(), err };
}

test("decodes a node's library frame and the graph's warnings when present", () => {
  const { raw, err } = graphWithError();
  const nodes = raw.nodes.map((n) => (n.id === err ? { ...n, inside: { file: "/venv/torch/nn/modules/linear.py", line: 134, func: "forward" } } : n));
  const g = decodeGraph(encode({ ...raw, nodes, warnings: ["fc.weight was replaced", 3] }));
  assert.deepEqual(g.nodes[err]!.inside, { file: "/venv/torch/nn/modules/linear.py", line: 134, func: "forward" });
  assert.deepEqual(g.warnings, ["fc.weight was replaced", "3"]);
});

test("absent: no field at all (older graphs, nodes without a library frame)", () => {
  const { raw } = graphWithError();
  const g = decodeGraph(encode(raw));
  assert.ok(g.nodes.every((n) => !("inside" in n)));
  assert.deepEqual(g.warnings, []);
});

test("the hover shows the user's line and the library frame behind it", () => {
  const { raw, err } = graphWithError();
  raw.nodes[err]!.inside = { file: "/venv/torch/nn/modules/linear.py", line: 134, func: "forward" };
  const idx = buildIndex(decodeGraph(encode(raw)));
  const vg = buildVisible(idx, expandAll(idx));
  const rows = describe(idx, vg, `n${err}`)!.rows;
  assert.deepEqual(
    rows.filter(([k]) => k === "site" || k === "inside"),
    [
      ["site", "/w/net.py:12"],
      ["inside", "/venv/torch/nn/modules/linear.py:134 (forward)"],
    ],
  );
});
