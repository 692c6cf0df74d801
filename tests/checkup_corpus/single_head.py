"""One head, the first attention a learner writes: (x), a tril buffer, returns (out, weights)."""

import torch
from torch import nn

MISTAKES = ("no scale", "mask inverted", "mask after softmax", "causal off by one",
            "softmax over the wrong axis", "dropout at inference", "weights path differs")


class Attention(nn.Module):
    def __init__(self, d_model, n_heads=1, mistake=None, context_length=16, dropout=0.1):
        super().__init__()
        assert n_heads == 1, "one head"
        self.query = nn.Linear(d_model, d_model, bias=False)
        self.key = nn.Linear(d_model, d_model, bias=False)
        self.value = nn.Linear(d_model, d_model, bias=False)
        self.drop, self.mistake, self.p = nn.Dropout(dropout), mistake, dropout
        below = torch.tril(torch.ones(context_length, context_length),
                           diagonal=-1 if mistake == "causal off by one" else 0)
        self.register_buffer("tril", below)

    def forward(self, x):
        T, m = x.shape[1], self.mistake
        k, q = self.key(x), self.query(x)  # keys first, as some tutorials write it
        wei = q @ k.transpose(-2, -1) * (1.0 if m == "no scale" else k.shape[-1] ** -0.5)
        hidden = self.tril[:T, :T] == (1 if m == "mask inverted" else 0)
        if m == "mask after softmax":
            wei = wei.softmax(-1).masked_fill(hidden, 0.0)
        else:
            wei = wei.masked_fill(hidden, float("-inf")).softmax(
                dim=1 if m == "softmax over the wrong axis" else -1)
        shown = wei
        if m == "weights path differs":
            shown = (q @ k.transpose(-2, -1)).softmax(-1)  # mistake: unmasked, unscaled
        dropped = torch.dropout(wei, self.p, True) if m == "dropout at inference" \
            else self.drop(wei)
        return dropped @ self.value(x), shown

CHECKUP = {}
