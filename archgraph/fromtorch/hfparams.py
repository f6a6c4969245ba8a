"""What forward's signature and its own errors say of a parameter beyond its name (for `hfinputs`):

- a parameter forward requires but types as optional (Phi-4's audio encoder's `mask: Tensor | None`)
  may be given None, which the example does where archgraph makes nothing for it;
- a parameter typed as a list of tensors (SAM 3's DETR encoder's `vision_features`) is no input a
  spec has, nor one `--input` gives: refused naming it;
- an optional tensor parameter forward fails without is asked for by its error, which names it
  (`encoder_hidden_states must be given for cross-attention layers`, "`visual_feats` cannot be
  `None`", "Make sure that `context_input_ids` are passed"): `asked` reads those names, and the
  example makes them as it makes any input (or refuses naming them, with the error that asked).
"""
from __future__ import annotations

import inspect
import re

from ..errors import ArchgraphError

ASKS = 6  # rounds of inputs a forward's errors may ask for, one after another (RAG asks for three)


def may_be_none(param: inspect.Parameter) -> bool:
    """Whether the parameter's type admits None (`Tensor | None`, `Optional[Tensor]`)."""
    text = _annotation(param)
    return "None" in text or "Optional" in text


def is_list(param: inspect.Parameter) -> bool:
    """Whether the parameter is typed as a list or tuple of tensors."""
    return _annotation(param).replace("typing.", "").startswith(("list[", "List[", "tuple[", "Tuple[", "Sequence["))


def is_tensor(param: inspect.Parameter) -> bool:
    """Whether the parameter may be a tensor (untyped, or typed as one)."""
    return param.annotation is inspect.Parameter.empty or "Tensor" in _annotation(param)


def asked(exc: BaseException, params, inputs: dict) -> list[str]:
    """The tensor parameters of forward (`params`) missing from `inputs` that its error `exc` names:
    as a whole word, and either written with an underscore (`encoder_hidden_states`) or quoted
    (`` `mask` ``), so that a plain word of the message is not read as a parameter."""
    text = str(exc)
    out = []
    for name, p in params.items():
        if name in inputs or name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or \
                not is_tensor(p) or is_list(p):
            continue
        word = re.escape(name)
        if re.search(rf"(?<![\w.]){word}(?!\w)", text) and ("_" in name or re.search(rf"[`'\"]{word}[`'\"]", text)):
            out.append(name)
    return out


def none_given(param, asked: bool) -> bool:
    """Whether a parameter archgraph cannot make is given None: required, its type admitting None."""
    return param is not None and not asked and param.default is param.empty and may_be_none(param)


def cannot(cls: str, name: str, param, why: str | None):
    """The refusal of input `name` archgraph cannot make: named with the flag that gives it (and `why`,
    the error of forward's that asked for it), or, typed as a list of tensors, as no input a spec (or
    --input) has."""
    if param is not None and is_list(param):
        raise ArchgraphError(f"{cls}.forward needs '{name}', a list of tensors ({_annotation(param)}): a "
                             "spec's inputs are tensors, and --input gives one tensor",
                             hint="import the model it is part of, or call archgraph.torch.to_spec on a module "
                                  "taking the tensors one by one")
    said = f" (without it, forward raised {why})" if why else ""
    raise ArchgraphError(f"{cls}.forward needs '{name}'{said}, which archgraph cannot make from the config",
                         hint=f"give it with --input {name}=SHAPE[:DTYPE], e.g. --input {name}=2x16:float32")


def _annotation(param: inspect.Parameter) -> str:
    a = param.annotation
    if a is inspect.Parameter.empty:
        return ""
    return a if isinstance(a, str) else str(a).replace("<class '", "").replace("'>", "")
