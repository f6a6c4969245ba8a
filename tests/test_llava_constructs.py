"""The constructs LLaVA's template is made of, each on its own: `masked_scatter`, clip_vision.yaml's
feature layer (the hidden state after FL layers), and llama.yaml's `embeds` (its decoder reads
inputs_embeds; the embedding table is its caller's)."""
from __future__ import annotations

from pathlib import Path

import pytest

from archgraph import load
from archgraph.load import load_text

torch = pytest.importorskip("torch")
from archgraph.torch import to_module

SPECS = Path(__file__).parent.parent / "specs" / "hf"


def test_masked_scatter_writes_the_source_in_order_where_the_mask_holds():
    model = load_text("name: ms\ninputs:\n  x: [2, 4, 3]\n  ids: {shape: [2, 4], dtype: int64}\n  src: [2, 2, 3]\n"
                      "nodes:\n  - {name: hit, op: eq, in: ids, constant: 7}\n"
                      "  - {name: mask, op: unsqueeze, dim: -1}\n"
                      "  - {name: out, op: masked_scatter, in: [x, mask, src]}\n"
                      "outputs:\n  out: out\n", "ms.yaml")
    x, src = torch.zeros(2, 4, 3), torch.arange(12.0).reshape(2, 2, 3)
    ids = torch.tensor([[7, 1, 7, 2], [3, 7, 4, 7]])
    got = to_module(model)(x=x, ids=ids, src=src)["out"]
    assert torch.equal(got, x.masked_scatter((ids == 7).unsqueeze(-1), src))
    assert got[0, 2].tolist() == [3.0, 4.0, 5.0] and got[1, 1].tolist() == [6.0, 7.0, 8.0]
    assert got[0, 1].tolist() == [0.0, 0.0, 0.0]


def test_clip_vision_feature_is_the_hidden_state_after_fl_layers():
    sizes = {"H": 16, "L": 3, "A": 2, "I": 20, "C": 3, "IS": 12, "PS": 4, "feature": True}
    whole = load(str(SPECS / "clip_vision.yaml"), {**sizes, "FL": 3})
    split = load(str(SPECS / "clip_vision.yaml"), {**sizes, "FL": 1})
    # the split changes no tensor: the layers keep their numbers
    names = [n for n, _ in split.params().state_dict()]
    assert names == [n for n, _ in whole.params().state_dict()]
    assert "encoder.layers.2.mlp.fc2.weight" in names and split.params().total == whole.params().total
    a, b = to_module(whole).eval(), to_module(split).eval()
    b.load_state_dict(a.state_dict(), strict=True)
    pixels = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        full, part = a(pixel_values=pixels), b(pixel_values=pixels)
        assert torch.allclose(full["last_hidden_state"], part["last_hidden_state"], atol=1e-6)
        assert torch.allclose(full["feature"], full["last_hidden_state"], atol=1e-6)  # FL = L: the last
        assert not torch.allclose(part["feature"], part["last_hidden_state"], atol=1e-3)
    assert part["feature"].shape == (2, 10, 16)


def test_clip_vision_without_feature_has_its_usual_outputs():
    model = load(str(SPECS / "clip_vision.yaml"), {"H": 16, "L": 2, "A": 2, "I": 20, "IS": 12, "PS": 4})
    with torch.no_grad():
        out = to_module(model).eval()(pixel_values=torch.randn(1, 3, 12, 12))
    assert set(out) == {"last_hidden_state", "pooler_output"}


def test_llama_embeds_reads_inputs_embeds_and_leaves_the_table_to_its_caller():
    sizes = {"head": "base", "V": 50, "H": 16, "L": 2, "A": 2, "I": 24}
    plain = load(str(SPECS / "llama.yaml"), sizes)
    given = load(str(SPECS / "llama.yaml"), {**sizes, "embeds": True})
    assert plain.params().total - given.params().total == 50 * 16   # embed_tokens is the caller's
    a, b = to_module(plain).eval(), to_module(given).eval()
    assert tuple(a.input_names) == ("input_ids",) and tuple(b.input_names) == ("input_ids", "inputs_embeds")
    state = {k: v for k, v in a.state_dict().items() if not k.startswith("embed_tokens")}
    b.load_state_dict(state, strict=True)
    ids = torch.randint(0, 50, (2, 5))
    with torch.no_grad():
        want = a(input_ids=ids)["last_hidden_state"]
        got = b(input_ids=ids, inputs_embeds=a.tensor("embed_tokens.weight")[ids])["last_hidden_state"]
    assert torch.allclose(want, got, atol=1e-6)


@pytest.mark.parametrize("change, message", [
    ({"vision_feature_layer": [-2, -1]}, "'vision_feature_layer' must be a number"),
    ({"text_config": {"model_type": "mistral"}}, "'text_config.model_type' is \"mistral\""),
    ({"vision_config": {"model_type": "siglip_vision_model"}}, "'vision_config.model_type' is \"siglip_vision_model\""),
])
def test_llava_refuses_what_its_template_cannot_build_by_key(tmp_path, change, message):
    import json

    from archgraph import ArchgraphError
    config = json.loads((Path(__file__).parent / "data" / "hf" / "llava-cond-gen.json").read_text())["config"]
    for key, value in change.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) else value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ArchgraphError, match=message):
        load(str(path))
