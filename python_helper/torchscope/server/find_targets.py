"""Static analysis of a Python file with `ast`: which names are models, what is at a position,
and a call of a target with literal arguments. Nothing is executed and torch is never imported.

Base classes are resolved through the file's imports: `nn.Module` under any alias, transformers
model classes, and classes of the same file or of other project files whose own bases are
modules. Project files are looked for where the runner would find them: next to the file, in
its package tree, in folders the file puts on `sys.path` itself (a path computed from
`__file__` or a constant), on the runner's PYTHONPATH and editable installs (what the server
passes), and in the workspace folders and their `src/` folders. A class of an installed
library that no name tells a model (x-transformers', diffusers') is read from its source in
site-packages (`library_roots`), as far as its bases go.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from ..definitions import dotted, is_main_guard
from ..usercode import read_source, split_lines

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
    )  # module-level `x = call()`: the last one of each name
    bindings: dict[str, list[ast.Assign]] = field(
        default_factory=dict[str, list[ast.Assign]]
    )  # every module-level `x = call()` of each name, in file order
    # folders the file puts on sys.path at import (`sys.path.insert(0, ...)`: True, first),
    # relative ones to the folder the runner runs in
    sys_path: list[tuple[bool, str]] = field(default_factory=list[tuple[bool, str]])


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
                    info.bindings.setdefault(t.id, []).append(stmt)
    info.sys_path = _sys_path_entries(path, tree)
    return info


# -- folders a file puts on sys.path, found without running it ------------------------------

_MAX_SYS_PATH = 16
_PATH_OF_ONE = {"str", "abspath", "realpath", "normpath", "fspath", "Path", "PurePath"}
_PATH_OF_ONE |= {"PosixPath", "WindowsPath", "PurePosixPath", "PureWindowsPath"}
_SAME_PATH_METHODS = {"resolve", "absolute", "expanduser"}


def _parent(value: str) -> str:
    return os.path.normpath(os.path.join(value, os.pardir))


def _static_path(expr: ast.expr, names: dict[str, str], file: Path) -> Optional[str]:
    """The path `expr` computes from `__file__`, constants and names bound to such paths
    (`Path(__file__).resolve().parents[1] / "src"`, `os.path.join(os.path.dirname(__file__),
    "..", "src")`); None for anything else."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return str(file) if expr.id == "__file__" else names.get(expr.id)
    if isinstance(expr, ast.Attribute):
        if expr.attr in ("pardir", "curdir") and dotted(expr.value) in ("os", "os.path"):
            return os.pardir if expr.attr == "pardir" else os.curdir
        if expr.attr == "parent":
            inner = _static_path(expr.value, names, file)
            return _parent(inner) if inner is not None else None
        return None
    if isinstance(expr, ast.Subscript):  # `p.parents[1]`
        index = expr.slice
        if not (
            isinstance(expr.value, ast.Attribute)
            and expr.value.attr == "parents"
            and isinstance(index, ast.Constant)
            and isinstance(index.value, int)
            and 0 <= index.value < 32
        ):
            return None
        inner = _static_path(expr.value.value, names, file)
        if inner is None:
            return None
        for _ in range(index.value + 1):
            inner = _parent(inner)
        return inner
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):  # `p / "src"`
        left = _static_path(expr.left, names, file)
        right = _static_path(expr.right, names, file)
        return os.path.join(left, right) if left is not None and right is not None else None
    if not isinstance(expr, ast.Call) or expr.keywords:
        return None
    func = expr.func
    name = dotted(func) or ""
    last = name.rpartition(".")[2]
    args = expr.args
    if isinstance(func, ast.Attribute) and func.attr in _SAME_PATH_METHODS and not args:
        return _static_path(func.value, names, file)  # `p.resolve()`
    if name in ("os.getcwd", "Path.cwd", "pathlib.Path.cwd") and not args:
        return os.curdir
    values = [_static_path(a, names, file) for a in args]
    if not values or any(v is None for v in values):
        return None
    parts = [v for v in values if v is not None]
    if isinstance(func, ast.Attribute) and func.attr == "joinpath":
        base = _static_path(func.value, names, file)
        return os.path.join(base, *parts) if base is not None else None
    if last == "join":  # os.path.join, osp.join
        return os.path.join(*parts)
    if len(parts) != 1:
        return None
    if last == "dirname":
        return os.path.dirname(parts[0]) or os.curdir
    if last in _PATH_OF_ONE and (last != "str" or name == "str"):
        return parts[0]
    return None


