"""`torchscope.show` in a real notebook run: nbclient executes a notebook on a Jupyter kernel
of the fresh environment (torchscope from the wheel), and the output saved in the notebook
opens in Chromium and draws: on its own, and inside a sandboxed frame as a notebook front
end shows it (VS Code's notebook webview, JupyterLab), where it may not navigate the page."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import nbformat
import pytest
from fresh_env import FreshEnv
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from pages import assert_drawn, drawn

CELLS = [
    """\
import torch
from torch import nn
import torchscope

print(torchscope.__file__)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.encoder(x))
""",
    "torchscope.show(Net(), torch.randn(2, 8))",
]

# The sandbox of the frame the output is inserted into. "allow-scripts" alone is the
# strictest a front end that runs outputs can use: an opaque origin, no navigation of the
# page above it, no popups, no downloads. The second is what VS Code 1.100 gives the frames
# of its webviews, the notebook's output webview among them (allow-same-origin there is the
# webview's own origin, never the workbench's).
SANDBOXES = {
    "strict": "allow-scripts",
    "vscode": "allow-scripts allow-same-origin allow-forms allow-pointer-lock allow-downloads",
}

# Chromium warns about any frame with both allow-scripts and allow-same-origin, as VS
# Code's webview frames have.
ESCAPE_WARNING = "allow-scripts and allow-same-origin for its sandbox attribute can escape"


def kernel_manager(fresh: FreshEnv, where: Path) -> KernelManager:
    """A kernel spec that runs ipykernel with the fresh environment's Python."""
    spec = where / "kernels" / "fresh"
    spec.mkdir(parents=True)
    argv = [str(fresh.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "fresh", "language": "python"}), encoding="utf-8"
    )
    specs = KernelSpecManager(kernel_dirs=[str(where / "kernels")])
    return KernelManager(kernel_name="fresh", kernel_spec_manager=specs)


def renderer_host(output_html: str, sandbox: str) -> str:
    """A page holding a sandboxed frame that inserts the output the way notebook front ends
    do (innerHTML into the output's element): the viewer is then two frames deep."""
    as_js = json.dumps(output_html).replace("<", "\\u003c")
    renderer = (
        "<!DOCTYPE html><html><body style='margin:0'><div id='output'></div><script>"
        f"document.getElementById('output').innerHTML = {as_js};"
        "</script></body></html>"
    )
    return (
        "<!DOCTYPE html><html><body style='margin:0'>"
        f'<iframe sandbox="{sandbox}" style="width:1260px;height:780px;border:0" '
        f'srcdoc="{html.escape(renderer, quote=True)}"></iframe></body></html>'
    )


def test_show_in_an_executed_notebook_draws(
    fresh: FreshEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    # The kernel inherits this process's environment: keep the checkout off its path.
    monkeypatch.delenv("PYTHONPATH", raising=False)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    client = NotebookClient(
        nb,
        km=kernel_manager(fresh, tmp_path),
        timeout=300,
        startup_timeout=120,
        resources={"metadata": {"path": str(work)}},
    )
    client.execute()
    saved = tmp_path / "show.ipynb"
    nbformat.write(nb, saved)

    cells = nbformat.read(saved, as_version=4).cells
    printed = "".join(o.text for o in cells[0].outputs if o.get("name") == "stdout")
    assert Path(printed.splitlines()[0]).is_relative_to(fresh.site_packages), printed
    [output] = [o for o in cells[1].outputs if o.output_type == "display_data"]
    assert [o.output_type for o in cells[1].outputs] == ["display_data"], cells[1].outputs
    fragment = output.data["text/html"]
    assert fragment.startswith("<iframe srcdoc=") and fragment.endswith("</iframe>")
    assert 'sandbox="allow-scripts allow-downloads"' in fragment
    # Nothing in the output reaches out of its frame: no script, no same-origin, no
    # navigation of the page above, no popups.
    assert "allow-same-origin" not in fragment and "allow-top-navigation" not in fragment
    assert "allow-popups" not in fragment
    assert "<script" not in fragment.split('srcdoc="', 1)[0]
    srcdoc = re.match(r'<iframe srcdoc="([^"]*)"', fragment).group(1)
    assert "<" not in srcdoc
    # the page travels compressed: a view was 3.6 MB of the saved notebook, now under 1 MB
    assert len(fragment) < 1_000_000, len(fragment)

    pages = [{"name": "notebook-output-page", "path": tmp_path / "output-page.html", "frames": 0}]
    pages[0]["path"].write_text(html.unescape(srcdoc), encoding="utf-8")
    for name, sandbox in SANDBOXES.items():
        host = tmp_path / f"renderer-{name}.html"
        host.write_text(renderer_host(fragment, sandbox), encoding="utf-8")
        pages.append(
            {"name": f"notebook-in-{name}-sandbox", "path": host, "frames": 2, "sandbox": sandbox}
        )
    reports = drawn(pages, tmp_path)
    for page in pages:
        # Chromium's warning about the emulated webview frame, which the test made.
        expected = (ESCAPE_WARNING,) if "allow-same-origin" in page.get("sandbox", "") else ()
        assert_drawn(reports[page["name"]], {"encoder", "head"}, expected)
