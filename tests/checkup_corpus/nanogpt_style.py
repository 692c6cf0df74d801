"""nanoGPT style: one packed (3C, C) layer, a fixed causal buffer, called as (x)."""

import math

import torch
import torch.nn.functional as F
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "no scale", "mask inverted", "mask after softmax",
            "causal off by one", "softmax over the wrong axis", "view split",
            "dropout at inference")


class Attention(nn.Module):
    def __init__(self, d_model, n_heads, mistake=None, block_size=16, dropout=0.1):
        super().__init__()
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd, self.mistake, self.p = n_heads, d_model, mistake, dropout
        diagonal = 1 if mistake == "causal off by one" else 0  # mistake: tril(1)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size), diagonal)
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        if self.mistake == "view split":  # mistake: no transpose
            k, q, v = (t.reshape(B, self.n_head, T, C // self.n_head) for t in (k, q, v))
        else:
            k, q, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                       for t in (k, q, v))
        d = {"scale sqrt(d_model)": C, "no scale": 1}.get(self.mistake, k.size(-1))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        keep = self.bias[:, :, :T, :T] == (1 if self.mistake == "mask inverted" else 0)
        if self.mistake == "mask after softmax":
            att = F.softmax(att, dim=-1).masked_fill(keep, 0.0)
        else:
            att = F.softmax(att.masked_fill(keep, float("-inf")),
                            dim=-2 if self.mistake == "softmax over the wrong axis" else -1)
        if self.mistake == "dropout at inference":
            att = F.dropout(att, self.p, training=True)
        else:
            att = self.attn_dropout(att)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)

CHECKUP = {}
