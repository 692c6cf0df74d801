"""F.scaled_dot_product_attention with is_causal and a key padding mask (True = padded)
turned into SDPA's meaning (True = allowed); no weights."""

import torch
import torch.nn.functional as F
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "no scale", "mask inverted", "causal off by one",
            "padding on the query axis", "view split", "dropout at inference")


class Attention(nn.Module):
    def __init__(self, dim, heads, mistake=None, dropout=0.1):
        super().__init__()
        self.heads, self.mistake, self.p = heads, mistake, dropout
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, padding_mask=None, causal=False):
        b, n, d = x.shape
        h, m = self.heads, self.mistake
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        if m == "view split":
            q, k, v = (t.reshape(b, h, n, d // h) for t in qkv)
        else:
            q, k, v = (t.reshape(b, n, h, d // h).transpose(1, 2) for t in qkv)
        allowed = torch.ones(n, n, dtype=torch.bool)
        if causal:
            allowed = torch.ones(n, n, dtype=torch.bool).tril(-1 if m == "causal off by one"
                                                               else 0)
        if padding_mask is not None:
            shape = (b, 1, n, 1) if m == "padding on the query axis" else (b, 1, 1, n)
            allowed = allowed & ~padding_mask.view(shape)
        if m == "mask inverted":
            allowed = ~allowed
        scale = {"scale sqrt(d_model)": d ** -0.5, "no scale": 1.0}.get(m)
        p = self.p if (self.training or m == "dropout at inference") else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p,
                                             scale=scale)
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))

CHECKUP = {}
