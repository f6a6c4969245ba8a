"""GGUF files in: written by gguf-py's GGUFWriter at test time (tests/gguf_files.py converts tiny
transformers models the way llama.cpp's converter does), read by archgraph's header reader; the count
is transformers', `memory` gives the file's tensor bytes (as gguf-py's own GGUFReader sums them), and
damaged files are refused in one message (exit 2)."""
from __future__ import annotations

import json
import struct

import pytest

gguf = pytest.importorskip("gguf")
import numpy as np  # noqa: E402

import gguf_files as G  # noqa: E402
from archgraph.cli import main  # noqa: E402
from gguf import GGMLQuantizationType as T  # noqa: E402

SMALL = dict(vocab_size=320, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
CONFIGS = {
    "llama": dict(model_type="llama", hidden_size=256, intermediate_size=512, **SMALL),
    "mixtral": dict(model_type="mixtral", hidden_size=256, intermediate_size=256, num_local_experts=4,
                    num_experts_per_tok=2, **SMALL),
    "qwen2": dict(model_type="qwen2", hidden_size=256, intermediate_size=512, tie_word_embeddings=True, **SMALL),
    "qwen3": dict(model_type="qwen3", hidden_size=256, intermediate_size=512, head_dim=32, **SMALL),
    "qwen2_moe": dict(model_type="qwen2_moe", hidden_size=256, intermediate_size=512, moe_intermediate_size=256,
                      shared_expert_intermediate_size=256, num_experts=4, num_experts_per_tok=2, **SMALL),
    "qwen3_moe": dict(model_type="qwen3_moe", hidden_size=256, intermediate_size=512, moe_intermediate_size=256,
                      head_dim=64, num_experts=4, num_experts_per_tok=2, **SMALL),
    "gemma": dict(model_type="gemma", hidden_size=256, intermediate_size=512, head_dim=64, **SMALL),
    "gemma2": dict(model_type="gemma2", hidden_size=256, intermediate_size=512, head_dim=64, sliding_window=64, **SMALL),
    "phi3": dict(model_type="phi3", hidden_size=256, intermediate_size=512, pad_token_id=0, **SMALL),
    "starcoder2": dict(model_type="starcoder2", hidden_size=256, intermediate_size=512, **SMALL),
    "gpt2": dict(model_type="gpt2", vocab_size=320, n_embd=256, n_layer=2, n_head=4, n_positions=128),
    "gemma3_text": dict(model_type="gemma3_text", hidden_size=256, intermediate_size=512, head_dim=64,
                        sliding_window=64, **SMALL),
    "falcon-7b": dict(model_type="falcon", hidden_size=256, multi_query=True, new_decoder_architecture=False,
                      vocab_size=320, num_hidden_layers=2, num_attention_heads=4),
    "falcon-40b": dict(model_type="falcon", hidden_size=256, new_decoder_architecture=True, **SMALL,
                       num_kv_heads=2),
    "olmo2": dict(model_type="olmo2", hidden_size=256, intermediate_size=512, **SMALL),
    "stablelm": dict(model_type="stablelm", hidden_size=256, intermediate_size=512, use_qkv_bias=True,
                     use_parallel_residual=True, **SMALL),
}
# each family takes a different mix of ggml types (2-D and 3-D weights in turn; 1-D stay F32)
KINDS = {"llama": (T.Q4_K, T.Q6_K), "mixtral": (T.Q8_0, T.Q5_K), "qwen2": (T.Q4_0, T.Q4_1),
         "qwen3": (T.Q5_0, T.Q5_1), "qwen2_moe": (T.Q2_K, T.Q3_K), "qwen3_moe": (T.IQ4_XS, T.IQ2_XS),
         "gemma": (T.BF16, T.Q8_0), "gemma2": (T.IQ3_S, T.IQ4_NL), "phi3": (T.TQ1_0, T.TQ2_0),
         "starcoder2": (T.IQ1_S, T.IQ2_XXS), "gpt2": (T.F16, T.Q8_0), "gemma3_text": (T.IQ3_XXS, T.IQ2_S),
         "falcon-7b": (T.IQ1_M, T.Q8_0), "falcon-40b": (T.Q4_K, T.Q5_K),
         "olmo2": (T.Q6_K, T.Q4_0), "stablelm": (T.Q5_K, T.Q8_0)}


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """family -> (path, transformers' parameter count)."""
    folder = tmp_path_factory.mktemp("gguf")
    out = {}
    for name, config in CONFIGS.items():
        path = folder / f"{name}.gguf"
        count, _ = G.convert(config, path, KINDS[name])
        out[name] = path, count
    return out


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_the_count_of_a_converted_model_is_transformers_and_memory_is_the_files_bytes(family, converted, capsys):
    path, count = converted[family]
    code, out, err = run(capsys, "params", path, "--json")
    assert code == 0, err
    assert json.loads(out)["total"] == count
    code, out, err = run(capsys, "memory", path, "--json", "--set", "S=64")
    assert code == 0, err
    report = json.loads(out)
    reader = gguf.GGUFReader(str(path))   # gguf-py's own reader, for the file's tensor bytes
    assert report["stored_bytes"] == sum(int(t.n_bytes) for t in reader.tensors)
    by_type = {}
    for t in reader.tensors:
        by_type[t.tensor_type.name] = by_type.get(t.tensor_type.name, 0) + int(t.n_bytes)
    assert {k: v["bytes"] for k, v in report["stored_by_type"].items()} == by_type
    assert set(KINDS[family]) & {T[k] for k in by_type}   # the quantised types are there
    assert report["kv_cache_bytes"] > 0


def test_memory_table_shows_the_stored_weights_and_kv_cache(converted, capsys):
    path, _ = converted["llama"]
    code, out, _ = run(capsys, "memory", path, "--set", "S=4096")
    assert code == 0
    assert "as stored: Q4_K" in out and "as stored: Q6_K" in out and "as stored in the GGUF file" in out
    # KV cache: 2 layers x 2 (k, v) x 2 kv heads x 64 dims x 4096 tokens x 2 bytes
    assert f"{2 * 2 * 2 * 64 * 4096 * 2:,}" in out
    assert "stored weights + KV cache" in out


def test_a_sequence_past_the_position_table_is_refused_as_for_a_config(converted, capsys):
    """(config_error rebuilt a PositionLimitError without its limit: a TypeError and a traceback.)"""
    code, _, err = run(capsys, "memory", converted["gpt2"][0], "--set", "S=1024")
    assert code == 2 and "sequence length 1024 exceeds the 128 positions" in err and "Traceback" not in err
    assert "fix: give a sequence length of at most 128" in err


def test_every_command_takes_a_gguf_file(converted, capsys, tmp_path):
    path, _ = converted["mixtral"]
    for argv in (("shapes", path), ("flops", path), ("render", path, "-o", tmp_path / "m.svg"),
                 ("compare", path, converted["llama"][0]), ("plan", path)):
        code, out, err = run(capsys, *argv)
        assert code == 0, (argv, err)
    assert (tmp_path / "m.svg").read_text().count("<svg") == 1


def test_check_against_a_gguf_file(converted, capsys, tmp_path):
    path, _ = converted["qwen3"]
    config = dict(CONFIGS["qwen3"], architectures=["Qwen3ForCausalLM"])
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, out, err = run(capsys, "check", tmp_path / "config.json", "--against", path)
    assert code == 0 and "agree" in out, err
    (tmp_path / "config.json").write_text(json.dumps({**config, "intermediate_size": 384}))
    code, out, _ = run(capsys, "check", tmp_path / "config.json", "--against", path, "--json")
    result = json.loads(out)
    assert code == 1 and len(result["wrong_shape"]) == 6
    assert result["wrong_shape"][0]["name"] == "model.layers.0.mlp.gate_proj.weight"
    assert result["wrong_shape"][0]["spec"] == [384, 256] and result["wrong_shape"][0]["checkpoint"] == [512, 256]


def _llama_tensors(hidden=64, layers=1, vocab=32, ff=128, tied=True) -> dict[str, np.ndarray]:
    z = np.zeros
    named = {"token_embd.weight": z((vocab, hidden), np.float32), "output_norm.weight": z(hidden, np.float32)}
    for i in range(layers):
        for part, shape in (("attn_norm", (hidden,)), ("attn_q", (hidden, hidden)), ("attn_k", (hidden, hidden)),
                            ("attn_v", (hidden, hidden)), ("attn_output", (hidden, hidden)), ("ffn_norm", (hidden,)),
                            ("ffn_gate", (ff, hidden)), ("ffn_up", (ff, hidden)), ("ffn_down", (hidden, ff))):
            named[f"blk.{i}.{part}.weight"] = z(shape, np.float32)
    if not tied:
        named["output.weight"] = z((vocab, hidden), np.float32)
    return named


LLAMA_KEYS = {"llama.block_count": (1, gguf.GGUFValueType.UINT32),
              "llama.embedding_length": (64, gguf.GGUFValueType.UINT32),
              "llama.feed_forward_length": (128, gguf.GGUFValueType.UINT32),
              "llama.attention.head_count": (4, gguf.GGUFValueType.UINT32),
              "llama.attention.head_count_kv": (4, gguf.GGUFValueType.UINT32)}


def test_a_hand_made_file_counts_its_tensors(tmp_path, capsys):
    path = tmp_path / "m.gguf"
    G.write(path, _llama_tensors(), "llama", extra=LLAMA_KEYS, kinds=(T.Q8_0,))
    code, out, err = run(capsys, "params", path, "--json")
    assert code == 0, err
    assert json.loads(out)["total"] == 32 * 64 + 64 + 64 + 4 * 64 * 64 + 64 + 3 * 128 * 64


@pytest.mark.parametrize("change, message", [
    (lambda t: t.__setitem__("blk.0.ffn_up.weight", np.zeros((96, 64), np.float32)),
     "tensor 'model.layers.0.mlp.up_proj.weight' (blk.0.ffn_up.weight in the file) is [96, 64] in the file but "
     "[128, 64] in the 'llama' template"),
    (lambda t: t.pop("blk.0.attn_v.weight"),
     "the file has no tensor for 'model.layers.0.self_attn.v_proj.weight' [64, 64] of the 'llama' template "
     "(blk.0.attn_v.weight)"),
    (lambda t: t.__setitem__("blk.0.attn_gate.weight", np.zeros((64, 64), np.float32)),
     "the file's tensor 'blk.0.attn_gate.weight' [64, 64] is no tensor of the template"),
])
def test_a_file_whose_tensors_are_not_the_templates_is_refused_by_name(tmp_path, capsys, change, message):
    named = _llama_tensors()
    change(named)
    path = tmp_path / "m.gguf"
    G.write(path, named, "llama", extra=LLAMA_KEYS)
    code, out, err = run(capsys, "params", path)
    assert code == 2 and message in err and "Traceback" not in err


def test_an_unknown_architecture_or_key_is_refused_by_name(tmp_path, capsys):
    path = tmp_path / "m.gguf"
    G.write(path, _llama_tensors(), "rwkv7", extra={})
    code, _, err = run(capsys, "params", path)
    assert code == 2 and "GGUF architecture 'rwkv7' is not supported" in err and "llama, qwen2" in err
    G.write(path, _llama_tensors(), "llama", extra={**LLAMA_KEYS, "llama.swin_norm": (True, gguf.GGUFValueType.BOOL)})
    code, _, err = run(capsys, "params", path)
    assert code == 2 and "metadata 'llama.swin_norm' = True is not read by archgraph's 'llama' mapping" in err
    gpt2 = {"gpt2.block_count": (1, gguf.GGUFValueType.UINT32), "gpt2.rope.freq_base": (1e4, gguf.GGUFValueType.FLOAT32)}
    G.write(path, _llama_tensors(), "gpt2", extra=gpt2)   # a key every architecture may give, but not GPT-2
    code, _, err = run(capsys, "params", path)
    assert code == 2 and "metadata 'gpt2.rope.freq_base' sets the config's 'rope_theta', which the 'gpt2' key " \
                         "table does not read" in err


# -- damaged and hostile files: each one message, exit 2, before anything large is allocated ------

def _valid(tmp_path) -> bytes:
    path = tmp_path / "ok.gguf"
    G.write(path, _llama_tensors(), "llama", extra=LLAMA_KEYS, vocab=32)
    return path.read_bytes()


def _at(data: bytes, name: bytes) -> int:
    """The offset just after a length-prefixed string `name` in the header."""
    return data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)


