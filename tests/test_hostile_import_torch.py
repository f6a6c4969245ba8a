"""The hostile inputs of issue 36 to `archgraph import-torch`: each is refused with one line and its
fix, exit status 2 and no traceback, or imported as it should be.  A config is read through the
same JSON reader and limits as `import-hf`, the model is built on the meta device from the start,
and no output replaces a file the command read.  The cases that used to hang or allocate
gigabytes run in a subprocess with a memory cap and a time limit (`capped_cli`, as test_hostile's).
Every input is made here."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from archgraph.cli import main  # noqa: E402

MEMORY_CAP = 4 * 1024 ** 3  # torch and transformers alone reserve about 2 GB of address space
TINY = {"model_type": "olmo", "vocab_size": 100, "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4}


def write(tmp_path: Path, config: dict | str, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return str(path)


def refused_in_process(capsys, args: list[str], message: str, fix: str | None = None) -> None:
    """`archgraph ARGS` exits 2, prints nothing on stdout and exactly the message (and fix) on stderr."""
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    expected = f"archgraph: error: {message}\n" + (f"  fix: {fix}\n" if fix is not None else "")
    assert (out, err) == ("", expected)


def capped_cli(*args: str, seconds: float = 120) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `archgraph ARGS` in a subprocess of at most MEMORY_CAP bytes
    of address space; past `seconds` the test fails (a hang)."""
    if sys.platform != "linux":
        pytest.skip("RLIMIT_AS as Linux has it")
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "TRANSFORMERS_VERBOSITY": "error"}
    try:
        done = subprocess.run([sys.executable, "-m", "archgraph.cli", *args], capture_output=True, text=True,
                              timeout=seconds, preexec_fn=cap, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"archgraph {' '.join(a[:60] for a in args)} still ran after {seconds} s")
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.returncode, done.stdout, done.stderr


# -- the config's own values ----------------------------------------------------------------

