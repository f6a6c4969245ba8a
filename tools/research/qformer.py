"""(2) BLIP-2's Q-Former: transformers' Blip2QFormerModel wired as Blip2Model wires it (learned
query tokens expanded over the batch, cross-attention to image features every other layer, the
language projection)."""
from __future__ import annotations

import torch
from torch import nn


class QFormer(nn.Module):
    """Blip2Model's query path: query_tokens.expand(B, -1, -1) -> qformer(encoder_hidden_states=image)
    -> language_projection."""

    def __init__(self, hidden=64, heads=4, layers=4, intermediate=128, image_width=48, queries=8,
                 text_hidden=80, cross_attention_frequency=2):
        super().__init__()
        from transformers import Blip2QFormerConfig, Blip2QFormerModel
        config = Blip2QFormerConfig(hidden_size=hidden, num_attention_heads=heads, num_hidden_layers=layers,
                                    intermediate_size=intermediate, encoder_hidden_size=image_width,
                                    cross_attention_frequency=cross_attention_frequency,
                                    use_qformer_text_input=False, attn_implementation="eager")
        self.query_tokens = nn.Parameter(torch.zeros(1, queries, hidden))
        self.qformer = Blip2QFormerModel(config)
        self.language_projection = nn.Linear(hidden, text_hidden)

    def forward(self, image_embeds):
        query_tokens = self.query_tokens.expand(image_embeds.shape[0], -1, -1)
        out = self.qformer(query_embeds=query_tokens, encoder_hidden_states=image_embeds).last_hidden_state
        return self.language_projection(out)
