"""A spec `import-hf` writes keeps every size of the inputs that the config leaves to the user as a variable
(issue 35): LLaVA-NeXT's grid of tiles follows the image's IMH x IMW, Qwen2-VL's patches its IH x IW
pixels, and a node that exists at some sizes only keeps its `when:`.  At any other value of such a size
the written spec is the template at that value (`--set` on the config.json): the same parameters, the
same shapes, or both refused."""
from __future__ import annotations

import json

import pytest

import archgraph
from archgraph import expr
from archgraph.errors import ArchgraphError
from archgraph.hf import import_file
from archgraph.load import load_config
from archgraph.render.data import params_json, shapes_json
from archgraph.spec.yamlload import load_file
from conftest import write_config
from test_hf_configs import DATA, FILES


def _one_per_family() -> dict[str, str]:
    first: dict[str, str] = {}
    for name in FILES:
        config = json.loads((DATA / f"{name}.json").read_text())["config"]
        first.setdefault(str(config.get("model_type")), name)
    return first


def input_sizes(spec) -> dict[str, object]:
    """The written spec's variables the inputs' shapes are made of (and those they are computed from)."""
    variables = spec.get("variables") or {}
    todo = [d for value in (spec.get("inputs") or {}).values() for d in
            ((value.get("shape") if isinstance(value, dict) else value) or []) if isinstance(d, str)]
    names: dict[str, object] = {}
    while todo:
        for name in expr.names(str(todo.pop())):
            if name in variables and name not in names:
                names[name] = variables[name]
                todo.append(str(variables[name]))
    return names


def _outcome(load):
    try:
        model = load()
        return _unnamed(params_json(model.params())), shapes_json(model.shapes(B=2))["nodes"]
    except ArchgraphError:
        return "refused"


def _unnamed(value):
    """Counts without the blocks' names: a written spec names each kind of a block its template writes
    once (ResNet's `conv_layer_act` and `conv_layer`); where the parameters are is what must agree."""
    if isinstance(value, dict):
        return {k: _unnamed(v) for k, v in value.items() if k not in ("block", "model")}
    return [_unnamed(v) for v in value] if isinstance(value, list) else value


SIZED = {mt: name for mt, name in _one_per_family().items()}


