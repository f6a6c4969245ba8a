"""`archgraph plan`: memory per GPU, time, serving and search, against the closed forms of the papers
they come from (named beside each test) and what a user sees."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from archgraph import load
from archgraph.passes.params import named_tensors

LLAMA_7B = 6_738_415_616            # parameters, as transformers counts them
GIB = 2 ** 30


def plan(cli, *args):
    code, out, err = cli("plan", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def states(d):
    g = d["per_gpu"]
    return g["weights"] + g["gradients"] + g["optimizer"]


# -- ZeRO: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
# Models", Fig. 1: model states per GPU with mixed-precision Adam (K = 12) over N data-parallel GPUs
@pytest.mark.parametrize("n", [8, 64])
@pytest.mark.parametrize("stage, form", [(0, lambda p, n: 16 * p), (1, lambda p, n: 4 * p + 12 * p // n),
                                         (2, lambda p, n: 2 * p + 14 * p // n), (3, lambda p, n: 16 * p // n)])
def test_zero_model_states_are_the_papers(cli, n, stage, form):
    d = plan(cli, "llama-2-7b", "--gpus", str(n), "--zero", str(stage), "--seq", "4096")
    assert states(d) == form(LLAMA_7B, n)
    assert d["layout"]["dp"] == n


def test_zero_per_term(cli):
    """Stage 2 of 64: weights whole (2P), gradients and optimizer states partitioned (2P/N, 12P/N)."""
    g = plan(cli, "llama-2-7b", "--gpus", "64", "--zero", "2")["per_gpu"]
    assert (g["weights"], g["gradients"], g["optimizer"]) == (2 * LLAMA_7B, 2 * LLAMA_7B // 64, 12 * LLAMA_7B // 64)


def test_gpt3_zero3_on_1024_gpus(cli):
    p = load("gpt3-175b").params().total
    d = plan(cli, "gpt3-175b", "--gpus", "1024", "--zero", "3")
    assert states(d) == sum(-(-k * p // 1024) for k in (2, 2, 12))


def test_other_optimizers_follow_the_same_logic(cli):
    """Bytes per parameter beside the fp16 weights and gradients: SGD with momentum an fp32 copy and
    the momentum (8), AdamW as Adam (12), Adafactor the copy and its factored second moments (the
    rows and columns of each matrix: Shazeer and Stern 2018), 8-bit Adam the copy, a byte per moment
    and a float32 scale per block of 2,048 (tensors under 4,096 values keep 32-bit moments, as
    bitsandbytes does); partitioned by ZeRO alike."""
    model = load("llama-2-7b")
    shapes = [t.shape for _, t in named_tensors(model)]
    factored = sum((s[-2] + s[-1]) if len(s) >= 2 else s[0] for s in shapes)
    small = sum(s[0] for s in shapes if len(s) == 1 and s[0] < 4096)
    big = LLAMA_7B - small
    want = {"sgd": 4 * LLAMA_7B + 4 * LLAMA_7B, "adamw": 12 * LLAMA_7B, "adafactor": 4 * LLAMA_7B + 4 * factored,
            "adam-8bit": 4 * LLAMA_7B + 2 * big + 8 * -(-big // 2048) + 8 * small}
    for optimizer, bytes_ in want.items():
        assert plan(cli, "llama-2-7b", "--optimizer", optimizer)["per_gpu"]["optimizer"] == bytes_, optimizer
        assert plan(cli, "llama-2-7b", "--optimizer", optimizer, "--gpus", "8", "--zero", "1")["per_gpu"][
            "optimizer"] == -(-bytes_ // 8)


def test_fp32_training_keeps_no_master_copy(cli):
    g = plan(cli, "llama-2-7b", "--dtype", "fp32")["per_gpu"]
    assert (g["weights"], g["gradients"], g["optimizer"]) == (4 * LLAMA_7B, 4 * LLAMA_7B, 8 * LLAMA_7B)


# -- activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
# Models", eqs. 1-5 and Table 2, GPT-3 175B at s = 2048, b = 1 with Megatron's dropouts
S, H, A, L = 2048, 12288, 96, 96
SBH = S * H


@pytest.mark.parametrize("args, per_layer", [
    ((), SBH * (34 + 5 * A * S / H)),
    (("--tp", "8"), SBH * (10 + 24 / 8 + 5 * A * S / (H * 8))),
    (("--tp", "8", "--sp"), SBH / 8 * (34 + 5 * A * S / H)),
    (("--tp", "8", "--recompute", "selective"), SBH * (10 + 24 / 8)),
    (("--tp", "8", "--sp", "--recompute", "selective"), SBH * 34 / 8),
    (("--tp", "8", "--recompute", "full"), 2 * SBH),
])
def test_korthikanti_per_layer(cli, args, per_layer):
    d = plan(cli, "gpt3-175b", "--attention", "eager", "--seq", "2048", *args)
    acts = d["activations"]
    assert acts["layers"] == L and abs(acts["per_layer"] / per_layer - 1) < 0.005
    if "full" not in args:   # the whole model: L layers and what lies outside them, within 0.5 % of L x eq.
        assert abs(d["per_gpu"]["activations"] / (L * per_layer) - 1) < 0.005
    else:                    # plus one layer rebuilt during backward, counted apart
        assert d["per_gpu"]["recompute"] == plan(cli, "gpt3-175b", "--attention", "eager", "--tp", "8")[
            "activations"]["per_layer"]


def test_korthikanti_pipeline_first_stage_holds_l_layers(cli):
    """Eq. 5: under 1F1B the first of p stages holds p micro-batches of its L/p layers."""
    d = plan(cli, "gpt3-175b", "--attention", "eager", "--tp", "8", "--sp", "--pp", "8", "--gpus", "64",
             "--global-batch", "16")
    acts = d["activations"]
    assert (acts["layers"], acts["in_flight"]) == (12, 8)
    assert abs(d["per_gpu"]["activations"] / (SBH * L / 8 * (34 + 5 * A * S / H)) - 1) < 0.005


def test_flash_attention_keeps_no_score_matrix(cli):
    per_layer = plan(cli, "gpt3-175b", "--seq", "2048")["activations"]["per_layer"]
    assert per_layer == 34 * SBH + 4 * A * S + 2 * 2 * S * 4   # + the log-sum-exp and the norms' statistics


# -- time
def test_time_terms_add_up(cli):
    d = plan(cli, "llama-2-70b", "--gpus", "64", "--tp", "8", "--pp", "4", "--zero", "1", "--global-batch", "64",
             "--seq", "4096")
    t = d["time"]
    slots = t["micro_batches"] + 4 - 1
    per_micro = (t["compute"] + t["tensor_parallel"] + t["pipeline_p2p"]) / t["micro_batches"]
    assert t["bubble"] == pytest.approx(per_micro * 3)
    assert t["step"] == pytest.approx(per_micro * slots + t["data_parallel"])
    assert t["bubble_fraction"] == pytest.approx(3 / t["micro_batches"])
    assert d["tokens_per_second"] == pytest.approx(64 * 4096 / t["step"])
    assert 0 < d["mfu"] < 0.5    # at most the kernels' 50 % of the peak


def test_compute_time_is_flops_over_peak(cli):
    """One A100 (312 TFLOP/s bf16) at 50 %: 3 x forward FLOPs (backward twice the forward) over 156 TFLOP/s."""
    from archgraph.passes.flops import count_flops
    d = plan(cli, "gpt2", "--seq", "1024")
    forward = count_flops(load("gpt2"), {"B": 1, "S": 1024}).forward
    assert d["time"]["compute"] == pytest.approx(3 * forward / 156e12)
    assert d["time"]["tensor_parallel"] == d["time"]["data_parallel"] == 0


# -- serving: the roofline (Williams et al. 2009)
def test_decode_is_bandwidth_over_bytes_read(cli):
    d = plan(cli, "llama-2-7b", "--serve", "--context", "4096", "--batch", "1", "--memory-efficiency", "1")
    kv = 2 * 32 * 4096 * 32 * 128 * 2   # keys and values, 32 layers, 32 heads of 128, bf16
    read = 2 * LLAMA_7B + kv
    assert d["decode"]["bytes_read"] == read and d["per_gpu"]["kv_cache"] == kv
    assert d["decode"]["tokens_per_second"] == pytest.approx(2039e9 / read)
    assert d["decode"]["bound"] == "memory"


def test_int4_weights_count_their_scales(cli):
    d = plan(cli, "llama-2-7b", "--serve", "--dtype", "int4", "--context", "1024")
    kept = 2 * 32000 * 4096 + 4096 * (2 * 32 + 1)   # embeddings, head and norms stay bf16
    quantised = LLAMA_7B - kept                      # at half a byte, a bf16 scale per 128
    assert d["weights"]["total"] == quantised // 2 + 2 * -(-quantised // 128) + 2 * kept


def test_caches_follow_the_model(cli):
    """Mistral's sliding window caches 4,096 tokens of a longer context; prefill is compute bound."""
    d = plan(cli, "examples/mistral-7b/config.json", "--serve", "--context", "8192")
    assert d["per_gpu"]["kv_cache"] == 2 * 32 * 4096 * 8 * 128 * 2
    assert [c["rule"] for c in d["caches"]] == ["sliding window of 4096"]
    assert d["prefill"]["bound"] == "compute" and d["time_to_first_token"] == d["prefill"]["seconds"]


