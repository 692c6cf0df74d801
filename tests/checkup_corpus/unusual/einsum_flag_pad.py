"""einsum for every product, square (C, C) weight parameters, a causal flag named causal=
and a (B, T) padding mask named pad= (True = padding token). Written from a learner's
module: its inverted causal mask fully blocks the last row, and that NaN (no dropout
anywhere) must not be blamed on dropout."""

import math

import torch
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "mask inverted", "padding on the query axis")


class Attention(nn.Module):
    def __init__(self, d_model, n_heads, mistake=None):
        super().__init__()
        self.h, self.dk, self.mistake = n_heads, d_model // n_heads, mistake
        self.Wq, self.Wk, self.Wv, self.Wo = (
            nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model)) for _ in range(4))

    def forward(self, x, causal=False, pad=None):
        b, n, c = x.shape
        q, k, v = (torch.einsum("bnd,de->bne", x, w).reshape(b, n, self.h, self.dk)
                   for w in (self.Wq, self.Wk, self.Wv))
        d = c if self.mistake == "scale sqrt(d_model)" else self.dk
        s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(d)
        if causal:
            future = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
            s = s.masked_fill(~future if self.mistake == "mask inverted" else future,
                              float("-inf"))
        if pad is not None:
            s = s.masked_fill(pad[:, None, :, None] if self.mistake ==
                              "padding on the query axis" else pad[:, None, None, :],
                              float("-inf"))
        o = torch.einsum("bhij,bjhd->bihd", s.softmax(dim=-1), v).reshape(b, n, -1)
        return o @ self.Wo


CHECKUP = {}
