import { test } from "node:test";
import assert from "node:assert/strict";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible, shownAs } from "../../../webview/src/visible";
import {
  closeFrom,
  collapseAll,
  currentDepth,
  depthFor,
  expandAll,
  expansionKey,
  initialExpansion,
  isWrapper,
  reveal,
  toDepth,
  toggleGroup,
  toggleModule,
} from "../../../webview/src/expansion";
import { GraphBuilder, mlpWithBlocks } from "./builder";

const keys = (xs: { key: string }[]): string[] => xs.map((x) => x.key).sort();
const ends = (vg: ReturnType<typeof buildVisible>): string[] => vg.edges.map((e) => `${e.src}>${e.dst}`);

test("opens with the root expanded and its children collapsed, groups folded", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  const vg = buildVisible(idx, initialExpansion(idx));
  assert.deepEqual(keys(vg.clusters), [`n${ids.root}`]);
  assert.deepEqual(keys(vg.nodes), [`g0`, `n${ids.act}`, `n${ids.fc1}`, `n${ids.out}`, `n${ids.x}`].sort());
  // Edges are lifted to the collapsed fc1 and to the folded group; the b0→b1 edge vanishes inside g0.
  assert.deepEqual(ends(vg), [`n${ids.x}>n${ids.fc1}`, `n${ids.fc1}>n${ids.act}`, `n${ids.act}>g0`, `g0>n${ids.out}`]);
  const fc1 = vg.nodes.find((n) => n.key === `n${ids.fc1}`)!;
  assert.equal(fc1.cluster, `n${ids.root}`);
  assert.equal(vg.rep[ids.lin1], `n${ids.fc1}`);
  assert.equal(vg.rep[ids.l1], "g0");
});

test("collapsing the root lifts everything to one box", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  const vg = buildVisible(idx, toggleModule(initialExpansion(idx), ids.root));
  assert.deepEqual(keys(vg.nodes), [`n${ids.out}`, `n${ids.root}`, `n${ids.x}`].sort());
  assert.deepEqual(ends(vg), [`n${ids.x}>n${ids.root}`, `n${ids.root}>n${ids.out}`]);
});

test("expanding a module draws it as a cluster holding its children", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  const vg = buildVisible(idx, toggleModule(initialExpansion(idx), ids.fc1));
  const c = vg.clusters.find((x) => x.key === `n${ids.fc1}`)!;
  assert.equal(c.parent, `n${ids.root}`);
  assert.equal(vg.nodes.find((n) => n.key === `n${ids.lin1}`)!.cluster, `n${ids.fc1}`);
  assert.ok(ends(vg).includes(`n${ids.x}>n${ids.lin1}`));
  assert.ok(!vg.nodes.some((n) => n.key === `n${ids.fc1}`), "an expanded module is not also a box");
});

test("an unfolded group is a cluster of its member boxes, edges between members return", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  const vg = buildVisible(idx, toggleGroup(initialExpansion(idx), 0));
  const gc = vg.clusters.find((c) => c.key === "g0")!;
  assert.equal(gc.parent, `n${ids.root}`);
  assert.equal(vg.nodes.find((n) => n.key === `n${ids.b0}`)!.cluster, "g0");
  assert.ok(ends(vg).includes(`n${ids.b0}>n${ids.b1}`));
  // Expanding a member inside the unfolded group nests its cluster in the group's.
  const vg2 = buildVisible(idx, toggleModule(toggleGroup(initialExpansion(idx), 0), ids.b1));
  assert.equal(vg2.clusters.find((c) => c.key === `n${ids.b1}`)!.parent, "g0");
  assert.ok(ends(vg2).includes(`n${ids.b0}>n${ids.l1}`));
});

test("expand all opens every module except one-op wrappers, which stay boxes", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  // fc1, blocks.0 and blocks.1 each hold a single linear op.
  assert.ok(isWrapper(idx, ids.fc1) && isWrapper(idx, ids.b0) && !isWrapper(idx, ids.root));
  const vg = buildVisible(idx, expandAll(idx));
  for (const n of vg.nodes) assert.ok(idx.children[n.id]!.length === 0 || isWrapper(idx, n.id), `${n.key} is a leaf or a wrapper`);
  assert.ok(
    vg.clusters.some((c) => c.key === "g0"),
    "groups unfold",
  );
  assert.equal(vg.rep[ids.l0], `n${ids.b0}`);
  // Opening a wrapper by hand still shows its op.
  const opened = buildVisible(idx, toggleModule(expandAll(idx), ids.b0));
  assert.equal(opened.rep[ids.l0], `n${ids.l0}`);
  assert.equal(expansionKey(collapseAll(idx)), expansionKey(initialExpansion(idx)));
});

test("depth control and reveal", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  assert.equal(toDepth(idx, 0).modules.size, 0);
  const d2 = toDepth(idx, 2);
  assert.ok(d2.groups.has(0) && !d2.modules.has(ids.b0), "groups unfold; one-op wrappers stay closed");
  assert.equal(currentDepth(idx, d2), 2);
  const r = reveal(idx, toDepth(idx, 0), ids.l1);
  assert.ok(r.modules.has(ids.root) && r.modules.has(ids.b1) && r.groups.has(0));
  assert.equal(buildVisible(idx, r).rep[ids.l1], `n${ids.l1}`);
});

