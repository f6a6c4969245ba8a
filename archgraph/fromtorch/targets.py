"""What `archgraph import-torch TARGET` traces: a Hugging Face config.json (the model transformers
builds from it on the meta device: no weights, any size) or `package.module:callable` returning a
module (or a module and its example inputs), with inputs given as `NAME=2x16:int64`."""
from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import torch

from ..errors import ArchgraphError, did_you_mean

HF_TOKENS = 16  # the example sequence length of a config's model (a size torch.export keeps symbolic)
_INPUT = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<shape>\d+(x\d+)*)(:(?P<dtype>[a-z0-9]+))?")
_DTYPES = {"int64": torch.int64, "int32": torch.int32, "float32": torch.float32, "float64": torch.float64,
           "bool": torch.bool, "long": torch.int64, "float": torch.float32}


def parse_input(text: str) -> tuple[str, torch.Tensor]:
    """`input_ids=2x16:int64` as (name, a tensor of that shape: zeros for integers, N(0, 1) otherwise)."""
    m = _INPUT.fullmatch(text.strip())
    if m is None or (m["dtype"] and m["dtype"] not in _DTYPES):
        raise ArchgraphError(f"--input {text!r}: expected NAME=SHAPE[:DTYPE], e.g. input_ids=2x16:int64 "
                             f"(dtypes: {', '.join(sorted(_DTYPES))})")
    shape = tuple(int(d) for d in m["shape"].split("x"))
    dtype = _DTYPES[m["dtype"] or "float32"]
    torch.manual_seed(0)
    value = torch.randn(shape, dtype=dtype) if dtype.is_floating_point else torch.zeros(shape, dtype=dtype)
    return m["name"], value


def from_callable(target: str, inputs: dict[str, torch.Tensor]) -> tuple[torch.nn.Module, tuple, dict]:
    """The module `package.module:callable` returns, and its inputs: those it returns with it (a
    tuple or dict as its second item), else `inputs` (by forward's parameter names)."""
    module_name, _, attr = target.partition(":")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # as python -m does: a module beside the user is found
    try:
        found = importlib.import_module(module_name)
    except ImportError as exc:
        raise ArchgraphError(f"{target}: cannot import module '{module_name}': {exc}",
                             hint="give package.module:callable importable from this directory") from None
    fn = getattr(found, attr, None)
    if fn is None or not callable(fn):
        raise ArchgraphError(f"{target}: module '{module_name}' has no callable '{attr}'")
    made = fn()
    args: tuple = ()
    kwargs: dict = dict(inputs)
    if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module):
        made, given = made
        if isinstance(given, dict):
            kwargs = {**given, **kwargs}
        else:
            args = tuple(given) if isinstance(given, (list, tuple)) else (given,)
    if not isinstance(made, torch.nn.Module):
        raise ArchgraphError(f"{target} returned {type(made).__name__}, not a torch.nn.Module "
                             "(or a module and its example inputs)")
    if not args and not kwargs:
        raise ArchgraphError(f"{target}: no example inputs",
                             hint="give them with --input NAME=2x16:int64, or return (module, inputs)")
    return made, args, kwargs


def from_config(path: str) -> tuple[torch.nn.Module, tuple, dict]:
    """The model a config.json describes, as transformers builds it (the class of architectures[0],
    else the base model; attention by SDPA, mixture-of-experts layers by batched matmuls) with its
    parameters on the meta device, in float32, called with `input_ids` [2, 16]."""
    try:
        import transformers
    except ImportError:
        raise ArchgraphError("'archgraph import-torch CONFIG.json' needs transformers, which is not installed",
                             hint="pip install 'transformers==5.23.0'") from None
    if not Path(path).is_file():
        raise ArchgraphError(f"{path}: no such file", hint="give a Hugging Face config.json, or "
                                                          "package.module:callable")
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ArchgraphError(f"{path}: cannot read it as JSON: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("model_type"), str):
        raise ArchgraphError(f"{path}: a Hugging Face config.json names its model_type; this one does not")
    known = transformers.CONFIG_MAPPING
    if raw["model_type"] not in known:
        raise ArchgraphError(f"{path}: transformers {transformers.__version__} does not know model_type "
                             f"'{raw['model_type']}'",
                             hint=did_you_mean(raw["model_type"], known.keys()) or
                             "transformers.CONFIG_MAPPING lists the model types it knows")
    config = transformers.AutoConfig.for_model(**raw)
    names = raw.get("architectures") or []
    cls = getattr(transformers, names[0], None) if names else transformers.AutoModel
    if cls is None or not hasattr(cls, "_from_config"):
        raise ArchgraphError(f"{path}: architectures[0] '{names[0]}' is not a model class of transformers "
                             f"{transformers.__version__}",
                             hint=did_you_mean(names[0], (n for n in dir(transformers) if n.endswith(
                                 ("Model", "LM", "Generation", "Classification")))) or
                             "name a class transformers defines, or leave architectures out for the base model")
    build = cls.from_config if cls is transformers.AutoModel else cls._from_config
    with params_on_meta():
        try:
            # experts as batched matmuls of the weights each token's experts select: what the eager loop
            # over experts computes, with no shape that depends on the routing
            model = build(config, attn_implementation="sdpa", experts_implementation="batched_mm",
                          dtype=torch.float32)
        except (ValueError, TypeError) as exc:
            first = str(exc).splitlines()[0].split(". ")[0] if str(exc) else type(exc).__name__
            raise ArchgraphError(f"{path}: transformers cannot build {getattr(cls, '__name__', cls)} with "
                                 f"PyTorch's scaled_dot_product_attention: {first}",
                                 hint="archgraph traces attention as F.scaled_dot_product_attention; a model "
                                      "with eager attention only is not imported yet") from None
    model.eval()
    ids = torch.zeros(2, HF_TOKENS, dtype=torch.long, device="meta")
    kwargs: dict[str, Any] = {"input_ids": ids}
    params = inspect.signature(model.forward).parameters
    if "use_cache" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        kwargs["use_cache"] = False  # no cache object in the trace
    return model, (), kwargs


@contextlib.contextmanager
def params_on_meta():
    """Modules made inside have their parameters on the meta device (no memory, no initialisation
    cost: a 7B model in seconds) and their buffers on the CPU, with the values their code gives them
    (rotary frequencies, position ids), as accelerate's init_empty_weights(include_buffers=False)."""
    register = torch.nn.Module.register_parameter

    def on_meta(self, name, param):
        register(self, name, param)
        if param is not None and param.device.type != "meta":
            kind = type(self._parameters[name])
            self._parameters[name] = kind(self._parameters[name].to("meta"), requires_grad=param.requires_grad)
    torch.nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register
