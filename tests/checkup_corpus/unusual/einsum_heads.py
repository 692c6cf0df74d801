"""einsum everywhere, per-head weights stored as (H, C, dh) tensors, a Hugging Face style
attention_mask of shape (B, T) with 1 = keep, returns (out, attn) when output_attentions.
Written after the corpus passed, without changing the check-up for it."""

import math

import torch
from torch import nn

MISTAKES = ("scale sqrt(d_model)", "no scale", "mask inverted", "padding on the query axis",
            "softmax over the wrong axis", "weights path differs")


class Attention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, mistake=None):
        super().__init__()
        h, dh = num_attention_heads, hidden_size // num_attention_heads
        self.wq, self.wk, self.wv = (nn.Parameter(torch.randn(h, hidden_size, dh) * 0.02)
                                     for _ in range(3))
        self.bq = nn.Parameter(torch.zeros(h, dh))
        self.wo = nn.Parameter(torch.randn(h, dh, hidden_size) * 0.02)
        self.hidden_size, self.mistake = hidden_size, mistake

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        m = self.mistake
        q = torch.einsum("btc,hcd->bhtd", hidden_states, self.wq) + self.bq[:, None]
        k = torch.einsum("btc,hcd->bhtd", hidden_states, self.wk)
        v = torch.einsum("btc,hcd->bhtd", hidden_states, self.wv)
        d = {"scale sqrt(d_model)": self.hidden_size, "no scale": 1}.get(m, q.shape[-1])
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(d)
        if attention_mask is not None:  # (B, T), 1 = keep
            keep = attention_mask.bool()
            keep = ~keep if m == "mask inverted" else keep
            keep = keep[:, None, :, None] if m == "padding on the query axis" \
                else keep[:, None, None, :]
            scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
        attn = scores.softmax(-2 if m == "softmax over the wrong axis" else -1)
        out = torch.einsum("bhij,bhjd,hdc->bic", attn, v, self.wo)
        if m == "weights path differs" and output_attentions:
            attn = torch.einsum("bhid,bhjd->bhij", q, k).softmax(-1)  # recomputed, unmasked
        return (out, attn) if output_attentions else (out,)


CHECKUP = {"mask_means": "keep"}
