// Distributed programs in the viewer: DTensor edges keep their layout beside the local shape,
// collectives are marked, wrappers are a mark on the module, and the rank is named.
import { test } from "node:test";
import assert from "node:assert/strict";
import { FORMAT, fromObject, VERSION } from "../../../webview/src/format";
import { buildIndex } from "../../../webview/src/model";
import { buildVisible } from "../../../webview/src/visible";
import { initialExpansion } from "../../../webview/src/expansion";
import { describe, describeEdge } from "../../../webview/src/details";
import { isCollective, rankText, vnodeLabel } from "../../../webview/src/labels";
import { GraphBuilder } from "./builder";

/** x → MLP[fully_shard]{ all_gather_into_tensor → linear } → output, on rank 1 of 2. */
function sharded() {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.add("module", "MLP", null, { target: "m.MLP", attrs: { wrapped_by: "fully_shard" } });
  const gather = b.add("op", "all_gather_into_tensor", root, {
    target: "torch.ops._c10d_functional.all_gather_into_tensor",
    attrs: { collective: true, group_size: 2, bytes: 8512 },
  });
  const linear = b.op("linear", root);
  const out = b.add("output", "output");
  b.edge(x, linear, [4, 32]).edge(gather, linear, [2128]).edge(linear, out, [4, 16]);
  b.edges[0]!.global_shape = [4, 64];
  b.edges[0]!.placements = "Shard(1)";
  b.edges[0]!.mesh = "cpu[tp=2]";
  const g = b.build();
  g.model.rank = 1;
  g.model.world_size = 2;
  return { g, x, root, gather, linear, out };
}

test("the wire's DTensor layout and rank are decoded; a malformed layout is dropped", () => {
  const { g } = sharded();
  const wire = JSON.parse(JSON.stringify({ ...g, format: FORMAT, version: VERSION }));
  wire.edges[1].global_shape = "not a shape";
  wire.edges[1].placements = "Shard(0)";
  const back = fromObject(wire);
  assert.deepEqual(back.edges[0], {
    src: 0,
    dst: 3,
    shape: [4, 32],
    dtype: "float32",
    global_shape: [4, 64],
    placements: "Shard(1)",
    mesh: "cpu[tp=2]",
  });
  assert.equal(back.edges[1]!.placements, undefined);
  assert.equal(back.model.rank, 1);
  assert.equal(back.model.world_size, 2);
  delete wire.model.rank;
  delete wire.model.world_size;
  assert.equal(fromObject(wire).model.rank, undefined);
});

test("a DTensor edge's hover shows the local shard, the global shape, placements and mesh", () => {
  const { g, linear } = sharded();
  const idx = buildIndex(g);
  const vg = buildVisible(idx, initialExpansion(idx));
  const e = vg.edges.find((v) => v.edges.includes(0))!;
  const d = describeEdge(idx, vg, e.key)!;
  assert.equal(d.rows[1]![0], "4×32 float32 (local) of 4×64 Shard(1) on cpu[tp=2]");
  const plain = describe(idx, vg, `n${linear}`)!;
  assert.ok(
    plain.rows.some(([k, v]) => k === "in" && v.startsWith("4×32 float32 (local) of 4×64 Shard(1)")),
    JSON.stringify(plain.rows),
  );
});

test("collectives are marked in their label; wrappers in the module's; the rank in the title", () => {
  const { g, root, gather, linear } = sharded();
  const idx = buildIndex(g);
  assert.equal(isCollective(g.nodes[gather]!), true);
  assert.equal(isCollective(g.nodes[linear]!), false);
  assert.equal(vnodeLabel(idx, { kind: "node", id: gather, key: `n${gather}` } as never).title, "⇄ all_gather_into_tensor");
  assert.equal(vnodeLabel(idx, { kind: "node", id: linear, key: `n${linear}` } as never).title, "linear");
  assert.equal(vnodeLabel(idx, { kind: "module", id: root, key: `n${root}` } as never).sub, "[fully_shard]");
  assert.equal(rankText(g.model), " · rank 1 of 2");
  assert.equal(rankText({ name: "M", qualname: "M", params: 0, device: "", dtype: "" }), "");
});
