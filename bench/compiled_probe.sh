#!/usr/bin/env bash
# What compiling the tracer would bring: the same source, unchanged, built with Cython into a
# copy outside the checkout, against the pure-Python package, with bench/trace_floor.py
# alternated ROUNDS times. A measurement for a design decision, not a build step: torchscope
# ships pure Python (the VS Code extension runs it in the user's own interpreter).
#
#   bench/compiled_probe.sh [ROUNDS] [MODEL]      (needs a C compiler and Python's headers)
set -euo pipefail
rounds=${1:-3}
model=${2:-blocks2000}
here=$(cd "$(dirname "$0")/.." && pwd)
python="$here/.venv/bin/python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" -m venv "$work/cy"
"$work/cy/bin/pip" install -q "cython==3.3.1" "setuptools>=68"
git -C "$here" archive HEAD python_helper/torchscope | tar -x -C "$work"
cat > "$work/python_helper/build.py" <<'EOF'
from Cython.Build import cythonize
from setuptools import setup

# the modules a trace spends its time in
MODULES = ["tracer", "state", "call_path", "sites", "graph"]
setup(
    ext_modules=cythonize(
        [f"torchscope/{m}.py" for m in MODULES], compiler_directives={"language_level": 3}
    ),
    script_args=["build_ext", "--inplace"],
)
EOF
(cd "$work/python_helper" && "$work/cy/bin/python" build.py > "$work/build.log" 2>&1) ||
  { tail -20 "$work/build.log"; exit 1; }

for i in $(seq "$rounds"); do
  echo "## round $i: pure Python"
  "$python" "$here/bench/trace_floor.py" --model "$model" | sed -n '/^| plain/p;/^| trace, structure/p'
  echo "## round $i: compiled"
  PYTHONPATH="$work/python_helper" "$python" "$here/bench/trace_floor.py" --model "$model" |
    sed -n '/^| plain/p;/^| trace, structure/p'
done
