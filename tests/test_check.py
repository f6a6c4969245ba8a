"""`archgraph check MODEL --against CKPT`: real safetensors files against specs, with the lines a user
sees; and the Hugging Face tensor lists of the reference data as checkpoints of the built-in specs."""
from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from archgraph import load
from archgraph.checkpoint import read_checkpoint
from archgraph.passes.checkpoint import compare
from conftest import reference
from test_checkpoint import header_only

TINY = ["--set", "L=1", "--set", "H=8", "--set", "A=2", "--set", "V=11", "--set", "P=5"]
SIZES = {"L": 1, "H": 8, "A": 2, "V": 11, "P": 5}


def tiny_gpt2_tensors(prefix_from: str = "") -> dict[str, np.ndarray]:
    """Exactly what a GPT2LMHeadModel of these sizes saves: every tensor, the tied lm_head once."""
    model = load("gpt2", SIZES)
    return {name: np.zeros(row.shape, np.float32) for name, row in model.params().tensors() if not row.tied_to}


def check(cli, path, *extra):
    code, out, err = cli("check", "gpt2", *TINY, "--against", str(path), *extra)
    return code, [line.rstrip() for line in out.splitlines()], err


def rows(lines):
    """The table's body rows, as lists of cell texts."""
    return [[c.strip() for c in line.strip("│").split("│")] for line in lines if line.startswith("│")]


def summary(lines):
    """The summary lines under the table: {label: text}."""
    out = {}
    for line in lines:
        if line.startswith("  ") and not line.startswith("  from"):
            label, _, text = line.strip().partition("  ")
            out[label] = text.strip()
    return out


def test_exact_checkpoint_agrees(tmp_path, cli):
    tensors = tiny_gpt2_tensors()
    assert len(tensors) == 16 and "lm_head.weight" not in tensors
    save_file(tensors, str(tmp_path / "m.safetensors"))
    code, lines, err = check(cli, tmp_path / "m.safetensors")
    assert (code, err) == (0, "")
    assert summary(lines) == {
        "spec gpt2": "17 tensors, 1,016 params (1 tied tensor stored once in the checkpoint: "
                     "lm_head.weight = transformer.wte.weight)",
        f"checkpoint {tmp_path / 'm.safetensors'}": "16 tensors, 1,016 elements",
        "result": "agree: every tensor is in both, with the same shape"}
    assert len(lines) == 3  # no table when nothing differs


def test_missing_extra_and_wrong_shape(tmp_path, cli):
    tensors = tiny_gpt2_tensors()
    del tensors["transformer.h.0.ln_2.bias"]
    tensors["transformer.h.0.attn.bias"] = np.zeros((1, 1, 5, 5), np.float32)
    tensors["transformer.wpe.weight"] = np.zeros((6, 8), np.float16)
    save_file(tensors, str(tmp_path / "m.safetensors"))
    code, lines, err = check(cli, tmp_path / "m.safetensors")
    assert (code, err) == (1, "")
    assert lines[0] == f"gpt2 against {tmp_path / 'm.safetensors'}: 3 differences"
    assert lines[2].split() == ["┃", "Tensor", "┃", "Problem", "┃", "Spec", "┃", "Checkpoint", "┃"]
    assert rows(lines) == [
        ["transformer.h.0.ln_2.bias", "missing from the checkpoint", "[8]", "—"],
        ["transformer.h.0.attn.bias", "not in the spec", "—", "F32 [1, 1, 5, 5]"],
        ["transformer.wpe.weight", "wrong shape", "[5, 8]", "F16 [6, 8]"]]
    s = summary(lines)
    assert s[f"checkpoint {tmp_path / 'm.safetensors'}"] == "16 tensors, 1,041 elements"  # 16 - 1 + 1; 1,016 - 8 + 25 + 8
    assert s["result"] == "differ: 1 missing, 1 not in the spec, 1 wrong shape"
    assert "hint" not in s


@pytest.mark.parametrize("edit, code, result", [
    ("drop", 1, "differ: 1 missing"),
    ("add", 1, "differ: 1 not in the spec"),
    ("reshape", 1, "differ: 1 wrong shape"),
])
def test_each_kind_of_difference_alone_fails(tmp_path, cli, edit, code, result):
    tensors = tiny_gpt2_tensors()
    if edit == "drop":
        del tensors["transformer.ln_f.weight"]
    elif edit == "add":
        tensors["score.weight"] = np.zeros((2, 8), np.float32)
    else:
        tensors["transformer.h.0.mlp.c_fc.weight"] = np.zeros((32, 8), np.float32)  # [out, in]: transposed
    save_file(tensors, str(tmp_path / "m.safetensors"))
    got, lines, _ = check(cli, tmp_path / "m.safetensors")
    assert (got, summary(lines)["result"]) == (code, result)
    if edit == "reshape":
        assert rows(lines) == [["transformer.h.0.mlp.c_fc.weight", "wrong shape", "[8, 32]", "F32 [32, 8]"]]


