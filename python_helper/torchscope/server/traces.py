"""The last trace of each traced document, and its lines kept in step with the editor.

Every trace (from the editor, or a graph the extension shows from a paused debugger) is
indexed once (`hints.index_graph`) and kept per key (the traced document's uri). A file's
hints come from the newest trace that ran through it. Edits move hinted lines with the text
above them; a line whose text changed loses its hint until the next trace. Changes made
while a trace ran are replayed onto its lines when it arrives, so a trace of the saved text
fits a document the user kept typing in."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from ..graph import FORMAT, VERSION, GraphFormatError, unpack
from .hints import Indexed, LineInfo, index_graph, split_lines

KEEP_TRACES = 8

# one content change of textDocument/didChange: (start line, end line, new text), or
# (None, None, text) for a whole-document replacement
Change = tuple[Optional[int], Optional[int], str]


def file_key(path: Union[str, Path]) -> str:
    """One spelling per file: the graph's sites and the editor's uris may differ by symlinks."""
    return os.path.normcase(os.path.realpath(path))


@dataclass
class _Entry:
    info: LineInfo
    text: Optional[str]  # the line's text when last known intact (None: not known)
    candidates: list[int]
    check: bool = False  # an edit touched the line: keep it only where its text is unchanged


@dataclass
class LineTable:
    """One file's hinted lines in one trace, by their current line numbers."""

    lines: dict[int, LineInfo]
    texts: Optional[dict[int, str]] = None  # each hinted line's text when last known intact
    edited: bool = False

    def snapshot(self, text: str) -> None:
        """Take the lines' texts from the document as the trace saw it (lines past its end go)."""
        doc = split_lines(text)
        self.lines = {n: info for n, info in self.lines.items() if n < len(doc)}
        self.texts = {n: doc[n] for n in self.lines}

    def apply(self, changes: Sequence[Change], text: str) -> None:
        """Follow one didChange notification (`changes` in order; `text`: the document after)."""
        if not self.lines:
            return
        self.edited = True
        texts = self.texts or {}
        entries = [_Entry(info, texts.get(n), [n]) for n, info in self.lines.items()]
        for start, end, new in changes:
            if start is None or end is None:  # the whole text replaced: keep what is unchanged
                for e in entries:
                    e.check = True
                continue
            shift = new.count("\n") + new.count("\r") - new.count("\r\n") - (end - start)
            for e in entries:
                moved: list[int] = []
                for c in e.candidates:
                    if c < start:
                        moved.append(c)
                    elif c > end:
                        moved.append(c + shift)
                    else:  # touched: its text may still sit before or after the change
                        e.check = True
                        if c == start:
                            moved.append(start)
                        if c == end and end + shift not in moved:
                            moved.append(end + shift)
                e.candidates = moved
        doc = split_lines(text)
        kept: dict[int, _Entry] = {}
        for e in sorted(entries, key=lambda e: e.check):  # untouched lines claim theirs first
            for c in e.candidates:
                if c in kept or not 0 <= c < len(doc):
                    continue
                if e.check and doc[c] != e.text:
                    continue
                kept[c] = e
                break
        self.lines = {c: e.info for c, e in sorted(kept.items())}
        if self.texts is not None:
            self.texts = {c: e.text or "" for c, e in kept.items()}


@dataclass
class Trace:
    key: str
    graph: str  # the graph file, named in reveal links
    model: str
    device: str
    files: dict[str, LineTable]  # by file_key
    order: int
    cpu_ms: float = 0.0  # CPU time spent reading and indexing the graph file


@dataclass
class Mark:
    """The editor's state when a trace began: the open documents' texts and the change log's
    position (the trace's line numbers are those of these texts)."""

    texts: dict[str, str]
    seq: int


