// The PNG export's scale (webview/src/export.ts pngScale): sharp where it can be, never
// smaller than the screen at 100 %, none past the browser's canvas limits.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { CANVAS_MAX_AREA, CANVAS_MAX_SIDE, drawingDeclarations, plainColor, pngScale, selectorItems } from "../../../webview/src/export";

test("a PNG is drawn at scale 2, less for a big graph, never below 1; none past the canvas limits", () => {
  assert.equal(pngScale(800, 600), 2);
  // GPT-2 expanded (12 layers): scale 1 fits the canvas, 2 would not; text stays full size.
  const tall = pngScale(722, 30_866)!;
  assert.ok(tall >= 1 && 30_866 * tall <= CANVAS_MAX_SIDE, String(tall));
  // T5 expanded: taller than a canvas at scale 1: no PNG (SVG then).
  assert.equal(pngScale(3099, 37_126), null);
  // Within the sides but past the area.
  assert.equal(pngScale(20_000, 20_000), null);
  const big = pngScale(16_000, 16_000)!;
  assert.ok(big >= 1 && 16_000 * 16_000 * big * big <= CANVAS_MAX_AREA);
});

describe("plainColor", () => {
  test("a mixed colour as Chromium computes it: rgb() and an opacity", () => {
    assert.deepEqual(plainColor("color(srgb 0.658431 0.279608 0.162745)"), { rgb: "rgb(168, 71, 41)", alpha: 1 });
    assert.deepEqual(plainColor("color(srgb 0.878431 0.337255 0.168627 / 0.05)"), { rgb: "rgb(224, 86, 43)", alpha: 0.05 });
    assert.deepEqual(plainColor(" color(srgb 1 0 1.2e-7) "), { rgb: "rgb(255, 0, 0)", alpha: 1 });
  });
  test("anything else is left as it is", () => {
    for (const c of ["rgb(1, 2, 3)", "#fff", "none", "color(display-p3 1 0 0)", ""]) assert.equal(plainColor(c), null);
  });
});

describe("the style rules an SVG export keeps", () => {
  test("a selector list splits at its own commas, not those inside :not(…) or [attr]", () => {
    assert.deepEqual(selectorItems(".ts-st-added:not(.ts-selected, .ts-match) > .ts-box, .ts-svg"), [
      ".ts-st-added:not(.ts-selected, .ts-match) > .ts-box",
      ".ts-svg",
    ]);
    assert.deepEqual(selectorItems('[data-x="a,b"] > .ts-box,.ts-frame'), ['[data-x="a,b"] > .ts-box', ".ts-frame"]);
  });
  test("the page's pointer declarations stay out of the file", () => {
    // `.ts-svg { cursor: grab; user-select: none }` and `.ts-node { cursor: pointer }` went in
    assert.deepEqual(drawingDeclarations("display: block; cursor: grab; user-select: none; fill: rgb(1, 2, 3);"), [
      "display: block",
      "fill: rgb(1, 2, 3)",
    ]);
    assert.deepEqual(drawingDeclarations("cursor: pointer;"), []);
    assert.deepEqual(drawingDeclarations("font: 10px var(--ts-mono); pointer-events: stroke;"), ["font: 10px var(--ts-mono)"]);
  });
});
