"""What changes while a module is exported: only what keeps the values it computes.

The module's attributes and buffers are as before after each run (`kept.state_kept`): a table a
run caches (CLVP's rotary embedding by sequence length) is not read by the next as a constant.
A module whose parameters are on the meta device (a config's model, built without weights) is
exported with its buffers on the meta device too, so that no operation mixes devices; the
buffers are put back afterwards, and the spec reads their values from the CPU.  A number forward
makes a tensor of on the meta device (`torch.tensor(finfo.min, device=x.device)`, the fill of
eager attention masks) is made on the CPU, where it keeps its value (a 0-d tensor mixes with any
device), so the spec holds the value, not a tensor of unknown value.

For a transformers model, only what transformers itself changes to export a model:

- transformers' own export patches for torch.export (`transformers.exporters`, backend "dynamo":
  its attention through the math kernel, its chunked vision attention as one batched call, the
  kernels library off): export-safe equivalents that compute the same values;
- position ids computed inside the model count 0..S-1, so they are not read as packed sequences
  (transformers' `find_packed_sequence_indices` inspects their values, which a trace cannot);
- a plain causal or bidirectional mask over no padding, queries and keys the same positions, is
  sdpa's causal flag (or no mask), as transformers passes it outside a trace; a model that fails
  so (it reads the mask itself, as DeepSeek-V3.2's indexer does) is traced again with the mask
  materialised.

Every other attention mask is traced as the ops that compute it (transformers materialises masks
under torch.export, as it does for a padded batch): sliding windows, chunks, padding,
`and_masks`/`or_masks`, image blocks are the comparisons and logical ops of its mask functions,
and the mask reaches `sdpa` as its attn_mask (or the eager attention's added scores).
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from . import valued
from .kept import state_kept


@contextlib.contextmanager
def export_context(module, named: dict[str, Any], flags: bool = True):
    """The context to export `module` in (see the module docstring); with `flags` False, plain masks
    are materialised too (for a model that reads its mask's values: DeepSeek-V3.2's indexer)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(state_kept(module))  # a cache a run sets (a rotary table) is not the next run's constant
        stack.enter_context(one_device(module))
        if not _is_transformers(module):
            yield
            return
        stack.enter_context(_dynamo_patches())
        if flags:
            stack.enter_context(_plain_masks_as_flags())
        if "position_ids" not in named:
            stack.enter_context(_unpacked_positions())
        yield


def one_device(module):
    """Inside, a module whose parameters are on the meta device has its buffers there too (put
    back after): no op mixes devices."""
    if any(p.device.type == "meta" for p in module.parameters()):
        return _buffers_on_meta(module)
    return contextlib.nullcontext()


@contextlib.contextmanager
def _buffers_on_meta(module):
    saved = [(m, name, b) for m in module.modules() for name, b in m._buffers.items()
             if b is not None and b.device.type != "meta"]
    for m, name, b in saved:
        m._buffers[name] = valued.moved(b, "meta")  # its values kept, for code that reads them (valued)
    try:
        with _NumbersOnCpu():
            yield
    finally:
        for m, name, b in saved:
            m._buffers[name] = b


