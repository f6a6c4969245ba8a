"""The spec language's PyTorch building blocks and its guarantees, as a user meets them: models
written in plain PyTorch declare directly with PyTorch's counts and shapes, every command refuses
a model whose shapes do not fit, unread nodes are warned about, and each op explains itself."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import archgraph
from archgraph.dims import fmt
from archgraph.ops import REGISTRY
from archgraph.ops.help import describe, example_op
from conftest import write_config

SPECS = Path(__file__).parent / "data" / "specs"

# Measured with torch 2.13.0: sum(p.numel() for p in m.parameters()) and the output shape of the
# same models written in PyTorch (nn.ConvTranspose2d U-Net on 2x3x64x48, a Perceiver with
# latents.expand / nn.MultiheadAttention(kdim, vdim) / z.mean(1) on 2x50x32,
# nn.MultiheadAttention(64, 4, kdim=32, vdim=48)).
PYTORCH = {"unet": (117_041, {"B": 2, "H": 64, "W": 48}, {"mask": (2, 1, 64, 48)}),
           "perceiver": (47_434, {"B": 2, "T": 50}, {"logits": (2, 10)}),
           "mha": (13_568, {"L": 7, "N": 2, "S": 9}, {"attn_output": (7, 2, 64), "attn_weights": (2, 7, 9)})}


@pytest.mark.parametrize("name", sorted(PYTORCH))
def test_pytorch_models_declare_directly_with_pytorchs_counts_and_shapes(name):
    total, sizes, outputs = PYTORCH[name]
    model = archgraph.load(str(SPECS / f"{name}.yaml"))
    assert model.params().total == total
    assert model.shapes(**sizes).outputs == outputs


def test_symbolic_shapes_of_the_unet_use_its_constraints():
    outputs = archgraph.load(str(SPECS / "unet.yaml")).shapes().outputs
    assert [fmt(d) for d in outputs["mask"]] == ["B", "1", "H", "W"]  # H % 4 == 0: the skips line up


def test_a_size_that_breaks_a_constraint_is_refused(cli):
    code, out, err = cli("params", str(SPECS / "unet.yaml"), "--set", "H=30")
    assert code == 2 and out == ""
    assert "unet.yaml:" in err and "the constraint 'H % 4 == 0' does not hold (H=30)" in err


def test_a_constraint_may_say_why_it_refuses(tmp_path, cli):
    spec = tmp_path / "c.yaml"
    spec.write_text("name: c\nvariables:\n  mode: \"'a'\"\n  K: 0\nconstraints:\n"
                    "  - {check: \"K == 0 or mode == 'b'\", message: \"'K' is read in mode b only\"}\n"
                    "inputs:\n  x: [B, 8]\nnodes:\n  - {name: fc, op: linear, in: x, in_features: 8, out_features: 4}\n")
    assert archgraph.load(str(spec)).params().total == 36
    code, out, err = cli("params", str(spec), "--set", "K=2")
    assert code == 2 and out == ""
    assert "'K' is read in mode b only (the constraint 'K == 0 or mode == 'b'' does not hold: K=2, mode=a)" in err
    spec.write_text(spec.read_text().replace(", message: \"'K' is read in mode b only\"", ""))
    code, out, err = cli("params", str(spec))
    assert code == 2 and "'constraints' must be a list of conditions" in err


def test_perceiver_latents_expand_over_the_batch():
    report = archgraph.load(str(SPECS / "perceiver.yaml")).shapes(B=3, T=20)
    assert report.shape_of("batch_latents") == [(3, 16, 64)]
    assert report.shape_of("pooled") == [(3, 64)]


BROKEN = {
    "linear-100-fed-64": ("x: [B, S, 64]", "- {name: fc1, op: linear, in: x, in_features: 100, out_features: 8}",
                          "node 'fc1': linear(in_features=100, out_features=8): last dimension of the input "
                          "(in_features) is 64, expected 100"),
    "sdpa-batch-2-and-3": ("q: [2, 5, 8]\n  kv: [3, 5, 8]", "- {name: attn, op: sdpa, in: [q, kv, kv], heads: 2}",
                           "the batch dims of query (2), key (3) and value (3) differ"),
    "output-index-out-of-range": ("x: [B, 8]", "- {name: fc1, op: linear, in: x, in_features: 8, out_features: 8}\n"
                                  "  - {name: fc2, op: linear, in: \"fc1:3\", in_features: 8, out_features: 8}",
                                  "'fc1:3' asks for output 3 of 'fc1', which has 1 output(s)"),
    "split-part-5-of-3": ("x: [B, 9]", "- {name: qkv, op: split, in: x, sections: 3}\n"
                          "  - {name: out, op: relu, in: \"qkv:5\"}",
                          "'qkv:5' asks for output 5 of 'qkv', which has 3 output(s)"),
}
COMMANDS = [["params"], ["shapes"], ["memory"], ["flops"], ["explain"], ["formula"], ["chart", "-o", "{tmp}/c.png"],
            ["render", "-o", "{tmp}/d.dot"], ["compare", "gpt2"], ["sweep", "--vary", "K=1,2"], ["diff", "gpt2"], ["check", "--against",
                                                                                                  "{tmp}/none.safetensors"]]


def _spec(tmp_path, inputs: str, nodes: str) -> str:
    path = tmp_path / "broken.yaml"
    path.write_text(f"name: broken\nvariables:\n  K: 1\ninputs:\n  {inputs}\nnodes:\n  {nodes}\n")
    return str(path)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_every_command_refuses_a_model_whose_shapes_do_not_fit(cli, tmp_path, command, case):
    inputs, nodes, message = BROKEN[case]
    spec = _spec(tmp_path, inputs, nodes)
    (tmp_path / "none.safetensors").write_bytes(b"")
    args = [a.format(tmp=tmp_path) for a in command]
    code, out, err = cli(args[0], spec, *args[1:])
    assert code == 2 and out == ""
    assert err.startswith(f"archgraph: error: {spec}:") and message in err
    assert err.count("archgraph: error:") == 1 and "Traceback" not in err
    assert not (tmp_path / "c.png").exists() and not (tmp_path / "d.dot").exists()


def test_a_gpt2_config_with_seven_heads_is_refused_by_every_counting_command(cli, tmp_path):
    config = write_config(tmp_path, model_type="gpt2", architectures=["GPT2LMHeadModel"], vocab_size=100,
                          n_embd=768, n_layer=2, n_head=7, n_positions=64)
    for command in ("params", "memory", "flops", "explain", "formula"):
        code, out, err = cli(command, config)
        assert code == 2 and out == "", command
        assert "768 is not divisible by 7" in err and "config.json" in err


def test_symbolic_reshape_sizes_work_unbound_and_bound(tmp_path):
    spec = tmp_path / "r.yaml"
    spec.write_text("name: r\ninputs:\n  x: [B, S, 768]\nnodes:\n"
                    "  - {name: r, op: reshape, in: x, shape: [B, S * 2, 768 / 2]}\n")
    assert [fmt(d) for d in archgraph.load(str(spec)).shapes().outputs["r"]] == ["B", "2*S", "384"]
    assert archgraph.load(str(spec), {"B": 2}).shapes(S=5).outputs["r"] == (2, 10, 384)


def test_a_reshape_inside_a_block_names_the_callers_sizes(tmp_path):
    spec = tmp_path / "r.yaml"
    spec.write_text("name: r\ninputs:\n  x: [B, S, 64]\nblocks:\n  heads:\n    nodes:\n"
                    "      - {name: split, op: reshape, in: x, shape: [B, S, 4, 16]}\n"
                    "nodes:\n  - {name: h, block: heads, in: x}\n")
    assert archgraph.load(str(spec), {"B": 2}).shapes(S=3).outputs["h"] == (2, 3, 4, 16)


UNREAD = ("name: unread\ninputs:\n  x: [B, 8]\nnodes:\n"
          "  - {name: fc1, op: linear, in: x, in_features: 8, out_features: 8}\n"
          "  - {name: fc2, op: linear, in: x, in_features: 8, out_features: 4}\n")


def test_a_node_nobody_reads_is_a_warning_and_an_error_under_strict(cli, tmp_path):
    spec = tmp_path / "unread.yaml"
    spec.write_text(UNREAD)
    code, out, err = cli("params", str(spec), "--json")
    assert code == 0 and json.loads(out)["total"] == 72 + 36
    assert err == (f"archgraph: warning: {spec}:5: node 'fc1': the output of 'fc1' is never read\n"
                   "  fix: read it in another node's 'in:', list it under 'outputs:', or remove it\n")
    code, out, err = cli("params", str(spec), "--strict")
    assert code == 2 and out == ""
    assert err.startswith(f"archgraph: error: {spec}:5: node 'fc1': the output of 'fc1' is never read")


def test_unused_true_says_a_node_is_unread_on_purpose(cli, tmp_path):
    spec = tmp_path / "unused.yaml"
    spec.write_text(UNREAD.replace("out_features: 8}", "out_features: 8, unused: true}"))
    code, _, err = cli("params", str(spec), "--strict")
    assert code == 0 and err == ""


def test_builtin_specs_have_no_warnings():
    assert {name: [str(w) for w in archgraph.load(name).warnings] for name in archgraph.builtin_specs()} == \
        {name: [] for name in archgraph.builtin_specs()}


def test_a_parameter_needs_no_in_and_never_reads_the_previous_node(tmp_path):
    spec = tmp_path / "p.yaml"
    spec.write_text("name: p\ninputs:\n  x: [B, 4]\nnodes:\n"
                    "  - {name: fc, op: linear, in: x, in_features: 4, out_features: 4}\n"
                    "  - {name: scale, op: parameter, shape: [4]}\n"
                    "  - {name: out, op: mul, in: [fc, scale]}\n")
    model = archgraph.load(str(spec))
    assert model.graph.nodes["scale"].inputs == ()
    assert model.params().total == 20 + 4


def test_ops_name_describes_an_op_with_its_tensors_as_formulas(cli):
    code, out, err = cli("ops", "nn.ConvTranspose2d")
    assert code == 0, err
    assert out.startswith("conv_transpose2d  (conv)\nalso known as: nn.ConvTranspose2d")
    assert "weight    [in_channels, out_channels, kernel_size, kernel_size]" in out
    assert "output_padding" in out and "- {name: my_conv_transpose2d, op: conv_transpose2d," in out
    code, out, _ = cli("ops", "linear", "--json")
    assert json.loads(out)["tensors"] == [["weight", ["out_features", "in_features"]], ["bias", ["out_features"]]]


def test_the_ops_listing_keeps_brackets_in_descriptions(cli):
    code, out, _ = cli("ops")
    assert code == 0
    assert "x limited to [min, max] (either may be absent)." in out  # not read as rich markup


def test_a_mistyped_op_is_suggested_by_name_and_by_what_it_is(cli, tmp_path):
    code, _, err = cli("ops", "conv_transpos2d")
    assert code == 2 and "did you mean 'conv_transpose2d'?" in err
    spec = tmp_path / "t.yaml"
    spec.write_text("name: t\ninputs:\n  x: [B, 4, 8, 8]\nnodes:\n"
                    "  - {name: up, op: ConvTranspose2d, in: x, in_channels: 4, out_channels: 2, kernel_size: 2}\n")
    code, _, err = cli("params", str(spec))
    assert code == 2 and "unknown op 'ConvTranspose2d'" in err
    assert "did you mean 'conv_transpose2d'? (PyTorch's ConvTranspose2d)" in err
    code, _, err = cli("ops", "deconvolution3d")
    assert code == 2 and "conv_transpose2d" in err



@pytest.mark.parametrize("symbol, op", [("%", "remainder"), ("//", "div"), ("|", "bitwise_or"), ("&", "bitwise_and")])
def test_ops_finds_an_op_by_its_symbol(cli, symbol, op):
    code, out, _ = cli("ops", symbol)
    assert code == 0 and out.startswith(f"{op}  (")


@pytest.mark.parametrize("text", ["/", "+", "", "?"])
def test_a_symbol_no_op_has_names_none(cli, text):  # each was bitwise_and: every symbol squashed to ''
    assert cli("ops", text) == (2, "", f"archgraph: error: unknown op '{text}'\n"
                                       "  fix: run 'archgraph ops' to list the operators\n")

@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_op_documents_itself_with_an_example_that_builds(name):
    help_ = describe(name)
    assert help_.doc and help_.example.startswith(f"- {{name: my_{name}, op: {name}")
    assert example_op(REGISTRY[name]).op_name == name


def test_params_json_lists_the_state_dict(cli):
    code, out, _ = cli("params", "gpt2", "--json")
    state = json.loads(out)["state_dict"]
    assert state["lm_head.weight"] == state["transformer.wte.weight"] == [50257, 768]
    assert len(state) == 149  # GPT2LMHeadModel's named_parameters(remove_duplicate=False)
    code, out, _ = cli("params", "resnet-50", "--json")
    assert json.loads(out)["state_dict"]["embedder.embedder.normalization.running_mean"] == [64]
    code, out, _ = cli("params", "llama-2-7b", "--json")
    assert not [n for n in json.loads(out)["state_dict"] if n.endswith("inv_freq")]  # persistent=False


def test_formula_is_a_pass_over_the_model_not_a_reader_of_specs():
    import ast
    tree = ast.parse((Path(archgraph.__file__).parent / "passes" / "formula.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"__future__", "dataclasses", "typing", "errors", "graph", "numbers", "params",
                        "sympy"}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_argument_of_every_op_says_what_it_means(name):
    """`ops NAME` and the docs read each argument's meaning from the comment after its field."""
    from archgraph.ops.help import argument_docs, describe
    cls = REGISTRY[name]
    docs = argument_docs(cls)
    assert [f for f in cls.hyperparameters() if len(docs.get(f, "")) < 8] == []  # a sentence, not a word
    assert [row[3] for row in describe(name).hyperparameters] == [docs[f] for f in cls.hyperparameters()]


