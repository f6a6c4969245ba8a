"""What `archgraph import-torch TARGET` traces: a Hugging Face config.json (the model transformers
builds from it on the meta device: no weights, any size) or `package.module:callable` returning a
module (or a module and its example inputs), with inputs given as `NAME=2x16:int64`."""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import torch

from ..errors import ArchgraphError, did_you_mean

_INPUT = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<shape>\d+(x\d+)*)(:(?P<dtype>[a-z0-9]+))?")
_DTYPES = {"int64": torch.int64, "int32": torch.int32, "float32": torch.float32, "float64": torch.float64,
           "bool": torch.bool, "long": torch.int64, "float": torch.float32}


MAX_INPUT_ELEMENTS = 2 ** 28  # an example input made on the CPU (1 GB of float32); on the meta device any size


def parse_input(text: str, device: str = "cpu") -> tuple[str, torch.Tensor]:
    """`input_ids=2x16:int64` as (name, a tensor of that shape on `device`: zeros for integers,
    N(0, 1) otherwise)."""
    m = _INPUT.fullmatch(text.strip())
    if m is None or (m["dtype"] and m["dtype"] not in _DTYPES) or len(m["shape"]) > 200:
        raise ArchgraphError(f"--input {text!r}: expected NAME=SHAPE[:DTYPE], e.g. input_ids=2x16:int64 "
                             f"(dtypes: {', '.join(sorted(_DTYPES))})",
                             hint='write the input as NAME=SHAPE[:DTYPE], e.g. --input input_ids=2x16:int64')
    shape = tuple(int(d) for d in m["shape"].split("x"))
    count = 1
    for d in shape:
        count *= d
    if device != "meta" and count > MAX_INPUT_ELEMENTS:
        raise ArchgraphError(f"--input {text!r}: {count:,} elements is more than an example input made in "
                             f"memory may hold ({MAX_INPUT_ELEMENTS:,})", hint="give a smaller shape")
    dtype = _DTYPES[m["dtype"] or "float32"]
    if device == "meta":
        return m["name"], torch.empty(shape, dtype=dtype, device="meta")
    value = torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(0)) \
        if dtype.is_floating_point else torch.zeros(shape, dtype=dtype)
    return m["name"], value


def from_callable(target: str, inputs: dict[str, torch.Tensor]) -> tuple[torch.nn.Module, tuple, dict, list[str]]:
    """The module `package.module:callable` returns, its inputs (those it returns with it, a tuple
    or dict as its second item, else `inputs` by forward's parameter names) and the source files
    the import read (an output never replaces one).  Whatever the user's code raises while it is
    imported or called, SystemExit included, is one ArchgraphError naming the target."""
    module_name, _, attr = target.partition(":")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # as python -m does: a module beside the user is found
    before = set(sys.modules)
    try:
        found = importlib.import_module(module_name)
    except ImportError as exc:
        raise ArchgraphError(f"{target}: cannot import module '{module_name}': {exc}",
                             hint="give package.module:callable importable from this directory") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001  the user's module, run as it is imported
        raise _raised(target, f"importing '{module_name}'", exc) from None
    sources = _sources([found, *(sys.modules[m] for m in set(sys.modules) - before)])
    fn = getattr(found, attr, None)
    if fn is None or not callable(fn):
        raise ArchgraphError(f"{target}: module '{module_name}' has no callable '{attr}'",
                             hint='name a function or class the module defines: module:attribute')
    try:
        made = fn()
    except (Exception, SystemExit) as exc:  # noqa: BLE001  the user's callable
        raise _raised(target, f"calling '{attr}'", exc) from None
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
                             "(or a module and its example inputs)",
                             hint='return a torch.nn.Module, or a (module, example inputs) pair')
    if not args and not kwargs:
        raise ArchgraphError(f"{target}: no example inputs",
                             hint="give them with --input NAME=2x16:int64, or return (module, inputs)")
    return made, args, kwargs, sources


def _raised(target: str, doing: str, exc: BaseException) -> ArchgraphError:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    what = f"{type(exc).__name__}({text})" if isinstance(exc, SystemExit) else \
        f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return ArchgraphError(f"{target}: {doing} raised {what[:300]}",
                          hint="import-torch runs your code to build the module: fix the error it raises")


def _sources(modules) -> list[str]:
    """The files the given modules were loaded from."""
    files = []
    for m in modules:
        file = getattr(m, "__file__", None)
        if isinstance(file, str):
            files.append(file)
    return files


def from_config(path: str, given: dict[str, torch.Tensor] | None = None,
                texts: list[str] | None = None) -> tuple[torch.nn.Module, tuple, dict]:
    """The model a config.json describes, as transformers builds it on the meta device
    (`hfbuild`: the class of architectures[0], else the base model; its own attention, sdpa where
    it has it), read and checked as `import-hf` reads configs (`hfconfig`), and its example inputs
    (`hfinputs`: made from forward's signature and the config; `given` by name wins).  A field the
    config leaves unset that transformers cannot build the model without is set (`hfdefaults`), and
    said in the spec written inside `notes.recording()`.  Where the example inputs need values (the
    placeholders an image grid makes, counted by running the tower), the model is built on the CPU
    (`with_values`; `texts`, the --input flags, made again there)."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise ArchgraphError("'archgraph import-torch CONFIG.json' needs transformers, which is not installed",
                             hint="pip install 'transformers==5.23.0'") from None
    from . import hfbuild, hfconfig, hfdefaults, hfinputs
    from .specialise import ValuesUnknown
    raw = hfconfig.read(path)
    config = hfconfig.config_object(raw, path)
    cls = hfbuild.model_class(config, raw.get("architectures") or [], path)
    model = hfdefaults.built(lambda: hfbuild.build(cls, config, path), config, cls.__name__)
    try:
        return model, (), hfinputs.example_inputs(model, dict(given or {}))
    except ValuesUnknown as why:
        return with_values(model, path, list(texts or []), why)


def with_values(model: torch.nn.Module, path: str, texts: list[str], why: ArchgraphError) -> tuple[torch.nn.Module, tuple, dict]:
    """A config's model whose code reads values computed from its weights or inputs (`why`, the
    trace's ValuesUnknown), which the meta device does not have: built again on the CPU with
    transformers' initial weights, with its example inputs (`texts`: --input) there, when its
    parameters take at most hfbuild.CPU_MODEL_BYTES; else `why`, saying so."""
    from . import hfbuild, hfinputs
    size = sum(p.numel() * p.element_size() for p in model.parameters())
    if size > hfbuild.CPU_MODEL_BYTES:
        raise ArchgraphError(f"{why.message}; a copy of the model with values would take {size / 1024 ** 3:.1f} GB "
                             f"of parameters, more than archgraph builds on the CPU "
                             f"({hfbuild.CPU_MODEL_BYTES / 1024 ** 3:.0f} GB)",
                             hint="import a config with fewer or smaller layers (the spec's layers are "
                                  "the config's), or the module with its weights through to_spec")
    cpu = hfbuild.build(type(model), model.config, path, meta=False)
    given = dict(parse_input(text, "cpu") for text in texts)
    return cpu, (), hfinputs.example_inputs(cpu, given)
