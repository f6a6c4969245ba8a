"""DETR beyond the recorded fixtures: DetrConfig's timm backbone (its default: timm's resnet50,
named by `backbone`, dilated by `dilation`), transformers' ResNet-50 when use_timm_backbone is false
(totals recorded with transformers 5.23.0 and timm 1.0.31), the keys refused, and the two constructs
the template needs: a frozen batch norm and sine positions of a feature map; DetrForSegmentation's
refusals."""
from __future__ import annotations

import math

import pytest
from conftest import ROOT, write_config

from archgraph.errors import ArchgraphError
from archgraph.load import load_config


@pytest.mark.parametrize("config", [{}, {"use_timm_backbone": True}, {"backbone": "resnet50"}])
def test_the_default_backbone_is_timms_resnet50_none_of_it_frozen(tmp_path, config):
    path = write_config(tmp_path, model_type="detr", architectures=["DetrForObjectDetection"], **config)
    report = load_config(path).params()
    assert report.total == 41_501_895  # as transformers' ResNet-50, but every tensor trainable:
    assert report.totals.trainable == report.total  # DetrConvEncoder freezes a model_type with "resnet" in it
    rows = dict(report.tensors())
    assert rows["model.backbone.model.layer4.2.conv3.weight"].shape == (2048, 512, 1, 1)
    buffers = [name for name, row in report.state_dict() if row.buffer]
    assert len(buffers) == 212 and "model.backbone.model.layer1.0.downsample.1.running_var" in buffers


# timm 1.0.31: timm.create_model(name, features_only=True, out_indices=[1, 2, 3, 4]), its parameters and
# its buffer values (batch norms not frozen: running_mean, running_var, num_batches_tracked)
TIMM_RESNETS = {"resnet18": (11_176_512, 9_620), "resnet34": (21_284_672, 17_060), "resnet26": (13_946_176, 30_877),
                "resnet50": (23_508_032, 53_173), "resnet101": (42_500_160, 105_448),
                "resnet152": (58_143_808, 151_579), "resnet200": (62_624_832, 176_203),
                "wide_resnet50_2": (66_834_240, 68_277), "wide_resnet101_2": (124_837_696, 137_960),
                "resnext50_32x4d": (22_979_904, 68_277), "resnext101_32x4d": (42_128_704, 137_960),
                "resnext101_32x8d": (86_742_336, 202_984), "resnext101_32x16d": (191_977_792, 333_032),
                "resnext101_32x32d": (466_481_472, 593_128), "resnext101_64x4d": (81_406_272, 202_984)}


@pytest.mark.parametrize("name", sorted(TIMM_RESNETS))
def test_timm_resnet_is_timms_features_only_model(name):
    import archgraph
    report = archgraph.load(str(ROOT / "specs" / "hf" / "timm_resnet.yaml"), {"backbone": name}).params()
    assert (report.total, sum(row.count for _, row in report.state_dict() if row.buffer)) == TIMM_RESNETS[name]


def test_detrs_key_table_takes_the_names_timm_resnet_builds():
    from archgraph.hf import families
    assert set(families()["detr"]["variables"]["backbone"]["map"]) == set(TIMM_RESNETS)


def test_dilation_keeps_the_last_stage_at_stride_16_and_the_counts(tmp_path):
    def backbone(**config):
        path = write_config(tmp_path, model_type="detr", architectures=["DetrModel"], image_size=64,
                            backbone="resnet18", **config)
        model = load_config(path)
        shapes = model.shapes(B=1)
        return model.params().total, shapes.shape_of("backbone.model.layer4.1.act2"), shapes.outputs
    plain, dilated = backbone(), backbone(dilation=True)
    assert plain[0] == dilated[0] == 28_687_296  # transformers 5.23.0, timm 1.0.31: DetrModel(DetrConfig(backbone="resnet18"))
    assert plain[1] == [(1, 512, 2, 2)] and dilated[1] == [(1, 512, 4, 4)]
    assert plain[2]["encoder_last_hidden_state"] == (1, 4, 256) and dilated[2]["encoder_last_hidden_state"] == (1, 16, 256)


def test_a_backbone_named_for_transformers_resnet_is_refused(tmp_path):
    path = write_config(tmp_path, model_type="detr", use_timm_backbone=False, backbone="resnet50")
    with pytest.raises(ArchgraphError, match="'backbone' names a timm backbone, but use_timm_backbone is false"):
        load_config(path)


