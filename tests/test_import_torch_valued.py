"""A model on the meta device run where its code reads values only its inputs and buffers have
(`archgraph.fromtorch.valued`): the placeholders a Qwen-VL-style grid makes, and a trace reading
them, without building the model on the CPU."""
from __future__ import annotations

import json

import pytest
import yaml

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from archgraph.fromtorch import hfbuild, valued  # noqa: E402


class Grid(torch.nn.Module):
    """Patches [N, 4] tiled by a grid read as numbers; each image's patches summed in groups of 4."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 8)
        self.register_buffer("scale", torch.tensor([1, 2, 3]), persistent=False)

    def forward(self, patches, grid):
        sizes = [t * h * w for t, h, w in grid.tolist()]   # values of the input
        scaled = (grid * self.scale).sum().item()           # values of the input and a buffer
        x = self.proj(patches)                              # values of a weight: none on meta
        parts = torch.split(x, sizes)
        return torch.cat([p.reshape(-1, 4, 8).sum(1) for p in parts]), scaled


def _params_on_meta(module):
    for m in module.modules():
        for name, p in list(m._parameters.items()):
            m._parameters[name] = torch.nn.Parameter(p.to("meta"), requires_grad=False)
    return module


def test_values_of_inputs_and_buffers_flow_and_those_of_weights_do_not():
    """The grid's numbers and the buffer's are read as on the CPU; the features, computed with a
    weight on the meta device, have their shape ([2 images x 4 patches / 4, 8] = [3, 8] for grids of
    1 x 2 x 2 and 1 x 2 x 4) and no values."""
    module = _params_on_meta(Grid())
    grid = torch.tensor([[1, 2, 2], [1, 2, 4]])
    patches = valued.moved(torch.randn(12, 4), "meta")
    with torch.no_grad(), valued.running():
        features, scaled = module(patches, valued.moved(grid, "meta"))
    assert features.device.type == "meta" and tuple(features.shape) == (3, 8)
    assert scaled == 1 * 1 + 2 * 2 + 3 * 2 + 1 * 1 + 2 * 2 + 3 * 4
    with pytest.raises(NotImplementedError):  # outside, a meta tensor is what it always was
        module(patches, valued.moved(grid, "meta"))


def test_a_tensor_of_values_moved_to_the_meta_device_keeps_them():
    """x.to(self.device), the device of a weight on meta: the values stay readable (Idefics2 moves its
    pixels to the tower's device before it reads which images are padding)."""
    with valued.running():
        moved = torch.tensor([3.0, 4.0]).to(torch.empty(1, device="meta").device, dtype=torch.float64)
        assert moved.sum().item() == 7.0  # inside, a tensor of values is its values wherever it is
    assert moved.device.type == "meta"
    assert valued.known(moved).dtype == torch.float64 and valued.known(moved).tolist() == [3.0, 4.0]


def test_a_write_of_unknown_values_into_known_ones_is_refused_not_left_stale():
    """known[0] = weight @ x would leave `known` holding its old values where the run reads it later:
    refused (Unvalued), as a value read from the meta device is."""
    weight = torch.empty(2, 2, device="meta")
    known = valued.moved(torch.zeros(2, 2), "meta")
    with valued.running(), pytest.raises(valued.Unvalued, match="writes values computed from weights"):
        known[0] = weight @ torch.ones(2)
    with valued.running(), pytest.raises(valued.Unvalued):
        known.add_(weight)
    assert valued.known(known).tolist() == [[0.0, 0.0], [0.0, 0.0]]


TEXT = {"vocab_size": 100, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
        "num_attention_heads": 4, "num_key_value_heads": 2,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]}}
GLM4V = {"model_type": "glm4v", "text_config": TEXT,
         "vision_config": {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4, "patch_size": 4,
                           "image_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32},
         "image_token_id": 99, "video_token_id": 98}


@pytest.mark.slow
def test_a_grid_model_imports_on_the_meta_device_without_a_cpu_build(tmp_path, monkeypatch):
    """Tiny GLM-4V, with no model allowed on the CPU (CPU_MODEL_BYTES 0, where a default config's
    vocabulary passes 1 GB): its placeholders counted and its trace's grid values read on the meta
    device; count and every state_dict name and shape transformers'."""
    from archgraph.cli import main
    from archgraph.load import load
    from archgraph.passes.params import named_tensors
    monkeypatch.setattr(hfbuild, "CPU_MODEL_BYTES", 0)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(GLM4V))
    assert main(["import-torch", str(config), "-o", str(tmp_path / "glm4v.yaml")]) == 0
    spec = yaml.safe_load((tmp_path / "glm4v.yaml").read_text())
    assert spec["inputs"]["input_ids"]["shape"] == [2, 16 + 16 + 16]  # an image, a video, the text
    assert "built on the CPU" not in spec["description"]
    model = load(str(tmp_path / "glm4v.yaml"))
    with torch.device("meta"):
        hf = transformers.Glm4vModel(transformers.AutoConfig.for_model(**GLM4V))
    assert model.params().total == sum(p.numel() for p in hf.parameters())
    assert {n: [int(d) for d in t.shape] for n, t in named_tensors(model, buffers="persistent")} == \
        {k: list(v.shape) for k, v in hf.state_dict().items()}


def test_positions_on_the_meta_device_have_values_and_select_by_a_mask():
    """RADIO's packed features: positions counted with arange on the meta device, compared with the
    grid's prefix lengths, select from states computed with weights (no values): the mask's values
    are known, so the selection has its size ([2 x 5 - 2, 3] = [8, 3]); expand_as reads the states'
    shape alone, and the mask keeps its values."""
    states = torch.empty(10, 3, device="meta")
    starts = valued.moved(torch.tensor([0, 5]), "meta")
    with torch.no_grad(), valued.running():
        positions = torch.arange(states.shape[0], device=states.device)
        inside = positions - starts.repeat_interleave(torch.tensor([5, 5]))
        kept = states[inside >= 1]
        wide = (inside >= 1).unsqueeze(-1).expand_as(states)
        assert int(wide.sum()) == 24
    assert positions.device.type == "meta" and valued.known(positions).tolist() == list(range(10))
    assert kept.device.type == "meta" and tuple(kept.shape) == (8, 3)


def test_uninitialised_memory_has_no_values_to_keep():
    """Nemotron 3.5 Transcribe writes each chunk's encoder states into x.new_empty(...) of an x made
    from its input alone: that tensor has no values to know, so the write of states computed with
    weights is no stale write (it was refused: Unvalued)."""
    weight = torch.empty(3, 3, device="meta")
    features = valued.moved(torch.randn(2, 4, 3), "meta")
    with torch.no_grad(), valued.running():
        normed = features - features.mean(1, keepdim=True)   # values of the input alone
        states = normed.new_empty(2, 4, 3)
        states[:, :2] = normed[:, :2] @ weight
    assert states.device.type == "meta" and tuple(states.shape) == (2, 4, 3)
