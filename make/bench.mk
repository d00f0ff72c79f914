# Benchmarks beyond the tracer's (bench/run.py). Included by the main Makefile.
.PHONY: bench-viewer bench-diff

# Viewer benchmark (bench/viewer/): torchscope's standalone page against torchvista's, same
# Chromium, same run. Writes bench/viewer/results.json; bench/run.py (make bench) and
# bench/viewer/report.py put its "Viewer" section into bench/results.md.
bench-viewer: setup build-webview $(NODE_STAMP) $(CHROMIUM)
	$(VENV_PY) -m pip install -q -e '.[bench]'
	$(VENV_PY) bench/viewer/make_pages.py
	CHROMIUM=$(CHROMIUM) node --import tsx bench/viewer/run.ts
	$(VENV_PY) bench/viewer/report.py bench/results.md

# Diff benchmark (bench/diff.py): `torchscope diff` on two GPT-2 traces and two 70B-on-meta
# traces. Writes bench/diff-results.json and the "Diff" section of bench/results.md.
bench-diff: setup
	$(VENV_PY) bench/diff.py

# `make bench`: the viewer and diff runs first, then bench/run.py, which rewrites
# bench/results.md and appends their sections from bench/viewer/results.json and
# bench/diff-results.json.
bench: bench-viewer bench-diff
