"""The calls on the line a program is paused at, with arguments safe to evaluate again.

A breakpoint on `out = model(x, mask=m)` stops before the call runs: its arguments are the
model's real inputs, and they can be read in the paused frame without running the program's
code. Only expressions that read values are taken (names, attributes, subscripts, literals,
`*`/`**` of them) and the tensor methods that make a new tensor from one (`x.to(device)`,
`batch["x"].float()`); anything else (`next(loader)`, a function of the user's) is never
evaluated, and the line's call is not used.

Pure: source text in, expressions out (`frames.call_on_line` reads them with `safe_read`,
which runs none of the program's own code: its `__getitem__`, properties, `__getattr__`).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Optional

# methods of a tensor that return a new one and change nothing: safe to call again
TENSOR_METHODS = frozenset(
    (
        "to",
        "cpu",
        "cuda",
        "float",
        "double",
        "half",
        "bfloat16",
        "long",
        "int",
        "bool",
        "contiguous",
        "detach",
        "clone",
        "unsqueeze",
        "squeeze",
        "view",
        "reshape",
        "flatten",
        "permute",
        "transpose",
        "type",
    )
)
# statements' fields that hold other statements: a compound statement's header only
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass(frozen=True)
class LineCall:
    func: str  # the called expression: "model", "self.model"
    arguments: str  # what is between the parentheses: "inputs, *rest, mask=m, **extra"
    text: str  # the call, one line: "self.model(inputs, *rest, mask=m, **extra)"


@functools.lru_cache(maxsize=8)  # (every candidate of a paused frame asks about one line)
def calls_on_line(source: str, line: int, safe_arguments: bool = True) -> tuple[LineCall, ...]:
    """The calls in the statement running at `line` (innermost statement; a compound
    statement's header only) whose callee and arguments are all safe, outermost first
    (`safe_arguments=False`: whatever their arguments, for what the line calls)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    stmt = _statement_at(tree, line)
    if stmt is None:
        return ()
    found: list[LineCall] = []
    for node in _header_nodes(stmt):
        if (
            isinstance(node, ast.Call)
            and _reads(node.func)
            and (not safe_arguments or _safe_arguments(node))
        ):
            found.append(_line_call(node))
    return tuple(found)


def _statement_at(tree: ast.AST, line: int) -> Optional[ast.stmt]:
    best: Optional[ast.stmt] = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            end = getattr(node, "end_lineno", None) or node.lineno
            if node.lineno <= line <= end and (best is None or node.lineno >= best.lineno):
                best = node
    return best


def _header_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The nodes of `stmt` outside its nested statements, in source order (breadth first)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [
        value
        for name, value in ast.iter_fields(stmt)
        if name not in _BODIES
        for value in (value if isinstance(value, list) else [value])
        if isinstance(value, ast.AST)
    ]
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # code defined here, not run on this line
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _reads(node: ast.expr) -> bool:
    """An expression that only reads values."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _reads(node.value)
    if isinstance(node, ast.Subscript):
        return _reads(node.value) and _reads(node.slice)
    if isinstance(node, ast.Slice):
        return all(p is None or _reads(p) for p in (node.lower, node.upper, node.step))
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_reads(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is None or _reads(k) for k in node.keys) and all(
            _reads(v) for v in node.values
        )
    if isinstance(node, ast.Starred):
        return _reads(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _reads(node.operand)
    if isinstance(node, ast.Call):  # x.to(device), batch["x"].float()
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in TENSOR_METHODS
            and _reads(func.value)
            and _safe_arguments(node)
        )
    return False


def _safe_arguments(call: ast.Call) -> bool:
    return all(_reads(a) for a in call.args) and all(_reads(k.value) for k in call.keywords)


def _line_call(call: ast.Call) -> LineCall:
    func = ast.unparse(call.func)
    text = ast.unparse(call)
    return LineCall(func, text[len(func) + 1 : -1], text)
