"""`archgraph run`: a forward pass of the PyTorch module on random inputs, and `--check`, which
compares the module built on the meta device with archgraph's passes (exit 1 at the first
disagreement)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

import archgraph  # noqa: E402
from archgraph.cli import main  # noqa: E402
from archgraph.install import install_command  # noqa: E402
from archgraph.ops.linear import Linear  # noqa: E402
from conftest import ROOT  # noqa: E402


def test_check_confirms_counts_and_every_node_shape(capsys):
    assert main(["run", "gpt2", "--check", "--set", "L=1", "--set", "S=5"]) == 0
    out = capsys.readouterr().out
    model = archgraph.load("gpt2", {"L": 1})
    total = model.params().total
    assert total == 46_473_216
    assert f"parameters   {total:,} = archgraph's {total:,}" in out
    assert "gpt2: the PyTorch module against archgraph's passes (S=5, B=2)" in out
    assert len(list(model.shapes(B=2, S=5).nodes())) == 19
    assert "every op node's outputs agree (19 nodes run)" in out


def test_check_names_the_first_node_that_disagrees(capsys, monkeypatch):
    forward = Linear.forward

    def drops_a_column(self, run, x):  # a forward that no longer does what the shape rule says
        out = forward(self, run, x)
        return out[..., 1:] if run.path.endswith("c_fc") else out

    monkeypatch.setattr(Linear, "forward", drops_a_column)
    assert main(["run", "gpt2", "--check", "--set", "L=1", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["agree"] is False
    assert result["difference"] == ("node 'transformer.h.0.mlp.c_fc': archgraph infers [2, 8, 3072], "
                                    "PyTorch computes [2, 8, 3071]")


def test_run_prints_each_output_of_one_forward_pass(capsys):
    assert main(["run", "bert-base-uncased", "--set", "L=1", "--set", "S=6", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sizes"] == {"S": 6, "B": 2}
    assert {k: v["shape"] for k, v in result["outputs"].items()} == {
        "last_hidden_state": [2, 6, 768], "pooler_output": [2, 768]}
    assert all(v["finite"] and v["dtype"] == "float32" for v in result["outputs"].values())


def test_run_without_torch_says_how_to_install_it(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    code = "import sys; from archgraph.cli import main; sys.exit(main(['run', 'gpt2', '--check']))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "PATH": ""})
    assert out.returncode == 2
    # the hint fits the installation: the tests run from a checkout installed with pip install -e (README)
    assert out.stderr == ("archgraph: error: 'archgraph run' needs PyTorch, which is not installed\n"
                          f"  fix: {install_command('torch')} (torch==2.13.0, the CPU build)\n")
    assert 'fix: pip install -e ".[torch]" in /' in out.stderr


def _config(tmp_path, name):
    """The config.json of a recorded Hugging Face case (tests/data/hf), in a folder of its own."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(json.loads((ROOT / "tests" / "data" / "hf" / f"{name}.json")
                                                              .read_text())["config"]))
    return str(folder / "config.json")


@pytest.mark.parametrize("name, nodes", [
    ("qwen2_vl-base", 76),                 # multimodal_positions looks for the image token in input_ids (its 2
    #                                        layers of lib.attention: 15 op nodes each)
    ("siglip2-vision-base", 84),           # resized_positions reads each image's grid
    ("bart-seqcls-id2label-3", 53)])       # last_token counts each row's <eos> tokens
def test_check_runs_ops_that_read_their_inputs_on_the_meta_device(cli, tmp_path, name, nodes):
    """On the meta device there are no values to read: these ops give their outputs' shapes (a
    traceback before: 'Cannot copy out of meta tensor', '.item() cannot be called on meta tensors')."""
    code, out, err = cli("run", "--check", _config(tmp_path, name))
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == [f"  shapes       every op node's outputs agree ({nodes} nodes run)", "  agree"]


def test_run_prices_the_ops_before_one_that_reads_its_data_on_the_meta_device(monkeypatch):
    """An op that needs values stops the pricing where it stands; what ran before it is priced, and the
    forward on the CPU meets the rest (the MLP's [16, 1000] hidden activation comes first here)."""
    from archgraph import ModelBuilder
    from archgraph.ops.activation import GELU
    from archgraph.torch_price import Largest, largest_inside

    def reads(self, run, x):
        if x.is_meta:
            x.sum().item()
        return x

    monkeypatch.setattr(GELU, "forward", reads)
    b = ModelBuilder("m")
    b.input("x", ["B", "S", 8])
    b.node("mlp", "mlp", hidden=8, intermediate=1000)
    b.node("act", "gelu")
    b.node("wide", "mlp", hidden=8, intermediate=5000)
    assert largest_inside(b.build(), {"B": 2, "S": 8}) == Largest(64_000, "mlp", (16, 1000), "float32")


def test_run_of_a_model_whose_op_needs_what_random_ids_lack_is_refused_in_one_message(cli, tmp_path):
    """BART's classifier pools at each row's <eos> (id 2); run's random ids are 0 or 1 (a traceback before)."""
    code, out, err = cli("run", _config(tmp_path, "bart-seqcls-id2label-3"))
    assert (code, out) == (2, "")
    assert err == ("archgraph: error: the forward pass of bart-seqcls-id2label-3 on random inputs (ids 0 or 1) "
                   "failed: last_token: All examples must have the same number of <eos> tokens (id 2), at least one; "
                   "the rows hold [0, 0]\n  fix: run --check compares the module with archgraph's passes without "
                   "values\n")


def test_run_refuses_sizes_the_model_does_not_fit_by_node_before_any_forward(cli, tmp_path):
    """wav2vec2's first convolution's window is 10 samples and run's example input 8 (a RuntimeError from
    torch's conv1d before); --check refused it the same way."""
    code, out, err = cli("run", _config(tmp_path, "wav2vec2-base-960h"))
    assert (code, out) == (2, "")
    said, where, line, message = err.split(":", 4)[1:]  # the template's line: wherever its conv node is written
    assert (said, where, line.isdigit()) == (" error", f" {ROOT / 'specs/hf/wav2vec2.yaml'}", True)
    assert message == (" node 'wav2vec2.feature_extractor.conv_layers.0.conv': conv1d(in_channels=1, "
                       "out_channels=512, kernel_size=10, stride=5, bias=False): input size 8 (padding 0) is smaller "
                       "than the window 10 (received x [2, 1, 8])\n  fix: use a smaller kernel or more padding, or a "
                       "larger input\n")


def test_run_with_ids_past_a_table_is_refused_in_one_message(cli, tmp_path):
    """RoBERTa with one token type: run's random token_type_ids 0 or 1 pass its table (an IndexError before)."""
    code, out, err = cli("run", _config(tmp_path, "roberta-base-one-type"))
    assert (code, out) == (2, "")
    assert err == ("archgraph: error: the forward pass of roberta-base-one-type on random inputs (ids 0 or 1) "
                   "failed: index out of range in self\n  fix: run --check compares the module with archgraph's "
                   "passes without values\n")
