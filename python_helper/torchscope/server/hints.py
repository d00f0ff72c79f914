"""What a trace says about each source line: the tensors the line made (the shapes of the
inlay hints) and the hover that details them. Pure: a graph's wire map and document text in,
plain data and LSP values out; no torch, no I/O.

A line's nodes are the graph nodes whose `site` is that line (ops, module calls, constants,
the error). The calls written on the line are its *top* nodes (no ancestor on the same
line). One *run* is one execution of the line: its top nodes under one parent (module
call), cut where another statement of the same function ran in between and by the calls'
repeating pattern (a loop runs the line once per iteration; a line inside a block called N
times runs once per call). A run's outputs are the tensors leaving it: edges from a node
under the run to a node outside it.

The graph is read from its wire map (docs/graph-format.md) rather than through
`Graph.from_wire`: added fields such as `Edge.stats` and `Node.cost` come along as they
are, and a big graph is indexed without building a Node object per node.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional
from urllib.parse import quote

from lsprotocol import types

from ..summary import human_bytes, human_flops, human_time  # (as the summary and the viewer)

REVEAL_COMMAND = "torchscope.revealNode"
MAX_SHAPES = 3  # a hint names at most this many distinct shapes, then "(+k)"
MAX_TENSORS = 6  # a hover details at most this many tensors
MAX_REVEAL = 64  # node ids a reveal link carries
_KINDS = ("op", "module", "constant", "error")
_INDEX = re.compile(r"(^|\.)\d+(?=\.|$)")  # the item of a ModuleList/Sequential in a path


class TensorOut(NamedTuple):
    """One tensor a call made, as the edge that carries it out describes it."""

    node: int  # the producing leaf node
    shape: Optional[tuple[int, ...]]
    dtype: str
    stats: Optional[dict[str, Any]] = None


@dataclass(slots=True)
class Made:
    """One call written on a line (a top node), with the tensors leaving it."""

    node: int
    kind: str
    name: str
    target: str
    path: str
    cost: Optional[dict[str, Any]]
    outputs: list[TensorOut]
    col: Optional[int] = None  # where its call starts on the line (UTF-8 bytes), if known

    def words(self, as_written: bool = False) -> set[str]:
        """Names a cursor may rest on to mean this call: `relu`, `fc` of `self.fc`; their
        underscores stripped (`__add__` is `add`) unless `as_written`."""
        found = {self.name, self.target.rsplit(".", 1)[-1]}
        named = [p for p in self.path.split(".") if p and not p.isdigit()]
        if named:  # `self.fc` → "fc"; `self.blocks[2]` (path "blocks.2") → "blocks"
            found.add(named[-1])
        return {w if as_written else (w.strip("_") or w) for w in found if w}


@dataclass(slots=True)
class Run:
    """One execution of a line."""

    made: list[Made]
    outputs: list[TensorOut]


@dataclass(slots=True)
class LineInfo:
    """What one line (0-based) of one file made in the trace."""

    line: int
    runs: list[Run]
    error: Optional[str] = None  # "RuntimeError: …" when the traced forward raised here

    def shapes(self) -> list[str]:
        """The distinct output shapes over all runs, in the order they first appeared."""
        seen: dict[str, None] = {}
        for run in self.runs:
            for t in run.outputs:
                seen.setdefault(shape_text(t.shape), None)
        return list(seen)

    def label(self) -> Optional[str]:
        """The inlay hint: `4×16`, `4×8, 4×16`, `1×64×768 ×12`; None when no tensor left it."""
        shapes = self.shapes()
        if not shapes:
            return None
        text = ", ".join(shapes[:MAX_SHAPES])
        if len(shapes) > MAX_SHAPES:
            text += f" (+{len(shapes) - MAX_SHAPES})"
        return text + (f" ×{len(self.runs)}" if len(self.runs) > 1 else "")

    def made(self) -> Iterable[Made]:
        for run in self.runs:
            yield from run.made


@dataclass
class Indexed:
    """A trace's lines by file (the `site.file` strings of the graph) and line."""

    model: str
    device: str
    files: dict[str, dict[int, LineInfo]]


