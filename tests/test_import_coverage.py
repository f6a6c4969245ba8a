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
