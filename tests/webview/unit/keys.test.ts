// The viewer's keys and toolbar buttons (webview/src/keys.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { buttonAction, graphKeyAction, keyAction, readingOrder, searchKeyAction, stepIn, type KeyPress } from "../../../webview/src/keys";

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

test("a control with the focus keeps its letters and digits; / and Esc still work", () => {
  for (const k of ["f", "e", "c", "0", "3", "n", "p"]) assert.equal(keyAction(press(k, { inControl: true })), null, k);
  assert.deepEqual(keyAction(press("/", { inControl: true })), { type: "find", selectText: false });
  assert.deepEqual(keyAction(press("Escape", { inControl: true })), { type: "clear" });
  assert.deepEqual(keyAction(press("f", { ctrlKey: true, inControl: true })), { type: "find", selectText: true });
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

test("with the graph focused, arrows walk its boxes, Enter is a click, Space / + / − open and close", () => {
  const on = (key: string, mods: Partial<KeyPress> = {}) => graphKeyAction(press(key, mods));
  assert.deepEqual(on("ArrowDown"), { type: "move", step: 1 });
  assert.deepEqual(on("ArrowRight"), { type: "move", step: 1 });
  assert.deepEqual(on("ArrowUp"), { type: "move", step: -1 });
  assert.deepEqual(on("ArrowLeft"), { type: "move", step: -1 });
  assert.deepEqual(on("Enter"), { type: "activate" });
  assert.deepEqual(on(" "), { type: "toggle" });
  // (QA: + closed an open frame, − opened a closed box)
  for (const k of ["+", "="]) assert.deepEqual(on(k), { type: "open" });
  assert.deepEqual(on("-"), { type: "close" });
  assert.equal(on("e"), null, "the page's own keys still apply");
  assert.equal(on("ArrowDown", { altKey: true }), null);
  // ] and [ zoom (+ and − open and close); AltGr (Ctrl+Alt) types them on some layouts
  assert.deepEqual(on("]"), { type: "zoom", step: 1 });
  assert.deepEqual(on("["), { type: "zoom", step: -1 });
  assert.deepEqual(on("]", { ctrlKey: true, altKey: true }), { type: "zoom", step: 1 });
  assert.equal(on("[", { ctrlKey: true }), null);
  assert.equal(on("]", { metaKey: true }), null);
});

test("reading order runs top to bottom, then left to right, and steps wrap", () => {
  const order = readingOrder([
    { key: "n5", x: 50, y: 100 },
    { key: "n1", x: 0, y: 0 },
    { key: "n3", x: 90, y: 40 },
    { key: "n2", x: 10, y: 40 },
  ]);
  assert.deepEqual(order, ["n1", "n2", "n3", "n5"]);
  assert.equal(stepIn(order, null, 1), "n1");
  assert.equal(stepIn(order, null, -1), "n5");
  assert.equal(stepIn(order, "n2", 1), "n3");
  assert.equal(stepIn(order, "n5", 1), "n1");
  assert.equal(stepIn(order, "n1", -1), "n5");
  assert.equal(stepIn(order, "gone", 1), "n1", "a selection no longer drawn starts again");
  assert.equal(stepIn([], "n1", 1), null);
});

test("a row reads left to right whatever the heights of its boxes (QA: wpe before view)", () => {
  // boxes of one row share their middle; a taller box's top is higher: it came first
  const order = readingOrder([
    { key: "tall", x: 600, y: 90, h: 60 },
    { key: "short", x: 500, y: 105, h: 30 },
    { key: "frame", x: 0, y: 20, h: 400, frame: true }, // a frame: read at its top, before its boxes
    { key: "below", x: 0, y: 200, h: 30 },
  ]);
  assert.deepEqual(order, ["frame", "short", "tall", "below"]);
});
