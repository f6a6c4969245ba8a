"""What training keeps for the backward pass, layer by layer: each op's `saved()` over the shape
walk, every tensor once (a layer's output that the next layer's norm keeps is one tensor), with
where tensor parallelism splits it, FLOPs and tensor-parallel traffic on the way.

Tensor parallelism follows Megatron-LM's layout, read off the graph: the residual stream is
"seq" (replicated across the t ranks, split by sequence parallelism), a linear reading it is
column-parallel and its output is "heads" (split), a linear reading "heads" is row-parallel
and gives "seq" again; an op with projections of its own (attention, an MLP) is both at once.
Every forward all-reduce is a row-parallel output, every backward one a column-parallel input.
An op writing a source into its first input (masked_scatter: image features into the text
embeddings) is placed as that input; a split source is all-gathered into it.

>>> from archgraph import load
>>> profile = activation_profile(load("gpt3-175b"), {"B": 1, "S": 2048}, eager=True)
>>> per_layer = profile.layers[0][0].kept_bytes("bf16", tp=1, sp=False)
>>> per_layer == 2048 * 12288 * (34 + 5 * 96 * 2048 // 12288) + 2 * 2 * 2048 * 4
True
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from ..errors import ArchgraphError, SpecError
from ..graph import BlockNode, Model, OpNode
from ..record import Record, factory
from .flops import op_flops
from .shapes import infer_shapes
from .stacks import find_stacks
from .walk import Run, call_op

ACT_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 2}  # activations of fp8 training stay bf16
WIDTH_BYTES = {"mask": 1, "fp32": 4, "index": 8}
VIEWS = {"reshape", "transpose", "permute", "flatten", "unsqueeze", "squeeze", "identity", "expand"}
COLUMN_OR_ROW = {"linear"}  # ops whose output is split when their input is not, and the reverse
MERGES = {"masked_scatter", "index_put", "scatter", "scatter_add", "scatter_reduce", "index_add", "slice_scatter",
          "select_scatter"}   # write a source into their first input: the output is placed as that input
SMALL = 4096  # bitsandbytes' min_8bit_size: smaller tensors keep 32-bit optimizer states


class Part(Record):
    """What some ops keep and cost: values kept by (width, place, core), forward FLOPs by place
    ('heads': split by tensor parallelism; 'seq': replicated, split by sequence parallelism),
    FLOPs selective recomputation repeats, tensor-parallel all-reduce elements (forward,
    backward), parameters by (kind, trainable) with kind 'matrix' (split by tensor parallelism),
    'vector' (replicated) or 'expert' (split by expert parallelism too)."""

    kept: Counter = factory(Counter)
    flops: Counter = factory(Counter)
    core_flops: int = 0
    comm: Counter = factory(Counter)
    params: Counter = factory(Counter)
    checkpoint: Counter = factory(Counter)   # a layer's inputs: what full recomputation keeps of it

    def add(self, other: "Part", times: int = 1) -> None:
        for mine, theirs in ((self.kept, other.kept), (self.flops, other.flops), (self.comm, other.comm),
                             (self.params, other.params)):
            for k, v in theirs.items():
                mine[k] += v * times
        self.core_flops += other.core_flops * times

    def kept_bytes(self, dtype: str, tp: int = 1, sp: bool = False, core: bool = True,
                   kept: Counter | None = None) -> int:
        """Bytes kept on one of `tp` ranks (with sequence parallelism `sp`); without `core`, not
        attention's score matrices (selective recomputation)."""
        total = 0
        for (width, place, is_core), values in (self.kept if kept is None else kept).items():
            if is_core and not core:
                continue
            n = values * WIDTH_BYTES.get(width, ACT_BYTES[dtype])
            total += -(-n // tp) if place == "heads" or sp else n
        return total

    def checkpoint_bytes(self, dtype: str, tp: int = 1, sp: bool = False) -> int:
        return self.kept_bytes(dtype, tp, sp, kept=self.checkpoint)


class Profile(Record):
    """The layers of the model's stacks in order, each (Part, repetitions, stack path), and the
    ops before the first layer and after it (embeddings; final norms and heads)."""

    before: Part
    layers: list
    after: Part
    bindings: dict
    eager: bool
    memo: dict = factory(dict)   # sums a plan asks for again (per stage, of all layers), made once

    @property
    def layer_count(self) -> int:
        return sum(n for _, n, _ in self.layers)

    def total(self) -> Part:
        return self.once("total", lambda: self._sum([(self.before, 1)] + [(p, n) for p, n, _ in self.layers]
                                                     + [(self.after, 1)]))

    def all_layers(self) -> Part:
        return self.once("layers", lambda: self._sum([(p, n) for p, n, _ in self.layers]))

    def sum_of(self, key, items: list) -> Part:
        """The Part of `items` ((Part, times) pairs), made once per `key`."""
        return self.once(key, lambda: self._sum(items))

    def once(self, key, make):
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    @staticmethod
    def _sum(items: list) -> Part:
        out = Part()
        for part, n in items:
            out.add(part, n)
        return out


class _Tensor(Record, frozen=True):
    key: Any
    values: int
    place: str   # "seq" or "heads"
    grad: bool


class _Body(Record):
    """One evaluation of a graph: its items in order (Part, or (Part, repetitions, stack) for
    layers), the inputs its ops keep (by index), the outputs they keep, and its outputs."""

    items: list
    keeps_inputs: dict        # input index -> width
    keeps_outputs: set
    outputs: list
    reduces_inputs: dict = factory(dict)   # input index -> values: a column-parallel op reads it (its gradient
    #   is all-reduced once, for every reader: the caller's to count)


def activation_profile(model: Model, bindings: Mapping[str, Any], eager: bool = False) -> Profile:
    """Walk `model` at concrete sizes `bindings` and say what each layer keeps and costs."""
    shapes = infer_shapes(model, bindings)
    stacks = {id(call): stack.path for stack in find_stacks(model) for call in stack.calls}
    inputs = [_Tensor(("in", i), _numel(shapes.inputs[name]), "seq", False)
              for i, name in enumerate(model.graph.inputs)]
    body = _walk(shapes.run, inputs, stacks, eager, {})
    before, layers, after = Part(), [], Part()
    for i, width in body.keeps_inputs.items():   # the model's inputs an op keeps (the ids an embedding reads)
        before.kept[(width, "seq", False)] += inputs[i].values
    for i, values in body.reduces_inputs.items():   # the model's inputs a column-parallel op reads
        before.comm["backward"] += values
    for item in body.items:
        if isinstance(item, Part):
            (after if layers else before).add(item)
        else:
            layers.append(item)
    return Profile(before, layers, after, dict(shapes.bindings), eager)


def kept_for_backward(model: Model, shapes, eager: bool) -> Part:
    """What training keeps for backward over the whole model at the sizes `shapes` was inferred at
    (passes/shapes.infer_shapes), each tensor once, no layer laid out (memory's activations)."""
    inputs = [_Tensor(("in", i), _numel(shapes.inputs[name]), "seq", False)
              for i, name in enumerate(model.graph.inputs)]
    body = _walk(shapes.run, inputs, {}, eager, {})
    total = Part()
    for i, width in body.keeps_inputs.items():
        total.kept[(width, "seq", False)] += inputs[i].values
    for item in body.items:
        total.add(item)
    return total


def _walk(run: Run, inputs: list[_Tensor], stacks: dict, eager: bool, cache: dict) -> _Body:
    """What `run` keeps given its inputs' places and gradients (its inputs' bytes are the caller's)."""
    signature = (id(run), tuple(t and (t.values, t.place, t.grad) for t in inputs))
    if signature in cache:
        return cache[signature]
    padded = [*inputs, *[None] * (len(run.graph.inputs) - len(inputs))]  # inputs a call left out
    env: dict[str, list[_Tensor | None]] = {name: [t] for name, t in zip(run.graph.inputs, padded)}
    counted: set = set()
    body = _Body([Part()], {}, set(), [])
    for name, node in run.graph.nodes.items():
        args = [env[ref.node][ref.index] for ref in node.inputs]
        if isinstance(node, OpNode):
            env[name] = _op(node, name, args, run, body, counted, eager)
        else:
            env[name] = _call(node, name, args, run, body, counted, stacks, eager, cache)
    body.outputs = [env[ref.node][ref.index] for ref in run.graph.outputs]
    body.keeps_outputs = {i for i, t in enumerate(body.outputs) if t is not None and t.key in counted}
    cache[signature] = body
    return body


def _keep(body: _Body, counted: set, tensor: _Tensor, width: str, core: bool = False) -> None:
    """Count `tensor` once: an input of the body is the caller's to count."""
    if tensor.key in counted:
        return
    counted.add(tensor.key)
    if isinstance(tensor.key, tuple) and tensor.key[0] == "in":
        body.keeps_inputs.setdefault(tensor.key[1], width)
        return
    body.items[-1].kept[(width, tensor.place, core)] += tensor.values


def _op(node: OpNode, name: str, args: list[_Tensor], run: Run, body: _Body, counted: set,
        eager: bool) -> list[_Tensor]:
    """Count what one op keeps and costs; its outputs' places and gradients."""
    op = node.op
    shapes_in, shapes_out = run.input_values(node), list(run.nodes[name])
    part = body.items[-1]
    given = [t for t in args if t is not None]   # an optional input given as nothing is None
    grads = [t.grad for t in given]
    owns = _param_counts(node)
    grad = op.differentiable and (any(grads) or (bool(owns) and node.trainable))
    place_in = "heads" if any(t.place == "heads" for t in given) else "seq"
    flops = op_flops(node, shapes_in, shapes_out, name)
    if op.op_name in VIEWS and given:
        return [_Tensor(given[0].key, given[0].values, given[0].place, grad) for _ in shapes_out]
    saved = call_op(node, [_arranged(node, shapes_in), shapes_out, eager], name, op.saved) if grad or any(grads) else []
    composite = any(s.heads for s in saved) and bool(owns)
    first = given[0].place if given else "seq"
    if op.op_name in COLUMN_OR_ROW:
        place_out = "seq" if first == "heads" else "heads"
    elif composite or (op.op_name in MERGES and given):
        place_out = first
    else:
        place_out = place_in
    outs = [_Tensor((name, j), _numel(s), place_out, grad) for j, s in enumerate(shapes_out)]
    arranged = _arranged(node, args)
    for s in saved:
        if s.if_grad is not None and not (arranged[s.if_grad] is not None and arranged[s.if_grad].grad):
            continue
        if s.input is not None:
            if arranged[s.input] is not None:
                _keep(body, counted, arranged[s.input], s.width)
        elif s.output is not None:
            _keep(body, counted, outs[s.output], s.width)
        else:
            part.kept[(s.width, "heads" if s.heads else first, s.core)] += s.values
            part.core_flops += s.flops
    part.comm["alltoall"] += _numel(shapes_in[0]) * op.top_k if op.op_name in ("moe", "experts") else 0  # tokens to experts
    part.comm["kv"] += _kv_values(node, shapes_in, shapes_out)
    split = op.op_name in COLUMN_OR_ROW or composite
    part.flops["heads" if split else place_out] += flops
    for kind, n in owns.items():
        part.params[(kind, node.trainable)] += n
    if split and first == "seq" and given:   # column-parallel: its input's gradient is all-reduced, once
        _all_reduce_grad(given[0], body, counted, part)   # for all that read it (q, k and v projections of one x)
    if split and place_out == "seq":   # row-parallel: its output is all-reduced
        part.comm["forward"] += sum(t.values for t in outs)
    if op.op_name in MERGES and first == "seq":   # a split source (a lone column-parallel projection's image
        part.comm["gather"] += sum(t.values for t in given[1:] if t.place == "heads")   # features) is gathered
    return outs


def _call(node: BlockNode, name: str, args: list[_Tensor], run: Run, body: _Body, counted: set, stacks: dict,
          eager: bool, cache: dict) -> list[_Tensor]:
    """A block call: each segment's body once, times its repetitions; a stack's repetitions are layers."""
    stack = stacks.get(id(node))
    current = list(args)
    previous: _Body | None = None
    for segment in run.nodes[name]:
        given = [t and _Tensor(("in", i), _numel(shape) if shape is not None else t.values, t.place, t.grad)
                 for i, (t, shape) in enumerate(zip(current, segment.run.inputs))]  # `each:` slices an input
        child = _walk(segment.run, given, stacks, eager, cache)
        chained = len(child.outputs)
        first = Part()  # what the first repetition adds to its body's: its inputs that it keeps
        for i, width in child.keeps_inputs.items():
            t = current[i]
            if i < chained and previous is not None:   # the repetition before gave it
                if i not in previous.keeps_outputs:
                    first.kept[(width, t.place, False)] += t.values
            elif t.key not in counted:
                counted.add(t.key)
                if isinstance(t.key, tuple) and t.key[0] == "in":
                    body.keeps_inputs.setdefault(t.key[1], width)
                else:
                    first.kept[(width, t.place, False)] += t.values
        for t in current[:chained]:
            if t is not None and t.grad:
                first.checkpoint[("act", t.place, False)] += t.values
        _reduce(node, child, current, body, counted, first)
        _place(body, child, first, 1, stack, node.shared and previous is not None)
        if segment.count > 1:
            again = Part()
            for i, width in child.keeps_inputs.items():
                if i < chained and i not in child.keeps_outputs:
                    again.kept[(width, child.outputs[i].place, False)] += child.outputs[i].values
            for t in child.outputs:
                if t is not None and t.grad:
                    again.checkpoint[("act", t.place, False)] += t.values
            again.comm["backward"] += sum(child.reduces_inputs.values())
            _place(body, child, again, segment.count - 1, stack, node.shared)
        previous = child
        outputs = [t and _Tensor((name, j, id(segment)), t.values, t.place, t.grad) for j, t in enumerate(child.outputs)]
        current = outputs + current[chained:]
    if previous is None:   # repeated zero times: its inputs pass through
        return args[:len(node.body.outputs)]
    for j in previous.keeps_outputs:
        counted.add(current[j].key)  # kept inside the last repetition
    return current[:len(previous.outputs)]


def _reduce(node: BlockNode, child: _Body, current: list, body: _Body, counted: set, first: Part) -> None:
    """The backward all-reduces of the inputs `child`'s column-parallel ops read: a block called once
    (lib.attention's projections) shares them with the caller's other readers of the tensor (a parallel
    residual's MLP); a repetition counts its own."""
    for i, values in child.reduces_inputs.items():
        t = current[i]
        if node.repeat != 1:
            first.comm["backward"] += values
        else:
            _all_reduce_grad(t, body, counted, first)


def _all_reduce_grad(t: _Tensor, body: _Body, counted: set, part: Part) -> None:
    """The backward all-reduce of `t`'s gradient, counted once for all its readers: in `part`, or
    left to the caller when `t` is an input of the body."""
    if ("grad", t.key) in counted:
        return
    counted.add(("grad", t.key))
    if isinstance(t.key, tuple) and t.key[0] == "in":
        body.reduces_inputs[t.key[1]] = t.values   # an input of the body: its caller's
    else:
        part.comm["backward"] += t.values


def _place(body: _Body, child: _Body, extra: Part, times: int, stack: str | None, shared: bool) -> None:
    """`times` repetitions of `child` (each plus `extra`) into the body: a stack's are layers, a
    wrapper's items (ops, layers) stay in order, any other call's ops join the body's."""
    layers = any(not isinstance(item, Part) for item in child.items)
    if stack is None and layers:
        if times != 1:
            raise ArchgraphError("a repeated block holds the model's stacks of layers: plan cannot lay it out",
                                 hint="write the stack of layers as a block repeated in the model's nodes, not "
                                      "inside a repeated block")
        body.items[-1].add(extra)
        for item in child.items:
            if isinstance(item, Part):
                body.items[-1].add(item)
            else:
                body.items += [item, Part()]
        return
    part = Part()
    part.add(extra)
    part.checkpoint = extra.checkpoint
    for item in child.items:
        part.add(item if isinstance(item, Part) else item[0], 1 if isinstance(item, Part) else item[1])
    if shared:
        part.params = Counter()
    if stack is not None:
        body.items += [(part, times, stack), Part()]
    else:
        body.items[-1].add(part, times)


def _kv_values(node: OpNode, shapes_in: list, shapes_out: list) -> int:
    """Keys and values a self-attention reads (what context parallelism passes around its ring)."""
    if node.op.op_name == "sdpa" and not node.op.causal:   # all its keys and values; a causal one's: its cache's
        return _numel(shapes_in[1]) + _numel(shapes_in[2])
    if node.op.category != "attention":
        return 0
    try:
        cache = node.op.cache(_arranged(node, shapes_in), shapes_out, True)
    except ArchgraphError:
        return 0
    batch = shapes_in[0][0] if shapes_in and shapes_in[0] else 1
    if cache is None and node.op.op_name == "attention" and not node.op.shared_kv:   # an encoder's: all its keys
        return batch * 2 * node.op.n_kv * node.op.d * shapes_in[0][1]                # and values, as sdpa's
    return batch * cache.per_token * cache.tokens if cache is not None and cache.per_token else 0


def _arranged(node: OpNode, values: list) -> list:
    """Input values in the order of the op's inputs, None for optional ones not given (to the last)."""
    out = node.arranged(values)
    return out + [None] * (len(node.op.input_names()[0]) - len(out))


def _param_counts(node: OpNode) -> Counter:
    """The op's own parameters (tied ones are another node's): 'matrix' (rank 2 or more),
    'vector', or 'expert' (a mixture of experts' experts); and what optimizers that look at shapes
    need: 'factored' (Adafactor's row and column statistics of each matrix), 'small' (elements of
    tensors under 4,096, which 8-bit Adam keeps in 32 bits), the experts' own as 'expert_factored' and
    'expert_small'; and its buffers' bytes ('buffer_bytes')."""
    out: Counter = Counter()
    experts = _expert_prefixes(node.op)
    for t in node.op.params():
        if t.name in node.ties:
            continue
        expert = bool(experts) and t.name.startswith(experts[0]) and not t.name.startswith(experts[1:])
        if expert:
            out["expert"] += t.count
        else:
            out["matrix" if len(t.shape) >= 2 else "vector"] += t.count
        of = "expert_" if expert else ""   # an expert's statistics are split and sharded as its experts are
        if len(t.shape) >= 2 and t.count:   # an empty matrix (no shared experts) has no statistics
            rows, cols = t.shape[-2], t.shape[-1]
            out[of + "factored"] += t.count // (rows * cols) * (rows + cols)
        else:
            out[of + "factored"] += t.count
        if t.count < SMALL:
            out[of + "small"] += t.count
    out["buffer_bytes"] += sum(t.nbytes for t in node.op.buffers())   # statistics, tables: each at its dtype
    return out


def _expert_prefixes(op) -> tuple[str, ...]:
    """(experts' tensor prefix, the router's and shared expert's prefixes) of a mixture of experts."""
    if op.op_name == "experts":   # its tensors are the experts' alone
        return ("",)
    if op.op_name != "moe":
        return ()
    names = op.names or op._default()[1]
    return (names[1], f"{names[0]}.", "shared_experts.") if names[1] else ("", f"{names[0]}.", "shared_experts.")


def _numel(shape) -> int:
    n = 1
    for d in shape:
        if not isinstance(d, int):
            raise SpecError(f"plan needs every size bound: {shape} has a symbolic dimension",
                            hint="give it with --set NAME=VALUE")
        n *= d
    return n
