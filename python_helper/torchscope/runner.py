"""`python -m torchscope.runner`: traces models for the language server, one request at a time.

JSON lines in on stdin, JSON lines out on a private copy of stdout (docs/protocol.md, "Runner").
User code gets fd 0 from /dev/null and fd 1 pointed at stderr, so neither `input()` nor
`print` (nor a C library writing to fd 1) can touch the protocol stream.
"""

from __future__ import annotations

if __name__ == "__main__":  # (run as the runner, not imported): before the imports below
    from .entry_path import drop_working_folder

    drop_working_folder()

import contextlib  # noqa: E402
import hashlib
import importlib
import json
import os
import stat
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, TextIO

from .entry_path import bundled_libraries_last
from .failure import IMPORTING, TRACING, WRITING, Failure, exit_text, one_line
from .file_texts import check_texts, texts_in_place
from .files_read import files_read
from .usercode import is_user_file, module_files, texts_only

if TYPE_CHECKING:
    from .process_defaults import ProcessDefaults  # (imports torch: loaded once torch is)
    from .server.calls_in_file import FoundInput

Reply = dict[str, Any]


# -- the user's modules: forget them between requests, as a fresh `python` would -------------


def _module_paths() -> list[tuple[str, list[str]]]:
    return [(name, module_files(module)) for name, module in list(sys.modules.items())]


def user_files() -> dict[str, tuple[int, int]]:
    """The user's imported files with their (mtime_ns, size): what a reused build depends on."""
    return _signatures(p for _, paths in _module_paths() for p in paths if is_user_file(p))


def _signatures(paths: Iterable[str]) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of each of these that is a file."""
    files: dict[str, tuple[int, int]] = {}
    for p in paths:
        with contextlib.suppress(OSError):
            st = os.stat(p)
            if stat.S_ISREG(st.st_mode):
                files[p] = (st.st_mtime_ns, st.st_size)
    return files


def _unchanged(files: dict[str, tuple[int, int]]) -> bool:
    for p, sig in files.items():
        try:
            st = os.stat(p)
        except OSError:
            return False
        if (st.st_mtime_ns, st.st_size) != sig:
            return False
    return True


@dataclass
class _LastBuild:
    """The previous request's model, reused while its text and its project files are the same
    (a re-trace with another input does not import and build again)."""

    key: tuple[Any, ...]
    built: Any
    files: dict[str, tuple[int, int]]
    modules: int = 0  # len(sys.modules) when `files` was listed

    def add_imported(self) -> None:
        """After a forward: the project files it imported first (`from helper import post`
        inside it) are ones the build depends on too, as they were when imported."""
        if len(sys.modules) != self.modules:
            self.files = {**user_files(), **self.files}
            self.modules = len(sys.modules)


_last: Optional[_LastBuild] = None


_before_traces: Optional[set[str]] = None  # modules the process had before its first trace


def forget_user_modules() -> list[str]:
    """Remove from sys.modules every module the traces loaded from the user's code (anything
    but the standard library, installed packages, torch and torchscope), whichever folder it
    came from, so the next trace imports its own file's modules afresh: two folders each with
    a `helpers.py` never see each other's. Modules the process had before its first trace
    stay (the runner's own; a test's, when called in process)."""
    global _before_traces
    if _before_traces is None:
        _before_traces = set(sys.modules)
    gone: list[str] = []
    for name, paths in _module_paths():
        if name in _before_traces:
            continue
        if paths and all(is_user_file(p) for p in paths):
            del sys.modules[name]
            gone.append(name)
    importlib.invalidate_caches()
    return gone


_added_paths: list[str] = []  # sys.path entries a trace added for its file's folder


def _own_folder_first(path: Path, text: Optional[str] = None) -> None:
    """The traced file's package root first on sys.path and its own folder after it, as
    `python file.py` would have its folder, and no folder an earlier trace added: `import
    helpers` finds this file's. The entries added are taken off by identity: the same folder
    may be on sys.path in its own right (PYTHONPATH=., an editable install) and stays."""
    from .build_target import import_folders, module_name_for

    for p in _added_paths:
        for i, entry in enumerate(sys.path):
            if entry is p:
                del sys.path[i]
                break
    _added_paths.clear()
    for at, folder in enumerate(import_folders(path, module_name_for(path, text)[1])):
        entry = "".join(str(folder))  # (a new string: its identity is ours to find again)
        sys.path.insert(at, entry)
        _added_paths.append(entry)


# -- where an error happened -----------------------------------------------------------------


def _user_traceback(exc: BaseException) -> Optional[str]:
    """The traceback text of the user's frames (torchscope's own frames and importlib's are
    noise to the user), ending with the exception line; None if no user frame is in it."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = os.path.dirname(os.path.abspath(__file__))
    keep = [f for f in frames if not f.filename.startswith(here) and "importlib" not in f.filename]
    if not keep:
        return None
    lines = traceback.format_list(keep) + traceback.format_exception_only(type(exc), exc)
    return "Traceback (most recent call last):\n" + "".join(lines)


