"""The paused-debugger entry (torchscope/debug.py) through the real debugpy adapter.

A minimal DAP client (dap_client.py) launches the debuggees in tests/python/debuggees/,
stops at their `# BREAK:` lines and calls the entry with DAP `evaluate` exactly as the
extension does (docs/debugging.md). One session per debuggee, shared by the tests of a
section, which run in file order; each debuggee also runs once without a debugger so its
output can be compared.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dap_client import DEBUG_PY, DapSession, marker_lines, request_expression  # noqa: E402

from torchscope import debug  # noqa: E402
from torchscope.graph import Graph  # noqa: E402

pytest.importorskip("debugpy")

HERE = Path(__file__).resolve().parent
NESTED = str(HERE / "debuggees" / "nested.py")
TRAINER = str(HERE / "debuggees" / "trainer.py")
PYTHON = sys.executable


class Paused:
    """One debug session of a debuggee, and its plain run for comparison."""

    def __init__(self, session: DapSession, plain: subprocess.Popen, out: Path) -> None:
        self.s = session
        self.plain = plain
        self.out = out
        self.thread = 0
        self.frame_id = 0
        self.frames: list[dict[str, Any]] = []
        self.since = 0

    def stop(self, timeout: float = 90) -> dict[str, Any]:
        """Wait for the next stop; returns the top frame."""
        i, self.thread, self.frames = self.s.wait_stopped(self.since, timeout)
        self.since = i + 1
        self.frame_id = self.frames[0]["id"]
        return self.frames[0]

    def call(self, op: str, timeout: float = 120, **args: Any) -> dict[str, Any]:
        text = self.s.evaluate(
            request_expression({"op": op, **args}), self.frame_id, timeout=timeout
        )
        return json.loads(text)

    def cancelled(self, after: float, timeout: float = 120, **args: Any) -> dict[str, Any]:
        """A trace whose cancel file is written `after` seconds into its evaluate (no DAP
        cancel exists: the extension writes the file while the evaluate runs); its reply."""
        cancel = self.out / f"cancel-{args['expr']}"
        request = {"op": "trace", **args, "cancelFile": str(cancel)}
        seq = self.s.send(
            "evaluate",
            {
                "expression": request_expression(request),
                "frameId": self.frame_id,
                "context": "clipboard",
                "format": {"rawString": True},
            },
        )
        time.sleep(after)
        cancel.write_text("")
        return json.loads(self.s.response(seq, timeout=timeout)["result"])

    def cont(self) -> None:
        self.since = max(self.since, self.s.cont(self.thread))

    def plain_output(self) -> str:
        out, err = self.plain.communicate(timeout=120)
        assert self.plain.returncode == 0, err
        return out


def _start(program: str, breakpoints: list[dict[str, Any]], tmp: Path) -> Paused:
    plain = subprocess.Popen(
        [PYTHON, program],
        cwd=os.path.dirname(program),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    session = DapSession(PYTHON, log_dir=str(tmp))
    try:
        session.launch(program, {program: breakpoints})
    except BaseException:
        session.close()
        plain.kill()
        raise
    return Paused(session, plain, tmp)


def _end(p: Paused) -> None:
    p.s.close()
    if p.plain.poll() is None:
        p.plain.kill()
    p.plain.communicate()


def _graph(path: str) -> Graph:
    return Graph.from_wire(msgpack.unpackb(Path(path).read_bytes(), raw=False))


def _input_shapes(g: Graph) -> list[Any]:
    inputs = {n.id for n in g.nodes if n.kind == "input"}
    seen: set[int] = set()
    shapes = []
    for e in g.edges:
        if e.src in inputs and e.src not in seen:
            seen.add(e.src)
            shapes.append(e.shape)
    return shapes


PROGRAM = """
import importlib.machinery, json, sys

class NoSitePackages:  # neither torchscope nor msgpack from the environment
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] not in ("torchscope", "msgpack"):
            return None
        search = [p for p in (path or sys.path)
                  if "site-packages" not in p and "python_helper" not in p]
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            raise ModuleNotFoundError(name)
        return spec

sys.meta_path.insert(0, NoSitePackages)
import torch
from torch import nn

