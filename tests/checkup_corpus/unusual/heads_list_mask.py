"""Heads as an nn.ModuleList of single-head modules that take one (T, T) bool mask,
True = blocked, shared by every sequence: forward(x, mask=None). A (B, 1, T, T) padding
mask broadcasts against a head's (B, T, T) scores into (B, B, T, T), so the output grows
an axis: the check-up must read that as "this mask shape does not fit", not as a failure.
Written from a learner's module, after the check-up failed it wrongly."""

import math

import torch
from torch import nn
from torch.nn import functional as F

MISTAKES = ("scale sqrt(d_model)", "mask inverted", "softmax over the wrong axis")


class Head(nn.Module):
    def __init__(self, d_model, head_size, mistake):
        super().__init__()
        self.key = nn.Linear(d_model, head_size, bias=False)
        self.query = nn.Linear(d_model, head_size, bias=False)
        self.value = nn.Linear(d_model, head_size, bias=False)
        self.mistake, self.d_model = mistake, d_model

    def forward(self, x, mask):
        k, q, v = self.key(x), self.query(x), self.value(x)
        d = self.d_model if self.mistake == "scale sqrt(d_model)" else k.shape[-1]
        wei = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            wei = wei.masked_fill(~mask if self.mistake == "mask inverted" else mask,
                                  float("-inf"))
        wei = F.softmax(wei, dim=-2 if self.mistake == "softmax over the wrong axis" else -1)
        return wei @ v


class Attention(nn.Module):
    def __init__(self, d_model, n_heads, mistake=None):
        super().__init__()
        self.heads = nn.ModuleList([Head(d_model, d_model // n_heads, mistake)
                                    for _ in range(n_heads)])
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        # mask: (T, T) bool, True = blocked
        return self.proj(torch.cat([h(x, mask) for h in self.heads], dim=-1))


CHECKUP = {"mask_means": "blocked"}
