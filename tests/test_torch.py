"""archgraph.torch: every spec becomes a torch.nn.Module with archgraph's tensors, counts and
shapes, and it computes the model: the same outputs as the PyTorch code the specs describe."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import archgraph
from archgraph.torch import check, to_module

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted([*map(str, (ROOT / "specs").glob("*.yaml")), *map(str, (ROOT / "examples").glob("*.yaml")),
                *map(str, (ROOT / "tests" / "data" / "specs").glob("*.yaml")),
                *map(str, (ROOT / "tests" / "data" / "research").glob("*.yaml")),
                *map(str, (ROOT / "examples").glob("*/config.json"))])
SIZES = {"B": 2, "S": 8, "T": 6, "L": 16, "N": 5, "P": 16, "H": 32, "W": 24}


def _inputs(model, device="cpu"):
    """Random inputs at small sizes: ids below the vocabulary, images of the declared sizes."""
    shapes = model.shapes(**{k: v for k, v in SIZES.items() if k in _sizes(model)}).inputs
    out = {}
    for name, spec in model.inputs.items():
        shape = tuple(int(d) for d in shapes[name])
        if spec.dtype.startswith("int"):
            out[name] = torch.randint(0, 2, shape, device=device)
        else:
            out[name] = torch.randn(shape, device=device)
    return out


def _sizes(model) -> set[str]:
    from archgraph.spec.settings import size_names
    return set(size_names(model.inputs, model.variables))


@pytest.mark.parametrize("path", SPECS, ids=lambda p: Path(p).name)
def test_every_spec_builds_a_module_with_its_counts_and_every_node_shape(path):
    model = archgraph.load(path)
    module = to_module(model, device="meta")
    assert sorted(module.state_dict()) == sorted(n for n, _ in model.params().state_dict())
    sizes = {k: v for k, v in SIZES.items() if k in _sizes(model)}
    result = check(model, sizes)
    assert result.difference is None
    assert result.module_params == result.params == model.params().total
    assert result.nodes == len(list(model.shapes(**sizes).nodes()))
    with torch.no_grad():
        outputs = module(**_inputs(model, "meta"))
    want = model.shapes(**sizes).outputs
    assert {k: tuple(v.shape) for k, v in outputs.items()} == {k: tuple(int(d) for d in s) for k, s in want.items()}


def test_importing_archgraph_does_not_need_torch(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    code = "import archgraph; print(archgraph.load('gpt2').params().total)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(tmp_path), "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "124439808"


sys.path.insert(0, str(ROOT / "tools"))
from research_reference import CASES  # noqa: E402  (the research architectures written in PyTorch)


@pytest.mark.parametrize("name", sorted(CASES))
def test_research_architectures_compute_what_their_pytorch_code_computes(name):
    case = CASES[name]
    torch.manual_seed(0)
    reference = case.make().eval()
    model = archgraph.load(str(ROOT / "tests" / "data" / "research" / f"{name}.yaml"))
    module = to_module(model).eval()
    module.load_state_dict(reference.state_dict(), strict=True)
    inputs = case.inputs()
    with torch.no_grad():
        want = reference(*inputs)
        got = module(**dict(zip(model.graph.inputs, inputs)))
    want = [want] if isinstance(want, torch.Tensor) else list(want.values()) if isinstance(want, dict) else list(want)
    for key, expected in zip(case.outputs, want):
        assert got[key].shape == expected.shape, key
        assert torch.allclose(got[key].float(), expected.float(), atol=1e-4, rtol=1e-4), \
            f"{key}: max difference {(got[key].float() - expected.float()).abs().max():.3g}"


REFERENCE_CONFIGS = sorted((ROOT / "tests" / "data" / "reference" / "hf").glob("*.json"))


@pytest.mark.parametrize("record", REFERENCE_CONFIGS, ids=lambda p: p.stem)
def test_reference_checkpoints_build_modules_that_agree_with_archgraph(tmp_path, record):
    """The 25 reference checkpoints' configs, real sizes, on the meta device: no warnings, the
    measured parameter count, every node's shape."""
    import json

    data = json.loads(record.read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data["config"]))
    model = archgraph.load(str(path))
    assert model.warnings == []
    result = check(model)
    assert result.difference is None
    assert result.module_params == data["expected_params"]


def test_argmax_of_a_mask_is_the_first_true_and_of_ids_the_largest():
    # CLIP's text pooling: the first end-of-text token, or (old configs) the largest token id
    from archgraph.ops import REGISTRY
    from archgraph.torch import Run
    run = Run(torch, torch.nn.functional, False, None, "", None)
    ids = torch.tensor([[5, 9, 7, 9], [3, 1, 8, 2]])
    argmax = REGISTRY["argmax"](dim=-1)
    assert argmax.forward(run, ids == 9).tolist() == [1, 0]  # row 2 has none: 0, as torch gives
    assert argmax.forward(run, ids).tolist() == [1, 2]
    assert REGISTRY["argmax"](dim=1, keepdim=True).forward(run, ids).shape == (2, 1)


@pytest.mark.parametrize("size, stride, kernel, dilation", [(7, 2, 3, 1), (8, 2, 3, 1), (9, 3, 5, 1), (10, 1, 3, 2),
                                                            (5, 2, 1, 1)])
def test_tf_same_padding_pads_as_tensorflow(size, stride, kernel, dilation):
    """conv2d padding tf_same: TensorFlow's SAME, worked out here from TensorFlow's documented rule
    (total = max((out - 1)·s + d·(k - 1) + 1 - n, 0), half before rounded down, out = ceil(n / s))."""
    from archgraph.load import load_text
    spec = (f"name: tf\ninputs:\n  x: [1, 2, {size}, {size + 1}]\nnodes:\n"
            f"  - {{name: conv, op: conv2d, in: x, in_channels: 2, out_channels: 3, kernel_size: {kernel}, "
            f"stride: {stride}, dilation: {dilation}, padding: tf_same}}\n")
    model = load_text(spec, "tf.yaml")
    module = to_module(model)
    torch.manual_seed(0)
    x = torch.randn(1, 2, size, size + 1)
    pads = []
    for n in (size + 1, size):  # F.pad lists the last dim first
        out = -(-n // stride)
        total = max((out - 1) * stride + dilation * (kernel - 1) + 1 - n, 0)
        pads += [total // 2, total - total // 2]
    weight, bias = module.state_dict()["conv.weight"], module.state_dict()["conv.bias"]
    want = torch.nn.functional.conv2d(torch.nn.functional.pad(x, pads), weight, bias, stride, 0, dilation)
    with torch.no_grad():
        got = module(x=x)["conv"]
    assert tuple(got.shape) == tuple(int(d) for d in model.shapes().outputs["conv"]) == tuple(want.shape)
    assert torch.allclose(got, want)
