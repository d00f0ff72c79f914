// The viewer's camera math (webview/src/camera.ts): first view, fit, center, zoom to a box,
// a box kept still across a re-layout, an opened frame brought into view, what a transform shows.
import { describe, it, test } from "node:test";
import assert from "node:assert/strict";
import {
  READABLE_ZOOM,
  besideBox,
  busiestX,
  cardSpot,
  centerTransform,
  clearArea,
  detailLevel,
  fitTransform,
  initialTransform,
  pinTransform,
  revealTransform,
  showsAll,
  toScreen,
  visibleRect,
  zoomStep,
  zoomToBox,
  MAX_ZOOM,
  MIN_ZOOM,
} from "../../../webview/src/camera";

const view = { w: 800, h: 600 };

test("a small graph starts centered at 100 %, never blown up past 125 %", () => {
  assert.deepEqual(initialTransform({ width: 200, height: 100 }, view, []), { x: 275, y: 237.5, k: 1.25 });
  assert.deepEqual(initialTransform({ width: 752, height: 552 }, view, []), { x: 24, y: 24, k: 1 });
});

test("a graph that fits at a readable zoom opens whole: wider or taller than the window at 100 %", () => {
  const wide = { width: 900, height: 400 };
  const t = initialTransform(wide, view, []);
  assert.ok(t.k >= READABLE_ZOOM && t.k < 1);
  assert.ok(showsAll(visibleRect(t, view), wide), "every box in the window");
  const tall = initialTransform({ width: 300, height: 650 }, view, []);
  assert.ok(showsAll(visibleRect(tall, view), { width: 300, height: 650 }));
});

test("a big graph starts at its top at a readable zoom, centered where its boxes are", () => {
  // The input far left, the main column at x = 2000 of a 3000-wide graph.
  const boxes = [{ x: 100, y: 20, h: 26 }, ...Array.from({ length: 10 }, (_, i) => ({ x: 2000, y: 20 + i * 50, h: 26 }))];
  const t = initialTransform({ width: 3000, height: 9000 }, view, boxes);
  assert.equal(t.k, READABLE_ZOOM);
  assert.equal(t.y, 24);
  assert.equal(toScreen(t, { x: 2000, y: 0 }).x, 400, "the main column in the middle");
  // Narrower than the window at that zoom: centered across.
  const narrow = initialTransform({ width: 600, height: 9000 }, view, boxes);
  assert.equal(narrow.x, (800 - 600 * narrow.k) / 2);
});

test("the busiest stretch of the first screenful, kept inside the graph", () => {
  const g = { width: 3000, height: 5000 };
  assert.equal(busiestX([], g, view, 1), 1500);
  const column = [1, 2, 3].map((i) => ({ x: 2900, y: i * 40, h: 20 }));
  assert.equal(busiestX(column, g, view, 1), 3000 - 400 + 24, "not past the right edge");
  const below = [{ x: 100, y: 5000, h: 20 }, ...column];
  assert.equal(busiestX(below, g, view, 1), busiestX(column, g, view, 1), "boxes out of the first screenful don't count");
});

