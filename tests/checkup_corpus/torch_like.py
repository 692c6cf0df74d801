"""nn.MultiheadAttention's call, written by hand: (query, key, value, key_padding_mask,
need_weights, attn_mask, average_attn_weights), sequence first (T, B, C) by default."""

import math

import torch
import torch.nn.functional as F
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "no scale", "mask inverted", "mask after softmax",
            "padding on the query axis", "softmax over the wrong axis", "view split",
            "dropout at inference", "weights path differs")


class Attention(nn.Module):
    def __init__(self, embed_dim, num_heads, mistake=None, dropout=0.1, batch_first=False):
        super().__init__()
        self.embed_dim, self.num_heads, self.batch_first = embed_dim, num_heads, batch_first
        self.q_lin, self.k_lin, self.v_lin, self.out_lin = (nn.Linear(embed_dim, embed_dim)
                                                            for _ in range(4))
        self.dropout, self.mistake = dropout, mistake

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True):
        if not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        B, T, E = query.shape
        H, D = self.num_heads, E // self.num_heads
        if self.mistake == "view split":
            q, k, v = (lin(t).view(B, H, T, D) for lin, t in
                       ((self.q_lin, query), (self.k_lin, key), (self.v_lin, value)))
        else:
            q, k, v = (lin(t).view(B, T, H, D).transpose(1, 2) for lin, t in
                       ((self.q_lin, query), (self.k_lin, key), (self.v_lin, value)))
        s = q @ k.transpose(-2, -1) / math.sqrt(
            {"scale sqrt(d_model)": E, "no scale": 1}.get(self.mistake, D))
        blocked = torch.zeros(B, 1, T, T, dtype=torch.bool)  # True = not allowed
        if attn_mask is not None:
            blocked = blocked | (~attn_mask if self.mistake == "mask inverted" else attn_mask)
        if key_padding_mask is not None:
            shape = (B, 1, T, 1) if self.mistake == "padding on the query axis" else (B, 1, 1, T)
            blocked = blocked | key_padding_mask.view(shape)
        if self.mistake == "mask after softmax":
            w = s.softmax(-1).masked_fill(blocked, 0.0)
        else:
            w = s.masked_fill(blocked, float("-inf")).softmax(
                -2 if self.mistake == "softmax over the wrong axis" else -1)
        training = True if self.mistake == "dropout at inference" else self.training
        out = F.dropout(w, self.dropout, training) @ v
        if self.mistake == "weights path differs" and need_weights:
            out = w.mean(1, keepdim=True) @ v  # mistake: the head average times V
        out = self.out_lin(out.transpose(1, 2).reshape(B, T, E))
        if not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        return out, (w.mean(1) if average_attn_weights else w)

# what True means in its mask argument, as its author documents it (checkup(..., **CHECKUP))
CHECKUP = {"mask_means": "blocked"}
