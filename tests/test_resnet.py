"""ResNet-50 (Hugging Face ResNetModel, microsoft/resnet-50) against the reference
figures measured with transformers: parameter count, tensor and buffer names and
shapes, and the output shape of every leaf module of a real forward pass."""
from __future__ import annotations

from pathlib import Path

import pytest

import archgraph
from archgraph.dims import fmt

from conftest import ROOT, measured_shapes, reference

NAME = "resnet-50"


@pytest.fixture(scope="module")
def model():
    return archgraph.load(NAME)


@pytest.fixture(scope="module")
def report(model):
    return model.params()


def test_total_parameters(report):
    assert report.total == 23_508_032
    assert report.total == reference(NAME)["expected_params"]


def test_tensor_names_and_shapes(report):
    mine = {name: list(row.shape) for name, row in report.tensors()}
    assert mine == reference(NAME)["param_shapes"]


def test_buffer_names_and_shapes(report):
    mine = {f"{path}.{row.name}": list(row.shape)
            for path, _, _, rows in report.nodes() for row in rows if row.buffer}
    assert mine == reference(NAME)["buffers"]


def test_shapes_agree_with_forward_pass(model):
    measured = measured_shapes(NAME)
    assert measured["inputs"] == {"pixel_values": [2, 3, 224, 224]}
    shapes = {path: [list(s) for s in outs] for path, _, outs in model.shapes(B=2).nodes()}
    matched = {path: want for path, want in measured["leaf_output_shapes"].items() if path in shapes}
    assert len(matched) >= 150, f"only {len(matched)} measured modules correspond to nodes"
    wrong = {path: (want, shapes[path]) for path, want in matched.items() if shapes[path] != [want]}
    assert not wrong


def test_symbolic_shapes(model, tmp_path: Path):
    # No batch size bound: the pooler output keeps B symbolic.
    pooled = model.shapes().outputs["pooler_output"]
    assert [fmt(d) for d in pooled] == ["B", "2048", "1", "1"]
    assert model.shapes().shape_of("pooler") == [pooled]

    # Any image size: a child spec replaces the input with a symbolic H x W.
    child = tmp_path / "resnet-any-size.yaml"
    child.write_text(f"extends: {ROOT / 'specs' / 'resnet-50.yaml'}\n"
                     "name: resnet-50-any-size\n"
                     "inputs:\n  pixel_values: {shape: [B, 3, H, W]}\n")
    shapes = archgraph.load(child).shapes()
    (conv,) = shapes.shape_of("embedder.embedder.convolution")
    assert [fmt(d) for d in conv] == ["B", "64", "ceil(H/2)", "ceil(W/2)"]
    assert [fmt(d) for d in shapes.outputs["pooler_output"]] == ["B", "2048", "1", "1"]
    # Bound again to 224, the symbolic spec gives the measured last hidden state.
    assert archgraph.load(child).shapes(B=2, H=224, W=224).outputs["last_hidden_state"] == (2, 2048, 7, 7)
