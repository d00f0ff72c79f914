"""`make demo`: trace the bundled example models and write their graphs to out/.

Each model is traced once, in this process, and written as msgpack, JSON,
standalone HTML (when the viewer bundle is built) and a text summary. The same
files come out of `python -m torchscope trace` one format at a time.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "out"
sys.path.insert(0, str(ROOT / "python_helper"))

# (target, device, should the forward raise?)
EXAMPLES = [
    ("examples/mlp.py:MLP", "cpu", False),
    ("examples/convnet.py:build", "cpu", False),
    ("examples/gpt2.py:gpt2", "cpu", False),
    ("examples/broken.py:model", "cpu", True),
    ("examples/llama70b.py:llama70b", "meta", False),
]


def main() -> int:
    from torchscope.inputs import example_input
    from torchscope.target import as_call, build
    from torchscope.tracer import trace_call

    OUT.mkdir(exist_ok=True)
    viewer = (ROOT / "python_helper/torchscope/static/viewer.js").exists()
    suffixes = [".msgpack", ".json"] + ([".html"] if viewer else [])
    failures = 0
    for target, device, raises in EXAMPLES:
        stem = target.split(":")[0].rsplit("/", 1)[-1].removesuffix(".py")
        start = time.perf_counter()
        built = build(str(ROOT / target), device=device)
        value = built.example if built.example is not None else example_input(built.model, device)
        args, kwargs = as_call(value)
        graph = trace_call(built.model, args, kwargs, raise_errors=False)
        for suffix in suffixes:
            graph.save(OUT / f"{stem}{suffix}")
        (OUT / f"{stem}.summary.txt").write_text(graph.summary() + "\n")
        s = graph.to_wire()["stats"]
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
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
