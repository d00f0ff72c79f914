"""Where a node came from: the user-visible stack frame and a module's class definition."""

from __future__ import annotations

import contextlib
import inspect
import linecache
import os
import sys
import tokenize
import warnings
import weakref
from collections.abc import Iterator
from types import CodeType, FrameType, TracebackType
from typing import Any, Optional

import torch

from .graph import Site

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep

# torch's call machinery: frames a user never wants to land in. Layers such as
# torch/nn/modules/linear.py are *not* here: the op inside nn.Linear points there.
_MACHINERY = tuple(
    _TORCH_DIR + p
    for p in (
        "nn/modules/module.py",
        "overrides.py",
        "nn/functional.py",
        "functional.py",
        "_tensor.py",
        "_jit_internal.py",
        "utils/_device.py",
        "utils/_contextlib.py",
        "_compile.py",
        "_dynamo/",
        "_ops.py",
        "_C/",
        # a reentrant checkpoint runs the layer from an autograd Function's forward: the
        # layer is the user's line that asked for the checkpoint
        "utils/checkpoint.py",
        "autograd/function.py",
    )
)


def _wrapper_files() -> tuple[str, ...]:
    """Files of decorators whose wrapper frame stands between a user's line and the function
    it calls: typing_extensions' and the warnings module's `deprecated` (torch marks its
    deprecated functions so: `dist.all_gather_into_tensor`, `clip_grad_norm`), wherever
    they are defined (Python 3.14's warnings.deprecated lives in _py_warnings.py)."""
    decorators: list[Any] = [getattr(warnings, "deprecated", None)]
    try:
        import typing_extensions

        decorators.append(getattr(typing_extensions, "deprecated", None))
    except ImportError:
        pass
    files = {os.path.abspath(warnings.__file__)}
    for d in decorators:
        with contextlib.suppress(TypeError, OSError):  # (None, or no source file)
            found = inspect.getsourcefile(d)  # type: ignore[arg-type]
            if found:
                files.add(os.path.abspath(found))
    return tuple(sorted(files))


_WRAPPERS = _wrapper_files()

_KEEP, _SKIP, _HELPER = 0, 1, 2


class _Code:
    """What a code object is to the frame walk: its kind and its lines' sites. Kept by the
    code's id, never by the code: hashing a code object hashes its bytecode (~0.7 µs for
    torch's _call_impl), on every frame of every recorded call. The entry goes when its code
    is freed (a weak reference's callback, run before the id can be another object's): the
    runner imports the user's file afresh for each trace, and old code must not pile up."""

    __slots__ = ("ref", "file", "name", "kind", "sites", "positions")

    def __init__(self, code: CodeType) -> None:
        key = id(code)
        self.ref = weakref.ref(code, lambda _: _codes.pop(key, None))
        self.file, self.name = code.co_filename, code.co_name
        self.kind = _kind_of(code)
        # the instruction a frame is at (f_lasti) → its Site, shared between nodes: never
        # mutated (by instruction, not line: two calls on one line have their own columns)
        self.sites: dict[int, Site] = {}
        self.positions: Optional[list[Any]] = None  # the code's positions, once asked for

    def site(self, frame: FrameType) -> Site:
        """The Site of the instruction `frame` is at (it runs this code)."""
        lasti = frame.f_lasti
        site = self.sites.get(lasti)
        if site is None:
            site = self.sites[lasti] = self._site_at(lasti, frame.f_lineno)
        return site

    def _site_at(self, lasti: int, line: int) -> Site:
        code = self.ref()
        if self.positions is None and code is not None:
            self.positions = _positions(code)
        return _located(_abs(self.file), line, self.name, self.positions, lasti)


def _positions(code: CodeType) -> list[Any]:
    """(line, end line, column, end column) of each instruction; [] where Python has none
    (3.10, or run with -X no_debug_ranges)."""
    try:
        return list(code.co_positions())  # type: ignore[attr-defined]
    except Exception:
        return []


