"""The readable text diff by module path (`torchscope diff A B`).

```
--- a: model.py:Net  (Net, 12,424 params, 3 ops, 3 module calls)
+++ b: model_v2.py:Net  (Net, 16,584 params, 5 ops, 4 module calls)
  (root): Net  (2 changes inside)
    + relu #2: torch.relu; inputs [2, 64]; outputs [2, 64]
~ fc1: Linear
      out_features: 64 → 128
    ~ linear: output: [2, 64] → [2, 128]
+ extra: Linear  torch.nn.modules.linear.Linear; params 4,160; …  (1 node inside)
1 added, 0 removed, 2 changed, 9 same
```
A module call with changes gets a header line (`~` when it changed itself, then its own
changes indented); below it the ops and other nodes directly in it that differ (`+` added,
`-` removed, `~` changed). An added or removed module is one line with the count of the
nodes inside it. Top-level inputs and outputs come first and last, without a header. A
change repeated in numbered siblings (a ModuleList's blocks) is written for the first, then
`the same change in h.1 … h.11 (11 more)`. Where b makes NaN or Inf first, a line says so
under the headers (`! NaN/Inf origin in b: log (added) at model.py:14`).
"""

from __future__ import annotations

from typing import Any, Optional

from .compare import CompareView
from .diff import call_label
from .graph import Node
from .summary import one_line_text

SIGNS = {"added": "+", "removed": "-", "changed": "~", "same": " "}


def render_text(view: CompareView) -> str:
    graph, status = view.graph, view.status
    nodes = graph.nodes
    children: dict[Optional[int], list[Node]] = {}
    for n in nodes:
        children.setdefault(n.parent, []).append(n)
    sizes = [1] * len(nodes)  # each node's subtree, itself included (parents come first)
    for n in reversed(nodes):
        if n.parent is not None:
            sizes[n.parent] += sizes[n.id]
    lines = [_side_line("---", "a", view.a), _side_line("+++", "b", view.b)]
    if graph.nan_origin is not None:
        lines.append(_origin_line(view, graph.nan_origin))

    def node_line(n: Node, indent: str) -> str:
        text = "; ".join(view.details[n.id])
        return f"{indent}{SIGNS[status[n.id]]} {_op_label(n, children, status)}" + (
            f": {text}" if text else ""
        )

    def module_lines(m: Node, below: dict[int, list[str]]) -> list[str]:
        """m's lines; `below`: those of the modules inside it (taken out as used)."""
        st = status[m.id]
        if st in ("added", "removed"):
            size = sizes[m.id] - 1
            return [
                f"{SIGNS[st]} {call_label(m)}: {m.name}  {'; '.join(view.details[m.id])}"
                + (f"  ({size} node{'s' if size != 1 else ''} inside)" if size else "")
            ]
        out: list[str] = []
        kids = children.get(m.id, [])
        loose = [c for c in kids if c.kind != "module" and status[c.id] != "same"]
        if st == "changed" or loose:
            count = view.inside[m.id]
            out.append(
                f"{SIGNS[st]} {call_label(m)}: {m.name}"
                + (f"  ({count} change{'s' if count != 1 else ''} inside)" if count else "")
            )
            if st == "changed":
                out.extend(f"      {d}" for d in view.details[m.id])
            out.extend(node_line(c, "    ") for c in loose)
        out.extend(_once_per_run([(c, below.pop(c.id)) for c in kids if c.kind == "module"]))
        return out

    # each module's lines after those of the modules inside it (nodes come parents first):
    # no recursion, as modules nest deeper than Python's recursion limit
    below: dict[int, list[str]] = {}
    for n in reversed(nodes):
        if n.kind == "module":
            below[n.id] = module_lines(n, below)
    top = children.get(None, [])
    for n in top:
        if n.kind == "module":
            lines.extend(below.pop(n.id))
        elif status[n.id] != "same":
            lines.append(node_line(n, ""))
    counts = {s: status.count(s) for s in ("added", "removed", "changed", "same")}
    if counts["same"] == len(status):
        lines.append(f"no differences: {counts['same']} nodes the same")
    else:
        lines.append(
            f"{counts['added']} added, {counts['removed']} removed, "
            f"{counts['changed']} changed, {counts['same']} same"
        )
    return "\n".join(map(one_line_text, lines))


def _once_per_run(blocks: list[tuple[Node, list[str]]]) -> list[str]:
    """The lines of sibling modules, where a run of numbered siblings (`h.0`, `h.1` …, a
    ModuleList's) whose lines are the same but for their number is written once, then
    `the same change in h.1 … h.11 (11 more)`."""
    out: list[str] = []
    k = 0
    while k < len(blocks):
        first, lines = blocks[k]
        run = [first]
        if lines and _numbered(first):
            same = _unnumbered(first, lines)
            while (
                k + len(run) < len(blocks)
                and _numbered(nxt := blocks[k + len(run)][0])
                and nxt.path.rpartition(".")[0] == first.path.rpartition(".")[0]
                and nxt.call == first.call
                and _unnumbered(nxt, blocks[k + len(run)][1]) == same
            ):
                run.append(nxt)
        out.extend(lines)
        if len(run) > 1:
            others = [call_label(m) for m in run[1:]]
            where = others[0] if len(others) == 1 else f"{others[0]} … {others[-1]}"
            if len(others) > 1 and not _consecutive(run[1:]):
                where = ", ".join(others)  # (a range would name blocks that did not run)
            out.append(f"  the same change in {where} ({len(others)} more)")
        k += len(run)
    return out


def _numbered(m: Node) -> bool:
    return m.path.rpartition(".")[2].isdigit()


def _unnumbered(m: Node, lines: list[str]) -> list[str]:
    """The lines as they would read for any sibling: the module's path taken out."""
    return [line.replace(m.path, "\0") for line in lines]


def _consecutive(run: list[Node]) -> bool:
    numbers = [int(m.path.rpartition(".")[2]) for m in run]
    return numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def _side_line(mark: str, name: str, side: dict[str, Any]) -> str:
    model, stats = side["model"], side["stats"]
    line = (
        f"{mark} {name}: {side['source'] or model['name']}  ({model['name']}, "
        f"{model['params']:,} params, {stats['ops']} ops, {stats['modules']} module calls)"
    )
    if side["error"]:
        line += f"  the forward raised {side['error']['type']}: {side['error']['message']}"
    return line


def _origin_line(view: CompareView, origin: int) -> str:
    """Where b first makes NaN/Inf (`added`: an op the edit brought in)."""
    from .notebook import file_names
    from .summary import at, in_module

    n = view.graph.nodes[origin]
    new = " (added)" if view.status[origin] == "added" else ""
    named = file_names()  # (printed in a notebook: its cells as IPython names them)
    return (
        f"! NaN/Inf origin in b: {n.name}{new}{in_module(view.graph, n, named)}{at(n.site, named)}"
    )


def _op_label(n: Node, children: dict[Optional[int], list[Node]], status: list[str]) -> str:
    """The node's name, numbered when its module has several of that name on its side
    (`add #2`: the second add of b, or of a for a removed one)."""
    if n.parent is None:
        return f"{n.kind} {n.name}"
    other = "added" if status[n.id] == "removed" else "removed"
    same_name = [
        c.id
        for c in children[n.parent]
        if c.kind == n.kind and c.name == n.name and status[c.id] != other
    ]
    return f"{n.name} #{same_name.index(n.id) + 1}" if len(same_name) > 1 else n.name
