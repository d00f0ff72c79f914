"""One self-contained HTML page showing a graph: viewer bundle, CSS, WASM and data inlined.

The page works offline from disk (file://) and in a notebook iframe. It carries a strict
Content-Security-Policy: scripts and styles only with a per-page nonce, no network, and
``'wasm-unsafe-eval'`` for Graphviz (WASM) in a Blob-URL worker.

The page's structure is the viewer's template ``static/page.html`` (from
``webview/src/page.html``), which the VS Code extension's HTML export fills the same way
(``extension/src/export.ts``): the layout worker in an inert element, started before the
main bundle is parsed, so that its WASM compile and the page's start-up run side by side.
"""

from __future__ import annotations

import base64
import html
import re
import secrets
from importlib import resources
from typing import Optional

__all__ = ["BundleNotBuiltError", "fill_page", "render_html"]


class BundleNotBuiltError(RuntimeError):
    """The viewer bundle is missing from ``torchscope/static``."""


def _read_static(name: str) -> str:
    path = (
        resources.files("torchscope").joinpath("static").joinpath(name)
    )  # (one part a call before 3.11)
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


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def fill_page(template: str, values: dict[str, str]) -> str:
    """The template with each ``{{name}}`` replaced by ``values[name]``, in one pass (so a
    value that contains ``{{…}}``, as a bundle may, is left as it is)."""
    missing = sorted(set(_PLACEHOLDER.findall(template)) - values.keys())
    if missing:
        raise ValueError(f"no value for {', '.join(missing)} in the page template")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def render_html(graph_bytes: bytes, title: str, nonce: Optional[str] = None) -> str:
    """Return one HTML document that shows ``graph_bytes`` (torchscope.graph msgpack);
    `nonce`: its scripts' and styles' (a new one by default)."""
    template = _read_static("page.html")
    css = _read_static("viewer.css")
    worker = _read_static("layout.worker.js")
    viewer = _read_static("viewer-page.js")
    return fill_page(
        template,
        {
            "nonce": nonce or secrets.token_urlsafe(18),
            "title": html.escape(title),
            "style": _inline_style(css),
            "view": "",
            "graph": base64.b64encode(graph_bytes).decode("ascii"),
            "worker": _inline_script(worker),
            "viewer": _inline_script(viewer),
        },
    )