def test_serving_activations_are_a_layer_at_its_peak(cli):
    """What a layer holds at once (passes/live.py): at Llama-2-70B's MLP product, its input, the sum after
    attention and its norm, whole on each of the 2 ranks, and act(gate(x)), up(x) and their product, split;
    the rotary tables [1, S, 128]."""
    d = plan(cli, "llama-2-70b", "--serve", "--dtype", "int4", "--tp", "2", "--gpus", "2", "--batch", "16",
             "--context", "4096")
    tokens = 16 * 4096
    assert d["per_gpu"]["activations"] == 2 * (tokens * (3 * 8192 + 3 * 28672 // 2) + 2 * 4096 * 128) == 8_860_467_200
    assert d["max_batch"] == 54


def test_largest_batch_fits(cli):
    d = plan(cli, "llama-2-7b", "--serve", "--context", "4096")
    bigger = plan(cli, "llama-2-7b", "--serve", "--context", "4096", "--batch", str(d["max_batch"] + 1))
    at = plan(cli, "llama-2-7b", "--serve", "--context", "4096", "--batch", str(d["max_batch"]))
    assert at["fits"] and not bigger["fits"]


# -- search
def test_70b_search_on_64_a100s(cli):
    d = plan(cli, "llama-2-70b", "--gpus", "64", "--gpu", "a100-80gb", "--search", "--seq", "4096",
             "--global-batch", "512")
    plans = d["plans"]
    assert plans and all(p["per_gpu"]["total"] <= 80 * GIB for p in plans)
    speeds = [p["tokens_per_second"] for p in plans]
    assert speeds == sorted(speeds, reverse=True)
    assert all(r["why"] for r in d["rejected"])
    assert any(r["why"].startswith("needs") for r in d["rejected"])


def test_a_search_with_no_layout_to_try_says_why(cli, tmp_path):
    code, out, err = cli("plan", "gpt2", "--search", "--gpus", "8", "--tp", "3", "--chart", str(tmp_path / "c.png"))
    assert (code, out) == (2, "")
    assert err == ("archgraph: error: no layout of 8 GPUs can be tried: tp x pp x cp must divide the GPU count, "
                   "tp the 12 heads and the 8 GPUs of a node, pp the 12 layers (options fixed: --tp 3)\n"
                   "  fix: change --gpus, or fix fewer of --tp, --pp, --cp\n")
    assert not (tmp_path / "c.png").exists()


def test_a_model_of_no_repeated_layers_is_one_pipeline_stage(cli, tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("archgraph: 1\nname: tiny\ninputs: {x: [B, 16]}\n"
                    "nodes:\n  - {name: fc, op: linear, in: x, in_features: 16, out_features: 16}\n")
    d = plan(cli, str(path), "--gpus", "8")
    assert (d["layout"]["pp"], d["layout"]["dp"], d["per_gpu"]["weights"]) == (1, 8, 544)  # 272 parameters in bf16
    code, _, err = cli("plan", str(path), "--gpus", "8", "--pp", "2")
    assert code == 2 and "pp=2 is more than the 0 layers" in err


# -- what a user sees
def test_errors_name_the_fix(cli, tmp_path):
    code, _, err = cli("plan", "gpt2", "--gpu", "a100-80")
    assert code == 2 and "did you mean 'a100-80gb'" in err
    mine = tmp_path / "mine.yaml"
    mine.write_text("memory: 48 GiB\nmemroy_bandwidth: 1 TB/s\nflops: {bf16: 200 TFLOPS}\n")
    code, _, err = cli("plan", "gpt2", "--gpu", str(mine))
    assert code == 2 and "mine.yaml:2" in err and "did you mean 'memory_bandwidth'" in err
    code, _, err = cli("plan", "gpt2", "--tp", "5", "--gpus", "5", "--seq", "1024")
    assert code == 2 and "tp=5 does not divide the attention heads: each layer's query and key/value heads are " \
        "multiples of 12, not of 5" in err
    code, _, err = cli("plan", "gpt2", "--serve", "--zero", "1")
    assert code == 2 and "--zero: training options" in err
    code, _, err = cli("plan", "gpt2", "--dtype", "int4")
    assert code == 2 and "add --serve" in err


@pytest.mark.parametrize("written, key", [
    ("A100-80GB", "a100-80gb"), ("a100-80g", "a100-80gb"), ("A100", "a100-80gb"), ("A100_80 GB", "a100-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("H100", "h100-sxm"), ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H200", "h200"), ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("AMD Instinct MI300X", "mi300x"), ("TPU v5 lite", "tpu-v5e"), ("NVIDIA L40S", "l40s")])
def test_accelerator_names_people_write(cli, written, key):
    """Any case, with or without the vendor, as nvidia-smi prints it; the plan names the part it took."""
    from archgraph.hardware import accelerators
    assert plan(cli, "gpt2", "--gpu", written)["gpu"]["name"] == accelerators()[key].name


def test_an_unknown_accelerator_suggests_its_kin(cli):
    """An A100 PCIe is not in the table: the A100s are suggested (not the H100 PCIe, closer by spelling)."""
    code, _, err = cli("plan", "gpt2", "--gpu", "A100 PCIe")
    assert code == 2 and "did you mean 'a100-40gb' or 'a100-80gb'?" in err and "YAML file of your own" in err
    code, _, err = cli("plan", "gpt2", "--gpu", "tpu v5")
    assert code == 2 and "did you mean 'tpu-v5e' or 'tpu-v5p'?" in err


def test_own_accelerator_from_a_file(cli, tmp_path):
    mine = tmp_path / "card.yaml"
    mine.write_text("name: My card\nmemory: 48 GiB\nmemory_bandwidth: 1 TB/s\nflops: {bf16: 200 TFLOPS}\n")
    d = plan(cli, "gpt2", "--gpu", str(mine))
    assert (d["gpu"]["name"], d["capacity"], d["gpu"]["flops"]["bf16"]) == ("My card", 48 * GIB, 200e12)


def test_tables_fit_80_columns(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for args in (("llama-2-70b", "--gpus", "64", "--tp", "8", "--pp", "2", "--global-batch", "64"),
                 ("llama-2-7b", "--serve", "--batch", "8"),
                 ("llama-2-70b", "--gpus", "64", "--search", "--seq", "4096")):
        code, out, _ = cli("plan", *args)
        assert code == 0
        assert max(len(line) for line in out.splitlines()) <= 80, args


def test_buffers_and_layout_checks(cli):
    """Buffers (BatchNorm's running statistics at fp32, its batch count at int64) are a term of their
    own, each at its dtype; a sequence that
    context or sequence parallelism cannot split evenly is refused by name."""
    d = plan(cli, "resnet-50", "--gpus", "8", "--zero", "1")
    totals = load("resnet-50").params().totals
    assert d["per_gpu"]["buffers"] == totals.buffer_bytes == 4 * totals.buffers + 4 * 53   # 53 int64 counts
    code, _, err = cli("plan", "llama-2-7b", "--gpus", "3", "--cp", "3", "--seq", "4096")
    assert code == 2 and "cp=3 does not divide the 4,096 tokens" in err
    code, _, err = cli("plan", "llama-2-7b", "--gpus", "8", "--tp", "8", "--sp", "--seq", "4100")
    assert code == 2 and "sequence parallelism splits the 4,100 tokens over tp=8" in err


def test_serving_replicas(cli):
    """8 GPUs of tensor parallel 2 are 4 replicas, each decoding its own batch."""
    d = plan(cli, "llama-2-7b", "--serve", "--gpus", "8", "--tp", "2", "--context", "1024")
    assert d["decode"]["replicas"] == 4
    assert d["decode"]["tokens_per_second_all_replicas"] == pytest.approx(4 * d["decode"]["tokens_per_second"])


def test_state_space_and_cross_attention_caches(cli, tmp_path):
    """Mamba keeps a state that does not grow with the context; T5's decoder keeps its
    cross-attention's keys and values of the encoder output beside its own."""
    from pathlib import Path

    from conftest import write_config
    recorded = json.loads((Path(__file__).parent / "data" / "hf" / "mamba-130m-layout.json").read_text())
    config = write_config(tmp_path, **recorded["config"])
    short, long = (plan(cli, config, "--serve", "--context", n)["per_gpu"]["kv_cache"] for n in ("1024", "4096"))
    assert short == long > 0
    rules = {c["rule"] for c in plan(cli, "t5-small", "--serve", "--context", "512")["caches"]}
    assert rules == {"full attention", "cross-attention (encoder output)"}


def test_an_encoder_has_no_decode(cli):
    """BERT generates nothing: serving is one forward over the batch (its FLOPs `flops` counts), no decode."""
    from archgraph.passes.flops import count_flops
    d = plan(cli, "bert-base-uncased", "--serve", "--context", "512")
    assert d["decode"] is None
    assert d["prefill"]["flops"] == count_flops(load("bert-base-uncased"), {"B": 1, "S": 512}).forward


MIXTRAL = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
           "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 32000, "max_position_embeddings": 32768, "num_local_experts": 8, "num_experts_per_tok": 2,
           "rms_norm_eps": 1e-5, "rope_theta": 1e6, "tie_word_embeddings": False, "sliding_window": None}


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_experts_shard_over_their_own_data_parallel_ranks(cli, tmp_path, stage):
    """Mixtral 8x7B on 64 GPUs with ep 8: each GPU holds one expert of each layer, and each expert
    lives on 64 / 8 = 8 ranks, so ZeRO shards its states 8 ways and the rest of the model 64 ways
    (Megatron's expert data parallel group; dividing the experts' share by 64 made ZeRO 1's
    optimizer states 1.36 GB instead of 8.76 GB)."""
    from conftest import write_config

    from archgraph.load import load_config
    config = write_config(tmp_path, **MIXTRAL)
    rows = [(n, t) for n, t in named_tensors(load_config(config)) if t.tied_to is None]
    experts = sum(t.count for n, t in rows if ".experts." in n) // 8      # one GPU's: an eighth
    dense = sum(t.count for _, t in rows) - 8 * experts
    assert (dense + 8 * experts, experts) == (46_702_792_704, 5_637_144_576)

    def shard(k, at):
        return -(-k * dense // 64) - (-k * experts // 8) if stage >= at else k * (dense + experts)
    g = plan(cli, config, "--gpus", "64", "--ep", "8", "--zero", str(stage), "--seq", "4096")["per_gpu"]
    assert (g["weights"], g["gradients"], g["optimizer"]) == (shard(2, 3), shard(2, 2), shard(12, 1))


def test_context_parallel_ranks_hold_the_same_weights(cli):
    """Context-parallel ranks hold the same weights and each has gradients of its own part of the
    sequences: ZeRO shards over dp x cp ranks (Megatron's data-parallel group with context
    parallelism) and the gradients are all-reduced over them, even with one data-parallel rank."""
    g = plan(cli, "llama-2-7b", "--gpus", "16", "--cp", "2", "--zero", "1", "--seq", "4096")["per_gpu"]
    assert g["optimizer"] == -(-12 * LLAMA_7B // 16)
    t = plan(cli, "llama-2-7b", "--gpus", "2", "--cp", "2", "--seq", "4096")["time"]
    nvlink = 300e9   # per direction, within the node
    assert t["data_parallel"] == pytest.approx(2 * (2 - 1) / 2 * 2 * LLAMA_7B / nvlink)


def test_tensor_parallel_ranks_keep_copies_of_a_cache_they_cannot_split(cli, tmp_path):
    """Qwen2.5-3B keeps 2 key/value heads: over 4 or 8 ranks each keeps one head (copies), not a
    quarter or an eighth of one; DeepSeek-V2-Lite's latent is read by every head, so every rank
    keeps all of it (as vLLM does); decode reads every rank's copy."""
    from pathlib import Path

    from conftest import write_config
    qwen = write_config(tmp_path, architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=2048,
                        intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=2,
                        vocab_size=151936, tie_word_embeddings=True)
    whole = 36 * 2 * 2 * 128 * 4096 * 2      # layers, k and v, heads, head_dim, tokens, bf16
    for tp, kept in ((1, whole), (2, whole // 2), (4, whole // 2), (8, whole // 2)):
        d = plan(cli, qwen, "--serve", "--context", "4096", "--tp", str(tp), "--gpus", str(tp))
        assert d["per_gpu"]["kv_cache"] == kept, tp
        assert d["decode"]["bytes_read"] == d["weights"]["total"] + tp * kept
    recorded = json.loads((Path(__file__).parent / "data" / "hf" / "deepseek_v2-deepseek-v2-lite.json").read_text())
    lite = tmp_path / "lite.json"
    lite.write_text(json.dumps(recorded["config"]))
    latent = 27 * (512 + 64) * 4096 * 2
    for tp in (1, 8):
        assert plan(cli, str(lite), "--serve", "--context", "4096", "--tp", str(tp), "--gpus", str(tp))[
            "per_gpu"]["kv_cache"] == latent


def test_training_tensor_parallelism_divides_the_key_value_heads(cli, tmp_path):
    """Megatron splits the key/value heads as it splits the queries and refuses a tp that does not
    divide them: Qwen2.5-3B (16 query heads, 2 key/value heads) trains at tp 1 or 2, and a search
    tries no more (serving keeps copies instead: the test above)."""
    from conftest import write_config
    qwen = write_config(tmp_path, architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=2048,
                        intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=2,
                        vocab_size=151936, tie_word_embeddings=True)
    code, _, err = cli("plan", qwen, "--tp", "4", "--gpus", "4")
    assert code == 2 and "tp=4 does not divide the attention heads: each layer's query and key/value heads are " \
        "multiples of 2, not of 4" in err
    assert {p["layout"]["tp"] for p in plan(cli, qwen, "--gpus", "8", "--search")["plans"]} == {1, 2}


def test_an_empty_matrix_has_no_optimizer_statistics(cli, tmp_path):
    # DeepSeek-V3 with n_shared_experts 0: its shared experts' matrices are empty; plan divided by their
    # zero rows x columns (a ZeroDivisionError traceback) where it sizes Adafactor's statistics
    config = json.loads((Path(__file__).parent / "data" / "hf" / "deepseek_v3-no-shared.json").read_text())["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    for optimizer in ("adam", "adafactor"):
        d = plan(cli, str(path), "--optimizer", optimizer)
        assert d["per_gpu"]["weights"] > 0 and d["fits"] is True
