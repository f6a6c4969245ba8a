"""timm's MobileNet-V5 encoder (specs/hf/mobilenetv5.yaml, Gemma 3n's vision tower) and what it
brought: rms_norm over a map's channels (axis 1, timm's RmsNorm2d), checked against timm's formula;
the tower's sizes at other image sizes (SAME padding: ceil(size / 2) per stride; the fusion
adapter's pooling or bilinear resize to 16 x 16); gemma3n_vision's keys refused by name; and,
where timm imports, the tower's outputs against timm.create_model('mobilenetv5_300m_enc').
Its parameters and state_dict names are checked against timm 1.0.31 through transformers 5.23.0
by the fixtures tests/data/hf/gemma3n_vision-*.json (test_hf_configs)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from conftest import spec_module, write_config

import archgraph
from archgraph import ArchgraphError, ShapeError
from archgraph.ops import REGISTRY

SPEC = str(Path(__file__).resolve().parents[1] / "specs" / "hf" / "mobilenetv5.yaml")


def test_rms_norm_over_channels_is_timms_rms_norm2d(tmp_path):
    torch = pytest.importorskip("torch")
    module = spec_module(tmp_path, """
archgraph: 1
name: norm2d
inputs: {x: {shape: [B, 6, 5, 4]}}
nodes:
  - {name: norm, op: rms_norm, in: x, dim: 6, eps: 1.0e-6, axis: 1}
outputs: {y: {from: norm}}
""")
    torch.manual_seed(0)
    x, weight = torch.randn(2, 6, 5, 4), torch.randn(6)
    module.load_state_dict({"norm.weight": weight})
    # timm.layers.fast_norm.rms_norm2d: x * rsqrt(mean(x², dim=1) + eps) * weight[c]
    want = x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6) * weight.reshape(1, -1, 1, 1)
    got = module(x=x)["y"]
    assert got.shape == (2, 6, 5, 4)
    assert torch.allclose(got, want, atol=1e-6)


def test_rms_norm_over_channels_needs_the_channels_at_dim_1():
    op = REGISTRY["rms_norm"](dim=6, axis=1)
    assert op.infer_shape((2, 6, 5, 4)) == (2, 6, 5, 4)
    with pytest.raises(ShapeError, match="channel dimension"):
        op.infer_shape((2, 5, 4, 6))


@pytest.mark.parametrize("size, total", [((768, 768), 294_126_912), ((100, 70), 294_126_912)])
def test_the_tower_gives_a_16_by_16_map_of_2048_at_any_size(size, total):
    model = archgraph.load(SPEC, {"IH": size[0], "IW": size[1]})
    assert model.params().total == total   # timm 1.0.31: sum(p.numel()) of mobilenetv5_300m_enc
    assert tuple(model.shapes(B=2).outputs["last_hidden_state"]) == (2, 2048, 16, 16)


@pytest.mark.parametrize("key, value, words", [
    ("model_args", {"depth": 3}, "model_args are passed to timm.create_model"),
    ("do_pooling", True, "forward_head"),
    ("architecture", "mobilenetv5_base", "architecture"),
])
def test_gemma3n_vision_refuses_what_the_template_does_not_build(tmp_path, key, value, words):
    path = write_config(tmp_path, model_type="gemma3n_vision", **{key: value})
    with pytest.raises(ArchgraphError, match=words):
        archgraph.load(str(path))


TIMM = importlib.util.find_spec("timm") is not None and importlib.util.find_spec("torchvision") is not None


@pytest.mark.slow
@pytest.mark.skipif(not TIMM, reason="timm (which needs a torchvision built for the torch beside it) is not installed")
@pytest.mark.parametrize("size", [(64, 64), (100, 70), (256, 256)])
def test_the_tower_runs_as_timm_does(size):
    torch = pytest.importorskip("torch")
    timm = pytest.importorskip("timm")
    from archgraph.torch import to_module
    torch.manual_seed(0)
    ref = timm.create_model("mobilenetv5_300m_enc", pretrained=False, num_classes=0).eval()
    with torch.no_grad():  # layer scales and norms away from their initial 1e-5 and 1
        for name, p in ref.named_parameters():
            if name.endswith("gamma"):
                p.normal_(0, 0.3)
            elif p.dim() == 1:
                p.normal_(1.0, 0.2)
    module = to_module(archgraph.load(SPEC), check_memory=False).eval()
    module.load_state_dict({"timm_model." + k: v for k, v in ref.state_dict().items()}, strict=True)
    x = torch.randn(2, 3, *size)
    with torch.no_grad():
        want, got = ref(x), module(pixel_values=x)["last_hidden_state"]
    assert got.shape == want.shape == (2, 2048, 16, 16)
    assert torch.allclose(got, want, atol=1e-4)
