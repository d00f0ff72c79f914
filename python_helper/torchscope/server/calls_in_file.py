"""What the file itself calls its model with: the input of a call of the model
(`model(torch.randn(2, 64))`) and the arguments it builds it with (`Encoder(24, depth=3)` in
`main()`), read without running anything — literals, the file's constants, classes and
config classes, names it binds once to such values, argparse's defaults for `args.X`.
Static analysis only: nothing is executed and torch is never imported."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import NamedTuple, Optional

from ..definitions import dotted
from .find_targets import FileInfo, Project

_ALLOWED_BUILTINS = {
    "True",
    "False",
    "None",
    "dict",
    "tuple",
    "list",
    "range",
    "len",
    "int",
    "float",
}


def _literal(expr: ast.expr, importable: set[str]) -> bool:
    """Only constants, and names bound by imports (`torch`, `np`) or builtins."""
    for node in ast.walk(expr):
        if (
            isinstance(node, ast.Name)
            and node.id not in importable
            and node.id not in _ALLOWED_BUILTINS
        ):
            return False
        if isinstance(node, (ast.Starred, ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield)):
            return False
    return True


class FoundInput(NamedTuple):
    """An input the file gives its model: the expression, and the function that returns it
    beside the model (`build` for `return ConvNet(), torch.randn(…)`; None: a call of it)."""

    text: str
    factory: Optional[str] = None


def found_input(
    project: Project, info: FileInfo, target: str, model_class: bool = False
) -> Optional[FoundInput]:
    """The input of a call of `target` with literal arguments in the file, such as
    `model(torch.randn(2, 64))`, `Net()(torch.zeros(1, 3, 32, 32))`, or `m = Net(); m(x)`, or
    the example a factory returns beside it (`model_class`: the import found `target` a model
    class: `Net(8)` builds it)."""
    importable = set(info.imports)
    is_class = model_class or target in info.classes or imported_model_class(project, info, target)
    builds = is_class or target in info.functions  # `target(...)` makes a model
    callers: set[str] = set() if builds else {target}  # names that hold the model
    stand_ins = _StandIns.of(info)
    for node in ast.walk(info.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and builds:
            if dotted(node.value.func) == target:
                callers.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(info.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        direct = isinstance(func, ast.Name) and func.id in callers
        built = builds and isinstance(func, ast.Call) and dotted(func.func) == target
        if not (direct or built):
            continue
        if not node.args and not node.keywords:
            continue
        found = _call_arguments(node, importable, info, stand_ins, only_values=False)
        if found is None or not all(_input_calls(value, info) for _, _, value in found[0]):
            continue
        seg = [(text, value) for key, text, value in found[0] if key is None]
        kw = [(key, text) for key, text, _ in found[0] if key is not None]
        if seg and kw:
            # together, one dict: the positional ones named after the forward's parameters
            names = _positional_names(info, target)
            if (
                names is None
                or len(seg) > len(names)
                or set(names[: len(seg)]) & {k for k, _ in kw}
            ):
                continue
            kw = [(n, text) for n, (text, _) in zip(names, seg)] + kw
            seg = []
        if kw:
            return FoundInput("{" + ", ".join(f"{k!r}: {v}" for k, v in kw) + "}")
        if len(seg) == 1:
            text, value = seg[0]
            # one dict, list or tuple is one argument, not keywords or several (`as_call`)
            return FoundInput(f"({text},)" if _is_container(value) else text)
        return FoundInput("(" + ", ".join(text for text, _ in seg) + ")")
    if is_class:
        return _returned_example(info, target, importable)
    return None


def _positional_names(info: FileInfo, target: str) -> Optional[list[str]]:
    """The names of the positional parameters of the forward of `target` (a class of the
    file, or a name the file binds once to one: `model = Net()`), past `self`; None when the
    file does not define that forward."""
    cls = info.classes.get(target)
    if cls is None and target in info.instances:
        value = info.instances[target].value
        if isinstance(value, ast.Call):
            cls = info.classes.get(dotted(value.func) or "")
    if cls is None:
        return None
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "forward":
            return [a.arg for a in (*stmt.args.posonlyargs, *stmt.args.args)][1:]
    return None


class CtorCall(NamedTuple):
    """How the file itself builds a target: the call's arguments as text, its line, and
    whether argparse defaults stand in for `args.X` in them."""

    text: str
    line: int
    argparse_defaults: bool = False
    # False: arguments that can't be evaluated here (`Net(len(vocab))`): as written, for the
    # user to start from
    usable: bool = True


def imported_model_class(project: Project, info: FileInfo, target: str) -> bool:
    """Whether `target` is a model class the file imports (`from layers import Encoder`,
    transformers' `GPT2Model`): `Encoder(24)` builds it, as a class the file defines. An
    imported name the project can't tell is a model class is not (a factory, an instance:
    `make(24)` may be the model's call)."""
    return target in info.imports and project.refers_to_module_class(info, target)


def ctor_call(info: FileInfo, target: str, model_class: bool = False) -> Optional[CtorCall]:
    """How the file itself builds class `target`, or calls factory `target` (`model_class`:
    the import found it a model class, whatever the file alone tells): its first call
    with arguments (anywhere: in `main()`, under the main guard) whose arguments can be
    evaluated in the file's namespace (`_call_arguments`): `Wide(12)` → "12",
    `Net(Config(dim=8))` → "Config(dim=8)", `Net(args.dim)` with `add_argument("--dim",
    default=64)` → "64". Else the first call's arguments as written, not usable
    (`Net(len(vocab))`); None when the file never calls it with arguments."""
    if not (model_class or target in info.classes or target in info.functions):
        return None
    known = set(info.imports) | set(info.classes) | set(info.functions) | _plain_names(info)
    stand_ins = _StandIns.of(info)
    called = _called_constructions(info.tree)
    found: list[tuple[CtorCall, bool]] = []
    for node in ast.walk(info.tree):
        if not isinstance(node, ast.Call) or dotted(node.func) != target:
            continue
        if not (node.args or node.keywords):
            continue
        arguments = _call_arguments(node, known, info, stand_ins, only_values=True)
        if arguments is not None:
            parts = [f"{key}={text}" if key else text for key, text, _ in arguments[0]]
            found.append((CtorCall(", ".join(parts), node.lineno, arguments[1]), node in called))
        else:
            written = _written_arguments(node, info.text)
            if written:
                found.append((CtorCall(written, node.lineno, usable=False), node in called))
    # the first usable one whose instance the file calls (the input the file gives fits
    # it), else the first usable one, else the first as written
    best = min(found, key=lambda f: (not f[0].usable, not f[1], f[0].line)) if found else None
    return best[0] if best else None


def _called_constructions(tree: ast.AST) -> set[ast.Call]:
    """The calls whose result the file calls in turn: `Net(24)(x)`, or `m = Net(24)` and
    `m(x)` / `m.forward(x)` (by name, wherever the name is called)."""
    bound: dict[str, list[ast.Call]] = {}
    called: set[ast.Call] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    bound.setdefault(t.id, []).append(node.value)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "forward":
                func = func.value
            if isinstance(func, ast.Call):
                called.add(func)
            elif isinstance(func, ast.Name):
                names.add(func.id)
    for name in names:
        called.update(bound.get(name, ()))
    return called


def _written_arguments(node: ast.Call, text: str) -> Optional[str]:
    """A call's arguments as the file writes them (`vocab_size=len(tok), dim=args.dim`)."""
    parts: list[str] = []
    for arg in node.args:
        parts.append(ast.get_source_segment(text, arg) or "")
    for k in node.keywords:
        value = ast.get_source_segment(text, k.value) or ""
        parts.append(f"{k.arg}={value}" if k.arg else f"**{value}")
    return ", ".join(parts) if all(parts) else None


@dataclass
class _StandIns:
    """What may stand in for a name in a call's arguments: the file's argparse options with
    literal defaults (for `args.X`, `args` bound to a parser's result), and the names bound
    exactly once to an expression in the scope a call reads them from (`x = torch.randn(2,
    64)`, `cfg = Config(dim=8)`)."""

    defaults: dict[str, ast.expr]
    parsed: set[str]
    scopes: _Scopes

    @staticmethod
    def of(info: FileInfo) -> _StandIns:
        defaults = _argparse_defaults(info)
        parsed = _parsed_args_names(info) if defaults else set()
        return _StandIns(defaults, parsed, _Scopes(info.tree))


class _Scope:
    """One scope's bindings (a module, function, lambda, class or comprehension; nested
    scopes have their own): how often it binds each name, by any statement, and the value of
    each `name = expr`."""

    __slots__ = ("parent", "is_class", "counts", "values")

    def __init__(self, parent: Optional[_Scope], is_class: bool = False) -> None:
        self.parent, self.is_class = parent, is_class
        self.counts: dict[str, int] = {}
        self.values: dict[str, ast.expr] = {}

    def bind(self, name: str, times: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + times


_NEW_SCOPE = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class _Scopes:
    """Every scope of a file and the scope each call is in, for reading a name as Python
    does: in the innermost function that binds it, else an enclosing one, else the module
    (a class body's names are not seen from its methods)."""

    def __init__(self, tree: ast.Module) -> None:
        self.of_call: dict[int, _Scope] = {}
        self.module = _Scope(None)
        self._visit(tree, self.module)

    def _visit(self, node: ast.AST, scope: _Scope) -> None:
        for child in ast.iter_child_nodes(node):
            self._visit_one(child, scope)

    def _visit_one(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope.bind(node.name)
            for outside in (*node.decorator_list, *_outside_parts(node)):
                self._visit_one(outside, scope)
            inner = _Scope(scope, isinstance(node, ast.ClassDef))
            if not isinstance(node, ast.ClassDef):
                _bind_arguments(node.args, inner)
            for stmt in node.body:
                self._visit_one(stmt, inner)
            return
        if isinstance(node, _NEW_SCOPE):
            inner = _Scope(scope)
            if isinstance(node, ast.Lambda):
                _bind_arguments(node.args, inner)
            self._visit(node, inner)
            return
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            scope.bind(node.id)
        elif isinstance(node, ast.alias):
            scope.bind((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                scope.bind(name, 2)  # another scope's name: whatever was last stored there
        elif isinstance(node, ast.ExceptHandler) and node.name:
            scope.bind(node.name)
        elif isinstance(node, ast.Call):
            self.of_call[id(node)] = scope
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                scope.values[target.id] = node.value
        self._visit(node, scope)

    def resolve(self, name: str, scope: Optional[_Scope]) -> Optional[tuple[ast.expr, _Scope]]:
        """The value `name` has where `scope` reads it, when the scope that binds it binds it
        exactly once, by `name = expr`; with that scope (the value's own names are read
        there). None when no scope binds it or it may hold anything."""
        first = scope
        while scope is not None:
            if scope.is_class and scope is not first:
                scope = scope.parent  # a class body's names are not its methods'
                continue
            count = scope.counts.get(name)
            if count is not None:
                value = scope.values.get(name)
                return (value, scope) if count == 1 and value is not None else None
            scope = scope.parent
        return None


def _outside_parts(node: ast.AST) -> list[ast.AST]:
    """What a def or class evaluates in the scope around it: defaults, annotations, bases."""
    if isinstance(node, ast.ClassDef):
        return [*node.bases, *node.keywords]
    args = node.args  # type: ignore[attr-defined]
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


def _bind_arguments(args: ast.arguments, scope: _Scope) -> None:
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        scope.bind(a.arg)
    for a in (args.vararg, args.kwarg):
        if a is not None:
            scope.bind(a.arg)


def _call_arguments(
    node: ast.Call, known: set[str], info: FileInfo, stand_ins: _StandIns, only_values: bool
) -> Optional[tuple[list[tuple[Optional[str], str, ast.expr]], bool]]:
    """Each argument of the call as (keyword or None, source text, expression), `args.X`
    filled with argparse's defaults and names bound once with their values (`_StandIns`), and
    whether an argparse default was used; None when one can't be evaluated from `known` names
    (`only_values`: and calls nothing but constructors of values, `_safe_calls`)."""
    if not only_values and any(k.arg is None for k in node.keywords):
        return None  # **kwargs: no one input expression
    out: list[tuple[Optional[str], str, ast.expr]] = []
    filled = False
    scope = stand_ins.scopes.of_call.get(id(node))
    for keyword, value, spread in [(None, a, False) for a in node.args] + [
        (k.arg, k.value, k.arg is None) for k in node.keywords
    ]:
        value, changed, defaults = _stand_in(value, stand_ins, known, scope)
        # what stood in for a name came from elsewhere in the file: it may only make values
        # (`x = torch.randn(2, 64)`, never `dataset = MNIST(root, download=True)`)
        if not _literal(value, known) or (
            (only_values or changed) and not _safe_calls(value, info)
        ):
            return None
        text = ast.unparse(value) if changed else ast.get_source_segment(info.text, value)
        if text is None:
            return None
        filled = filled or defaults
        out.append((keyword, f"**{text}" if spread else text, value))  # (`**CONFIG`)
    return out, filled


def _is_container(value: ast.expr) -> bool:
    """A dict, list or tuple display, or a `dict(...)`, `list(...)`, `tuple(...)` call."""
    if isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
        return True
    return isinstance(value, ast.Call) and dotted(value.func) in ("dict", "list", "tuple")


def _argparse_defaults(info: FileInfo) -> dict[str, ast.expr]:
    """`dest` → literal default of the file's `parser.add_argument(...)` calls (`--hidden-size`
    → hidden_size; `store_true` → False); a dest given two different defaults is left out."""
    imports = set(info.imports)
    out: dict[str, ast.expr] = {}
    clash: set[str] = set()
    for node in ast.walk(info.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        names = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        if not names or len(names) != len(node.args):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        dest_node = kw.get("dest")
        if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
            dest = dest_node.value
        else:
            long = [n for n in names if n.startswith("--")]
            short = [n for n in names if n.startswith("-")]
            dest = (long or short or names)[0].lstrip("-").replace("-", "_")
        default = _argparse_default(kw, imports)
        if default is None:
            continue
        if dest in out and ast.dump(out[dest]) != ast.dump(default):
            clash.add(dest)
        out[dest] = default
    for dest in clash:
        del out[dest]
    return out


def _argparse_default(kw: dict[str, ast.expr], imports: set[str]) -> Optional[ast.expr]:
    action = kw.get("action")
    flag = action.value if isinstance(action, ast.Constant) else None
    if "default" not in kw:
        return ast.Constant(flag == "store_false") if flag in _FLAGS else None
    value = kw["default"]
    if not _literal(value, imports):
        return None
    kind = kw.get("type")
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and kind is not None:
        try:  # argparse passes a string default through `type`
            if dotted(kind) == "int":
                return ast.Constant(int(value.value))
            if dotted(kind) == "float":
                return ast.Constant(float(value.value))
        except ValueError:
            return None
    return value


_FLAGS = ("store_true", "store_false")


def _parsed_args_names(info: FileInfo) -> set[str]:
    """Names bound to a parser's result: `args = parser.parse_args()`, `args, _ =
    parser.parse_known_args()`, and `args = get_args()` of a function of the file that
    returns one (`return parser.parse_args()`, or a name it bound so)."""
    names: set[str] = set()
    parsing = _parsing_functions(info)
    for node in ast.walk(info.tree):
        if isinstance(node, ast.Call):
            _passed_parsed(node, info, parsing, names)
        if not isinstance(node, ast.Assign):
            continue
        value = node.value
        func = value.func if isinstance(value, ast.Call) else None
        for t in node.targets:
            if isinstance(t, ast.Name) and (
                _parses(value) or (isinstance(func, ast.Name) and func.id in parsing)
            ):
                names.add(t.id)
            elif (
                isinstance(func, ast.Attribute)
                and func.attr == "parse_known_args"
                and isinstance(t, ast.Tuple)
                and t.elts
                and isinstance(t.elts[0], ast.Name)
            ):
                names.add(t.elts[0].id)
    return names


def _passed_parsed(call: ast.Call, info: FileInfo, parsing: set[str], names: set[str]) -> None:
    """`main(parser.parse_args())`, `main(get_args())`: the parameter of the file's function
    that takes the parser's result, by position or keyword, joins `names`."""
    fn = info.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if fn is None:
        return

    def parsed(value: ast.expr) -> bool:
        return _parses(value) or (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in parsing
        )

    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    for i, value in enumerate(call.args):
        if i < len(params) and parsed(value):
            names.add(params[i])
    for k in call.keywords:
        if k.arg is not None and parsed(k.value):
            names.add(k.arg)


def _parsing_functions(info: FileInfo) -> set[str]:
    """The file's functions that return a parser's result: `return p.parse_args()`,
    `return p.parse_known_args()[0]`, or `return args` of an `args = p.parse_args()`."""
    out: set[str] = set()
    for fn in info.functions.values():
        bound: set[str] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and _parses(node.value):
                bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if _parses(value) or (isinstance(value, ast.Name) and value.id in bound):
                    out.add(fn.name)
    return out


def _parses(expr: ast.expr) -> bool:
    """`….parse_args()`, or `….parse_known_args()[0]`."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        if expr.slice.value != 0:
            return False
        expr, attr = expr.value, "parse_known_args"
    else:
        attr = "parse_args"
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == attr
    )


def _stand_in(
    expr: ast.expr, stand_ins: _StandIns, known: set[str], scope: Optional[_Scope]
) -> tuple[ast.expr, bool, bool]:
    """`expr`, read in `scope`, with each `args.X` replaced by X's argparse default and each
    name bound once there by its value (theirs in turn, read where that value is, a few levels
    deep); whether anything was, whether a default."""
    changed = defaults = False

    class Fill(ast.NodeTransformer):
        depth = 0
        where = scope

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            nonlocal changed, defaults
            if isinstance(node.value, ast.Name) and node.value.id in stand_ins.parsed:
                default = stand_ins.defaults.get(node.attr)
                if default is not None:
                    changed = defaults = True
                    return copy.deepcopy(default)
            return self.generic_visit(node)

        def visit_Name(self, node: ast.Name) -> ast.AST:
            nonlocal changed
            if node.id in known or self.depth >= _STAND_IN_DEPTH:
                return node
            found = stand_ins.scopes.resolve(node.id, self.where)
            if found is None:
                return node
            changed = True
            outer, self.where = self.where, found[1]
            self.depth += 1
            try:
                return self.visit(copy.deepcopy(found[0]))
            finally:
                self.depth -= 1
                self.where = outer

    filled = Fill().visit(copy.deepcopy(expr))
    return (filled, True, defaults) if changed else (expr, False, False)


_STAND_IN_DEPTH = 3  # `x = torch.randn(batch, DIM)` with `batch = 4`: two levels


def _safe_calls(expr: ast.expr, info: FileInfo) -> bool:
    """Calls that only build values: the file's own classes (a config dataclass),
    configuration classes (`GPT2Config(n_layer=2)`), builtins, torch.nn's classes
    (`act=nn.GELU()`), torch's tensor factories (`torch.randn`) — never a function that may
    read a checkpoint or a data set (`Net(torch.load(...))`, `Net(build_vocab(data))`,
    `AutoConfig.from_pretrained(...)`). Names are judged as what the file's imports make
    them (`from os import system as RunConfig` is `os.system`)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and not _builds_a_value(node, info, for_input=False):
            return False
    return True


def _input_calls(expr: ast.expr, info: FileInfo) -> bool:
    """Calls an input written in the file's call of its model may make (the trace evaluates
    it): `_safe_calls`' and torch's and numpy's functions that only compute values
    (`torch.cat`, `torch.from_numpy`, `np.random.rand`), and a value's methods that only
    compute one (`torch.randn(2, 4).float()`) — never `os.system`, `torch.load`, `np.load`,
    an array's `tofile`, or anything reached through a dunder (`….__globals__`)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return False
        if isinstance(node, ast.Call) and not _builds_a_value(node, info, for_input=True):
            return False
    return True


def _builds_a_value(call: ast.Call, info: FileInfo, for_input: bool) -> bool:
    """One call of `_safe_calls` (or, `for_input`, of `_input_calls`), its arguments aside."""
    func = call.func
    name = dotted(func)
    if name is None:
        # a method of a value the expression makes (`torch.randn(2, 4).float()`)
        return for_input and isinstance(func, ast.Attribute) and func.attr in _VALUE_METHODS
    head = name.split(".", 1)[0]
    if head not in info.imports:
        if name in info.classes:
            return True
        # a builtin nothing in the file rebinds (`len`, `int`; not a `def int()`)
        return name in _ALLOWED_BUILTINS and name not in info.functions
    where, _, last = _imported_name(name, info).rpartition(".")
    if (where == "torch.nn" or where.startswith("torch.nn.")) and last[:1].isupper():
        return True
    if where == "torch" and last in (_INPUT_TORCH if for_input else _TENSOR_FACTORIES):
        return True
    if last[:1].isupper() and last.endswith(_CONFIG_CLASSES):  # GPT2Config(n_layer=2)
        return True
    if for_input and (
        (where == "numpy" and last in _NUMPY_VALUES)
        or where in ("numpy.random", "torch.nn.functional")  # (`F.one_hot(ids, 10)`)
    ):
        return True
    return False


# a value's methods an input may call: conversions, views and arithmetic of tensors and
# arrays (not `tofile`, `save`, `backward` …)
_VALUE_METHODS = frozenset(
    "float double half bfloat16 long int short bool byte to cpu cuda type type_as unsqueeze "
    "squeeze view view_as reshape reshape_as expand expand_as repeat repeat_interleave "
    "permute transpose t contiguous clone detach requires_grad_ flatten unflatten narrow "
    "select index_select chunk split numpy tolist astype abs neg exp log sqrt softmax mean "
    "sum add sub mul div matmul pow clamp masked_fill tril triu roll flip new_zeros new_ones "
    "new_full new_empty new_tensor normal_ uniform_ fill_ zero_ random_ bernoulli_".split()
)


def _imported_name(name: str, info: FileInfo) -> str:
    """`np.random.rand` as what it names: `numpy.random.rand` (`import numpy as np`; `rn`
    after `from torch import randn as rn`: `torch.randn`); a name no absolute import binds
    comes back as it is."""
    first, dot, rest = name.partition(".")
    imported = info.imports.get(first)
    if imported is None or imported.base is not None:
        return name
    full = imported.module if imported.attr is None else f"{imported.module}.{imported.attr}"
    return full + dot + rest


# numpy's (and every `numpy.random` function)
_NUMPY_VALUES = frozenset(
    "array asarray zeros ones full empty eye arange linspace logspace stack concatenate "
    "float32 float64 float16 int64 int32 uint8".split()
)


# torch functions that make a tensor from nothing but their arguments (not `torch.load`)
_TENSOR_FACTORIES = frozenset(
    "randn rand randint randperm zeros ones full empty eye arange linspace tensor as_tensor "
    "normal".split()
)
# and, for an input, those that compute a value from tensors given them
_INPUT_TORCH = _TENSOR_FACTORIES | frozenset(
    "logspace from_numpy cat concat concatenate stack hstack vstack zeros_like ones_like "
    "full_like empty_like rand_like randn_like randint_like device Size tril triu where "
    "complex polar".split()
)
# a configuration class's constructor only stores values (transformers' `GPT2Config`, a
# project's `ModelConfig`); `AutoConfig.from_pretrained(...)`, which downloads, is no class
_CONFIG_CLASSES = ("Config", "Configuration")


def _plain_names(info: FileInfo) -> set[str]:
    """Module-level names bound to plain values (`DIM = 64`, `SIZES = (3, 5)`)."""
    names: set[str] = set()
    for stmt in info.tree.body:
        if isinstance(stmt, ast.Assign) and _literal(stmt.value, set(info.imports)):
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            if isinstance(stmt.target, ast.Name) and _literal(stmt.value, set(info.imports)):
                names.add(stmt.target.id)
    return names


def _returned_example(info: FileInfo, target: str, importable: set[str]) -> Optional[FoundInput]:
    """The example a factory in the file returns beside a `target(...)` model, when it is made
    of literals: `return ConvNet(), torch.randn(1, 3, 32, 32)`."""
    for name, fn in info.functions.items():
        built = {
            t.id
            for node in ast.walk(fn)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and dotted(node.value.func) == target
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(fn):
            if not isinstance(node, ast.Return) or not isinstance(node.value, ast.Tuple):
                continue
            elts = node.value.elts
            if len(elts) != 2:
                continue
            model, example = elts
            makes = (isinstance(model, ast.Call) and dotted(model.func) == target) or (
                isinstance(model, ast.Name) and model.id in built
            )
            if makes and _literal(example, importable) and _input_calls(example, info):
                text = ast.get_source_segment(info.text, example)
                return FoundInput(text, name) if text else None
    return None