@dataclass
class TraceStore:
    traces: dict[str, Trace] = field(default_factory=dict)
    _order: Any = field(default_factory=itertools.count)
    _seq: int = 0
    _log: list[tuple[int, str, list[Change], str]] = field(default_factory=list)
    _marks: int = 0
    _pending: set[asyncio.Future[Any]] = field(default_factory=set)

    # -- traces ------------------------------------------------------------------------
    def begin(self, open_texts: dict[str, str]) -> Mark:
        """Call when a trace starts, with the open documents' texts by file_key."""
        self._marks += 1
        return Mark(dict(open_texts), self._seq)

    def end(self, mark: Mark) -> None:
        self._marks = max(0, self._marks - 1)
        if self._marks == 0:
            self._log.clear()

    def add(
        self,
        key: str,
        graph: str,
        indexed: Indexed,
        mark: Optional[Mark],
        open_texts: dict[str, str],
    ) -> Trace:
        """Install an indexed trace under `key` (replacing that key's previous trace)."""
        files: dict[str, LineTable] = {}
        for file, lines in indexed.files.items():
            k = file_key(file)
            table = LineTable({n: info for n, info in lines.items()})
            before = mark.texts.get(k) if mark is not None else None
            if mark is not None and before is not None:
                table.snapshot(before)
                for seq, changed, changes, after in self._log:
                    if changed == k and seq > mark.seq:  # typed while the trace ran
                        table.apply(changes, after)
            elif k in open_texts:
                table.snapshot(open_texts[k])
            files[k] = table
        trace = Trace(key, graph, indexed.model, indexed.device, files, next(self._order))
        self.traces[key] = trace
        for old in sorted(self.traces.values(), key=lambda t: t.order)[:-KEEP_TRACES]:
            del self.traces[old.key]
        return trace

    def find_graph(self, graph: str) -> Optional[Trace]:
        return next((t for t in self.traces.values() if t.graph == graph), None)

    def touch(self, trace: Trace) -> None:
        """Make a trace the newest (its graph is the one shown again)."""
        trace.order = next(self._order)

    def table(self, path: Union[str, Path]) -> Optional[tuple[Trace, LineTable]]:
        """The newest trace that ran through the file, and its lines there."""
        k = file_key(path)
        best: Optional[tuple[Trace, LineTable]] = None
        for t in self.traces.values():
            table = t.files.get(k)
            if table is not None and (best is None or t.order > best[0].order):
                best = (t, table)
        return best

    # -- loading -----------------------------------------------------------------------
    def load(
        self,
        key: str,
        graph: str,
        mark: Optional[Mark],
        open_texts: Callable[[], dict[str, str]],
        loaded: Callable[[Trace], None],
        failed: Callable[[str], None],
    ) -> Awaitable[Optional[Trace]]:
        """Read and index the graph file off the event loop, then install it; `settled()`
        waits for it."""

        async def run() -> Optional[Trace]:
            try:
                loop = asyncio.get_running_loop()
                indexed, cpu = await loop.run_in_executor(None, _read_timed, graph)
                trace = self.add(key, graph, indexed, mark, open_texts())
                trace.cpu_ms = cpu
            except Exception as e:  # unreadable, malformed, or an index bug: no hints, said so
                failed(f"cannot read the graph {graph} for hints: {type(e).__name__}: {e}")
                return None
            finally:
                if mark is not None:
                    self.end(mark)  # after add: it replays the edits logged since the mark
            loaded(trace)
            return trace

        future = asyncio.ensure_future(run())
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    async def settled(self) -> None:
        """Wait for the graphs being loaded."""
        while self._pending:
            await asyncio.wait(set(self._pending))

    # -- documents ---------------------------------------------------------------------
    def did_open(self, path: Union[str, Path], text: str) -> None:
        k = file_key(path)
        for t in self.traces.values():
            table = t.files.get(k)
            if table is not None and table.texts is None:
                table.snapshot(text)

    def did_change(self, path: Union[str, Path], changes: list[Change], text: str) -> None:
        k = file_key(path)
        self._seq += 1
        if self._marks:
            self._log.append((self._seq, k, changes, text))
        for t in self.traces.values():
            table = t.files.get(k)
            if table is not None:
                table.apply(changes, text)

    def did_close(self, path: Union[str, Path]) -> None:
        """An edited document closed (saved or not): the file may no longer hold the lines
        we moved, so its hints go until the next trace."""
        k = file_key(path)
        for t in self.traces.values():
            table = t.files.get(k)
            if table is not None and table.edited:
                del t.files[k]


def _read_timed(path: str) -> tuple[Indexed, float]:
    """read_graph and the CPU time it took (in this thread, whatever else the machine runs)."""
    started = time.thread_time()
    indexed = read_graph(path)
    return indexed, (time.thread_time() - started) * 1000


def read_graph(path: str) -> Indexed:
    wire = unpack(Path(path).read_bytes())
    if not isinstance(wire, dict) or wire.get("format") != FORMAT:
        raise GraphFormatError("not a torchscope graph")
    version = wire.get("version")
    if not isinstance(version, int) or not 1 <= version <= VERSION:
        raise GraphFormatError(f"graph version {version!r} is not supported")
    return index_graph(wire)
