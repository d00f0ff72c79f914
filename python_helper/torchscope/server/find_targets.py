"""Static analysis of a Python file with `ast`: which names are models, what is at a position,
and a call of a target with literal arguments. Nothing is executed and torch is never imported.

Base classes are resolved through the file's imports: `nn.Module` under any alias, transformers
model classes, and classes of the same file or of other project files (found next to the file,
in its package tree, or under the extra roots the server passes) whose own bases are modules.
Files outside those roots (site-packages) are never read.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Optional, Union

from ..definitions import dotted, is_main_guard
from ..usercode import read_source

# -- what counts as a model class outside the project ---------------------------------------

_NOT_MODULES = {"Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer"}
_TRANSFORMERS_MODEL = re.compile(r"(PreTrainedModel|Model|For[A-Z]\w*)$")
_LIGHTNING = {
    "lightning.LightningModule",
    "lightning.pytorch.LightningModule",
    "pytorch_lightning.LightningModule",
}


def is_external_module_class(qualname: str) -> bool:
    """A fully qualified name from outside the project that is an `nn.Module` subclass."""
    if qualname in _LIGHTNING:
        return True
    head, _, last = qualname.rpartition(".")
    if not head or not last[:1].isupper() or last in _NOT_MODULES:
        return False
    if (
        head == "torch.nn"
        or head.startswith("torch.nn.modules")
        or head.startswith("torch.nn.parallel")
    ):
        return True
    if head == "transformers" or head.startswith("transformers."):
        return bool(_TRANSFORMERS_MODEL.search(last))
    if head.startswith("torchvision.models"):
        return True
    return False


# -- one parsed file ----------------------------------------------------------------------


@dataclass
class _Import:
    """A name bound by an import: module `module` (absolute dotted, or relative to `base`),
    then attribute `attr` of it (None for `import x.y as n`)."""

    module: str
    attr: Optional[str]
    base: Optional[Path]  # folder for a relative import; None for an absolute one


@dataclass
class FileInfo:
    path: Path
    tree: ast.Module
    text: str
    classes: dict[str, ast.ClassDef] = field(default_factory=dict[str, ast.ClassDef])
    functions: dict[str, Union[ast.FunctionDef, ast.AsyncFunctionDef]] = field(
        default_factory=dict[str, Union[ast.FunctionDef, ast.AsyncFunctionDef]]
    )
    imports: dict[str, _Import] = field(default_factory=dict[str, _Import])
    star_imports: list[_Import] = field(default_factory=list[_Import])
    aliases: dict[str, ast.expr] = field(default_factory=dict[str, ast.expr])  # `Base = nn.Module`
    instances: dict[str, ast.Assign] = field(
        default_factory=dict[str, ast.Assign]
    )  # module-level `x = call()`


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements that run when the file is imported (not under `if __name__ == "__main__"`)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            if is_main_guard(stmt.test):
                out.extend(_top_level(stmt.orelse))
                continue
            out.extend(_top_level(stmt.body))
            out.extend(_top_level(stmt.orelse))
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, stmt.orelse, stmt.finalbody, *[h.body for h in stmt.handlers]):
                out.extend(_top_level(part))
        elif isinstance(stmt, ast.With):
            out.extend(_top_level(stmt.body))
        else:
            out.append(stmt)
    return out


def parse(path: Path, text: str) -> Optional[FileInfo]:
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError):
        return None
    info = FileInfo(path, tree, text)
    for stmt in _top_level(tree.body):
        if isinstance(stmt, ast.ClassDef):
            info.classes[stmt.name] = stmt
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            info.functions[stmt.name] = stmt
        elif isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.asname:
                    info.imports[a.asname] = _Import(a.name, None, None)
                else:  # `import a.b` binds `a`
                    head = a.name.split(".")[0]
                    info.imports[head] = _Import(head, None, None)
        elif isinstance(stmt, ast.ImportFrom):
            base = None
            if stmt.level:
                base = path.parent
                for _ in range(stmt.level - 1):
                    base = base.parent
            module = stmt.module or ""
            for a in stmt.names:
                if a.name == "*":
                    info.star_imports.append(_Import(module, None, base))
                else:
                    info.imports[a.asname or a.name] = _Import(module, a.name, base)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            t = stmt.targets[0]
            if isinstance(t, ast.Name):
                if isinstance(stmt.value, (ast.Name, ast.Attribute)):
                    info.aliases[t.id] = stmt.value
                elif isinstance(stmt.value, ast.Call):
                    info.instances[t.id] = stmt
    return info


# -- resolving names across project files ---------------------------------------------------


@dataclass(frozen=True)
class External:
    qualname: str


@dataclass(frozen=True)
class ProjectClass:
    file: Path
    name: str


Resolved = Union[External, ProjectClass, None]


class Project:
    """Parsed files, cached by path and modification time, and the folders to look for imports."""

    def __init__(self, roots: tuple[Path, ...] = ()) -> None:
        self.roots = tuple(r.resolve() for r in roots)
        self._cache: dict[Path, tuple[float, Optional[FileInfo]]] = {}
        self._last_text: Optional[tuple[tuple[Path, int], Optional[FileInfo]]] = None

    def load(self, path: Path, text: Optional[str] = None) -> Optional[FileInfo]:
        """The parsed file; `text` (an editor's buffer) replaces what is on disk for this call.
        Other files are always read from disk."""
        path = path.resolve()
        if text is not None:
            key = (path, hash(text))
            if self._last_text is None or self._last_text[0] != key:
                self._last_text = (key, parse(path, text))
            return self._last_text[1]
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return None
        cached = self._cache.get(path)
        if cached and cached[0] == mtime:
            return cached[1]
        try:
            source = read_source(path)
        except (OSError, UnicodeDecodeError, SyntaxError):  # (bytes of no encoding)
            source = None
        info = parse(path, source) if source is not None else None
        self._cache[path] = (mtime, info)
        return info

    # the folders where `import a.b` may find a project file of `info`
    def _search_roots(self, info: FileInfo) -> list[Path]:
        roots = [info.path.parent]
        folder = info.path.parent
        while (folder / "__init__.py").exists():
            folder = folder.parent
            roots.append(folder)
        roots.extend(self.roots)
        return list(dict.fromkeys(roots))

    def _module_file(self, parts: list[str], roots: list[Path]) -> Optional[Path]:
        for root in roots:
            base = root.joinpath(*parts) if parts else root
            if parts and base.with_suffix(".py").is_file():
                return base.with_suffix(".py")
            if (base / "__init__.py").is_file():
                return base / "__init__.py"
        return None

    def resolve(self, info: FileInfo, name: str, seen: Optional[set[Any]] = None) -> Resolved:
        """What the dotted `name`, written in `info`'s file, refers to."""
        seen = set[Any]() if seen is None else seen
        key = (info.path, name)
        if key in seen:
            return None
        seen.add(key)
        head, _, rest = name.partition(".")
        if head in info.classes and not rest:
            return ProjectClass(info.path, head)
        if head in info.aliases:
            target = dotted(info.aliases[head])
            if target is not None and target != head:
                return self.resolve(info, f"{target}.{rest}" if rest else target, seen)
        imp = info.imports.get(head)
        if imp is None:
            for star in info.star_imports:
                found = self._resolve_in_module(info, star, [name], seen)
                if found is not None:
                    return found
            return None
        tail = ([imp.attr] if imp.attr else []) + (rest.split(".") if rest else [])
        return self._resolve_in_module(info, imp, tail, seen)

    def _resolve_in_module(
        self, info: FileInfo, imp: _Import, tail: list[str], seen: set[Any]
    ) -> Resolved:
        parts = [p for p in imp.module.split(".") if p]
        roots = [imp.base] if imp.base is not None else self._search_roots(info)
        names = parts + tail
        # the longest prefix that is a project file; the rest are names inside it
        low = len(parts) if imp.base is not None else max(len(parts), 1)
        for i in range(len(names), low - 1, -1):
            file = self._module_file(names[:i], roots)
            if file is None:
                continue
            inner = names[i:]
            if not inner:
                return None  # a module, not a class
            other = self.load(file)
            if other is None:
                return None
            return self.resolve(other, ".".join(inner), seen)
        if imp.base is not None:
            return None  # a relative import that names no project file
        if not tail and not imp.attr:
            return None
        return External(".".join(names))

    def is_module_class(
        self, info: FileInfo, cls: ast.ClassDef, seen: Optional[set[Any]] = None
    ) -> bool:
        seen = set[Any]() if seen is None else seen
        key = (info.path, cls.name)
        if key in seen:
            return False
        seen.add(key)
        for base in cls.bases:
            if isinstance(base, ast.Subscript):  # `Base[T]`: a generic model class
                base = base.value
            name = dotted(base)
            if name is None:
                continue
            if self.refers_to_module_class(info, name, seen):
                return True
        return False

    def refers_to_module_class(
        self, info: FileInfo, name: str, seen: Optional[set[Any]] = None
    ) -> bool:
        found = self.resolve(info, name)
        if isinstance(found, External):
            return is_external_module_class(found.qualname)
        if isinstance(found, ProjectClass):
            other = info if found.file == info.path else self.load(found.file)
            if other is None or found.name not in other.classes:
                return False
            return self.is_module_class(other, other.classes[found.name], seen)
        return False


def library_imports(info: FileInfo) -> set[str]:
    """Top-level names of the modules the file imports absolutely (`transformers`, `torch`, ...)."""
    found = {imp.module.split(".")[0] for imp in info.imports.values() if imp.base is None}
    found.update(imp.module.split(".")[0] for imp in info.star_imports if imp.base is None)
    return {m for m in found if m}


# -- what the server asks -----------------------------------------------------------------


@dataclass
class ModelClass:
    name: str
    line: int  # 0-based line of the `class` keyword
    character: int
    end_line: int  # 0-based last line of the class body


def module_classes(project: Project, info: FileInfo) -> list[ModelClass]:
    """`nn.Module` subclasses defined at module level, in file order."""
    out: list[ModelClass] = []
    for cls in info.classes.values():
        if project.is_module_class(info, cls):
            end = cls.end_lineno or cls.lineno
            out.append(ModelClass(cls.name, cls.lineno - 1, cls.col_offset, end - 1))
    return sorted(out, key=lambda c: c.line)


@dataclass
class Target:
    target: str
    kind: str  # "class" | "instance" | "factory"
    line: int  # 0-based line where the target is defined

    def to_wire(self) -> dict[str, object]:
        return {"target": self.target, "kind": self.kind, "line": self.line}


def utf16_to_index(line_text: str, character: int) -> int:
    """An LSP (UTF-16) column to a str index."""
    units = 0
    for i, ch in enumerate(line_text):
        if units >= character:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text)


