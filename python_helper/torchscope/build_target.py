"""Load a model target `FILE.py:NAME` without running the file as `__main__`."""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional

import torch
from torch import nn

from .definitions import Skipped, definitions, dotted
from .failure import a_or_an, joined_lines, message_of, one_line, shown_name
from .hard_stop import StoppedOutside
from .inputs import by_name, fits_positionally
from .seeding import SeedByLine
from .usercode import lines_are, read_source

if TYPE_CHECKING:
    from .server.calls_in_file import FoundInput


class TargetError(Exception):
    """A target that cannot be loaded or built; the message is one line for the user."""


@dataclass
class Built:
    model: nn.Module
    example: Optional[Any]  # what the target itself supplied as input, if anything
    module: ModuleType  # the user's imported file (namespace for --input expressions)
    skipped: list[Skipped] = field(default_factory=list[Skipped])  # top-level work not run
    name: str = ""  # the target's name in its file
    # a class (or factory) that needs arguments, built as the file builds it: "Wide(12), as
    # line 41 builds it"
    built_as: str = ""


class WrongKind(TargetError):
    """NAME (or what it returned) is no model: an int, a module, a plain class. The file's
    left-out top-level code would not change that, so it is said as itself, without
    RunsCode's offer to run it. (Not for None from a factory: a registry the left-out code
    fills gives that.)"""


def _no_model(out: Any, message: str) -> TargetError:
    """What a factory or a call returned that is no model, as its error: None (alone, or as
    the model beside an example) is what left-out code may fill, anything else is not."""
    nothing = out is None or (isinstance(out, tuple) and len(out) == 2 and out[0] is None)
    return TargetError(message) if nothing else WrongKind(message)


class RunsCode(TargetError):
    """Importing the file's definitions alone, or building the model from them, failed, and
    the file runs code at import that was left out: it may need it. The user decides."""

    def __init__(self, message: str, skipped: list[Skipped]) -> None:
        super().__init__(message)
        self.skipped = skipped


def complete_target(target: str) -> tuple[str, Optional[str]]:
    """A target given as its file alone (`net.py`): `net.py:NAME` of the one model the file
    defines (static analysis: its model classes, instances and factories), and a line that
    says which it took; TargetError naming them when there are several, or none. Any other
    target comes back as it is (None: nothing to say)."""
    from .server import find_targets

    path = Path(target)
    if not target.lower().endswith(".py") or target.endswith(":"):
        return target, None
    if not path.is_file():
        if path.is_dir() or path.exists() or ":" in target:
            return target, None  # (split_target's or build's own message)
        raise TargetError(f"no such file: {shown_name(path)}")
    project, info = _parsed(path, None)
    found = [] if info is None else find_targets.targets_in(project, info)
    names = [t.target for t in found]
    picked = _own_models(project, info, found) if len(found) > 1 else names
    if len(picked) == 1:
        return f"{target}:{picked[0]}", f"tracing {picked[0]}, the one model {path.name} defines"
    if not names:
        built = _built_at_top(info)
        if built:  # (a library's class, as x-transformers' TransformerWrapper: not told)
            raise TargetError(
                f"{path.name} defines no model torchscope can tell from its text; it builds "
                f"{', '.join(built)} at its top level: give the model as {target}:NAME"
            )
        raise TargetError(
            f"{path.name} defines no model (an nn.Module class, an instance of one or a "
            "function that returns one): give FILE.py:NAME"
        )
    raise TargetError(
        f"{path.name} defines {len(names)} models: {', '.join(names)}; give one as {target}:NAME"
    )


def models_named(path: Path, text: Optional[str] = None) -> list[str]:
    """The file's targets by static analysis, in file order: its model classes, the model
    instances it makes at the top level, its functions that return one ([]: none, or the
    file does not parse)."""
    from .server import find_targets

    project, info = _parsed(path, text)
    return [] if info is None else [t.target for t in find_targets.targets_in(project, info)]