def shape_text(shape: Optional[Sequence[int]]) -> str:
    """As the viewer writes edge labels (webview/src/labels.ts `shapeText`)."""
    if shape is None:
        return "?"
    if len(shape) == 0:
        return "scalar"
    return "×".join(str(d) for d in shape)


# -- indexing ----------------------------------------------------------------------------


def index_graph(wire: dict[str, Any]) -> Indexed:
    """Every line the trace reached, with what it made. Raises KeyError/TypeError/IndexError
    on a malformed map (the caller reports it)."""
    nodes: list[dict[str, Any]] = wire["nodes"]
    edges: list[dict[str, Any]] = wire["edges"]
    count = len(nodes)
    parent: list[Optional[int]] = [n["parent"] for n in nodes]
    # up[i]: the nearest top node at or above node i (-1: none). Top nodes are the calls
    # written on a line: a node under a call made on its own line (a recursive forward) is
    # part of that call. Parents come before their children, so one pass fills it.
    up: list[int] = [-1] * count
    where: dict[int, tuple[str, int]] = {}
    per_line: dict[tuple[str, int], list[int]] = {}
    for i, n in enumerate(nodes):
        p = parent[i]
        above = up[p] if p is not None else -1
        up[i] = above
        site = n["site"]
        if site is None or n["kind"] not in _KINDS:
            continue
        file = site["file"]
        if file[:1] == "<":  # <string>, <frozen …>: nothing to put a hint in
            continue
        key = (file, site["line"])
        where[i] = key
        t = above
        while t >= 0 and where[t] != key:
            q = parent[t]
            t = up[q] if q is not None else -1
        if t < 0:
            up[i] = i
            per_line.setdefault(key, []).append(i)

    children: dict[Optional[int], list[int]] = {}
    for i, p in enumerate(parent):
        children.setdefault(p, []).append(i)
    made: dict[int, Made] = {}
    run_of: dict[int, int] = {}
    runs: list[Run] = []
    lines: dict[tuple[str, int], LineInfo] = {}
    for key, tops in per_line.items():
        line_runs = _split_runs(nodes, parent, children, tops) if len(tops) > 1 else [tops]
        first = len(runs)
        for members in line_runs:
            run = Run([], [])
            for i in members:
                n = nodes[i]
                cost = n.get("cost")
                m = Made(
                    i,
                    n["kind"],
                    n["name"],
                    n.get("target") or "",
                    n.get("path") or "",
                    cost if isinstance(cost, dict) else None,
                    [],
                    n["site"].get("col"),
                )
                made[i] = m
                run.made.append(m)
                run_of[i] = len(runs)
            runs.append(run)
        lines[key] = LineInfo(key[1] - 1, runs[first:])

    # each node's chain of enclosing calls (innermost first) and their runs, by nearest call
    chains: dict[int, tuple[list[int], set[int]]] = {}

    def chain(i: int) -> tuple[list[int], set[int]]:
        found = chains.get(up[i])
        if found is None:
            calls: list[int] = []
            t = up[i]
            while t >= 0:
                calls.append(t)
                q = parent[t]
                t = up[q] if q is not None else -1
            found = chains[up[i]] = (calls, {run_of[t] for t in calls})
        return found

    tensors: dict[tuple[Any, ...], tuple[int, TensorOut]] = {}  # one per (producer, shape, dtype)
    seen_node: set[tuple[int, int]] = set()
    seen_run: set[tuple[int, int]] = set()
    for e in edges:
        src = e["src"]
        if up[src] < 0:
            continue
        outer = chain(src)[0]
        inner, inner_runs = chain(e["dst"])
        if outer[0] in inner:
            continue  # made and used inside one call
        shape = e["shape"]
        ident = (
            src,
            tuple(shape) if isinstance(shape, list) else None,
            e["dtype"],
            e.get("output"),
        )
        known = tensors.get(ident)
        if known is None:
            stats = e.get("stats")
            tensor = TensorOut(
                src, ident[1], str(ident[2] or ""), stats if isinstance(stats, dict) else None
            )
            known = tensors[ident] = (len(tensors), tensor)
        tid, tensor = known
        for t in outer:
            if t in inner:
                break  # this call and the ones around it contain the consumer too
            if (t, tid) not in seen_node:
                seen_node.add((t, tid))
                made[t].outputs.append(tensor)
            r = run_of[t]
            if r not in inner_runs and (r, tid) not in seen_run:
                seen_run.add((r, tid))
                runs[r].outputs.append(tensor)

    err = wire.get("error")
    if isinstance(err, dict):
        node = err.get("node")
        key = where.get(node) if isinstance(node, int) else None
        if key is not None and key in lines:
            message = str(err.get("message", "")).strip().split("\n", 1)[0]
            message = message if len(message) <= 200 else message[:199] + "…"
            lines[key].error = f"{err.get('type', 'Error')}: {message}"

    files: dict[str, dict[int, LineInfo]] = {}
    for (file, line), info in lines.items():
        if isinstance(line, int) and line >= 1:
            files.setdefault(str(file), {})[line - 1] = info
    model = wire.get("model") or {}
    return Indexed(str(model.get("name", "")), str(model.get("device", "")), files)