@pytest.mark.slow
@pytest.mark.parametrize("model_type", sorted(SIZED))
def test_every_input_size_of_a_written_spec_changes_what_follows(tmp_path, cli, model_type):
    config = write_config(tmp_path, **json.loads((DATA / f"{SIZED[model_type]}.json").read_text())["config"])
    spec = tmp_path / "written.yaml"
    assert cli("import-hf", config, "-o", str(spec))[0] == 0
    written, sources = archgraph.load(spec), import_file(config).sources
    sizes = [v for v in input_sizes(load_file(spec)) if isinstance(written.variables.get(v), int)
             and v not in sources]   # the config's own sizes (hidden_size, image_size) make its model
    tried = 0
    for name in sizes:
        value = written.variables[name]
        for other in sorted({value * 2, value + 1, max(1, value // 2)} - {value}):
            settings = {name: other}
            want = _outcome(lambda: load_config(config, settings))
            assert _outcome(lambda: archgraph.load(spec, settings)) == want, f"--set {name}={other}"
            tried += want != "refused"
    assert tried == TRIED.get(model_type, 0), sizes


# the families whose inputs have sizes of their own, and how many of the other values tried build
TRIED = {"convnext": 3, "detr": 9, "dinov2": 9, "dinov2_with_registers": 9, "efficientnet": 3, "gemma3n": 3,
         "gemma3n_vision": 12, "gemma4": 2, "gemma4_vision": 2, "llava_next": 8, "llava_onevision": 11,
         "mistral3": 7, "mobilenet_v2": 3, "paligemma": 2, "qwen2_5_vl": 13, "qwen2_vl": 13, "qwen3_5": 8,
         "qwen3_5_moe": 8, "qwen3_vl": 8, "qwen3_vl_moe": 8, "resnet": 12, "segformer": 9, "siglip": 3,
         "siglip2": 3, "siglip2_vision_model": 3, "siglip_vision_model": 2, "swin": 3}


def _written(tmp_path, cli, config: dict):
    path = write_config(tmp_path, **config)
    spec = tmp_path / "written.yaml"
    assert cli("import-hf", path, "-o", str(spec))[0] == 0
    return spec


def test_a_written_llava_next_spec_cuts_another_image_into_its_own_tiles(tmp_path, cli):
    """LLaVA-NeXT's tiny test config (8-pixel tiles, pinpoints 8 x 16 to 24 x 8): a 40 x 60 image is
    resized to 16 x 16, four tiles and the base one, as transformers' image_size_to_num_patches counts."""
    from test_torch_hf import LLAVA_NEXT   # the config alone: no torch needed
    spec = _written(tmp_path, cli, {**LLAVA_NEXT, "architectures": ["LlavaNextForConditionalGeneration"]})
    tiles = {size: archgraph.load(spec, {"IMH": size[0], "IMW": size[1]}).variables["TL"]
             for size in [(8, 8), (40, 60), (9, 40), (41, 7)]}
    assert tiles == {(8, 8): 3, (40, 60): 5, (9, 40): 4, (41, 7): 4}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llava_next-cond-gen", "llava_onevision-base-resized-clip"])
@pytest.mark.parametrize("size", [(40, 60), (8, 8), (9, 40), (41, 7)])
def test_a_written_tiled_spec_at_another_size_computes_what_transformers_computes(tmp_path, cli, name, size):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_torch_hf import CASES, _assert_same_outputs, _hf_model, _tiled_counts, _tiled_inputs

    from archgraph.torch import to_module
    config = CASES[name]
    model = archgraph.load(_written(tmp_path, cli, config), {"IMH": size[0], "IMW": size[1]})
    tiles, _ = _tiled_counts(config, size)
    assert model.variables["TL"] == tiles
    reference = _hf_model(config)
    module = to_module(model).eval()
    module.load_state_dict(reference.state_dict(), strict=True)
    inputs = _tiled_inputs(config, 2, 5, size)
    _assert_same_outputs(reference, module, inputs, {"image_sizes": torch.tensor([size] * 2)})


@pytest.mark.slow
@pytest.mark.parametrize("name", ["qwen2_5_vl-cond-gen", "qwen3_vl-cond-gen", "qwen2_vl-cond-gen"])
@pytest.mark.parametrize("grid", [(2, 2), (4, 6), (6, 2)])
def test_a_written_qwen_vl_spec_at_another_image_size_computes_what_transformers_computes(tmp_path, cli, name,
                                                                                           grid):
    """The written spec's image is IH x IW pixels (224 by default): at another size its patches, tokens and
    windows follow, as transformers' for an image of that grid (in merged tokens)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_torch_hf import CASES, _assert_same_outputs, _hf_model

    from archgraph.torch import to_module
    config = CASES[name]
    vision = config["vision_config"]
    merge, patch = vision.get("spatial_merge_size", 2), vision.get("patch_size", 14)
    rows, columns = grid[0] * merge, grid[1] * merge   # patches
    model = archgraph.load(_written(tmp_path, cli, config), {"IH": rows * patch, "IW": columns * patch})
    reference = _hf_model(config)
    module = to_module(model).eval()
    module.load_state_dict(reference.state_dict(), strict=True)
    torch.manual_seed(1)
    token, count = config.get("image_token_id", 151655), grid[0] * grid[1]
    ids = torch.randint(3, config["text_config"]["vocab_size"], (2, 7 + count))
    ids[ids == token] = token - 1
    ids[:, 2:2 + count] = token
    width = vision.get("in_channels", 3) * vision.get("temporal_patch_size", 2) * patch ** 2
    inputs = {"input_ids": ids, "pixel_values": torch.randn(2 * rows * columns, width)}
    _assert_same_outputs(reference, module, inputs, {"image_grid_thw": torch.tensor([[1, rows, columns]] * 2),
                                                     "mm_token_type_ids": (ids == token).int()})