test("an opened frame: left where it is when it fits there, else moved and zoomed out as little as needed", () => {
  const graph = { width: 2000, height: 3000 };
  const none = { w: 0, h: 0 };
  const t = { x: 0, y: 0, k: 1 };
  // Fits where it is: nothing moves.
  assert.deepEqual(revealTransform({ x: 100, y: 100, w: 300, h: 200 }, graph, t, view, none), t);
  // Below the fold: moved up just enough, header still on screen.
  const up = revealTransform({ x: 100, y: 300, w: 300, h: 500 }, graph, t, view, none);
  assert.equal(up.k, 1);
  assert.equal(toScreen(up, { x: 100, y: 800 }).y, 600 - 16, "its bottom at the window's bottom margin");
  assert.ok(toScreen(up, { x: 100, y: 300 }).y >= 16);
  // Taller than the window: zoomed out to fit, not below 50 %.
  const out = revealTransform({ x: 100, y: 300, w: 300, h: 900 }, graph, t, view, none);
  assert.ok(out.k < 1 && out.k >= 0.5);
  const top = toScreen(out, { x: 100, y: 300 });
  const bottom = toScreen(out, { x: 100, y: 1200 });
  assert.ok(top.y >= 16 && bottom.y <= 584);
  // Far too tall: 50 %, its header at the top-left.
  const huge = revealTransform({ x: 100, y: 300, w: 300, h: 5000 }, graph, t, view, none);
  assert.equal(huge.k, 0.5);
  assert.deepEqual(toScreen(huge, { x: 100, y: 300 }), { x: 100, y: 16 });
  // Clear of the overview in the bottom-right corner.
  const mini = { w: 200, h: 200 };
  const clear = revealTransform({ x: 500, y: 300, w: 300, h: 200 }, graph, t, view, mini);
  const r = { a: toScreen(clear, { x: 500, y: 300 }), b: toScreen(clear, { x: 800, y: 500 }) };
  assert.ok(r.b.x <= 800 - 208 || r.b.y <= 600 - 208, "not under the overview");
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

test("zoom to a box of a graph that fits the view: the whole graph stays in view, the box as central as that allows", () => {
  // The failing call at the bottom of a small graph (an error banner's click): centring it
  // pushed the inputs out of the top of the view although everything fits.
  const graph = { width: 300, height: 500 };
  const box = { x: 100, y: 450, w: 100, h: 40 };
  const t = zoomToBox(box, 1, view, graph);
  assert.equal(t.k, 1);
  assert.ok(showsAll(visibleRect(t, view), graph), "every box in the view");
  assert.equal(toScreen(t, { x: 0, y: 0 }).y, 16, "the graph's top at the margin, as near the centre as it goes");
  assert.equal(toScreen(t, { x: 150, y: 0 }).x, 400, "across, the box is centred (the graph fits either way)");
  // A graph taller than the view: the box is centred as before.
  const tall = zoomToBox(box, 1, view, { width: 300, height: 5000 });
  assert.deepEqual(toScreen(tall, { x: 150, y: 470 }), { x: 400, y: 300 });
});

test("a box gone to while a panel covers part of the view: centred in the part the panel leaves free", () => {
  // A 480 px wide page with the heaviest-nodes table over most of the stage: the row's node
  // was centred under the table itself.
  const narrow = { w: 480, h: 640 };
  const table = { x: 138, y: 10, w: 332, h: 402 };
  const below = clearArea(narrow, [table]);
  assert.deepEqual(below, { x: 0, y: 412, w: 480, h: 228 }, "the band below it is the biggest part left");
  const t = zoomToBox({ x: 1000, y: 2000, w: 60, h: 30 }, 1, narrow, undefined, below);
  assert.deepEqual(toScreen(t, { x: 1030, y: 2015 }), { x: 240, y: 526 }, "in the middle of that band");
  // A wide page: the part beside the table.
  assert.deepEqual(clearArea({ w: 1280, h: 700 }, [{ x: 930, y: 10, w: 340, h: 500 }]), { x: 0, y: 0, w: 930, h: 700 });
  // Nothing over the view, or too little left beside it: the whole view.
  assert.deepEqual(clearArea(narrow, []), { x: 0, y: 0, w: 480, h: 640 });
  assert.deepEqual(clearArea(narrow, [{ x: 5, y: 5, w: 470, h: 630 }]), { x: 0, y: 0, w: 480, h: 640 });
  // A graph that fits the free part stays whole in it (clear of the table), the box as central as that allows.
  const graph = { width: 300, height: 150 };
  const small = zoomToBox({ x: 100, y: 0, w: 100, h: 40 }, 1, narrow, graph, below);
  const r = visibleRect(small, narrow);
  assert.ok(toScreen(small, { x: 0, y: 0 }).y >= below.y, "the graph's top below the table");
  assert.ok(showsAll({ ...r, y: r.y + below.y / small.k, h: below.h / small.k }, graph), "every box in the free part");
});

test("a box gone to while the table and the legend cover the view: centred clear of both", () => {
  // A 360 px wide page: the table over the top, the legend at the bottom left. The band
  // below the table reached down over the legend, and a change step's box landed under it.
  const narrow = { w: 360, h: 640 };
  const table = { x: 10, y: 10, w: 340, h: 300 };
  const legend = { x: 10, y: 570, w: 198, h: 60 };
  const free = clearArea(narrow, [table, legend]);
  assert.deepEqual(free, { x: 0, y: 310, w: 360, h: 260 }, "between the table and the legend");
  const t = zoomToBox({ x: 1000, y: 2000, w: 60, h: 30 }, 1, narrow, undefined, free);
  const at = toScreen(t, { x: 1030, y: 2015 });
  assert.ok(at.y + 15 <= legend.y && at.y - 15 >= table.y + table.h, `the box clear of both: ${at.y}`);
  // Covers that leave no free part big enough between them: the whole view.
  assert.deepEqual(
    clearArea(narrow, [
      { x: 0, y: 0, w: 360, h: 300 },
      { x: 0, y: 320, w: 360, h: 320 },
    ]),
    {
      x: 0,
      y: 0,
      w: 360,
      h: 640,
    },
  );
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

describe("besideBox: a card next to the box it describes", () => {
  const view = { w: 1000, h: 600 };
  const card = { w: 300, h: 200 };
  const overlaps = (box: { x: number; y: number; w: number; h: number }, at: { x: number; y: number }): boolean =>
    at.x < box.x + box.w && box.x < at.x + card.w && at.y < box.y + box.h && box.y < at.y + card.h;
  it("goes below a box with room under it, from its left edge", () => {
    const box = { x: 100, y: 50, w: 80, h: 30 };
    assert.deepEqual(besideBox(box, card, view), { x: 100, y: 88 });
  });
  it("goes above a box near the bottom (QA: it covered half of it)", () => {
    const box = { x: 600, y: 500, w: 40, h: 26 };
    const at = besideBox(box, card, view);
    assert.equal(at.y, 500 - 8 - 200);
    assert.ok(!overlaps(box, at));
  });
  it("goes beside a box with no room above or below, and stays in the view", () => {
    const box = { x: 100, y: 150, w: 60, h: 300 };
    const at = besideBox(box, card, view);
    assert.deepEqual(at, { x: 168, y: 150 });
    const right = { x: 800, y: 150, w: 60, h: 300 };
    const left = besideBox(right, card, view);
    assert.ok(!overlaps(right, left) && left.x >= 0, JSON.stringify(left));
  });
  it("with room nowhere, takes the side with the most and keeps inside the view", () => {
    const box = { x: 0, y: 0, w: 1000, h: 560 };
    const at = besideBox(box, card, view);
    assert.ok(at.x >= 0 && at.y >= 0 && at.x + card.w <= view.w && at.y + card.h <= view.h);
  });
});

describe("cardSpot: the keyboard's card clear of the box and of where the arrows go next", () => {
  const view = { w: 1000, h: 600 };
  const card = { w: 300, h: 200 };
  type R = { x: number; y: number; w: number; h: number };
  const covers = (at: { x: number; y: number }, r: R): boolean => at.x < r.x + r.w && r.x < at.x + card.w && at.y < r.y + r.h && r.y < at.y + card.h;
  const inView = (at: { x: number; y: number }): boolean => at.x >= 0 && at.y >= 0 && at.x + card.w <= view.w && at.y + card.h <= view.h;
  it("walking down a chain: not below (over the next box), nor above (over the one before)", () => {
    // QA: the card went below the selected box, over the box ArrowDown went to next
    const box = { x: 400, y: 200, w: 80, h: 30 };
    const prev = { x: 400, y: 140, w: 80, h: 30 };
    const next = { x: 400, y: 260, w: 80, h: 30 };
    const at = cardSpot(box, card, view, { neighbours: [prev, next], ahead: next });
    for (const r of [box, prev, next]) assert.ok(!covers(at, r), `${JSON.stringify(at)} covers ${JSON.stringify(r)}`);
    assert.ok(inView(at));
  });
  it("goes to the side away from the direction of travel first", () => {
    const box = { x: 400, y: 250, w: 80, h: 30 };
    const next = { x: 400, y: 320, w: 80, h: 30 };
    const at = cardSpot(box, card, view, { neighbours: [next], ahead: next });
    assert.ok(at.y + card.h <= box.y, `above, away from the next box below: ${JSON.stringify(at)}`);
    const up = { x: 400, y: 180, w: 80, h: 30 };
    const back = cardSpot(box, card, view, { neighbours: [up], ahead: up });
    assert.ok(back.y >= box.y + box.h, `going up: below it ${JSON.stringify(back)}`);
  });
  it("of the places beside the box, the one over fewest other boxes", () => {
    const box = { x: 400, y: 250, w: 80, h: 30 };
    const next = { x: 400, y: 320, w: 80, h: 30 };
    const other = { x: 420, y: 100, w: 60, h: 30 }; // (where the card above it would go)
    const at = cardSpot(box, card, view, { neighbours: [next], ahead: next, others: [other] });
    for (const r of [box, next, other]) assert.ok(!covers(at, r), `${JSON.stringify(at)} covers ${JSON.stringify(r)}`);
    assert.equal(at.x, box.x + box.w + 8, "right of it");
  });
  it("no side is clear: a corner of the view that covers none of them", () => {
    const v = { w: 700, h: 500 };
    const box = { x: 300, y: 200, w: 100, h: 40 };
    const around = [
      { x: 300, y: 140, w: 100, h: 40 },
      { x: 300, y: 260, w: 100, h: 40 },
      { x: 150, y: 200, w: 120, h: 40 },
      { x: 430, y: 200, w: 100, h: 40 },
    ];
    const c = { w: 250, h: 130 };
    const at = cardSpot(box, c, v, { neighbours: around, ahead: around[1] });
    for (const r of [box, ...around]) {
      assert.ok(!(at.x < r.x + r.w && r.x < at.x + c.w && at.y < r.y + r.h && r.y < at.y + c.h), `${JSON.stringify(at)} covers ${JSON.stringify(r)}`);
    }
    assert.ok(at.x >= 0 && at.y >= 0 && at.x + c.w <= v.w && at.y + c.h <= v.h);
  });
  it("clear of the panels over the graph (table, legend, overview) where there is room", () => {
    const box = { x: 400, y: 250, w: 80, h: 30 };
    const legend = { x: 10, y: 20, w: 600, h: 150 };
    const at = cardSpot(box, card, view, { neighbours: [], panels: [legend] });
    assert.ok(!covers(at, legend) && !covers(at, box), JSON.stringify(at));
  });
  it("no room clear of the neighbours: the box itself stays in sight, as besideBox", () => {
    const box = { x: 100, y: 100, w: 60, h: 30 };
    const wall = { x: 0, y: 0, w: 1000, h: 600 };
    assert.deepEqual(cardSpot(box, card, view, { neighbours: [wall] }), besideBox(box, card, view));
  });
});

test("] and [ zoom by two about the selected box; in from a fitted graph goes to a readable zoom", () => {
  const area = { x: 0, y: 0, w: 800, h: 600 };
  const fitted = { x: 10, y: 20, k: 0.02 };
  const box = { x: 5000, y: 9000 };
  const t = zoomStep(fitted, 1, area, box);
  assert.equal(t.k, READABLE_ZOOM);
  assert.deepEqual(toScreen(t, box), { x: 400, y: 300 }, "the box in the middle");
  assert.equal(zoomStep(t, 1, area, box).k, READABLE_ZOOM * 2);
  assert.equal(zoomStep(t, -1, area, box).k, READABLE_ZOOM / 2);
  assert.equal(zoomStep({ x: 0, y: 0, k: MAX_ZOOM }, 1, area, box).k, MAX_ZOOM);
  assert.equal(zoomStep({ x: 0, y: 0, k: MIN_ZOOM }, -1, area, box).k, MIN_ZOOM);
  // no selection: what the middle of the area shows stays there (here in a part right of a panel)
  const part = { x: 200, y: 0, w: 600, h: 600 };
  const at = { x: (500 - 10) / 2, y: (300 - 20) / 2 };
  const out = zoomStep({ x: 10, y: 20, k: 2 }, -1, part, null);
  assert.equal(out.k, 1);
  assert.deepEqual(toScreen(out, at), { x: 500, y: 300 });
});