def _split_runs(
    nodes: list[dict[str, Any]],
    parent: list[Optional[int]],
    children: dict[Optional[int], list[int]],
    tops: list[int],
) -> list[list[int]]:
    """A line's top nodes (in call order) as runs. Under one parent, another statement of
    the same function running in between starts a new run (a loop body of several lines);
    calls of the line back to back are split by their repeating pattern (`for b in blocks:
    x = b(x)` is one call per run; `0.5 * x * (1 + torch.tanh(…))` is one run of eight).
    Where the sites have their columns, a module call is one evaluation of the expression
    at its column, whatever it calls (`for conv in (self.conv1, self.conv2): x = conv(x)`
    is two runs; `act(act(x))` and `self.b(self.a(x))` one); an op is told by its column
    and what it is (a torch helper the line called makes several ops at one column). In a
    graph without columns, calls are told by what they call: a statement calling one thing
    twice the same way looks like two runs, a loop whose calls differ in their arguments
    like one run (fewer runs is the safer mistake), but the items of one ModuleList or
    Sequential are alike whatever their class and settings."""
    by_parent: dict[Optional[int], list[int]] = {}
    for i in tops:
        by_parent.setdefault(parent[i], []).append(i)
    site = nodes[tops[0]]["site"]
    file, line, func = site["file"], site["line"], site.get("func", "")
    columns = all(nodes[i]["site"].get("col") is not None for i in tops)

    def other_statement(k: int) -> bool:
        s = nodes[k].get("site")
        return bool(s) and s["file"] == file and s.get("func", "") == func and s["line"] != line

    def key(i: int) -> tuple[Any, ...]:
        """What must repeat for calls to be one run each: with columns, the same expression;
        else the same callable, with the same arguments, of the same module attribute
        (`blocks.0` and `blocks.1` alike; `stem` and `blocks` not: `self.blocks(self.stem(x))`
        is one run). The items of one container are alike whatever their class and settings:
        a stack's first layer is often wider in, and a Sequential's layers are of several
        kinds (Linear, ReLU, Linear)."""
        n = nodes[i]
        if columns and n["kind"] == "module":
            return ("module", n["site"]["col"])
        raw = n.get("path") or ""
        path = _INDEX.sub(r"\1#", raw)
        told = (
            (n["kind"], path)
            if path != raw
            else (n["kind"], n.get("target") or "", n["name"], path, repr(n.get("attrs")))
        )
        return (n["site"]["col"], *told) if columns else told

    out: list[list[int]] = []
    for p, siblings in by_parent.items():
        if len(siblings) == 1:  # the line's calls in a module called once per parent
            out.append(siblings)
            continue
        kids = children.get(p, [])
        segment: list[int] = [siblings[0]]
        for i, j in zip(siblings, siblings[1:]):
            between = kids[bisect_right(kids, i) : bisect_left(kids, j)]
            if any(other_statement(k) for k in between):
                out.extend(_by_period(segment, key))
                segment = []
            segment.append(j)
        out.extend(_by_period(segment, key))
    out.sort(key=lambda run: run[0])
    return out


