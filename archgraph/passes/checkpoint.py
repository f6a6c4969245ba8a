"""A spec's tensors against a safetensors checkpoint's, as data.

`compare` returns the differences: tensors missing from the checkpoint, tensors the
spec does not have, shapes that differ.  A tied tensor the checkpoint stores once
(GPT-2's lm_head.weight) is not missing, and checkpoint tensors named like the
spec's buffers (BatchNorm running statistics) are buffers, not extras.  Names are
compared as they are, unless a prefix to strip or add says otherwise; when one
prefix would explain the differences, the result says so.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..checkpoint import Checkpoint, TensorInfo
from ..errors import ArchgraphError
from .params import count_params


@dataclass(frozen=True)
class PrefixHint:
    option: str            # "--add-prefix" or "--strip-prefix"
    prefix: str            # with its trailing dot
    before: int            # differences as compared
    after: int             # differences with the option


@dataclass
class Comparison:
    model: str
    checkpoint: Checkpoint
    spec_tensors: int                      # parameter names, tied names included
    spec_params: int                       # parameters, each tensor once
    missing: list[tuple[str, tuple]] = field(default_factory=list)           # (name, spec shape)
    extra: list[tuple[str, TensorInfo]] = field(default_factory=list)        # (name, checkpoint tensor)
    wrong_shape: list[tuple[str, tuple, TensorInfo]] = field(default_factory=list)
    stored_once: list[tuple[str, str]] = field(default_factory=list)         # (spec name, name stored)
    buffers: list[str] = field(default_factory=list)                         # spec buffers in the checkpoint
    buffers_absent: list[tuple[str, tuple]] = field(default_factory=list)    # spec buffers not saved
    renamed: dict[str, str] = field(default_factory=dict)                    # checkpoint name -> compared name
    prefix_hint: PrefixHint | None = None

    @property
    def differences(self) -> int:
        return len(self.missing) + len(self.extra) + len(self.wrong_shape)

    @property
    def agree(self) -> bool:
        return self.differences == 0

    @property
    def checkpoint_params(self) -> int:
        """Elements of the checkpoint's tensors that are not spec buffers."""
        buffers = set(self.buffers)
        return sum(t.elements for n, t in self._compared().items() if n not in buffers)

    @property
    def checkpoint_buffers(self) -> int:
        compared = self._compared()
        return sum(compared[n].elements for n in self.buffers)

    def _compared(self) -> dict[str, TensorInfo]:
        return {self.renamed.get(n, n): t for n, t in self.checkpoint.tensors.items()}


def spec_tensors(model) -> tuple[dict[str, tuple], dict[str, str], dict[str, tuple], int]:
    """(params {name: shape}, ties {name: owner name}, buffers {name: shape}, unique param count)."""
    report = count_params(model)
    params, ties = {}, {}
    for name, row in report.tensors():
        params[name] = tuple(row.shape)
        if row.tied_to:
            ties[name] = row.tied_to
    buffers = {f"{path}.{row.name}": tuple(row.shape)
               for path, _node, _new, rows in report.nodes() for row in rows if row.buffer}
    return params, ties, buffers, report.total


def rename(names, strip: str | None, add: str | None) -> dict[str, str]:
    """Checkpoint name -> the name to compare (strip a prefix where present, then add one)."""
    out = {}
    for name in names:
        new = name[len(strip):] if strip and name.startswith(strip) else name
        out[name] = (add or "") + new
    seen: dict[str, str] = {}
    for old, new in out.items():
        if new in seen:
            raise ArchgraphError(f"after renaming, checkpoint tensors '{seen[new]}' and '{old}' both "
                                 f"become '{new}'", hint="change --strip-prefix / --add-prefix")
        seen[new] = old
    return out


def compare(model, ckpt: Checkpoint, strip: str | None = None, add: str | None = None) -> Comparison:
    params, ties, buffers, total = spec_tensors(model)
    result = _diff(model.name, ckpt, params, ties, buffers, total, strip, add)
    if not result.agree:
        result.prefix_hint = _prefix_hint(result, ckpt, params, ties, buffers, total, strip, add)
    return result


def _diff(name, ckpt, params, ties, buffers, total, strip, add) -> Comparison:
    renamed = rename(ckpt.tensors, strip, add)
    stored = {renamed[n]: t for n, t in ckpt.tensors.items()}
    out = Comparison(name, ckpt, len(params), total,
                     renamed={k: v for k, v in renamed.items() if k != v})
    groups: dict[str, list[str]] = {}
    for n in params:
        groups.setdefault(ties.get(n, n), []).append(n)
    for n, shape in params.items():
        if n in stored:
            if stored[n].shape != shape:
                out.wrong_shape.append((n, shape, stored[n]))
            continue
        present = [m for m in groups[ties.get(n, n)] if m in stored]
        if present:
            out.stored_once.append((n, present[0]))
        else:
            out.missing.append((n, shape))
    for n, info in stored.items():
        if n in params:
            continue
        if n in buffers:
            out.buffers.append(n)
            if info.shape != buffers[n]:
                out.wrong_shape.append((n, buffers[n], info))
        else:
            out.extra.append((n, info))
    out.buffers_absent = [(n, s) for n, s in buffers.items() if n not in stored]
    return out


def _prefix_hint(result, ckpt, params, ties, buffers, total, strip, add) -> PrefixHint | None:
    """The one prefix option that removes the most differences, if any removes some."""
    def first(names):
        return Counter(n.split(".", 1)[0] + "." for n in names if "." in n).most_common(3)

    candidates = [("--add-prefix", p) for p, _ in first(n for n, _ in result.missing)]
    candidates += [("--strip-prefix", p) for p, _ in first(n for n, _ in result.extra)]
    best = None
    for option, prefix in candidates:
        s, a = (strip, prefix) if option == "--add-prefix" else (prefix, add)
        try:
            after = _diff(result.model, ckpt, params, ties, buffers, total, s, a).differences
        except ArchgraphError:
            continue
        if after < result.differences and (best is None or after < best.after):
            best = PrefixHint(option, prefix, result.differences, after)
    return best
