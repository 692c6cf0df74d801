"""Heads as an nn.ModuleList of single-head modules (as a well-known video builds it):
each head has its own key / query / value Linear (dh wide, no bias), a tril buffer and
dropout; the heads' outputs are concatenated and projected. Written after the corpus
passed, without changing the check-up for it."""

import torch
from torch import nn
from torch.nn import functional as F

MISTAKES = ("scale sqrt(d_model)", "mask inverted", "causal off by one",
            "softmax over the wrong axis", "dropout at inference")


class Head(nn.Module):
    def __init__(self, n_embd, head_size, block_size, dropout, mistake):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size),
                                                -1 if mistake == "causal off by one" else 0))
        self.dropout, self.mistake, self.n_embd = nn.Dropout(dropout), mistake, n_embd

    def forward(self, x):
        B, T, C = x.shape
        k, q = self.key(x), self.query(x)
        d = C if self.mistake == "scale sqrt(d_model)" else k.shape[-1]
        wei = q @ k.transpose(-2, -1) * d ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == (1 if self.mistake == "mask inverted" else 0),
                              float("-inf"))
        wei = F.softmax(wei, dim=1 if self.mistake == "softmax over the wrong axis" else -1)
        wei = F.dropout(wei, 0.2, True) if self.mistake == "dropout at inference" \
            else self.dropout(wei)
        return wei @ self.value(x)


class Attention(nn.Module):
    def __init__(self, n_embd, num_heads, mistake=None, block_size=32, dropout=0.2):
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, n_embd // num_heads, block_size, dropout,
                                         mistake) for _ in range(num_heads)])
        self.proj = nn.Linear(n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return self.dropout(self.proj(out))


CHECKUP = {}