def _by_period(calls: list[int], key: Any) -> list[list[int]]:
    """Calls made back to back, cut into the shortest pattern that repeats to make them all."""
    keys = [key(i) for i in calls]
    n = len(keys)
    for d in range(1, n + 1):
        if n % d == 0 and all(keys[i] == keys[i - d] for i in range(d, n)):
            return [calls[i : i + d] for i in range(0, n, d)]
    return [calls]  # not reached: d == n always matches


# -- text positions ----------------------------------------------------------------------


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def index_of_utf16(text: str, column: int) -> int:
    """The str index of an LSP (UTF-16) column."""
    units = 0
    for i, ch in enumerate(text):
        if units >= column:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def _in_name(ch: str) -> bool:
    """A character that may continue a Python identifier (Unicode: `ö`, `λ`, a combining
    mark)."""
    return ("a" + ch).isidentifier()


def word_at(text: str, column: int) -> Optional[tuple[str, int, int]]:
    """The identifier under an LSP column of one line (or just before it), by Python's
    identifier rules, with its start and end columns (UTF-16)."""
    at = index_of_utf16(text, column)
    start = end = at
    while start > 0 and _in_name(text[start - 1]):
        start -= 1
    while end < len(text) and _in_name(text[end]):
        end += 1
    while start < end and not text[start].isidentifier():  # `3e5`: the name is `e5`
        start += 1
    if start >= end or not start <= at <= end:
        return None
    return text[start:end], utf16_len(text[:start]), utf16_len(text[:end])


# -- LSP values ------------------------------------------------------------------------------


def inlay_hints(
    lines: dict[int, LineInfo], doc_lines: Sequence[str], first: int, last: int
) -> list[types.InlayHint]:
    """A hint at the end of each hinted line from `first` to `last` (inclusive)."""
    out: list[types.InlayHint] = []
    for line in sorted(lines):
        if line < first or line > last or line >= len(doc_lines):
            continue
        label = lines[line].label()
        if label is None:
            continue
        out.append(
            types.InlayHint(
                position=types.Position(line=line, character=utf16_len(doc_lines[line])),
                label=label,
                kind=types.InlayHintKind.Type,
                padding_left=True,
            )
        )
    return out


def hover(
    info: LineInfo, graph: str, device: str, line: int, text: str, column: int
) -> Optional[types.Hover]:
    """The hover at `column` of hinted line `line` (its text: `text`); none on its indentation.
    Its range is the word under the cursor (or that one character), so that moving onto another
    name of the line asks again."""
    if column < utf16_len(text) - utf16_len(text.lstrip()):
        return None
    found = word_at(text, column)
    start, end = (found[1], found[2]) if found else (column, column + 1)
    before = text[: index_of_utf16(text, start)]
    owner, at = _owner(before) if found else ("", len(before))
    # where the call of this name starts, as Python counts columns (UTF-8 bytes)
    col = len(before[:at].encode("utf-8", "surrogatepass"))
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown,
            value=hover_markdown(info, graph, device, found[0] if found else None, owner, col),
        ),
        range=types.Range(
            start=types.Position(line=line, character=start),
            end=types.Position(line=line, character=end),
        ),
    )


