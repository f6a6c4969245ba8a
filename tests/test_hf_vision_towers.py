"""Vision towers of issue 29 (DINOv3, Qwen2.5-VL's, Qwen3-VL's, Mllama's): what their templates
refuse by name, and the sizes their inputs take (counts and parity: test_hf_configs.py,
test_torch_hf.py)."""
from __future__ import annotations

import pytest

from archgraph.errors import ArchgraphError
from archgraph.load import load_config
from conftest import write_config

DINOV3 = dict(model_type="dinov3_vit", architectures=["DINOv3ViTModel"], hidden_size=32, num_attention_heads=4,
              intermediate_size=40, num_hidden_layers=2, image_size=32, patch_size=8, num_register_tokens=2)


def test_dinov3_puts_the_class_and_register_tokens_ahead_of_the_patches(tmp_path):
    shapes = load_config(write_config(tmp_path, **DINOV3), {"B": 1}).shapes()
    assert shapes.shape_of("embeddings") == [(1, 1 + 2 + 16, 32)]
    assert shapes.shape_of("patch_grid") == [(2, 1, 19)]   # the rotary positions of all 19 tokens, 3 of them at 0
    assert shapes.shape_of("rope_embeddings") == [(1, 19, 8), (1, 19, 8)]


def test_dinov3_refuses_heads_that_do_not_split_in_quarters(tmp_path):
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **{**DINOV3, "hidden_size": 24}))   # head size 6
    assert "the head size (hidden_size / num_attention_heads) must be a multiple of 4" in err.value.message
    assert "D=6" in err.value.message


def test_dinov3_refuses_a_query_bias_without_a_value_bias(tmp_path):
    with pytest.raises(ArchgraphError) as err:
        load_config(write_config(tmp_path, **DINOV3, query_bias=True, value_bias=False))
    assert "query_bias and value_bias differ" in err.value.message
