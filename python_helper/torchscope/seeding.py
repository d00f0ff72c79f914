"""Random numbers a build draws, seeded by the line of code that draws them.

A model built from a file gets random weights; two builds of two versions of the file
(Compare with HEAD, `torchscope diff`) must get the same weights wherever the code is the
same, so that values differ only where the code does. One seed before the build is not
enough: a layer added first in `__init__` draws its weights first and shifts the stream, so
every weight after it (and an `example_input_array` drawn last) would differ. Here each
random call is seeded from the text of the innermost line outside torch that made it (the
user's `nn.Linear(16, 4)`, a library's `module.weight.data.normal_(…)`), the call's name,
the shape it fills and how many times that key came before: an unchanged line draws the
same numbers wherever it moved. A seed the user's code sets (`torch.manual_seed(1)` in a
factory) takes the line's place from then on: another seed, other weights, and two copies
built after the same seed alike (only a draw's call, shape and order since that seed count).
"""

from __future__ import annotations

import hashlib
import io
import linecache
import sys
import tokenize
import weakref
from typing import Any, Optional

import torch
from torch.overrides import TorchFunctionMode

from .sites import _PKG_DIR, _TORCH_DIR

# torch calls that draw from the default generator (an nn.init function is one call: its
# own draws run under its seed)
RANDOM = frozenset(
    {
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "normal",
        "bernoulli",
        "multinomial",
        "poisson",
        "uniform_",
        "normal_",
        "bernoulli_",
        "random_",
        "exponential_",
        "cauchy_",
        "log_normal_",
        "geometric_",
        "trunc_normal_",
        "kaiming_uniform_",
        "kaiming_normal_",
        "xavier_uniform_",
        "xavier_normal_",
        "orthogonal_",
        "sparse_",
    }
)


class SeedByLine(TorchFunctionMode):
    """While a model is built: each random call seeded as the module docstring says (a call
    given its own `generator=` is left alone). `torch.manual_seed` is the user's own while
    it is on: a seed the build sets is told apart from any other change of the state."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}
        self.base = 0  # the seed set before the build, or the one the user's code set since
        self.users = False  # whether the user's code set it
        self.saved: list[tuple[Any, Any]] = []  # (torch or torch.random, its manual_seed)
        self.depth = 0  # modes on the stack below this one
        self.seeds: dict[str, int] = {}
        self.used: set[int] = set()
        # (kept after the build: a user's module may hold `from torch import manual_seed`)
        self.original = torch.manual_seed

    def __enter__(self) -> SeedByLine:
        linecache.checkcache()  # (a file saved since an earlier build: its lines as now)
        self.base = torch.initial_seed()
        self.depth = torch._C._len_torch_function_stack()
        for owner in (torch, torch.random):
            self.saved.append((owner, owner.manual_seed))
            owner.manual_seed = self._users_seed  # type: ignore[assignment]
        return super().__enter__()  # type: ignore[return-value]

    def __exit__(self, *exc: Any) -> None:
        for owner, manual_seed in self.saved:
            owner.manual_seed = manual_seed
        self.saved.clear()
        # the function-mode stack as it was before the build: a mode the user's code entered
        # and never left would otherwise be popped in this one's place, and this one stay on
        # (reseeding every draw of the trace after it)
        from torch.overrides import _pop_mode

        while torch._C._len_torch_function_stack() > self.depth:
            _pop_mode()

    def _users_seed(self, seed: int) -> Any:
        """The user's own `torch.manual_seed(n)`: its seed counts, and what is drawn after it
        no longer depends on the lines (twins seeded alike, then built on two lines, must
        come out alike): only on the calls, their shapes and order since."""
        self.base, self.users = int(seed), True
        self.counts.clear()
        return self.original(seed)

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in RANDOM and kwargs.get("generator") is None:
            line = "" if self.users else _line(sys._getframe(1))
            key = f"{self.base}\0{line}\0{name}\0{_shape(args, kwargs)}"
            n = self.counts.get(key, 0)
            self.counts[key] = n + 1
            _manual_seed(self._seed_of(f"{key}\0{n}"))
        return func(*args, **kwargs)

    def _seed_of(self, key: str) -> int:
        """The seed of a key: the CPU generator reads 32 bits of it, so two keys of one build
        never share one (their draws would be the same numbers); one key, one seed."""
        seed = self.seeds.get(key)
        if seed is None:
            seed, salt = _seed(key), 0
            while seed in self.used:
                salt += 1
                seed = _seed(f"{key}\0{salt}")
            self.seeds[key] = seed
            self.used.add(seed)
        return seed


def _manual_seed(seed: int) -> None:
    """torch.manual_seed without its cost on a machine without CUDA in use (it queues the
    CUDA seed with a formatted stack each time: ~0.1 ms a call)."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)


def _line(frame: Optional[Any]) -> str:
    """The code of the innermost line outside torch on the stack; "" when torchscope's own
    code made the call (a model class of torch's built directly)."""
    while frame is not None and frame.f_code.co_filename.startswith(_TORCH_DIR):
        frame = frame.f_back
    if frame is None or frame.f_code.co_filename.startswith(_PKG_DIR):
        return ""
    file = frame.f_code.co_filename
    first, last = _call_lines(frame)
    text = "\n".join(linecache.getline(file, n, frame.f_globals) for n in range(first, last + 1))
    return _code(text) if text.strip() else f"{file}:{frame.f_lineno}"


# code → its instructions' source positions (weakly: a runner imports the user's files anew)
_positions: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


def _call_lines(frame: Any) -> tuple[int, int]:
    """The lines of the call the frame is making: a call wrapped over lines (`nn.Linear(\n
    8, 16\n)`, as a formatter writes a long one) is keyed by all of them, as on one line."""
    line = frame.f_lineno
    code = frame.f_code
    positions = _positions.get(code)
    if positions is None:
        try:
            positions = _positions[code] = list(code.co_positions())
        except (AttributeError, ValueError):  # (Python 3.10 has none)
            positions = _positions[code] = []
    at = frame.f_lasti // 2
    if at < len(positions):
        first, last = positions[at][0], positions[at][1]
        if first is not None and last is not None and first <= line <= last <= first + 50:
            return first, last
    return line, line


def _code(line: str) -> str:
    """A line's tokens without comments, spacing or a trailing comma: a formatter's edit is
    no edit (a line that opens a bracket it does not close: its tokens up to the end)."""
    kept: list[str] = []
    skip = (
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.ENDMARKER,
        tokenize.INDENT,
        tokenize.DEDENT,
    )
    try:
        for t in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if t.type not in skip:
                kept.append(t.string)
    except (tokenize.TokenError, SyntaxError):
        pass  # (an open bracket at the end, a string going on below: what came before counts)
    # (a trailing comma a formatter adds when it wraps a call: `16,\n)` is `16)`)
    kept = [
        t for t, after in zip(kept, [*kept[1:], ""]) if t != "," or after not in (")", "]", "}")
    ]
    return " ".join(kept) if kept else line.strip()


def _shape(args: tuple, kwargs: dict) -> str:
    """The shape a call fills: its tensor's (nn.init passes it as `tensor=`), else its sizes."""
    first = args[0] if args else kwargs.get("tensor", kwargs.get("input"))
    if isinstance(first, torch.Tensor):
        return str(tuple(first.shape))
    return str(tuple(a for a in args if isinstance(a, (int, tuple, list, torch.Size))))


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little")