def _sys_path_entries(path: Path, tree: ast.Module) -> list[tuple[bool, str]]:
    """`sys.path.insert(0, X)` (True: first), `sys.path.append(X)`, `sys.path.extend([X])`,
    `site.addsitedir(X)` at module level, for the X `_static_path` works out (at most a few)."""
    names: dict[str, str] = {}
    out: list[tuple[bool, str]] = []
    for stmt in _top_level(tree.body):
        if isinstance(stmt, ast.Assign):
            value = _static_path(stmt.value, names, path)
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    if value is None:
                        names.pop(t.id, None)
                    else:
                        names[t.id] = value
            continue
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            continue
        call = stmt.value
        name = dotted(call.func)
        if name == "sys.path.insert" and len(call.args) == 2:
            added, first = [call.args[1]], True
        elif name in ("sys.path.append", "site.addsitedir") and len(call.args) == 1:
            added, first = [call.args[0]], False
        elif (
            name == "sys.path.extend"
            and len(call.args) == 1
            and isinstance(call.args[0], (ast.List, ast.Tuple))
        ):
            added, first = call.args[0].elts, False
        else:
            continue
        for expr in added:
            value = _static_path(expr, names, path)
            if value is not None and len(out) < _MAX_SYS_PATH:
                out.append((first, os.path.normpath(value)))
    return out


def editable_folders(site_dirs: Sequence[Path]) -> list[Path]:
    """The project folders editable installs put on sys.path: the folder lines of the `.pth`
    files of `site_dirs` (`pip install -e .` of a src/ layout), and the parents of the packages
    a setuptools editable finder maps (`__editable___*_finder.py`). Folders of an environment
    itself (site-packages, the interpreter's prefix) are not project folders."""
    envs = [Path(p).resolve() for p in {sys.prefix, sys.base_prefix}]
    sites = [Path(s).resolve() for s in site_dirs]
    found: list[Path] = []

    def add(folder: Path) -> None:
        try:
            folder = folder.resolve()
            if not folder.is_dir():
                return
        except OSError:
            return
        if any(folder.is_relative_to(e) for e in envs + sites) or any(
            part in ("site-packages", "dist-packages") for part in folder.parts
        ):
            return
        if folder not in found and len(found) < 64:
            found.append(folder)

    for site_dir in sites:
        try:
            pth_files = sorted(site_dir.glob("*.pth"))
            finders = sorted(site_dir.glob("__editable___*_finder.py"))
        except OSError:
            continue
        for pth in pth_files:
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines[:100]:
                line = line.strip()
                if not line or line.startswith("#") or re.match(r"import[ \t]", line):
                    continue
                add(site_dir / line)  # (an absolute line stays itself)
        for finder in finders:
            try:
                tree = ast.parse(finder.read_text(encoding="utf-8", errors="replace"))
            except (OSError, SyntaxError, ValueError):
                continue
            for stmt in tree.body:
                target = (
                    stmt.target
                    if isinstance(stmt, ast.AnnAssign)
                    else stmt.targets[0]
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    else None
                )
                value = getattr(stmt, "value", None)
                if not (isinstance(target, ast.Name) and target.id == "MAPPING"):
                    continue
                try:
                    mapping = ast.literal_eval(value) if value is not None else None
                except ValueError:
                    continue
                if isinstance(mapping, dict):
                    for package, folder in mapping.items():  # pyright: ignore[reportUnknownVariableType]
                        if isinstance(package, str) and isinstance(folder, str):
                            if Path(folder).name == package.split(".")[-1]:
                                add(Path(folder).parent)
    return found


# -- resolving names across project files ---------------------------------------------------


@dataclass(frozen=True)
class External:
    qualname: str


@dataclass(frozen=True)
class ProjectClass:
    file: Path
    name: str


Resolved = Union[External, ProjectClass, None]


def workspace_folder(roots: Sequence[Path], path: Path) -> Optional[Path]:
    """The workspace folder `path` lies in (the innermost, for folders inside others); None
    for a file outside them all."""
    resolved = path.resolve()
    inside = [root for root in roots if resolved.is_relative_to(root)]
    return max(inside, key=lambda root: len(root.parts)) if inside else None


