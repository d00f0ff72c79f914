# Viewer (webview/): build, test, lint. Included by the main Makefile.
.PHONY: build-webview test-webview test-webview-unit test-webview-browser lint-webview webview-fixtures

NODE_STAMP := node_modules/.torchscope-installed
WEBVIEW_SRC := $(wildcard webview/src/*) webview/build.mjs
WEBVIEW_OUT := python_helper/torchscope/static/viewer-page.js
FIXTURES := tests/artifacts/fixtures
CHROMIUM ?= /usr/bin/chromium

DEMO_DEPS += build-webview
TEST_DEPS += test-webview
LINT_DEPS += lint-webview

# npm ci only when node_modules is missing or older than the lock file.
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

$(WEBVIEW_OUT): $(NODE_STAMP) $(WEBVIEW_SRC)
	node webview/build.mjs

build-webview: $(WEBVIEW_OUT)

# The Python tests of render_html use the real bundle too.
test-python: build-webview

$(CHROMIUM):
	apt-get update && apt-get install -y chromium

webview-fixtures: setup build-webview
	$(VENV_PY) tests/webview/make_fixtures.py $(FIXTURES)

test-webview-unit: $(NODE_STAMP)
	npm run --silent test:webview:unit

test-webview-browser: webview-fixtures $(CHROMIUM)
	CHROMIUM=$(CHROMIUM) TORCHSCOPE_FIXTURES=$(FIXTURES) npm run --silent test:webview:browser

test-webview: test-webview-unit test-webview-browser

lint-webview: $(NODE_STAMP)
	npm run --silent lint:webview
