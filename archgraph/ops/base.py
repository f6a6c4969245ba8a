"""What an operator is: a frozen value of typed hyperparameters plus rules.

An op declares `infer_shape(*inputs)` (its positional arguments are its inputs;
it returns one shape, or a list of shapes for several outputs), `params()` and
`buffers()` (the tensors it owns, by local name) and `flops(inputs, outputs)`
(inputs in the order of infer_shape's, None for an optional one not given); where
they apply, `idle_params()` (what a token does not touch), `cache(...)` (what
decoding keeps), `saved(...)` (what autograd keeps for the backward pass) and `held(...)` (what an op made of parts
holds while it runs).  `@op("name")` registers it; adding an op touches one file.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, ClassVar, Iterable, Literal, NamedTuple, Union, get_args, get_origin

from ..dims import Dim, Poly, Shape, equal, fmt, fmt_shape, free_names, subs
from ..dtypes import ELEMENT_BYTES
from ..errors import Fallback, ShapeError, SpecError, did_you_mean
from ..limits import MAX_MAGNITUDE
from ..numbers import quotient  # noqa: F401  (ops divide validated sizes with it: a/b, not floor)
from ..record import MISSING, Record

REGISTRY: dict[str, type["Op"]] = {}
MAX_RANK = 64  # PyTorch's limit on tensor dimensions
Size = Union[int, Poly]  # a hyperparameter that may name the inputs' symbolic sizes (`B`, `S * 2`)
TensorType = Literal[tuple(ELEMENT_BYTES)]  # a buffer's element type, as torch names it: "int64", "bool"


class Tensor(NamedTuple):
    """A learnable tensor (or buffer) of an op, named as PyTorch would (`weight`, `q_proj.bias`);
    a buffer that `state_dict()` does not save is not `persistent` (register_buffer's flag).  A buffer
    keeps its `dtype` (torch's name: int64 positions, a bool mask, a complex64 table); a parameter
    takes the module's, and its dtype here stays float32."""

    name: str
    shape: tuple[int, ...]
    persistent: bool = True
    dtype: str = "float32"

    @property
    def count(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """Bytes of its values at its dtype (a buffer's; a parameter's bytes depend on the weights' dtype)."""
        return self.count * ELEMENT_BYTES[self.dtype]


class Cache(Record, frozen=True):
    """What one application of an op keeps per sequence while a model decodes, by its `rule`:
    `per_token` values for each of `tokens` cached tokens (keys and values, a latent), and
    `state` values that do not grow with the sequence (a recurrent or convolution state).
    `parts`: how many ways tensor parallelism can split it (attention's key/value heads: more
    ranks than heads keep copies; a latent shared by every head, 1); None: its channels, any way."""

    rule: str
    per_token: Dim = 0
    tokens: Dim = 0
    state: Dim = 0
    parts: Dim | None = None


class Saved(Record, frozen=True):
    """One tensor autograd keeps for the backward pass of one application of an op: its input
    `input`, its output `output`, or (neither) `values` elements of its own (a dropout mask, a
    norm's statistics, a composite op's intermediates).  `width` is one element's storage: 'act'
    (the compute dtype), 'mask' (a bool, 1 byte), 'fp32' (4 bytes), 'index' (int64, 8 bytes).
    `heads`: the tensor lies where tensor parallelism splits the work (attention's heads, an MLP's
    inner width); else it is as wide as the op's first input.  `core`: part of attention's score
    matrix, which selective recomputation rebuilds for `flops` forward FLOPs.  `if_grad`: kept
    only when input `if_grad` needs a gradient (a product keeps each factor for the other's)."""

    values: Dim = 0
    input: int | None = None
    output: int | None = None
    width: str = "act"
    heads: bool = False
    core: bool = False
    flops: Dim = 0
    if_grad: int | None = None


class Held(NamedTuple):
    """One intermediate tensor an op made of parts holds while it runs without gradients (serving):
    `values` elements, in the part tensor parallelism splits; freed once the last intermediate that
    `reads` it (by index, an earlier one) ran, or once the op's outputs are made if none does."""

    values: Dim
    reads: tuple[int, ...] = ()


def keeps_inputs(inputs: list, *indices: int, width: str = "act") -> list[Saved]:
    """The given inputs (all that are given when none is named) kept as they are."""
    chosen = indices or range(len(inputs))
    return [Saved(input=i, width=width) for i in chosen if i < len(inputs) and inputs[i] is not None]


def keeps_output(index: int = 0) -> list[Saved]:
    return [Saved(output=index)]


def keeps_own(values: Dim, width: str = "act", *, heads: bool = False, core: bool = False,
              flops: Dim = 0) -> Saved:
    """A tensor of the op's own of `values` elements."""
    return Saved(values=values, width=width, heads=heads, core=core, flops=flops)


class Hyperparameter(NamedTuple):
    """One hyperparameter of an op: its name, its default (MISSING: a node must give it) and its
    annotation as written in the module that declares it."""

    name: str
    default: Any = MISSING
    annotation: Any = Any
    module: str = __name__


class Op(Record, frozen=True):
    """Base of all ops: a frozen record whose fields (annotated class attributes, as a dataclass's)
    are the hyperparameters, with their __init__ (which then runs `__post_init__`), equality,
    hashing and repr."""

    op_name: ClassVar[str] = ""
    category: ClassVar[str] = "other"
    doc: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()  # other names people know it by (PyTorch's first)
    example: ClassVar[dict[str, Any]] = {}   # hyperparameters of a typical use (`archgraph ops NAME`)
    differentiable: ClassVar[bool] = True    # False: its outputs carry no gradient (comparisons, argmax)
    keeps: ClassVar[str] = "in"  # what autograd keeps by default: its inputs ("in"), its output ("out"), nothing ("")
    retired: ClassVar[dict[str, str]] = {}  # hyperparameters it no longer takes -> what to write instead

    def infer_shape(self, *inputs: Shape) -> Shape | list[Shape]:  # pragma: no cover
        raise NotImplementedError

    def params(self) -> Iterable[Tensor]:
        return ()

    def buffers(self) -> Iterable[Tensor]:
        return ()

    def flops(self, inputs: list[Shape], outputs: list[Shape]) -> Dim:
        return 0

    def forward(self, run: Any, *inputs: Any, **named: Any) -> Any:
        """The computation on torch tensors (`archgraph.torch`): `run.torch`, `run.F`, the op's tensors
        by local name (`run.tensor("weight")`) and `run.training`; returns its output(s)."""
        raise NotImplementedError

    def init(self, tensor: Tensor, value: Any, init: Any) -> None:
        """Give a new parameter or buffer (`tensor` as `params()`/`buffers()` declared it) its first
        value in place; `init` holds PyTorch's initialisers (`init.default` is nn.Linear's for
        matrices, 1 for scales, 0 for biases)."""
        init.default(value, tensor.name)

    def stored_input(self) -> str | None:
        """The buffer (local name) whose value is the op's input, computed from constants: the module
        evaluates what feeds it once, when it is built, and forward never writes it; None for most ops."""
        return None

    def idle_params(self) -> int:
        """Parameters a token does not touch (the experts a router does not pick); 0 for most ops."""
        return 0

    def cache(self, inputs: list[Shape], outputs: list[Shape], decoder: bool) -> "Cache | None":
        """What it keeps per sequence while decoding (`decoder`: the model has causal attention),
        or None."""
        return None

    def saved(self, inputs: list[Shape], outputs: list[Shape], eager: bool) -> list[Saved]:
        """What autograd keeps of one application for the backward pass (inputs in the order of
        infer_shape's, None for an optional one not given; `eager`: attention computes and keeps
        its score matrix, else a fused kernel keeps none).  Default: as `keeps` says: every input
        given (what a differentiable function of its inputs needs), the output (relu, exp,
        softmax) or nothing (views, sums)."""
        return keeps_inputs(inputs) if self.keeps == "in" else keeps_output() if self.keeps == "out" else []

    def held(self, inputs: list[Shape], outputs: list[Shape]) -> list[Held]:
        """The intermediates it holds besides its outputs while it runs without gradients, in order
        (passes/live.py; its inputs live through it): none for a primitive; an op made of parts
        (attention, an MLP) holds what the block of those parts holds."""
        return []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Record.__init__(self, *args, **kwargs)
        post_init = getattr(self, "__post_init__", None)
        if post_init is not None:
            post_init()

    # -- construction from spec values ------------------------------------------------
    @classmethod
    def hyperparameters(cls) -> dict[str, Hyperparameter]:
        return _hyperparameters_of(cls)

    @classmethod
    def types(cls) -> dict[str, Any]:
        """Declared type of each hyperparameter."""
        return _types(cls)

    @classmethod
    def required(cls) -> list[str]:
        return [f.name for f in _hyperparameters_of(cls).values() if f.default is MISSING]

    @classmethod
    def arity(cls) -> tuple[int, int | None]:
        return _arity(cls)

    @classmethod
    def _arity(cls) -> tuple[int, int | None]:
        """(fewest, most) inputs, read off `infer_shape`'s signature."""
        named, required, variadic = _signature(cls.infer_shape)
        if variadic:
            return max(len(required), 1), None
        return len(required), len(named)

    @classmethod
    def input_names(cls) -> tuple[list[str], list[str]]:
        """(all input names, required input names) of `infer_shape`."""
        return _input_names(cls)

    @classmethod
    def _input_names(cls) -> tuple[list[str], list[str]]:
        named, required, _ = _signature(cls.infer_shape)
        return named, required

    @classmethod
    def build(cls, values: dict[str, Any]) -> "Op":
        """Make the op from already-evaluated values, coercing each to its declared type."""
        hints = _types(cls)
        fields = _hyperparameters_of(cls)
        for key in values:
            if key in cls.retired and key not in fields:
                raise SpecError(f"op '{cls.op_name}' no longer takes '{key}'", hint=cls.retired[key])
            if key not in fields:
                hint = did_you_mean(key, fields)
                raise SpecError(f"op '{cls.op_name}' has no hyperparameter '{key}'",
                                hint=hint or f"its hyperparameters are: {', '.join(fields) or 'none'}")
        missing = [k for k in cls.required() if k not in values]
        if missing:
            raise SpecError(f"op '{cls.op_name}' needs {', '.join(repr(m) for m in missing)}",
                            hint=f"add {', '.join(m + ': ...' for m in missing)} to the node")
        kwargs = {k: coerce(v, hints[k], f"{cls.op_name}.{k}") for k, v in values.items()}
        return cls(**kwargs)

    def describe(self) -> str:
        """`linear(in_features=768, out_features=3072)`: the non-default hyperparameters."""
        parts = []
        for f in _hyperparameters_of(type(self)).values():
            value = getattr(self, f.name)
            if f.default is MISSING or value != f.default:
                shown = "[" + ", ".join(map(fmt, value)) + "]" if isinstance(value, tuple) else fmt(value) \
                    if isinstance(value, Poly) else value
                parts.append(f"{f.name}={shown}")
        return f"{self.op_name}({', '.join(parts)})"

    def with_sizes(self, values: dict[str, Any]) -> "Op":
        """The op with the symbolic sizes in its hyperparameters bound to `values` (`B=2`)."""
        names = _size_hyperparameters_of(type(self))
        if not names or not values:
            return self
        changes = {}
        for name in names:
            value = getattr(self, name)
            if isinstance(value, tuple):
                changes[name] = tuple(subs(v, values) for v in value)
            elif isinstance(value, Poly):
                changes[name] = subs(value, values)
        return self.copy_with(**changes) if changes else self

    def copy_with(self, **changes: Any) -> "Op":
        """The op with `changes` to its hyperparameters (dataclasses.replace; checked again)."""
        return type(self)(**{**self.hparams(), **changes})

    def hparams(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _hyperparameters_of(type(self))}


# Per-class introspection, computed once: building a node must not re-read signatures.
def _hyperparameters_of(cls) -> dict[str, Hyperparameter]:
    found = cls.__dict__.get("_hyperparameters")
    if found is None:  # a subclass that `@op` did not register
        found = cls._hyperparameters = _read_hyperparameters(cls)
    return found


def _read_hyperparameters(cls) -> dict[str, Hyperparameter]:
    """The record's fields (its annotated class attributes and its op bases', as dataclasses reads
    them), each with the annotation and module that declare it."""
    declared = {}
    for klass in reversed(cls.__mro__):
        for name, annotation in klass.__dict__.get("__annotations__", {}).items():
            declared[name] = (annotation, klass.__module__)
    return {name: Hyperparameter(name, default, *declared[name]) for name, default in cls._fields.items()}


def _signature(function) -> tuple[list[str], list[str], bool]:
    """(named parameters, those without a default, whether it takes *args) of a method, self left out:
    read off its code object (inspect.signature would import inspect on every command)."""
    code = function.__code__
    names = list(code.co_varnames[1:code.co_argcount])
    defaults = len(function.__defaults__ or ())
    required = names[:len(names) - defaults]
    return names, required, bool(code.co_flags & 0x04)  # CO_VARARGS


@functools.cache
def _types(cls) -> dict[str, Any]:
    return {name: _evaluated(h.annotation, h.module) for name, h in _hyperparameters_of(cls).items()}


@functools.cache
def _evaluated(annotation: Any, module: str) -> Any:
    """An op's annotation as typing.get_type_hints reads it: the text evaluated in the globals of the
    module that declares the op (archgraph's own source, never user text).  Once per distinct text:
    `int` and `bool` annotate hundreds of hyperparameters, and get_type_hints on each class compiled
    every one of them again (15 M instructions in a cold `params`)."""
    if not isinstance(annotation, str):
        return annotation
    return eval(annotation, vars(sys.modules[module]))  # noqa: S307 - a source annotation, as typing does


@functools.cache
def _size_hyperparameters_of(cls) -> tuple[str, ...]:
    """Hyperparameters whose type admits a symbolic size."""
    return tuple(name for name, typ in _types(cls).items() if "Poly" in str(typ))


@functools.cache
def _arity(cls) -> tuple[int, int | None]:
    return cls._arity()


@functools.cache
def _input_names(cls) -> tuple[list[str], list[str]]:
    return cls._input_names()


def op(name: str, category: str = "other", *, aliases: tuple[str, ...] = (),
       example: dict[str, Any] | None = None):
    """Register a class as the op `name` (its annotated attributes its hyperparameters); `aliases` are the names
    PyTorch (and others) give it, `example` the hyperparameters of a typical use."""

    def wrap(cls):
        # Fields only: Op gives __init__, __eq__, __hash__, __repr__ and the frozen __setattr__.
        cls._hyperparameters = _read_hyperparameters(cls)
        cls.op_name = name
        cls.category = category
        cls.aliases = tuple(aliases)
        cls.example = dict(example or {})
        cls.doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        if name in REGISTRY:
            raise RuntimeError(f"op {name} registered twice")
        REGISTRY[name] = cls
        return cls

    return wrap


# -- hyperparameter coercion -------------------------------------------------------------
def coerce(value: Any, typ: Any, what: str) -> Any:
    origin = get_origin(typ)
    if origin is Union or (origin is not None and str(origin) == "<class 'types.UnionType'>") \
            or type(typ).__name__ == "UnionType":
        options = get_args(typ)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce(value, option, what)
            except SpecError as exc:
                errors.append(exc.message)
        raise SpecError(errors[0] if errors else f"{what}: invalid value {value!r}",
                        hint=Fallback('give one of the kinds of value it takes (archgraph ops OP lists them)'))
    if origin is Literal:
        choices = get_args(typ)
        if value not in choices:
            hint = did_you_mean(str(value), [str(c) for c in choices])
            raise SpecError(f"{what} must be one of {', '.join(map(str, choices))}; received {value!r}",
                            hint=hint)
        return value
    if origin is tuple:
        args = get_args(typ)
        if not isinstance(value, (list, tuple)):
            raise SpecError(f"{what} must be a list; received {value!r}", hint=Fallback('write it as a list: [1, 2]'))
        if len(value) > MAX_RANK:
            raise SpecError(f"{what} lists {len(value):,} values; tensors have at most {MAX_RANK} dimensions",
                            hint=Fallback('give at most 64 values'))
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce(v, args[0], what) for v in value)
        if len(args) != len(value):
            raise SpecError(f"{what} must be a list of {len(args)} values; received {list(value)}",
                            hint=Fallback('give as many values as it takes (archgraph ops OP lists them)'))
        return tuple(coerce(v, a, what) for v, a in zip(value, args))
    if typ is bool:
        if isinstance(value, bool):
            return value
        raise SpecError(f"{what} must be true or false; received {value!r}", hint=Fallback('write true or false'))
    if typ is Poly:
        if isinstance(value, Poly):
            return value
        raise SpecError(f"{what} must be a size; received {value!r}",
                        hint=Fallback('give a size: a whole number or an expression of sizes (S * 2)'))
    if typ is int:
        if isinstance(value, Poly):
            names = sorted(free_names(value))
            raise SpecError(f"{what} must be a whole number; received the symbolic size {fmt(value)}",
                            hint="give " + ", ".join(names) + " a value with " +
                                 " ".join(f"--set {n}=..." for n in names))
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                if abs(value) > MAX_MAGNITUDE:  # a real number may be any float64; a whole one is a size
                    raise SpecError(f"{what}: the value {value:g} is too large for a whole number (at most 10**30)",
                                    hint="no size, count or setting of a model comes near 10**30")
                return int(value)
            raise SpecError(f"{what} must be a whole number; received {value!r}", hint=Fallback('give a whole number'))
        return value
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{what} must be a number; received {value!r}", hint=Fallback('give a number'))
        return float(value)
    if typ is str:
        if not isinstance(value, str):
            raise SpecError(f"{what} must be text; received {value!r}",
                            hint=Fallback('give a word (quote it if YAML reads it as a number or true/false)'))
        return value
    raise TypeError(f"unsupported hyperparameter type {typ} for {what}")  # pragma: no cover


# -- helpers for validation and shape rules --------------------------------------------
def positive(owner: Op, *names: str) -> None:
    """Keras-style check: each named hyperparameter is a positive integer."""
    for name in names:
        value = getattr(owner, name)
        if value is not None and not isinstance(value, Poly) and value <= 0:
            raise SpecError(f"received an invalid value for `{name}` of op '{owner.op_name}', "
                            f"expected a positive integer. Received: {name}={value}",
                            hint=Fallback(f"give {name} a whole number of at least 1"))


def invalid(owner: Op, message: str, hint: str | None = None) -> SpecError:
    """The error of hyperparameters an op does not take together; its fix names the op's reference
    (`archgraph ops NAME` lists each hyperparameter, what it takes and its default) unless `hint`."""
    return SpecError(f"op '{owner.op_name}': {message}",
                     hint=hint or Fallback(f"change the node's hyperparameters as 'archgraph ops {owner.op_name}' "
                                           "describes them"))


def check(cond: bool, message: str) -> None:
    if not cond:
        raise ShapeError(message, hint=Fallback("make the node's hyperparameters agree with its inputs' shapes"))


def expect_rank(x: Shape, ranks: int | tuple[int, ...], what: str = "input") -> None:
    allowed = (ranks,) if isinstance(ranks, int) else ranks
    if len(x) not in allowed:
        want = " or ".join(str(r) for r in allowed)
        raise ShapeError(f"{what} must have {want} dimensions; received {fmt_shape(x)}",
                         hint=Fallback('give the node an input of that many dimensions (reshape or unsqueeze it first)'))


def expect_dim(actual: Dim, expected: Dim, what: str) -> None:
    if not equal(actual, expected):
        raise ShapeError(f"{what} is {fmt(actual)}, expected {fmt(expected)}",
                         hint=Fallback("make the node's hyperparameters agree with its inputs' shapes"))


def expect_padding_mask(mask: Shape | None, x: Shape, what: str = "padding mask") -> None:
    """A padding mask [B, S] (0: padding) of a sequence x [B, S, ...] (token ids, hidden states), or none."""
    if mask is not None:
        expect_rank(mask, 2, f"{what} [B, S]")
        expect_dim(mask[0], x[0], f"batch dimension of the {what}")
        expect_dim(mask[1], x[1], f"length of the {what}")


def axis(dim: int, rank: int, what: str = "dim") -> int:
    """Normalise a possibly negative axis."""
    if not -rank <= dim < rank:
        raise ShapeError(f"{what}={dim} is out of range for a {rank}-dimensional input",
                         hint=Fallback('give a dim from -rank to rank - 1'))
    return dim % rank


def pair(v: int | tuple[int, ...]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (v[0], v[1])