def _in_construction(tb: Optional[TracebackType]) -> bool:
    """The exception came out of building the model, not out of importing the file."""
    from . import build_target as target

    codes = {
        target._instantiate.__code__,  # pyright: ignore[reportPrivateUsage]
        target._construct.__code__,  # pyright: ignore[reportPrivateUsage]
    }
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return True
        tb = tb.tb_next
    return False


# -- one trace -------------------------------------------------------------------------------


def trace(req: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Build (or reuse the last build), pick the input, trace, write the file: the TraceResult,
    or raise Failure."""
    started = time.monotonic()
    path = Path(req["file"]).resolve()
    name = req["target"]
    device = req.get("device") or "cpu"
    if device not in ("cpu", "meta"):
        raise Failure("target-error", f"unknown device {device!r}: use cpu or meta")

    global _last
    text = req.get("text")
    try:
        others = check_texts(req.get("texts"))
    except ValueError as exc:
        raise Failure("bad-request", str(exc)) from None
    texts_only(str(path) if text is not None else None)  # (another file's buffer: gone)
    run_top_level = bool(req.get("runTopLevel"))
    cwd = req.get("cwd")  # the file's workspace folder: relative paths are read from there
    key = (str(path), _digest(text, others), name, req.get("ctorArgs"), device, run_top_level, cwd)
    with texts_in_place(others), _working_folder(cwd):
        if _last is not None and _last.key == key and _unchanged(_last.files):
            built = _last.built
        else:
            _last = None  # free the old model before building the next
            progress(IMPORTING)
            with files_read() as read:
                built = _build(path, name, device, text, req.get("ctorArgs"), run_top_level)
            _last = _LastBuild(key, built, {**_signatures(read), **user_files()}, len(sys.modules))
        try:
            return _trace_built(req, built, started, progress)
        finally:
            if _last is not None:
                _last.add_imported()


@contextmanager
def _working_folder(folder: Any) -> Iterator[None]:
    """Run the block in `folder` (as Run Python File starts in the file's workspace folder),
    then back; as it is for None or a folder that is not there."""
    before = os.getcwd()
    moved = False
    if isinstance(folder, str) and folder:
        with contextlib.suppress(OSError):
            os.chdir(folder)
            moved = True
    try:
        yield
    finally:
        if moved:
            with contextlib.suppress(OSError):
                os.chdir(before)


def _digest(text: Optional[str], others: Optional[dict[str, Optional[str]]]) -> Optional[str]:
    """What a build ran instead of the files on disk (None: nothing)."""
    if text is None and not others:
        return None
    h = hashlib.sha256()
    for part in (text, *(sorted(others.items()) if others else ())):
        h.update(repr(part).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _build(
    path: Path,
    name: str,
    device: str,
    text: Optional[str],
    ctor_args: Optional[str],
    run_top_level: bool = False,
) -> Any:
    from . import build_target as tg
    from .op_libraries import destroy_users_libraries, users_libraries_recorded

    forgotten = forget_user_modules()
    destroy_users_libraries()  # the forgotten modules' operators: the file may define them again
    if _defaults is not None:
        _defaults.restore(forgotten)  # the last file's process-wide settings are not this one's
    _own_folder_first(path, text)
    old_argv, old_cwd = sys.argv, os.getcwd()
    _same_random_numbers()
    try:
        with users_libraries_recorded():
            return tg.build(
                f"{path}:{name}",
                device,
                source=text,
                ctor_args=ctor_args,
                run_top_level=run_top_level,
            )
    except tg.RunsCode as exc:
        cause = exc.__cause__ or exc
        details = _user_traceback(cause) or "".join(
            traceback.format_exception_only(type(cause), cause)
        )
        statements = [s.to_wire() for s in exc.skipped]
        raise Failure("runs-code", f"importing {exc}", details, statements=statements) from exc
    except tg.NeedsConstructorArgs as exc:
        extra = {"guess": exc.guess} if exc.guess else {}
        if exc.params:
            extra["ctorParams"] = exc.params
        # (the editor asks for them: not the command line's hint)
        raise Failure("target-error", exc.said, needsCtorArgs=True, **extra) from exc
    except tg.TargetError as exc:
        raise Failure("target-error", str(exc), _user_traceback(exc)) from exc
    except SyntaxError as exc:
        where = f"{Path(exc.filename or path).name}:{exc.lineno}"
        details = "".join(traceback.format_exception_only(type(exc), exc))
        raise Failure("import-error", f"syntax error in {where}: {exc.msg}", details) from exc
    except BaseException as exc:  # noqa: BLE001 - user code: anything, sys.exit included
        if isinstance(exc, SystemExit):
            what = exit_text(exc)
        else:
            what = f"raised {one_line(exc)}"
        details = _user_traceback(exc) or "".join(traceback.format_exception_only(type(exc), exc))
        if _in_construction(exc.__traceback__):
            raise Failure("target-error", f"building {name} {what}", details) from exc
        raise Failure("import-error", f"importing {path.name} {what}", details) from exc
    finally:
        sys.argv = old_argv
        try:
            os.chdir(old_cwd)
        except OSError:
            pass


# the process as the runner started it (set by main once torch is imported): process_defaults.py
_defaults: Optional[ProcessDefaults] = None


SEED = 0


def _same_random_numbers() -> None:
    """Seed torch before a build and before an input: the runner's models have random weights,
    and the same code must get the same ones (and the same random input) every time, so two
    traces of one model compare by their values (Compare with HEAD, the CLI's diff)."""
    import torch

    torch.manual_seed(SEED)


def _input_call(req: dict[str, Any], built: Any) -> Optional[FoundInput]:
    """The input of a call of the model in its file (a `calls_in_file.FoundInput`), as the
    server read it before anything was imported; read again for a class the file imports and
    the model was built as the file builds it (`Net(8)`): the server could not tell that call
    builds it, not calls it."""
    from . import build_target as tg
    from .server.calls_in_file import FoundInput

    call = req.get("inputCall")
    if call and built.built_as and tg.is_model_class(getattr(built.module, built.name, None)):
        return tg.input_call_in_file(Path(req["file"]), built.name, req.get("text"), True)
    return FoundInput(call, req.get("inputCallFrom")) if call else None


def _trace_built(
    req: dict[str, Any], built: Any, started: float, progress: Callable[[str], None]
) -> dict[str, Any]:
    from . import build_target as tg
    from .definitions import defining, skipped_lines, suspects
    from .inputs import GuessError

    budget = req.get("timeout")
    device = req.get("device") or "cpu"

    progress("Building input")
    typed = req.get("input")
    _same_random_numbers()
    try:
        chosen = tg.choose_input(built, device, typed, _input_call(req, built))
    except tg.TargetError as exc:
        cause = exc.__cause__ or exc
        message = f"the input {typed} failed: {one_line(cause)}"
        blamed = defining(built.skipped, cause)  # a name the left-out code would make
        if blamed:
            message += (
                f" (the file's top-level code that did not run makes it: {skipped_lines(blamed)})"
            )
        raise Failure("needs-input", message) from exc
    except GuessError as exc:
        extra = {"guess": exc.guess} if exc.guess else {}
        raise Failure("needs-input", str(exc), **extra) from exc

    progress(TRACING)
    result = _trace_chosen(req, built, chosen, started, budget, progress)
    if chosen.kind == "guess" and result["summary"]["error"] is not None:
        # the guess may be what's wrong: a later layer may want another size
        other = tg.another_guess(built, chosen, device, SEED)  # drawn as a first input is
        if other is not None:
            progress(f"{TRACING} again with another guess")
            chosen = other
            result = _trace_chosen(req, built, chosen, started, budget, progress)
    summary = result["summary"]
    summary["skipped"] = [s.to_wire() for s in built.skipped]
    if built.built_as:
        summary["builtAs"] = built.built_as
    # the skipped statements the forward's error points at (a key or name they would make)
    error = summary["error"]
    blamed = suspects(built.skipped, f"{error['type']}: {error['message']}") if error else []
    summary["skippedSuspect"] = [s.to_wire() for s in blamed]
    return result


def _trace_chosen(
    req: dict[str, Any],
    built: Any,
    chosen: Any,
    started: float,
    budget: Any,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    from . import build_target as tg
    from .hard_stop import hard_stop
    from .tracefile import trace_to_file

    train = req.get("train")
    described = chosen.described
    if train is not None:  # a comparison of eval and training mode: this trace only
        described += " (training mode)" if train else " (eval mode)"
    remaining = None
    if budget:
        remaining = max(0.05, float(budget) - (time.monotonic() - started))
    args, kwargs = tg.as_call(chosen.value, built.model)
    try:
        # (a forward looping in pure Python makes no torch call where the tracer's budget is
        # checked: the timer stops it, and the runner stays warm for the next trace)
        with _mode(built.model, train), hard_stop(remaining) as over:

            def traced() -> None:  # the user's code is done: the server waits for the writing
                over()
                progress(WRITING)

            return trace_to_file(
                built.model,
                args,
                kwargs,
                out=req["out"],
                described=described,
                input_kind=chosen.kind,
                input_expr=chosen.expr,
                input_template=chosen.template,
                time_budget=remaining,
                traced=traced,
            )
    except Failure as exc:
        if exc.kind == "timeout" and budget:  # the request's budget, not what was left of it
            raise Failure(
                "timeout",
                f"the trace ran past {float(budget):g} s and was stopped",
                stage="trace",
            ) from None
        raise
    except (SystemExit, KeyboardInterrupt) as exc:  # the tracer keeps only Exceptions
        what = f"sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else type(exc).__name__
        raise Failure(
            "runner-crashed", f"the model's forward called {what}", _user_traceback(exc)
        ) from exc


@contextmanager
def _mode(model: Any, train: Any) -> Iterator[None]:
    """`model.train(train)` for one trace (None: as built), every module's flag put back after:
    the runner keeps the build for the next trace."""
    if train is None:
        yield
        return
    flags = [(m, m.training) for m in model.modules()]
    model.train(bool(train))
    try:
        yield
    finally:
        for m, flag in flags:
            m.training = flag


# Libraries slow to import that a model file may use: imported ahead when the server sees an
# open file import them, so the first trace does not pay for it. Only these, never user code.
PRELOADABLE = {
    "transformers",
    "timm",
    "torchvision",
    "torchaudio",
    "diffusers",
    "lightning",
    "pytorch_lightning",
    "einops",
    "accelerate",
}


def preload(modules: list[str]) -> list[str]:
    loaded: list[str] = []
    for name in modules:
        if name not in PRELOADABLE:
            continue
        try:
            importlib.import_module(name)
            loaded.append(name)
        except BaseException as exc:  # noqa: BLE001 - not installed or broken: the trace will say
            print(f"torchscope: preloading {name} failed: {one_line(exc)}", file=sys.stderr)
    return loaded


# -- the loop --------------------------------------------------------------------------------


WARM_MODULES = ("build_target", "inputs", "tracer", "tracefile", "threads")


class Runner:
    def __init__(self, replies: TextIO) -> None:
        self.replies = replies
        self.torch_version: Optional[str] = None
        self.torch_error: Optional[str] = None

    def send(self, message: Reply) -> None:
        self.replies.write(json.dumps(message) + "\n")
        self.replies.flush()

    def import_torch(self) -> None:
        try:
            import torch

            self.torch_version = str(torch.__version__)
            # the modules a trace uses, imported now beside torch: the first trace is faster
            for name in WARM_MODULES:
                importlib.import_module(f"{__package__}.{name}")
        except Exception as exc:  # ImportError, or a broken install
            self.torch_error = one_line(exc)

    def no_torch(self, rid: Any) -> Reply:
        return Failure(
            "no-torch",
            f"torch is not installed in this Python ({sys.executable}); install it or pick an "
            "interpreter that has it",
            sys.executable,
            error=self.torch_error,
        ).runner_reply(rid)

    def handle(self, req: dict[str, Any]) -> Reply:
        rid = req.get("id")
        op = req.get("op")
        if self.torch_version is None:
            return self.no_torch(rid)
        if op == "ping":
            return {"id": rid, "ok": True, "torch": self.torch_version, "pid": os.getpid()}
        if op == "preload":
            return {"id": rid, "ok": True, "loaded": preload(req.get("modules") or [])}
        if op != "trace":
            return Failure("internal", f"unknown op {op!r}").runner_reply(rid)
        try:
            from .threads import core_spared

            with core_spared():  # the editor beside us needs a core while the panel opens
                result = trace(req, lambda stage: self.send({"id": rid, "progress": stage}))
        except Failure as exc:
            return exc.runner_reply(rid)
        except BaseException as exc:  # noqa: BLE001 - a bug of ours or a strange user object
            return Failure(
                "internal", f"torchscope failed: {one_line(exc)}", traceback.format_exc()
            ).runner_reply(rid)
        return {"id": rid, "ok": True, "result": result}

    def serve(self, requests: TextIO) -> None:
        for line in requests:
            line = line.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
            except ValueError:
                self.send(
                    {"id": None, "ok": False, "kind": "internal", "message": "bad request line"}
                )
                continue
            self.send(self.handle(req))


def _die_with_parent() -> None:
    """When the server dies, the runner goes, and with it every process the user's code
    started (its process group: the server starts the runner in a session of its own), so a
    runner stuck in user code leaves no orphan. On Linux the kernel sends SIGTERM
    (PR_SET_PDEATHSIG), whose handler kills the group; a daemon thread that sees the runner
    re-parented does the same where there is no such signal, or when the main thread is
    stuck in C code. (The runner is never a debuggee: a thread is harmless here.)"""
    expected = os.environ.get("TORCHSCOPE_SERVER_PID")
    if not expected or os.name != "posix":
        return
    import signal
    import threading

    def kill_group(*_: Any) -> None:
        try:
            os.killpg(os.getpgrp(), signal.SIGKILL)
        finally:
            os._exit(0)

    if os.getppid() != int(expected):
        kill_group()  # the server is already gone
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            signal.signal(signal.SIGTERM, kill_group)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
            if os.getppid() != int(expected):
                kill_group()  # the server died before prctl took effect
        except Exception:
            pass

    def watch() -> None:
        while os.getppid() == int(expected):
            time.sleep(0.5)
        kill_group()

    threading.Thread(target=watch, name="torchscope-parent-watch", daemon=True).start()


def main() -> None:
    _die_with_parent()
    bundled_libraries_last()
    # private copies of the protocol streams; user code sees /dev/null and stderr
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    sys.stdout = sys.stderr
    runner = Runner(replies)
    runner.import_torch()
    if runner.torch_version is not None:
        # the process as it starts (in this process only: a test calling the runner's
        # functions in its own process keeps its settings)
        from .process_defaults import ProcessDefaults

        global _defaults
        _defaults = ProcessDefaults()
    runner.serve(requests)


if __name__ == "__main__":
    main()
