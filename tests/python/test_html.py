"""The standalone page (render_html) and the notebook view (show)."""

from __future__ import annotations

import base64
import gzip
import html as htmlmod
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgpack
import pytest
import torch
from torch import nn

import torchscope
from torchscope import html as tshtml
from torchscope import notebook

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "mlp.graph.msgpack"
STATIC = ROOT / "python_helper" / "torchscope" / "static"
# The page template as the viewer's build copies it into static/.
TEMPLATE = (ROOT / "webview" / "src" / "page.html").read_text(encoding="utf-8")

needs_bundle = pytest.mark.skipif(
    not (STATIC / "viewer-page.js").exists(), reason="viewer bundle not built (make build-webview)"
)


@pytest.fixture
def fake_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny stand-in bundle, so these tests don't depend on the JS build."""
    files = {
        "viewer-page.js": "console.log('page'); var s = '</script><!-- x';",
        "layout.worker.js": "onmessage = () => postMessage('</script>');",
        "viewer.css": ".ts-root{color:red} /* </style> */",
        "page.html": TEMPLATE,
    }
    monkeypatch.setattr(tshtml, "_read_static", lambda name: files[name])


def _scripts(page: str) -> list[str]:
    return re.findall(r"<script\b[^>]*>(.*?)</script>", page, flags=re.S)


def test_page_is_self_contained(fake_bundle: None) -> None:
    data = GOLDEN.read_bytes()
    page = tshtml.render_html(data, "MLP")
    assert page.startswith("<!DOCTYPE html>")
    # The graph travels as base64 inside the page.
    blob = re.search(r'id="torchscope-graph">([^<]*)</script>', page)
    assert blob and base64.b64decode(blob.group(1)) == data
    # No external resources of any kind.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "http://" not in page and "https://" not in page
    # Inlined code can't close its element early.
    assert len(_scripts(page)) == 4  # graph, worker source, boot, main bundle
    assert "</script><!--" not in page
    assert page.count("</style>") == 1


def test_csp_is_strict_with_a_fresh_nonce(fake_bundle: None) -> None:
    a = tshtml.render_html(b"x", "t")
    b = tshtml.render_html(b"x", "t")
    meta = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', a)
    csp = htmlmod.unescape(meta.group(1))
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert "default-src 'none'" in csp
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert "'wasm-unsafe-eval'" in csp and "worker-src blob:" in csp
    assert f'<script nonce="{nonce}">' in a and f'<style nonce="{nonce}">' in a
    assert nonce not in b


def test_title_is_escaped(fake_bundle: None) -> None:
    page = tshtml.render_html(b"x", "<img src=x onerror=alert(1)> & co")
    assert "<title>&lt;img src=x onerror=alert(1)&gt; &amp; co</title>" in page
    assert "<img" not in page


def test_a_ranks_page_is_titled_with_its_rank(fake_bundle: None, tmp_path) -> None:
    """Every rank's page was titled "MLP": two ranks' tabs could not be told apart."""
    import torch

    import torchscope

    graph = torchscope.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))
    graph.model.rank, graph.model.world_size = 1, 2
    page = graph.save(tmp_path / "g.html").read_text()
    assert "<title>Linear (rank 1 of 2)</title>" in page
    graph.model.rank = None
    assert "<title>Linear</title>" in graph.save(tmp_path / "h.html").read_text()


def test_missing_bundle_says_how_to_build(monkeypatch: pytest.MonkeyPatch) -> None:
    class Missing:
        def joinpath(self, *parts: str) -> Missing:
            return self

        def read_text(self, encoding: str = "utf-8") -> str:
            raise FileNotFoundError("viewer-page.js")

    monkeypatch.setattr(tshtml.resources, "files", lambda pkg: Missing())
    with pytest.raises(tshtml.BundleNotBuiltError, match="make build-webview"):
        tshtml.render_html(b"x", "t")


@needs_bundle
def test_real_bundle_page_has_no_external_urls() -> None:
    page = tshtml.render_html(GOLDEN.read_bytes(), "MLP")
    assert len(page) > 100_000  # bundle + WASM inlined
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    # the graph, the inert worker source, its boot script and the main bundle
    scripts = re.findall(r"<script\b([^>]*)>", page)
    assert len(scripts) == 4
    assert 'id="torchscope-graph"' in scripts[0] and 'id="torchscope-worker"' in scripts[1]
    assert all("nonce=" in s for s in scripts[2:])


class TinyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


class Broken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).view(7, 7)


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch, fake_bundle: None) -> list[object]:
    seen: list[object] = []
    monkeypatch.setattr(notebook, "_display", seen.append)
    return seen


def opened_page(fragment: str) -> str:
    """The page a notebook view's frame opens: its gzip'd, base64'd payload unpacked."""
    srcdoc = htmlmod.unescape(re.match(r'<iframe srcdoc="([^"]*)"', fragment).group(1))
    payload = re.search(r'id="torchscope-page">([^<]*)</script>', srcdoc).group(1)
    return gzip.decompress(base64.b64decode(payload)).decode("utf-8")


