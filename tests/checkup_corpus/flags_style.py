"""The flags of the issue: forward(x, key_padding_mask=None, need_weights=False,
is_causal=False), own names W_query / W_key / W_value / out_proj, weights on request."""

import torch
import torch.nn.functional as F
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "no scale", "mask inverted", "mask after softmax",
            "causal off by one", "padding on the query axis", "softmax over the wrong axis",
            "view split", "dropout at inference", "weights path differs")


class Attention(nn.Module):
    def __init__(self, d_in, num_heads, mistake=None, dropout=0.1, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_in, num_heads, d_in // num_heads
        self.W_query = nn.Linear(d_in, d_in, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_in, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_in, bias=qkv_bias)
        self.out_proj = nn.Linear(d_in, d_in)
        self.dropout, self.mistake = nn.Dropout(dropout), mistake

    def forward(self, x, key_padding_mask=None, need_weights=False, is_causal=False):
        b, t, _ = x.shape
        m = self.mistake
        split = (lambda z: z.view(b, self.num_heads, t, self.head_dim)) if m == "view split" \
            else (lambda z: z.view(b, t, self.num_heads, self.head_dim).transpose(1, 2))
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scale = {"scale sqrt(d_model)": self.d_out, "no scale": 1}.get(m, self.head_dim) ** 0.5
        scores = q @ k.transpose(2, 3) / scale
        blocked = torch.zeros(t, t, dtype=torch.bool)
        if is_causal:
            blocked = torch.triu(torch.ones(t, t, dtype=torch.bool),
                                 diagonal=0 if m == "causal off by one" else 1)
        if key_padding_mask is not None:
            axis = (b, 1, t, 1) if m == "padding on the query axis" else (b, 1, 1, t)
            blocked = blocked | key_padding_mask.view(axis)
        if m == "mask inverted":
            blocked = ~blocked
        if m == "mask after softmax":
            weights = torch.softmax(scores, dim=-1).masked_fill(blocked, 0.0)
        else:
            weights = torch.softmax(scores.masked_fill(blocked, -torch.inf),
                                    dim=-2 if m == "softmax over the wrong axis" else -1)
        dropped = F.dropout(weights, 0.1, True) if m == "dropout at inference" \
            else self.dropout(weights)
        context = (dropped @ v).transpose(1, 2).contiguous().view(b, t, self.d_out)
        if need_weights and m == "weights path differs":
            context = (weights.mean(1, keepdim=True) @ v).transpose(1, 2).reshape(b, t, -1)
        return self.out_proj(context), (weights if need_weights else None)

CHECKUP = {}
