"""`archgraph plan MODEL`: will it fit, on how many GPUs, split how, and how fast: training
(--train, the default) or serving (--serve) on an accelerator, or every layout (--search)."""
from __future__ import annotations

import argparse

DEFAULT_SEQ = 2048


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{value} must lie in (0, 1]: a share of the peak")
    return value


def add_parser(sub, model_command) -> None:
    from ..passes.plan import OPTIMIZERS, RECOMPUTE, TRAIN_DTYPES
    c = model_command(sub, "plan", "plan it on hardware: memory per GPU under tensor, pipeline, data, context and "
                      "expert parallelism, ZeRO and recomputation, step time and MFU (--train); weights, caches, "
                      "prefill and decode by the roofline (--serve); every layout, fastest first (--search)")
    mode = c.add_mutually_exclusive_group()
    mode.add_argument("--train", action="store_true", help="plan training (the default)")
    mode.add_argument("--serve", action="store_true", help="plan serving: prefill and decode")
    c.add_argument("--gpu", default="a100-80gb", metavar="NAME|FILE",
                   help="an accelerator of the built-in table (a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, b200, "
                        "l4, l40s, mi300x, rtx-4090, tpu-v5e, tpu-v5p; any case, or as nvidia-smi names it) or a YAML "
                        "file of your own (default a100-80gb)")
    c.add_argument("--gpus", type=_positive, default=None, help="GPUs in all (default tp x pp x cp, else 1)")
    c.add_argument("--gpus-per-node", type=_positive, default=None, help="GPUs per node (default the table's)")
    for name, what in (("tp", "tensor"), ("pp", "pipeline"), ("cp", "context"), ("ep", "expert")):
        c.add_argument(f"--{name}", type=_positive, default=None, help=f"{what}-parallel ranks (default 1)")
    c.add_argument("--sp", action="store_true", help="sequence parallelism with tensor parallelism (Megatron's)")
    c.add_argument("--zero", type=int, choices=[0, 1, 2, 3], default=None, help="ZeRO stage (FSDP is 3; default 0)")
    c.add_argument("--recompute", choices=RECOMPUTE, default=None,
                   help="activation recomputation: none, selective (attention's score matrices), full (default none)")
    c.add_argument("--seq", type=_positive, default=None, help=f"sequence length S (default {DEFAULT_SEQ:,}, or "
                   "what the model's positions allow)")
    c.add_argument("--micro-batch", type=_positive, default=None, help="sequences per micro-batch (default 1)")
    c.add_argument("--global-batch", type=_positive, default=None, help="sequences per optimizer step (default one "
                   "micro-batch per data-parallel rank; --search: 8 per GPU); gradient accumulation follows")
    c.add_argument("--batch", type=_positive, default=1, help="--serve: sequences decoded together (default 1)")
    c.add_argument("--context", type=_positive, default=None, help="--serve: tokens cached per sequence, the prompt "
                   f"prefilled (default {DEFAULT_SEQ:,})")
    c.add_argument("--dtype", default=None, help=f"training: {', '.join(TRAIN_DTYPES)} (default bf16, mixed "
                   "precision); --serve: the weights' storage, bf16, fp16, fp8, int8, int4 (default bf16; a GGUF file's: as stored)")
    c.add_argument("--kv-dtype", default="bf16", help="--serve: the KV cache's dtype (bf16, fp16, fp8, int8)")
    c.add_argument("--group-size", type=_positive, default=128, help="--serve: weights per scale of int8/int4 (128)")
    c.add_argument("--optimizer", choices=OPTIMIZERS, default="adam", help="default adam")
    c.add_argument("--attention", choices=["flash", "sdpa", "eager"], default="flash",
                   help="flash (or sdpa): a fused kernel that keeps no score matrix (default); eager: the "
                        "probabilities kept, as Korthikanti et al. count them")
    c.add_argument("--flops-efficiency", type=_share, default=0.5,
                   help="share of the peak FLOP/s the kernels reach (default 0.5)")
    c.add_argument("--memory-efficiency", type=_share, default=0.8,
                   help="--serve: share of the memory bandwidth decoding reaches (default 0.8)")
    c.add_argument("--framework", type=float, default=1.0, metavar="GIB",
                   help="memory per GPU left to the framework: CUDA context, workspaces (default 1 GiB)")
    c.add_argument("--search", action="store_true", help="try every layout (tp, pp, ZeRO, recomputation, sp, "
                   "micro-batch) of --gpus; print the fastest that fit and why the others fail")
    c.add_argument("--chart", metavar="FILE", help="--search: draw throughput against memory per GPU (.png, .svg)")
    c.add_argument("--report", metavar="FILE", help="--search: write the model's HTML report with the plans as a "
                   "section (.html)")
    c.add_argument("--top", type=_positive, default=10, help="--search: plans listed (default 10; --json lists all)")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from .common import emit, load_model

    _refuse_other_mode(args)
    model = load_model(args)
    gpu = _gpu(args)
    if args.serve:
        from ..passes.plan_serve import plan_serving
        from ..render.plan import serving_json, serving_table
        plan = plan_serving(model, _serving(args, model), gpu)
        return emit(console, args.json, lambda: serving_json(model.name, plan), lambda: serving_table(model.name, plan))
    setup = Setup(args, model, gpu)
    if args.search:
        return _search(args, console, model, gpu, setup)
    from ..passes.plan import plan_training
    from ..render.plan import training_json, training_table
    plan = plan_training(setup.profile(setup.layout.micro_batch), setup.layout, gpu, heads=setup.heads)
    attention = setup.attention if setup.heads else None   # a model without attention has no kernel to choose
    return emit(console, args.json, lambda: training_json(model.name, plan, setup.bindings, attention),
                lambda: training_table(model.name, plan, setup.bindings, attention))


