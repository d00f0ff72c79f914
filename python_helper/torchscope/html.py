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


def render_html(graph_bytes: bytes, title: str) -> str:
    """Return one HTML document that shows ``graph_bytes`` (torchscope.graph msgpack)."""
    js = _read_static("viewer.js")
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
        f'<script nonce="{nonce}">{_inline_script(js)}</script>\n'
        "</body>\n</html>\n"
    )
