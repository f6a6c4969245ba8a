"""RWKV-6 "Finch" (Peng et al. 2024), as BlinkDL/RWKV-LM's RWKV-v5/src/model.py writes
RWKV_Tmix_x060 and RWKV_CMix_x060, with the CUDA WKV kernel written as its reference loop
(RWKV-LM's wkv6 test code): data-dependent token shift through a low-rank mix, a per-channel decay
made from the input, the state updated and the output written step by step into a preallocated
tensor."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def wkv6_reference(r, k, v, w, u):
    B, T, H, N = r.shape
    out = torch.zeros(B, T, H, N, dtype=r.dtype)
    state = torch.zeros(B, H, N, N, dtype=r.dtype)
    for t in range(T):
        kv = k[:, t, :, :, None] * v[:, t, :, None, :]                   # B H N N
        out[:, t] = (r[:, t, :, None, :] @ (u[None, :, :, None] * kv + state)).squeeze(-2)
        state = state * w[:, t, :, :, None] + kv
    return out


class TimeMix(nn.Module):
    def __init__(self, n_embd, n_head, layer_id, n_layer):
        super().__init__()
        self.n_head, self.head_size = n_head, n_embd // n_head
        ratio_0_to_1 = layer_id / max(n_layer - 1, 1)
        ratio_1_to_almost0 = 1.0 - layer_id / n_layer
        ddd = torch.arange(n_embd).float().reshape(1, 1, n_embd) / n_embd
        self.time_maa_x = nn.Parameter(1.0 - torch.pow(ddd, ratio_1_to_almost0))
        self.time_maa_w = nn.Parameter(1.0 - torch.pow(ddd, ratio_1_to_almost0))
        self.time_maa_k = nn.Parameter(1.0 - torch.pow(ddd, ratio_1_to_almost0))
        self.time_maa_v = nn.Parameter(1.0 - (torch.pow(ddd, ratio_1_to_almost0) + 0.3 * ratio_0_to_1))
        self.time_maa_r = nn.Parameter(1.0 - torch.pow(ddd, 0.5 * ratio_1_to_almost0))
        self.time_maa_g = nn.Parameter(1.0 - torch.pow(ddd, 0.5 * ratio_1_to_almost0))
        D_MIX_LORA = 8
        self.time_maa_w1 = nn.Parameter(torch.randn(n_embd, D_MIX_LORA * 5) * 0.01)
        self.time_maa_w2 = nn.Parameter(torch.randn(5, D_MIX_LORA, n_embd) * 0.01)
        decay_speed = torch.tensor([-6 + 5 * (n / (n_embd - 1)) ** (0.7 + 1.3 * ratio_0_to_1)
                                    for n in range(n_embd)])
        self.time_decay = nn.Parameter(decay_speed.reshape(1, 1, n_embd))
        D_DECAY_LORA = 8
        self.time_decay_w1 = nn.Parameter(torch.randn(n_embd, D_DECAY_LORA) * 0.01)
        self.time_decay_w2 = nn.Parameter(torch.randn(D_DECAY_LORA, n_embd) * 0.01)
        self.time_faaaa = nn.Parameter(torch.randn(n_head, self.head_size) * 0.1)
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.receptance = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.output = nn.Linear(n_embd, n_embd, bias=False)
        self.gate = nn.Linear(n_embd, n_embd, bias=False)
        self.ln_x = nn.GroupNorm(n_head, n_embd, eps=(1e-5) * (8 ** 2))

    def forward(self, x):
        B, T, C = x.size()
        H = self.n_head
        xx = self.time_shift(x) - x
        xxx = x + xx * self.time_maa_x
        xxx = torch.tanh(xxx @ self.time_maa_w1).view(B * T, 5, -1).transpose(0, 1)
        xxx = torch.bmm(xxx, self.time_maa_w2).view(5, B, T, -1)
        mw, mk, mv, mr, mg = xxx.unbind(dim=0)
        xw = x + xx * (self.time_maa_w + mw)
        xk = x + xx * (self.time_maa_k + mk)
        xv = x + xx * (self.time_maa_v + mv)
        xr = x + xx * (self.time_maa_r + mr)
        xg = x + xx * (self.time_maa_g + mg)
        r = self.receptance(xr)
        k = self.key(xk)
        v = self.value(xv)
        g = F.silu(self.gate(xg))
        ww = torch.tanh(xw @ self.time_decay_w1) @ self.time_decay_w2
        w = self.time_decay + ww
        w = torch.exp(-torch.exp(w.view(B, T, H, -1)))
        x = wkv6_reference(r.view(B, T, H, -1), k.view(B, T, H, -1), v.view(B, T, H, -1), w, self.time_faaaa)
        x = x.view(B * T, C)
        x = self.ln_x(x).view(B, T, C)
        return self.output(x * g)


class ChannelMix(nn.Module):
    def __init__(self, n_embd, layer_id, n_layer):
        super().__init__()
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        ratio_1_to_almost0 = 1.0 - layer_id / n_layer
        ddd = torch.arange(n_embd).float().reshape(1, 1, n_embd) / n_embd
        self.time_maa_k = nn.Parameter(1.0 - torch.pow(ddd, ratio_1_to_almost0))
        self.time_maa_r = nn.Parameter(1.0 - torch.pow(ddd, ratio_1_to_almost0))
        self.key = nn.Linear(n_embd, n_embd * 7 // 2, bias=False)
        self.receptance = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd * 7 // 2, n_embd, bias=False)

    def forward(self, x):
        xx = self.time_shift(x) - x
        xk = x + xx * self.time_maa_k
        xr = x + xx * self.time_maa_r
        k = torch.relu(self.key(xk)) ** 2
        return torch.sigmoid(self.receptance(xr)) * self.value(k)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, layer_id, n_layer):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.att = TimeMix(n_embd, n_head, layer_id, n_layer)
        self.ffn = ChannelMix(n_embd, layer_id, n_layer)

    def forward(self, x):
        x = x + self.att(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class RWKV6(nn.Module):
    def __init__(self, vocab=64, n_embd=16, n_head=2, n_layer=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, n_embd)
        self.ln0 = nn.LayerNorm(n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, i, n_layer) for i in range(n_layer)])
        self.ln_out = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        x = self.ln0(self.emb(idx))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_out(x))
