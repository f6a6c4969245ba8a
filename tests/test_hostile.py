"""The hostile inputs of issue 27, each refused with its exact one-line message and fix, exit
status 2 and no traceback; the ones that used to hang or take gigabytes run in a subprocess
with a timeout and an address-space cap (RLIMIT_AS), so that a regression fails instead of
hanging CI or the machine."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

MISTRAL = ROOT / "examples" / "mistral-7b" / "config.json"
MEMORY_CAP = 2 * 1024 ** 3  # "nothing over 2 GiB"


def capped_cli(*args: str, seconds: float = 60) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `archgraph ARGS` in a subprocess that may use at most
    MEMORY_CAP bytes of address space; past `seconds` the test fails (a hang)."""
    if sys.platform != "linux":
        pytest.skip("RLIMIT_AS and FIFOs as Linux has them")
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run([sys.executable, "-m", "archgraph.cli", *args], capture_output=True, text=True,
                              timeout=seconds, preexec_fn=cap, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"archgraph {' '.join(a[:60] for a in args)} still ran after {seconds} s")
    return done.returncode, done.stdout, done.stderr


def refused(result: tuple[int, str, str], message: str, fix: str) -> None:
    """Exit status 2, nothing on stdout, and exactly `message` and its fix on stderr."""
    code, out, err = result
    assert "Traceback" not in err, err[-3000:]
    assert (code, out, err) == (2, "", f"archgraph: error: {message}\n  fix: {fix}\n")


def config(tmp_path: Path, text: str | None = None, name: str = "config.json", **values) -> str:
    """The example Mistral config with `values` changed (or `text` as it is)."""
    path = tmp_path / name
    if text is None:
        text = json.dumps({**json.loads(MISTRAL.read_text()), **values})
    path.write_text(text)
    return str(path)


def safetensors(tmp_path: Path, header: bytes, data: bytes = b"", name: str = "m.safetensors") -> str:
    path = tmp_path / name
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return str(path)


# -- files that are not regular files, or too large ---------------------------------------

def test_a_fifo_named_config_json_is_refused_without_waiting_for_a_writer(tmp_path):
    path = tmp_path / "config.json"
    os.mkfifo(path)
    refused(capped_cli("params", str(path), seconds=30),
            f"{path}: this is a FIFO (named pipe), not a regular file", "pass the path of a config.json file")


def test_a_config_json_linked_to_dev_zero_is_refused_before_reading(tmp_path):
    path = tmp_path / "config.json"
    path.symlink_to("/dev/zero")
    refused(capped_cli("params", str(path), seconds=30),
            f"{path}: this is a character device, not a regular file", "pass the path of a config.json file")


@pytest.mark.parametrize("name, what", [("spec.yaml", "spec"), ("m.safetensors", "safetensors")])
def test_a_spec_or_checkpoint_that_is_a_device_is_refused(cli, tmp_path, name, what):
    path = tmp_path / name
    path.symlink_to("/dev/null")
    refused(cli("params", str(path)), f"{path}: this is a character device, not a regular file",
            f"pass the path of a {what} file")


def test_a_config_json_over_its_cap_is_refused_by_its_size(cli, tmp_path):
    path = tmp_path / "config.json"
    with open(path, "wb") as f:
        f.truncate(17 * 1024 * 1024)  # sparse: no disk used
    refused(cli("params", str(path)), f"{path}: 17,825,792 bytes is too large for a config.json (at most 16,777,216)",
            "pass a config.json file")


# -- JSON: numbers too long to read, duplicate keys, odd values ----------------------------

def test_a_config_integer_of_5000_digits_is_refused_by_its_key(cli, tmp_path):
    text = MISTRAL.read_text().replace('"hidden_size": 4096', '"hidden_size": ' + "9" * 5000)
    path = config(tmp_path, text)
    refused(cli("params", path), f"{path}: 'hidden_size' is a number of 5,000 digits, too long to read",
            "sizes and values are at most 10**30")


def test_a_header_integer_of_5000_digits_is_refused_by_its_key(cli, tmp_path):
    path = safetensors(tmp_path, b'{"w": {"dtype": "F16", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 2]}}')
    refused(cli("params", path), f"{path}: 'w.shape' is a number of 5,000 digits, too long to read",
            "sizes and values are at most 10**30")


