"""Where a node came from: the user-visible stack frame and a module's class definition."""

from __future__ import annotations

import inspect
import linecache
import os
import weakref
from types import CodeType, FrameType, TracebackType
from typing import Optional

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
    )
)

_skip_cache: dict[CodeType, bool] = {}


def _is_machinery(code: CodeType) -> bool:
    skip = _skip_cache.get(code)
    if skip is None:
        fn = code.co_filename
        skip = fn.startswith(_PKG_DIR) or fn.startswith(_MACHINERY) or fn.startswith("<frozen")
        _skip_cache[code] = skip
    return skip


def _abs(fn: str) -> str:
    return fn if os.path.isabs(fn) or fn.startswith("<") else os.path.abspath(fn)


_site_cache: dict[tuple[CodeType, int], Site] = {}


def frame_site(frame: Optional[FrameType]) -> Optional[Site]:
    """The innermost frame at or above `frame` outside torchscope and torch's machinery."""
    skip = _skip_cache
    code: Optional[CodeType] = None
    while frame is not None:
        code = frame.f_code
        s = skip.get(code)
        if s is None:
            s = _is_machinery(code)
        if not s:
            break
        frame = frame.f_back
    if frame is None or code is None:
        return None
    key = (code, frame.f_lineno)
    site = _site_cache.get(key)
    if site is None:  # Site objects are shared between nodes: never mutate one
        site = _site_cache[key] = Site(_abs(code.co_filename), frame.f_lineno, code.co_name)
    return site


def traceback_site(tb: Optional[TracebackType]) -> Optional[Site]:
    """The innermost non-machinery frame of a traceback (where the error surfaced)."""
    best: Optional[Site] = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not _is_machinery(code):
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
    except (OSError, TypeError):
        fwd = getattr(cls, "forward", None)
        code = getattr(fwd, "__code__", None)
        if code is not None:
            site = Site(_abs(code.co_filename), code.co_firstlineno, cls.__name__)
    _defn_cache[cls] = site
    return site
