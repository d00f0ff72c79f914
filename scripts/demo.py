"""`make demo`: trace the bundled example models and write their graphs to out/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "out"

# (target, extra CLI arguments)
EXAMPLES = [
    ("examples/mlp.py:MLP", []),
    ("examples/convnet.py:build", []),
    ("examples/gpt2.py:gpt2", []),
    ("examples/broken.py:model", []),
    ("examples/llama70b.py:llama70b", ["--device", "meta"]),
]


def have_viewer() -> bool:
    return (ROOT / "python_helper/torchscope/static/viewer.js").exists()


def run(args: list[str]) -> int:
    cmd = [sys.executable, "-m", "torchscope", *args]
    print("$", " ".join(cmd[1:]), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def main() -> int:
    OUT.mkdir(exist_ok=True)
    failures = 0
    formats = ["msgpack", "json"] + (["html"] if have_viewer() else [])
    for target, extra in EXAMPLES:
        stem = target.split(":")[0].split("/")[-1].removesuffix(".py")
        expect = 1 if "broken" in target else 0  # the broken example raises on purpose
        for fmt in formats:
            rc = run(["trace", target, *extra, "--format", fmt, "-o", str(OUT / f"{stem}.{fmt}")])
            failures += rc != expect
        with open(OUT / f"{stem}.summary.txt", "w") as fh:
            cmd = [sys.executable, "-m", "torchscope", "summary", target, *extra]
            rc = subprocess.run(cmd, cwd=ROOT, stdout=fh).returncode
            failures += rc != expect
    print()
    print((OUT / "gpt2.summary.txt").read_text())
    print(f"wrote {len(list(OUT.iterdir()))} files to {OUT}")
    if have_viewer():
        print(f"open {OUT / 'gpt2.html'} in a browser to explore the graph")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
