"""The last trace of each traced document, and its lines kept in step with the editor.

Every trace (from the editor, or a graph the extension shows from a paused debugger) is
indexed once (`hints.index_graph`) and kept per key (the traced document's uri). A file's
hints come from the newest trace that ran through it. Its line numbers are those of the text
that ran: the traced file's text as sent to the runner, every other file as saved on disk;
they are mapped line by line onto the document open in the editor (`map_lines`), there when
the trace arrives or when the file is opened later. Edits move hinted lines with the text
above them; a statement whose text changed (any of its lines) loses its hint until the next
trace. Changes made while a trace ran are replayed onto its lines when it arrives, so a trace
of the saved text fits a document the user kept typing in."""

from __future__ import annotations

import ast
import asyncio
import functools
import itertools
import math
import os
import time
from bisect import bisect_left, bisect_right
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Optional, Union, cast

from ..graph import FORMAT, GraphFormatError, check_version, unpack
from ..usercode import read_source as _read_source
from ..usercode import split_lines
from .hints import Indexed, LineInfo, index_graph

KEEP_TRACES = 32  # traces kept, each of one model (a file of many models keeps others')

# one content change of textDocument/didChange: (start line, end line, new text), or
# (None, None, text) for a whole-document replacement
Change = tuple[Optional[int], Optional[int], str]


def file_key(path: Union[str, Path]) -> str:
    """One spelling per file: the graph's sites and the editor's uris may differ by symlinks."""
    return os.path.normcase(os.path.realpath(path))


def read_source(path: Union[str, Path]) -> Optional[str]:
    """A Python file's text as the interpreter reads it (its coding cookie); None when it
    can't be read."""
    try:
        return _read_source(path)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError, ValueError):
        return None


