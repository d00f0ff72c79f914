"""Show the viewer in Jupyter (JupyterLab, classic Notebook, VS Code notebooks).

Each view is the standalone page inside a sandboxed ``<iframe srcdoc>``: its own document,
scripts and styles, so several views in one notebook never interfere with each other or
with the notebook. The page travels gzip-compressed in base64 and a few lines of script in
the frame open it (a view is ~0.7 MB in the saved notebook instead of the 3.6 MB of the
page HTML-escaped); the browser's DecompressionStream does it (Chrome 80, Firefox 113,
Safari 16.4 and later).
"""

from __future__ import annotations

import base64
import gzip
import html
import math
import numbers
import os
import re
import secrets
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from .html import render_html

__all__ = ["GraphView", "show", "show_graph"]

DEFAULT_HEIGHT = 640
MIN_HEIGHT = 360  # the viewer's toolbar, graph and status line (its `.ts-root` min-height)


class GraphView:
    """A rendered graph; Jupyter displays it through ``_repr_html_``."""

    def __init__(self, graph_bytes: bytes, title: str, height: int = DEFAULT_HEIGHT) -> None:
        self.graph_bytes = graph_bytes
        self.title = title
        # (a lower frame cut the view's bottom off; None: the default)
        self.height = max(int(height if height is not None else DEFAULT_HEIGHT), MIN_HEIGHT)
        self._page: Optional[str] = None

    @property
    def page(self) -> str:
        """The standalone HTML document."""
        if self._page is None:
            self._page = render_html(self.graph_bytes, self.title)
        return self._page

    def save(self, path: str | Path) -> Path:
        """Write the standalone page to ``path``."""
        out = Path(path)
        out.write_text(self.page, encoding="utf-8")
        return out

    def _repr_html_(self) -> str:
        # allow-scripts without allow-same-origin: the page runs in an opaque origin and
        # can't reach the notebook; allow-downloads keeps SVG/PNG export working.
        return (
            f'<iframe srcdoc="{html.escape(self._opener(), quote=True)}" '
            f'title="{html.escape(self.title, quote=True)}" '
            'sandbox="allow-scripts allow-downloads" '
            f'style="width:100%;height:{int(self.height)}px;border:1px solid rgba(128,128,128,.35);'
            'border-radius:4px"></iframe>'
        )

    def _opener(self) -> str:
        """A small document that unpacks the page (gzip, base64) and writes it over itself,
        under the page's own policy (one nonce for both)."""
        nonce = secrets.token_urlsafe(18)
        page = render_html(self.graph_bytes, self.title, nonce)
        packed = base64.b64encode(gzip.compress(page.encode("utf-8"), 6)).decode("ascii")
        csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
        policy = csp.group(1) if csp else ""
        return (
            '<!DOCTYPE html><html><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
            f"<title>{html.escape(self.title)}</title></head><body>"
            f'<script type="application/octet-stream" id="torchscope-page">{packed}</script>'
            f'<script nonce="{nonce}">{_OPEN}</script></body></html>'
        )

    def __repr__(self) -> str:
        return f"<torchscope.GraphView {self.title!r} ({len(self.graph_bytes)} bytes)>"


# the opener's script: base64 → bytes → gunzip → the page, written over this document
_OPEN = (
    "(async()=>{const e=document.getElementById('torchscope-page');"
    "if(!window.DecompressionStream){document.body.textContent="
    "'torchscope: this browser cannot open the graph (it lacks DecompressionStream)';return;}"
    "const b=atob(e.textContent),u=new Uint8Array(b.length);"
    "for(let i=0;i<b.length;i++)u[i]=b.charCodeAt(i);"
    "const t=await new Response(new Blob([u]).stream()"
    ".pipeThrough(new DecompressionStream('gzip'))).text();"
    "document.open();document.write(t);document.close();})();"
)


def _display(view: GraphView) -> None:
    if not _in_notebook():
        # a script, or IPython in a terminal: nowhere to draw (its repr would be all it shows)
        fd, name = tempfile.mkstemp(prefix=f"torchscope-{_file_safe(view.title)}-", suffix=".html")
        os.close(fd)
        path = view.save(name)
        print(
            f"torchscope: not in a notebook: the graph is in {path} (open it in a browser)",
            file=sys.stderr,
        )
        return
    from IPython.display import display

    display(view)


