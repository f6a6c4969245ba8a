"""Buffers carry their dtype (issue 35): GPT-Neo's bool masks, Llama 4's complex64 rotary table and
BERT's int64 position ids are declared so, listed so by `params` (the table and --json), priced at
their own bytes by `memory`, shown on the report page and built in that dtype by `to_module`.
test_hf_configs checks the dtype of every buffer of every recorded config against transformers'."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from archgraph.load import load_config
from archgraph.passes.memory import estimate_memory
from conftest import write_config

HF = Path(__file__).parent / "data" / "hf"


def recorded(tmp_path, name: str):
    fixture = json.loads((HF / f"{name}.json").read_text())
    return load_config(write_config(tmp_path, **fixture["config"]))


def test_gpt_neo_masks_are_priced_at_one_byte_a_value(tmp_path, cli):
    """GPTNeoConfig's defaults: 24 layers, each a [1, 1, 2048, 2048] bool causal mask: 96 MiB, not the
    384 MiB of float32."""
    model = recorded(tmp_path, "gpt_neo-defaults-only")
    memory = estimate_memory(model, {"B": 1, "S": 16})
    assert memory.buffers_by_dtype == {"bool": 24 * 2048 * 2048}
    assert memory.buffers_bytes == 24 * 2048 * 2048 == 100_663_296
    code, out, _ = cli("memory", write_config(tmp_path, **json.loads((HF / "gpt_neo-defaults-only.json").read_text())
                                              ["config"]), "--set", "S=16")
    assert code == 0
    assert "buffers (bool; not parameters)" in out and "96.00 MiB" in out
    code, out, _ = cli("memory", str(tmp_path / "config.json"), "--set", "S=16", "--json")
    assert json.loads(out)["buffers_bytes"] == 100_663_296


def test_llama4_rotary_table_is_complex64(tmp_path, cli):
    """Llama 4 Scout's vision tower keeps freqs_ci, [577, 1, 44] complex64: 8 bytes a value."""
    model = recorded(tmp_path, "llama4_vision_model-scout-17b-16e")
    totals = model.params().totals
    assert dict(totals.buffers_by_dtype) == {"complex64": 577 * 44}
    assert totals.buffer_bytes == 577 * 44 * 8 == 203_104
    code, out, _ = cli("params", str(tmp_path / "config.json"), "--json")
    report = json.loads(out)
    assert (report["buffers"], report["buffer_bytes"], report["buffers_by_dtype"]) == \
        (25_388, 203_104, {"complex64": 25_388})
    (table,) = [t for node in report["nodes"] if node["path"] == "rotary_embedding" for t in node["tensors"]]
    assert table == {"name": "freqs_ci", "shape": [577, 1, 44], "params": 25_388, "buffer": True,
                     "dtype": "complex64"}


def test_params_table_and_report_page_name_the_dtype(tmp_path, cli):
    from archgraph.render.report import report_data
    model = recorded(tmp_path, "bert-base-odd-sizes")
    code, out, _ = cli("params", str(tmp_path / "config.json"))
    assert code == 0
    rows = [line.split("│")[1:4] for line in out.splitlines() if "(buffer" in line]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["embeddings.position_ids", "buffer", "[1, 40] (buffer, int64)"],
        ["embeddings.token_type_ids", "buffer", "[1, 40] (buffer, int64)"]]
    row = next(line for line in out.splitlines() if line.strip().startswith("Buffers (not parameters)"))
    assert row.split() == ["Buffers", "(not", "parameters)", "80", "int64"]
    section = report_data([model]).sections[0]
    assert section.totals["buffer_bytes"] == 80 * 8
    texts = [row.cells["tensors"] for row in section.rows if "(buffer" in str(row.cells.get("tensors"))]
    assert texts == ["[1, 40] (buffer, int64)"] * 2


def test_to_module_builds_each_buffer_in_its_dtype(tmp_path):
    """int64 ids, a bool mask, a bfloat16 scalar and float32 tables as transformers keeps them; a dtype
    given to to_module casts the floating ones only, as module.to(dtype) would."""
    torch = pytest.importorskip("torch")
    from archgraph.torch import memory_need, to_module
    config = {"model_type": "gpt_neo", "hidden_size": 32, "num_layers": 2, "num_heads": 4, "vocab_size": 97,
              "max_position_embeddings": 16, "attention_types": [[["global", "local"], 1]], "window_size": 4}
    module = to_module(load_config(write_config(tmp_path, **config)))
    assert {b.dtype for _, b in module.named_buffers()} == {torch.bool}
    config = {"model_type": "recurrent_gemma", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 37, "vocab_size": 97, "lru_width": 32, "attention_window_size": 8,
              "block_types": ["recurrent", "attention"]}
    model = load_config(write_config(tmp_path, **config))
    kinds = {name.rsplit(".", 1)[-1]: b.dtype for name, b in to_module(model).named_buffers()}
    assert kinds["normalizer"] == torch.bfloat16 and kinds["inv_freq"] == torch.float32
    kinds = {name.rsplit(".", 1)[-1]: b.dtype for name, b in to_module(model, dtype=torch.float64).named_buffers()}
    assert kinds["normalizer"] == torch.float64 and kinds["inv_freq"] == torch.float64
    model = load_config(write_config(tmp_path, model_type="bert", hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=4, intermediate_size=37, vocab_size=97,
                                     max_position_embeddings=16))
    for dtype in (None, torch.float64):
        kinds = {b.dtype for _, b in to_module(model, dtype=dtype).named_buffers()}
        assert kinds == {torch.int64}
    need = memory_need(model)
    assert need["buffers"] == 2 * 16 * 8   # position_ids and token_type_ids, [1, 16] int64 each


def test_llama4_vision_table_holds_transformers_values(tmp_path):
    """The module computes freqs_ci when it is built: the very complex64 values transformers' tower keeps."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama4.modeling_llama4 import Llama4VisionRotaryEmbedding

    from archgraph.torch import to_module
    config = {"model_type": "llama4_vision_model", "hidden_size": 64, "num_hidden_layers": 1,
              "num_attention_heads": 2, "intermediate_size": 256, "image_size": 48, "patch_size": 8,
              "vision_output_dim": 32, "projector_input_dim": 32, "projector_output_dim": 32}
    module = to_module(load_config(write_config(tmp_path, **config)))
    table = module.get_buffer("rotary_embedding.freqs_ci")
    want = Llama4VisionRotaryEmbedding._compute_freqs_ci(transformers.Llama4VisionConfig(**config))
    assert table.dtype == want.dtype == torch.complex64 and table.shape == want.shape == (37, 1, 16)
    assert torch.equal(table, want)
