"""Sequence alignment: the longest common subsequence of two key lists, as matched index pairs.

Myers' O((N+M)·D) algorithm after trimming the common prefix and suffix, so two nearly equal
sequences cost little more than one pass over them. Where the sequences differ in more than
`MAX_EDITS` places (two unrelated modules at one path), difflib's matching blocks stand in:
not always the longest, but bounded in time.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence

MAX_EDITS = 400


def common_pairs(xs: Sequence[Hashable], ys: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Index pairs (i, j), increasing in both, with xs[i] == ys[j]: a longest common
    subsequence (an approximation past MAX_EDITS differences)."""
    n, m = len(xs), len(ys)
    lo = 0
    while lo < n and lo < m and xs[lo] == ys[lo]:
        lo += 1
    hx, hy = n, m
    while hx > lo and hy > lo and xs[hx - 1] == ys[hy - 1]:
        hx -= 1
        hy -= 1
    pairs = [(i, i) for i in range(lo)]
    if hx > lo and hy > lo and not set(xs[lo:hx]).isdisjoint(ys[lo:hy]):
        middle = _myers(xs[lo:hx], ys[lo:hy])
        if middle is None:
            middle = _blocks(xs[lo:hx], ys[lo:hy])
        pairs.extend((lo + i, lo + j) for i, j in middle)
    pairs.extend((hx + k, hy + k) for k in range(n - hx))
    return pairs


def _myers(xs: Sequence[Hashable], ys: Sequence[Hashable]) -> list[tuple[int, int]] | None:
    """Myers' greedy forward search; None when more than MAX_EDITS edits are needed."""
    n, m = len(xs), len(ys)
    frontier: dict[int, int] = {1: 0}  # diagonal k = x - y → furthest x reached
    history: list[dict[int, int]] = []
    for d in range(min(n + m, MAX_EDITS) + 1):
        reached: dict[int, int] = {}
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and frontier[k - 1] < frontier[k + 1]):
                x = frontier[k + 1]  # a step down: ys[y - 1] inserted
            else:
                x = frontier[k - 1] + 1  # a step right: xs[x - 1] deleted
            y = x - k
            while x < n and y < m and xs[x] == ys[y]:
                x += 1
                y += 1
            reached[k] = x
            if x >= n and y >= m:
                history.append(reached)
                return _backtrack(history, n, m)
        history.append(reached)
        frontier = reached
    return None


def _backtrack(history: list[dict[int, int]], n: int, m: int) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(len(history) - 1, -1, -1):
        k = x - y
        prev_k = 0
        if d == 0:
            start_x = 0
        else:
            before = history[d - 1]
            if k == -d or (k != d and before[k - 1] < before[k + 1]):
                prev_k = k + 1
                start_x = before[prev_k]
            else:
                prev_k = k - 1
                start_x = before[prev_k] + 1
        start_y = start_x - k
        pairs.extend((start_x + t, start_y + t) for t in range(x - start_x - 1, -1, -1))
        if d > 0:
            x = history[d - 1][prev_k]
            y = x - prev_k
    pairs.reverse()
    return pairs


def _blocks(xs: Sequence[Hashable], ys: Sequence[Hashable]) -> list[tuple[int, int]]:
    matcher = difflib.SequenceMatcher(None, list(xs), list(ys), autojunk=False)
    return [(b.a + t, b.b + t) for b in matcher.get_matching_blocks() for t in range(b.size)]
