"""LoRA (Hu et al. 2021/22), as microsoft/LoRA's loralib/layers.py writes `lora.Linear`: a frozen
nn.Linear plus B·A·dropout(x) scaled by alpha / r (lora_dropout > 0: identity in eval), weights
unmerged; and the PEFT way (2023-25) of wrapping an existing nn.Linear as `base_layer` with lora_A
and lora_B sub-Linears in ModuleDicts keyed by adapter name; in a pre-norm SwiGLU MLP block."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Linear):  # loralib.Linear
    def __init__(self, in_features, out_features, r=4, lora_alpha=8, lora_dropout=0.1, **kwargs):
        nn.Linear.__init__(self, in_features, out_features, **kwargs)
        self.r, self.lora_alpha = r, lora_alpha
        self.lora_dropout = nn.Dropout(p=lora_dropout)
        self.lora_A = nn.Parameter(self.weight.new_zeros((r, in_features)))
        self.lora_B = nn.Parameter(self.weight.new_zeros((out_features, r)))
        self.scaling = self.lora_alpha / self.r
        self.weight.requires_grad = False
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        nn.init.normal_(self.lora_B, std=0.02)  # zeros in loralib; nonzero here so the path shows
        self.merged = False

    def forward(self, x):
        result = F.linear(x, self.weight, bias=self.bias)
        return result + (self.lora_dropout(x) @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling


class PeftLoraLinear(nn.Module):  # peft.tuners.lora.layer.Linear, one adapter "default"
    def __init__(self, base_layer, r=4, alpha=16):
        super().__init__()
        self.base_layer = base_layer
        self.lora_A = nn.ModuleDict({"default": nn.Linear(base_layer.in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(r, base_layer.out_features, bias=False)})
        self.lora_dropout = nn.ModuleDict({"default": nn.Identity()})
        self.scaling = {"default": alpha / r}
        self.active_adapters = ["default"]
        nn.init.normal_(self.lora_B["default"].weight, std=0.02)

    def forward(self, x):
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        for active_adapter in self.active_adapters:
            lora_A, lora_B = self.lora_A[active_adapter], self.lora_B[active_adapter]
            dropout, scaling = self.lora_dropout[active_adapter], self.scaling[active_adapter]
            x = x.to(lora_A.weight.dtype)
            result = result + lora_B(lora_A(dropout(x))) * scaling
        return result.to(torch_result_dtype)


class LoRAMLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.gate_proj = PeftLoraLinear(nn.Linear(dim, hidden, bias=False))
        self.up_proj = PeftLoraLinear(nn.Linear(dim, hidden, bias=False))
        self.down_proj = LoRALinear(hidden, dim, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))