def test_tied_tensor_stored_under_either_name(tmp_path, cli):
    tensors = tiny_gpt2_tensors()
    tensors["lm_head.weight"] = tensors.pop("transformer.wte.weight")
    save_file(tensors, str(tmp_path / "m.safetensors"))
    result = compare(load("gpt2", SIZES), read_checkpoint(tmp_path / "m.safetensors"))
    assert result.agree and result.stored_once == [("transformer.wte.weight", "lm_head.weight")]
    tensors["transformer.wte.weight"] = tensors["lm_head.weight"]  # both saved: also fine
    save_file(tensors, str(tmp_path / "both.safetensors"))
    result = compare(load("gpt2", SIZES), read_checkpoint(tmp_path / "both.safetensors"))
    assert result.agree and result.stored_once == []
    del tensors["transformer.wte.weight"], tensors["lm_head.weight"]  # neither: both missing
    save_file(tensors, str(tmp_path / "none.safetensors"))
    result = compare(load("gpt2", SIZES), read_checkpoint(tmp_path / "none.safetensors"))
    assert [n for n, _ in result.missing] == ["transformer.wte.weight", "lm_head.weight"]


def test_missing_prefix_is_pointed_out_and_the_option_fixes_it(tmp_path, cli):
    tensors = {name.removeprefix("transformer."): v for name, v in tiny_gpt2_tensors().items()}
    save_file(tensors, str(tmp_path / "m.safetensors"))
    code, lines, _ = check(cli, tmp_path / "m.safetensors")
    assert code == 1
    assert len(rows(lines)) == 33  # 17 missing (lm_head too: nothing it ties to is found), 16 extra
    s = summary(lines)
    assert s["result"] == "differ: 17 missing, 16 not in the spec"
    assert s["hint"] == ("the checkpoint's names lack the prefix 'transformer.': with --add-prefix "
                         "transformer. every difference goes away")
    code, lines, _ = check(cli, tmp_path / "m.safetensors", "--add-prefix", "transformer")
    assert code == 0
    assert summary(lines)["renamed"] == "16 checkpoint names by the prefix options"


def test_extra_prefix_is_pointed_out_and_stripped(tmp_path, cli):
    """A BertForMaskedLM-style file (bert. + cls.) against the bare model."""
    spec = tmp_path / "enc.yaml"
    spec.write_text("name: enc\ninputs:\n  x: {shape: [B, 4]}\nnodes:\n"
                    "  - {name: dense, op: linear, in_features: 4, out_features: 3}\n"
                    "  - {name: norm, op: layer_norm, normalized_shape: 3}\n")
    save_file({"bert.dense.weight": np.zeros((3, 4), np.float32), "bert.dense.bias": np.zeros(3, np.float32),
               "bert.norm.weight": np.zeros(3, np.float32), "bert.norm.bias": np.zeros(3, np.float32),
               "cls.bias": np.zeros(7, np.float32)}, str(tmp_path / "m.safetensors"))
    code, out, _ = cli("check", str(spec), "--against", str(tmp_path / "m.safetensors"))
    s = summary(out.splitlines())
    assert code == 1 and s["hint"] == ("the checkpoint's names carry the prefix 'bert.': with --strip-prefix "
                                       "bert. 8 of the 9 differences go away")
    code, out, _ = cli("check", str(spec), "--against", str(tmp_path / "m.safetensors"), "--strip-prefix", "bert.")
    assert code == 1 and rows(out.splitlines()) == [["cls.bias", "not in the spec", "—", "F32 [7]"]]