def _patched(data: bytes, offset: int, fmt: str, value) -> bytes:
    raw = struct.pack("<" + fmt, value)
    return data[:offset] + raw + data[offset + len(raw):]


HOSTILE = {
    "truncated at the counts": (lambda d: d[:200], "the tensor count is 11, but the 184 bytes"),
    "truncated header": (lambda d: d[:_at(d, b"blk.0.ffn_down.weight") - 30], "the file ends inside the header"),
    "truncated data": (lambda d: d[:-100], "goes past the end of the file"),
    "wrong magic": (lambda d: b"GGUX" + d[4:], "it does not start with 'GGUF'"),
    "version 1": (lambda d: _patched(d, 4, "I", 1), "GGUF version 1; archgraph reads versions 2 and 3"),
    "version 4": (lambda d: _patched(d, 4, "I", 4), "GGUF version 4"),
    "10**12 tensors": (lambda d: _patched(d, 8, "Q", 10 ** 12), "the tensor count is 1,000,000,000,000"),
    "10**9 keys": (lambda d: _patched(d, 16, "Q", 10 ** 9), "the metadata count is 1,000,000,000"),
    "string of 2**60 bytes": (lambda d: _patched(d, 24, "Q", 2 ** 60), "says it is 1,152,921,504,606,846,976 bytes"),
    "array of 2**50 items": (lambda d: _patched(d, _at(d, b"tokenizer.ggml.tokens") + 8, "Q", 2 ** 50),
                             "the length of array 'tokenizer.ggml.tokens' is 1,125,899,906,842,624"),
    "a token of 2**60 bytes": (lambda d: _patched(d, _at(d, b"tokenizer.ggml.tokens") + 4 + 4 + 8 + 10, "Q", 2 ** 60),
                               "says it is 1,152,921,504,606,846,976 bytes long"),
    "unknown value type": (lambda d: _patched(d, _at(d, b"llama.block_count"), "I", 77),
                           "metadata 'llama.block_count' has the unknown value type 77"),
    "unknown ggml type": (lambda d: _patched(d, _at(d, b"blk.0.attn_q.weight") + 4 + 16, "I", 99),
                          "tensor 'blk.0.attn_q.weight' has the unknown ggml type 99"),
    "rank 5": (lambda d: _patched(d, _at(d, b"output_norm.weight"), "I", 5),
               "tensor 'output_norm.weight' has 5 dimensions"),
    "misaligned tensor": (lambda d: _patched(d, _at(d, b"blk.0.attn_q.weight") + 4 + 16 + 4,
                                             "Q", 8 + struct.unpack_from("<Q", d, _at(d, b"blk.0.attn_q.weight") + 24)[0]),
                          "not a multiple of the alignment 32"),
    "overlapping tensors": (lambda d: _patched(d, _at(d, b"blk.0.attn_q.weight") + 4 + 16 + 4, "Q", 0),
                            "overlaps tensor"),
    "not UTF-8": (lambda d: d.replace(b"llama.block_count", b"llama.block\xffcount"),
                  "is not UTF-8 text"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_damaged_or_hostile_file_is_one_refusal(case, tmp_path, capsys):
    damage, message = HOSTILE[case]
    path = tmp_path / "bad.gguf"
    path.write_bytes(damage(_valid(tmp_path)))
    code, out, err = run(capsys, "params", path)
    assert code == 2, (out, err)
    assert message in err and err.startswith("archgraph: error: ") and "Traceback" not in err
    assert len(err.splitlines()) <= 2   # the message and its fix


def test_a_vocabulary_read_past_checks_every_length(tmp_path, capsys):
    """Past 4,096 items an array's strings are not kept, only read past: each length is checked all the same."""
    path = tmp_path / "m.gguf"
    G.write(path, _llama_tensors(vocab=5000), "llama", extra=LLAMA_KEYS, vocab=5000)
    code, out, err = run(capsys, "params", path, "--json")
    assert code == 0 and json.loads(out)["total"] == 5000 * 64 + 64 + 64 + 4 * 64 * 64 + 64 + 3 * 128 * 64, err
    data = path.read_bytes()
    tokens = _at(data, b"tokenizer.ggml.tokens") + 4 + 4 + 8
    third = tokens + (8 + 2) * 2          # "t0", "t1", then "t2"'s length
    path.write_bytes(_patched(data, third, "Q", 2 ** 60))
    code, _, err = run(capsys, "params", path)
    assert code == 2 and "a string of 'tokenizer.ggml.tokens' says it is 1,152,921,504,606,846,976 bytes long" in err
    last = tokens + (8 + 2) * 10 + (8 + 3) * 90 + (8 + 4) * 900 + (8 + 5) * 3999   # "t4999"'s length
    path.write_bytes(_patched(data, last, "Q", 10 ** 9))
    code, _, err = run(capsys, "params", path)
    assert code == 2 and "says it is 1,000,000,000 bytes long" in err


def test_an_array_of_arrays_and_a_fifo_are_refused(tmp_path, capsys):
    import os
    path = tmp_path / "nested.gguf"
    G.write(path, _llama_tensors(), "llama", extra={**LLAMA_KEYS, "llama.x": ([[1, 2], [3]], gguf.GGUFValueType.ARRAY)})
    code, _, err = run(capsys, "params", path)
    assert code == 2 and "is an array of arrays" in err
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "params", fifo)
    assert code == 2 and "a FIFO (named pipe), not a regular file" in err


def test_the_header_alone_is_read(tmp_path):
    """A file whose tensor data is 4.5 GB answers from its header: the data is never read (a sparse file)."""
    from archgraph.ggufread import read_gguf
    data = _valid(tmp_path)
    path = tmp_path / "big.gguf"
    dims = _at(data, b"blk.0.ffn_down.weight") + 4      # the last tensor: Q8_0, ne = [128, 64]
    big = _patched(data, dims + 8, "Q", 2 ** 25)          # ne[1]: 2**25 rows
    path.write_bytes(big)
    with open(path, "r+b") as f:
        f.truncate(len(big) + 2 ** 25 * 128 // 32 * 34)
    header = read_gguf(path)
    assert header.tensors["blk.0.ffn_down.weight"].shape == (2 ** 25, 128)
    assert header.tensors["blk.0.ffn_down.weight"].nbytes == 2 ** 25 * 136


def test_the_docs_example_writes_a_file_archgraph_counts(tmp_path, capsys, monkeypatch):
    """docs/gguf.md's example, run: the count it states is the one archgraph prints."""
    import re
    from conftest import ROOT
    page = (ROOT / "docs" / "gguf.md").read_text()
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/gguf.md", "exec"), {})
    stated = re.search(r"`archgraph params tiny.gguf` counts ([\d,]+) parameters", page).group(1)
    code, out, err = run(capsys, "params", tmp_path / "tiny.gguf", "--json")
    assert code == 0, err
    assert f"{json.loads(out)['total']:,}" == stated


def test_plan_serve_holds_the_weights_as_stored(converted, capsys):
    path, _ = converted["mixtral"]
    code, out, err = run(capsys, "plan", "--serve", path, "--context", "1024", "--json")
    assert code == 0, err
    plan = json.loads(out)
    stored = sum(int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors)
    assert plan["per_gpu"]["weights"] == plan["weights"]["total"] == stored
    assert plan["layout"]["dtype"] == "as stored"
    code, out, _ = run(capsys, "plan", "--serve", path, "--dtype", "int4", "--json")
    assert code == 0 and json.loads(out)["weights"]["total"] != stored   # --dtype: the weights at that type


@pytest.mark.parametrize("arch, sizes, published", [
    ("llama", dict(V=32000, H=4096, L=32, A=32, KV=32, I=11008), 6_738_415_616),                 # Llama 2 7B
    ("qwen2", dict(V=152064, H=3584, L=28, A=28, KV=4, I=18944, qkv_bias=True), 7_615_616_512),  # Qwen2 7B
])
def test_a_7b_model_of_real_size_counts_its_published_figure_from_the_header(arch, sizes, published, tmp_path, capsys):
    """Files of 4 GB (sparse: only the header is written) in llama.cpp's Q4_K_M mix: the count is the
    model card's, and memory the sum of the tensors' blocks."""
    path = tmp_path / f"{arch}-7b-Q4_K_M.gguf"
    named = G.llama_like(**sizes)
    keys = G.llm_keys(arch, sizes["H"], sizes["L"], sizes["A"], sizes["KV"], sizes["I"], 32768, 1e6)
    stored = G.write_header_only(path, arch, keys, named, sizes["V"])
    assert path.stat().st_size > 4 * 10 ** 9
    code, out, err = run(capsys, "memory", path, "--json", "--set", "S=8192")
    assert code == 0, err
    report = json.loads(out)
    assert report["params"] == published
    assert report["stored_bytes"] == stored
    kv = 2 * sizes["L"] * sizes["KV"] * (sizes["H"] // sizes["A"]) * 8192 * 2
    assert report["kv_cache_bytes"] == kv


def test_import_hf_writes_the_spec_of_a_gguf_file(converted, capsys, tmp_path):
    path, count = converted["qwen3_moe"]
    code, _, err = run(capsys, "import-hf", path, "-o", tmp_path / "spec.yaml")
    assert code == 0, err
    text = (tmp_path / "spec.yaml").read_text()
    assert "written by `archgraph import-hf qwen3_moe.gguf`" in text and "'qwen3_moe' family template" in text
    code, out, err = run(capsys, "params", tmp_path / "spec.yaml", "--json")
    assert code == 0 and json.loads(out)["total"] == count, err
    code, out, _ = run(capsys, "check", tmp_path / "spec.yaml", "--against", path)
    assert code == 0 and "agree" in out


def test_a_spec_from_a_gguf_file_names_where_each_value_came_from(converted, capsys):
    code, out, err = run(capsys, "import-hf", converted["qwen3"][0])
    assert code == 0, err
    assert "V: 320                  # vocabulary (config: GGUF token_embd.weight's rows)" in out
    assert "L: 2                    # layers (config: GGUF qwen3.block_count)" in out
    assert "eps: 1.0e-06" in out   # the float32 as the config wrote it, not 9.999999974752427e-07


def test_rotary_factors_stored_as_a_tensor_are_said_not_dropped(tmp_path, capsys):
    """Llama 3's converted files hold rope_freqs.weight (the scaled frequencies): not a parameter; the
    load says the spec's rotary tables do not have its values."""
    named = {**_llama_tensors(), "rope_freqs.weight": np.ones(8, np.float32)}
    path = tmp_path / "m.gguf"
    G.write(path, named, "llama", extra={**LLAMA_KEYS, "llama.rope.scaling.attn_factor": (1.0, gguf.GGUFValueType.FLOAT32)})
    code, out, err = run(capsys, "params", path, "--json")
    assert code == 0, err
    assert json.loads(out)["total"] == 32 * 64 + 64 + 64 + 4 * 64 * 64 + 64 + 3 * 128 * 64
    assert "note: the file scales its rotary frequencies by rope_freqs.weight" in err


def test_without_the_gguf_package_the_fix_is_the_extra(tmp_path, capsys, monkeypatch):
    import sys
    path = tmp_path / "m.gguf"
    G.write(path, _llama_tensors(), "llama", extra=LLAMA_KEYS)
    monkeypatch.setitem(sys.modules, "gguf", None)   # import gguf: ImportError
    code, _, err = run(capsys, "params", path)
    assert code == 2 and "reading a GGUF file needs the gguf package" in err
    assert "fix: pip install 'archgraph[gguf]'" in err
