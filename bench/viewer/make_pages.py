"""Write the pages the viewer benchmark opens: torchscope's and torchvista's standalone HTML
for the same models, into bench/viewer/pages/ (git-ignored).

    python bench/viewer/make_pages.py [--models gpt2,t5,llama32,synth4000]
                                      [--tools torchscope,torchvista]

Models are built from transformers configs (or by hand) with random weights; nothing is
downloaded. Per model and tool:
  pages/<model>.torchscope.html          torchscope.trace(...) + render_html (the CLI's page)
  pages/<model>.torchvista.html          trace_model(..., export_format="html", export_path=...)
                                         with its defaults (collapse_modules_after_depth=1)
  pages/<model>.torchvista-all.html      the same with collapse_modules_after_depth=99: every
                                         module open. torchvista's page has no expand-all
                                         control; this page is its "expand all" (timed as a
                                         page load).
torchvista inlines d3, viz.js (Graphviz WASM) and jsoneditor from its own package
(torchvista/assets): the pages work offline as written, nothing is patched or served.
Writes pages/manifest.json (node counts, sizes, trace times).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
PAGES = HERE / "pages"
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "webview"))
sys.path.insert(0, str(HERE.parent))

import make_fixtures as fx  # noqa: E402  (gpt2, t5, llama32: the browser tests' models)
from synth4000 import make_synth4000  # noqa: E402  (beside this file)
from tools import quiet  # noqa: E402  (the tracer benchmark's: peers print, drop it)


def synth4000() -> tuple[nn.Module, tuple, dict]:
    model, x = make_synth4000()
    return model, (x,), {}


class T5Positional(nn.Module):
    """torchvista's trace_model takes positional inputs only: T5 with (input_ids,
    decoder_input_ids) as its two positional inputs."""

    def __init__(self, t5: nn.Module) -> None:
        super().__init__()
        self.t5 = t5

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor) -> Any:
        return self.t5(input_ids=input_ids, decoder_input_ids=decoder_input_ids).last_hidden_state


MODELS: dict[str, tuple[str, Callable[[], tuple[nn.Module, tuple, dict]]]] = {
    "gpt2": ("GPT-2 (GPT2Model, 12 layers, 16 tokens)", fx.gpt2),
    "t5": ("T5 (T5Model, small config: d_model 64, 6+6 layers, 12/8 tokens)", fx.t5),
    "llama32": ("Llama, 32 layers (LlamaModel, hidden 64, 16 tokens)", fx.llama32),
    "synth4000": (
        "Synthetic: 40 stages x 25 blocks (Linear, LayerNorm, GELU, add) = 4,000 ops",
        synth4000,
    ),
}


def torchscope_page(name: str, model: nn.Module, args: tuple, kwargs: dict) -> dict[str, Any]:
    import torchscope
    from torchscope.html import render_html

    t0 = time.perf_counter()
    graph = torchscope.trace(model, *args, **kwargs)
    data = graph.to_msgpack()
    page = render_html(data, f"{name} · torchscope")
    path = PAGES / f"{name}.torchscope.html"
    path.write_text(page, encoding="utf-8")
    ops = sum(1 for n in graph.nodes if getattr(n, "kind", None) == "op")
    return {
        "file": path.name,
        "bytes": len(page.encode()),
        "nodes": len(graph.nodes),
        "ops": ops,
        "msgpack_bytes": len(data),
        "make_s": time.perf_counter() - t0,
    }


def _deep(fn: Callable[[], Any]) -> None:
    """torchvista recurses over the graph (RecursionError at Python's default limit of 1,000
    on the 32-layer Llama and the 4,000-op model): run it in a thread with a 512 MB stack and
    a recursion limit of 200,000."""
    err: list[BaseException] = []

    def run() -> None:
        try:
            with quiet(), torch.no_grad():
                fn()
        except BaseException as e:  # noqa: BLE001
            err.append(e)

    old_limit, old_stack = sys.getrecursionlimit(), threading.stack_size()
    sys.setrecursionlimit(200_000)
    threading.stack_size(512 * 2**20)
    try:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        threading.stack_size(old_stack)
        sys.setrecursionlimit(old_limit)
    if err:
        raise err[0]


def torchvista_pages(name: str, model: nn.Module, args: tuple, kwargs: dict) -> dict[str, Any]:
    from torchvista import trace_model

    if kwargs:  # positional only: T5's two id tensors through a thin wrapper
        model = T5Positional(model).eval()
        args = (kwargs["input_ids"], kwargs["decoder_input_ids"])
    inputs: Any = args[0] if len(args) == 1 else args
    out: dict[str, Any] = {}
    for suffix, depth in (("torchvista", 1), ("torchvista-all", 99)):
        path = PAGES / f"{name}.{suffix}.html"
        t0 = time.perf_counter()
        _deep(
            lambda depth=depth, path=path: trace_model(
                model,
                inputs,
                collapse_modules_after_depth=depth,
                export_format="html",
                export_path=str(path),
            )
        )
        out[suffix] = {
            "file": path.name,
            "bytes": path.stat().st_size,
            "make_s": time.perf_counter() - t0,
            "wrapped": bool(kwargs),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--tools", default="torchscope,torchvista")
    a = ap.parse_args(argv)
    PAGES.mkdir(parents=True, exist_ok=True)
    man_path = PAGES / "manifest.json"
    manifest: dict[str, Any] = json.loads(man_path.read_text()) if man_path.exists() else {}
    torch.set_num_threads(1)
    for name in a.models.split(","):
        title, make = MODELS[name]
        entry = manifest.setdefault(name, {})
        entry["title"] = title
        for tool in a.tools.split(","):
            model, args, kwargs = make()
            with torch.no_grad():
                try:
                    if tool == "torchscope":
                        entry["torchscope"] = torchscope_page(name, model, args, kwargs)
                    else:
                        entry.update(torchvista_pages(name, model, args, kwargs))
                except Exception as e:  # noqa: BLE001  a peer that fails is reported, the run goes on
                    entry[tool] = {"error": f"{type(e).__name__}: {e}"[:300]}
            print(
                f"{name} {tool}: "
                + json.dumps({k: v for k, v in entry.items() if k.startswith(tool)}),
                flush=True,
            )
    man_path.write_text(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
