"""A `buffer` computed from constants holds its value from construction on, and forward never
writes it: a value `load_state_dict` put there stays."""
from __future__ import annotations

import pytest

from archgraph.errors import ArchgraphError
from archgraph.load import load_text

torch = pytest.importorskip("torch")
from archgraph.torch import to_module  # noqa: E402

SQUARES = """\
name: squares
inputs:
  x: {shape: [B, 4]}
blocks:
  scale:
    nodes:
      - {name: index, op: arange, end: 4, dtype: float32}
      - {name: square, op: pow, constant: 2}
      - {name: table, op: buffer, in: square, shape: [4]}
      - {name: out, op: mul, in: [x, table]}
nodes:
  - {name: layers, block: scale, repeat: 2}
"""


def _module(text=SQUARES, **kw):
    return to_module(load_text(text, "squares.yaml"), **kw)


def test_a_computed_buffer_holds_its_value_from_construction_on():
    module = _module()
    assert module.layers[0].table.tolist() == [0.0, 1.0, 4.0, 9.0]
    assert {k: v.tolist() for k, v in module.state_dict().items()} == \
        {"layers.0.table": [0.0, 1.0, 4.0, 9.0], "layers.1.table": [0.0, 1.0, 4.0, 9.0]}


def test_forward_never_overwrites_a_loaded_buffer():
    module = _module()
    module.load_state_dict({"layers.0.table": torch.tensor([1.0, 2.0, 3.0, 4.0]),
                            "layers.1.table": torch.tensor([2.0, 2.0, 2.0, 2.0])})
    out = module(x=torch.ones(1, 4))["layers"]
    assert out.tolist() == [[2.0, 4.0, 6.0, 8.0]]
    assert module.layers[0].table.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_computed_buffer_takes_the_module_dtype_and_nothing_on_meta():
    assert _module(dtype=torch.float64).layers[1].table.dtype == torch.float64
    assert _module(dtype=torch.float64).layers[1].table.tolist() == [0.0, 1.0, 4.0, 9.0]
    meta = _module(device="meta")
    assert meta.layers[0].table.device.type == "meta"


@pytest.mark.parametrize("edit, message", [
    (("x: {shape: [B, 4]}", "x: {shape: [4]}"),
     "buffer 'layers.0.table': its value depends on the input 'x'; a buffer's value "
     "is computed from constants (arange, full, ...) when the module is built"),
    (("{name: square, op: pow, constant: 2}", "{name: square, op: linear, in_features: 4, out_features: 4}"),
     "buffer 'layers.0.table': its value comes from node 'square' ('linear', which has parameters)"),
])
def test_a_buffer_fed_by_anything_but_constants_is_refused(edit, message):
    text = SQUARES.replace(*edit)
    if "[4]}" in edit[1]:  # the buffer's value is the model's input
        text = text.replace("in: square,", "in: x,")
    with pytest.raises(ArchgraphError) as info:
        _module(text)
    assert message in info.value.message
