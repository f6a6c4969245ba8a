"""Any archgraph model as a `torch.nn.Module` that computes it: `to_module(model)`.

The only archgraph module that imports torch (an optional dependency, the `torch` extra:
`pip install -e ".[torch]"` in a checkout, `pip install 'archgraph[torch]'` otherwise).
The module's tree follows the spec's nesting: every
tensor sits at the path `archgraph params --json` gives it (its `state_dict`; a part of a
name that PyTorch refuses for a module, empty or an nn.Module attribute, takes a '_':
`torch_name`), so a Hugging Face template's module loads the checkpoint's `state_dict` as it is; a
repeated block is an `nn.ModuleList`, a shared block one set of tensors used by every
repetition, a tied tensor one `Parameter` under both names, a frozen part
`requires_grad=False`, buffers persistent or not as declared; a buffer computed from
constants gets its value when the module is built, and forward never writes it.  An
input dimension the spec names by a variable (an image's `IH`) may have another size:
forward runs the spec derived at it (`archgraph.passes.resize`), with the same tensors.

`forward(**inputs)` takes the spec's inputs by name and returns a dict of its outputs
by name.  It walks the graph as the shape pass does, calling each op's `forward(run,
*inputs)`: the op's own declaration says what it computes, with `run` giving it the
torch namespace, its tensors by local name and the training flag.

>>> import archgraph, torch
>>> m = to_module(archgraph.load("gpt2", {"L": 1, "V": 100, "H": 48, "A": 4, "P": 32}))
>>> m(input_ids=torch.zeros(2, 5, dtype=torch.long))["logits"].shape
torch.Size([2, 5, 100])
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .dtypes import ELEMENT_BYTES
from .errors import ArchgraphError
from .graph import BlockNode, Graph, Model, OpNode, join, read_inputs
from .machine import refuse_past_available
from .ops.base import Op
from .spec.ties import tie_owner


RESIZED_KEPT = 16  # the specs derived at other input sizes a module keeps (each a graph of its own)


@dataclass
class Run:
    """What an op's forward receives besides its inputs."""

    torch: Any
    F: Any
    training: bool
    module: "SpecModule"
    path: str                 # the node's path: its tensors are path.<local name>
    node: OpNode
    device: Any = None        # where tensors an op makes from nothing go (arange, full)

    def tensor(self, local: str) -> Any:
        """The op's parameter or buffer `local` (`weight`, `q_proj.bias`, '' for the node itself)."""
        return self.module.tensor(join(self.path, local))

    def linear(self, name: str, x: Any, bias: bool = False) -> Any:
        """F.linear of x by the op's `name`.weight [out, in] (and `name`.bias with `bias`): the
        projections ops name after their modules (q_a_proj, in_proj, fc1, ...)."""
        return self.F.linear(x, self.tensor(f"{name}.weight"), self.tensor(f"{name}.bias") if bias else None)

    def dropout(self, p: float) -> float:
        """The dropout probability `p` to apply now: p in training, 0 in eval."""
        return p if self.training else 0.0

    def has(self, local: str) -> bool:
        return join(self.path, local) in self.module._where

    def state(self) -> dict:
        """Values the node keeps from one forward to the next (transformers' dynamic rope keeps the
        longest length it has seen): a dict per node path, empty at first."""
        return self.module._state.setdefault(self.path, {})


