// The viewer's keys and toolbar buttons (webview/src/keys.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { buttonAction, keyAction, searchKeyAction, type KeyPress } from "../../../webview/src/keys";

const press = (key: string, mods: Partial<KeyPress> = {}): KeyPress => ({
  key,
  ctrlKey: false,
  metaKey: false,
  altKey: false,
  inTextField: false,
  ...mods,
});

test("single keys on the graph", () => {
  assert.deepEqual(keyAction(press("f")), { type: "fit" });
  assert.deepEqual(keyAction(press("F")), { type: "fit" });
  assert.deepEqual(keyAction(press("e")), { type: "expand-all" });
  assert.deepEqual(keyAction(press("C")), { type: "collapse-all" });
  assert.deepEqual(keyAction(press("0")), { type: "initial-view" });
  assert.deepEqual(keyAction(press("3")), { type: "depth", depth: 3 });
  assert.deepEqual(keyAction(press("/")), { type: "find", selectText: false });
  assert.deepEqual(keyAction(press("Escape")), { type: "clear" });
  assert.equal(keyAction(press("x")), null);
  assert.equal(keyAction(press("ArrowDown")), null);
});

test("Ctrl+F and Cmd+F search the graph, even from the search box", () => {
  assert.deepEqual(keyAction(press("f", { ctrlKey: true })), { type: "find", selectText: true });
  assert.deepEqual(keyAction(press("F", { metaKey: true, inTextField: true })), { type: "find", selectText: true });
});

test("letters typed in the search box, or with a modifier, are not commands", () => {
  for (const k of ["f", "e", "c", "0", "3", "/", "Escape"]) assert.equal(keyAction(press(k, { inTextField: true })), null, k);
  assert.equal(keyAction(press("e", { ctrlKey: true })), null);
  assert.equal(keyAction(press("c", { metaKey: true })), null, "Cmd+C copies");
  assert.equal(keyAction(press("3", { altKey: true })), null);
});

test("toolbar buttons", () => {
  assert.deepEqual(buttonAction("expand-all"), { type: "expand-all" });
  assert.deepEqual(buttonAction("collapse-all"), { type: "collapse-all" });
  assert.deepEqual(buttonAction("fit"), { type: "fit" });
  assert.deepEqual(buttonAction("depth-up"), { type: "depth-step", step: 1 });
  assert.deepEqual(buttonAction("depth-down"), { type: "depth-step", step: -1 });
  assert.deepEqual(buttonAction("export-svg"), { type: "export", format: "svg" });
  assert.deepEqual(buttonAction("export-png"), { type: "export", format: "png" });
  assert.equal(buttonAction("bogus"), null);
});

test("the search box: Enter steps through the matches, Shift+Enter back, Escape leaves", () => {
  assert.deepEqual(searchKeyAction("Enter", false), { type: "step", step: 1 });
  assert.deepEqual(searchKeyAction("Enter", true), { type: "step", step: -1 });
  assert.deepEqual(searchKeyAction("Escape", false), { type: "leave" });
  assert.equal(searchKeyAction("a", false), null);
});
