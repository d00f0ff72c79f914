// What a screen reader is told of a drawn box (webview/src/speech.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible } from "../../../webview/src/visible";
import { initialExpansion } from "../../../webview/src/expansion";
import { spokenName } from "../../../webview/src/speech";
import { GraphBuilder } from "./builder";

test("a box is said with its kind, name, path and its distinct shapes in → out", () => {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const fc = b.module("Block", "fc", root);
  const mul = b.op("mul", fc);
  const add = b.op("add", fc);
  const out = b.add("output", "output");
  b.edge(x, mul, [4, 32]).edge(x, add, [4, 32]).edge(mul, add, [4, 32]).edge(add, out, [4, 8]);
  const idx = buildIndex(b.build());
  const vg = buildVisible(idx, initialExpansion(idx));
  // x read twice inside fc is one tensor, said once
  assert.equal(spokenName(idx, vg, `n${fc}`), "module Block fc, 4×32 → 4×8");
  assert.equal(spokenName(idx, vg, `n${x}`), "input x, out 4×32");
  assert.equal(spokenName(idx, vg, `n${out}`), "output output, in 4×8");
  assert.equal(spokenName(idx, vg, "n9999"), null);
});