class SpecModule(nn.Module):
    """The module `to_module` returns (see the module docstring)."""

    def __init__(self, model: Model, device: Any = None, dtype: Any = None):
        super().__init__()
        object.__setattr__(self, "_archgraph_model", model)  # data, not a submodule
        self._where: dict[str, tuple[nn.Module, str]] = {}
        self._names: dict[str, str] = {}  # state_dict key -> archgraph's tensor name
        self._keys: dict[str, str] = {}   # archgraph's tensor name -> state_dict key
        self._sizes: dict[str, int] = {}
        self._resized: dict[tuple, Model] = {}  # the spec rebuilt at other input sizes (_fitting)
        self._device = torch.device("cpu")
        self._trace: list | None = None  # the output shapes of every op run, when tracing
        self._expect = None              # called with (index, shapes) after each op, when checking
        self._watch = None               # told each op's path and outputs, when pricing (torch_price)
        self._home = torch.device(device or "cpu")  # where a forward given no tensors makes its own
        self._state: dict[str, dict] = {}  # Run.state(): what ops keep between forwards, by node path
        factory = {"device": device, "dtype": dtype or torch.get_default_dtype()}
        self._cast = dtype  # given: the floating buffers' dtype too, as module.to(dtype) casts them
        self._build(model.graph, "", True, factory, set())
        self._tie(model)
        self._fill_buffers(model, factory["device"])

    # -- construction ----------------------------------------------------------------------------
    def _container(self, dotted: str) -> tuple[nn.Module, str]:
        """The submodule at archgraph's path `dotted`, made (a ModuleList for numbered children) where
        missing, and its path in the module (each part as `torch_name` maps it)."""
        here: nn.Module = self
        parts = dotted.split(".") if dotted else []
        names = []
        for i, part in enumerate(parts):
            names.append(torch_name(here, part))
            child = here._modules.get(names[-1])
            if child is None:
                numbered = i + 1 < len(parts) and parts[i + 1].isdigit()
                child = nn.ModuleList() if numbered else nn.Module()
                here.add_module(names[-1], child)
            here = child
        return here, ".".join(names)

    def _place(self, full: str) -> tuple[nn.Module, str]:
        """The submodule and local name that hold tensor `full` (as `torch_name` maps its parts); two
        tensors mapped to one name are refused by name."""
        parent, _, attr = full.rpartition(".")
        container, path = self._container(parent)
        attr = torch_name(container, attr)
        key = join(path, attr)
        if self._names.setdefault(key, full) != full:
            raise ArchgraphError(f"tensors '{self._names[key]}' and '{full}' would both be '{key}' in the "
                                 "PyTorch module (a name part PyTorch refuses, empty or an nn.Module attribute, "
                                 "takes a '_' after it)", hint="rename one of the two nodes")
        self._keys[full] = key
        return container, attr

    def state_dict_key(self, name: str) -> str:
        """The `state_dict` key of archgraph's tensor `name` (`params --json`): the same name, but
        where a part of it is one PyTorch refuses as a module's (`torch_name`)."""
        return self._keys[name]

    def _build(self, graph: Graph, prefix: str, trainable: bool, factory: dict, seen: set) -> None:
        for name, node in graph.nodes.items():
            if isinstance(node, OpNode):
                self._tensors(node, join(prefix, name), factory, seen)
                continue
            for i in range(node.repeat if not node.shared else min(node.repeat, 1)):
                self._build(node.body, body_prefix(node, prefix, i), trainable, factory, seen)

    def _tensors(self, node: OpNode, path: str, factory: dict, seen: set) -> None:
        """The node's tensors, each once: nodes at one path (a shared block's repetitions, or two
        ops writing to one module, as ModernBERT's rotary_emb) add the tensors not placed yet."""
        op = node.op
        for t in op.params():
            full = join(path, t.name)
            if t.name in node.ties or full in seen:
                continue  # a tie: one Parameter under both names, placed once the owner exists
            seen.add(full)
            value = torch.empty(tuple(t.shape), **_complex(factory) if t.dtype.startswith("complex") else factory)
            if factory["device"] != "meta" and str(value.device) != "meta":
                with torch.no_grad():
                    op.init(t, value, _Init)
            param = nn.Parameter(value, requires_grad=node.trainable)
            container, attr = self._place(full)
            container.register_parameter(attr, param)
            self._where[full] = (container, attr)
        for t in op.buffers():
            full = join(path, t.name)
            if full in seen:
                continue
            seen.add(full)
            value = torch.zeros(tuple(t.shape), device=factory["device"], dtype=self._buffer_dtype(t))
            container, attr = self._place(full)
            if factory["device"] != "meta" and str(value.device) != "meta":
                with torch.no_grad():
                    op.init(t, value, _Init)
            container.register_buffer(attr, value, persistent=t.persistent)
            self._where[full] = (container, attr)

    def _buffer_dtype(self, t: Any) -> Any:
        """A buffer's dtype as its op declares it (int64 positions, a bool mask, a complex64 table), but a
        floating buffer's the module's when to_module was given a dtype (as module.to(dtype) casts it)."""
        own = getattr(torch, t.dtype)
        return self._cast if self._cast is not None and own.is_floating_point else own

    def _tie(self, model: Model) -> None:
        for path, node, graph, prefix in _op_paths(model.graph, ""):
            for local, target in node.ties.items():
                owner = tie_owner(model, target, graph, prefix)
                if owner not in self._where:
                    raise ArchgraphError(f"tie: '{target}' is not a tensor of the module",
                                         hint="tie to a tensor the spec's model holds")
                param = self.tensor(owner)
                full = join(path, local)
                container, attr = self._place(full)
                container.register_parameter(attr, param)
                self._where[full] = (container, attr)

    def _fill_buffers(self, model: Model, device: Any, dry: bool = False) -> None:
        """Buffers computed from constants (an op's `stored_input`) hold their values from construction
        on: what feeds each is evaluated here, once per path, on the module's device (on the meta
        device nothing is, unless `dry`: then it is evaluated and not kept, for torch_price)."""
        done: set[str] = set()
        for path, node, graph, prefix in _op_paths(model.graph, ""):
            local = node.op.stored_input()
            full = join(path, local or "")
            if local is None or not node.inputs or full in done:
                continue
            done.add(full)
            buffer = self.tensor(full)
            if buffer.device.type == "meta" and not dry:
                continue
            self._device = buffer.device
            memo: dict[str, tuple] = {}
            (value,) = [self._constant(graph, prefix, ref, memo, path) for ref in node.inputs[:1]]
            if not dry:
                with torch.no_grad():
                    buffer.copy_(value)
        self._device = torch.device("cpu")
        self._load_values(model)

    def _load_values(self, model: Model) -> None:
        """The buffers the spec's values file holds (`values:`: values no computation from constants
        gives, such as a 2-D sin-cos table numpy made) take its tensors, in their own dtype (on the
        meta device nothing is read)."""
        if not model.values or all(getattr(c, a).device.type == "meta" for c, a in self._where.values()):
            return
        from pathlib import Path
        path = Path(model.values)
        if not path.is_file():
            raise ArchgraphError(f"{model.name}: the spec's values file {path} does not exist",
                                 hint="write it beside the spec: to_spec(...).write(path) and import-torch -o "
                                      "write both")
        from safetensors.torch import load_file
        for name, value in load_file(str(path)).items():
            where = self._where.get(name)
            if where is None or where[1] not in where[0]._buffers:
                raise ArchgraphError(f"{path}: tensor '{name}' is no buffer of {model.name}",
                                     hint="the values file holds the spec's buffers by their names")
            container, attr = where
            current = getattr(container, attr)
            if tuple(current.shape) != tuple(value.shape):
                raise ArchgraphError(f"{path}: tensor '{name}' is {list(value.shape)}; the spec's buffer is "
                                     f"{list(current.shape)}",
                                     hint="load weights of the spec's shapes (the spec's variables set as the "
                                          "checkpoint's)")
            container.register_buffer(attr, value.to(current.device),
                                      persistent=attr not in container._non_persistent_buffers_set)

    def _constant(self, graph: Graph, prefix: str, ref: Any, memo: dict, buffer: str) -> Any:
        """The value of `ref` in the graph instance at `prefix`, made from constants only."""
        if ref.node in graph.inputs:
            raise ArchgraphError(f"buffer '{buffer}': its value depends on the input '{ref.node}'; a buffer's "
                                 "value is computed from constants (arange, full, ...) when the module is built",
                                 hint="feed the buffer from constant ops only, or make it a plain op's output")
        if ref.node not in memo:
            node = graph.nodes[ref.node]
            if not isinstance(node, OpNode) or any(True for _ in node.op.params()):
                what = "a block" if not isinstance(node, OpNode) else f"'{node.op.op_name}', which has parameters"
                raise ArchgraphError(f"buffer '{buffer}': its value comes from node '{ref.node}' ({what}); a "
                                     "buffer's value is computed from constants when the module is built",
                                     hint="feed the buffer from constant ops (arange, full, linspace, pow, ...)")
            args = [self._constant(graph, prefix, r, memo, buffer) for r in node.inputs]
            memo[ref.node] = self.run_op(node, join(prefix, ref.node), args)
        return memo[ref.node][ref.index]

    def tensor(self, full: str) -> Any:
        container, attr = self._where[full]
        return getattr(container, attr)

    # -- computation -----------------------------------------------------------------------------
    def forward(self, *args: Any, **inputs: Any) -> dict[str, Any]:
        """The spec's outputs by name, from its inputs: by name, or positionally in the order the
        spec declares them (a template's order is its transformers class's). An optional input
        (`default:` in the spec) left out or given as None takes its default."""
        model = self._archgraph_model
        graph = model.graph
        if len(args) > len(graph.inputs):
            raise TypeError(f"{model.name}: forward takes at most {len(graph.inputs)} inputs "
                            f"({', '.join(graph.inputs)}); received {len(args)}")
        for name, value in zip(graph.inputs, args):
            if name in inputs:
                raise TypeError(f"{model.name}: forward got input '{name}' both by position and by name")
            inputs[name] = value
        unknown = [n for n in inputs if n not in graph.inputs]
        given = {n: v for n, v in inputs.items() if v is not None}
        missing = [n for n in self.input_names if n not in given and model.inputs[n].default is None]
        if missing or unknown:
            raise TypeError(f"{model.name}: forward takes {', '.join(self.input_names)}"
                            + (f"; missing {', '.join(missing)}" if missing else "")
                            + (f"; unknown {', '.join(unknown)}" if unknown else ""))
        model = self._fitting(given)
        self._sizes = self._bind(given, model)
        self._device = next(iter(given.values())).device if given else self._home
        for name in self.input_names:
            if name not in given:
                given[name] = self._default(model.inputs[name], model)
        outputs = self.run_graph(model.graph, "", tuple(given.get(n) for n in graph.inputs))
        return dict(zip(model.output_names, outputs))

    def _default(self, spec, model: Model) -> Any:
        """The value of optional input `spec` when a call leaves it out, at the sizes the given
        inputs bound (an input none of whose sizes is bound cannot be made: say which)."""
        from . import expr
        if spec.default == "none":  # the reading op computes its own
            return None
        env = {**model.variables, **self._sizes}
        try:
            shape = tuple(int(expr.evaluate(d, env)) if isinstance(d, str) else d for d in spec.shape)
        except (ArchgraphError, TypeError, ValueError):
            raise TypeError(f"{self._archgraph_model.name}: input '{spec.name}' was left out and its "
                            f"shape {list(spec.shape)} is not known from the inputs given; give it") from None
        dtype = getattr(torch, spec.dtype, None)
        dtype = dtype if isinstance(dtype, torch.dtype) else torch.float32
        if spec.default == "arange":
            return torch.arange(shape[-1], dtype=dtype, device=self._device).expand(shape)
        fill = torch.ones if spec.default == "ones" else torch.zeros
        return fill(shape, dtype=dtype, device=self._device)

    @property
    def input_names(self) -> tuple[str, ...]:
        """The inputs forward reads: the spec's inputs that some op or output reads."""
        read = read_inputs(self._archgraph_model.graph)
        return tuple(n for n in self._archgraph_model.graph.inputs if n in read)

    @property
    def required_inputs(self) -> tuple[str, ...]:
        """The inputs every call must give: those forward reads that have no `default:`."""
        return tuple(n for n in self.input_names if self._archgraph_model.inputs[n].default is None)

    def _fitting(self, inputs: dict) -> Model:
        """The model at the inputs' sizes: the one built, or where an input dimension the spec names by
        a variable (an image's IH) has another size, the spec rebuilt at it (once per size; its tensors
        must be the module's, else passes.resize.SizeError says which one differs)."""
        from .passes.resize import at_sizes, sized_by_variables
        model = self._archgraph_model
        sizes = sized_by_variables(model, {n: tuple(v.shape) for n, v in inputs.items()})
        if not sizes:
            return model
        key = tuple(sizes.items())
        if key not in self._resized:
            if len(self._resized) >= RESIZED_KEPT:  # the oldest size goes first
                self._resized.pop(next(iter(self._resized)))
            self._resized[key] = at_sizes(model, sizes)
        return self._resized[key]

    def _bind(self, inputs: dict, model: Model | None = None) -> dict[str, int]:
        """The symbolic sizes of the inputs (B, S, ...) as the tensors given have them."""
        model = model or self._archgraph_model
        sizes: dict[str, int] = dict(model.bindings)
        for name, spec in model.inputs.items():
            if name not in inputs:
                continue
            shape = tuple(inputs[name].shape)
            if len(shape) != len(spec.shape):
                raise TypeError(f"{self._archgraph_model.name}: input '{name}' has {len(shape)} dims; "
                                f"the spec declares "
                                f"{len(spec.shape)} ({list(spec.shape)})")
            for dim, value in zip(spec.shape, shape):
                if isinstance(dim, str):
                    _solve(dim, value, sizes, model.variables, name)
        return sizes

    def run_graph(self, graph: Graph, prefix: str, values: tuple) -> tuple:
        padded = (*values, *(None,) * (len(graph.inputs) - len(values)))  # inputs left out: never read
        env: dict[str, tuple] = {name: (value,) for name, value in zip(graph.inputs, padded)}
        for name, node in graph.nodes.items():
            args = [env[ref.node][ref.index] for ref in node.inputs]
            if isinstance(node, OpNode):
                env[name] = self.run_op(node, join(prefix, name), args)
                continue
            current = tuple(args)
            for i in range(node.repeat):
                given = node.sliced(current, i, lambda value, dim, index, _: value.select(dim, index))
                outs = self.run_graph(node.body, body_prefix(node, prefix, i), given)
                current = outs + current[len(outs):]
            env[name] = current[:len(node.body.outputs)]
        return tuple(env[ref.node][ref.index] for ref in graph.outputs)

    def run_op(self, node: OpNode, path: str, args: list) -> tuple:
        run = Run(torch, F, self.training, self, path, node, self._device)
        positional, named = node.bind(args)
        op = node.op.with_sizes(self._sizes)
        if type(op).forward is Op.forward:
            raise ArchgraphError(f"op '{node.op.op_name}' has no PyTorch forward yet", node=path,
                                 hint='run the model with a spec of ops that have a forward (archgraph ops '
                                      'lists them), or count it only')
        if self._watch is not None:
            self._watch.enter(path)
        try:
            out = op.forward(run, *positional, **named)
        except RuntimeError as exc:  # torch.full(.., -1e300, dtype=float32): a spec value may be any float64
            if "without overflow" not in str(exc):
                raise
            raise ArchgraphError(f"op '{node.op.op_name}': {exc}: a value of the spec lies beyond the range of "
                                 "the tensor's element type", node=path,
                                 hint="write a value the element type holds (torch.finfo(dtype).min, or "
                                      "-inf)") from None
        out = tuple(out) if isinstance(out, (list, tuple)) else (out,)
        if self._watch is not None:
            self._watch.leave(out)
        if self._trace is not None:
            self._trace.append([tuple(t.shape) for t in out])
            if self._expect is not None:
                self._expect(len(self._trace) - 1, self._trace[-1])
        return out


