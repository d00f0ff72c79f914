"""A file's definitions without its top-level work: what a trace loads from a script-style
file (a training loop at top level, a checkpoint written, a job started) so that visualizing a
model never runs them. Pure `ast`: no torch, nothing executed.

Kept: imports, function and class definitions, assignments of plain values (no call inside),
assignments the kept code needs (a global a class or function reads, the target instance and
what it is built from), `if`/`try` blocks reduced to what they keep, setup calls (seeds,
`sys.path`, warnings), operator registrations (`torch.library`: a Library and what is
defined in it) and argparse's configuration (`parser.add_argument(...)`: a model sized by
`args = parser.parse_args()` is built with the defaults). Skipped: loops, `with`
blocks, bare calls (`train()`, `torch.save(...)`, `print(...)`), assignments from calls that
nothing kept reads. The skipped statements that do work are listed, so the user can be told
what did not run and asked before running it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Optional, Union

Def = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]
# `type X = ...` (Python 3.12): a definition too
_TYPE_ALIAS: tuple[type, ...] = tuple(
    t for t in (getattr(ast, "TypeAlias", None),) if isinstance(t, type)
)


@dataclass
class Skipped:
    line: int  # 1-based
    text: str  # one line, shortened: what the user is told
    binds: frozenset[str] = frozenset()  # names it would have defined

    def to_wire(self) -> dict[str, object]:
        return {"line": self.line, "text": self.text}


def _bound_names(stmt: ast.stmt) -> frozenset[str]:
    """Names a statement (and any block inside it) assigns, defines or imports."""
    names: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


@dataclass
class Definitions:
    tree: ast.Module  # compile() it with the file's name: line numbers are the file's own
    skipped: list[Skipped] = field(default_factory=list[Skipped])  # work that did not run


def _names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _targets(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):
        nodes: list[ast.expr] = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        nodes = [stmt.target]
    else:
        return set()
    return {n.id for t in nodes for n in ast.walk(t) if isinstance(n, ast.Name)}


def _has_call(node: Optional[ast.AST]) -> bool:
    return node is not None and any(
        isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)) for n in ast.walk(node)
    )


def is_main_guard(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1:
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in sides) and any(
        isinstance(n, ast.Constant) and n.value == "__main__" for n in sides
    )


def _describe(stmt: ast.stmt, source: str) -> str:
    """The statement's first line, shortened: `for step in range(30):`, `torch.save(...)`."""
    text = (ast.get_source_segment(source, stmt) or "").strip().splitlines()
    first = text[0] if text else type(stmt).__name__
    return first if len(first) <= 60 else first[:59] + "…"


class _Plan:
    """Which top-level statements to keep, decided in two passes over the (flattened) file."""

    def __init__(self, tree: ast.Module, keep_names: set[str]) -> None:
        self.needed = set(keep_names)
        self.kept: set[int] = set()  # id() of kept statements
        self.op_libraries: set[str] = set()  # names bound to a torch.library.Library
        flat = list(_flatten(tree.body))
        changed = True
        while changed:  # what kept code reads, transitively
            changed = False
            for stmt in flat:
                if id(stmt) in self.kept or not self._keeps(stmt):
                    continue
                self.kept.add(id(stmt))
                self.needed |= _names_read(stmt)
                changed = True

    def _keeps(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass, ast.Global, ast.Nonlocal)):
            return True
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, *_TYPE_ALIAS)):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return True  # a docstring
        if is_setup_call(stmt):
            return True
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _makes_op_library(stmt.value):
            self.op_libraries |= _targets(stmt)  # registers operators a forward may call
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            name = dotted(stmt.value.func) or ""
            if name.partition(".")[0] in self.op_libraries:  # lib.define(...), lib.impl(...)
                return True
            if "." in name and name.rsplit(".", 1)[1] in _ARGPARSE_CONFIG:
                return True  # parser.add_argument(...): what `args = parser.parse_args()` reads
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            value = stmt.value
            return not _has_call(value) or bool(_targets(stmt) & self.needed)
        if isinstance(stmt, ast.AugAssign):
            return bool(_targets(stmt) & self.needed)
        return False


