# VS Code extension (extension/): build, package (.vsix), code-server for the end-to-end
# tests and the demo, tests, lint. Included by the main Makefile.
.PHONY: build-extension package code-server test-extension test-extension-unit test-extension-e2e \
        lint-extension demo-vscode demo-stop

# Defined by make/webview.mk too, which is read after this file: prerequisites are
# expanded as they are read, so set them here as well.
NODE_STAMP ?= node_modules/.torchscope-installed
WEBVIEW_OUT ?= python_helper/torchscope/static/viewer-page.js
CHROMIUM ?= /usr/bin/chromium

CODE_SERVER_VERSION := 4.100.3
CODE_SERVER_DIR := .cache/code-server-$(CODE_SERVER_VERSION)
CODE_SERVER := $(CODE_SERVER_DIR)/node_modules/code-server/out/node/entry.js
EXT_SRC := $(wildcard extension/src/*.ts) extension/build.mjs webview/src/messages.ts webview/src/count.ts
EXT_OUT := extension/dist/extension.js
VSIX := build/torchscope-$(shell node -p "require('./package.json').version").vsix
BUNDLED_LIBS := bundled/libs/.installed
HELPER_SRC := $(shell find python_helper/torchscope -name '*.py' -not -path '*/__pycache__/*')
DEMO_DIR := .cache/demo-vscode
DEMO_PORT ?= 8765

TEST_DEPS += test-extension
DEMO_DEPS += demo-vscode
LINT_DEPS += lint-extension

$(EXT_OUT): $(NODE_STAMP) $(EXT_SRC)
	node extension/build.mjs

build-extension: $(EXT_OUT)

# Pure-Python libraries of the language server, bundled with the extension (torch never is).
# They run in the user's Python (3.10+), but pip picks them for the venv's (3.11): what a
# dependency needs only before 3.11 is named here (cattrs's exceptiongroup).
# Each step builds in a private folder and moves it into place, so two `make` runs at
# once (a shared machine) never mix their files.
$(BUNDLED_LIBS): make/extension.mk | setup
	set -e; tmp=build/.libs.$$$$; mkdir -p build; rm -rf $$tmp; \
	$(VENV_PY) -m pip install -q --no-compile --target $$tmp pygls==2.1.1 msgpack==1.2.4 \
	  exceptiongroup==1.3.2; \
	touch $$tmp/.installed; mkdir -p bundled; rm -rf bundled/libs; mv -T $$tmp bundled/libs

# The helper package (tracer, server, runner) with the viewer bundle in static/.
bundled/tool/.copied: $(HELPER_SRC) $(WEBVIEW_OUT)
	set -e; tmp=build/.tool.$$$$; rm -rf $$tmp; mkdir -p $$tmp bundled; \
	cp -r python_helper/torchscope $$tmp/torchscope; \
	find $$tmp -name '__pycache__' -prune -exec rm -rf {} +; \
	touch $$tmp/.copied; rm -rf bundled/tool; mv -T $$tmp bundled/tool

# The Marketplace README is docs/extension.md: its relative links and images are made
# absolute against the repository's docs/ folder, so they work there and on GitHub alike.
REPO_URL = $(shell node -p "require('./package.json').repository.url.replace(/\.git$$/, '')")

$(VSIX): $(EXT_OUT) $(BUNDLED_LIBS) bundled/tool/.copied package.json .vscodeignore docs/extension.md \
         CHANGELOG.md LICENSE extension/media/icon.png
	mkdir -p build
	find bundled -name __pycache__ -prune -exec rm -rf {} +  # .vscodeignore can't exclude them
	set -e; tmp=build/.torchscope.$$$$.vsix; \
	npx vsce package --no-dependencies --no-update-package-json --readme-path docs/extension.md \
	  --baseContentUrl $(REPO_URL)/blob/HEAD/docs --baseImagesUrl $(REPO_URL)/raw/HEAD/docs -o $$tmp; \
	mv $$tmp $@

package: $(VSIX)
	@echo "built $(VSIX)"

# VS Code in the browser, for the end-to-end tests and the demo (see scripts/install-code-server.sh).
$(CODE_SERVER):
	scripts/install-code-server.sh $(CODE_SERVER_VERSION) $(CODE_SERVER_DIR)

code-server: $(CODE_SERVER)

test-extension-unit: $(NODE_STAMP)
	npm run --silent test:extension:unit

test-extension-e2e: package code-server $(CHROMIUM) setup
	CHROMIUM=$(CHROMIUM) TORCHSCOPE_VSIX=$(VSIX) TORCHSCOPE_CODE_SERVER=$(CODE_SERVER) \
	  TORCHSCOPE_PYTHON=$(abspath $(VENV_PY)) npm run --silent test:extension:e2e

test-extension: test-extension-unit test-extension-e2e

lint-extension: $(NODE_STAMP)
	npm run --silent lint:extension

# VS Code (code-server) on 127.0.0.1 with the extension installed, on examples/.
demo-vscode: package code-server setup
	node scripts/demo-vscode.mjs start --code-server $(CODE_SERVER) --vsix $(VSIX) --dir $(DEMO_DIR) \
	  --port $(DEMO_PORT) --python $(abspath $(VENV_PY)) --workspace $(abspath examples)

demo-stop:
	node scripts/demo-vscode.mjs stop --dir $(DEMO_DIR)