class _NumbersOnCpu(TorchFunctionMode):
    """torch.tensor(number, device=meta) (as_tensor, scalar_tensor) made on the CPU: a 0-d tensor
    that keeps its value and mixes with tensors on the meta device.  A list of numbers
    (PP-DocLayout-V3's torch.tensor([width, height, width, height], device=mask.device)) is made on
    the CPU and moved to the meta device by an op of the trace: the constant keeps its values.  So
    is a list of numbers indexing a tensor on the meta device (Muse Spark's grid_thw[:, [0, 2, 1]]),
    which torch would make on that device itself, and x.new_tensor(list) of one."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.tensor, torch.as_tensor, torch.scalar_tensor) and args and \
                _numbers(args[0]) and _on_meta(kwargs.get("device")):
            made = func(*args, **{**kwargs, "device": "cpu"})
            return made if made.dim() == 0 else made.to("meta")
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and len(args) >= 2 and \
                _on_meta(args[0].device) and _has_list(args[1]):
            index = tuple(_listed(i) for i in args[1]) if isinstance(args[1], tuple) else _listed(args[1])
            return func(args[0], index, *args[2:], **kwargs)
        if func is torch.Tensor.new_tensor and len(args) >= 2 and _on_meta(args[0].device) and \
                _numbers(args[1]) and kwargs.get("device") is None:
            made = torch.tensor(args[1], dtype=kwargs.get("dtype") or args[0].dtype)
            return made if made.dim() == 0 else made.to("meta")
        return func(*args, **kwargs)


def _has_list(index) -> bool:
    """Whether an index holds a list of numbers (x[[2, 0, 1]], x[:, [0, 2, 1]])."""
    return any(isinstance(i, list) and _numbers(i) for i in (index if isinstance(index, tuple) else (index,)))


def _listed(index):
    """A list of numbers in an index as the tensor torch makes of it, on the CPU, moved to the meta
    device by an op of the trace (its values kept as the constant's)."""
    return torch.tensor(index).to("meta") if isinstance(index, list) and _numbers(index) else index


def _numbers(data, depth: int = 0) -> bool:
    """Whether `data` is a Python number or a (nested) list or tuple of them, of at most 4096."""
    if isinstance(data, (bool, int, float)):
        return True
    return isinstance(data, (list, tuple)) and 0 < len(data) <= 4096 and depth < 4 and \
        all(_numbers(d, depth + 1) for d in data)


def _on_meta(device) -> bool:
    try:
        return device is not None and torch.device(device).type == "meta"
    except (RuntimeError, TypeError):
        return False


def _is_transformers(module) -> bool:
    return type(module).__module__.startswith("transformers.") and "transformers" in sys.modules


@contextlib.contextmanager
def _dynamo_patches():
    try:
        from transformers.exporters import exporter_dynamo  # noqa: F401  (registers the patches)
        from transformers.exporters.utils import apply_patches
    except ImportError:  # a transformers without exporters: trace the model as it is
        yield
        return
    with apply_patches("dynamo"):
        yield


@contextlib.contextmanager
def _unpacked_positions():
    mu = sys.modules.get("transformers.masking_utils")
    if mu is None or not hasattr(mu, "find_packed_sequence_indices"):
        yield
        return
    saved = mu.find_packed_sequence_indices
    mu.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        mu.find_packed_sequence_indices = saved


@contextlib.contextmanager
def _plain_masks_as_flags():
    mu = sys.modules.get("transformers.masking_utils")
    mapping = getattr(getattr(mu, "ALL_MASK_ATTENTION_FUNCTIONS", None), "_global_mapping", None)
    if mapping is None or "sdpa" not in mapping:
        yield
        return
    sdpa_mask = mapping["sdpa"]
    plain = (mu.causal_mask_function, mu.bidirectional_mask_function)

    def flags(*args, **kwargs):
        if _is_plain(kwargs, plain):
            return None  # sdpa_attention_forward then passes is_causal (the attention's own flag)
        return sdpa_mask(*args, **kwargs)
    mapping["sdpa"] = flags
    try:
        yield
    finally:
        mapping["sdpa"] = sdpa_mask


def _is_plain(kwargs: dict, plain: tuple) -> bool:
    """Whether transformers asks for a causal or bidirectional mask without padding, window or
    offset, over as many keys as queries (keyword arguments are how masking_utils calls it)."""
    if kwargs.get("mask_function") not in plain or kwargs.get("attention_mask") is not None:
        return False
    if kwargs.get("local_size") is not None or kwargs.get("q_offset", 0) != 0 or kwargs.get("kv_offset", 0) != 0:
        return False
    q, kv = kwargs.get("q_length"), kwargs.get("kv_length")
    return q is not None and (q is kv or str(q) == str(kv))