def test_a_duplicate_key_in_config_json_is_refused_as_in_a_header(cli, tmp_path):
    text = MISTRAL.read_text().replace('"hidden_size": 4096', '"hidden_size": 4096, "hidden_size": 1024')
    path = config(tmp_path, text)
    refused(cli("params", path), f"{path}: the config.json lists 'hidden_size' twice",
            "each key may appear once (a JSON reader would keep the last silently): remove one")


def test_a_dtype_that_is_an_object_is_an_unknown_dtype(cli, tmp_path):
    path = safetensors(tmp_path, b'{"w": {"dtype": {}, "shape": [1], "data_offsets": [0, 2]}}', b"\0\0")
    refused(cli("params", path), f"{path}: tensor 'w': unknown dtype {{}}",
            "safetensors dtypes: BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, "
            "F8_E5M2FNUZ, I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64")


def test_a_header_of_more_tensors_than_any_checkpoint_is_refused_before_parsing(tmp_path):
    """A valid 100 MB header of 1.4 million tensors took 34 s and 1.2 GB (on a busy machine)."""
    entries = (b'"l.%d": {"dtype":"F16","shape":[1],"data_offsets":[%d,%d]}' % (i, 2 * i, 2 * i + 2)
               for i in range(300_001))
    path = safetensors(tmp_path, b"{" + b",".join(entries) + b"}", bytes(600_002))
    refused(capped_cli("params", path, seconds=30),
            f"{path}: the header lists more than 300,000 tensors, more than any model's checkpoint holds",
            "archgraph reads checkpoints of at most 300,000 tensors (the largest hold about 100,000)")


# -- limits checked before the work they bound --------------------------------------------

LAYERS_FIX = "check 'repeat:' and the variables it uses; L is the config's num_hidden_layers"
# the line of the decoder's `repeat: L` in llama.yaml (the error names it)
REPEAT_LINE = (ROOT / "specs/hf/llama.yaml").read_text().splitlines().index("        repeat: L") + 1


def lib_line(text: str) -> int:
    """The line of the standard library's attention.yaml that starts with `text` (lib.attention's
    constraints: Llama's self_attn is that block)."""
    return next(i for i, line in enumerate((ROOT / "specs/lib/attention.yaml").read_text().splitlines(), 1)
                if line.startswith(text))


