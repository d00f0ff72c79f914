"""What is sent to a debuggee that can't read the extension's files (`debug.shipped_files`):
every module a paused trace imports, and none of the command line's, the runner's or the
comparison's (they made the one evaluate four times as large)."""

from __future__ import annotations

import ast
from pathlib import Path

from torchscope import debug

PACKAGE = Path(debug.__file__).parent

# imported only off a paused trace's path: graph.py's `save` as HTML or a summary, the
# notebook's `show`
LAZY_ELSEWHERE = {
    ("graph.py", "html.py"),
    ("graph.py", "summary.py"),
    ("__init__.py", "notebook.py"),  # (torchscope.show, imported when first named)
}


def _package_imports(path: Path) -> set[str]:
    """The package's own modules `path` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0] + ".py")
            else:  # from . import a, b
                found.update(alias.name + ".py" for alias in node.names)
    return {name for name in found if (PACKAGE / name).is_file()}


def test_no_sent_module_imports_one_that_is_not_sent():
    shipped = set(debug.shipped_files())
    missing = {
        (name, imported)
        for name in shipped
        for imported in _package_imports(PACKAGE / name)
        if imported not in shipped and (name, imported) not in LAZY_ELSEWHERE
    }
    assert not missing, f"sent modules import modules that are not sent: {sorted(missing)}"


def test_the_paused_entry_and_what_it_imports_by_name_are_sent():
    shipped = set(debug.shipped_files())
    assert {"debug.py", "paused.py", "tracefile.py", "__init__.py", "tracer.py"} <= shipped


def test_the_command_lines_and_the_runners_modules_are_not_sent():
    shipped = set(debug.shipped_files())
    for name in ("cli.py", "cli_trace.py", "diff.py", "compare.py", "runner.py", "stuck.py"):
        assert name not in shipped
