// The viewer's camera math (webview/src/camera.ts): first view, fit, center, zoom to a box,
// a box kept still across a re-layout, what a transform shows.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  centerTransform,
  detailLevel,
  fitTransform,
  initialTransform,
  inputsCenterX,
  pinTransform,
  showsAll,
  toScreen,
  visibleRect,
  zoomToBox,
} from "../../../webview/src/camera";

const view = { w: 800, h: 600 };

test("a small graph starts centered at 100 %, never blown up past 125 %", () => {
  assert.deepEqual(initialTransform({ width: 200, height: 100 }, view, 50), { x: 275, y: 237.5, k: 1.25 });
  assert.deepEqual(initialTransform({ width: 752, height: 552 }, view, 50), { x: 24, y: 24, k: 1 });
});

test("a big graph starts at 100 % at the top, with the inputs in the middle across", () => {
  const t = initialTransform({ width: 3000, height: 9000 }, view, 1200);
  assert.deepEqual(t, { x: 400 - 1200, y: 24, k: 1 });
  assert.equal(toScreen(t, { x: 1200, y: 0 }).x, 400, "the inputs' middle is the view's middle");
});

test("the inputs' middle, or the graph's without inputs", () => {
  assert.equal(inputsCenterX([{ x: 100 }, { x: 300 }], 1000), 200);
  assert.equal(inputsCenterX([], 1000), 500);
});

test("fit shows the whole graph with a margin, at most 200 %, at least 2 %", () => {
  const t = fitTransform({ width: 1536, height: 100 }, view);
  assert.equal(t.k, 0.5);
  const r = visibleRect(t, view);
  assert.ok(showsAll(r, { width: 1536, height: 100 }));
  assert.equal(fitTransform({ width: 10, height: 10 }, view).k, 2);
  assert.equal(fitTransform({ width: 1e7, height: 10 }, view).k, 0.02);
});

test("center puts a layout point in the middle of the view", () => {
  const t = centerTransform(1000, 2000, 0.5, view);
  assert.deepEqual(toScreen(t, { x: 1000, y: 2000 }), { x: 400, y: 300 });
});

test("zoom to a box: fitted, never out from below 100 %, between 10 % and 200 %", () => {
  const small = zoomToBox({ x: 0, y: 0, w: 100, h: 50 }, 0.3, view);
  assert.equal(small.k, 1, "from 30 % in to 100 %");
  assert.deepEqual(toScreen(small, { x: 50, y: 25 }), { x: 400, y: 300 });
  assert.equal(zoomToBox({ x: 0, y: 0, w: 10, h: 10 }, 3, view).k, 2);
  assert.equal(zoomToBox({ x: 0, y: 0, w: 76_000, h: 10 }, 1, view).k, 0.1);
  // A box taller than the view: its top part, not its middle.
  const tall = zoomToBox({ x: 0, y: 0, w: 200, h: 5000 }, 1, view);
  assert.equal(tall.k, 0.112);
  assert.ok(toScreen(tall, { x: 0, y: 0 }).y >= 0, "the box's top is on screen");
});

test("a box pinned to where it was on screen", () => {
  const t = pinTransform({ x: 120, y: 40 }, { x: 300, y: 200 }, 1.5);
  assert.deepEqual(toScreen(t, { x: 120, y: 40 }), { x: 300, y: 200 });
  assert.equal(t.k, 1.5);
});

test("what a transform shows, and whether that is all of the graph", () => {
  const r = visibleRect({ x: -100, y: -50, k: 2 }, view);
  assert.deepEqual(r, { x: 50, y: 25, w: 400, h: 300 });
  assert.ok(!showsAll(r, { width: 400, height: 300 }));
  assert.ok(showsAll(visibleRect({ x: 10, y: 10, k: 1 }, view), { width: 400, height: 300 }));
});

test("text is left out when too small to read", () => {
  assert.deepEqual(detailLevel(1), { low: false, mid: false });
  assert.deepEqual(detailLevel(0.5), { low: false, mid: true });
  assert.deepEqual(detailLevel(0.2), { low: true, mid: true });
});
