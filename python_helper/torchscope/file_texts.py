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
    """Finds a module as the path finder would, a given text standing in for its file where
    one is given, and no file where None is."""

    def __init__(self, texts: Texts) -> None:
        self.texts = {_norm(p): t for p, t in texts.items()}
        self._folders: dict[str, str] = {}  # a search path entry → its real path

    def _folder(self, entry: str) -> str:
        folder = self._folders.get(entry)
        if folder is None:
            folder = self._folders[entry] = _norm(entry or os.getcwd())
        return folder

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        entries = [e for e in (sys.path if path is None else path) if isinstance(e, str)]
        last = fullname.rpartition(".")[2]
        names = (os.path.join(last, "__init__.py"), last + ".py")
        candidates = [[os.path.join(f, n) for n in names] for f in map(self._folder, entries)]
        if not any(c in self.texts for pair in candidates for c in pair):
            return None  # (most imports: nothing of theirs has another text)
        absent = False
        for entry, pair in zip(entries, candidates):
            for name, real in zip(names, pair):
                if real not in self.texts:
                    continue
                text = self.texts[real]
                if text is None:  # not there in the version traced: on to the next entry
                    absent = True
                    continue
                # named as the path finder names the file on disk (the other side's name)
                file = os.path.join(os.path.abspath(entry or os.getcwd()), name)
                package = name != names[1]
                return importlib.util.spec_from_file_location(
                    fullname,
                    file,
                    loader=_TextLoader(fullname, file, text),
                    submodule_search_locations=[os.path.dirname(file)] if package else None,
                )
            spec = importlib.machinery.PathFinder.find_spec(fullname, [entry])
            if spec is not None and spec.loader is not None:
                if spec.origin and _norm(spec.origin) in self.texts:
                    continue  # a file that is not there (its other suffix)
                return spec
        if absent:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


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
    sys.meta_path.insert(0, finder)
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
