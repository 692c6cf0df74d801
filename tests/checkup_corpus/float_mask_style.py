"""An additive float mask: forward(x, attn_mask=None) where attn_mask holds 0 and -inf,
built by the caller (here from a bool one, True = allowed, as SDPA reads bool masks); biases
on every projection; one packed in-projection as a bare (3C, C) parameter."""

import math

import torch
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "no scale", "mask inverted", "mask after softmax",
            "softmax over the wrong axis", "view split", "dropout at inference")


class Attention(nn.Module):
    def __init__(self, d_model, n_heads, mistake=None, dropout=0.1):
        super().__init__()
        self.n_heads, self.mistake, self.p = n_heads, mistake, dropout
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d_model, d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        nn.init.xavier_uniform_(self.in_proj_weight)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, attn_mask=None):
        """attn_mask: bool (True = may attend) or float (added to the scores)."""
        B, T, C = x.shape
        H, m = self.n_heads, self.mistake
        qkv = torch.nn.functional.linear(x, self.in_proj_weight, self.in_proj_bias)
        qkv = qkv.view(B, T, 3, H, C // H)
        if m == "view split":
            q, k, v = (qkv[:, :, i].reshape(B, H, T, C // H) for i in range(3))
        else:
            q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, T, dh)
        s = q @ k.transpose(-1, -2) / math.sqrt({"scale sqrt(d_model)": C, "no scale": 1}
                                                .get(m, C // H))
        add = None
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                allowed = ~attn_mask if m == "mask inverted" else attn_mask
                attn_mask = torch.zeros(allowed.shape, dtype=s.dtype).masked_fill(
                    ~allowed, float("-inf"))
            add = attn_mask
        if add is not None and m != "mask after softmax":
            s = s + add
        w = s.softmax(dim=-2 if m == "softmax over the wrong axis" else -1)
        if add is not None and m == "mask after softmax":
            w = w * (add == 0)
        w = torch.dropout(w, self.p, self.training or m == "dropout at inference")
        return self.out((w @ v).transpose(1, 2).reshape(B, T, C))

# what True means in its mask argument, as its author documents it (checkup(..., **CHECKUP))
CHECKUP = {"mask_means": "keep"}
