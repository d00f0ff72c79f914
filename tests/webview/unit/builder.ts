// Small hand-made graphs for unit tests, built like the tracer would write them.
import { FORMAT, VERSION, type Graph, type GraphNode, type NodeKind } from "../../../webview/src/format";

export class GraphBuilder {
  nodes: GraphNode[] = [];
  edges: Graph["edges"] = [];
  groups: Graph["groups"] = [];
  error: Graph["error"] = null;

  add(kind: NodeKind, name: string, parent: number | null = null, extra: Partial<GraphNode> = {}): number {
    const id = this.nodes.length;
    this.nodes.push({
      id,
      kind,
      name,
      parent,
      target: "",
      path: "",
      call: 0,
      site: null,
      defn: null,
      params: 0,
      attrs: {},
      ...extra,
    });
    return id;
  }
  module(name: string, path: string, parent: number | null): number {
    return this.add("module", name, parent, { path, target: `torch.nn.${name}` });
  }
  op(name: string, parent: number | null, target = `torch.${name}`): number {
    return this.add("op", name, parent, { target });
  }
  edge(src: number, dst: number, shape: number[] | null = [1, 4]): this {
    this.edges.push({ src, dst, shape, dtype: "float32" });
    return this;
  }
  build(): Graph {
    return {
      format: FORMAT,
      version: VERSION,
      model: { name: "M", qualname: "m.M", params: 0, device: "cpu", dtype: "float32" },
      nodes: this.nodes,
      edges: this.edges,
      groups: this.groups,
      error: this.error,
      stats: { trace_ms: 1, ops: 0, modules: 0 },
      warnings: [],
    };
  }
}

/** x → Root{ fc1{linear}, act, blocks.0{linear}, blocks.1{linear} } → output, with one group. */
export function mlpWithBlocks(): { g: Graph; ids: Record<string, number> } {
  const b = new GraphBuilder();
  const x = b.add("input", "x");
  const root = b.module("Net", "", null);
  const fc1 = b.module("Linear", "fc1", root);
  const lin1 = b.op("linear", fc1, "torch.nn.functional.linear");
  const act = b.op("relu", root, "torch.relu");
  const b0 = b.module("Block", "blocks.0", root);
  const l0 = b.op("linear", b0, "torch.nn.functional.linear");
  const b1 = b.module("Block", "blocks.1", root);
  const l1 = b.op("linear", b1, "torch.nn.functional.linear");
  const out = b.add("output", "output");
  b.edge(x, lin1).edge(lin1, act).edge(act, l0).edge(l0, l1).edge(l1, out);
  b.groups.push({ parent: root, members: [b0, b1], name: "Block ×2" });
  return { g: b.build(), ids: { x, root, fc1, lin1, act, b0, l0, b1, l1, out } };
}