def hover_markdown(
    info: LineInfo,
    graph: str,
    device: str,
    word: Optional[str] = None,
    owner: str = "",
    col: Optional[int] = None,
) -> str:
    """The hover of a hinted line; `word` (the identifier under the cursor) narrows it to the
    calls of that name on the line (`relu` in `self.fc(x).relu()`); `owner`, what the word
    is an attribute of (`self`, `F`), and `col`, where its call starts, to the calls it can
    be among its namesakes."""
    picked = _calls_named(info, word, owner, col) if word else []
    parts: list[str] = []
    if picked:
        calls = picked
        tensors = _alike(t for m in picked for t in m.outputs)
        first = picked[0]
        parts.append(f"{_call_name(first)}" + (f" · ran {len(picked)}×" if len(picked) > 1 else ""))
    else:
        calls = list(info.made())
        tensors = _alike(t for run in info.runs for t in run.outputs)
        if not tensors and info.error:  # what the line made before the call that raised
            tensors = _alike(t for m in calls for t in m.outputs)
        kinds = {tuple(m.name for m in run.made): run for run in info.runs}
        if len(kinds) == 1:
            names = " → ".join(_call_name(m) for m in info.runs[0].made[:4])
            if len(info.runs[0].made) > 4:
                names += " → …"
        else:  # a loop over layers of several kinds (Linear, ReLU, …): each kind once
            seen = dict.fromkeys(m.name for run in kinds.values() for m in run.made)
            names = ", ".join(f"**{_escape(n)}**" for n in list(seen)[:4])
            if len(seen) > 4:
                names += ", …"
        parts.append(names + (f" · ran {len(info.runs)}×" if len(info.runs) > 1 else ""))
        if len(info.runs) > 1:
            paths = [m.path for m in (info.runs[0].made[0], info.runs[-1].made[0]) if m.path]
            if len(paths) == 2 and paths[0] != paths[1]:
                parts[-1] += f" ({_code(paths[0])} … {_code(paths[1])})"
    for group in tensors[:MAX_TENSORS]:
        parts.append(_tensor_text(group, device))
    if len(tensors) > MAX_TENSORS:
        parts.append(f"… {len(tensors) - MAX_TENSORS} more")
    cost = _cost_text([m.cost for m in calls], len(calls))
    if cost:
        parts.append(cost)
    if info.error:
        parts.append(f"raised **{_escape(info.error)}**")
    ids = [m.node for m in calls]
    args = [{"graph": graph, "node": ids[0], "nodes": ids[:MAX_REVEAL]}]
    link = f"command:{REVEAL_COMMAND}?{quote(json.dumps(args, separators=(',', ':')))}"
    parts.append(f"[Show in graph]({link})")
    return "\n\n".join(parts)


# what a name is called on when it is a function of torch's (`F.relu`, `torch.nn.functional.relu`)
_TORCH_OWNERS = frozenset(("F", "torch", "functional", "nn.functional", "torch.nn.functional"))
_OWNER_REACH = 200  # characters before a word looked at for what it is called on
_OWNER = re.compile(r"((?:[^\W\d]\w*\s*\.\s*)+)$")


def _owner(before: str) -> tuple[str, int]:
    """The dotted name a word is an attribute of, from the text just before it: `self` for
    `self.relu`, `self.block` for `self.block.fc`, `F` for `F.relu`; "" for a bare name. And
    where in `before` it starts (its length for a bare name): where the word's call does."""
    reach = before[-_OWNER_REACH:]  # (the regex is quadratic in its text)
    found = _OWNER.search(reach)
    if found is None:
        return "", len(before)
    return re.sub(r"\s+", "", found.group(1)).rstrip("."), len(before) - len(reach) + found.start()


def _calls_named(info: LineInfo, word: str, owner: str, col: Optional[int] = None) -> list[Made]:
    """The line's calls a cursor on `word` means. Namesakes on one line are told apart by
    their names as written (`add_` is not `add`), by what the word is called on (`self.relu`
    is a module, `F.relu` and `torch.relu` are ops) and by the column their call starts at
    (`col`: the two `act` of `self.act(self.act(x))`; a graph without columns can't)."""
    named = [m for m in info.made() if word.strip("_") in m.words()]
    if len(named) < 2:
        return named
    exact = [m for m in named if word in m.words(as_written=True)]
    named = exact or named
    if owner == "self" or owner.startswith("self."):
        kind = [m for m in named if m.kind == "module"]
    elif owner in _TORCH_OWNERS:
        kind = [m for m in named if m.kind != "module"]
    else:
        kind = named
    named = kind or named
    if col is not None:
        at = [m for m in named if m.col == col]
        named = at or named  # (a call starting elsewhere, `x.float().relu()`: all of them)
    return named


