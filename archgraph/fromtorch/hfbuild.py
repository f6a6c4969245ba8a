"""The model a config describes, as transformers builds it, on the meta device from the start.

The class is `architectures[0]`, else the config's base model (AutoModel's, else the model class
its own modeling module defines for that config: a vision tower's config builds the tower).
Attention is transformers' default: PyTorch's scaled_dot_product_attention where the class
supports it, else its eager attention; a model without attention takes neither.  Mixture-of-experts
layers use the batched-matmul experts where the class can set them.

While the model is made (`on_meta`), every parameter and every tensor larger than
`CPU_BYTES` is made on the meta device (no memory, a 7B model in seconds, a vocabulary of 10^12
rows costs nothing); small buffers stay on the CPU with the values their code computes (rotary
frequencies, position ids), which the spec then computes from constants.  A model of more than
`MAX_TENSORS` tensors is refused while it is being made.
"""
from __future__ import annotations

import contextlib
import importlib
import math
from pathlib import Path

import torch
from torch.utils._device import DeviceContext, _device_constructors

from ..errors import ArchgraphError, Loc, did_you_mean, shortened
from ..hf import head_of
from ..limits import MAX_TENSORS
from .hfconfig import _first

CPU_BYTES = 64 * 1024 * 1024   # a tensor made while building larger than this goes to the meta device
CPU_MODEL_BYTES = 1024 ** 3    # the largest model built on the CPU, with values, for code that reads them


def model_class(config, names: list[str], path: str | Path):
    """The class to build: transformers' class named `names[0]`, else the config's base model."""
    import transformers
    loc = Loc(str(path))
    if names:
        cls = getattr(transformers, names[0], None)
        if cls is None or not hasattr(cls, "_from_config"):
            raise ArchgraphError(f"architectures[0] '{shortened(names[0])}' is not a model class of transformers "
                                 f"{transformers.__version__}", loc=loc,
                                 hint=did_you_mean(names[0], (n for n in dir(transformers) if n.endswith(
                                     ("Model", "LM", "Generation", "Classification")))) or
                                 "name a class transformers defines, or leave architectures out for the base model")
        return cls
    cls = base_class(config)
    if cls is None:
        raise ArchgraphError(f"transformers defines no model class for a '{config.model_type}' config alone "
                             f"({type(config).__name__} configures a part of another model)", loc=loc,
                             hint="import the model it is part of, or name a class in \"architectures\"")
    return cls


def base_class(config):
    """AutoModel's class for `config`, else the model class of its modeling module built from that
    config class: the one named like the config (Aimv2TextConfig -> Aimv2TextModel), a bare model
    before one with a head; None when the module defines none."""
    from transformers import PreTrainedModel
    from transformers.models.auto.modeling_auto import MODEL_MAPPING
    kind = type(config)
    try:
        found = MODEL_MAPPING[kind]
        return found[0] if isinstance(found, (tuple, list)) else found  # Funnel names two: the first
    except (KeyError, ValueError):
        pass
    try:
        module = importlib.import_module(kind.__module__.replace(".configuration_", ".modeling_"))
    except ImportError:
        return None
    stem = kind.__name__.removesuffix("Config")
    found = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, PreTrainedModel)
             and c.__dict__.get("config_class", getattr(c, "config_class", None)) is kind
             and not c.__name__.endswith("PreTrainedModel")]

    def rank(c):
        shared = len(_common_prefix(c.__name__, stem))
        return (c.__name__ != f"{stem}Model", head_of(c.__name__) != "base", -shared, len(c.__name__), c.__name__)
    return min(found, key=rank) if found else None


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def build(cls, config, path: str | Path, meta: bool = True):
    """`cls` built from `config` on the meta device (see the module docstring), or with `meta` False on
    the CPU with transformers' initial weights, in float32, in eval mode; whatever transformers
    raises while building it is one ArchgraphError naming the class."""
    kwargs = {"dtype": torch.float32}
    try:  # a class whose backend is not installed raises ImportError at its first attribute (torchaudio)
        if getattr(cls, "_can_set_experts_implementation", lambda: False)():
            # experts as batched matmuls of the weights each token's experts select: what the eager loop
            # over experts computes, with no shape that depends on the routing
            kwargs["experts_implementation"] = "batched_mm"
        make = cls.from_config if not hasattr(cls, "_from_config") else cls._from_config
    except ImportError as exc:
        raise ArchgraphError(f"transformers cannot build {cls.__name__} without a package it needs: {_needed(exc)}",
                             loc=Loc(str(path)), hint="install that package, or import a model that does not "
                                                      "need it") from None
    with on_meta(cls.__name__, path) if meta else contextlib.nullcontext():
        try:
            model = make(config, **kwargs)
        except ArchgraphError:
            raise
        except ImportError as exc:
            raise ArchgraphError(f"transformers cannot build {cls.__name__} without a package it needs: "
                                 f"{_needed(exc)}", loc=Loc(str(path)),
                                 hint="install that package, or import a model that does not need it") from None
        except (Exception, RecursionError) as exc:  # noqa: BLE001  transformers' many ways to fail
            raise ArchgraphError(f"transformers cannot build {cls.__name__} from this config: {_first(exc)}",
                                 loc=Loc(str(path)), hint="correct the config value it names") from None
    return model.eval()


