"""A non-causal encoder with rotary positions (RoPE on q and k) and SDPA with a keep-mask:
its outputs depend on position, so permuting the tokens legitimately changes them."""

import torch
import torch.nn.functional as F
from torch import nn

MISTAKES = ("view split", "padding not on the keys")


def rotate(z, base=10000.0):  # z (B, H, T, dh): pairs rotated by position * frequency
    t, dh = z.shape[-2], z.shape[-1]
    freq = base ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * freq
    cos, sin = angle.cos().to(z.dtype), angle.sin().to(z.dtype)
    even, odd = z[..., 0::2], z[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, mistake=None):
        super().__init__()
        self.n_heads, self.mistake = n_heads, mistake
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))

    def forward(self, x, key_padding_mask=None):
        b, t, c = x.shape
        h, m = self.n_heads, self.mistake
        if m == "view split":  # mistake: heads split with view, no transpose
            split = lambda z: z.view(b, h, t, c // h)  # noqa: E731
        else:
            split = lambda z: z.view(b, t, h, c // h).transpose(1, 2)  # noqa: E731
        q, k, v = rotate(split(self.wq(x))), rotate(split(self.wk(x))), split(self.wv(x))
        keep = None
        if key_padding_mask is not None:
            keep = ~key_padding_mask[:, None, None, :]  # SDPA: True = take part
            if m == "padding not on the keys":  # mistake: a (B, T) mask broadcast as (T, T)
                keep = ~key_padding_mask
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return self.wo(y.transpose(1, 2).reshape(b, t, c))


CHECKUP = {}