class Project:
    """Parsed files, cached by path and modification time, and the folders to look for imports."""

    def __init__(
        self,
        roots: tuple[Path, ...] = (),
        python_path: Sequence[str] = (),
        library_roots: Sequence[Path] = (),
    ) -> None:
        self.roots = tuple(r.resolve() for r in roots)
        # the interpreter's site-packages: an installed library's classes are read from its
        # source when no name tells whether they are models (see _library_module_class)
        self.library_roots = [Path(r) for r in library_roots]
        # bytes a library lookup may still parse (None: no lookup under way; see load)
        self._unread_budget: Optional[int] = None
        # the runner's PYTHONPATH and the folders of editable installs; relative entries are
        # from the folder the runner starts in (the first workspace folder), as Python makes
        # them absolute at its start
        start = self.roots[0] if self.roots else Path.cwd()
        self.python_path = tuple(Path(os.path.normpath(start / p)) for p in python_path)
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
        if self._unread_budget is not None:  # (a library lookup's file: within its budget)
            try:
                size = path.stat().st_size
            except OSError:
                return None
            if size > min(_LIBRARY_FILE_MAX, self._unread_budget):
                return None
            self._unread_budget -= size
        try:
            source = read_source(path)
        except (OSError, UnicodeDecodeError, SyntaxError):  # (bytes of no encoding)
            source = None
        info = parse(path, source) if source is not None else None
        self._cache[path] = (mtime, info)
        return info

    # the folders where `import a.b` may find a project file of `info`: where the runner
    # would (sys.path as the file changes it, the runner's PYTHONPATH), its package tree, the
    # workspace folders and their `src/` layouts
    def _search_roots(self, info: FileInfo) -> list[Path]:
        # the folder a trace of the file runs in (relative paths are read from there)
        cwd = workspace_folder(self.roots, info.path) or (
            self.roots[0] if self.roots else info.path.parent
        )
        roots = [cwd / p for first, p in info.sys_path if first]
        roots.append(info.path.parent)
        folder = info.path.parent
        while (folder / "__init__.py").exists():
            folder = folder.parent
            roots.append(folder)
        roots.extend(self.python_path)
        roots.extend(cwd / p for first, p in info.sys_path if not first)
        roots.extend(self.roots)
        roots.extend(root / "src" for root in self.roots)
        return [Path(os.path.normpath(r)) for r in dict.fromkeys(roots)]

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
        names = parts + tail
        if imp.base is None and names[:1] == ["torch"]:
            # judged by its name (a checkout of torch on a search path is not followed:
            # its `Module` has no model base)
            return External(".".join(names)) if tail or imp.attr else None
        roots = [imp.base] if imp.base is not None else self._search_roots(info)
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
            if is_external_module_class(found.qualname):
                return True
            return self._library_module_class(found.qualname, seen)
        if isinstance(found, ProjectClass):
            other = info if found.file == info.path else self.load(found.file)
            if other is None or found.name not in other.classes:
                return False
            return self.is_module_class(other, other.classes[found.name], seen)
        return False

    def _library_module_class(self, qualname: str, seen: Optional[set[Any]] = None) -> bool:
        """An installed library's class (`x_transformers.TransformerWrapper`) whose bases, read
        from the library's source, lead to `nn.Module`: the module file that defines or
        re-exports it is looked for in the library roots, and the name resolved there as in
        a project file. Libraries judged by their names (torch, transformers …) and those with
        no models are not read; nor is a file of more than _LIBRARY_FILE_MAX bytes."""
        parts = qualname.split(".")
        if (
            not self.library_roots
            or len(parts) < 2
            or parts[0] in _LIBRARIES_NOT_READ
            or not parts[-1][:1].isupper()  # (a class's name; `tqdm`, `nx.path_graph` are not)
        ):
            return False
        seen = set[Any]() if seen is None else seen
        if self._unread_budget is not None:  # (a lookup under way: its budget holds)
            return self._library_class_in_source(parts, seen)
        # a lookup from a project file: what it may parse of libraries, all told (a class of
        # sympy's or rich's leads through many files to no model)
        self._unread_budget = _LIBRARY_LOOKUP_MAX
        try:
            return self._library_class_in_source(parts, seen)
        finally:
            self._unread_budget = None

    def _library_class_in_source(self, parts: list[str], seen: set[Any]) -> bool:
        """_library_module_class's walk: the module file of the longest prefix of `parts`
        in the library roots, and the rest resolved there."""
        if ("library", ".".join(parts)) in seen:
            return False
        seen.add(("library", ".".join(parts)))
        for i in range(len(parts) - 1, 0, -1):
            file = self._module_file(parts[:i], self.library_roots)
            if file is None:
                continue
            other = self.load(file)
            return other is not None and self.refers_to_module_class(
                other, ".".join(parts[i:]), seen
            )
        return False


