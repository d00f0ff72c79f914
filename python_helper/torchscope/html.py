"""One self-contained HTML page showing a graph: viewer bundle, CSS, WASM and data inlined.

The page works offline from disk (file://) and in a notebook iframe. It carries a strict
Content-Security-Policy: scripts and styles only with a per-page nonce, no network, and
``'wasm-unsafe-eval'`` for Graphviz (WASM) in a Blob-URL worker.
"""

from __future__ import annotations

import base64
import html
import re
import secrets
from importlib import resources

__all__ = ["BundleNotBuiltError", "render_html"]

_STATIC_FILES = ("viewer.js", "viewer.css")


class BundleNotBuiltError(RuntimeError):
    """The viewer bundle is missing from ``torchscope/static``."""


def _read_static(name: str) -> str:
    path = resources.files("torchscope").joinpath("static", name)
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as e:
        raise BundleNotBuiltError(
            f"the viewer bundle is not built ({name} missing in torchscope/static): "
            "run `make build-webview`"
        ) from e


def _inline_script(js: str) -> str:
    # Inside <script>, only "</script" and "<!--" can end or confuse the element.
    js = re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)
    return js.replace("<!--", "<\\!--")


def _inline_style(css: str) -> str:
    return re.sub(r"</(style)", r"<\\/\1", css, flags=re.IGNORECASE)


# Starts the layout worker (and its Graphviz WASM compile) from the page's inert worker
# element before the main bundle is parsed: the longest steps before the first picture
# then run side by side.
_BOOT = (
    "(function(){var e=document.getElementById('torchscope-worker');if(!e||!window.Worker)return;"
    "try{var u=URL.createObjectURL(new Blob([e.textContent],{type:'text/javascript'}));"
    "window.__torchscopeWorkerUrl=u;"
    "window.__torchscopeWorker=new Worker(u,{name:'torchscope-layout'});}catch(x){}})();"
)


def _page_scripts(nonce: str) -> str:
    """The worker element, its boot script and the main bundle (the one-file bundle when the
    split build is missing)."""
    try:
        worker = _read_static("layout.worker.js")
        js = _read_static("viewer-page.js")
    except BundleNotBuiltError:
        return f'<script nonce="{nonce}">{_inline_script(_read_static("viewer.js"))}</script>\n'
    return (
        f'<script type="text/plain" id="torchscope-worker">{_inline_script(worker)}</script>\n'
        f'<script nonce="{nonce}">{_BOOT}</script>\n'
        f'<script nonce="{nonce}">{_inline_script(js)}</script>\n'
    )


def render_html(graph_bytes: bytes, title: str) -> str:
    """Return one HTML document that shows ``graph_bytes`` (torchscope.graph msgpack)."""
    css = _read_static("viewer.css")
    nonce = secrets.token_urlsafe(18)
    csp = (
        "default-src 'none'; "
        f"script-src 'nonce-{nonce}' 'wasm-unsafe-eval'; "
        f"style-src 'nonce-{nonce}'; "
        "worker-src blob:; img-src blob: data:; font-src 'none'; connect-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )
    data = base64.b64encode(graph_bytes).decode("ascii")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp, quote=True)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f'<style nonce="{nonce}">{_inline_style(css)}</style>\n'
        "</head>\n<body>\n"
        '<div id="torchscope"></div>\n'
        f'<script type="application/octet-stream" id="torchscope-graph">{data}</script>\n'
        + _page_scripts(nonce)
        + "</body>\n</html>\n"
    )
