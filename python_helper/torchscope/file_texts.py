"""Other texts for some of the user's files while a model is built and traced: Compare with
HEAD runs the model as committed, the modules its file imports included, not only that file.

`texts` maps a file's absolute path to the text its import runs instead of the file on disk
(a file deleted since may have one), or to None for a file that is not there (added since:
importing it fails as it would have). Everything else imports as usual. Code run from a text
keeps its real path, so the graph's lines point into that file (in the given text's lines)."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

from .usercode import lines_are

Texts = Mapping[str, Optional[str]]


def _norm(path: str) -> str:
    # (real paths: git names files from the repository's real top, the editor maybe not)
    return os.path.normcase(os.path.realpath(path))


class _TextLoader(importlib.abc.FileLoader, importlib.abc.SourceLoader):
    """Runs a module from its given text (no bytecode cache: the file's own .pyc is of the
    text on disk)."""

    def __init__(self, fullname: str, path: str, text: str) -> None:
        super().__init__(fullname, path)
        self.text = text

    def get_data(self, path: str) -> bytes:
        if _norm(path) == _norm(self.path):
            lines_are(self.path, self.text)  # (tracebacks and inspect read these lines)
            return self.text.encode("utf-8")
        return super().get_data(path)


class _TextFinder(importlib.abc.MetaPathFinder):
    """Finds a module as the path finder would (each search path entry in turn: a package
    folder with an `__init__`, else a module file, else a folder without one, a namespace
    package), a given text standing in for its file where one is given, and no file where
    None is."""

    def __init__(self, texts: Texts) -> None:
        self.texts = {_norm(p): t for p, t in texts.items()}
        # the folders holding a given text, at any depth: packages the texts keep alive (a
        # folder deleted since, without an `__init__`)
        self.dirs: set[str] = set()
        for file, text in self.texts.items():
            folder = os.path.dirname(file)
            while (
                text is not None and folder not in self.dirs and folder != os.path.dirname(folder)
            ):
                self.dirs.add(folder)
                folder = os.path.dirname(folder)
        self._folders: dict[str, str] = {}  # a search path entry → its real path

    def _folder(self, entry: str) -> str:
        folder = self._folders.get(entry)
        if folder is None:
            folder = self._folders[entry] = _norm(entry or os.getcwd())
        return folder

    def _concerns(self, folder: str, last: str) -> bool:
        package = os.path.join(folder, last)
        return (
            package in self.dirs
            or os.path.join(package, "__init__.py") in self.texts
            or os.path.join(folder, last + ".py") in self.texts
        )

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        entries = [e for e in (sys.path if path is None else path) if isinstance(e, str)]
        last = fullname.rpartition(".")[2]
        if not any(self._concerns(self._folder(e), last) for e in entries):
            return None  # (most imports: nothing of theirs has another text)
        texts = self.texts
        portions: list[str] = []  # folders without an `__init__`: a namespace package's
        absent = False
        for entry in entries:
            real = self._folder(entry)
            shown = os.path.abspath(entry or os.getcwd())  # named as the path finder names it
            package, init = os.path.join(real, last), os.path.join(real, last, "__init__.py")
            if init in texts:
                text = texts[init]
                if text is not None:
                    return self._spec(fullname, os.path.join(shown, last, "__init__.py"), text)
                absent = True
            elif os.path.isfile(init):
                return importlib.machinery.PathFinder.find_spec(fullname, [entry])
            if os.path.isdir(package) or package in self.dirs:
                portions.append(os.path.join(shown, last))
            module = os.path.join(real, last + ".py")
            if module in texts:
                text = texts[module]
                if text is not None:
                    return self._spec(fullname, os.path.join(shown, last + ".py"), text)
                absent = True
                continue
            spec = importlib.machinery.PathFinder.find_spec(fullname, [entry])
            if spec is not None and spec.loader is not None:
                if not spec.origin or _norm(spec.origin) not in texts:
                    return spec  # (a compiled module, or a file no text concerns)
        if portions:
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = portions
            return spec
        if absent:  # there on disk, not in the version traced (the path finder would find it)
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None

    @staticmethod
    def _spec(fullname: str, file: str, text: str) -> Optional[importlib.machinery.ModuleSpec]:
        package = os.path.basename(file) == "__init__.py"
        return importlib.util.spec_from_file_location(
            fullname,
            file,
            loader=_TextLoader(fullname, file, text),
            submodule_search_locations=[os.path.dirname(file)] if package else None,
        )


@contextlib.contextmanager
def texts_in_place(texts: Optional[Texts]) -> Iterator[None]:
    """While the block runs, imports take `texts` in place of the files (see the module's
    doc), and linecache reads those texts as the files' lines. Nothing is done for no texts."""
    if not texts:
        yield
        return
    finder = _TextFinder(texts)
    for file, text in finder.texts.items():
        if text is not None:
            lines_are(file, text)
    # just before the path finder: built-in and frozen modules come first, as without it
    path_finder = importlib.machinery.PathFinder
    at = next((i for i, f in enumerate(sys.meta_path) if f is path_finder), len(sys.meta_path))
    sys.meta_path.insert(at, finder)
    importlib.invalidate_caches()
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


def check_texts(value: Any) -> Optional[dict[str, Optional[str]]]:
    """A request's `texts` (a list of `{file, text}`: an absolute path, its text or null) as
    a map; raises ValueError for anything else. (A list, not a map keyed by path: the language
    server's JSON reader keeps only keys that are Python names.)"""
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"texts must be a list of {{file, text}}, got {type(value).__name__}")
    texts: dict[str, Optional[str]] = {}
    for item in value:
        file = item.get("file") if isinstance(item, dict) else None
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(file, str) or not os.path.isabs(file):
            raise ValueError(
                f"texts: {file if file is not None else item!r} is not an absolute file path"
            )
        if text is not None and not isinstance(text, str):
            raise ValueError(f"texts: the text of {file} is a {type(text).__name__}")
        texts[file] = text
    return texts