def torch_name(module: nn.Module, part: str) -> str:
    """`part`, a part of an archgraph name, as a name PyTorch takes for a submodule or tensor of `module`:
    itself, or with '_' after it while it is empty (`..` in `../x`) or an attribute of the module
    (`float`, `training`), which add_module refuses."""
    name = part
    while not name or (hasattr(module, name) and name not in module._modules and name not in module._parameters
                       and name not in module._buffers):
        name += "_"
    return name


def _solve(dim: str, value: int, sizes: dict, variables: dict, input_name: str) -> None:
    """Bind the one unknown size of an input dimension (`S`, `P + 1`) to what the tensor has."""
    from . import expr
    from .dims import subs, symbol
    unknown = [n for n in expr.names(dim) if n not in variables and n not in sizes]
    env = {**variables, **sizes}
    if not unknown:  # known from the spec and the inputs before: the tensor must agree
        expected = expr.evaluate(dim, env)
        if isinstance(expected, int) and expected != value:
            raise TypeError(f"input '{input_name}': its dimension {dim} is {expected} at these inputs and "
                            f"this spec's sizes; received {value}")
        return
    if len(unknown) != 1:
        return
    name = unknown[0]
    at = [subs(expr.evaluate(dim, {**env, name: symbol(name)}), {name: k}) for k in (0, 1)]
    slope = at[1] - at[0]
    if not slope and isinstance(at[0], int):  # the spec's variables decide it without the unknown
        if at[0] != value:
            raise TypeError(f"input '{input_name}': its dimension {dim} is {at[0]} at these inputs and "
                            f"this spec's sizes; received {value}")
        return
    if slope and (value - at[0]) % slope == 0:
        sizes[name] = (value - at[0]) // slope
    else:
        raise TypeError(f"input '{input_name}': its dimension {dim} cannot be {value}")


