"""The server's reading of its runner's stderr (what user code prints): lines in, each cut to a
limit, however the bytes arrive. The whole path, a forward printing a 200 KB line through the
real server and runner, is in test_server_lsp.py."""

from __future__ import annotations

from torchscope.server.runner_client import LineSplitter


def feed_all(chunks: list[bytes], limit: int = 10) -> list[str]:
    lines = LineSplitter(limit)
    out: list[str] = []
    for c in chunks:
        out += lines.feed(c)
    return out + lines.end()


def test_lines_split_across_chunks():
    assert feed_all([b"ab", b"c\nde", b"f\n", b"g"]) == ["abc", "def", "g"]
    assert feed_all([b"one\n\ntwo\n"]) == ["one", "", "two"]


def test_a_long_line_is_cut_and_its_rest_dropped():
    out = feed_all([b"x" * 25, b"y" * 100, b"z\nnext\n"])
    assert out == ["x" * 10 + " …(cut)", "next"]
    # a long line whole inside one chunk
    assert feed_all([b"a" * 30 + b"\nb\n"]) == ["a" * 10 + " …(cut)", "b"]


def test_the_held_part_stays_bounded():
    lines = LineSplitter(10)
    for _ in range(1000):
        lines.feed(b"q" * 1000)
        assert len(lines.partial) <= 40


def test_utf8_split_between_chunks():
    text = "é→x\n".encode()
    assert feed_all([text[:1], text[1:3], text[3:]]) == ["é→x"]