def test_buffers_in_the_checkpoint_are_buffers(tmp_path, cli):
    spec = tmp_path / "cnn.yaml"
    spec.write_text("name: cnn\ninputs:\n  x: {shape: [B, 3, 8, 8]}\nnodes:\n"
                    "  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, bias: false}\n"
                    "  - {name: bn, op: batch_norm, num_features: 4}\n")
    tensors = {"conv.weight": np.zeros((4, 3, 3, 3), np.float32), "bn.weight": np.zeros(4, np.float32),
               "bn.bias": np.zeros(4, np.float32), "bn.running_mean": np.zeros(4, np.float32),
               "bn.running_var": np.zeros(4, np.float32), "bn.num_batches_tracked": np.zeros((), np.int64)}
    save_file(tensors, str(tmp_path / "m.safetensors"))
    code, out, _ = cli("check", str(spec), "--against", str(tmp_path / "m.safetensors"))
    s = summary(out.splitlines())
    assert code == 0
    assert s[f"checkpoint {tmp_path / 'm.safetensors'}"] == "6 tensors, 116 elements + 9 in 3 buffers"
    tensors["bn.running_var"] = np.zeros(5, np.float32)
    del tensors["bn.num_batches_tracked"]
    save_file(tensors, str(tmp_path / "m.safetensors"))
    code, out, _ = cli("check", str(spec), "--against", str(tmp_path / "m.safetensors"), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["agree"] is False
    assert doc["wrong_shape"] == [{"name": "bn.running_var", "spec": [4], "checkpoint": [5], "dtype": "F32"}]
    assert doc["buffers_not_saved"] == [{"name": "bn.num_batches_tracked", "shape": []}]
    assert (doc["missing"], doc["extra"]) == ([], [])


def test_json_document(tmp_path, cli):
    tensors = tiny_gpt2_tensors()
    del tensors["transformer.ln_f.bias"]
    save_file(tensors, str(tmp_path / "m.safetensors"))
    code, out, err = cli("check", "gpt2", *TINY, "--against", str(tmp_path / "m.safetensors"), "--json")
    assert (code, err) == (1, "")
    doc = json.loads(out)
    assert doc["agree"] is False
    assert doc["spec"] == {"tensors": 17, "params": 1016}
    assert doc["checkpoint_totals"] == {"tensors": 15, "params": 1008, "buffers": 0}
    assert doc["missing"] == [{"name": "transformer.ln_f.bias", "shape": [8]}]
    assert doc["stored_once"] == [{"name": "lm_head.weight", "stored_as": "transformer.wte.weight"}]
    assert (doc["extra"], doc["wrong_shape"], doc["prefix_hint"]) == ([], [], None)


def test_bad_input_exits_2(tmp_path, cli):
    save_file({"a.w": np.zeros(2, np.float32), "b.a.w": np.zeros(2, np.float32)}, str(tmp_path / "m.safetensors"))
    ckpt = str(tmp_path / "m.safetensors")
    code, out, err = cli("check", "gpt2", "--against", "specs/gpt2.yaml")
    assert (code, out) == (2, "") and "--against 'specs/gpt2.yaml' is not a safetensors checkpoint" in err
    code, _, err = cli("check", ckpt, "--against", ckpt)
    assert code == 2 and "is a checkpoint; check compares a spec with one" in err
    code, _, err = cli("check", "gpt2", "--against", str(tmp_path / "none.safetensors"))
    assert code == 2 and "no checkpoint file" in err
    code, _, err = cli("check", "gpt2", "--against", ckpt, "--strip-prefix", "b")
    assert code == 2 and "checkpoint tensors 'a.w' and 'b.a.w' both become 'a.w'" in err


# -- oracle: Hugging Face's own tensor names and shapes as checkpoints of the built-in specs -----------
# What save_pretrained leaves out: the tied copies (the model's _tied_weights_keys).
TIED_NOT_SAVED = {"gpt2": ["lm_head.weight"],
                  "t5-small": ["encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"],
                  "bert-base-uncased": [], "albert-base-v2": [], "resnet-50": []}


@pytest.mark.parametrize("name", sorted(TIED_NOT_SAVED))
def test_builtin_spec_agrees_with_hf_tensor_list(tmp_path, name, cli):
    ref = reference(name)
    shapes = {k: v for k, v in ref["param_shapes"].items() if k not in TIED_NOT_SAVED[name]}
    if name == "resnet-50":  # BatchNorm statistics are persistent buffers: saved
        shapes.update(ref["buffers"])
    path = header_only(tmp_path / "model.safetensors", {k: ("BF16", v) for k, v in shapes.items()})
    result = compare(load(name), read_checkpoint(path))
    assert (result.missing, result.extra, result.wrong_shape) == ([], [], [])
    assert [a for a, _ in result.stored_once] == TIED_NOT_SAVED[name]
    assert result.checkpoint_params == ref["expected_params"]
    code, _, _ = cli("check", name, "--against", str(path))
    assert code == 0


def test_a_model_folder_is_read_through_its_checkpoint(tmp_path, cli):
    save_file(tiny_gpt2_tensors(), str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text("{}")
    code, lines, _ = check(cli, tmp_path)
    assert code == 0 and summary(lines)[f"checkpoint {tmp_path / 'model.safetensors'}"] == \
        "16 tensors, 1,016 elements"
    (tmp_path / "model.safetensors").unlink()
    code, _, err = check(cli, tmp_path)
    assert code == 2 and f"folder '{tmp_path}' has no .safetensors file" in err
