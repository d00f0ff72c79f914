"""Where torchscope's trace spends its time on the 2,000-block model (cProfile).

    python bench/profile_blocks.py [--model blocks2000] [--top 25]

Prints the plain forward and trace times, then the functions with the most own time
(tottime) and the most cumulative time under the trace. Profiling inflates Python-heavy
code more than torch kernels: read the shares, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from models import build  # noqa: E402

import torchscope  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="blocks2000")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    b = build(a.model)
    model, args, kwargs = b.model, b.args, b.kwargs

    def fwd() -> None:
        with torch.no_grad():
            model(*args, **kwargs)

    fwd()
    torchscope.trace(model, *args, **kwargs)
    plain, traced, internal = [], [], []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        fwd()
        plain.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        g = torchscope.trace(model, *args, **kwargs)
        traced.append((time.perf_counter() - t0) * 1000)
        internal.append(g.trace_ms)
    p, t, i = (statistics.median(x) for x in (plain, traced, internal))
    print(
        f"{a.model}: plain {p:.1f} ms, trace {t:.1f} ms ({t / p:.2f}x); "
        f"of which the forward under the recorder {i:.1f} ms, after it (outputs, folding) "
        f"{t - i:.1f} ms; nodes {len(g.nodes)}, edges {len(g.edges)}"
    )

    prof = cProfile.Profile()
    prof.enable()
    torchscope.trace(model, *args, **kwargs)
    prof.disable()
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(key).print_stats(a.top)
        text = s.getvalue()
        start = text.find("   ncalls")
        print(f"\n--- top {a.top} by {key} ---")
        print(text[start:] if start >= 0 else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