def test_show_displays_an_iframe_view(shown: list[object]) -> None:
    assert torchscope.show(TinyNet(), torch.randn(2, 4)) is None
    assert len(shown) == 1
    view = shown[0]
    assert isinstance(view, notebook.GraphView)
    frag = view._repr_html_()
    assert frag.startswith("<iframe srcdoc=") and frag.endswith("</iframe>")
    assert 'sandbox="allow-scripts allow-downloads"' in frag
    assert "allow-same-origin" not in frag
    # The whole page is one attribute value: no raw markup leaks into the notebook.
    srcdoc = re.match(r'<iframe srcdoc="([^"]*)"', frag).group(1)
    assert "<" not in srcdoc
    nonce = re.search(r'<script nonce="([^"]+)">', htmlmod.unescape(srcdoc)).group(1)
    assert opened_page(frag) == tshtml.render_html(view.graph_bytes, "TinyNet", nonce)
    assert view.title == "TinyNet"


def test_show_displays_the_partial_graph_then_reraises(shown: list[object]) -> None:
    with pytest.raises(RuntimeError):
        torchscope.show(Broken(), torch.randn(2, 4))
    assert len(shown) == 1
    assert isinstance(shown[0], notebook.GraphView)


def test_show_with_real_ipython_display(monkeypatch: pytest.MonkeyPatch, fake_bundle: None) -> None:
    pytest.importorskip("IPython")
    import IPython.display

    captured: list[object] = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: captured.append(obj))
    monkeypatch.setattr(notebook, "_in_notebook", lambda: True)
    torchscope.show(TinyNet(), torch.randn(2, 4))
    assert isinstance(captured[0], notebook.GraphView)
    fmt = IPython.core.formatters.HTMLFormatter()
    assert fmt(captured[0]).startswith("<iframe")


def test_a_frame_lower_than_the_viewer_needs_is_made_high_enough(fake_bundle: None) -> None:
    # QA: a 300 px frame cut off the viewer's status line (the viewer is 360 px at least)
    assert notebook.GraphView(GOLDEN.read_bytes(), "MLP", 300).height == notebook.MIN_HEIGHT
    low = notebook.GraphView(GOLDEN.read_bytes(), "MLP", 300)._repr_html_()
    assert f"height:{notebook.MIN_HEIGHT}px" in low
    assert "height:900px" in notebook.GraphView(GOLDEN.read_bytes(), "MLP", 900)._repr_html_()
    css = (Path(__file__).parents[2] / "webview/src/viewer.css").read_text()
    assert f"min-height: {notebook.MIN_HEIGHT}px" in css


def test_view_save(tmp_path: Path, fake_bundle: None) -> None:
    view = notebook.GraphView(GOLDEN.read_bytes(), "MLP")
    out = view.save(tmp_path / "mlp.html")
    assert out.read_text(encoding="utf-8") == view.page


def test_show_outside_a_notebook_writes_the_page_and_says_where(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake_bundle: None,
) -> None:
    # a script (or IPython in a terminal) has nowhere to draw: the view's repr alone told
    # the user nothing
    monkeypatch.setattr(notebook.tempfile, "tempdir", str(tmp_path))
    assert not notebook._in_notebook()
    torchscope.show(TinyNet(), torch.randn(2, 4))
    err = capsys.readouterr().err
    [page] = tmp_path.glob("torchscope-TinyNet-*.html")
    assert str(page) in err and "not in a notebook" in err
    text = page.read_text(encoding="utf-8")
    blob = re.search(r'id="torchscope-graph">([^<]*)</script>', text)
    assert text.startswith("<!DOCTYPE html>") and blob
    graph = torchscope.Graph.from_wire(msgpack.unpackb(base64.b64decode(blob.group(1))))
    assert graph.model.name == "TinyNet"


def test_a_graph_at_the_end_of_a_cell_is_one_line() -> None:
    """A notebook shows the last value of a cell: the dataclass's repr of every node and
    edge was megabytes of text (Llama-70B on meta: 2.8 million characters)."""
    graph = torchscope.trace(TinyNet(), torch.randn(2, 4))
    text = repr(graph)
    assert "\n" not in text and len(text) < 200, text
    assert text.startswith("<torchscope.Graph TinyNet: ") and "ops" in text
    broken = torchscope.trace_call(Broken(), (torch.randn(2, 4),), raise_errors=False)
    assert "raised RuntimeError" in repr(broken)


