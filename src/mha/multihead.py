"""Multi-head attention in NumPy: split heads, attend, merge heads, project.

Weights are stored the way the math is written, ``x @ W`` with ``W`` of
shape ``(in, out)``. ``torch.nn.Linear`` stores the transpose ``(out, in)``;
:mod:`mha.layers` does that crossing explicitly.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array
from .reference import attention

__all__ = ["MultiHeadAttention", "split_heads", "merge_heads"]


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """``(B, T, C)`` -> ``(B, H, T, dh)`` with ``dh = C // H``.

    The last dim holds the heads side by side, so it is split into
    ``(H, dh)`` first and only then is ``H`` moved in front of ``T``.
    Reshaping straight to ``(B, H, T, dh)`` has the right shape and the
    wrong values.
    """
    b, t, c = x.shape
    if c % n_heads:
        raise ValueError(f"the model width C={c} is not divisible by n_heads={n_heads}.")
    return x.reshape(b, t, n_heads, c // n_heads).transpose(0, 2, 1, 3)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """``(B, H, T, dh)`` -> ``(B, T, H * dh)``, the inverse of :func:`split_heads`."""
    b, h, t, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * dh)


class MultiHeadAttention:
    """NumPy multi-head attention with optional bias.

    ``mha(x)`` is self-attention; ``mha(x, context)`` is cross-attention
    (queries from ``x (B, Tq, C)``, keys/values from ``context (B, Tk, C)``).
    ``mask`` follows the package convention (True = blocked), broadcastable
    to ``(B, H, Tq, Tk)``. Returns ``(out (B, Tq, C), weights (B, H, Tq, Tk))``.

    Parameters ``w_q, w_k, w_v, w_o`` are ``(C, C)`` arrays used as
    ``x @ w``; biases ``b_q, b_k, b_v, b_o`` are ``(C,)`` or None.
    Initialised uniform in ``+-1/sqrt(C)`` from ``seed``; the dtype is fixed
    at construction (float64 by default) and inputs are cast to it.
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = False, seed: int = 0,
                 dtype=np.float64):
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}.")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dtype = np.dtype(dtype)
        rng = np.random.default_rng(seed)
        bound = 1.0 / np.sqrt(d_model)

        def draw(*shape):
            return rng.uniform(-bound, bound, shape).astype(self.dtype)

        self.w_q, self.w_k, self.w_v, self.w_o = (draw(d_model, d_model) for _ in range(4))
        self.b_q = self.b_k = self.b_v = self.b_o = None
        if bias:
            self.b_q, self.b_k, self.b_v, self.b_o = (draw(d_model) for _ in range(4))

    @property
    def n_parameters(self) -> int:
        """4 C^2 weights, plus 4 C biases when present; independent of H."""
        n = 4 * self.d_model**2
        return n + (4 * self.d_model if self.b_q is not None else 0)

    def _project(self, x, w, b):
        y = x @ w
        return y if b is None else y + b

    def __call__(self, x, context=None, mask=None):
        x = self._check_input(x, "x")
        context = x if context is None else self._check_input(context, "context")
        q = split_heads(self._project(x, self.w_q, self.b_q), self.n_heads)  # (B, H, Tq, dh)
        k = split_heads(self._project(context, self.w_k, self.b_k), self.n_heads)  # (B, H, Tk, dh)
        v = split_heads(self._project(context, self.w_v, self.b_v), self.n_heads)  # (B, H, Tk, dh)
        heads, weights = attention(q, k, v, mask=mask)  # (B, H, Tq, dh), (B, H, Tq, Tk)
        out = self._project(merge_heads(heads), self.w_o, self.b_o)  # (B, Tq, C)
        return out, weights

    def _check_input(self, x, name):
        x = as_float_array(x, name)
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"{name} must be (B, T, C={self.d_model}); got shape {x.shape}.")
        return x.astype(self.dtype, copy=False)