def map_lines(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    """Where each line of `old` is in `new` (0-based): the lines equal in both, matched in
    order as a line diff matches them; a line changed or removed is not in the result.

    A patience diff: the common head and tail, then the lines found once in each side of
    what is left, in the order both have them, anchor the match, and the gaps between them
    are matched the same way; a small gap of repeated lines only (blank lines, `)`) is left
    to difflib. Linear in practice, where difflib alone takes seconds on a big file with
    many scattered changes."""
    out: dict[int, int] = {}
    todo = [(0, len(old), 0, len(new))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        while alo < ahi and blo < bhi and old[alo] == new[blo]:
            out[alo] = blo
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and old[ahi - 1] == new[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            out[ahi] = bhi
        if alo == ahi or blo == bhi:
            continue
        anchors = _unique_in_order(old, new, alo, ahi, blo, bhi)
        if not anchors:
            if (ahi - alo) * (bhi - blo) <= _SMALL_GAP:
                gap = SequenceMatcher(None, old[alo:ahi], new[blo:bhi], autojunk=False)
                for a, b, size in gap.get_matching_blocks():
                    out.update((alo + a + k, blo + b + k) for k in range(size))
            continue
        for i, j in anchors:
            out[i] = j
            todo.append((alo, i, blo, j))
            alo, blo = i + 1, j + 1
        todo.append((alo, ahi, blo, bhi))
    return out


_SMALL_GAP = 40_000  # lines × lines of a gap difflib matches (without a line found once)


def _unique_in_order(
    old: Sequence[str], new: Sequence[str], alo: int, ahi: int, blo: int, bhi: int
) -> list[tuple[int, int]]:
    """The pairs (i, j) of lines found once in old[alo:ahi] and once in new[blo:bhi], the
    longest chain of them in the same order in both (patience sorting)."""
    once_old: dict[str, int] = {}
    for i in range(alo, ahi):
        once_old[old[i]] = -1 if old[i] in once_old else i
    once_new: dict[str, int] = {}
    for j in range(blo, bhi):
        once_new[new[j]] = -1 if new[j] in once_new else j
    pairs = [
        (i, j) for line, i in once_old.items() if i >= 0 and (j := once_new.get(line, -1)) >= 0
    ]
    pairs.sort()
    # longest increasing run of j: tops[k] ends the best chain of length k + 1
    tops: list[int] = []
    ends: list[int] = []
    back: list[int] = []
    for n, (_, j) in enumerate(pairs):
        k = bisect_left(ends, j)
        back.append(tops[k - 1] if k else -1)
        if k == len(tops):
            tops.append(n)
            ends.append(j)
        else:
            tops[k] = n
            ends[k] = j
    chain: list[tuple[int, int]] = []
    n = tops[-1] if tops else -1
    while n >= 0:
        chain.append(pairs[n])
        n = back[n]
    return chain[::-1]


def statement_extents(text: str, lines: Collection[int]) -> dict[int, tuple[int, int]]:
    """For each of `lines` (0-based) that is part of a statement of several lines, how many
    lines of that statement are above it and below it: the innermost such statement (of a
    compound statement, its header: `for a in zip(…):`, not its body). Empty when the text
    does not parse."""
    wanted = sorted(lines)
    found: dict[int, tuple[int, int]] = {}
    for first, last in _statements(text):
        for n in wanted[bisect_left(wanted, first) : bisect_right(wanted, last)]:
            known = found.get(n)
            if known is None or last - first < known[1] - known[0]:
                found[n] = (first, last)
    return {n: (n - first, last - n) for n, (first, last) in found.items()}


@functools.lru_cache(maxsize=8)
def _statements(text: str) -> tuple[tuple[int, int], ...]:
    """The (first, last) lines, 0-based, of every statement of several lines (a compound
    one's header); parsed once per text (every trace of a file shares its text: _shared)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            first, last = node.lineno - 1, _header_end(node) - 1
            if last > first:
                spans.append((first, last))
    return tuple(spans)


@functools.lru_cache(maxsize=16)
def _lines(text: str) -> tuple[str, ...]:
    """split_lines, kept for the texts in use (a keystroke's text is the next one's old)."""
    return tuple(split_lines(text))


def _header_end(node: ast.stmt) -> int:
    """The last line (1-based) of a statement, or of a compound statement's header."""
    if not isinstance(getattr(node, "body", None), list):
        return node.end_lineno or node.lineno
    end = node.lineno
    for name, value in ast.iter_fields(node):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        for part in cast(list[Any], value) if isinstance(value, list) else [value]:
            if isinstance(part, ast.AST):
                for sub in ast.walk(part):
                    sub_end = getattr(sub, "end_lineno", None)
                    if isinstance(sub_end, int) and sub_end > end:
                        end = sub_end
    return end


@dataclass
class _Entry:
    info: LineInfo
    block: Optional[tuple[str, ...]]  # the texts of its statement's lines (None: not known)
    up: int  # how many of them are above the hinted line
    candidates: list[int]
    check: bool = False  # an edit touched the statement: keep it only where it is unchanged
    # it was the last line of a change's range: what follows that range's end is its own
    # (of two like lines, the first deleted whole, the one left is the second)
    continues: bool = False

    def touched(self, c: int, start: int, end: int) -> bool:
        first = c - self.up
        last = first + (len(self.block) - 1 if self.block else 0)
        return start <= last and end >= first

    def intact(self, doc: Sequence[str], c: int) -> bool:
        first = c - self.up
        return (
            self.block is not None
            and first >= 0
            and doc[first : first + len(self.block)] == self.block
        )


@dataclass
class LineTable:
    """One file's hinted lines in one trace, by their current line numbers."""

    lines: dict[int, LineInfo]
    edited: bool = False
    text: Optional[str] = None  # the whole text the line numbers are of (None: not known)
    # lines above and below each hinted line in its statement, when that has several lines
    # (None: not worked out yet; done from `text` when first needed)
    extents: Optional[dict[int, tuple[int, int]]] = None
    # the text the trace ran and its lines there: a document edited back to exactly that
    # text (an undo) gets every line back, whatever the edits in between lost
    ran: Optional[tuple[str, dict[int, LineInfo]]] = None
    # hinted lines an edit changed, their places still followed: one that reads as it was
    # again (text typed at its start, then Enter before it) gets its hint back
    lost: list[_Entry] = field(default_factory=list)

    def snapshot(self, text: str) -> None:
        """Take the lines' texts from the text the trace ran (lines past its end go)."""
        doc = _lines(text)
        self.lines = {n: info for n, info in self.lines.items() if n < len(doc)}
        self.text = text
        self.extents = None
        self.ran = (text, dict(self.lines))
        self.lost = []

    @property
    def texts(self) -> Optional[dict[int, str]]:
        """Each hinted line's text in `text` (None: the text is not known)."""
        if self.text is None:
            return None
        doc = _lines(self.text)
        return {n: doc[n] for n in self.lines}

    def _extents(self) -> dict[int, tuple[int, int]]:
        if self.extents is None:
            self.extents = statement_extents(self.text, self.lines) if self.text else {}
        return self.extents

    def remap(self, text: str) -> None:
        """Move the lines onto another text of the file (the open document, when the trace ran
        the file on disk, or the document opened again): a hinted statement keeps its hint
        where all its lines are unchanged (`map_lines`); without a text known, take this one
        as the text that ran."""
        if self.text is None:
            self.snapshot(text)
            return
        old, new = _lines(self.text), _lines(text)
        if old != new:
            extents = self._extents()
            where = map_lines(old, new)
            kept: dict[int, tuple[LineInfo, tuple[int, int]]] = {}
            for n, info in self.lines.items():
                c = where.get(n)
                up, down = extents.get(n, (0, 0))
                if c is not None and all(where.get(n + i) == c + i for i in range(-up, down + 1)):
                    kept[c] = (info, (up, down))
            self.lines = {c: info for c, (info, _) in sorted(kept.items())}
            self.extents = {c: ext for c, (_, ext) in kept.items() if ext != (0, 0)}
            self.lost = []
        self.text = text

    def apply(self, changes: Sequence[Change], text: str) -> None:
        """Follow one didChange notification (`changes` in order; `text`: the document after)."""
        if self.ran is not None and text == self.ran[0]:
            self.lines, self.text, self.extents = dict(self.ran[1]), text, None
            self.lost = []
            return
        if not self.lines and not self.lost:
            return
        self.edited = True
        old = _lines(self.text) if self.text is not None else None
        extents = self._extents()
        entries: list[_Entry] = []
        for n, info in self.lines.items():
            up, down = extents.get(n, (0, 0))
            block = old[n - up : n + down + 1] if old is not None else None
            entries.append(_Entry(info, block, up, [n]))
        entries.extend(self.lost)  # (checked: back only where they read as they did)
        above = math.inf  # where the changes so far begin: the text above is as it was
        for start, end, new in changes:
            if start is None or end is None:  # the whole text replaced: keep what is unchanged
                for e in entries:
                    e.check = True
                above = -1
                continue
            inserted = split_lines(new)
            shift = len(inserted) - 1 - (end - start)
            # lines the change moves within its range (two lines swapped), where its lines are
            # known: above every change before it in this notification (VS Code sends a
            # multi-cursor edit's changes last first)
            moves = (
                _moved_lines(old[start : end + 1], inserted, start) if old and end < above else {}
            )
            above = min(above, start)
            for e in entries:
                moved: list[int] = []
                for c in e.candidates:
                    if e.touched(c, start, end):  # its text may still sit before or after
                        e.check = True
                    if c < start:
                        moved.append(c)
                    elif c > end:
                        moved.append(c + shift)
                    else:
                        if c == start:
                            moved.append(start)
                        if c == end and end + shift not in moved:
                            moved.append(end + shift)
                            e.continues = end > start
                        to = moves.get(c)
                        if to is not None and to not in moved:
                            moved.append(to)
                e.candidates = moved[:_CANDIDATES]
        doc = _lines(text)
        kept: dict[int, _Entry] = {}
        # untouched lines claim theirs first, then those a range ended on
        for e in sorted(entries, key=lambda e: (e.check, not e.continues)):
            for c in e.candidates:
                if c in kept or not 0 <= c < len(doc):
                    continue
                if e.check and not e.intact(doc, c):
                    continue
                kept[c] = e
                break
        placed = {id(e) for e in kept.values()}
        self.lost = [e for e in entries if id(e) not in placed and e.block is not None][:_LOST_KEPT]
        for e in self.lost:
            e.check = True
        for e in entries:
            e.continues = False
        self.lines = {c: e.info for c, e in sorted(kept.items())}
        if self.text is not None:
            self.text = text
            self.extents = {
                c: (e.up, len(e.block) - 1 - e.up)
                for c, e in kept.items()
                if e.block is not None and len(e.block) > 1
            }


_CANDIDATES = 4  # places followed for one hinted line (each change may add two)
_LOST_KEPT = 1000  # hinted lines an edit changed, still followed


def _moved_lines(replaced: Sequence[str], inserted: Sequence[str], start: int) -> dict[int, int]:
    """Where each of the `replaced` lines (from line `start`) is among the `inserted` ones,
    for a text found as often in both (the k-th where it was → the k-th where it is: two
    lines swapped); a text found more or fewer times is no move (which copy ran as which
    can't be told)."""
    where: dict[str, tuple[list[int], list[int]]] = {}
    for n, text in enumerate(replaced):
        where.setdefault(text.strip(), ([], []))[0].append(start + n)
    for n, text in enumerate(inserted):
        found = where.get(text.strip())
        if found is not None:
            found[1].append(start + n)
    return {a: b for was, now in where.values() if len(was) == len(now) for a, b in zip(was, now)}


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
    position, and the text each of those files ran as (`ran`: the trace's line numbers are
    those of these texts)."""

    texts: dict[str, str]
    seq: int
    ran: dict[str, str] = field(default_factory=dict[str, str])


@dataclass
class TraceStore:
    traces: dict[str, Trace] = field(default_factory=dict)
    # traces a newer one of their key replaced (another model under a paused or a panel's
    # key), or pushed out, by graph file: no hints come from them, but their panels still
    # ask where their lines are now
    older: dict[str, Trace] = field(default_factory=dict)
    _order: Any = field(default_factory=itertools.count)
    _seq: int = 0
    _log: list[tuple[int, str, list[Change], str]] = field(default_factory=list)
    _marks: int = 0
    _pending: set[asyncio.Future[Any]] = field(default_factory=set)

    # -- traces ------------------------------------------------------------------------
    def begin(
        self,
        open_texts: dict[str, str],
        traced: Optional[tuple[str, str]] = None,
        hints: bool = True,
    ) -> Mark:
        """Call when a trace starts, with the open documents' texts by file_key and the traced
        file's key and the text sent to the runner. Every other file runs as saved on disk
        (the runner imports it): that text is read now, unless the trace gives no hints."""
        self._marks += 1
        ran: dict[str, str] = {}
        if hints:
            ran = {k: t for k in open_texts if (t := read_source(k)) is not None}
        if traced is not None:
            ran[traced[0]] = traced[1]
        return Mark(dict(open_texts), self._seq, ran)

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
        disk: Optional[dict[str, str]] = None,
    ) -> Trace:
        """Install an indexed trace under `key` (replacing that key's previous trace). The
        text each file ran as comes from `mark`, else from `disk` (files read after the trace:
        those not open when it began); lines are mapped from it onto the open documents."""
        files: dict[str, LineTable] = {}
        for file, lines in indexed.files.items():
            k = file_key(file)
            table = LineTable({n: info for n, info in lines.items()})
            ran = mark.ran.get(k) if mark is not None else None
            if ran is None and disk is not None:
                ran = disk.get(k)
            if ran is not None:
                ran = self._shared(k, ran)
            before = mark.texts.get(k) if mark is not None else None
            if mark is not None and before is not None:
                table.snapshot(ran if ran is not None else before)
                table.remap(before)  # unsaved edits of a file the runner imported as saved
                for seq, changed, changes, after in self._log:
                    if changed == k and seq > mark.seq:  # typed while the trace ran
                        table.apply(changes, after)
            elif k in open_texts:
                table.snapshot(ran if ran is not None else open_texts[k])
                table.remap(open_texts[k])
            elif ran is not None:
                table.snapshot(ran)  # mapped onto the document when it is opened
            files[k] = table
        trace = Trace(key, graph, indexed.model, indexed.device, files, next(self._order))
        replaced = self.traces.get(key)
        if replaced is not None and replaced.model != trace.model:
            self._retire(replaced)  # (the same model's panel shows the new graph now)
        self.traces[key] = trace
        for old in list(self.older.values()):
            if old.graph == graph or (old.key == key and old.model == trace.model):
                del self.older[old.graph]
        for old in sorted(self.traces.values(), key=lambda t: t.order)[:-KEEP_TRACES]:
            del self.traces[old.key]
            self._retire(old)
        return trace

    def _retire(self, trace: Trace) -> None:
        """`trace` no longer gives hints; its lines are still followed (the newest
        KEEP_TRACES such)."""
        self.older[trace.graph] = trace
        for old in sorted(self.older.values(), key=lambda t: t.order)[:-KEEP_TRACES]:
            del self.older[old.graph]

    def _all(self) -> list[Trace]:
        return [*self.traces.values(), *self.older.values()]

    def lines_of(self, graph: str) -> Optional[Trace]:
        """The trace of a graph file, whether its lines give hints now or not."""
        return self.find_graph(graph) or self.older.get(graph)

    def _shared(self, k: str, text: str) -> str:
        """`text`, or an equal string an older trace keeps for that file (one copy of a file
        traced again and again)."""
        for t in self.traces.values():
            table = t.files.get(k)
            if table is not None and table.text is not None and table.text == text:
                return table.text
        return text

    def find_graph(self, graph: str) -> Optional[Trace]:
        return next((t for t in self.traces.values() if t.graph == graph), None)

    def touch(self, trace: Trace) -> None:
        """Make a trace the newest (its graph is the one shown again)."""
        trace.order = next(self._order)

    def hinted(self, path: Union[str, Path]) -> dict[int, tuple[Trace, LineInfo]]:
        """Each hinted line of the file, with the newest kept trace that ran it: every model
        traced (two of one file in two panels) has its lines' hints, a line several ran has
        the last one's, and a model's older trace under another key (a panel's graph indexed
        again after a restart, a paused trace) gives none."""
        k = file_key(path)
        found = sorted((t for t in self.traces.values() if k in t.files), key=lambda t: -t.order)
        merged: dict[int, tuple[Trace, LineInfo]] = {}
        models: set[str] = set()
        for t in found:  # newest first
            if t.model in models:
                continue
            models.add(t.model)
            for line, info in t.files[k].lines.items():
                merged.setdefault(line, (t, info))
        return merged

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

        known = set(mark.ran) if mark is not None else set[str]()

        async def run() -> Optional[Trace]:
            try:
                loop = asyncio.get_running_loop()
                indexed, disk, cpu = await loop.run_in_executor(None, _read_timed, graph, known)
                trace = self.add(key, graph, indexed, mark, open_texts(), disk)
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
        """The lines follow the file from the text they were made for (it may have changed
        on disk since, or since the document was closed)."""
        k = file_key(path)
        for t in self._all():
            table = t.files.get(k)
            if table is not None:
                table.remap(text)

    def did_change(self, path: Union[str, Path], changes: list[Change], text: str) -> None:
        k = file_key(path)
        self._seq += 1
        if self._marks:
            self._log.append((self._seq, k, changes, text))
        for t in self._all():
            table = t.files.get(k)
            if table is not None:
                table.apply(changes, text)

    def did_close(self, path: Union[str, Path]) -> None:
        """An edited document closed (saved or not): the file may no longer hold the lines
        we moved, so its hints go until the next trace."""
        k = file_key(path)
        for t in self._all():
            table = t.files.get(k)
            if table is not None and table.edited:
                del t.files[k]


def _read_timed(path: str, known: set[str]) -> tuple[Indexed, dict[str, str], float]:
    """read_graph, the text on disk of each file it has lines in but those `known` (by
    file_key), and the CPU time it took (in this thread, whatever else the machine runs)."""
    started = time.thread_time()
    indexed = read_graph(path)
    disk: dict[str, str] = {}
    for file in indexed.files:
        k = file_key(file)
        text = read_source(file) if k not in known else None
        if text is not None:
            disk[k] = text
    return indexed, disk, (time.thread_time() - started) * 1000


def read_graph(path: str) -> Indexed:
    wire = unpack(Path(path).read_bytes())
    if not isinstance(wire, dict) or wire.get("format") != FORMAT:
        raise GraphFormatError("not a torchscope graph")
    check_version(wire.get("version"))  # (a newer one: says to update torchscope)
    return index_graph(wire)
