"""Load a model target `FILE.py:NAME` without running the file as `__main__`."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

import torch
from torch import nn


class TargetError(Exception):
    """A target that cannot be loaded or built; the message is one line for the user."""


@dataclass
class Built:
    model: nn.Module
    example: Optional[Any]  # what the target itself supplied as input, if anything
    module: ModuleType  # the user's imported file (namespace for --input expressions)


def split_target(target: str) -> tuple[Path, str]:
    file, sep, name = target.rpartition(":")
    if not sep or not file or not name:
        raise TargetError(f"target {target!r} must look like FILE.py:NAME")
    return Path(file), name


def module_name_for(path: Path) -> tuple[str, Path]:
    """The dotted name of a file inside its package tree, and the folder to put on sys.path."""
    path = path.resolve()
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), folder


def import_file(path: Path, source: Optional[str] = None) -> ModuleType:
    """Import `path` under its dotted package name, so relative imports work and
    `if __name__ == "__main__":` does not run. `source` replaces the file's text
    (an editor's unsaved buffer)."""
    if not path.exists():
        raise TargetError(f"no such file: {path}")
    name, root = module_name_for(path)
    if str(root) not in sys.path:  # (the runner puts it first itself: _own_folder_first)
        sys.path.insert(0, str(root))
    if "." in name:
        importlib.import_module(name.rpartition(".")[0])  # the parent package, for relative imports
    spec = importlib.util.spec_from_file_location(name, str(path.resolve()))
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    old_argv = sys.argv
    sys.argv = [str(path)]
    sys.modules[name] = module
    try:
        if source is None:
            spec.loader.exec_module(module)
        else:
            code = compile(source, str(path.resolve()), "exec")
            exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.argv = old_argv
    return module


def build(
    target: str, device: str = "cpu", source: Optional[str] = None, ctor_args: Optional[str] = None
) -> Built:
    """Import the file and build the model named by `target` on `device`.

    `ctor_args` is call-argument text for a class that needs them (`"10, hidden=64"`)."""
    path, name = split_target(target)
    module = import_file(path, source)
    if not hasattr(module, name):
        raise TargetError(f"{path.name} has no name {name!r}")
    obj = getattr(module, name)
    with torch.device(device):
        if ctor_args and inspect.isclass(obj):
            model, example = _construct(obj, name, ctor_args, module), None
        else:
            model, example = _instantiate(obj, name)
    if device != "cpu" and not _on_device(model, device):
        model = model.to(device)
    return Built(model, example, module)


def _construct(cls: type, name: str, ctor_args: str, module: ModuleType) -> nn.Module:
    scope = {**module.__dict__, "torch": torch, "nn": nn, "_cls": cls}
    try:
        model = eval(f"_cls({ctor_args})", scope)  # noqa: S307 - the user's own arguments
    except Exception as exc:
        raise TargetError(f"{name}({ctor_args}) failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, nn.Module):
        raise TargetError(f"{name}({ctor_args}) is not an nn.Module")
    return model


class NeedsConstructorArgs(TargetError):
    """The class's constructor has required parameters."""


def _instantiate(obj: Any, name: str) -> tuple[nn.Module, Optional[Any]]:
    if isinstance(obj, nn.Module):
        return obj, None
    if inspect.isclass(obj):
        if not issubclass(obj, nn.Module):
            raise TargetError(f"{name} is a class but not an nn.Module subclass")
        try:
            inspect.signature(obj).bind()
        except TypeError as exc:
            raise NeedsConstructorArgs(
                f"{name}() needs constructor arguments ({exc}); "
                "point at a factory function that builds it instead"
            ) from exc
        return obj(), None
    if callable(obj):
        try:
            inspect.signature(obj).bind()
        except (TypeError, ValueError) as exc:
            raise TargetError(f"{name} must be callable with no arguments ({exc})") from exc
        out = obj()
        if isinstance(out, nn.Module):
            return out, None
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], nn.Module):
            return out[0], out[1]
        raise TargetError(
            f"{name}() returned {type(out).__name__}, expected a model or (model, example_input)"
        )
    raise TargetError(f"{name} is a {type(obj).__name__}, not an nn.Module, class or factory")


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
            return eval(expr, scope)  # noqa: S307 - the user's own expression, like a REPL
    except Exception as exc:
        raise TargetError(f"--input {expr!r} failed: {type(exc).__name__}: {exc}") from exc


def call_arguments(
    built: Built, device: str = "cpu", input_expr: Optional[str] = None
) -> tuple[tuple, dict]:
    """The model's call arguments: the input expression, else the example the target
    supplied, else the model's own (`inputs.example_input`; raises NoInputError)."""
    from .inputs import example_input

    if input_expr:
        value = eval_input(input_expr, built.module, device)
    elif built.example is not None:
        value = built.example
    else:
        value = example_input(built.model, device)
    return as_call(value)


def as_call(value: Any) -> tuple[tuple, dict]:
    """An example input to call arguments: a tensor, a tuple of positionals or a dict of keywords."""
    if isinstance(value, dict):
        return (), dict(value)
    if isinstance(value, tuple):
        return value, {}
    if isinstance(value, list) and not all(isinstance(v, (int, float)) for v in value):
        return tuple(value), {}
    return (value,), {}