def _own_models(project: Any, info: Any, found: list[Any]) -> list[str]:
    """The names of `found` (the file's targets) less the instances that are no model of
    their own: one of a model class the file defines (`model = Net()` beside `class Net`) and
    one of torch's own layers (`criterion = nn.CrossEntropyLoss()`)."""
    from .server import find_targets

    out: list[str] = []
    for t in found:
        made = info.instances.get(t.target) if t.kind == "instance" else None
        # (`Net().to(device)`, `torch.compile(Net())`: Net's)
        call = find_targets.unwrapped(project, info, made.value) if made is not None else None
        name = dotted(call.func) if isinstance(call, ast.Call) else None
        if name is not None:
            if name in info.classes:
                continue
            resolved = project.resolve(info, name)
            if isinstance(resolved, find_targets.External) and resolved.qualname.startswith(
                "torch."
            ):
                continue
        out.append(t.target)
    return out


def _built_at_top(info: Any) -> list[str]:
    """The names the file binds to a call at its top level (`model = Wrapper(…)`), in file
    order: a model among them may be of a class static analysis can't tell is one."""
    if info is None:
        return []
    return [name for name, _ in sorted(info.instances.items(), key=lambda kv: kv[1].lineno)]


def _its_models(path: Path, text: Optional[str]) -> str:
    """ "; its models: A, B" for a message about a name the file lacks ("" if it has none)."""
    try:
        names = models_named(path, text)
    except Exception:  # (a hint only: never in the way of the message it adds to)
        return ""
    return f"; its models: {', '.join(names)}" if names else ""


def split_target(target: str) -> tuple[Path, str]:
    file, sep, name = target.rpartition(":")
    if not sep or not file or not name:
        raise TargetError(f"target {target!r} must look like FILE.py:NAME")
    return Path(file), name