def _complex(factory: dict) -> dict:
    """The factory of a complex parameter: the complex type of the weights' (complex64 for float32)."""
    return {**factory, "dtype": torch.complex128 if factory["dtype"] == torch.float64 else torch.complex64}


def body_prefix(node: BlockNode, prefix: str, i: int) -> str:
    """Where repetition i of a block call keeps its tensors: its own numbered path, or for a shared
    block the one path of all its repetitions (as the parameter pass names them)."""
    return join(prefix, node.segment) if node.shared else node.rep_path(prefix, i)


def _op_paths(graph: Graph, prefix: str):
    for name, node in graph.nodes.items():
        if isinstance(node, OpNode):
            yield join(prefix, name), node, graph, prefix
        else:
            for i in range(node.repeat if not node.shared else min(node.repeat, 1)):
                yield from _op_paths(node.body, body_prefix(node, prefix, i))


class _Init:
    """The initialisations an op's `init` may use (PyTorch's own layers' defaults)."""

    @staticmethod
    def default(tensor: Any, name: str) -> None:
        """Biases 0; 1-D scales 1; matrices and kernels as nn.Linear/nn.Conv (kaiming uniform, a=sqrt 5);
        a buffer of whole numbers, truth values or complex ones (ids, a mask, a table) 0 until it is computed."""
        leaf = name.rsplit(".", 1)[-1]
        if tensor.dim() == 0 or not tensor.is_floating_point():
            tensor.zero_()
        elif leaf == "bias" or leaf.endswith("_bias"):
            tensor.zero_()
        elif tensor.dim() == 1:
            tensor.fill_(1.0)
        else:
            nn.init.kaiming_uniform_(tensor, a=math.sqrt(5))

    torch = torch
    normal = staticmethod(nn.init.normal_)
    zeros = staticmethod(nn.init.zeros_)
    ones = staticmethod(nn.init.ones_)
    uniform = staticmethod(nn.init.uniform_)
    trunc_normal = staticmethod(nn.init.trunc_normal_)