def test_argument_meanings_come_from_the_field_comments_and_their_continuations():
    from archgraph.ops.help import argument_docs
    docs = argument_docs(REGISTRY["attention"])
    assert docs["hidden"] == "width of the input x and of the output"
    assert docs["qkv_layout"] == ("fused: [q|k|v], per head (BLOOM, NeoX: [q,k,v] of head 1, head 2, ...) or per "
                                  "key/value group (Falcon: [q..., k, v] per group)")  # two comment lines
    assert argument_docs(REGISTRY["lt"])["reverse"] == "true: the constant comes first (constant op x)"  # inherited


def test_ops_mlp_names_its_tensors_as_they_are(cli):
    code, out, _ = cli("ops", "mlp")
    assert code == 0 and "names: up, down" not in out
    assert "its tensors are fc1 and fc2 unless `names` renames them." in out
    assert "fc1.weight    [intermediate, hidden]" in out
    lines = out.splitlines()
    assert any(line.split() == ["names", "the", "two", "projections'", "names,", "in", "place", "of", "fc1", "and",
                                "fc2", "None", "tuple[str,", "...]", "|", "None"] for line in lines)
    data = json.loads(cli("ops", "mlp", "--json")[1])
    assert data["summary"] == "A two-layer feed-forward block."
    assert data["hyperparameters"][0] == ["hidden", "int", None, "width of the input and of the output"]
    assert data["hyperparameters"][3][1] == "gelu | gelu_tanh | quick_gelu | gelu_10 | relu | relu2 | relu6 | " \
                                           "leaky_relu | silu | mish | hardswish | sigmoid | tanh | softplus | identity"
