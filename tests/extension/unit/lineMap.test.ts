// A graph's lines and the editor's after edits (extension/src/lineMap.ts): the pairs are
// what the language server's torchscope/lines answers, 0-based; the lines asked and
// answered are 1-based, as sites and cursors are.
import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import { lineNow, lineTraced, type LinePairs } from "../../../extension/src/lineMap";

// lines 5, 9 and 12 (1-based: 0-based 4, 8, 11) made something; three lines were typed at
// the top, and line 9 was edited since (the server leaves it out)
const moved: LinePairs = [
  [4, 7],
  [11, 14],
];

describe("a graph's lines after edits", () => {
  it("a known line is where the server says", () => {
    assert.equal(lineNow(moved, 5), 8);
    assert.equal(lineNow(moved, 12), 15);
    assert.equal(lineTraced(moved, 8), 5);
    assert.equal(lineTraced(moved, 15), 12);
  });

  it("a line edited since, or one that made nothing, moves as the known line above it", () => {
    assert.equal(lineNow(moved, 9), 12);
    assert.equal(lineNow(moved, 6), 9); // a statement's second line
    assert.equal(lineTraced(moved, 12), 9);
    assert.equal(lineTraced(moved, 16), 13);
  });

  it("above every known line: as the first one moved; none known: as it was", () => {
    assert.equal(lineNow(moved, 2), 5);
    assert.equal(lineTraced(moved, 5), 2);
    assert.equal(lineNow([], 7), 7);
    assert.equal(lineTraced([], 7), 7);
  });

  it("a line typed since never marks a traced line that is elsewhere now (review)", () => {
    // A, B, C on lines 11, 12, 13; two blank lines typed after A: B on 14, C on 15
    const typed: LinePairs = [
      [10, 10],
      [11, 13],
      [12, 14],
    ];
    assert.equal(lineTraced(typed, 12), 0);
    assert.equal(lineTraced(typed, 13), 0);
    assert.equal(lineTraced(typed, 14), 12);
    assert.equal(lineTraced(typed, 15), 13);
  });

  it("nothing edited: every line where it was", () => {
    const same: LinePairs = [
      [4, 4],
      [8, 8],
    ];
    for (const line of [1, 5, 6, 9, 20]) {
      assert.equal(lineNow(same, line), line);
      assert.equal(lineTraced(same, line), line);
    }
  });
});