def to_module(model: Model, device: Any = None, dtype: Any = None, *, check_memory: bool = True) -> SpecModule:
    """The model as a torch.nn.Module (on `device`, e.g. "meta" to build without memory).  On the CPU
    it first refuses, with an ArchgraphError naming both figures, a module whose parameters and
    buffers need more memory than the machine has available (`memory_need`, `machine.available`);
    `check_memory=False` builds it anyway."""
    if check_memory and torch.device(device or "cpu").type == "cpu":
        refuse_past_available(memory_need(model, dtype=dtype), f"the module of {model.name}",
                              hint="build it on the meta device, which takes no memory (to_module(model, "
                                   "device='meta')), or pass check_memory=False to build it anyway")
    return SpecModule(model, device, dtype)


def memory_need(model: Model, sizes: dict[str, int] | None = None, dtype: Any = None) -> dict[str, int]:
    """Bytes the module takes by part: its parameters at `dtype` (torch's default if None), its buffers
    at their own dtypes (the floating ones at `dtype` when given) and, with `sizes`, `example_inputs` at them and a bound on activations: every op output
    at once (`estimate_memory`'s output_values)."""
    from .passes.memory import estimate_memory
    width = torch.empty((), dtype=dtype or torch.get_default_dtype(), device="meta").element_size()
    totals = model.params().totals
    cast = dtype is not None  # the floating buffers at `dtype`, as SpecModule builds them
    buffers = sum(n * (width if cast and getattr(torch, kind).is_floating_point else ELEMENT_BYTES[kind])
                  for kind, n in totals.buffers_by_dtype.items())
    need = {"parameters": totals.total * width, "buffers": buffers}
    if sizes is not None:
        need["inputs"] = sum(math.prod(shape) * dtype.itemsize for _, shape, dtype in _input_kinds(model, sizes))
        values = estimate_memory(model, {**model.bindings, **sizes}, dtype="fp32").output_values
        need["activations at most"] = (values or 0) * width
    return need