def _search(args, console, model, gpu, setup) -> int:
    from ..passes.plan_search import search
    from ..render.plan import search_json, search_table
    found = search(setup.profile, setup.layout, gpu, setup.heads, setup.fixed)
    from ..outfile import write_output
    from ..render.plan_chart import search_chart
    if args.chart:
        write_output(args.chart, search_chart(model.name, found, gpu, args.chart), model.files)
    if args.report:
        from ..render.plan_page import plan_section
        from ..render.report import report_data, report_html
        data = report_data([model])
        data.extra.append(plan_section(model.name, found, gpu, search_chart(model.name, found, gpu, "plans.svg")))
        write_output(args.report, report_html(data), model.files)
    from .common import emit
    return emit(console, args.json, lambda: search_json(model.name, found, gpu, setup.attention),
                lambda: search_table(model.name, found, gpu, args.top))


SERVING_ONLY = {"context": "--context", "kv_dtype": "--kv-dtype"}


def _refuse_other_mode(args) -> None:
    """An option of the other mode is refused by name, never dropped."""
    from ..errors import SpecError
    if args.serve:
        given = [f"--{n.replace('_', '-')}" for n in ("zero", "recompute", "micro_batch", "global_batch", "cp", "ep")
                 if getattr(args, n) is not None] + (["--sp"] if args.sp else []) + (["--search"] if args.search else [])
        if args.optimizer != "adam":
            given.append("--optimizer")
        if given:
            raise SpecError(f"{', '.join(given)}: training options, and --serve plans serving",
                            hint="leave them out, or drop --serve")
        return
    given = [flag for name, flag in SERVING_ONLY.items() if getattr(args, name) not in (None, "bf16")]
    given += ["--batch"] if args.batch != 1 else []
    given += ["--group-size"] if args.group_size != 128 else []
    given += ["--memory-efficiency"] if args.memory_efficiency != 0.8 else []
    if given:
        raise SpecError(f"{', '.join(given)}: serving options; training takes --micro-batch, --global-batch, --seq",
                        hint="add --serve to plan serving")
    if (args.chart or args.report) and not args.search:
        raise SpecError(f"{'--chart' if args.chart else '--report'} shows a search: add --search",
                        hint='add --search, or leave out --chart/--report')
    if args.report and not args.report.lower().endswith((".html", ".htm")):
        raise SpecError(f"the report is an HTML page; received '{args.report}'", hint="end the file name with .html")


def _gpu(args):
    from ..hardware import accelerator
    gpu = accelerator(args.gpu)
    if args.gpus_per_node is not None:
        from ..record import replace
        gpu = replace(gpu, gpus_per_node=args.gpus_per_node)
    return gpu


def _sizes(args, model, length: int | None) -> dict:
    """Every size the model's inputs name but B: S (--seq/--context, else --set S, else 2,048 or the
    model's positions), the others as given with --set, else S (an encoder-decoder's T)."""
    from ..errors import SpecError
    from ..passes.memory import default_size
    from ..spec.settings import size_names
    settings = dict(args.settings)
    if "B" in settings:
        raise SpecError("--set B: plan sets the batch with --micro-batch (training) or --batch (--serve)",
                        hint='give the batch with --micro-batch (training) or --batch (--serve)')
    if length is not None and "S" in settings and settings["S"] != length:
        raise SpecError(f"--set S={settings['S']} and --seq/--context {length} disagree: give the length once",
                        hint='give the sequence length once: --seq (or --context) or --set S')
    names = size_names(model.inputs, model.variables)
    seq = length or settings.get("S") or default_size(model, "S", DEFAULT_SEQ)
    sizes = {n: settings.get(n, seq if n == "S" else default_size(model, n, seq)) for n in sorted(names) if n != "B"}
    given = set(settings) | ({"S"} if length else set())
    return _within_positions(model, sizes, given)


