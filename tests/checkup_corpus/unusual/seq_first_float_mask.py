"""(query, key, value) on (T, B, C) with no batch_first attribute (as nn.MultiheadAttention's
default), one packed in-projection, and an additive float attn_mask (0 kept, -inf blocked)."""

import math

from torch import nn

MISTAKES = ("no scale", "mask after softmax", "view split", "dropout at inference")


class Attention(nn.Module):
    def __init__(self, embed_dim, num_heads, mistake=None):
        super().__init__()
        self.num_heads, self.mistake = num_heads, mistake
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None):
        t, b, c = query.shape  # sequence first
        h, dh, m = self.num_heads, c // self.num_heads, self.mistake
        q, k, v = self.in_proj(query).chunk(3, dim=-1)  # (T, B, C) each
        if m == "view split":  # mistake: (T, B, C) viewed as (B, H, T, dh) straight away
            q, k, v = (z.reshape(b, h, t, dh) for z in (q, k, v))
        else:
            q, k, v = (z.reshape(t, b, h, dh).permute(1, 2, 0, 3) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (1 if m == "no scale" else math.sqrt(dh))
        if attn_mask is not None and m != "mask after softmax":
            scores = scores + attn_mask  # additive: -inf where blocked
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        weights = scores.softmax(dim=-1)
        if attn_mask is not None and m == "mask after softmax":  # mistake: zeroed afterwards
            weights = weights * (attn_mask == 0)
        if m == "dropout at inference":  # mistake: dropout eval() cannot switch off
            weights = nn.functional.dropout(weights, 0.1, training=True)
        out = (weights @ v).permute(2, 0, 1, 3).reshape(t, b, c)  # back to (T, B, C)
        return self.out_proj(out)


CHECKUP = {"mask_means": "additive"}