def module_name_for(path: Path, source: Optional[str] = None) -> tuple[str, Path]:
    """The dotted name of a file inside its package tree, and the folder to put on sys.path.
    A package's `__init__.py` is the package itself. Folders without `__init__.py` count as
    packages (namespace packages, as `python -m pkg.mod` runs them) as far up as the file's
    relative imports reach (`from ..common import cfg`: two). A name with a dot can't be a
    module's (`unet.v2.py`, a clone in `detr.v2/`): such a file is a module of its own (a
    name of its own, no package), such a folder the top. `source`: the file's text, if not
    as saved."""
    path = path.resolve()
    if "." in path.stem:
        return "__torchscope_" + re.sub(r"\W", "_", path.stem), path.parent
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent if parts else path.parent.parent
    if not parts:
        parts = [path.parent.name]
    while "." not in folder.name and (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    levels = len(parts) - (0 if path.name == "__init__.py" else 1)  # packages it is in
    reach = _relative_reach(path, source)
    while levels < reach and folder.name.isidentifier() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
        levels += 1
    return ".".join(parts), folder


def import_folders(path: Path, root: Path) -> list[Path]:
    """The folders a trace of `path` puts first on sys.path, in order: its package's `root`
    (module_name_for's), and its own folder after it, as `python file.py` has it (a sibling
    imported by its plain name)."""
    own = path.resolve().parent
    return [root] if own == root else [root, own]


_RELATIVE = re.compile(r"^[ \t]*from[ \t]+(\.+)", re.MULTILINE)


def _relative_reach(path: Path, source: Optional[str]) -> int:
    """How many packages up the file's relative imports reach (0: none)."""
    if source is None:
        try:
            source = read_source(path)
        except (OSError, UnicodeDecodeError, SyntaxError):
            return 0
    return max((len(m.group(1)) for m in _RELATIVE.finditer(source)), default=0)


def import_file(
    path: Path,
    source: Optional[str] = None,
    keep: Optional[set[str]] = None,
    skipped: Optional[list[Skipped]] = None,
) -> ModuleType:
    """Import `path` under its dotted package name, so relative imports work and
    `if __name__ == "__main__":` does not run. `source` replaces the file's text
    (an editor's unsaved buffer). With `keep` (the names the caller needs), only the file's
    definitions run (`definitions.definitions`): its top-level work is left out and listed
    in `skipped`; without, the whole file runs. The file runs once, as this says, also when
    its package's `__init__.py` imports it (or is it)."""
    if source is None and not path.exists():  # (with its text: a buffer whose file is gone)
        raise TargetError(f"no such file: {shown_name(path)}")
    if path.is_dir():
        raise TargetError(f"{path} is a folder: give FILE.py:NAME")
    name, root = module_name_for(path, source)
    # the package's root first, then the file's own folder, ahead of the same folders later
    # on sys.path (the current folder, site-packages): else `import linformer` from inside
    # linformer/linformer.py finds that module, not its package (the runner does the same)
    folders = [str(folder) for folder in import_folders(path, root)]
    if sys.path[: len(folders)] != folders:
        sys.path[:0] = folders
    this = _ThisFile(name, path, source, keep, skipped)
    sys.modules.pop(name, None)  # (an earlier import of it: this one runs afresh)
    old_argv = sys.argv
    sys.argv = [str(path)]
    lines_are(str(path.resolve()), source)
    sys.meta_path.insert(0, this)  # (the package's imports of this file find it so)
    try:
        if "." in name:
            importlib.import_module(name.rpartition(".")[0])  # the parent, for relative imports
        module = sys.modules.get(name) if this.ran else None
        if module is None:
            module = importlib.import_module(name)
        return module
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.argv = old_argv
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(this)


class _ThisFile(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The traced file as Python imports it, under its module name: its text (the editor's
    buffer, or as saved), and only its definitions when the caller names what it needs."""

    def __init__(
        self,
        name: str,
        path: Path,
        source: Optional[str],
        keep: Optional[set[str]],
        skipped: Optional[list[Skipped]],
    ) -> None:
        self.name, self.path, self.source, self.keep, self.skipped = (
            name,
            path,
            source,
            keep,
            skipped,
        )
        self.ran = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        package = [str(self.path.resolve().parent)] if self.path.name == "__init__.py" else None
        return importlib.util.spec_from_file_location(
            fullname, str(self.path.resolve()), loader=self, submodule_search_locations=package
        )

    def create_module(self, spec: Any) -> None:
        return None  # (Python's default module)

    def exec_module(self, module: ModuleType) -> None:
        self.ran = True
        path, source, keep = self.path, self.source, self.keep
        filename = str(path.resolve())
        # (read by _source_text: the loader's own words name neither the file nor the byte)
        text = source if source is not None else _source_text(path)
        if keep is not None:
            defs = definitions(text, keep, filename)
            if self.skipped is not None:
                self.skipped.extend(defs.skipped)
            code = compile(defs.tree, filename, "exec")
        else:
            code = compile(text, filename, "exec")
        exec(code, module.__dict__)


def _source_text(path: Path) -> str:
    """The file's text as Python reads it; TargetError naming the file and what is wrong
    when it can't be read (torch's and importlib's words named neither)."""
    try:
        return read_source(path)
    except OSError as exc:
        raise TargetError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        data = exc.object if isinstance(exc.object, bytes) else b""
        line = data[: exc.start].count(b"\n") + 1
        byte = f"byte {data[exc.start]:#04x} on line {line}" if exc.start < len(data) else "a byte"
        if exc.encoding.replace("_", "-").lower() in ("utf-8", "utf8"):
            raise TargetError(
                f"{path} is not UTF-8 text ({byte}): save it as UTF-8, or name its encoding "
                "in a `# -*- coding: latin-1 -*-` line (PEP 263)"
            ) from None
        raise TargetError(
            f"{path} is not {exc.encoding} text, as its coding line says ({byte}): save it so, "
            "or name the encoding it is in"
        ) from None
    except SyntaxError as exc:  # (a coding line naming no codec; bytes that are no text)
        raise TargetError(f"{path} is not Python source text: {exc.msg}") from None


def build(
    target: str,
    device: str = "cpu",
    source: Optional[str] = None,
    ctor_args: Optional[str] = None,
    run_top_level: bool = False,
) -> Built:
    """Import the file and build the model named by `target` on `device`.

    Only the file's definitions run unless `run_top_level` (the user's consent): a training
    loop at top level, a checkpoint written, a job started are left out. When importing or
    building then fails and work was left out, RunsCode says what it was.
    `ctor_args` is call-argument text for a class that needs them (`"10, hidden=64"`)."""
    path, name = split_target(target)
    skipped: list[Skipped] = []
    keep = None if run_top_level else {name}
    with SeedByLine():  # (random weights: the same for the same lines, see seeding.py)
        return _build(path, name, device, source, ctor_args, keep, skipped)


def _build(
    path: Path,
    name: str,
    device: str,
    source: Optional[str],
    ctor_args: Optional[str],
    keep: Optional[set[str]],
    skipped: list[Skipped],
) -> Built:
    try:
        module = import_file(path, source, keep, skipped)
        # the file's own names: a module object's attributes (`__init__`, `__class__`) are not
        if name not in vars(module):
            if not any(name in s.binds for s in skipped):
                skipped.clear()  # the left-out code would not define it either
            raise TargetError(f"{path.name} has no name {name!r}{_its_models(path, source)}")
        obj = getattr(module, name)
        built_as = ""
        with torch.device(device):
            if ctor_args and callable(obj) and not isinstance(obj, nn.Module):
                model, example = _construct(obj, name, ctor_args, module)
            else:
                try:
                    model, example = _instantiate(obj, name)
                except NeedsConstructorArgs as exc:
                    found = ctor_call_in_file(path, name, source, is_model_class(obj))
                    if found is None:
                        raise
                    args, line = found.text, found.line
                    if not found.usable:  # (`Net(len(vocab))`): the user edits it
                        raise NeedsConstructorArgs(exc.said, args, exc.params, exc.hint) from exc
                    try:
                        model, example = _construct(obj, name, args, module)
                    except TargetError as failed:
                        raise NeedsConstructorArgs(
                            f"{exc.said}; the file's own {name}({args}) at line {line}: {failed}",
                            args,
                            exc.params,
                            exc.hint,
                        ) from failed
                    defaults = " with its argparse defaults" if found.argparse_defaults else ""
                    built_as = f"{name}({args}), as line {line} builds it{defaults}"
    except (NeedsConstructorArgs, WrongKind, SyntaxError):
        raise
    except BaseException as exc:
        # (the time budget's stop is no fault of the left-out code)
        if not skipped or isinstance(exc, (KeyboardInterrupt, StoppedOutside)):
            raise
        if _not_installed(exc, skipped):
            raise
        said = message_of(exc)
        raise RunsCode(
            f"{path.name} without its top-level code failed ({type(exc).__name__}: "
            f"{said.splitlines()[0] if said else ''}); it runs code at import: "
            + describe_skipped(skipped),
            skipped,
        ) from exc
    if device != "cpu" and not _on_device(model, device):
        model = model.to(device)
    return Built(model, example, module, skipped, name, built_as)


def _not_installed(exc: BaseException, skipped: list[Skipped]) -> bool:
    """A module that is nowhere to import (a package not installed), where none of the code
    left out changes where modules are looked for (`sys.path.insert(0, ROOT)`): running that
    code would not help, so it is said as the import error it is."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return False
    return not any(_FINDS_MODULES.search(s.text) for s in skipped)


_FINDS_MODULES = re.compile(r"sys\.path|addsitedir|PYTHONPATH|meta_path|path_hooks")


def describe_skipped(skipped: list[Skipped], most: int = 3) -> str:
    """`line 40: for step in range(30):; line 52: torch.save(...) (+2 more)`."""
    parts = [f"line {s.line}: {s.text}" for s in skipped[:most]]
    more = f" (+{len(skipped) - most} more)" if len(skipped) > most else ""
    return "; ".join(parts) + more


def _construct(
    make: Any, name: str, ctor_args: str, module: ModuleType
) -> tuple[nn.Module, Optional[Any]]:
    """`name(ctor_args)`: a class, or a factory (its `(model, example_input)` kept)."""
    scope = {**module.__dict__, "torch": torch, "nn": nn, "_make": make}
    try:
        out = eval(f"_make({ctor_args})", scope)  # noqa: S307 - the user's own arguments
    except Exception as exc:
        # (asked again, with these to edit: arguments the user gave are remembered)
        raise NeedsConstructorArgs(
            f"{name}({ctor_args}) failed: {type(exc).__name__}: {message_of(exc)}",
            ctor_args,
            parameters_text(make),
        ) from exc
    if isinstance(out, nn.Module):
        return out, None
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], nn.Module):
        return out[0], out[1]
    raise _no_model(out, f"{name}({ctor_args}) is not an nn.Module")


class NeedsConstructorArgs(TargetError):
    """The class's constructor (or the factory) has required parameters, or the arguments
    given failed; `guess`: the arguments to start from (the file's own, as written, or the
    ones that failed). `hint`: what the command line, which takes no arguments, can do
    instead (the message ends with it; `said` is the message without it: the editor asks)."""

    def __init__(
        self,
        message: str,
        guess: Optional[str] = None,
        params: Optional[str] = None,
        hint: str = "",
    ) -> None:
        super().__init__(f"{message}; {hint}" if hint else message)
        self.said = message
        self.hint = hint
        self.guess = guess
        self.params = params  # what it takes, `d_in, d_hidden, n_layers=2`: the box's hint


def parameters_text(obj: Any) -> Optional[str]:
    """A constructor's or factory's parameters as call text (`d_in, d_hidden, n_layers=2`),
    annotations left out; None when it has no signature."""
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    parts = []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        elif p.default is p.empty:
            parts.append(p.name)
        else:
            default = repr(p.default)
            parts.append(f"{p.name}={default if len(default) <= 20 else '…'}")
    return ", ".join(parts)


def _instantiate(obj: Any, name: str) -> tuple[nn.Module, Optional[Any]]:
    if isinstance(obj, nn.Module):
        return obj, None
    if inspect.isclass(obj):
        if not issubclass(obj, nn.Module):
            raise WrongKind(f"{name} is a class but not an nn.Module subclass")
        try:
            inspect.signature(obj).bind()
        except TypeError as exc:
            raise NeedsConstructorArgs(
                f"{name}() needs constructor arguments ({exc})",
                params=parameters_text(obj),
                hint="point at a factory function that builds it instead",
            ) from exc
        return obj(), None
    if callable(obj):
        try:
            inspect.signature(obj).bind()
        except (TypeError, ValueError) as exc:
            raise NeedsConstructorArgs(
                f"{name}() needs arguments ({exc})",
                params=parameters_text(obj),
                hint="point at a function that needs none instead",
            ) from exc
        out = obj()
        if isinstance(out, nn.Module):
            return out, None
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], nn.Module):
            return out[0], out[1]
        raise _no_model(
            out,
            f"{name}() returned {type(out).__name__}, expected a model or (model, example_input)",
        )
    raise WrongKind(f"{name} is {a_or_an(type(obj).__name__)}, not an nn.Module, class or factory")


def _on_device(model: nn.Module, device: str) -> bool:
    first = next(iter(model.parameters()), None)
    return first is None or first.device.type == torch.device(device).type


def eval_input(expr: str, module: ModuleType, device: str) -> Any:
    """Evaluate an --input expression with torch and the user's file in scope."""
    scope = dict(module.__dict__)
    scope.setdefault("torch", torch)
    scope.setdefault("nn", nn)
    try:
        with torch.device(device):
            value = eval(expr, scope)  # noqa: S307 - the user's own expression, like a REPL
    except Exception as exc:
        raise TargetError(
            f"--input {expr!r} failed: {type(exc).__name__}: {message_of(exc)}"
        ) from exc
    if isinstance(value, dict):
        odd = [k for k in value if not isinstance(k, str)]
        if odd:
            raise TargetError(
                f"--input {expr!r} is a dict with the key {odd[0]!r}: a dict's keys are the "
                "forward's keyword argument names (a tuple gives positional arguments)"
            )
    return value


@dataclass
class ChosenInput:
    """The input a trace uses and where it came from, as the panel shows it."""

    value: Any
    described: str  # for people: "guessed from the first layer stem.0 (Conv2d): tensor [...]"
    kind: str  # "typed" | "factory" | "example" | "call" | "guess"
    expr: Optional[str] = None  # an expression that gives it again (an input box starts here)
    # for an input given as a value: an expression of its kind and shape (not its values), for
    # an input box's placeholder
    template: Optional[str] = None


def choose_input(
    built: Built,
    device: str = "cpu",
    typed: Optional[str] = None,
    call_in_file: Optional[FoundInput] = None,
) -> ChosenInput:
    """The input for a built target, the same for the editor and the CLI: the typed
    expression; else the example its factory returned; else `example_input_array`; else none
    for a `forward(self)`; else a call of the target with literal arguments found in the
    file; else a guess: a transformers model's from its config (hf_inputs), any other's from
    its first layer (for several arguments, the template when a plain forward accepts it).
    TargetError for a typed expression that fails; inputs.GuessError (with a template to
    start from) when nothing fits."""
    from .hf_inputs import hf_input
    from .inputs import (
        HOW_TO,
        Guess,
        GuessError,
        describe_input,
        first_that_runs,
        guess,
        how_to,
        input_expression,
        nothing_said,
        takes_nothing,
        unknown_names,
    )

    if typed:
        value = eval_input(typed, built.module, device)
        if isinstance(value, dict):
            unknown, takes = unknown_names(built.model, value)
            if unknown:
                raise TargetError(
                    f"--input {typed!r} is a dict with the key {unknown[0]!r}: the forward takes "
                    f"no argument of that name (it takes: {', '.join(takes) or 'none'}); a "
                    "dict's keys are its keyword argument names"
                )
        return ChosenInput(value, typed, "typed", typed)
    # an input given as a value: said with what it is; an expression of its kind and shape
    # is the input box's placeholder (not its start: it would trace other values)
    if built.example is not None:
        value = built.example
        said = f"from {built.name}(): {describe_input(value)}"
        return ChosenInput(value, said, "factory", template=input_expression(value))
    example = getattr(built.model, "example_input_array", None)
    if example is not None:
        said = f"example_input_array: {describe_input(example)}"
        return ChosenInput(example, said, "example", template=input_expression(example))
    if takes_nothing(built.model):  # forward(self): its own signature says the input
        return ChosenInput((), nothing_said(built.model), "example", "()")
    if call_in_file:
        expr, factory = call_in_file
        said = f"as {factory}() returns it" if factory else "as the file calls it"
        try:
            value = eval_input(expr, built.module, device)
            return ChosenInput(value, f"{expr}, {said}", "call", expr)
        except TargetError as exc:
            print(
                f"torchscope: the input {expr} found in the file failed: " + joined_lines(str(exc)),
                file=sys.stderr,
            )
    made = hf_input(built.model)  # a transformers model: from its config
    if made is not None:
        value = made.value()
        described = f"guessed from {made.source}: {describe_input(value)}"
        return ChosenInput(value, described, "guess", made.expr)
    try:
        g = guess(built.model)
    except GuessError as exc:
        # several arguments: their template is traced when the model accepts it
        if exc.source is None or exc.guess is None:
            raise
        if first_that_runs(built.model, [exc.guess], device) is None:
            raise
        g = Guess(exc.guess, exc.source)
    try:
        with torch.device(device):
            value = eval(g.expr, {"torch": torch})  # noqa: S307 - our own expression
    except Exception as exc:  # a layer sized to nothing (`nn.Embedding(0, 4)`): no input fits
        ids = g.expr.startswith("torch.randint")  # (token ids: an example of ids, no image)
        raise GuessError(
            f"the input guessed from {g.source}, {g.expr}, can't be made "
            f"({one_line(exc)}); {how_to('torch.randint(0, 1000, (1, 16))') if ids else HOW_TO}",
            g.expr,
            g.source,
        ) from None
    return ChosenInput(value, f"guessed from {g.source}: {describe_input(value)}", "guess", g.expr)


def another_guess(
    built: Built, chosen: ChosenInput, device: str = "cpu", seed: Optional[int] = None
) -> Optional[ChosenInput]:
    """After a trace with the guessed input raised: the first of the usual other sizes the
    model's forward accepts (a Linear after flatten may fix the image size the first Conv2d
    can't say), or None. The editor and the CLI both try it. With `seed`, its values are
    drawn right after seeding, as a first input is: the same expression then gives the same
    values however many sizes were tried first (a comparison's other side is traced with it)."""
    from .hf_inputs import is_hf_model
    from .inputs import alternatives, describe_input, first_that_runs

    # (a transformers model's input is made from its config: its first layer knows less)
    if chosen.kind != "guess" or is_hf_model(built.model):
        return None
    fits = first_that_runs(built.model, alternatives(built.model), device)
    if fits is None:
        return None
    if seed is not None:
        torch.manual_seed(seed)
    with torch.device(device):
        value = eval(fits, {"torch": torch})  # noqa: S307 - our own expression
    source = chosen.described.split(": ", 1)[0]  # "guessed from the first layer …"
    described = f"{source}, a size the model accepts: {describe_input(value)}"
    return ChosenInput(value, described, "guess", fits)


def input_call_in_file(
    path: Path, name: str, text: Optional[str] = None, model_class: bool = False
) -> Optional[FoundInput]:
    """The input of a call of `name` with literal arguments in the file (static analysis:
    `model(torch.randn(2, 64))`, or an example a factory returns beside the model, with the
    factory's name). `model_class`: `name` imported as an nn.Module class (`Net(8)` builds
    it)."""
    from .server import calls_in_file

    project, info = _parsed(path, text)
    if info is None:
        return None
    return calls_in_file.found_input(project, info, name, model_class)


def ctor_call_in_file(
    path: Path, name: str, text: Optional[str] = None, model_class: bool = False
) -> Any:
    """How the file itself builds `name` (a `calls_in_file.CtorCall`: `Wide(12)` in `main()` →
    "12", line 41), or None (static analysis; `model_class`: as for input_call_in_file)."""
    from .server import calls_in_file

    _, info = _parsed(path, text)
    return calls_in_file.ctor_call(info, name, model_class) if info is not None else None


def is_model_class(obj: Any) -> bool:
    """An nn.Module class (what a file imports can be told so only once it is imported)."""
    return isinstance(obj, type) and issubclass(obj, nn.Module)


def _parsed(path: Path, text: Optional[str]) -> tuple[Any, Any]:
    """The file parsed for static analysis, in a project rooted at its folder: (the
    `find_targets.Project`, its `FileInfo` or None when it does not parse)."""
    from .server import find_targets
    from .server.runner_client import site_folders

    folder = path.resolve().parent
    project = _projects.get(folder)
    if project is None:  # (one per folder, for the process: its parsed files are cached)
        project = _projects[folder] = find_targets.Project((folder,), library_roots=site_folders())
    return project, project.load(path, text)


_projects: dict[Path, Any] = {}  # folder → its find_targets.Project (see _parsed)


def call_arguments(
    built: Built, device: str = "cpu", input_expr: Optional[str] = None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`choose_input`'s value as call arguments (without a call found in the file)."""
    return as_call(choose_input(built, device, input_expr).value, built.model)


def as_call(value: Any, model: Optional[nn.Module] = None) -> tuple[tuple, dict]:
    """An example input to call arguments: a tensor, a tuple of positionals or a dict of
    keywords. A dict names `model`'s positional-only parameters too (`forward(self, x, /, *,
    t)` takes no tuple and no keyword `x`): those it names are given by position."""
    if isinstance(value, dict):
        return by_name(value, model)
    if isinstance(value, tuple):
        return value, {}
    if isinstance(value, list) and not all(isinstance(v, (int, float)) for v in value):
        if model is None or fits_positionally(model, len(value)):
            return tuple(value), {}  # (spread, as Lightning spreads an example_input_array)
        return (value,), {}  # `forward(self, xs)` given [a, b]: the list is its one argument
    return (value,), {}
