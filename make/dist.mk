# Distribution (issue 14): `make dist` writes into dist/ the Python wheel and sdist, both
# with the built viewer inside (installing them needs no Node), and the VS Code extension
# (.vsix); `make test-dist` installs the wheel into a fresh environment, runs a notebook and
# checks what the .vsix ships (tests/dist). Included by the main Makefile.
.PHONY: dist test-dist

# Read before make/extension.mk and make/webview.mk, which set these too (prerequisites
# are expanded as they are read).
NODE_STAMP ?= node_modules/.torchscope-installed
WEBVIEW_OUT ?= python_helper/torchscope/static/viewer-page.js
CHROMIUM ?= /usr/bin/chromium
VSIX ?= build/torchscope-$(shell node -p "require('./package.json').version").vsix

PY_DIST_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
DIST_WHEEL := dist/torchscope-$(PY_DIST_VERSION)-py3-none-any.whl
DIST_SDIST := dist/torchscope-$(PY_DIST_VERSION).tar.gz
DIST_VSIX := dist/$(notdir $(VSIX))
DIST_PY_SRC := $(shell find python_helper/torchscope -name '*.py' -not -path '*/__pycache__/*')

TEST_DEPS += test-dist

# --no-isolation: the build uses the venv's pinned setuptools (the dev extras) instead of
# making a new environment and fetching setuptools on every build. `python -m build` makes
# the sdist and then the wheel from that sdist, so the wheel proves the sdist is complete.
$(DIST_WHEEL) $(DIST_SDIST) &: pyproject.toml setup.py README.md LICENSE $(DIST_PY_SRC) $(WEBVIEW_OUT) | setup
	set -e; mkdir -p build; tmp=build/.dist.$$$$; rm -rf $$tmp; \
	$(VENV_PY) -m build --no-isolation -o $$tmp . > $$tmp.log 2>&1 || { cat $$tmp.log; exit 1; }; \
	mkdir -p dist; mv $$tmp/torchscope-* dist/; rm -rf $$tmp $$tmp.log

$(DIST_VSIX): $(VSIX)
	mkdir -p dist
	cp $< $@

dist: $(DIST_WHEEL) $(DIST_SDIST) $(DIST_VSIX)
	@$(VENV_PY) scripts/dist_report.py $^

test-dist: dist setup $(NODE_STAMP) $(CHROMIUM)
	CHROMIUM=$(CHROMIUM) $(VENV_PY) -m pytest tests/dist
