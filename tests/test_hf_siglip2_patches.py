"""SigLIP 2 takes any number of patches per input: the processor's max_num_patches is independent of the
position table's num_patches, which transformers resamples to each image's grid (issue 35: archgraph
forced the input to the table's size).  NP, the patches of an input, is a size of the inputs: a tensor
of another NP rebuilds the model (the table keeps its rows), and every image's grid and padding patches
compute what transformers computes."""
from __future__ import annotations

import json

import pytest

from archgraph.load import load_config

VISION = {"hidden_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
          "num_patches": 16, "patch_size": 3, "num_channels": 2}
CONFIGS = {
    "Siglip2VisionModel": {"model_type": "siglip2_vision_model", "architectures": ["Siglip2VisionModel"], **VISION},
    "Siglip2Model": {"model_type": "siglip2", "architectures": ["Siglip2Model"], "vision_config": VISION,
                     "text_config": {"vocab_size": 97, "hidden_size": 32, "intermediate_size": 37,
                                     "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 16,
                                     "projection_size": 24}},
    "Siglip2ForImageClassification": {"model_type": "siglip2", "architectures": ["Siglip2ForImageClassification"],
                                      "num_labels": 3, "vision_config": VISION},
}


def test_another_patch_count_keeps_the_position_table(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["Siglip2VisionModel"]))
    table = load_config(path)
    for patches in (9, 40):
        model = load_config(path, {"NP": patches})
        assert model.params().total == table.params().total == 13_863   # as transformers counts it
        rows = {name: row.shape for name, row in model.params().tensors()}
        assert rows["embeddings.position_embedding.weight"] == (16, 24)
        assert model.shapes(B=2).outputs["last_hidden_state"] == (2, patches, 24)


# (patches per input, each image's grid): a grid filling the input, and one with padding patches after it
SIZES = [(9, [[3, 3], [2, 4]]), (25, [[5, 5], [3, 7]]), (40, [[4, 10], [6, 6]]), (16, [[4, 4], [1, 15]])]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("patches, grids", SIZES, ids=[str(p) for p, _ in SIZES])
def test_any_patch_count_computes_what_transformers_computes(tmp_path, name, patches, grids):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_torch_hf import _hf_model

    from archgraph.torch import to_module
    config = CONFIGS[name]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    reference = _hf_model(config)
    module = to_module(load_config(path)).eval()   # built for the table's 16 patches
    module.load_state_dict(reference.state_dict(), strict=True)
    torch.manual_seed(2)
    shapes = torch.tensor(grids)
    inputs = {"pixel_values": torch.randn(2, patches, 2 * 3 * 3), "spatial_shapes": shapes,
              "pixel_attention_mask": (torch.arange(patches) < shapes.prod(-1)[:, None]).long()}
    assert inputs["pixel_attention_mask"].sum().item() < 2 * patches   # padding patches in image 1
    if name == "Siglip2Model":
        inputs["input_ids"] = torch.randint(0, 97, (2, 7))
    with torch.no_grad():
        want, got = reference(**inputs), module(**inputs)
    assert got
    for key, value in got.items():
        expected = getattr(want, key)
        if key == "last_hidden_state":   # the padding patches' states are not transformers' to promise
            keep = inputs["pixel_attention_mask"].bool()
            value, expected = value[keep], expected[keep]
        assert value.shape == expected.shape, key
        scale = max(1.0, expected.abs().max().item())
        assert (value - expected).abs().max().item() < 1e-4 * scale, key
    tables = [v.shape for k, v in module.state_dict().items() if k.endswith("position_embedding.weight")]
    assert tables[-1] == (16, 24)   # the vision tower's table kept its rows
