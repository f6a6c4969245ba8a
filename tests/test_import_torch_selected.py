"""A selection whose length is how many a boolean mask keeps (`x[mask]`, `torch.unique_consecutive`)
is a size the data decides; in a trace specialised to the example it is the count the example's
mask kept, read by its line, and the selection is imported as fixed-size ops (the kept positions
are the first of a stable sort putting the mask's True first): Muse Spark's vision tower computes
its window indices so (`index_padded[index_padded != -100]`, `torch.unique_consecutive`)."""
from __future__ import annotations

import pytest
import yaml

torch = pytest.importorskip("torch")

from archgraph.load import load_text  # noqa: E402
from archgraph.torch import to_module, to_spec  # noqa: E402


class Windows(torch.nn.Module):
    """Window indices as Muse Spark's get_vision_window_index makes them, from a grid read as numbers."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x, grid):
        n = int(grid.max())
        index = torch.nn.functional.pad(torch.arange(n * 2).reshape(2, n), (0, 1), value=-100).reshape(-1)
        keep = index[index != -100]
        bounds = torch.unique_consecutive(torch.cumsum(grid, 0).repeat_interleave(2, dim=0))
        return self.proj(x)[:, keep] * bounds.sum()


def test_a_selection_by_a_mask_is_the_count_the_example_kept_and_said():
    torch.manual_seed(0)
    module = Windows().eval()
    x, grid = torch.randn(2, 6, 4), torch.tensor([1, 3])
    text = to_spec(module, x, grid)  # checked: outputs equal with the module's weights
    spec = yaml.safe_load(str(text))
    assert spec["description"].endswith(
        "which the example fixed: 3 read by `n = int(grid.max())`; 6 read by `keep = index[index != -100]`; "
        "2 read by `bounds = torch.unique_consecutive(torch.cumsum(grid, 0).repeat_interleave(2, dim=0))`")
    assert [n["op"] for n in spec["nodes"]].count("sort") == 2
    mine = to_module(load_text(str(text))).eval()
    mine.load_state_dict(module.state_dict(), strict=True)
    out = mine(x=x, grid=grid)["output"]
    assert out.shape == (2, 6, 4) and torch.allclose(out, module(x, grid), atol=1e-6)


class Chunks(torch.nn.Module):
    """Each position's chunk as Phi-4's audio encoder finds it: nonzero of a 2-D mask, its columns."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x, grid):
        n = int(grid.max())
        r = torch.arange(0, 5).unsqueeze(-1)
        idx = ((r < torch.tensor([n, 5])) & (r >= torch.tensor([0, n]))).nonzero()[:, 1]
        return self.proj(x)[:, idx]


def test_nonzero_is_the_positions_of_the_count_the_example_kept():
    torch.manual_seed(0)
    module = Chunks().eval()
    x, grid = torch.randn(2, 6, 4), torch.tensor([1, 3])
    spec = yaml.safe_load(str(to_spec(module, x, grid)))  # checked: outputs equal with the module's weights
    assert spec["description"].endswith(
        "3 read by `n = int(grid.max())`; 5 read by "
        "`idx = ((r < torch.tensor([n, 5])) & (r >= torch.tensor([0, n]))).nonzero()[:, 1]`")
    assert "nonzero" not in [n["op"] for n in spec["nodes"]]
