"""`make demo`: trace the bundled example models and write their graphs to out/.

Each model is traced once, in this process, and written as msgpack, JSON,
standalone HTML (when the viewer bundle is built) and a text summary. The same
files come out of `python -m torchscope trace` one format at a time.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "out"
sys.path.insert(0, str(ROOT / "python_helper"))

# (target, device, should the forward raise?)
EXAMPLES = [
    ("examples/mlp.py:MLP", "cpu", False),
    ("examples/convnet.py:build", "cpu", False),
    ("examples/train_script.py:TinyLM", "cpu", False),  # its training loop must not run
    ("examples/attention.py:build", "cpu", False),
    ("examples/gpt2.py:gpt2", "cpu", False),
    ("examples/broken.py:model", "cpu", True),
    ("examples/llama70b.py:llama70b", "meta", False),
]


def main() -> int:
    from torchscope.build_target import (
        as_call,
        build,
        choose_input,
        input_call_in_file,
        split_target,
    )
    from torchscope.tracer import trace_call

    OUT.mkdir(exist_ok=True)
    viewer = (ROOT / "python_helper/torchscope/static/viewer-page.js").exists()
    suffixes = [".msgpack", ".json"] + ([".html"] if viewer else [])
    failures = 0
    for target, device, raises in EXAMPLES:
        stem = target.split(":")[0].rsplit("/", 1)[-1].removesuffix(".py")
        start = time.perf_counter()
        built = build(str(ROOT / target), device=device)
        path, name = split_target(str(ROOT / target))
        chosen = choose_input(built, device, call_in_file=input_call_in_file(path, name))
        args, kwargs = as_call(chosen.value)
        graph = trace_call(built.model, args, kwargs, raise_errors=False)
        for suffix in suffixes:
            graph.save(OUT / f"{stem}{suffix}")
        (OUT / f"{stem}.summary.txt").write_text(graph.summary() + "\n")
        s = graph.stats()
        status = f"raised {graph.error.type} (as intended)" if graph.error else "ok"
        if (graph.error is not None) != raises:
            failures += 1
            status = f"UNEXPECTED: {graph.error.type if graph.error else 'no error'}"
        print(
            f"{target:34} {device:4}  {s['modules']:5} module calls {s['ops']:5} ops  "
            f"trace {s['trace_ms']:6.0f} ms  total {time.perf_counter() - start:5.1f} s  {status}"
        )
    print()
    print((OUT / "gpt2.summary.txt").read_text())
    print(
        f"wrote {len(list(OUT.iterdir()))} files to {OUT}: "
        + ", ".join(s.lstrip(".") for s in suffixes)
        + ", summary.txt"
    )
    if viewer:
        print(f"open {OUT / 'gpt2.html'} in a browser to explore the graph")
    url = vscode_url()
    if url:
        print(
            f"VS Code with torchscope: {url}  (right-click in a model; stop it with make demo-stop)"
        )
    return 1 if failures else 0


def vscode_url() -> str | None:
    """The demo code-server started by `make demo-vscode`, if it is running."""
    state = ROOT / ".cache" / "demo-vscode"
    try:
        pid = int((state / "pid").read_text().strip())
        os.kill(pid, 0)
        log = (state / "code-server.log").read_text(errors="replace")
    except (OSError, ValueError):
        return None
    match = re.search(r"HTTP server listening on (http://127\.0\.0\.1:\d+)", log)
    if not match:
        return None
    return f"{match.group(1)}/?folder={quote(str(ROOT / 'examples'), safe='')}"


if __name__ == "__main__":
    sys.exit(main())