def _byte_to_index(line_text: str, col: int) -> int:
    return len(line_text.encode("utf-8")[:col].decode("utf-8", errors="ignore"))


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _contains(node: ast.stmt, line: int) -> bool:
    """`line` is 1-based."""
    return _first_line(node) <= line <= (node.end_lineno or node.lineno)


# nn.Module methods that return the module itself: `Net().eval()` is still a Net
_RETURNS_SELF = frozenset(
    "eval train to cuda cpu float half double bfloat16 requires_grad_ apply to_empty share_memory".split()
)


def _is_module_call(project: Project, info: FileInfo, call: ast.expr) -> bool:
    while (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _RETURNS_SELF
        and isinstance(call.func.value, ast.Call)
    ):
        call = call.func.value
    if not isinstance(call, ast.Call):
        return False
    name = dotted(call.func)
    return name is not None and project.refers_to_module_class(info, name)


def _is_factory(
    project: Project, info: FileInfo, fn: Union[ast.FunctionDef, ast.AsyncFunctionDef]
) -> bool:
    if isinstance(fn, ast.AsyncFunctionDef):
        return False
    a = fn.args
    required = len(a.posonlyargs) + len(a.args) - len(a.defaults)
    # one that takes arguments is called as the file calls it (`ctor_call`), or with the
    # arguments asked for: only its body says it builds a model, never its name
    # (`make_optimizer(model, lr)`)
    takes_arguments = required > 0 or any(d is None for d in a.kw_defaults)
    if not takes_arguments and any(
        w in fn.name.lower() for w in ("model", "build", "make", "create")
    ):
        return True
    built: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and _is_module_call(project, info, node.value):
            built.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Tuple) and len(value.elts) == 2:
                value = value.elts[0]
            if _is_module_call(project, info, value):
                return True
            if isinstance(value, ast.Name) and value.id in built:
                return True
    return False