def _input_kinds(model: Model, sizes: dict[str, int]):
    """(name, shape, torch dtype) of each input the module reads, at `sizes`: int64 ids, else floats."""
    from .passes.shapes import input_shapes
    shapes = input_shapes(model, {**model.bindings, **sizes})
    read = read_inputs(model.graph)
    for name, spec in model.inputs.items():
        if name in read:
            ids = spec.dtype.startswith(("int", "uint", "bool"))
            yield name, tuple(int(d) for d in shapes[name]), torch.int64 if ids else torch.get_default_dtype()


def example_inputs(model: Model, sizes: dict[str, int], device: Any = None) -> dict[str, Any]:
    """Random inputs at `sizes` (B=2, S=16...) for the inputs the module reads: ids 0 or 1, floats N(0, 1)."""
    out = {}
    for name, shape, dtype in _input_kinds(model, sizes):
        if dtype == torch.int64:
            out[name] = torch.randint(0, 2, shape, device=device)
        else:
            out[name] = torch.randn(shape, device=device)
    return out


@dataclass(frozen=True)
class Agreement:
    """What `check` compared: parameters and every op node's output shapes, and the first difference."""

    params: int                    # archgraph's count
    module_params: int             # the module's
    nodes: int                     # op nodes run (repetitions expanded)
    difference: str | None = None  # the first disagreement, in words
    against: str | None = None     # the PyTorch module compared with (run --check --against), what was compared

    @property
    def agree(self) -> bool:
        return self.difference is None


