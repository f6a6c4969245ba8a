"""tools/import_coverage.py's --quick configs: at most two layers of each stack, with the lists of
one entry per layer cut to match (else transformers refuses the config it was given)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from import_coverage import shallow  # noqa: E402


def test_lists_of_one_entry_per_layer_keep_their_first_and_last():
    config = {"num_hidden_layers": 61, "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 58,
              "layer_types": ["sliding"] * 5 + ["full"], "vocab_size": 61,
              "sizes": [1, 2, 3], "text_config": {"num_layers": 4, "kinds": ["a", "b", "c", "d"], "other": [7] * 61}}
    assert shallow(config) == {
        "num_hidden_layers": 2, "mlp_layer_types": ["dense", "sparse"], "layer_types": ["sliding", "full"],
        "vocab_size": 61, "sizes": [1, 2, 3],
        # a sub-config's lists follow its own counts, not its parent's
        "text_config": {"num_layers": 2, "kinds": ["a", "d"], "other": [7] * 61}}


def test_a_feature_extractor_keeps_one_kernel_and_stride_per_conv_layer():
    config = {"num_feat_extract_layers": 7, "conv_dim": [512] * 7, "conv_stride": [5, 2, 2, 2, 2, 2, 2],
              "conv_kernel": [10, 3, 3, 3, 3, 2, 2], "num_hidden_layers": 12, "tdnn_dim": [512, 512, 512, 512, 1500]}
    assert shallow(config) == {"num_feat_extract_layers": 2, "conv_dim": [512, 512], "conv_stride": [5, 2],
                               "conv_kernel": [10, 2], "num_hidden_layers": 2,
                               "tdnn_dim": [512, 512, 512, 512, 1500]}


def test_counts_of_two_or_fewer_and_flags_stay():
    config = {"num_hidden_layers": 2, "use_layers": True, "layer_types": ["full", "full"], "depth": 1}
    assert shallow(config) == config


def test_a_part_config_is_left_out_of_the_share_and_listed_with_its_reason():
    """sam_prompt_encoder's config configures a part of SAM: transformers has no model for it alone,
    so it is no model type a user imports; the share is of the other types, and the report says so."""
    from import_coverage import summary
    part = {"type": "sam_prompt_encoder", "status": "refused", "seconds": 0.1,
            "reason": "transformers defines no model class for a 'sam_prompt_encoder' config alone "
                      "(SamPromptEncoderConfig configures a part of another model)"}
    rows = [part, {"type": "gpt2", "status": "imported", "seconds": 1.0},
            {"type": "esm", "status": "refused", "seconds": 0.1, "reason": "transformers cannot build EsmModel"}]
    text = summary(rows)
    assert text.splitlines()[0] == "imported 1 of 2 model types (50.0 %)"
    assert ("not model types, left out of the 2 (1: transformers defines no model class for the config alone):\n"
            "  sam_prompt_encoder: SamPromptEncoderConfig configures a part of another model") in text
    assert "refused, by reason:\n    1  transformers cannot build MODEL\n       esm" in text


def test_a_per_layer_config_keeps_the_first_and_last_layers_entries_as_layers_0_and_1():
    """EmbeddingGemma 2's global layers 5, 11, 17, 23 of 24 ('per_layer_config keys must be integer
    layer indices in the range [0, 2)' when cut): the last layer's entry is layer 1's."""
    config = {"num_hidden_layers": 24, "per_layer_config": {
        "00": {"a": 0}, "05": {"head_dim": 512}, "23": {"head_dim": 512, "kv": 1}}}
    assert shallow(config) == {"num_hidden_layers": 2, "per_layer_config": {
        "00": {"a": 0}, "01": {"head_dim": 512, "kv": 1}}}
    assert shallow({"num_hidden_layers": 2, "per_layer_config": {"1": {"b": 2}}}) == {
        "num_hidden_layers": 2, "per_layer_config": {"1": {"b": 2}}}


def test_a_backbones_out_features_and_the_layers_features_are_read_from_stay_within_two_layers():
    """TIPSv2's vision backbone reads stage12 of stem, stage1..stage12 ('out_features must be a subset
    of stage_names' when cut); VipLLaVA reads its tower's layers -2, -5, -8, -11 and 6."""
    config = {"num_hidden_layers": 12, "stage_names": ["stem"] + [f"stage{i}" for i in range(1, 13)],
              "out_features": ["stage12"], "out_indices": [12]}
    assert shallow(config) == {"num_hidden_layers": 2, "stage_names": ["stem", "stage1", "stage2"],
                               "out_features": ["stage2"], "out_indices": [2]}
    vip = {"vision_feature_layers": [-2, -5, -8, -11, 6], "vision_config": {"num_hidden_layers": 24},
           "adapter_config": {"vision_feature_layer": [24, 18]}}
    assert shallow(vip) == {"vision_feature_layers": [-2, -2, -2, -2, 1], "vision_config": {"num_hidden_layers": 2},
                            "adapter_config": {"vision_feature_layer": [1, 1]}}