def test_a_config_without_architectures_imports_the_base_model(tmp_path, capsys):
    path = write(tmp_path, TINY)
    out = tmp_path / "m.yaml"
    assert main(["import-torch", path, "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out}: OlmoModel; try: archgraph params {out}\n"


@pytest.mark.parametrize("change, message, fix", [
    ({"architectures": [123]}, "'architectures' must be a list of class names", None),
    ({"architectures": "OlmoForCausalLM"}, "'architectures' must be a list of class names", None),
    ({"hidden_act": "evil"}, "'hidden_act' is \"evil\", which transformers does not know as an activation", None),
    ({"dtype": "torch.evil"}, "'dtype' is \"torch.evil\", which is not a torch dtype",
     "give float32, bfloat16 or float16 (or leave it out)"),
    ({"torch_dtype": ["float32"]}, "'torch_dtype' is [\"float32\"], which is not a torch dtype",
     "give float32, bfloat16 or float16 (or leave it out)"),
    ({"hidden_size": "32"}, "'hidden_size' must be a whole number; received '32'", "give 'hidden_size' as a whole number"),
    ({"hidden_size": 32.5}, "'hidden_size' must be a whole number; received 32.5", "give 'hidden_size' as a whole number"),
    ({"num_hidden_layers": 10 ** 6}, "'num_hidden_layers' is 1,000,000; a model has at most 100,000 layers of one "
                                     "kind (a block call repeats at most that many times)", "check 'num_hidden_layers'"),
    ({"rope_theta": 1e31}, "'rope_theta' is 1e+31, beyond any size or setting archgraph reads",
     "sizes and values are at most 10**30"),
])
def test_a_bad_value_is_refused_by_its_key(tmp_path, capsys, change, message, fix):
    path = write(tmp_path, {**TINY, **change})
    assert main(["import-torch", path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    first, *rest = err.splitlines()
    assert first == f"archgraph: error: {path}: {message}"
    if fix is not None:
        assert rest == [f"  fix: {fix}"]


def test_an_unknown_activation_lists_the_known_ones(tmp_path, capsys):
    path = write(tmp_path, {**TINY, "hidden_act": "gelu_nwe"})
    assert main(["import-torch", path]) == 2
    fix = capsys.readouterr().err.splitlines()[1]
    assert fix.startswith("  fix: did you mean 'gelu_new'? known values: gelu, ")


@pytest.mark.parametrize("size", [-64, 0])
def test_a_size_transformers_cannot_build_is_one_refusal_naming_the_class(tmp_path, capsys, size):
    path = write(tmp_path, {**TINY, "hidden_size": size})
    assert main(["import-torch", path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.startswith(f"archgraph: error: {path}: transformers cannot build OlmoModel from this config: ")
    assert err.endswith("  fix: correct the config value it names\n")


@pytest.mark.parametrize("text, message", [
    ('{"a": 1}', "the config has no 'model_type', so its family is unknown"),
    ('[1, 2]', "a config.json holds one JSON object; this holds a list"),
    ('{"model_type": "olmo", "model_type": "olmo"}', "the config.json lists 'model_type' twice"),
    ('{"model_type": "olmo", "vocab_size": ' + "9" * 5000 + "}", "'vocab_size' is a number of 5,000 digits, too long to read"),
])
def test_a_config_is_read_as_import_hf_reads_it(tmp_path, capsys, text, message):
    path = write(tmp_path, text)
    assert main(["import-torch", path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.splitlines()[0] == f"archgraph: error: {path}: {message}"


def test_a_3_gb_config_json_is_refused_by_its_size_without_reading_it(tmp_path):
    path = tmp_path / "config.json"
    with open(path, "wb") as f:
        f.truncate(3 * 1024 ** 3)  # sparse: no disk used
    code, out, err = capped_cli("import-torch", str(path), seconds=60)
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}: 3,221,225,472 bytes is too large for a config.json (at most "
                   "16,777,216)\n  fix: pass a config.json file\n")


# -- sizes that would take the machine -------------------------------------------------------

@pytest.mark.slow
def test_a_vocabulary_of_a_trillion_rows_is_built_on_the_meta_device(tmp_path):
    """Its embedding used to be allocated on the CPU before it was moved to the meta device."""
    path = write(tmp_path, {**TINY, "vocab_size": 10 ** 12})
    out = tmp_path / "m.yaml"
    code, _, err = capped_cli("import-torch", path, "-o", str(out), seconds=300)
    assert (code, err) == (0, f"wrote {out}: OlmoModel; try: archgraph params {out}\n")
    assert "{name: embed_tokens, op: embedding, in: input_ids, num_embeddings: 1000000000000, embedding_dim: 32}" \
        in out.read_text()


@pytest.mark.parametrize("key", ["num_hidden_layers", "text_config.num_layers"])
def test_a_million_layers_are_refused_before_torch_is_imported(tmp_path, key):
    outer, _, inner = key.rpartition(".")
    path = write(tmp_path, {**TINY, outer: {inner: 10 ** 6}} if outer else {**TINY, key: 10 ** 6})
    code, out, err = capped_cli("import-torch", path, seconds=60)
    assert (code, out) == (2, "")
    assert err == (f"archgraph: error: {path}: '{key}' is 1,000,000; a model has at most 100,000 layers of one "
                   f"kind (a block call repeats at most that many times)\n  fix: check '{key}'\n")


@pytest.mark.slow
def test_a_model_whose_buffers_would_fill_memory_is_built_within_the_cap(tmp_path):
    """Inkling's relative positions over 131,072 positions: tensors beyond 64 MB are made on the meta
    device, so building it never reaches the allocator; the import ends in a spec or one refusal."""
    path = write(tmp_path, {"model_type": "inkling_text", "architectures": ["InklingForCausalLM"],
                            "num_hidden_layers": 2, "n_routed_experts": 4, "num_experts_per_tok": 2})
    code, out, err = capped_cli("import-torch", path, seconds=600)
    assert code in (0, 2)
    if code == 2:
        assert out == "" and err.startswith("archgraph: error: ") and len(err.splitlines()) <= 2


# -- the user's code --------------------------------------------------------------------------

MODULE = ("import torch\n\nclass Net(torch.nn.Module):\n"
          "    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(4, 2)\n\n"
          "    def forward(self, x):\n        return self.fc(x)\n\n"
          "def make():\n    return Net(), (torch.zeros(2, 4),)\n\n"
          "def leave():\n    raise SystemExit(0)\n\n"
          "def fail():\n    raise RuntimeError('no GPU here')\n")


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "hostile_mods.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("hostile_mods", None)


def test_output_over_the_python_file_imported_is_refused(user_module, capsys):
    before = (user_module / "hostile_mods.py").read_text()
    refused_in_process(capsys, ["import-torch", "hostile_mods:make", "-o", "hostile_mods.py"],
                       "output 'hostile_mods.py' is an input of this command; refusing to overwrite it",
                       "choose another output file name")
    assert (user_module / "hostile_mods.py").read_text() == before


def test_a_callable_raising_system_exit_is_a_refusal_not_a_silent_success(user_module, capsys):
    refused_in_process(capsys, ["import-torch", "hostile_mods:leave"],
                       "hostile_mods:leave: calling 'leave' raised SystemExit(0)",
                       "import-torch runs your code to build the module: fix the error it raises")


def test_a_callable_raising_an_error_is_one_refusal(user_module, capsys):
    refused_in_process(capsys, ["import-torch", "hostile_mods:fail"],
                       "hostile_mods:fail: calling 'fail' raised RuntimeError: no GPU here",
                       "import-torch runs your code to build the module: fix the error it raises")


def test_an_example_input_too_large_to_make_is_refused(user_module, capsys):
    refused_in_process(capsys, ["import-torch", "hostile_mods:make", "--input", "x=100000x100000"],
                       "--input 'x=100000x100000': 10,000,000,000 elements is more than an example input made "
                       "in memory may hold (268,435,456)", "give a smaller shape")
