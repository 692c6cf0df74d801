"""The Annotated Transformer's style: (query, key, value, mask) with mask 1 = keep, four
Linears in a list, a finite fill of -1e9, the weights kept on self.attn."""

import copy
import math

import torch
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "no scale", "mask inverted", "mask after softmax",
            "softmax over the wrong axis", "view split", "dropout at inference")


def attention(query, key, value, mask=None, dropout=None, mistake=None):
    d_k = {"scale sqrt(d_model)": query.size(-1) * query.size(1), "no scale": 1}.get(
        mistake, query.size(-1))
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None and mistake != "mask after softmax":
        scores = scores.masked_fill(mask == (1 if mistake == "mask inverted" else 0), -1e9)
    p_attn = scores.softmax(dim=-2 if mistake == "softmax over the wrong axis" else -1)
    if mask is not None and mistake == "mask after softmax":
        p_attn = p_attn.masked_fill(mask == 0, 0.0)  # mistake: zeroed after the softmax
    if mistake == "dropout at inference":
        p_attn = torch.nn.functional.dropout(p_attn, 0.1, training=True)  # mistake: always on
    elif dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class Attention(nn.Module):
    def __init__(self, d_model, h, mistake=None, dropout=0.1):
        super().__init__()
        self.d_k, self.h, self.mistake = d_model // h, h, mistake
        self.linears = nn.ModuleList([copy.deepcopy(nn.Linear(d_model, d_model))
                                      for _ in range(4)])
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # same mask for every head
        nbatches = query.size(0)
        if self.mistake == "view split":  # mistake: no transpose
            query, key, value = [lin(x).view(nbatches, self.h, -1, self.d_k)
                                 for lin, x in zip(self.linears, (query, key, value), strict=False)]
        else:
            query, key, value = [lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                                 for lin, x in zip(self.linears, (query, key, value), strict=False)]
        x, self.attn = attention(query, key, value, mask, self.dropout, self.mistake)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)

# what True means in its mask argument, as its author documents it (checkup(..., **CHECKUP))
CHECKUP = {"mask_means": "keep"}
