"""The aten ops that read a tensor where another says, fold blocks back into an image, measure
distances between rows, or reduce bags of table rows: `grid_sampler_2d`, `col2im`, `_cdist_forward`,
`_pdist_forward`, `_embedding_bag`, each as the archgraph op of the same meaning."""
from __future__ import annotations

from .aten import Out, Refuse, aten, first_output_only, named, rule


@rule(aten.grid_sampler_2d.default)
def _grid_sample(n, c):
    a = named(n)
    hp = {}
    mode = ("bilinear", "nearest", "bicubic")[a["interpolation_mode"]]
    padding = ("zeros", "border", "reflection")[a["padding_mode"]]
    if mode != "bilinear":
        hp["mode"] = mode
    if padding != "zeros":
        hp["padding_mode"] = padding
    if a["align_corners"]:
        hp["align_corners"] = True
    return Out("grid_sample", [a["input"], a["grid"]], hp)


@rule(aten.col2im.default)
def _fold(n, c):
    a = named(n)
    hp = {"output_size": [c.size(s) for s in a["output_size"]], "kernel_size": _one(a["kernel_size"])}
    for key, default in (("dilation", 1), ("padding", 0), ("stride", 1)):
        if _one(a[key]) != default:
            hp[key] = _one(a[key])
    return Out("fold", [a["self"]], hp)


COMPUTE_MODES = {None: "use_mm_for_euclid_dist_if_necessary", 0: "use_mm_for_euclid_dist_if_necessary",
                 1: "use_mm_for_euclid_dist", 2: "donot_use_mm_for_euclid_dist"}


@rule(aten._cdist_forward.default)
def _cdist(n, c):
    a = named(n)
    hp = {"p": float(a["p"])}
    if COMPUTE_MODES[a["compute_mode"]] != COMPUTE_MODES[None]:
        hp["compute_mode"] = COMPUTE_MODES[a["compute_mode"]]
    return Out("cdist", [a["x1"], a["x2"]], hp)


@rule(aten._pdist_forward.default)
def _pdist(n, c):
    return Out("pdist", [n.args[0]], {"p": float(named(n)["p"])})


@rule(aten._embedding_bag.default, aten._embedding_bag_forward_only.default)
def _embedding_bag(n, c):
    """nn.EmbeddingBag: the bags' reductions (the op's other outputs, which bag each id went to and
    the bags' sizes, are the gradient's)."""
    first_output_only(n, "the bag of each id, the bags' sizes or the maxima's rows")
    a = named(n)
    # scale_grad_by_freq and sparse change only the gradient
    num, dim = c.shape(a["weight"])
    hp = {"num_embeddings": num, "embedding_dim": dim, "mode": ("sum", "mean", "max")[a["mode"]]}
    if a["include_last_offset"]:
        hp["include_last_offset"] = True
    if a["padding_idx"] is not None and a["padding_idx"] >= 0:
        hp["padding_idx"] = a["padding_idx"]
    inputs = [a["indices"], a["offsets"]]
    if a["per_sample_weights"] is not None:
        if hp["mode"] != "sum":
            raise Refuse(f"per_sample_weights with mode '{hp['mode']}' (torch takes them with mode 'sum' only)")
        inputs.append(a["per_sample_weights"])
    return Out("embedding_bag", inputs, hp, tensors={"weight": a["weight"]})


def _one(values):
    """A list of equal sizes as one number (kernel 3 for [3, 3]), else the list."""
    values = list(values)
    return values[0] if len(set(values)) == 1 else values
