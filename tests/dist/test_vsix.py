"""What the .vsix that `make dist` built ships, as a Marketplace or Open VSX user gets it:
exactly the manifest, README, CHANGELOG, LICENSE, icon, the bundled extension, the Python
helper with the built viewer and the language server's pure-Python libraries; the gallery
metadata; a README whose images and links work off GitHub."""

from __future__ import annotations

import json
import posixpath
import re
import struct
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from pages import ROOT

PACKAGE = ROOT / "python_helper" / "torchscope"
HELPER = "extension/bundled/tool/torchscope/"
LIBS = "extension/bundled/libs/"
# Files vsce writes or renames: docs/extension.md is the README (--readme-path).
OWN_FILES = {
    "extension.vsixmanifest",
    "[Content_Types].xml",
    "extension/package.json",
    "extension/readme.md",
    "extension/changelog.md",
    "extension/LICENSE.txt",
    "extension/extension/media/icon.png",
    "extension/extension/dist/extension.js",
}
# The Marketplace's categories (VS Code's extension manifest reference).
CATEGORIES = {
    "AI", "Azure", "Chat", "Data Science", "Debuggers", "Education", "Extension Packs",
    "Formatters", "Keymaps", "Language Packs", "Linters", "Machine Learning", "Notebooks",
    "Programming Languages", "SCM Providers", "Snippets", "Testing", "Themes",
    "Visualization", "Other",
}  # fmt: skip
# A bound that node_modules, tests or a second viewer copy would break (today ~1.8 MB).
MAX_BYTES = 3_000_000


@pytest.fixture(scope="module")
def shipped(vsix: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(vsix) as z:
        return {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}


def test_vsix_ships_exactly_the_extension(vsix: Path, shipped: dict[str, bytes]) -> None:
    names = set(shipped)
    assert {n for n in names if not n.startswith((HELPER, LIBS))} == OWN_FILES
    for name in names:
        parts = name.split("/")
        assert not name.endswith((".ts", ".map", ".pyc", ".tsbuildinfo", ".vsix")), name
        assert not {"tests", "node_modules", "__pycache__", "src", "webview"} & set(parts), name
        assert not parts[-1].startswith("."), name  # build stamps
    # The helper is the package as in the checkout, with the built viewer beside it.
    helper = {n[len(HELPER) :] for n in names if n.startswith(HELPER)}
    source = {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert helper == source
    assert {"server/__main__.py", "runner.py", "debug.py", "static/page.html"} <= helper
    assert {"static/viewer-page.js", "static/layout.worker.js"} <= helper
    assert "static/viewer.js" not in helper  # (2 MB that nothing reads: no longer built)
    # The language server's libraries; never torch (the user's own is used).
    libs = {n[len(LIBS) :].split("/")[0] for n in names if n.startswith(LIBS)}
    assert {"pygls", "lsprotocol", "msgpack", "cattrs", "attrs"} <= libs
    assert not [lib for lib in libs if lib.startswith(("torch", "numpy", "pip", "setuptools"))]
    size = vsix.stat().st_size
    print(f"{vsix.name}: {size / 1e6:.2f} MB, {len(names)} files")
    assert size < MAX_BYTES


def test_vsce_ls_lists_what_ships(shipped: dict[str, bytes]) -> None:
    """`npx vsce ls` (what the docs tell to run) names the files the .vsix holds."""
    run = subprocess.run(
        ["npx", "vsce", "ls", "--no-dependencies", "--readme-path", "docs/extension.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    renamed = {
        "docs/extension.md": "extension/readme.md",
        "CHANGELOG.md": "extension/changelog.md",
        "LICENSE": "extension/LICENSE.txt",
    }
    listed = {renamed.get(f, f"extension/{f}") for f in run.stdout.split()}
    assert listed == set(shipped) - {"extension.vsixmanifest", "[Content_Types].xml"}


def test_gallery_metadata(shipped: dict[str, bytes]) -> None:
    manifest = json.loads(shipped["extension/package.json"])
    assert manifest["publisher"] == "torchscope" and manifest["license"] == "MIT"
    assert manifest["repository"]["url"].startswith("https://")
    assert manifest["bugs"]["url"].startswith("https://")
    assert manifest["homepage"].startswith("https://")
    assert set(manifest["categories"]) <= CATEGORIES
    assert 0 < len(manifest["keywords"]) <= 30  # vsce's limit
    # tracing runs the workspace's code: off in VS Code's Restricted Mode, and said why
    # (shown there and on the Marketplace); nothing to run on a virtual file system
    for capability in ("untrustedWorkspaces", "virtualWorkspaces"):
        declared = manifest["capabilities"][capability]
        assert declared["supported"] is False and "code" in declared["description"], capability
    assert manifest["galleryBanner"]["theme"] in ("dark", "light")
    assert re.fullmatch(r"#[0-9a-fA-F]{6}", manifest["galleryBanner"]["color"])
    icon = shipped[f"extension/{manifest['icon']}"]
    assert icon[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", icon[16:24]) == (128, 128)

    vsx = ET.fromstring(shipped["extension.vsixmanifest"])
    ns = {"v": "http://schemas.microsoft.com/developer/vsx-schema/2011"}
    assets = {a.get("Type"): a.get("Path") for a in vsx.iterfind(".//v:Asset", ns)}
    assert assets["Microsoft.VisualStudio.Services.Content.License"] == "extension/LICENSE.txt"
    assert assets["Microsoft.VisualStudio.Services.Content.Changelog"] == "extension/changelog.md"
    assert (
        assets["Microsoft.VisualStudio.Services.Icons.Default"] == f"extension/{manifest['icon']}"
    )
    assert b"MIT License" in shipped["extension/LICENSE.txt"]
    assert f"## {manifest['version']}".encode() in shipped["extension/changelog.md"]


def _slug(heading: str) -> str:
    """The anchor GitHub and the Marketplace give a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_images_and_links_work_on_the_marketplace(shipped: dict[str, bytes]) -> None:
    """The Marketplace shows the README away from the repository: every image and link must
    be absolute, point at a file that exists in the repository, and never be an SVG."""
    readme = shipped["extension/readme.md"].decode()
    repo = json.loads(shipped["extension/package.json"])["repository"]["url"].removesuffix(".git")
    anchors = {_slug(h) for h in re.findall(r"^#+ (.+)$", readme, flags=re.M)}
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", readme)
    links = re.findall(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)", readme)
    assert len(images) >= 1
    for url in images:
        assert url.startswith(f"{repo}/raw/HEAD/docs/") and not url.endswith(".svg"), url
        assert (ROOT / "docs" / url.removeprefix(f"{repo}/raw/HEAD/docs/")).is_file(), url
    for url in links:
        if url.startswith("#"):
            assert url[1:] in anchors, url
            continue
        assert url.startswith("https://"), url
        if url.startswith(f"{repo}/blob/HEAD/"):
            path = posixpath.normpath(url.removeprefix(f"{repo}/blob/HEAD/").split("#")[0])
            assert (ROOT / path).is_file(), url