def _is_instance(project: Project, info: FileInfo, name: str) -> bool:
    stmt = info.instances.get(name)
    if stmt is None:
        return False
    call = stmt.value
    if _is_module_call(project, info, call):
        return True
    assert isinstance(call, ast.Call)
    fn_name = dotted(call.func)
    fn = info.functions.get(fn_name or "")
    return fn is not None and _is_factory(project, info, fn) and not call.args and not call.keywords


def _assigned_class(info: FileInfo, name: str) -> Optional[str]:
    """The class `X` of the first `name = X(...)` anywhere in the file."""
    for node in ast.walk(info.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return dotted(node.value.func)
    return None


def target_at(project: Project, info: FileInfo, line: int, character: int) -> Optional[Target]:
    """The target at an LSP position (0-based line, UTF-16 character)."""
    lines = info.text.splitlines()
    if line < 0 or line >= len(lines):
        return None
    row = line + 1
    index = utf16_to_index(lines[line], character)
    models = {c.name for c in module_classes(project, info)}
    for cls in info.classes.values():
        if cls.name in models and _contains(cls, row):
            return Target(cls.name, "class", cls.lineno - 1)
    for fn in info.functions.values():
        if _contains(fn, row) and _is_factory(project, info, fn):
            return Target(fn.name, "factory", fn.lineno - 1)
    # a name under the cursor: an instance, a model class, or a factory
    for node in ast.walk(info.tree):
        if not isinstance(node, (ast.Name, ast.Attribute)) or node.lineno != row:
            continue
        start = _byte_to_index(lines[line], node.col_offset)
        end = _byte_to_index(lines[line], node.end_col_offset or node.col_offset)
        if isinstance(node, ast.Attribute):
            start = end - len(node.attr)
        if not start <= index <= end:
            continue
        name = dotted(node)
        if name is None:
            continue
        if name in info.instances and _is_instance(project, info, name):
            stmt = info.instances[name]
            return Target(name, "instance", stmt.lineno - 1)
        if name in info.classes and name in models:
            return Target(name, "class", info.classes[name].lineno - 1)
        if name in info.functions and _is_factory(project, info, info.functions[name]):
            return Target(name, "factory", info.functions[name].lineno - 1)
        cls_name = _assigned_class(info, name) if isinstance(node, ast.Name) else None
        if cls_name in models:
            # `model = Net()` in a function or under `if __name__ == "__main__":` is not
            # importable: the class
            return Target(cls_name, "class", info.classes[cls_name].lineno - 1)
    # the whole statement `model = Net(...)` (cursor anywhere on it, past its end too) → the
    # instance when it is importable, else the class it builds
    top = {id(s) for s in _top_level(info.tree.body)}
    for stmt in ast.walk(info.tree):
        if not (
            isinstance(stmt, ast.Assign)
            and _contains(stmt, row)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.targets[0], ast.Name)
        ):
            continue
        name = stmt.targets[0].id
        if (
            id(stmt) in top
            and info.instances.get(name) is stmt
            and _is_instance(project, info, name)
        ):
            return Target(name, "instance", stmt.lineno - 1)
        cls_name = _built_class(stmt.value)
        if cls_name in models:
            return Target(cls_name, "class", info.classes[cls_name].lineno - 1)
    return None