def _located(
    file: str, line: Optional[int], func: str, positions: Optional[list[Any]], lasti: int
) -> Site:
    """A Site with the column where the expression of the instruction at byte offset `lasti`
    starts, when Python knows it and it starts on `line`."""
    pos = positions[lasti // 2] if positions and 0 <= lasti < 2 * len(positions) else None
    if pos is not None and pos[0] == line and pos[2] is not None:
        return Site(file, line or 0, func, pos[2])
    return Site(file, line or 0, func)


_codes: dict[int, _Code] = {}


def _entry(code: CodeType) -> _Code:
    entry = _codes.get(id(code))
    if entry is None:
        entry = _codes[id(code)] = _Code(code)
    return entry


def _kind_of(code: CodeType) -> int:
    """_SKIP: torchscope or torch's call machinery; _HELPER: a plain function of torch's
    (`pack_padded_sequence`) whose ops belong to the user's line that called it (the helper's
    own line becomes the node's `inside`); _KEEP: a user frame, a library's, or a method of
    torch's (`Linear.forward`: the op inside nn.Linear points into linear.py)."""
    fn = code.co_filename
    if (
        fn.startswith(_PKG_DIR)
        or fn.startswith(_MACHINERY)
        or fn.startswith("<frozen")
        or fn in _WRAPPERS
    ):
        return _SKIP
    if fn.startswith(_TORCH_DIR) and "." not in _outer_qualname(code):
        return _HELPER
    return _KEEP


def _outer_qualname(code: CodeType) -> str:
    """The qualified name up to the first `<locals>`: "Linear.forward", "pack_padded_sequence"
    (Python 3.10 has no co_qualname: every frame counts as a method there)."""
    qualname = getattr(code, "co_qualname", "?.?")
    return qualname.split(".<locals>", 1)[0]


def _is_machinery(code: CodeType) -> bool:
    return _entry(code).kind == _SKIP


def _abs(fn: str) -> str:
    return fn if os.path.isabs(fn) or fn.startswith("<") else os.path.abspath(fn)


def frame_sites(frame: Optional[FrameType]) -> tuple[Optional[Site], Optional[Site]]:
    """`(site, inside)`: the innermost frame at or above `frame` outside torchscope, torch's
    machinery and torch's helper functions; and, when helpers were passed on the way, the
    innermost helper's line (else None)."""
    codes = _codes
    inside: Optional[Site] = None
    while frame is not None:
        code = frame.f_code
        entry = codes.get(id(code))
        if entry is None:
            entry = _entry(code)
        kind = entry.kind
        if kind == _KEEP:
            return entry.site(frame), inside
        if kind == _HELPER and inside is None:
            inside = entry.site(frame)
        frame = frame.f_back
    return inside, None  # only torch inside: its helper line is the best there is


def frame_site(frame: Optional[FrameType]) -> Optional[Site]:
    """The node's site of `frame_sites`."""
    return frame_sites(frame)[0]


@contextlib.contextmanager
def warnings_at_user_lines() -> Iterator[None]:
    """A warning torch raises inside a traced op names the line that called the op, as it does
    without the trace: its stack level counts torch's frames up to the recorder's call of the
    op (tracer.py) and a C++ warning names the Python frame that called into torch, both ours.
    Warnings that name another file (the model's own) are left as they are."""
    module: Any = warnings  # (its _showwarnmsg: what Python's and C's warnings call to show)
    show = module._showwarnmsg

    def at_user_line(msg: warnings.WarningMessage) -> None:
        if msg.filename.startswith(_PKG_DIR):
            site = frame_site(sys._getframe(1))
            if site is not None:
                msg.filename, msg.lineno, msg.line = site.file, site.line, None
        show(msg)

    module._showwarnmsg = at_user_line
    try:
        yield
    finally:
        if module._showwarnmsg is at_user_line:  # (unless the forward replaced it too)
            module._showwarnmsg = show


def traceback_site(tb: Optional[TracebackType]) -> tuple[Optional[Site], Optional[Site]]:
    """Where the error surfaced, as `frame_sites` says an op's place: `(site, inside)`, the
    innermost frame outside torchscope, torch's machinery and torch's helper functions, and
    the innermost helper's line beyond it (`torch._check_with` called by a library's check);
    only helpers: the innermost of them, no inside."""
    site: Optional[Site] = None
    inside: Optional[Site] = None
    while tb is not None:
        code = tb.tb_frame.f_code
        kind = _entry(code).kind
        if kind == _KEEP:
            site, inside = Site(_abs(code.co_filename), tb.tb_lineno, code.co_name), None
        elif kind == _HELPER:
            inside = Site(_abs(code.co_filename), tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return (site, inside) if site is not None else (inside, None)


def user_traceback_site(tb: Optional[TracebackType]) -> Optional[Site]:
    """The innermost frame of a traceback in the user's own code (not a library's)."""
    from .usercode import is_user_file

    best: Optional[Site] = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename):
            best = Site(_abs(code.co_filename), tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return best


def traceback_sites(tb: Optional[TracebackType]) -> list[Site]:
    """The traceback as sites, innermost last, without torchscope's own frames."""
    out: list[Site] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(_PKG_DIR):
            out.append(Site(_abs(code.co_filename), tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return out


_defn_cache: weakref.WeakKeyDictionary[type, Optional[Site]] = weakref.WeakKeyDictionary()


def _class_line(file: str, line: int, name: str) -> int:
    """Step over decorators: the line of the `class Name` statement itself."""
    for offset in range(0, 80):
        text = linecache.getline(file, line + offset).lstrip()
        if text.startswith(f"class {name}"):
            return line + offset
    return line


def _own_code_lines(cls: type, file: str) -> list[int]:
    """First lines of the functions defined in the class body itself (in `file`)."""
    lines = []
    for f in vars(cls).values():
        try:
            code = getattr(inspect.unwrap(f) if callable(f) else f, "__code__", None)
        except ValueError:  # a __wrapped__ cycle
            continue
        if isinstance(code, CodeType) and _abs(code.co_filename) == file:
            lines.append(code.co_firstlineno)
    return lines


def _find_class_line(cls: type, file: str) -> Optional[int]:
    """The `class Name` line from the source text, without inspect's parse of the whole
    file (~10 ms a class, most of a first trace): the only such line, or the last one
    above the class's own methods. None when unsure."""
    first = getattr(cls, "__firstlineno__", None)  # Python 3.13+
    if isinstance(first, int):
        return _class_line(file, first, cls.__name__)
    name = cls.__name__
    hits = [
        i
        for i, text in enumerate(linecache.getlines(file), 1)
        if text.lstrip().startswith(f"class {name}")
        and text.lstrip()[6 + len(name) : 7 + len(name)] in ("(", ":", " ")
    ]
    methods = _own_code_lines(cls, file)
    if methods:
        hits = [h for h in hits if h < min(methods)]
        return hits[-1] if hits else None
    return hits[0] if len(hits) == 1 else None


def class_definition(cls: type) -> Optional[Site]:
    """File and line of a class statement; falls back to its forward's first line."""
    if cls in _defn_cache:
        return _defn_cache[cls]
    site: Optional[Site] = None
    try:
        file = inspect.getsourcefile(cls)
        if file:
            line = _find_class_line(cls, _abs(file))
            if line is None:
                _, line = inspect.getsourcelines(cls)
                line = _class_line(file, line, cls.__name__)
            site = Site(_abs(file), line, cls.__name__)
    except (OSError, TypeError, SyntaxError, IndexError, tokenize.TokenError):  # (file changed)
        # (a class of a notebook cell, whose module has no file: its forward's has one)
        fwd = getattr(cls, "forward", None)
        code = getattr(fwd, "__code__", None)
        if code is not None:
            file = _abs(code.co_filename)
            line = _find_class_line(cls, file) or code.co_firstlineno
            site = Site(file, line, cls.__name__)
    _defn_cache[cls] = site
    return site
