"""(6) LLaVA-1.5's vision-language connector (haotian-liu/LLaVA: CLIPVisionTower.feature_select with
select_feature 'patch' drops the CLS feature, build_vision_projector 'mlp2x_gelu'), with the image
tokens placed before the text embeddings."""
from __future__ import annotations

import torch
from torch import nn


class LlavaConnector(nn.Module):
    def __init__(self, mm_hidden_size=48, hidden_size=64, vocab_size=100):
        super().__init__()
        self.mm_projector = nn.Sequential(nn.Linear(mm_hidden_size, hidden_size), nn.GELU(),
                                          nn.Linear(hidden_size, hidden_size))
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)

    def forward(self, image_hidden_states, input_ids):
        image_features = image_hidden_states[:, 1:]        # select_feature == 'patch'
        image_features = self.mm_projector(image_features)
        text_embeds = self.embed_tokens(input_ids)
        return torch.cat([image_features, text_embeds], dim=1)