def llama_line(text: str) -> int:
    """The line of llama.yaml that starts the node holding `text` (errors name it)."""
    return next(i for i, line in enumerate((ROOT / "specs/hf/llama.yaml").read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("layers, shown", [("1000000000", "1,000,000,000"), ("1" + "0" * 30, "1" + ",000" * 10),
                                           ("1e9", "1,000,000,000")])
def test_a_config_of_absurdly_many_layers_is_refused_before_building_them(tmp_path, layers, shown):
    text = MISTRAL.read_text().replace('"num_hidden_layers": 32', f'"num_hidden_layers": {layers}')
    path = config(tmp_path, text)
    refused(capped_cli("params", path, seconds=30),
            f"{path}: the 'mistral' template cannot be built with this config: 'repeat' is {shown} (L = {shown}); "
            f"a block call repeats at most 100,000 times (template at {ROOT}/specs/hf/llama.yaml:{REPEAT_LINE}, node 'layers')",
            LAYERS_FIX)


def test_set_of_a_billion_layers_is_refused_before_building_them():
    refused(capped_cli("params", str(MISTRAL), "--set", "L=1000000000", seconds=30),
            f"{MISTRAL}: the 'mistral' template cannot be built with this config: 'repeat' is 1,000,000,000 "
            f"(L = 1,000,000,000); a block call repeats at most 100,000 times (template at "
            f"{ROOT}/specs/hf/llama.yaml:{REPEAT_LINE}, node 'layers')", LAYERS_FIX)


SPECIALIZE = """
import sys
from archgraph import hf
from archgraph.errors import ArchgraphError
try:
    hf.specialized(sys.argv[1])
except ArchgraphError as exc:
    print(exc)
"""


def test_specializing_a_config_of_a_billion_layers_is_refused_before_folding_them(tmp_path):
    text = MISTRAL.read_text().replace('"num_hidden_layers": 32', '"num_hidden_layers": 1000000000')
    path = config(tmp_path, text)
    done = subprocess.run([sys.executable, "-c", SPECIALIZE, path], capture_output=True, text=True, timeout=30,
                          cwd=ROOT)
    assert done.stdout.splitlines()[0] == (f"{ROOT}/specs/hf/llama.yaml:{REPEAT_LINE}: 'repeat' is 1,000,000,000; "
                                           f"a block call repeats at most 100,000 times")


def spec(tmp_path: Path, variable: str, out: str = "4") -> str:
    path = tmp_path / "s.yaml"
    path.write_text(f"archgraph: 1\nname: s\nvariables:\n  H: {variable}\ninputs: {{x: [B, 4]}}\nnodes:\n"
                    f"  - {{name: fc, op: linear, in_features: 4, out_features: {out}}}\n")
    return str(path)


@pytest.mark.parametrize("items", ["300000000", "1000000000", "10**30"])
def test_a_huge_list_in_an_expression_is_refused_before_it_is_allocated(tmp_path, items):
    path = spec(tmp_path, f"len([0] * {items})", "H")
    shown = f"{eval(items):,}"  # noqa: S307 - the test's own constant
    refused(capped_cli("params", path, seconds=30),
            f"{path}:4: variable 'H': a list of {shown} items is too long (at most 100,000) "
            f"(in 'len([0] * {items})')",
            "a list in an expression holds one value per layer or stage: check the count it is repeated by")


@pytest.mark.parametrize("value, shown", [("1.0e+300", "1e+300"), ("exp(700)", "1.01423e+304"), ("-1e200", "-1e+200"),
                                          ("2.0 ** 60 * 2.0 ** 60", "1.32923e+36")])
def test_a_float_beyond_any_size_is_refused_where_it_becomes_a_size(cli, tmp_path, value, shown):
    """A real number may be any float64 (float32's lowest fills attention masks); a whole number, a size,
    is at most 10**30: such a float is refused where a size is made of it."""
    assert cli("params", spec(tmp_path, value))[0] == 0  # the variable alone, read by nothing: a value
    path = spec(tmp_path, value, out="H")
    refused(cli("params", path), f"{path}:7: node 'fc': linear.out_features: the value {shown} is too large for a "
            "whole number (at most 10**30)", "no size, count or setting of a model comes near 10**30")


@pytest.mark.parametrize("value", ["-3.4028234663852886e38", "'-3.4028234663852886e38 * 2'", "-inf",
                                   "1.7976931348623157e308"])
def test_any_float64_is_a_value(cli, tmp_path, value):
    path = tmp_path / "m.yaml"
    path.write_text("archgraph: 1\nname: m\ninputs: {x: [B, 4]}\nnodes:\n"
                    f"  - {{name: fill, op: add, constant: {value}}}\n")
    code, out, err = cli("shapes", str(path))
    assert (code, err) == (0, "") and "[B, 4]" in out


def test_a_value_the_element_type_cannot_hold_is_refused_by_node_when_run(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("archgraph: 1\nname: m\ninputs: {x: [B, 4]}\nnodes:\n"
                    "  - {name: big, op: full, shape: [B, 4], value: -1e300}\n  - {name: y, op: add, in: [x, big]}\n")
    refused(cli("run", str(path)), "node 'big': op 'full': value cannot be converted to type float without overflow: "
            "a value of the spec lies beyond the range of the tensor's element type",
            "write a value the element type holds (torch.finfo(dtype).min, or -inf)")


# -- import-hf writes no spec that params would refuse ------------------------------------

VALUES = ("check the config's values: id2label=2, rope_parameters.rope_type='none', max_position_embeddings=131072, "
          "attention_dropout=0, vocab_size=32000, hidden_size={H}, num_hidden_layers=32, num_attention_heads={A}, "
          "num_key_value_heads=8, head_dim=128, intermediate_size=14336, rms_norm_eps=1e-06, tie_word_embeddings=False, "
          "rope_parameters.rope_theta=10000, sliding_window=4096, hidden_act='silu'")


@pytest.mark.parametrize("values, message, fix", [
    ({"hidden_size": float("nan")}, "hidden_size=nan: the value nan is not a number (template)",
     VALUES.format(H="nan", A=32)),
    ({"hidden_size": float("inf")}, "hidden_size=inf: 'H' is a whole number in this spec (it is 4096) (template)",
     "give a whole number, e.g. hidden_size=4096"),
    ({"hidden_size": 4096.5}, "hidden_size=4096.5: 'H' is a whole number in this spec (it is 4096) (template)",
     "give a whole number, e.g. hidden_size=4096"),
    ({"hidden_size": 0}, "received an invalid value for `embedding_dim` of op 'embedding', expected a positive "
     "integer. Received: embedding_dim=0 (template at {ROOT}/specs/hf/llama.yaml:{EMBED}, node 'embed_tokens')",
     VALUES.format(H=0, A=32)),
    ({"hidden_size": -64}, "received an invalid value for `embedding_dim` of op 'embedding', expected a positive "
     "integer. Received: embedding_dim=-64 (template at {ROOT}/specs/hf/llama.yaml:{EMBED}, node 'embed_tokens')",
     VALUES.format(H=-64, A=32)),
    ({"num_attention_heads": 0}, "heads must be a positive number of query heads (the constraint 'heads > 0' does "
     "not hold: heads=0) (template at {ROOT}/specs/lib/attention.yaml:{ATTN}, node 'self_attn')",
     VALUES.format(H=4096, A=0)),
    ({"num_hidden_layers": 10 ** 9}, "'repeat' is 1,000,000,000 (L = 1,000,000,000); a block call repeats at most "
     "100,000 times (template at {ROOT}/specs/hf/llama.yaml:{REPEAT}, node 'layers')", LAYERS_FIX),
])
def test_import_hf_refuses_sizes_no_model_can_have_as_params_does(cli, tmp_path, values, message, fix):
    path = config(tmp_path, **values)
    out = tmp_path / "out.yaml"
    for args in (("params", path), ("import-hf", path), ("import-hf", path, "-o", str(out))):
        refused(cli(*args), f"{path}: the 'mistral' template cannot be built with this config: "
                            + message.format(ROOT=ROOT, EMBED=llama_line("name: embed_tokens"),
                                             ATTN=lib_line("constraints:"), REPEAT=REPEAT_LINE), fix)
    assert not out.exists()


# -- messages: long values keep their ends, on one line; one reading of a name ----------------

def test_a_megabyte_config_value_is_shown_by_its_ends(cli, tmp_path):
    path = config(tmp_path, hidden_act="x" * 1_000_000)
    code, out, err = cli("params", path)
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == (f"archgraph: error: {path}: 'hidden_act' is \"{'x' * 38}…{'x' * 38}\", which "
                                   "archgraph does not know for model_type 'mistral'")
    assert len(err.splitlines()) == 2 and err.splitlines()[1].startswith("  fix: known values: gelu, ")


def test_set_of_five_thousand_digits_is_shown_by_its_ends(cli):
    refused(cli("params", "gpt2", "--set", "H=" + "9" * 5000),
            f"--set H: {'9' * 39}…{'9' * 39} is too large (sizes and values are at most 10**30)",
            "see 'archgraph params --help'")


@pytest.mark.parametrize("variable, out, line, where", [("Ｈ", "4", 4, "variable 'Ｈ'"),
                                                         ("H", "Ｈ", 7, "node 'fc': linear.out_features")])
def test_a_fullwidth_name_is_refused_in_keys_and_expressions_alike(cli, tmp_path, variable, out, line, where):
    path = tmp_path / "s.yaml"
    path.write_text(f"archgraph: 1\nname: s\nvariables:\n  {variable}: 4\ninputs: {{x: [B, 4]}}\nnodes:\n"
                    f"  - {{name: fc, op: linear, in_features: 4, out_features: {out}}}\n")
    suffix = " (in 'Ｈ')" if out == "Ｈ" else ""
    refused(cli("params", str(path)), f"{path}:{line}: {where}: the name 'Ｈ' holds compatibility characters that "
                                      f"Python reads as 'H'{suffix}", "write 'H'")


# -- the fuzzer: mutants of the built-in specs and the reference configs -------------------

def fuzz(seed: int, cases: int, seconds: float) -> list[str]:
    """The failures tools/fuzz_inputs.py finds in `cases` mutants of `seed`, run under the memory cap."""
    if sys.platform != "linux":
        pytest.skip("RLIMIT_AS as Linux has it")
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run([sys.executable, str(ROOT / "tools" / "fuzz_inputs.py"), "--seed", str(seed),
                               "--cases", str(cases)], capture_output=True, text=True, timeout=seconds,
                              preexec_fn=cap, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{cases} mutants of seed {seed} took more than {seconds} s")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["cases"] == cases
    return report["failures"]


def test_three_hundred_mutants_are_each_refused_or_built():
    assert fuzz(seed=27, cases=300, seconds=300) == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_three_thousand_more_mutants_are_each_refused_or_built(seed):
    assert fuzz(seed=seed, cases=1000, seconds=900) == []