@pytest.mark.parametrize("name", ["microsoft/resnet-50", "resnet50d", "resnet50.a1_in1k"])
def test_a_timm_name_the_template_does_not_build_is_refused_by_the_key(tmp_path, name):
    path = write_config(tmp_path, model_type="detr", backbone=name)
    with pytest.raises(ArchgraphError, match=f"'backbone' is \"{name}\", which archgraph does not know"):
        load_config(path)


def test_a_timm_backbone_config_without_a_name_is_refused(tmp_path):
    # TimmBackbone raises "backbone is not set in the config"
    path = write_config(tmp_path, model_type="detr", backbone_config={"model_type": "timm_backbone"})
    with pytest.raises(ArchgraphError, match="needs its 'backbone' \\(backbone_config.backbone\\)"):
        load_config(path)


@pytest.mark.parametrize("key, value", [("features_only", False), ("out_indices", [1, 2, 3])])
def test_a_timm_backbone_config_detr_cannot_read_is_refused_by_the_key(tmp_path, key, value):
    path = write_config(tmp_path, model_type="detr",
                        backbone_config={"model_type": "timm_backbone", "backbone": "resnet18", key: value})
    with pytest.raises(ArchgraphError, match=f"'backbone_config.{key}"):
        load_config(path)


def test_backbone_kwargs_are_refused(tmp_path):
    path = write_config(tmp_path, model_type="detr", use_timm_backbone=False, backbone_kwargs={"out_indices": [4]})
    with pytest.raises(ArchgraphError, match="'backbone_kwargs' is set"):
        load_config(path)


@pytest.mark.parametrize("architecture, total, buffers", [("DetrModel", 41_368_512, 212),
                                                          ("DetrForObjectDetection", 41_501_895, 212)])
def test_without_timm_it_is_transformers_resnet_50(tmp_path, architecture, total, buffers):
    path = write_config(tmp_path, model_type="detr", architectures=[architecture], use_timm_backbone=False)
    report = load_config(path).params()
    assert report.total == total  # two labels (DetrConfig's default) and the no-object class
    # transformers freezes the whole backbone (its names are stages.N, not the stage.N it spares)
    assert report.total - report.totals.trainable == 23_454_912
    assert sum(1 for _, row in report.state_dict() if row.buffer) == buffers  # the frozen norms' four each


def test_a_backbone_config_decides_even_without_use_timm_backbone(tmp_path):
    # transformers reads use_timm_backbone only when backbone_config is absent; a saved config omits it
    path = write_config(tmp_path, model_type="detr", architectures=["DetrModel"],
                        backbone_config={"model_type": "resnet", "out_features": ["stage4"]})
    assert load_config(path).params().total == 41_368_512


def test_learned_positions_are_two_tables_of_fifty_rows(tmp_path):
    path = write_config(tmp_path, model_type="detr", architectures=["DetrModel"], use_timm_backbone=False,
                        position_embedding_type="learned")
    rows = dict(load_config(path).params().tensors())
    assert rows["position_embedding.row_embeddings.weight"].shape == (50, 128)
    assert rows["position_embedding.column_embeddings.weight"].shape == (50, 128)
    assert load_config(path).params().total == 41_368_512 + 2 * 50 * 128


def test_other_backbones_and_position_types_are_refused_by_their_keys(tmp_path):
    path = write_config(tmp_path, model_type="detr", use_timm_backbone=False, position_embedding_type="rope")
    with pytest.raises(ArchgraphError, match="'position_embedding_type' is \"rope\""):
        load_config(path)
    path = write_config(tmp_path, model_type="detr", backbone_config={"model_type": "convnext"})
    with pytest.raises(ArchgraphError, match="'backbone_config.model_type' is \"convnext\""):
        load_config(path)


def test_frozen_batch_norm_is_an_affine_map_of_fixed_buffers():
    torch = pytest.importorskip("torch")
    from archgraph.ops.norm import BatchNorm
    from archgraph.torch import Run
    bn = BatchNorm(num_features=2, frozen=True)
    tensors = {"weight": torch.tensor([2.0, 0.5]), "bias": torch.tensor([1.0, -1.0]),
               "running_mean": torch.tensor([3.0, 0.0]), "running_var": torch.tensor([4.0 - 1e-5, 1.0 - 1e-5])}
    run = Run(torch, torch.nn.functional, True, None, "", None)  # training: still the fixed statistics
    run.tensor = tensors.__getitem__
    x = torch.tensor([5.0, 2.0]).reshape(1, 2, 1, 1)
    out = bn.forward(run, x).flatten().tolist()
    assert out == pytest.approx([2.0 * (5 - 3) / 2 + 1, 0.5 * 2 / 1 - 1])
    assert [t.name for t in bn.params()] == []


