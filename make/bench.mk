# Benchmarks beyond the tracer's (bench/run.py). Included by the main Makefile.
.PHONY: bench-viewer

# Viewer benchmark (bench/viewer/): torchscope's standalone page against torchvista's, same
# Chromium, same run. Writes bench/viewer/results.json; bench/run.py (make bench) and
# bench/viewer/report.py put its "Viewer" section into bench/results.md.
bench-viewer: setup build-webview $(NODE_STAMP) $(CHROMIUM)
	$(VENV_PY) -m pip install -q -e '.[bench]'
	$(VENV_PY) bench/viewer/make_pages.py
	CHROMIUM=$(CHROMIUM) node --import tsx bench/viewer/run.ts
	$(VENV_PY) bench/viewer/report.py bench/results.md

# `make bench`: the viewer run first, then bench/run.py, which rewrites bench/results.md and
# appends the viewer section from bench/viewer/results.json.
bench: bench-viewer