test("a depth past what opens anything more is the depth Expand all shows", () => {
  // `9` said depth 5 where Expand all said 4 for the same boxes
  const { g } = mlpWithBlocks();
  const idx = buildIndex(g);
  const all = currentDepth(idx, expandAll(idx));
  assert.equal(depthFor(idx, 9), all);
  assert.equal(expansionKey(toDepth(idx, depthFor(idx, 9))), expansionKey(toDepth(idx, 9)));
  assert.equal(depthFor(idx, 1), 1, "a depth that opens something is kept");
  assert.equal(depthFor(idx, -2), 0);
});

test("Depth + never shows a depth that opens nothing new (QA: MLP 1 → 2 → 1 → 2)", () => {
  // Linear layers each wrap one op: they stay closed at every depth, so depth 2 opens
  // nothing more than depth 1 and must not be shown as 2
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("MLP", "", null);
  const fc1 = b.module("Linear", "fc1", root);
  const l1 = b.op("linear", fc1, "torch.nn.functional.linear");
  const fc2 = b.module("Linear", "fc2", root);
  const l2 = b.op("linear", fc2, "torch.nn.functional.linear");
  const out = b.add("output", "output");
  b.edge(x, l1).edge(l1, l2).edge(l2, out);
  const idx = buildIndex(b.build());
  let shown = 0;
  for (let asked = 0; asked <= idx.maxDepth + 3; asked++) {
    const d = depthFor(idx, asked);
    assert.ok(d >= shown, `depth ${asked} asked: ${d} after ${shown}`);
    assert.equal(d, Math.min(asked, currentDepth(idx, toDepth(idx, d))), `asked ${asked}`);
    shown = d;
  }
  assert.equal(depthFor(idx, 2), 1);
});

test("the depth shown counts only open boxes that are drawn (QA: a closed block's open insides)", () => {
  // a search opened Net > a > a.fc; closing `a` by hand leaves a.fc open but hidden: the
  // readout said 3 and the first Depth − closed only that hidden box
  const b = new GraphBuilder();
  const root = b.module("Net", "", null);
  const a = b.module("Block", "a", root);
  const a1 = b.module("Linear", "a.fc", a);
  const deep = b.op("linear", a1);
  b.op("relu", a);
  const other = b.module("Block", "b", root);
  b.op("relu", other);
  b.op("relu", other);
  const idx = buildIndex(b.build());
  const found = reveal(idx, toDepth(idx, 1), deep);
  assert.equal(currentDepth(idx, found), 3);
  const closed = toggleModule(found, a);
  assert.equal(currentDepth(idx, closed), 1, "only the root is open and drawn");
  // the same inside a folded group: a member's open insides are not drawn
  const { g, ids } = mlpWithBlocks();
  const gidx = buildIndex(g);
  const opened = reveal(gidx, toDepth(gidx, 1), ids.l0); // Net > blocks.0, the group unfolded
  assert.equal(currentDepth(gidx, opened), 2);
  assert.equal(currentDepth(gidx, toggleGroup(opened, 0)), 1);
});

test("Depth − only closes: a level less of what is open, never a box that was closed", () => {
  // Search opened one deep box; "−" then opened every block (it was "expand to depth N−1")
  const b = new GraphBuilder();
  const root = b.module("Net", "", null);
  const a = b.module("Block", "a", root);
  const a1 = b.module("Linear", "a.fc", a);
  const deep = b.op("linear", a1);
  const other = b.module("Block", "b", root);
  const b1 = b.module("Linear", "b.fc", other);
  b.op("linear", b1);
  b.op("relu", other);
  b.op("relu", a);
  const idx = buildIndex(b.build());
  const found = reveal(idx, toDepth(idx, 1), deep);
  assert.equal(currentDepth(idx, found), 3);
  const less = closeFrom(idx, found, 2);
  assert.deepEqual([...less.modules].sort(), [root, a].sort(), "the deepest level closes; block b stays closed");
  assert.equal(currentDepth(idx, less), 2);
  assert.deepEqual([...closeFrom(idx, less, 0).modules], []);
  // from a depth set by hand, the same as asking for the lower depth
  assert.equal(expansionKey(closeFrom(idx, toDepth(idx, 3), 2)), expansionKey(toDepth(idx, 2)));
});

test("expansion keys are order independent", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  const a = toggleModule(toggleModule(initialExpansion(idx), ids.fc1), ids.b0);
  const b = toggleModule(toggleModule(initialExpansion(idx), ids.b0), ids.fc1);
  assert.equal(expansionKey(a), expansionKey(b));
  assert.notEqual(expansionKey(a), expansionKey(initialExpansion(idx)));
});

test("a selection inside a box closed since is shown by that box (QA: collapse lost the place)", () => {
  const { g, ids } = mlpWithBlocks();
  const idx = buildIndex(g);
  const open = reveal(idx, toDepth(idx, 1), ids.l0);
  const key = `n${ids.l0}`;
  assert.equal(shownAs(idx, buildVisible(idx, open), key), key, "drawn: itself");
  assert.equal(shownAs(idx, buildVisible(idx, toggleModule(open, ids.b0)), key), `n${ids.b0}`);
  assert.equal(shownAs(idx, buildVisible(idx, toggleGroup(open, 0)), key), "g0");
  assert.equal(shownAs(idx, buildVisible(idx, toggleGroup(open, 0)), `n${ids.b1}`), "g0");
  assert.equal(shownAs(idx, buildVisible(idx, open), "x9"), null);
});