def _flatten(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level statements, with those inside `if`/`try` blocks (not the main guard)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            if is_main_guard(stmt.test):
                continue
            out += _flatten(stmt.body) + _flatten(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            parts = [stmt.body, stmt.orelse, stmt.finalbody, *[h.body for h in stmt.handlers]]
            for part in parts:
                out += _flatten(part)
        else:
            out.append(stmt)
    return out


def definitions(source: str, keep_names: set[str], filename: str = "<file>") -> Definitions:
    """The file's definitions (`keep_names`: the target's name, whose statement must stay);
    raises SyntaxError like compile()."""
    tree = ast.parse(source, filename=filename)
    plan = _Plan(tree, keep_names)
    skipped: list[Skipped] = []

    def reduce(body: list[ast.stmt]) -> list[ast.stmt]:
        kept: list[ast.stmt] = []
        for stmt in body:
            if isinstance(stmt, ast.If):
                if is_main_guard(stmt.test):
                    continue  # never runs on import anyway
                inner, orelse = reduce(stmt.body), reduce(stmt.orelse)
                if inner or orelse:
                    new_if = ast.If(test=stmt.test, body=inner or [ast.Pass()], orelse=orelse)
                    kept.append(ast.copy_location(new_if, stmt))
            elif isinstance(stmt, ast.Try):
                inner, orelse, final = (
                    reduce(stmt.body),
                    reduce(stmt.orelse),
                    reduce(stmt.finalbody),
                )
                if inner or orelse or final:
                    handlers = [
                        ast.copy_location(
                            ast.ExceptHandler(
                                type=h.type, name=h.name, body=reduce(h.body) or [ast.Pass()]
                            ),
                            h,
                        )
                        for h in stmt.handlers
                    ]
                    new_try = ast.Try(
                        body=inner or [ast.Pass()],
                        handlers=handlers,
                        orelse=orelse,
                        finalbody=final,
                    )
                    kept.append(ast.copy_location(new_try, stmt))
            elif id(stmt) in plan.kept:
                kept.append(stmt)
            elif _does_work(stmt):
                skipped.append(Skipped(stmt.lineno, _describe(stmt, source), _bound_names(stmt)))
        return kept

    body = reduce(tree.body)
    module = ast.Module(body=body, type_ignores=[])
    ast.fix_missing_locations(module)
    return Definitions(module, skipped)


# Calls a script makes at top level that set things up rather than do work: kept, so that
# `sys.path.insert(0, ...)` before an import or a seed before building a model still run.
_SETUP_CALLS = (
    "sys.path.",
    "warnings.",
    "logging.",
    "os.environ.",
    "torch.manual_seed",
    "torch.set_default_dtype",
    "torch.set_float32_matmul_precision",
    "torch.backends.",
    "random.seed",
    "np.random.seed",
    "numpy.random.seed",
    "matplotlib.use",
    "torch.library.",  # operators a forward calls: define, impl, register_fake …
)


# argparse's configuration calls: a parser set up at top level, parsed for the model's sizes
_ARGPARSE_CONFIG = frozenset(
    ("add_argument", "add_argument_group", "add_mutually_exclusive_group", "set_defaults")
)


def _makes_op_library(value: Optional[ast.expr]) -> bool:
    """`torch.library.Library(...)` (or `Library(...)` imported from it)."""
    if not isinstance(value, ast.Call):
        return False
    name = dotted(value.func) or ""
    return name in ("Library", "library.Library", "torch.library.Library")


def dotted(expr: ast.expr) -> Optional[str]:
    """`a.b.C` → "a.b.C"; anything else (calls, subscripts) → None."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.insert(0, expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.insert(0, expr.id)
        return ".".join(parts)
    return None


def is_setup_call(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    name = dotted(stmt.value.func) or ""
    return any(name == p or name.startswith(p) for p in _SETUP_CALLS)


def _does_work(stmt: ast.stmt) -> bool:
    """A statement worth telling the user about when it is skipped: it runs something."""
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
        return True
    return _has_call(stmt)


_QUOTED = re.compile(r"""['"]([A-Za-z_][\w.]*)['"]""")


def suspects(skipped: list[Skipped], error: str) -> list[Skipped]:
    """The skipped statements an error message points at: a name or key it quotes ('VOCAB',
    'scale') that a statement binds or mentions. A forward that raises about what top-level
    code would have made is then offered that code, not called broken."""
    words = {w for quoted in _QUOTED.findall(error) for w in {quoted, quoted.rsplit(".", 1)[-1]}}
    words = {w for w in words if len(w) > 1}
    if not words or not skipped:
        return []
    mentions = re.compile(r"\b(" + "|".join(map(re.escape, sorted(words))) + r")\b")
    return [s for s in skipped if s.binds & words or mentions.search(s.text)]


def defining(skipped: list[Skipped], exc: Optional[BaseException]) -> list[Skipped]:
    """The skipped statements that bind the name an input expression's NameError names
    (`--input EXAMPLE` where `EXAMPLE = torch.randn(...)` was left out); none for any other
    error (its quoted words name anything: `module 'torch' has no attribute …`)."""
    name = getattr(exc, "name", None) if isinstance(exc, NameError) else None
    return [s for s in skipped if name in s.binds] if name else []


def skipped_lines(skipped: list[Skipped], most: int = 3) -> str:
    """`line 5: EXAMPLE = …; line 9: …`: the first `most` of them, each once."""
    return "; ".join(list(dict.fromkeys(f"line {s.line}: {s.text}" for s in skipped))[:most])