def _built_class(call: ast.Call) -> Optional[str]:
    """`Net(...)` or `Net(...).eval().to(d)` → "Net"."""
    while (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in _RETURNS_SELF
        and isinstance(call.func.value, ast.Call)
    ):
        call = call.func.value
    return dotted(call.func)


def targets_in(project: Project, info: FileInfo) -> list[Target]:
    """Every target of the file, in file order: the model classes, the importable instances
    (`model = Net()` at module level) and the zero-argument factories."""
    found = [Target(c.name, "class", c.line) for c in module_classes(project, info)]
    for name, stmt in info.instances.items():
        if _is_instance(project, info, name):
            found.append(Target(name, "instance", stmt.lineno - 1))
    for fn in info.functions.values():
        if _is_factory(project, info, fn):
            found.append(Target(fn.name, "factory", fn.lineno - 1))
    return sorted(found, key=lambda t: t.line)


# -- a call of the target with literal arguments ---------------------------------------------

_ALLOWED_BUILTINS = {
    "True",
    "False",
    "None",
    "dict",
    "tuple",
    "list",
    "range",
    "len",
    "int",
    "float",
}


def _literal(expr: ast.expr, importable: set[str]) -> bool:
    """Only constants, and names bound by imports (`torch`, `np`) or builtins."""
    for node in ast.walk(expr):
        if (
            isinstance(node, ast.Name)
            and node.id not in importable
            and node.id not in _ALLOWED_BUILTINS
        ):
            return False
        if isinstance(node, (ast.Starred, ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield)):
            return False
    return True