def test_sine_positions_of_a_map_are_rows_then_columns():
    torch = pytest.importorskip("torch")
    from archgraph.ops.embedding import SinePosition2d
    op = SinePosition2d(num_position_features=2, normalize=True)
    out = op.forward(type("Run", (), {"torch": torch})(), torch.zeros(1, 7, 1, 2))
    assert tuple(out.shape) == (1, 4, 1, 2)
    y = 1 / (1 + 1e-6) * 2 * math.pi                     # the only row, normalized
    xs = [c / (2 + 1e-6) * 2 * math.pi for c in (1, 2)]   # columns 1 and 2 of 2
    want = [[math.sin(y)] * 2, [math.cos(y)] * 2, [math.sin(x) for x in xs], [math.cos(x) for x in xs]]
    assert out[0, :, 0, :].flatten().tolist() == pytest.approx([v for row in want for v in row], abs=1e-6)


def test_a_d_model_the_sine_positions_cannot_pair_is_refused(tmp_path):
    # d_model 10: five sines and five cosines per axis, which transformers' torch.stack cannot pair
    path = write_config(tmp_path, model_type="detr", use_timm_backbone=False, d_model=10,
                        encoder_attention_heads=2, decoder_attention_heads=2)
    with pytest.raises(ArchgraphError, match=r"'D % 4 == 0 if pos_type == 'sine' else D % 2 == 0' does not hold"):
        load_config(path)


def test_a_backbone_read_at_an_earlier_stage_is_refused(tmp_path):
    # DetrModel would project stage2's map (512 channels) and keep stages 3 and 4 unused; the template reads stage4
    path = write_config(tmp_path, model_type="detr", use_timm_backbone=False,
                        backbone_config={"model_type": "resnet", "out_features": ["stage1", "stage2"]})
    with pytest.raises(ArchgraphError, match=r"does not hold \(out_last=2, stages=4, timm_path=False\)"):
        load_config(path)


def test_a_key_may_index_a_list_from_its_end():
    from archgraph.hf import _lookup
    config = {"backbone_config": {"out_features": ["stage1", "stage4"]}}
    assert _lookup(config, "backbone_config.out_features[-1]") == "stage4"
    assert _lookup(config, "backbone_config.out_features[-2]") == "stage1"
    assert _lookup(config, "backbone_config.out_features[-3]") is None


def test_segmentation_is_detection_under_detr_with_an_attention_map_and_a_mask_head(tmp_path):
    path = write_config(tmp_path, model_type="detr", architectures=["DetrForSegmentation"], image_size=64)
    report = load_config(path).params()
    assert report.total == 42_835_552  # DetrForSegmentation(DetrConfig()) in transformers 5.23.0 with timm 1.0.31
    rows = dict(report.tensors())
    assert rows["detr.model.backbone.model.conv1.weight"].shape == (64, 3, 7, 7)
    assert rows["detr.class_labels_classifier.weight"].shape == (3, 256)
    assert rows["bbox_attention.k_proj.weight"].shape == (256, 256)
    assert rows["mask_head.conv1.conv.weight"].shape == (264, 264, 3, 3)  # d_model + 8 heads
    assert rows["mask_head.fpn_stages.0.fpn_adapter.weight"].shape == (128, 1024, 1, 1)  # layer3's map
    assert rows["mask_head.output_conv.weight"].shape == (1, 16, 3, 3)
    assert load_config(path).shapes(B=2).outputs["pred_masks"] == (2, 100, 16, 16)  # layer1's size


@pytest.mark.parametrize("config, message", [
    ({"use_timm_backbone": False}, "DetrForSegmentation: archgraph builds its mask head on timm's backbone only"),
    ({"d_model": 20, "encoder_attention_heads": 5, "decoder_attention_heads": 5},
     "d_model \\+ encoder_attention_heads must be a multiple of 8"),
    ({"d_model": 48}, "d_model / 2, / 4, / 8 and / 16 must each be a multiple of 8 or below 8"),
])
def test_segmentation_sizes_transformers_refuses_are_refused_by_their_keys(tmp_path, config, message):
    path = write_config(tmp_path, model_type="detr", architectures=["DetrForSegmentation"], **config)
    with pytest.raises(ArchgraphError, match=message):
        load_config(path)