def _needed(exc: ImportError) -> str:
    """'timm' from transformers' "TimmBackbone requires the timm library but it was not found"."""
    text = " ".join(str(exc).split())
    import re
    m = re.search(r"requires the (\S+) library", text)
    return m.group(1) if m else (exc.name or shortened(text, 120))


class _Meta(DeviceContext):
    """Tensor factories (torch.empty, zeros, arange, ...) given no device make their tensor on the
    meta device when it is larger than CPU_BYTES, else on the CPU."""

    def __init__(self):
        super().__init__(torch.device("meta"))

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _device_constructors() and kwargs.get("device") is None and _large(func, args, kwargs):
            kwargs["device"] = self.device
        return func(*args, **kwargs)


def _large(func, args, kwargs) -> bool:
    """Whether a factory call would make more than CPU_BYTES (or a size it cannot tell)."""
    try:
        if func in (torch.arange, torch.range):
            nums = [float(a) for a in args if isinstance(a, (int, float))]
            start, end, step = (0.0, nums[0], 1.0) if len(nums) == 1 else (nums + [1.0])[:3]
            count = math.ceil(abs(end - start) / abs(step or 1.0))
        elif func in (torch.linspace, torch.logspace):
            count = int(args[2] if len(args) > 2 else kwargs.get("steps", 0))
        else:
            shape = kwargs.get("size", args[0] if args else ())
            if isinstance(shape, (int, torch.SymInt)):
                shape = args
            count = math.prod(int(d) for d in shape) if isinstance(shape, (tuple, list, torch.Size)) else 0
    except (TypeError, ValueError, IndexError):
        return False
    dtype = kwargs.get("dtype") or torch.get_default_dtype()
    return count * (dtype.itemsize if isinstance(dtype, torch.dtype) else 8) > CPU_BYTES


@contextlib.contextmanager
def on_meta(name: str, path: str | Path):
    """Parameters on the meta device, large tensors too, small buffers on the CPU; the count of
    tensors bounded by MAX_TENSORS (the limit on a checkpoint's)."""
    register_parameter, register_buffer = torch.nn.Module.register_parameter, torch.nn.Module.register_buffer
    made = [0]

    def counted():
        made[0] += 1
        if made[0] > MAX_TENSORS:
            raise ArchgraphError(f"{name} holds more than {MAX_TENSORS:,} tensors, more than archgraph reads "
                                 "of one model", loc=Loc(str(path)),
                                 hint="check the config's layer and expert counts")

    def parameter(self, param_name, param):
        counted()
        if param is not None and param.device.type != "meta":
            param = type(param)(param.to("meta"), requires_grad=param.requires_grad)
        register_parameter(self, param_name, param)

    def buffer(self, buffer_name, tensor, persistent=True):
        counted()
        register_buffer(self, buffer_name, tensor, persistent)

    torch.nn.Module.register_parameter, torch.nn.Module.register_buffer = parameter, buffer
    try:
        with _Meta():
            yield
    finally:
        torch.nn.Module.register_parameter, torch.nn.Module.register_buffer = register_parameter, register_buffer