def _within_positions(model, sizes: dict, given: set) -> dict:
    """Lengths not given lowered to what the model's position tables hold (GPT-2's 1,024), as
    `compare` does; a length given is never changed (too long: the error says so)."""
    from ..errors import PositionLimitError
    from ..passes.shapes import infer_shapes
    while True:
        try:
            infer_shapes(model, {**sizes, "B": 1})
            return sizes
        except PositionLimitError as exc:
            lower = {n: exc.limit for n, v in sizes.items() if n not in given and v > exc.limit}
            if not lower:
                raise
            sizes = {**sizes, **lower}


def _serving(args, model):
    from ..passes.plan import FRAMEWORK
    from ..passes.plan_serve import Serving
    tp, pp = args.tp or 1, args.pp or 1
    sizes = _sizes(args, model, args.context or args.seq)
    from ..passes.plan_serve import STORED
    stored = args.dtype is None and getattr(model, "stored", None) is not None   # a GGUF file's weights
    return Serving(gpus=args.gpus or tp * pp, tp=tp, pp=pp, batch=args.batch, context=sizes.get("S", DEFAULT_SEQ),
                   dtype=STORED if stored else args.dtype or "bf16", kv_dtype=args.kv_dtype, group_size=args.group_size,
                   flops_efficiency=args.flops_efficiency, memory_efficiency=args.memory_efficiency,
                   framework=int(args.framework * FRAMEWORK))


class Setup:
    """Training's layout from the options, the model's profile per micro-batch (walked once each),
    its attention heads (tensor parallelism divides them) and the options a search keeps."""

    def __init__(self, args, model, gpu) -> None:
        from ..errors import SpecError
        from ..passes.plan import FRAMEWORK, TRAIN_DTYPES, Layout
        self.model, self.attention = model, "flash" if args.attention == "sdpa" else args.attention
        self.bindings = _sizes(args, model, args.seq)
        dtype = args.dtype or "bf16"
        if dtype not in TRAIN_DTYPES:
            raise SpecError(f"--dtype {dtype}: training runs in {', '.join(TRAIN_DTYPES)}",
                            hint="int8 and int4 store weights for serving: add --serve")
        tp, pp, cp, ep = args.tp or 1, args.pp or 1, args.cp or 1, args.ep or 1
        gpus = args.gpus or tp * pp * cp * ep
        batch = args.global_batch or (8 * gpus if args.search else None)
        self.layout = Layout(gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep, sp=args.sp, zero=args.zero or 0,
                             recompute=args.recompute or "none", micro_batch=args.micro_batch or 1,
                             global_batch=batch, dtype=dtype, optimizer=args.optimizer,
                             flops_efficiency=args.flops_efficiency, framework=int(args.framework * FRAMEWORK))
        self.fixed = {name: getattr(self.layout, name) for name in ("tp", "pp", "zero", "recompute", "micro_batch")
                      if getattr(args, name) is not None}
        if args.sp:
            self.fixed["sp"] = True
        self.heads = _heads(model.graph)
        self._profiles: dict = {}

    def profile(self, micro_batch: int):
        from ..passes.plan_activations import activation_profile
        if micro_batch not in self._profiles:
            self._profiles[micro_batch] = activation_profile(self.model, {**self.bindings, "B": micro_batch},
                                                             eager=self.attention == "eager")
        return self._profiles[micro_batch]


def _heads(graph) -> int | None:
    """The greatest common divisor of the attention's query and key/value heads (tensor parallelism
    splits each: Megatron refuses key/value heads that tp does not divide), or None."""
    from math import gcd

    from ..graph import OpNode
    found = 0
    for node in graph.nodes.values():
        if isinstance(node, OpNode):
            heads = getattr(node.op, "heads", None) or getattr(node.op, "num_heads", None)
            if node.op.category == "attention" and isinstance(heads, int):
                kv = getattr(node.op, "n_kv", None) or getattr(node.op, "kv_heads", None)   # attention's; sdpa's
                found = gcd(found, heads, kv if isinstance(kv, int) else 0)
        elif node.repeat:
            inner = _heads(node.body)
            found = gcd(found, inner or 0)
    return found or None