def _alike(tensors: Iterable[TensorOut]) -> list[list[TensorOut]]:
    """The tensors grouped by shape and dtype (a loop's layers, `a, b = f(x), g(x)`): one
    line each in the hover, its statistics over them all."""
    groups: dict[tuple[Any, str], list[TensorOut]] = {}
    for t in tensors:
        groups.setdefault((t.shape, t.dtype), []).append(t)
    return list(groups.values())


def _call_name(m: Made) -> str:
    if m.kind == "module":
        return f"**{_escape(m.name)}**" + (f" {_code(m.path)}" if m.path else "")
    return f"**{_escape(m.name or m.target)}**"


def _tensor_text(group: list[TensorOut], device: str) -> str:
    """A group of tensors alike (`_alike`): its shape and dtype, and the statistics of its
    one tensor, or over them all — min, max, the zeros, NaN and Inf counts (a NaN made by a
    later layer of a loop is not hidden by the first one's numbers)."""
    t = group[0]
    head = f"`{shape_text(t.shape)}` {_escape(t.dtype)}" + (
        f" · {_escape(device)}" if device else ""
    )
    stats = [t.stats for t in group if t.stats]
    if not stats:
        return head
    if len(group) > 1:
        head += f" · {len(group)} tensors"
    if len(stats) == 1:
        bits = [
            f"{k} {_number(stats[0][k])}" for k in ("min", "max", "mean", "std") if k in stats[0]
        ]
    else:
        bits = []
        for k, pick in (("min", min), ("max", max)):
            ends = [s[k] for s in stats if _is_number(s.get(k))]
            if ends:
                bits.append(f"{k} {_number(pick(ends))}")
    # `zeros` is the fraction of the values that are 0 (docs/graph-format.md)
    zeros = [float(s["zeros"]) for s in stats if _is_number(s.get("zeros"))]
    sizes = [s["numel"] for s in stats if isinstance(s.get("numel"), int) and s["numel"]]
    if len(zeros) == len(sizes) == len(stats):
        count = sum(round(z * n) for z, n in zip(zeros, sizes))
        bits.append(f"zeros {count:,} ({_percent(count / sum(sizes))})")
    elif len(zeros) == len(stats) == 1:
        bits.append(f"zeros {_percent(zeros[0])}")
    for k in ("nan", "inf"):
        v = sum(s[k] for s in stats if _is_number(s.get(k)))
        if v:
            bits.append(f"**{k} {v:,}**")
    return head + "  \n" + " · ".join(bits) if bits else head


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _percent(f: float) -> str:
    """A fraction as the viewer writes it (units.ts formatShare): short of all is not all."""
    if 0.9995 <= f < 1:
        return ">99.9%"
    return f"{100 * f:.3g}%"


def _cost_text(costs: list[Optional[dict[str, Any]]], calls: int) -> str:
    known = [c for c in costs if c]
    if not known:
        return ""
    total = {k: sum(float(c.get(k) or 0) for c in known) for k in ("flops", "bytes", "time_ns")}
    bits = []
    if any("flops" in c for c in known):
        bits.append(human_flops(int(total["flops"])))
    if any("bytes" in c for c in known):
        bits.append(human_bytes(int(total["bytes"])))
    if any("time_ns" in c for c in known):
        bits.append(human_time(int(total["time_ns"])))
    return " · ".join(bits) + (f" (total of {calls} calls)" if calls > 1 else "")


def _number(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return _escape(str(v))
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return f"{v:.4g}"


def _escape(text: str) -> str:
    """User and graph text shown literally in markdown."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>])", r"\\\1", text)


def _code(text: str) -> str:
    """`text` as an inline code span, never markup (a module path: anyone can name a module
    `` fc` [x](https://…) ` ``, and a graph file anyone made holds any path). A code span ends
    at a run of as many backticks as it opened with: it opens with one more than the longest
    run inside, spaced off a backtick at either end (CommonMark takes that space away). A
    line break is a space, as a code span shows it anyway: a blank line would end the span's
    paragraph, and markup after it would be read."""
    text = re.sub(r"[\r\n]+", " ", text)
    fence = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