def example_sizes(model: Model, given: dict[str, int] | None = None) -> dict[str, int]:
    """Sizes for the inputs' free dimensions: those `given`, else B=2 and 8 for the others (S, T...)."""
    from .spec.settings import example_size, size_names
    given = given or {}
    return {name: given.get(name, example_size(name)) for name in size_names(model.inputs, model.variables)
            if name not in model.bindings}


def check(model: Model, sizes: dict[str, int] | None = None) -> Agreement:
    """Build the module on the meta device (no memory), run it on inputs at `sizes` (default
    `example_sizes`) and compare its parameter count and every op node's output shapes with
    archgraph's passes."""
    sizes = example_sizes(model, sizes)
    module = to_module(model, device="meta")
    want = model.params().total
    got = sum(p.numel() for p in module.parameters())
    report = model.shapes(**sizes)
    expected = [(path, [tuple(int(d) for d in shape) for shape in outs]) for path, _, outs in report.nodes()]
    if got != want:
        return Agreement(want, got, 0, f"the module has {got:,} parameters; archgraph counts {want:,}")
    def expect(index: int, actual: list) -> None:
        if index >= len(expected) or expected[index][1] != actual:
            raise _Disagree(index, actual)

    module._trace, module._expect = [], expect
    try:
        with torch.no_grad():
            module(**example_inputs(model, dict(report.bindings), "meta"))
    except _Disagree as exc:
        if exc.index >= len(expected):
            return Agreement(want, got, exc.index + 1, f"the module runs more op nodes than archgraph's "
                                                       f"{len(expected):,}")
        path, shapes = expected[exc.index]
        return Agreement(want, got, exc.index + 1, f"node '{path}': archgraph infers {_fmt(shapes)}, "
                                                   f"PyTorch computes {_fmt(exc.actual)}")
    finally:
        ran, module._trace, module._expect = module._trace, None, None
    if len(ran) != len(expected):
        return Agreement(want, got, len(ran), f"the module ran {len(ran):,} op nodes; archgraph has "
                                              f"{len(expected):,}")
    return Agreement(want, got, len(ran))