def main():
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU())
    x = torch.randn(2, 3)
    before = list(sys.path)
    entry = eval(sys.argv[1])
    request = {"op": "trace", "expr": "model", "out": sys.argv[2]}
    reply = json.loads(entry.handle(json.dumps(request)))
    print(json.dumps({
        "reply": reply,
        "msgpack": sys.modules["msgpack"].__file__,
        "torchscope": "torchscope" in sys.modules,
        "path": sys.path == before,
    }))

main()
"""


def test_loads_by_path_without_torchscope_or_msgpack_installed(tmp_path):
    """The extension's layout (bundled/tool/torchscope, bundled/libs/msgpack) in a program
    that can import neither: the loader expression still works and msgpack comes from libs."""
    tool = tmp_path / "bundled" / "tool" / "torchscope"
    shutil.copytree(
        Path(DEBUG_PY).parent,
        tool,
        ignore=shutil.ignore_patterns("__pycache__", "static", "server"),
    )
    shutil.copytree(
        Path(msgpack.__file__).parent,
        tmp_path / "bundled" / "libs" / "msgpack",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    out = tmp_path / "g.msgpack"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    loader = debug.loader_expression(str(tool / "debug.py"))
    run = subprocess.run(
        [PYTHON, str(program), loader, str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["reply"]["ok"], result
    assert result["reply"]["summary"]["input"] == "from the frame: x (tensor [2, 3] float32)"
    assert result["msgpack"].startswith(str(tmp_path / "bundled" / "libs"))
    assert result["torchscope"] is False and result["path"] is True
    assert _input_shapes(_graph(str(out))) == [[2, 3]]


def test_a_module_called_from_a_plain_function_is_named_from_its_root():
    """Paused in a helper function that a block's forward calls: the block has no name in
    the frame, so its expression is a path from a root the frame can name."""
    import torch
    from torch import nn

    seen: dict[str, str] = {}

    def helper(h):
        if not seen:
            seen["candidates"] = debug.handle(json.dumps({"op": "candidates"}))
        return h * 2

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return helper(self.lin(x))

    model = nn.Sequential(nn.Linear(2, 3), Block())
    globals()["_debug_test_model"] = model
    try:
        model(torch.randn(5, 2))
    finally:
        del globals()["_debug_test_model"]
    cands = json.loads(seen["candidates"])["modules"]
    assert cands[0]["expr"] == "_debug_test_model.get_submodule('1')"
    assert cands[0]["input"] == "paused call (tensor [5, 3] float32)"
    assert cands[1]["expr"] == "_debug_test_model"


def test_next_call_that_fails_leaves_an_error_file(tmp_path):
    """A hook's trace that stops (time budget) writes `<out>.error.json`: an extension
    watching for the graph file while the program runs learns of it."""
    import torch
    from torch import nn

    class Loop(nn.Module):
        def forward(self, x):
            for _ in range(100):
                x = x + 1
            return x

    model = Loop()
    out = tmp_path / "next.msgpack"
    request = {"op": "trace_next_call", "expr": "model", "out": str(out), "timeBudget": 1e-9}
    armed = json.loads(debug.handle(json.dumps(request)))
    assert armed["ok"] and armed["armed"], armed
    y = model(torch.zeros(2))  # the program's own call still runs, and runs once
    assert torch.equal(y, torch.full((2,), 100.0))
    assert not out.exists()
    error = json.loads((tmp_path / "next.msgpack.error.json").read_text())
    assert (error["ok"], error["kind"]) == (False, "timeout")
    polled = json.loads(debug.handle(json.dumps({"op": "poll", "out": str(out)})))
    assert polled["done"] and polled["kind"] == "timeout"
    assert not model._forward_pre_hooks


def test_warm_never_imports_torch_into_a_program_without_it():
    """`warm` imports the tracer only where torch already is: in a program that never
    imported torch it is a `no-torch` reply and torch stays out of sys.modules."""
    code = (
        "import json, sys\n"
        f"entry = eval({debug.loader_expression()!r})\n"
        "reply = json.loads(entry.handle(json.dumps({'op': 'warm'})))\n"
        "print(json.dumps([reply['ok'], reply['kind'], 'torch' in sys.modules]))\n"
    )
    run = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == [False, "no-torch", False]


def test_a_debugged_python_too_old_is_told_so():
    """A program debugged with Python 3.9 (older than torchscope supports): the entry loads
    and answers that the tracer needs 3.10, not with a traceback from deep in the package."""
    old = sorted(glob.glob("/root/.pyenv/versions/3.9.*/bin/python3.9"))
    assert old, "no Python 3.9 on this machine (expected under /root/.pyenv/versions)"
    code = (
        "import json\n"
        f"entry = eval({debug.loader_expression()!r})\n"
        "print(entry.handle(json.dumps({'op': 'candidates'})))\n"
    )
    run = subprocess.run([old[-1], "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    reply = json.loads(run.stdout.strip().splitlines()[-1])
    assert reply["ok"] is False and reply["kind"] == "import-error"
    assert reply["error"].startswith("torchscope needs Python 3.10 or newer; this program runs")


def test_trace_spares_the_editor_a_core_and_restores_torch_threads(tmp_path):
    """During a paused-frame trace torch runs one thread fewer than there are cores (the
    editor is opening the panel meanwhile); the program's own setting is back afterwards."""
    import torch
    from torch import nn

    seen: list[int] = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(torch.get_num_threads())
            return x + 1

    before = torch.get_num_threads()
    torch.set_num_threads(4)
    try:
        model, x = Probe(), torch.zeros(2)
        out = tmp_path / "probe.msgpack"
        request = {"op": "trace", "expr": "model", "out": str(out), "input": "x"}
        reply = json.loads(debug.handle(json.dumps(request), frame=sys._getframe()))
        assert reply["ok"], reply
        assert model(x).tolist() == [1.0, 1.0]
        cores = len(os.sched_getaffinity(0))
        assert seen == [max(1, min(4, cores - 1)), 4]
        assert torch.get_num_threads() == 4
    finally:
        torch.set_num_threads(before)


