"""Bare parameters, no nn.Linear and no biases: (x, mask=None) with mask True = masked."""

import math

import torch
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "no scale", "mask inverted", "mask after softmax",
            "softmax over the wrong axis", "view split")


class Attention(nn.Module):
    def __init__(self, d_model, n_heads, mistake=None):
        super().__init__()
        self.d_model, self.n_heads, self.mistake = d_model, n_heads, mistake
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Parameter(torch.randn(d_model, d_model)
                                                               / math.sqrt(d_model))
                                                  for _ in range(4))

    def heads(self, t):  # (B, T, C) -> (B, H, T, dh)
        B, T, C = t.shape
        if self.mistake == "view split":
            return t.reshape(B, self.n_heads, T, C // self.n_heads)
        return t.reshape(B, T, self.n_heads, C // self.n_heads).permute(0, 2, 1, 3)

    def forward(self, x, mask=None):
        """mask: bool, True = masked (not attended), broadcast to (B, H, T, T)."""
        q, k, v = self.heads(x @ self.W_q), self.heads(x @ self.W_k), self.heads(x @ self.W_v)
        dh = q.shape[-1]
        div = {"scale sqrt(d_model)": self.d_model, "no scale": 1}.get(self.mistake, dh)
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / div ** 0.5
        if mask is not None and self.mistake == "mask inverted":
            mask = ~mask  # mistake
        if mask is not None and self.mistake != "mask after softmax":
            scores = scores.masked_fill(mask, float("-inf"))
        w = torch.softmax(scores, dim=2 if self.mistake == "softmax over the wrong axis" else 3)
        if mask is not None and self.mistake == "mask after softmax":
            w = w.masked_fill(mask, 0.0)
        out = (w @ v).permute(0, 2, 1, 3).flatten(2)  # (B, T, C)
        return out @ self.W_o

# what True means in its mask argument, as its author documents it (checkup(..., **CHECKUP))
CHECKUP = {"mask_means": "blocked"}
