// The paused decoder (webview/src/decodeSlices.ts) on every fixture the browser tests draw
// (tests/webview/make_fixtures.py: real traces of GPT-2, ResNet-50, T5, a compare page,
// crafted deep, flat and hostile graphs): exactly the Graph of fromObject(decode(bytes)).
// Here rather than in unit/ because it needs the fixtures `make webview-fixtures` writes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decode } from "@msgpack/msgpack";
import { decodeInSlices } from "../../../webview/src/decodeSlices";
import { fromObject } from "../../../webview/src/format";
import { FIXTURES } from "./browser";

test("every fixture: the paused decode gives the Graph of fromObject(decode(bytes))", async () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith(".msgpack"));
  for (const want of ["gpt2.msgpack", "t5.msgpack", "compare.msgpack", "flat50000.msgpack", "deep10000.msgpack"]) {
    assert.ok(files.includes(want), `${want} in ${FIXTURES}`);
  }
  for (const f of files) {
    const bytes = new Uint8Array(readFileSync(join(FIXTURES, f)));
    const got = await decodeInSlices(bytes, { sliceBytes: 4096, budgetMs: 0, pause: async () => undefined });
    assert.deepEqual(got, fromObject(decode(bytes)), f);
  }
});