def _in_notebook() -> bool:
    """Whether a notebook kernel (Jupyter, VS Code's, Colab's) runs this: one that draws HTML."""
    ipython = sys.modules.get("IPython")  # a kernel has imported it; a script need not
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:
        return False
    return shell is not None and type(shell).__name__ != "TerminalInteractiveShell"


def _file_safe(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", title)[:60] or "graph"


def show_graph(graph: Any, height: int = DEFAULT_HEIGHT) -> None:
    """Display an already traced ``torchscope.Graph``, ``height`` pixels high (at least
    360: the viewer's toolbar and status line need it). Outside a
    notebook the page is written to a temporary file, whose path is printed. Returns
    nothing, so a cell ending with it draws once (``graph.save("g.html")`` keeps a page)."""
    from .graph import Graph

    if not isinstance(graph, Graph):
        raise TypeError(
            f"show_graph draws a traced Graph (torchscope.trace's result), not a "
            f"{type(graph).__name__}: torchscope.show(model, *inputs) traces a model and draws it"
        )
    if isinstance(height, bool) or not isinstance(height, numbers.Real):
        raise TypeError(f"height is a number of pixels, not a {type(height).__name__}")
    if not math.isfinite(height):
        raise ValueError(f"height is a number of pixels, not {height}")
    _display(GraphView(view_bytes(graph), graph.model.title(), height))


def view_bytes(graph: Any) -> bytes:
    """The graph as a notebook view carries it: lines in the notebook's cells named as
    IPython's tracebacks name them (`Cell In[11]`), not by the kernel's temporary files
    (`/tmp/ipykernel_10677/3936723156.py`). The graph itself is left as it is."""
    from .graph import pack_wire

    wire = graph.to_wire()
    named = file_names()
    if named is not str:  # (in IPython)
        _rename_sites(wire, named)
    return pack_wire(wire)


def _cell_names() -> Optional[Callable[[str], Optional[str]]]:
    """A file name → `Cell In[N]` for the running IPython's cells (None outside IPython)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        label = shell.compile.format_code_name  # (IPython 8 and later)
    except Exception:
        return None

    def name_of(file: str) -> Optional[str]:
        try:
            named = label(file)
        except Exception:
            return None
        return f"{named[0]} {named[1]}" if named else None

    return name_of


def file_names() -> Callable[[str], str]:
    """A file name → how people should read it here: a notebook cell's as IPython's tracebacks
    name it (`Cell In[11]`), any other file as it is (and every file so outside IPython)."""
    name_of = _cell_names()
    if name_of is None:
        return str
    names: dict[str, str] = {}

    def named(file: str) -> str:
        if file not in names:
            names[file] = name_of(file) or file
        return names[file]

    return named


def _rename_sites(wire: dict[str, Any], named: Callable[[str], str]) -> None:
    """Every site of a wire graph (nodes' site, defn and inside; the error's traceback) with
    its file as `named` names it (file_names: each file looked up once)."""
    sites = [s for n in wire["nodes"] for s in (n.get("site"), n.get("defn"), n.get("inside"))]
    error = wire.get("error")
    if error:
        sites.extend(error.get("traceback") or ())
    for site in sites:
        if isinstance(site, dict) and isinstance(site.get("file"), str):
            site["file"] = named(site["file"])


def show(model: Any, *args: Any, **kwargs: Any) -> None:
    """Trace ``model(*args, **kwargs)`` and display the graph in the notebook (outside one:
    write the page to a temporary file and print its path).

    If the forward raises, the partial graph (up to the failing call) is displayed first
    and then the original exception is re-raised.
    """
    from .tracer import trace

    try:
        graph = trace(model, *args, **kwargs)
    except Exception as exc:
        partial = getattr(exc, "torchscope_graph", None)
        if partial is not None:
            show_graph(partial)
        raise
    show_graph(graph)
