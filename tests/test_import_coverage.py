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