class _Disagree(Exception):
    def __init__(self, index: int, actual: list):
        super().__init__(index)
        self.index, self.actual = index, actual


def _fmt(shapes: list) -> str:
    return ", ".join("[" + ", ".join(map(str, s)) + "]" for s in shapes)


def to_spec(module: nn.Module, *example_args: Any, **example_kwargs: Any) -> str:
    """The YAML of a spec describing `module` as torch.export traces it on the example inputs
    (`archgraph.fromtorch.convert`): `to_module` of it loads the module's state_dict strictly and
    computes its outputs.  The spec is checked before it is returned (`verify_spec`, naming the first
    node whose value differs); what archgraph has no op for is refused, naming the aten op and module.

    >>> spec = to_spec(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), torch.randn(2, 4))
    >>> print(spec.splitlines()[-5])
      - {name: '0', op: linear, in: input, in_features: 4, out_features: 8}
    """
    from .fromtorch import convert, verify
    made = convert(module, example_args, example_kwargs)
    verify.check(module, made.traced, made.text, example_args, example_kwargs, to_module, made.where)
    return made.text


def check_against(model: Model, result: Agreement, target: str, module: nn.Module, args: tuple,
                  kwargs: dict) -> Agreement:
    """`result` (a `check`) with the comparison of the spec's module with `module` (from `target`, called
    with the example inputs): count, state_dict names and shapes, and with real weights the outputs
    to 1e-4 of their scale (`verify_spec`); the first difference is the agreement's."""
    import dataclasses

    from .fromtorch import verify
    from .fromtorch.trace import trace
    try:
        traced = trace(module, args, kwargs)
        what = verify.check_model(module, traced, model, args, kwargs, to_module)
    except ArchgraphError as exc:
        message = exc.message.replace(f"the spec written for {type(module).__name__}", f"against {target}, the spec")
        return dataclasses.replace(result, difference=result.difference or message, against=target)
    return dataclasses.replace(result, against=f"{target} ({what})")


def verify_spec(module: nn.Module, text: str, *example_args: Any, **example_kwargs: Any) -> None:
    """Check that the spec `text` describes `module` (a template, a spec edited by hand): with real
    weights, `to_module` of it loads the module's state_dict strictly and computes its outputs on the
    example inputs to 1e-4 of their scale; on the meta device, its count and every state_dict name
    and shape are the module's.  Raises ArchgraphError saying what differs."""
    from .fromtorch import verify
    verify.verify_spec(module, text, example_args, example_kwargs, to_module)