# libraries judged by their names (is_external_module_class), and big ones with no model
# classes, whose source is not read
_LIBRARIES_NOT_READ = frozenset(
    "torch torchvision transformers lightning pytorch_lightning numpy scipy pandas "
    "matplotlib sklearn PIL cv2 jax tensorflow keras os sys typing collections functools "
    "itertools dataclasses math re json pathlib abc enum".split()
)
_LIBRARY_FILE_MAX = 1 << 20  # bytes: a generated file of that size holds no model class
# bytes of library source one lookup may parse, the files parsed before not counted (a
# diffusers or x-transformers model: 150-600 KB)
_LIBRARY_LOOKUP_MAX = 3 << 20


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
    # model classes the function defines itself (`class Inner(nn.Module)` in its body)
    own = {
        c.name
        for c in ast.walk(fn)
        if isinstance(c, ast.ClassDef) and project.is_module_class(info, c)
    }

    def builds(value: ast.expr) -> bool:
        if _is_module_call(project, info, value):
            return True
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in own
        )

    built: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and builds(node.value):
            built.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Tuple) and len(value.elts) == 2:
                value = value.elts[0]
            if builds(value):
                return True
            if isinstance(value, ast.Name) and value.id in built:
                return True
    return False


# calls that return the model they are given, wrapped (traced as the model)
_WRAPS_MODEL = frozenset({"torch.compile"})


def unwrapped(project: Project, info: FileInfo, value: ast.expr) -> ast.expr:
    """`torch.compile(m)`, `m.to(device).eval()` → `m`."""
    for _ in range(32):
        if not isinstance(value, ast.Call):
            break
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in _RETURNS_SELF:
            value = func.value
            continue
        name = dotted(func)
        wraps = name is not None and name.rpartition(".")[2] == "compile" and value.args
        found = project.resolve(info, name) if name is not None and wraps else None
        if isinstance(found, External) and found.qualname in _WRAPS_MODEL:
            value = value.args[0]
            continue
        break
    return value


def _instance_chain(
    project: Project, info: FileInfo, name: str, seen: Optional[set[str]] = None
) -> list[ast.Assign]:
    """The module-level bindings of `name` that make the model it is at import, last first:
    `model = Net().to(device)` then `model = torch.compile(model)` are both; empty when
    `name` is no model then."""
    seen = set[str]() if seen is None else seen
    if name in seen:
        return []
    seen.add(name)
    chain: list[ast.Assign] = []
    for stmt in reversed(info.bindings.get(name, [])):
        chain.append(stmt)
        value = unwrapped(project, info, stmt.value)
        if isinstance(value, ast.Name):
            if value.id == name:  # wraps what the name was before
                continue
            # `model = torch.compile(net)`: what `net` is
            return chain if _instance_chain(project, info, value.id, seen) else []
        if not isinstance(value, ast.Call):
            return []
        if _is_module_call(project, info, value):
            return chain
        fn = info.functions.get(dotted(value.func) or "")
        built = fn is not None and not value.args and not value.keywords
        return chain if built and fn is not None and _is_factory(project, info, fn) else []
    return []


def _is_instance(project: Project, info: FileInfo, name: str) -> bool:
    return bool(_instance_chain(project, info, name))


def _assigned_class(info: FileInfo, name: str) -> Optional[str]:
    """The class `X` of the first `name = X(...)` anywhere in the file."""
    for node in ast.walk(info.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return dotted(node.value.func)
    return None


def target_at(project: Project, info: FileInfo, line: int, character: int) -> Optional[Target]:
    """The target at an LSP position (0-based line, UTF-16 character)."""
    lines = split_lines(info.text)  # (as the editor counts lines: not at a form feed)
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
        if id(stmt) in top and any(s is stmt for s in _instance_chain(project, info, name)):
            return Target(name, "instance", info.instances[name].lineno - 1)
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
