"""Operator libraries the user's code registers with torch while the runner imports it
(`torch.library.Library`, made directly or by `torch.library.define`, `custom_op` …): destroyed
before the user's files are imported again.

torch takes one definition per operator (and one `Library(ns, "DEF")` per namespace) while
its library lives, and a library a user's module made outlives the module: torch's dispatcher
holds the kernels, which hold the module's globals, which hold the library. In a fresh
`python` that never matters; in the warm runner the edited file's import failed ("Only a
single TORCH_LIBRARY can be used to register the namespace …", "registered … multiple
times"). Libraries that installed packages make are theirs and stay: those packages are not
imported again.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import weakref
from collections.abc import Iterator
from typing import Any

import torch
import torch.library

from .usercode import is_user_file

__all__ = ["destroy_users_libraries", "users_libraries_recorded"]

# torch's own folder and the standard library's (as given and as resolved): frames a library
# is made through
_PASSED = tuple(
    {
        folder + os.sep
        for path in (os.path.dirname(torch.__file__), sysconfig.get_path("stdlib"))
        for folder in (path, os.path.realpath(path))
    }
)
_made: list[weakref.ref[Any]] = []  # libraries the user's code made, since the last destroy


@contextlib.contextmanager
def users_libraries_recorded() -> Iterator[None]:
    """Inside: every Library the user's own code makes (the first caller outside torch is a
    user's file) is remembered, weakly, for `destroy_users_libraries`."""
    cls = torch.library.Library
    original = cls.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if _made_by_user():
            _made.append(weakref.ref(self))

    cls.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        cls.__init__ = original  # type: ignore[method-assign]


def destroy_users_libraries() -> int:
    """Unregister what the remembered libraries registered; returns how many there were."""
    alive = [lib for lib in (ref() for ref in _made) if lib is not None]
    _made.clear()
    for lib in alive:
        with contextlib.suppress(Exception):  # (a library torch destroyed already)
            lib._destroy()
    return len(alive)


def _made_by_user() -> bool:
    """Whether the first caller outside torch and the standard library (torch.library.define
    goes through functools) is a file of the user's: not an installed package's."""
    frame = sys._getframe(2)  # above `init`
    while frame is not None:
        file = frame.f_code.co_filename
        if not (file.startswith(_PASSED) or file.startswith("<")):
            return is_user_file(file)
        frame = frame.f_back  # type: ignore[assignment]
    return False
