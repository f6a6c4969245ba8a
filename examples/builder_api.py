"""Build a model from Python instead of YAML, then ask for its parameters and shapes.

Run:  python examples/builder_api.py

The builder records the same spec a YAML file holds (errors point at the Python
line that made the bad node) and builds it with the same machinery.
"""
from archgraph import ModelBuilder

# A ViT-style image encoder: patchify with a strided conv, then a pre-norm
# transformer stack, then a classification head on the mean token.
b = ModelBuilder("tiny-vit", H=192, L=12, A=3, P=16, IMG=224, C=1000, I="4 * H", N="(IMG / P) ** 2")
b.input("pixels", ["B", 3, "IMG", "IMG"])

with b.block("encoder_layer", args=["H", "A", "I"]) as layer:
    layer.node("norm1", "layer_norm", inputs="x", normalized_shape="H", eps=1e-6)
    layer.node("attn", "attention", hidden="H", heads="A", category="attention")
    layer.node("res1", "add", inputs=["attn", "x"])
    layer.node("norm2", "layer_norm", normalized_shape="H", eps=1e-6)
    layer.node("mlp", "mlp", hidden="H", intermediate="I", activation="gelu")
    layer.node("res2", "add", inputs=["mlp", "res1"])

b.node("patch_embed", "conv2d", inputs="pixels", in_channels=3, out_channels="H",
       kernel_size="P", stride="P", category="embedding")
b.node("tokens", "flatten", start_dim=2)            # [B, H, N]
b.node("tokens_t", "transpose", dim0=1, dim1=2)     # [B, N, H]
b.node("pos_embed", "position_embedding", inputs="tokens_t", num_positions="N", embedding_dim="H")
b.node("embedded", "add", inputs=["tokens_t", "pos_embed"])
b.call("blocks", "encoder_layer", repeat="L", H="H", A="A", I="I")
b.node("norm", "layer_norm", normalized_shape="H", eps=1e-6)
b.node("pool", "transpose", dim0=1, dim1=2)         # [B, H, N]
b.node("mean", "global_avg_pool")                   # [B, H]
b.node("head", "linear", in_features="H", out_features="C", category="head")

model = b.build()
report = model.params()
print(f"{model.name}: {report.total:,} parameters")
for category, count in sorted(report.totals.by_category.items(), key=lambda kv: -kv[1]):
    print(f"  {category:<10} {count:>12,}")

shapes = model.shapes(B=8)
for path in ("patch_embed", "tokens_t", "blocks.11.mlp", "head"):
    print(f"  {path:<14} {shapes.shape_of(path)[0]}")