def test_the_notebook_view_carries_the_page_compressed() -> None:
    """Each view carried the whole viewer again, HTML-escaped (3.6 MB a view: eight small
    models made a 32 MB notebook); now the page travels gzip-compressed in base64 and a
    tiny script in the frame opens it."""
    view = notebook.GraphView(GOLDEN.read_bytes(), "MLP")
    frag = view._repr_html_()
    assert len(frag) < len(view.page) / 2, (len(frag), len(view.page))
    srcdoc = htmlmod.unescape(re.match(r'<iframe srcdoc="([^"]*)"', frag).group(1))
    # the opener runs under the page's own policy: its nonce, nothing from the network
    nonce = re.search(r"'nonce-([^']+)'", htmlmod.unescape(srcdoc)).group(1)
    assert f'<script nonce="{nonce}">' in srcdoc
    assert opened_page(frag) == tshtml.render_html(GOLDEN.read_bytes(), "MLP", nonce)


def test_show_graph_from_the_package_draws_once_at_its_height(shown: list[object]) -> None:
    """`torchscope.show_graph` was only in torchscope.notebook, and returned the view it had
    displayed: a cell ending with it drew the graph twice."""
    graph = torchscope.trace(TinyNet(), torch.randn(2, 4))
    assert torchscope.show_graph(graph, height=900) is None
    [view] = shown
    assert isinstance(view, notebook.GraphView) and view.height == 900
    assert "height:900px" in view._repr_html_()


def _in_ipython(tmp_path: Path, cells: list[str], answer: str) -> Any:
    """Run `cells` in a real IPython shell (as a notebook's kernel runs them, each its own
    `Cell In[n]`), then `answer`, code that prints one JSON line: what it printed."""
    pytest.importorskip("IPython")
    script = tmp_path / "kernel.py"
    script.write_text(
        "import json\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        f"for cell in {cells!r}:\n"
        "    shell.run_cell(cell, store_history=True).raise_error()\n" + textwrap.dedent(answer)
    )
    env = {**os.environ, "PYTHONPATH": str(Path(torchscope.__file__).parents[1])}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_notebook_view_names_cells_as_ipython_does(tmp_path: Path) -> None:
    """In a notebook, code lives in the kernel's temporary files (`/tmp/ipykernel_10677/
    3936723156.py`): the view names them as IPython's tracebacks do, `Cell In[1]`; the
    graph the user holds keeps its files."""
    cells = [
        "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x)\n",
        "import torchscope\ng = torchscope.trace(Net(), torch.randn(2))",
    ]
    answer = """
        from torchscope import notebook
        from torchscope.graph import unpack

        g = shell.user_ns["g"]
        wire = unpack(notebook.view_bytes(g))
        relu = next(n for n in wire["nodes"] if n["name"] == "relu")
        net = next(n for n in wire["nodes"] if n["name"] == "Net")
        kept = next(n for n in g.nodes if n.name == "relu").site.file
        print(json.dumps([relu["site"], net["defn"], kept]))
        """
    site, defn, kept = _in_ipython(tmp_path, cells, answer)
    assert (site["file"], site["line"]) == ("Cell In[1]", 6)
    assert (defn["file"], defn["line"]) == ("Cell In[1]", 4)
    assert "Cell" not in kept  # (ipykernel: a .py file; a plain shell: <ipython-input-1-…>)


def test_a_summary_printed_in_a_notebook_names_cells_as_ipython_does(tmp_path: Path) -> None:
    """`graph.summary()` (and a diff's text) printed in a notebook names the cells' lines as
    IPython's tracebacks do (`Cell In[1]:7`), not by the kernel's temporary files: the NaN
    origin, the layer it is in and the error's line; the graph keeps its files."""
    cells = [
        "import torch\nfrom torch import nn\n\nclass Inner(nn.Module):\n"
        "    def forward(self, x):\n        y = torch.log(-x)\n"
        "        return y + self.missing\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.inner = Inner()\n    def forward(self, x):\n"
        "        return self.inner(x)\n",
        "import torchscope\ntry:\n    torchscope.trace(Net(), torch.ones(2))\n"
        "except AttributeError as e:\n    g = e.torchscope_graph\n",
        "from torchscope.compare import compare_view\n"
        "from torchscope.diff import diff_graphs\n"
        "from torchscope.diff_text import render_text\n"
        "a = torchscope.trace_call(Net(), (-torch.ones(2),), raise_errors=False)\n"
        "text = render_text(compare_view(diff_graphs(a, g)))",
    ]
    answer = """
        g, diff = shell.user_ns["g"], shell.user_ns["text"]
        print(json.dumps([g.summary(), g.nodes[g.nan_origin].site.file, diff]))
        """
    text, kept, diff = _in_ipython(tmp_path, cells, answer)
    origin = next(line for line in text.splitlines() if line.startswith("NaN/Inf origin"))
    assert origin.endswith("in inner (Inner, called at Cell In[1]:14) at Cell In[1]:6"), origin
    error = next(line for line in text.splitlines() if line.startswith("ERROR"))
    assert error.endswith("at Cell In[1]:7"), error
    changed = next(line for line in diff.splitlines() if line.startswith("! NaN/Inf origin"))
    assert changed.endswith("at Cell In[1]:6"), changed
    assert "Cell" not in kept
