"""The constructs the speech encoders (wav2vec 2.0, HuBERT) brought, each on its own: a convolution
whose weight is weight-normalised (`weight_norm: d`, the tensors and the computation of
torch.nn.utils.parametrizations.weight_norm) and `conv_frames_mask`, the padding mask of the frames
a stack of strided 1-D convolutions makes from padded samples."""
from __future__ import annotations

import pytest

from conftest import spec_module

torch = pytest.importorskip("torch")

WEIGHT_NORM = """
inputs: {x: [B, 16, T]}
nodes:
  - {name: conv, op: conv1d, in: x, in_channels: 16, out_channels: 16, kernel_size: 6, padding: 3, groups: 4,
     weight_norm: 2}
"""


def test_a_weight_normalised_convolution_is_torchs(tmp_path):
    module = spec_module(tmp_path, WEIGHT_NORM, 0.5)
    torch.manual_seed(1)
    reference = torch.nn.utils.parametrizations.weight_norm(
        torch.nn.Conv1d(16, 16, 6, padding=3, groups=4), name="weight", dim=2)
    assert {k: tuple(v.shape) for k, v in module.state_dict().items()} == {
        "conv.parametrizations.weight.original0": (1, 1, 6), "conv.parametrizations.weight.original1": (16, 4, 6),
        "conv.bias": (16,)}
    module.load_state_dict({f"conv.{k}": v for k, v in reference.state_dict().items()}, strict=True)
    x = torch.randn(2, 16, 9)
    with torch.no_grad():
        got, want = module(x=x)["conv"], reference(x)
    assert got.shape == (2, 16, 10)
    assert (got - want).abs().max().item() < 1e-5
    # the magnitude matters: g scales each kernel tap's slice of the weight
    with torch.no_grad():
        module.get_parameter("conv.parametrizations.weight.original0").mul_(2.0)
        doubled = module(x=x)["conv"]
    assert (doubled - got).abs().max().item() > 1e-2


FRAMES = """
inputs: {mask: [B, N], frames: [B, T, 3]}
nodes:
  - {name: kept, op: conv_frames_mask, in: [mask, frames], kernels: [10, 3], strides: [5, 2]}
"""


def test_frames_mask_keeps_the_frames_each_rows_samples_make(tmp_path):
    """Kernels 10 and 3, strides 5 and 2: 50 samples make (50 - 10) // 5 + 1 = 9 frames, then
    (9 - 3) // 2 + 1 = 4; 29 samples make 4, then 1; 64 samples (unpadded) make 11, then 5."""
    module = spec_module(tmp_path, FRAMES)
    mask = torch.zeros(3, 64, dtype=torch.long)
    for row, n in enumerate((50, 29, 64)):
        mask[row, :n] = 1
    got = module(mask=mask, frames=torch.zeros(3, 5, 3))["kept"]
    assert got.tolist() == [[True] * 4 + [False], [True] + [False] * 4, [True] * 5]


def test_frames_mask_is_transformers_feature_vector_mask(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.Wav2Vec2Config(conv_dim=(4, 4, 4), conv_kernel=(7, 3, 2), conv_stride=(3, 2, 2),
                                         hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                         num_conv_pos_embedding_groups=2)
    with torch.device("meta"):
        model = transformers.Wav2Vec2Model(config)
    module = spec_module(tmp_path, FRAMES.replace("[10, 3]", "[7, 3, 2]").replace("[5, 2]", "[3, 2, 2]"))
    torch.manual_seed(0)
    mask = torch.zeros(6, 200, dtype=torch.long)
    for row, n in enumerate(torch.randint(40, 201, (6,)).tolist()):
        mask[row, :n] = 1
    frames = (200 - 7) // 3 + 1
    frames = ((frames - 3) // 2 + 1 - 2) // 2 + 1
    want = model._get_feature_vector_attention_mask(frames, mask)
    got = module(mask=mask, frames=torch.zeros(6, frames, 3))["kept"]
    assert got.tolist() == want.tolist()