def input_call(project: Project, info: FileInfo, target: str) -> Optional[str]:
    """The input expression of a call of `target` with literal arguments in the file, such as
    `model(torch.randn(2, 64))`, `Net()(torch.zeros(1, 3, 32, 32))`, or `m = Net(); m(x)`."""
    importable = set(info.imports)
    is_class = target in info.classes
    builds = is_class or target in info.functions  # `target(...)` makes a model
    callers: set[str] = set() if builds else {target}  # names that hold the model
    stand_ins = _StandIns.of(info)
    for node in ast.walk(info.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and builds:
            if dotted(node.value.func) == target:
                callers.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(info.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        direct = isinstance(func, ast.Name) and func.id in callers
        built = builds and isinstance(func, ast.Call) and dotted(func.func) == target
        if not (direct or built):
            continue
        if not node.args and not node.keywords:
            continue
        found = _call_arguments(node, importable, info, stand_ins, only_values=False)
        if found is None:
            continue
        seg = [(text, value) for key, text, value in found[0] if key is None]
        kw = [(key, text) for key, text, _ in found[0] if key is not None]
        if seg and kw:
            continue  # positional and keyword arguments together cannot be one input expression
        if kw:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in kw) + "}"
        if len(seg) == 1:
            text, value = seg[0]
            # one dict, list or tuple is one argument, not keywords or several (`as_call`)
            return f"({text},)" if _is_container(value) else text
        return "(" + ", ".join(text for text, _ in seg) + ")"
    if is_class:
        return _returned_example(info, target, importable)
    return None


class CtorCall(NamedTuple):
    """How the file itself builds a target: the call's arguments as text, its line, and
    whether argparse defaults stand in for `args.X` in them."""

    text: str
    line: int
    argparse_defaults: bool = False
    # False: arguments that can't be evaluated here (`Net(len(vocab))`): as written, for the
    # user to start from
    usable: bool = True


def ctor_call(info: FileInfo, target: str) -> Optional[CtorCall]:
    """The arguments of the file's own construction of class `target`, or call of factory
    function `target` (its first by line, anywhere: in `main()`, under the main guard), when
    they can be evaluated in the file's namespace — literals, imports, the file's classes and
    functions, its module-level names of plain values, and `args.X` of an argparse parser in
    the file whose `--X` has a literal default: `Wide(12)` → "12", `Net(Config(dim=8))` →
    "Config(dim=8)", `Net(args.dim)` with `add_argument("--dim", default=64)` → "64".
    None for a local only the program knows (`Net(cfg)`)."""
    if target not in info.classes and target not in info.functions:
        return None
    known = set(info.imports) | set(info.classes) | set(info.functions) | _plain_names(info)
    stand_ins = _StandIns.of(info)
    found: list[CtorCall] = []
    for node in ast.walk(info.tree):
        if not isinstance(node, ast.Call) or dotted(node.func) != target:
            continue
        if not (node.args or node.keywords):
            continue
        arguments = _call_arguments(node, known, info, stand_ins, only_values=True)
        if arguments is not None:
            parts = [f"{key}={text}" if key else text for key, text, _ in arguments[0]]
            found.append(CtorCall(", ".join(parts), node.lineno, arguments[1]))
        else:
            written = _written_arguments(node, info.text)
            if written:
                found.append(CtorCall(written, node.lineno, usable=False))
    # the first usable one, else the first as written
    return min(found, key=lambda c: (not c.usable, c.line)) if found else None


def _written_arguments(node: ast.Call, text: str) -> Optional[str]:
    """A call's arguments as the file writes them (`vocab_size=len(tok), dim=args.dim`)."""
    parts: list[str] = []
    for arg in node.args:
        parts.append(ast.get_source_segment(text, arg) or "")
    for k in node.keywords:
        value = ast.get_source_segment(text, k.value) or ""
        parts.append(f"{k.arg}={value}" if k.arg else f"**{value}")
    return ", ".join(parts) if all(parts) else None


@dataclass
class _StandIns:
    """What may stand in for a name in a call's arguments: the file's argparse options with
    literal defaults (for `args.X`, `args` bound to a parser's result), and the names the file
    binds exactly once, to an expression (`x = torch.randn(2, 64)`, `cfg = Config(dim=8)`)."""

    defaults: dict[str, ast.expr]
    parsed: set[str]
    values: dict[str, ast.expr]

    @staticmethod
    def of(info: FileInfo) -> _StandIns:
        defaults = _argparse_defaults(info)
        parsed = _parsed_args_names(info) if defaults else set()
        return _StandIns(defaults, parsed, _bound_once(info))


def _bound_once(info: FileInfo) -> dict[str, ast.expr]:
    """Names the file binds exactly once (any scope; a parameter, a loop variable, an import
    count), by a plain `name = expr`: the value it always has, wherever it is read."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in ast.walk(info.tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            counts[node.arg] = counts.get(node.arg, 0) + 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] = counts.get(node.name, 0) + 1
        elif isinstance(node, ast.alias):
            name = (node.asname or node.name).split(".")[0]
            counts[name] = counts.get(name, 0) + 1
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            values[node.targets[0].id] = node.value
    return {name: value for name, value in values.items() if counts.get(name) == 1}


def _call_arguments(
    node: ast.Call, known: set[str], info: FileInfo, stand_ins: _StandIns, only_values: bool
) -> Optional[tuple[list[tuple[Optional[str], str, ast.expr]], bool]]:
    """Each argument of the call as (keyword or None, source text, expression), with `args.X` filled with
    argparse's defaults and names bound once with their values (`_StandIns`), and whether an
    argparse default was used; None when one can't be evaluated from `known` names
    (`only_values`: and calls nothing but constructors of values, `_safe_calls`)."""
    if not only_values and any(k.arg is None for k in node.keywords):
        return None  # **kwargs: no one input expression
    out: list[tuple[Optional[str], str, ast.expr]] = []
    filled = False
    for keyword, value, spread in [(None, a, False) for a in node.args] + [
        (k.arg, k.value, k.arg is None) for k in node.keywords
    ]:
        value, changed, defaults = _stand_in(value, stand_ins, known)
        # what stood in for a name came from elsewhere in the file: it may only make values
        # (`x = torch.randn(2, 64)`, never `dataset = MNIST(root, download=True)`)
        if not _literal(value, known) or (
            (only_values or changed) and not _safe_calls(value, info)
        ):
            return None
        text = ast.unparse(value) if changed else ast.get_source_segment(info.text, value)
        if text is None:
            return None
        filled = filled or defaults
        out.append((keyword, f"**{text}" if spread else text, value))  # `**CONFIG`: a constructor's
    return out, filled


def _is_container(value: ast.expr) -> bool:
    """A dict, list or tuple display, or a `dict(...)`, `list(...)`, `tuple(...)` call."""
    if isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
        return True
    return isinstance(value, ast.Call) and dotted(value.func) in ("dict", "list", "tuple")


def _argparse_defaults(info: FileInfo) -> dict[str, ast.expr]:
    """`dest` → literal default of the file's `parser.add_argument(...)` calls (`--hidden-size`
    → hidden_size; `store_true` → False); a dest given two different defaults is left out."""
    imports = set(info.imports)
    out: dict[str, ast.expr] = {}
    clash: set[str] = set()
    for node in ast.walk(info.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        names = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        if not names or len(names) != len(node.args):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        dest_node = kw.get("dest")
        if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
            dest = dest_node.value
        else:
            long = [n for n in names if n.startswith("--")]
            short = [n for n in names if n.startswith("-")]
            dest = (long or short or names)[0].lstrip("-").replace("-", "_")
        default = _argparse_default(kw, imports)
        if default is None:
            continue
        if dest in out and ast.dump(out[dest]) != ast.dump(default):
            clash.add(dest)
        out[dest] = default
    for dest in clash:
        del out[dest]
    return out


def _argparse_default(kw: dict[str, ast.expr], imports: set[str]) -> Optional[ast.expr]:
    action = kw.get("action")
    flag = action.value if isinstance(action, ast.Constant) else None
    if "default" not in kw:
        return ast.Constant(flag == "store_false") if flag in _FLAGS else None
    value = kw["default"]
    if not _literal(value, imports):
        return None
    kind = kw.get("type")
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and kind is not None:
        try:  # argparse passes a string default through `type`
            if dotted(kind) == "int":
                return ast.Constant(int(value.value))
            if dotted(kind) == "float":
                return ast.Constant(float(value.value))
        except ValueError:
            return None
    return value


_FLAGS = ("store_true", "store_false")


def _parsed_args_names(info: FileInfo) -> set[str]:
    """Names bound to a parser's result: `args = parser.parse_args()`, `args, _ =
    parser.parse_known_args()`."""
    names: set[str] = set()
    for node in ast.walk(info.tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not isinstance(func, ast.Attribute):
            continue
        for t in node.targets:
            if func.attr == "parse_args" and isinstance(t, ast.Name):
                names.add(t.id)
            elif func.attr == "parse_known_args" and isinstance(t, ast.Tuple) and t.elts:
                if isinstance(t.elts[0], ast.Name):
                    names.add(t.elts[0].id)
    return names


def _stand_in(expr: ast.expr, stand_ins: _StandIns, known: set[str]) -> tuple[ast.expr, bool, bool]:
    """`expr` with each `args.X` replaced by X's argparse default and each name bound once by
    its value (theirs in turn, a few levels deep); whether anything was, whether a default."""
    changed = defaults = False

    class Fill(ast.NodeTransformer):
        depth = 0

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            nonlocal changed, defaults
            if isinstance(node.value, ast.Name) and node.value.id in stand_ins.parsed:
                default = stand_ins.defaults.get(node.attr)
                if default is not None:
                    changed = defaults = True
                    return copy.deepcopy(default)
            return self.generic_visit(node)

        def visit_Name(self, node: ast.Name) -> ast.AST:
            nonlocal changed
            value = stand_ins.values.get(node.id)
            if value is None or node.id in known or self.depth >= _STAND_IN_DEPTH:
                return node
            changed = True
            self.depth += 1
            try:
                return self.visit(copy.deepcopy(value))
            finally:
                self.depth -= 1

    filled = Fill().visit(copy.deepcopy(expr))
    return (filled, True, defaults) if changed else (expr, False, False)


_STAND_IN_DEPTH = 3  # `x = torch.randn(batch, DIM)` with `batch = 4`: two levels


def _safe_calls(expr: ast.expr, info: FileInfo) -> bool:
    """Calls that only build values: the file's own classes (a config dataclass),
    configuration classes (`GPT2Config(n_layer=2)`), builtins, torch.nn's classes
    (`act=nn.GELU()`), torch's tensor factories (`torch.randn`) — never a function that may
    read a checkpoint or a data set (`Net(torch.load(...))`, `Net(build_vocab(data))`,
    `AutoConfig.from_pretrained(...)`)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            if name in info.classes or name in _ALLOWED_BUILTINS:
                continue
            last = name.rsplit(".", 1)[-1]
            if name.startswith(("nn.", "torch.nn.")) and last[:1].isupper():
                continue
            if name.startswith("torch.") and last in _TENSOR_FACTORIES and name.count(".") == 1:
                continue
            if last[:1].isupper() and last.endswith(_CONFIG_CLASSES):  # GPT2Config(n_layer=2)
                continue
            return False
    return True


# torch functions that make a tensor from nothing but their arguments (not `torch.load`)
_TENSOR_FACTORIES = frozenset(
    "randn rand randint randperm zeros ones full empty eye arange linspace tensor as_tensor "
    "normal".split()
)
# a configuration class's constructor only stores values (transformers' `GPT2Config`, a
# project's `ModelConfig`); `AutoConfig.from_pretrained(...)`, which downloads, is no class
_CONFIG_CLASSES = ("Config", "Configuration")


def _plain_names(info: FileInfo) -> set[str]:
    """Module-level names bound to plain values (`DIM = 64`, `SIZES = (3, 5)`)."""
    names: set[str] = set()
    for stmt in info.tree.body:
        if isinstance(stmt, ast.Assign) and _literal(stmt.value, set(info.imports)):
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            if isinstance(stmt.target, ast.Name) and _literal(stmt.value, set(info.imports)):
                names.add(stmt.target.id)
    return names


def _returned_example(info: FileInfo, target: str, importable: set[str]) -> Optional[str]:
    """The example a factory in the file returns beside a `target(...)` model, when it is made
    of literals: `return ConvNet(), torch.randn(1, 3, 32, 32)`."""
    for fn in info.functions.values():
        built = {
            t.id
            for node in ast.walk(fn)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and dotted(node.value.func) == target
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(fn):
            if not isinstance(node, ast.Return) or not isinstance(node.value, ast.Tuple):
                continue
            elts = node.value.elts
            if len(elts) != 2:
                continue
            model, example = elts
            makes = (isinstance(model, ast.Call) and dotted(model.func) == target) or (
                isinstance(model, ast.Name) and model.id in built
            )
            if makes and _literal(example, importable):
                return ast.get_source_segment(info.text, example)
    return None