def test_documented_expression_matches_the_entry():
    """The expression the tests (and the extension) send is the one debug.py documents."""
    req = {"op": "candidates"}
    assert request_expression(req) == debug.request_expression(req, DEBUG_PY)


# -- nested: paused inside a block's forward ---------------------------------------------


@pytest.fixture(scope="module")
def nested(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dap-nested")
    block, after = marker_lines(NESTED, "block")[0], marker_lines(NESTED, "after")[0]
    p = _start(NESTED, [{"line": block}, {"line": after}], tmp)
    p.lines = {"block": block, "after": after}  # type: ignore[attr-defined]
    try:
        p.stop()  # paused in Block.forward: the tests up to trace_next_call start there, alone too
        yield p
    finally:
        _end(p)


def test_paused_in_nested_forward_traces_that_module_with_original_inputs(nested):
    top = nested.frames[0]
    assert (top["name"], top["line"]) == ("forward", nested.lines["block"])
    # the local x was rebound: (4, 16); the call's input was (4, 8)
    assert nested.s.evaluate("str(tuple(x.shape))", nested.frame_id) == "(4, 16)"

    cands = nested.call("candidates")
    assert cands["ok"], cands
    first = cands["modules"][0]
    assert (first["expr"], first["cls"], first["inputs"]) == ("self", "Block", True)
    assert first["reason"] == "paused in its forward"
    exprs = [m["expr"] for m in cands["modules"]]
    assert "model" in exprs and "broken" in exprs
    root = cands["modules"][exprs.index("model")]
    assert root["inputs"] is True and root["params"] > first["params"]

    # the extension warms the tracer's imports while the user picks from the list
    tracer_loaded = (
        "any(k.split('.')[-1] == 'tracer' and 'torchscope' in k for k in __import__('sys').modules)"
    )
    assert nested.s.evaluate(tracer_loaded, nested.frame_id) == "False"
    warm = nested.call("warm")
    assert warm["ok"] and warm["elapsed_ms"] >= 0, warm
    assert nested.s.evaluate(tracer_loaded, nested.frame_id) == "True"
    # with the listed model: its read-ahead, through the adapter. Block's weights are all
    # torch.nn layers' own (nothing to read); a ParameterList's are used directly.
    ahead = nested.call("warm", expr="self")
    assert ahead["ok"] and ahead["readAhead"] == 0, ahead
    direct = "__import__('torch').nn.ParameterList([__import__('torch').nn.Parameter(__import__('torch').ones(5))])"
    ahead = nested.call("warm", expr=direct)
    assert ahead["ok"] and ahead["readAhead"] == 5, ahead

    out = nested.out / "block.msgpack"
    reply = nested.call("trace", expr="self", out=str(out))
    assert reply["ok"], reply
    assert reply["path"] == str(out) and reply["size"] == out.stat().st_size
    summary = reply["summary"]
    assert summary["model"] == "Block" and summary["error"] is None
    assert summary["input"].startswith("paused call (tensor [4, 8]")
    g = _graph(reply["path"])
    assert g.model.name == "Block"
    assert _input_shapes(g) == [[4, 8]]
    assert {n.path for n in g.nodes if n.kind == "module"} >= {"", "proj", "norm", "drop", "out"}
    # the paused frame is untouched
    assert nested.s.evaluate("str(tuple(x.shape))", nested.frame_id) == "(4, 16)"


def test_breakpoint_in_forward_is_not_hit_during_the_trace(nested):
    before = len(nested.s.events)
    out = nested.out / "model.msgpack"
    reply = nested.call("trace", expr="model", out=str(out))
    assert reply["ok"], reply
    assert "stopped" not in nested.s.event_names(before)
    g = _graph(reply["path"])
    assert _input_shapes(g) == [[4, 4]]  # Net's own call, found up the stack
    assert g.module_call("block").name == "Block"
    # the forward printed; the program's output did not get it
    assert "block forward (4, 8)" in reply.get("output", "")
    frames = nested.s.request("stackTrace", {"threadId": nested.thread, "levels": 1})["stackFrames"]
    assert frames[0]["line"] == nested.lines["block"]


def test_a_caller_frame_selected_and_nothing_imported_by_name(nested):
    """Selecting Net.forward's frame in the call stack: its module comes first. The entry
    imported its package under private names, not as `torchscope`."""
    outer = nested.frames[1]
    assert outer["name"] == "forward"
    text = nested.s.evaluate(request_expression({"op": "candidates"}), outer["id"], context="repl")
    cands = json.loads(text)
    assert cands["modules"][0]["cls"] == "Net" and cands["modules"][0]["expr"] == "self"
    names = json.loads(
        nested.s.evaluate(
            "__import__('json').dumps(sorted(k for k in __import__('sys').modules"
            " if 'torchscope' in k and not k.startswith('_torchscope_debug_pkg.')))",
            nested.frame_id,
        )
    )
    assert names == ["_torchscope_debug", "_torchscope_debug_pkg"]


def test_model_that_raises_gives_the_partial_graph(nested):
    # no input given: the global x1 fits its first layer (Linear(4, 3))
    reply = nested.call("trace", expr="broken", out=str(nested.out / "broken.msgpack"))
    assert reply["ok"], reply
    assert reply["summary"]["input"] == "from the frame: x1 (tensor [4, 4] float32)"
    err = reply["summary"]["error"]
    assert err["type"] == "RuntimeError"
    assert err["file"] == NESTED
    assert "h @ torch.ones" in Path(NESTED).read_text().splitlines()[err["line"] - 1]
    g = _graph(reply["path"])
    assert g.error is not None and g.nodes[g.error.node].kind == "error"
    assert _input_shapes(g) == [[4, 4]]

    reply = nested.call(
        "trace", expr="broken", input="torch.randn(2, 4)", out=str(nested.out / "broken2.msgpack")
    )
    assert reply["ok"] and reply["summary"]["error"]["type"] == "RuntimeError", reply
    assert _input_shapes(_graph(reply["path"])) == [[2, 4]]


def test_errors_are_replies(nested):
    missing = nested.call("trace", expr="no_such_name", out=str(nested.out / "x.msgpack"))
    assert (missing["ok"], missing["kind"]) == (False, "target-error")
    assert "NameError" in missing["error"]
    not_module = nested.call("trace", expr="torch", out=str(nested.out / "x.msgpack"))
    assert (not_module["ok"], not_module["kind"]) == (False, "target-error")
    no_input = nested.call("trace", expr="model.head", out=str(nested.out / "x.msgpack"))
    assert (no_input["ok"], no_input["kind"]) == (False, "needs-input")
    assert "trace the next call" in no_input["error"]
    bad_input = nested.call("trace", expr="self", input="1/0", out=str(nested.out / "x.msgpack"))
    assert (bad_input["ok"], bad_input["kind"]) == (False, "needs-input")
    bad_op = json.loads(
        nested.s.evaluate(request_expression({"op": "nope"}), nested.frame_id, context="repl")
    )
    assert bad_op["ok"] is False
    assert not (nested.out / "x.msgpack").exists()


def test_a_trace_is_no_slow_evaluation_to_warn_of(nested):
    """A trace is one evaluation of debugpy's, as long as its time limit: debugpy warned of
    any over 3 s with a notification showing torchscope's internal expression. The program's
    threshold is raised to the time limit by the first request (read as each evaluation
    begins: the trace after it is not warned of)."""
    read = (
        "__import__('_pydevd_bundle.pydevd_constants', fromlist=['_'])"
        ".PYDEVD_WARN_EVALUATION_TIMEOUT"
    )
    assert nested.call("candidates")["ok"]  # (no limit given: the extension's default, 60 s)
    assert float(nested.s.evaluate(read, nested.frame_id)) >= 60
    assert nested.call("candidates", timeBudget=500)["ok"]
    assert float(nested.s.evaluate(read, nested.frame_id)) >= 500


def test_trace_next_call(nested):
    out = nested.out / "next.msgpack"
    armed = nested.call("trace_next_call", expr="model", out=str(out))
    assert armed == {"ok": True, "armed": True, "path": str(out), "model": "Net"}
    assert nested.call("poll", out=str(out)) == {"ok": True, "done": False, "armed": True}
    # a trace of ours calls the model too: that is not the program's next call
    again = nested.call("trace", expr="model", out=str(nested.out / "again.msgpack"))
    assert again["ok"], again
    assert nested.call("poll", out=str(out)) == {"ok": True, "done": False, "armed": True}

    nested.cont()
    # the next stop is the REAL second call in Block.forward: the hook's trace, which ran
    # first, hit no breakpoint, and its file is already there
    top = nested.stop()
    assert top["line"] == nested.lines["block"]
    assert out.exists()
    # the reply beside the graph, for an extension that sees the file while the program runs
    # (the graph's panel had no input line: only a poll at a later pause gave the summary)
    beside = json.loads((nested.out / "next.msgpack.reply.json").read_text())
    assert beside["path"] == str(out) and not (nested.out / "next.msgpack.part").exists()
    assert beside["summary"]["input"] == "next call (tensor [4, 4] float32, log=list)"
    assert beside["modelId"] == again["modelId"]  # the model traced before: one live model
    result = nested.call("poll", out=str(out))
    assert result["ok"] and result["done"], result
    assert result["summary"]["input"] == "next call (tensor [4, 4] float32, log=list)"
    g = _graph(str(out))
    assert g.model.name == "Net" and _input_shapes(g) == [[4, 4]]
    assert nested.call("disarm", out=str(out)) == {"ok": True, "disarmed": False}

    nested.cont()
    top = nested.stop()
    assert top["line"] == nested.lines["after"]  # one stop per real call, none from the trace


def test_program_output_is_as_without_a_debugger(nested):
    nested.cont()
    nested.s.wait_end(nested.since, timeout=60)
    assert nested.s.output("stdout") == nested.plain_output()


# -- trainer: paused in a training loop; a graph over 20 MB ------------------------------


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dap-trainer")
    step = marker_lines(TRAINER, "step")[0]
    p = _start(TRAINER, [{"line": step, "condition": "step == 0"}], tmp)
    try:
        p.stop()  # paused at the first step: each test of this fixture starts there, alone too
        yield p
    finally:
        _end(p)


def test_training_loop_finds_the_model_through_self(trainer):
    top = trainer.frames[0]
    assert top["name"] == "fit"
    cands = trainer.call("candidates")
    assert cands["ok"], cands
    first = cands["modules"][0]
    assert (first["expr"], first["cls"], first["reason"]) == (
        "self.model",
        "MLP",
        "called on this line",  # (also an attribute of self: the line says more)
    )
    # paused on `out = self.model(inputs)`: the call's own argument, read in the frame
    line = marker_lines(TRAINER, "step")[0]
    said = f"from line {line}: self.model(inputs) (tensor [8, 64] float32)"
    assert first["inputs"] and first["input"] == said, first
    assert [m["expr"] for m in cands["modules"]][:2] == ["self.model", "deep"]

    reply = trainer.call("trace", expr="self.model", out=str(trainer.out / "mlp.msgpack"))
    assert reply["ok"], reply
    assert reply["summary"]["input"] == said
    assert _input_shapes(_graph(reply["path"])) == [[8, 64]]


def test_variables_view_evaluate_name_is_a_trace_expression(trainer):
    """Right-click in the Variables view: the extension traces the variable's evaluateName."""
    s = trainer.s
    scopes = s.request("scopes", {"frameId": trainer.frame_id})["scopes"]
    local = next(sc for sc in scopes if sc["name"].lower().startswith("locals"))
    variables = s.request("variables", {"variablesReference": local["variablesReference"]})
    self_var = next(v for v in variables["variables"] if v["name"] == "self")
    attrs = s.request("variables", {"variablesReference": self_var["variablesReference"]})
    model_var = next(v for v in attrs["variables"] if v["name"] == "model")
    assert model_var["evaluateName"] == "self.model"
    reply = trainer.call(
        "trace", expr=model_var["evaluateName"], out=str(trainer.out / "v.msgpack")
    )
    assert reply["ok"] and reply["summary"]["model"] == "MLP", reply


def test_graph_over_20_mb_arrives_through_the_file(trainer):
    out = trainer.out / "deep.msgpack"
    reply = trainer.call("trace", expr="deep", input="torch.randn(2, 4)", out=str(out), timeout=240)
    assert reply["ok"], reply
    assert reply["size"] > 20_000_000 and len(json.dumps(reply)) < 2000
    g = _graph(reply["path"])
    assert sum(1 for n in g.nodes if n.kind == "module") == 3000 * 2 + 1
    # the session is alive and the entry kept nothing
    alive = trainer.s.evaluate(
        "len([o for o in __import__('gc').get_objects() if type(o).__name__ in ('Node', 'Graph')"
        " and 'torchscope' in type(o).__module__])",
        trainer.frame_id,
    )
    assert alive == "0"

    # remote attach: the same bytes in chunks of at most 4 MiB
    digest, offset = hashlib.sha256(), 0
    while True:
        chunk = trainer.call("read_chunk", path=str(out), offset=offset, size=8 * 1024 * 1024)
        assert chunk["ok"] and chunk["size"] <= 4 * 1024 * 1024, {
            k: chunk[k] for k in chunk if k != "data"
        }
        digest.update(base64.b64decode(chunk["data"]))
        offset += chunk["size"]
        if chunk["eof"]:
            break
    assert offset == reply["size"]
    assert digest.hexdigest() == hashlib.sha256(out.read_bytes()).hexdigest()
    assert trainer.call("remove", path=str(out)) == {"ok": True, "removed": True}


def test_cancel_file_and_time_budget(trainer):
    """No DAP cancel exists: the extension writes the cancel file while the evaluate runs."""
    reply = trainer.cancelled(
        0.3, expr="deep", input="torch.randn(2, 4)", out=str(trainer.out / "c.msgpack")
    )
    assert (reply["ok"], reply["kind"]) == (False, "cancelled"), reply

    reply = trainer.call(
        "trace",
        expr="deep",
        input="torch.randn(2, 4)",
        out=str(trainer.out / "t.msgpack"),
        timeBudget=0.05,
    )
    assert (reply["ok"], reply["kind"]) == (False, "timeout")
    assert not (trainer.out / "c.msgpack").exists() and not (trainer.out / "t.msgpack").exists()


def test_a_forward_looping_in_python_stops_at_its_budget_and_on_cancel(trainer):
    """A loop of pure Python makes no torch call, where the tracer checks its budget and the
    cancel file: a timer stops it (the main thread paused), and the program is as before."""
    before = trainer.s.evaluate("spin.lin.weight.sum().item()", trainer.frame_id)
    reply = trainer.call(
        "trace",
        expr="spin",
        input="torch.randn(2, 4)",
        out=str(trainer.out / "spin.msgpack"),
        timeBudget=1,
        timeout=60,
    )
    assert (reply["ok"], reply["kind"]) == (False, "timeout"), reply

    reply = trainer.cancelled(
        0.5, 60, expr="spin", input="torch.randn(2, 4)", out=str(trainer.out / "spin.msgpack")
    )
    assert (reply["ok"], reply["kind"]) == (False, "cancelled"), reply

    assert not (trainer.out / "spin.msgpack").exists()
    after = {
        "weight": trainer.s.evaluate("spin.lin.weight.sum().item()", trainer.frame_id),
        "calls": trainer.s.evaluate("spin.calls", trainer.frame_id),
        "handler": trainer.s.evaluate(
            "signal.getsignal(signal.SIGALRM).__name__", trainer.frame_id
        ),
        "timer": trainer.s.evaluate("signal.getitimer(signal.ITIMER_REAL)", trainer.frame_id),
    }
    assert after == {"weight": before, "calls": "0", "handler": "on_alarm", "timer": "(0.0, 0.0)"}


def test_training_goes_on_as_without_a_debugger(trainer):
    trainer.cont()
    trainer.s.wait_end(trainer.since, timeout=60)
    assert trainer.s.output("stdout") == trainer.plain_output()


# -- remote: the debuggee can't read the extension's files -----------------------------------

# the extension on Windows, the debuggee here: not even a path on this machine
FAR_DEBUG_PY = "C:\\Users\\me\\.vscode\\extensions\\torchscope\\bundled\\tool\\torchscope\\debug.py"


def _shipped_files() -> tuple[str, dict[str, str]]:
    """debug.py's source and the files sent with it, as the extension reads them."""
    here = Path(DEBUG_PY).parent
    files = {f: (here / f).read_text("utf-8") for f in debug.shipped_files()}
    mp = Path(msgpack.__file__).parent
    files.update({f"msgpack/{f}": (mp / f).read_text("utf-8") for f in debug.SHIPPED_MSGPACK})
    return files["debug.py"], files


def test_a_debuggee_without_the_extensions_files_gets_the_helper_over_dap(tmp_path):
    """The loader's path does not exist in the debuggee, which can import neither torchscope
    nor msgpack: the sources go over in one evaluate, then requests work as usual, the graph
    is written to the debuggee's temp folder and comes back through read_chunk, and the
    program goes on printing what it prints without a debugger."""
    program = str(HERE / "debuggees" / "isolated.py")
    p = _start(program, [{"line": marker_lines(program, "here")[0]}], tmp_path)
    try:
        p.stop()
        missing = p.s.evaluate(request_expression({"op": "candidates"}, FAR_DEBUG_PY), p.frame_id)
        assert "FileNotFoundError" in missing
        source, files = _shipped_files()
        expr = debug.ship_expression(FAR_DEBUG_PY, source, files)
        assert len(expr) < 1 << 20  # far below debugpy's 16 MiB message limit
        shipped = json.loads(p.s.evaluate(expr, p.frame_id))
        assert shipped == {"ok": True, "files": len(files)}

        def call(op: str, **args: Any) -> dict[str, Any]:
            text = p.s.evaluate(request_expression({"op": op, **args}, FAR_DEBUG_PY), p.frame_id)
            return json.loads(text)

        cands = call("candidates")
        assert cands["ok"] and cands["modules"][0]["expr"] == "model", cands
        reply = call("trace", expr="model", out="C:\\Users\\me\\storage\\debug-1.msgpack")
        assert reply["ok"], reply
        assert reply["path"].startswith(tempfile.gettempdir())
        assert reply["path"].endswith("debug-1.msgpack")
        data = b""
        while True:
            part = call("read_chunk", path=reply["path"], offset=len(data), size=1 << 20)
            data += base64.b64decode(part["data"])
            if part["eof"]:
                break
        assert len(data) == reply["size"]
        g = Graph.from_wire(msgpack.unpackb(data, raw=False))
        assert [n.name for n in g.nodes if n.kind == "op"] == ["linear", "relu", "linear"]
        # sites tell the tracer's frames from the model's as usual: none is ours
        named = os.path.join(tempfile.gettempdir(), "torchscope-shipped", "torchscope")
        sites = [n.site.file for n in g.nodes if n.site is not None]
        assert sites and not [f for f in sites if f.startswith(named) or "debug.py" in f], sites
        assert all(os.path.isfile(n.site.file) for n in g.nodes if n.kind == "op")
        assert _input_shapes(g) == [[4, 3]]
        assert call("remove", path=reply["path"]) == {"ok": True, "removed": True}
        # where the debuggee's msgpack and tracer came from; nothing left on sys.meta_path
        where = p.s.evaluate(
            "(lambda s: __import__('json').dumps([s.modules['msgpack'].__file__, "
            "s.modules['_torchscope_debug_pkg.tracer'].__file__, "
            "[type(f).__name__ for f in s.meta_path]]))(__import__('sys'))",
            p.frame_id,
        )
        msgpack_file, tracer_file, finders = json.loads(where)
        assert msgpack_file == os.path.join(named, "msgpack", "__init__.py")
        assert tracer_file == os.path.join(named, "tracer.py")
        assert "_ShippedFinder" not in finders
        p.cont()
        p.s.wait_end(p.since, timeout=120)
        assert p.s.output() == p.plain_output()
    finally:
        _end(p)
