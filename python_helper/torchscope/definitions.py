"""A file's definitions without its top-level work: what a trace loads from a script-style
file (a training loop at top level, a checkpoint written, a job started) so that visualizing a
model never runs them. Pure `ast`: no torch, nothing executed.

Kept: imports, function and class definitions, assignments of plain values (no call inside),
assignments the kept code needs (a global read by the target, by a function or class it uses
or by what defining one evaluates; the target instance and what it is built from; not what
only an unused function reads: `train()`'s data loader or log file), `if`/`try` blocks
reduced to what they keep, setup calls (seeds, `sys.path`, warnings), operator registrations
(`torch.library`: a Library and what is defined in it) and argparse's configuration
(`parser.add_argument(...)`: a model sized by `args = parser.parse_args()` is built with the
defaults). Skipped: loops, `with` blocks, bare calls (`train()`, `torch.save(...)`,
`print(...)`), assignments from calls that nothing kept reads. The skipped statements that do
work are listed, so the user can be told what did not run and asked before running it.
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
    """Which top-level statements to keep, decided in passes over the (flattened) file until
    nothing more is needed. A `def` or `class` is always kept (defining it runs nothing of
    its body), with what defining it evaluates (decorators, defaults, annotations, bases, a
    class body); what its body reads is needed only when the function or class is: read by
    the target or by code kept (a call, a decorator, a default, a method of a used class),
    decorated by what may register it, or reachable by name at run time (`globals()`)."""

    def __init__(self, tree: ast.Module, keep_names: set[str]) -> None:
        self.needed = set(keep_names)
        self.kept: set[int] = set()  # id() of kept statements
        self.opened: set[int] = set()  # id() of kept defs whose bodies are needed
        self.op_libraries: set[str] = set()  # names bound to a torch.library.Library
        self.lazy_annotations = _future_annotations(tree)
        flat = list(_flatten(tree.body))
        # what the file's own construction of the target passes (`Wide(hidden=HIDDEN)` in
        # `main()`): build_target evaluates those arguments when the class needs them
        self.arguments = _target_arguments(flat, keep_names)
        changed = True
        while changed:  # what kept code reads, transitively
            changed = False
            every_body = bool(self.needed & _LOOKS_UP_NAMES)
            for stmt in flat:
                if id(stmt) not in self.kept and self._keeps(stmt):
                    self.kept.add(id(stmt))
                    self.needed |= self._reads_when_run(stmt)
                    changed = True
                if (
                    isinstance(stmt, _DEFS)
                    and id(stmt) not in self.opened
                    and (every_body or stmt.name in self.needed or _registers(stmt))
                ):
                    self.opened.add(id(stmt))
                    self.needed |= _names_read(stmt) | _global_names(stmt)
                    changed = True

    def _reads_when_run(self, stmt: ast.stmt) -> set[str]:
        """What running the statement at import reads: for a definition, what defining it
        evaluates, not its body."""
        if isinstance(stmt, _DEFS):
            return _definition_reads(stmt, self.lazy_annotations)
        return _names_read(stmt)

    def _keeps(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass, ast.Global, ast.Nonlocal)):
            return True
        if isinstance(stmt, (*_DEFS, *_TYPE_ALIAS)):
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
            if not _has_call(value) or bool(_targets(stmt) & self.needed):
                return True
            # (a constant the target's construction passes, computed by builtins: int("7"))
            return bool(_targets(stmt) & self.arguments) and _only_value_calls(value)
        if isinstance(stmt, ast.AugAssign):
            return bool(_targets(stmt) & self.needed)
        return False


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

# names code uses to reach the file's functions without naming them (`globals()[name]`,
# `eval(text)`): where kept code does, every function's body is needed (as it reads them)
_LOOKS_UP_NAMES = frozenset(("globals", "eval", "exec"))

# decorators that only wrap a function or class (no registry keeps it for later): a
# `@torch.no_grad() def evaluate()` nothing calls is unused; any other decorator may keep
# what it decorates (`@register_model`, `@torch.library.custom_op(...)`, `@torch.jit.script`)
_WRAPPERS = frozenset(
    (
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
        "torch.set_grad_enabled",
        "torch.autocast",
        "torch.compile",
        "no_grad",
        "inference_mode",
        "staticmethod",
        "classmethod",
        "property",
        "functools.wraps",
        "wraps",
        "functools.cache",
        "functools.lru_cache",
        "lru_cache",
        "cache",
        "contextlib.contextmanager",
        "contextmanager",
        "dataclass",
        "dataclasses.dataclass",
        "typing.overload",
        "overload",
        "hydra.main",
        "click.command",
        "click.option",
        "click.argument",
    )
)

# builtins that only compute a value from their arguments: a constant the target's
# construction passes (`HIDDEN = int("7")`) may be computed by them
_VALUE_CALLS = frozenset(
    "int float str bool len min max sum abs round tuple list dict set range sorted".split()
)


def _future_annotations(tree: ast.Module) -> bool:
    """`from __future__ import annotations`: annotations are never evaluated by a `def`."""
    return any(
        isinstance(s, ast.ImportFrom)
        and s.module == "__future__"
        and any(a.name == "annotations" for a in s.names)
        for s in tree.body
    )


def _definition_reads(node: ast.stmt, lazy_annotations: bool) -> set[str]:
    """What a `def` or `class` statement evaluates when it runs: decorators, defaults and
    (unless postponed) annotations of a function; decorators, bases and the body of a class,
    whose methods are definitions too. Not a function's body: it runs when called."""
    if isinstance(node, ast.ClassDef):
        names: set[str] = set()
        for part in (*node.decorator_list, *node.bases, *node.keywords):
            names |= _names_read(part)
        for stmt in node.body:
            if isinstance(stmt, _DEFS):
                names |= _definition_reads(stmt, lazy_annotations)
            elif not (lazy_annotations and isinstance(stmt, ast.AnnAssign)):
                names |= _names_read(stmt)
            elif stmt.value is not None:  # `x: Later = value`: the value only
                names |= _names_read(stmt.value)
        return names
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _names_read(node)
    a = node.args
    parts: list[Optional[ast.AST]] = [*node.decorator_list, *a.defaults, *a.kw_defaults]
    if not lazy_annotations:
        every = (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
        parts += [node.returns, *(arg.annotation for arg in every if arg is not None)]
    return {name for part in parts if part is not None for name in _names_read(part)}


def _global_names(node: ast.AST) -> set[str]:
    """The module-level names a function declares `global`: it uses what the file binds."""
    return {n for g in ast.walk(node) if isinstance(g, ast.Global) for n in g.names}


def _registers(node: ast.stmt) -> bool:
    """A definition with a decorator that may keep it somewhere (not a plain wrapper):
    reachable without its name being read."""
    decorators = getattr(node, "decorator_list", [])
    for d in decorators:
        func = d.func if isinstance(d, ast.Call) else d
        if (dotted(func) or "") not in _WRAPPERS:
            return True
    return False


def _target_arguments(flat: list[ast.stmt], keep_names: set[str]) -> set[str]:
    """The names the arguments of the file's own calls of a kept name read, in functions
    (`main()`) whose bodies are not otherwise needed."""
    names: set[str] = set()
    for stmt in flat:
        if not isinstance(stmt, _DEFS):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and dotted(node.func) in keep_names:
                for arg in (*node.args, *node.keywords):
                    names |= _names_read(arg)
    return names


def _only_value_calls(value: Optional[ast.AST]) -> bool:
    """The value calls nothing but builtins that compute values (`int("7")`, `len(SIZES)`)."""
    if value is None:
        return False
    for node in ast.walk(value):
        if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Call) and dotted(node.func) not in _VALUE_CALLS:
            return False
    return True


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
