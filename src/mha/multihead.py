"""Multi-head attention in NumPy: split heads, attend, merge heads, project.

Weights are stored the way the math is written, ``x @ W`` with ``W`` of
shape ``(in, out)``. ``torch.nn.Linear`` stores the transpose ``(out, in)``;
:mod:`mha.layers` does that crossing explicitly.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    DTypeError,
    as_float_array,
    check_flag,
    check_has_keys,
    check_heads,
    check_non_negative_int,
    check_output_finite,
    check_positive_int,
)
from ._mask_checks import check_mask, check_mask_rank
from .reference import attention

__all__ = ["MultiHeadAttention", "split_heads", "merge_heads"]


def _check_n_heads(n_heads) -> int:
    return check_positive_int(n_heads, "n_heads")


def split_heads(x, n_heads: int):
    """``(B, T, C)`` -> ``(B, H, T, dh)``: head ``h`` gets channels ``h*dh .. (h+1)*dh - 1``.

    ``H = n_heads``, ``dh = C // H``. Lesson 06's coded tensor shows what "right" means:
    with ``x[0, t, c] = 10 t + c``, ``T = 3``, ``C = 4`` and ``H = 2``, head 1 must hold
    ``[[2, 3], [12, 13], [22, 23]]``, row ``t`` still position ``t``. Two steps give
    that: reshape the channel axis alone into ``(H, dh)``, then swap the ``T`` and ``H``
    axes. A single reshape to ``(B, H, T, dh)`` fills rows in memory order instead, and
    head 1 gets ``[[12, 13], [20, 21], [22, 23]]``: the same shape, no error, and rows
    that are no longer positions.

    Works on NumPy arrays (anything else goes through ``np.asarray``) and on
    torch tensors (a tensor in gives a tensor out, gradients flow); the result
    is a view of ``x`` with ``x``'s dtype, not contiguous when ``H > 1`` and
    ``T > 1``. Refuses an input that is not 3-d, ``n_heads`` that is not a
    positive int, and ``C`` not divisible by ``n_heads`` (``ValueError`` /
    ``TypeError``).

    >>> x = (10 * np.arange(3)[:, None] + np.arange(4))[None]  # (B, T, C): 10 t + c
    >>> split_heads(x, 2)[0, 1]  # head 1: channels 2 and 3 of positions 0, 1, 2
    array([[ 2,  3],
           [12, 13],
           [22, 23]])
    """
    x = x if _is_torch(x) else np.asarray(x)
    n_heads = _check_n_heads(n_heads)
    if len(x.shape) != 3:
        raise ValueError(f"split_heads takes x of shape (B, T, C); got shape {tuple(x.shape)}.")
    b, t, c = x.shape
    if c % n_heads:
        raise ValueError(f"the model width C={c} is not divisible by n_heads={n_heads}.")
    # swapaxes (not NumPy's transpose(0, 2, 1, 3), which torch spells differently) serves both.
    return x.reshape(b, t, n_heads, c // n_heads).swapaxes(1, 2)


def merge_heads(x):
    """``(B, H, T, dh)`` -> ``(B, T, H * dh)``, the inverse of :func:`split_heads`.

    Heads go back side by side along the last dim. The result has ``x``'s
    dtype and is contiguous: a copy when ``H > 1`` and ``T > 1`` (the heads
    must be interleaved in memory), otherwise possibly a view of ``x``. Works on
    NumPy arrays and torch tensors, like :func:`split_heads`. Refuses an input
    that is not 4-d (``ValueError``).
    """
    x = x if _is_torch(x) else np.asarray(x)
    if len(x.shape) != 4:
        raise ValueError(
            f"merge_heads takes x of shape (B, H, T, dh); got shape {tuple(x.shape)}."
        )
    b, h, t, dh = x.shape
    return x.swapaxes(1, 2).reshape(b, t, h * dh)


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


class MultiHeadAttention:
    """NumPy multi-head attention with optional bias.

    ``mha(x)`` is self-attention; ``mha(x, context)`` is cross-attention
    (queries from ``x (B, Tq, C)``, keys/values from ``context (B, Tk, C)``).
    ``mask`` follows the package convention (True = blocked): ``(Tq, Tk)`` or
    4-D ``(B, 1|H, 1|Tq, Tk)``, as for the torch module; ``is_causal=True``
    blocks the future with the queries as the last Tq key positions
    (lower-right), and ``scale`` replaces
    ``1/sqrt(dh)``, both as in :func:`mha.attention`. Returns
    ``(out (B, Tq, C), weights (B, H, Tq, Tk))``.

    Parameters ``w_q, w_k, w_v, w_o`` are ``(C, C)`` arrays used as
    ``x @ w``; biases ``b_q, b_k, b_v, b_o`` are ``(C,)`` or None.
    Initialised uniform in ``+-1/sqrt(C)`` from ``seed``; the dtype is fixed
    at construction (float64 by default) and inputs are cast to it, so
    ``out`` and ``weights`` have that dtype, except for float16: the
    projections run in float16, but attention computes in float32 (the dtype
    rule of :func:`mha.attention`), so a float16 module returns float32.

    >>> out, w = MultiHeadAttention(4, 2, dtype=np.float16)(np.ones((1, 3, 4)))
    >>> out.dtype, w.dtype
    (dtype('float32'), dtype('float32'))

    Refuses at construction, with the same rule and words as the torch module
    :class:`mha.layers.MultiHeadAttention`: ``d_model`` or ``n_heads`` that is
    not a positive int (NumPy integers are fine; ``DTypeError`` for a non-int,
    ``ValueError`` below 1), ``d_model`` not divisible by ``n_heads``, a
    ``bias`` that is not True / False, a dtype that is not a NumPy floating
    dtype (``DTypeError``), a ``seed`` that is not an int >= 0. At call time:
    weights replaced by arrays of another shape,
    inputs that are not ``(B, T, C)`` with the model's ``C``, ``x`` and
    ``context`` with different ``B``, keys of length 0 (``Tk = 0``; ``Tq = 0``
    is fine and gives ``(B, 0, C)``), a mask that is neither 2-D nor 4-D (a
    3-D mask is ambiguous: broadcasting would read ``(B, Tq, Tk)`` as
    ``(H, Tq, Tk)``), whatever :func:`mha.attention` refuses (bad values, a
    bad or fully blocking mask, scores too large for memory), and NaN or +-inf
    from a projection that overflowed (q, k, v in :func:`mha.attention`'s
    words; the output projection as the torch module words it).
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = False, seed: int = 0,
                 dtype=np.float64):
        d_model, n_heads = check_heads(d_model, n_heads)
        bias = check_flag(bias, "bias")
        seed = check_non_negative_int(seed, "seed")  # np.random.default_rng's seeds
        try:
            kind = np.dtype(dtype).kind
        except TypeError:  # a torch dtype, a misspelled name
            kind = None
        if kind != "f":
            shown = np.dtype(dtype) if kind is not None else repr(dtype)
            hint = "" if kind is not None else " (a NumPy dtype such as np.float32)"
            raise DTypeError(f"dtype must be a floating dtype; got {shown}{hint}.")
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

    def __call__(self, x, context=None, mask=None, *, is_causal: bool = False,
                 scale: float | None = None):
        self._check_weights()
        x = self._check_input(x, "x")
        if context is None:
            context = x
        else:
            context = self._check_input(context, "context")
            if context.shape[0] != x.shape[0]:
                raise ValueError(
                    f"x and context must have the same batch size B: x has shape {x.shape}, "
                    f"context has shape {context.shape}."
                )
        check_has_keys(context.shape, "x" if context is x else "context")
        if mask is not None:
            # As the torch module: dtype and broadcasting first, then the rank (2-D or 4-D).
            shape = (x.shape[0], self.n_heads, x.shape[1], context.shape[1])  # (B, H, Tq, Tk)
            check_mask(mask, shape, check_rows=False)
            check_mask_rank(np.shape(mask))
        q = split_heads(self._project(x, self.w_q, self.b_q), self.n_heads)  # (B, H, Tq, dh)
        k = split_heads(self._project(context, self.w_k, self.b_k), self.n_heads)  # (B, H, Tk, dh)
        v = split_heads(self._project(context, self.w_v, self.b_v), self.n_heads)  # (B, H, Tk, dh)
        # (B, H, Tq, dh), (B, H, Tq, Tk)
        heads, weights = attention(q, k, v, mask=mask, scale=scale, is_causal=is_causal)
        out = self._project(merge_heads(heads), self.w_o, self.b_o)  # (B, Tq, C)
        with np.errstate(over="ignore", invalid="ignore"):  # a sum of finite values may overflow
            finite = np.isfinite(out.sum())  # one sum when finite, as the torch module checks
        if not finite:
            check_output_finite(out, "the output projection")
        return out, weights

    def _check_weights(self) -> None:
        """Refuse weights replaced by arrays of another shape (a matmul error names none)."""
        c = self.d_model
        for s in "qkvo":
            w, b = getattr(self, f"w_{s}"), getattr(self, f"b_{s}")
            if np.shape(w) != (c, c) or (b is not None and np.shape(b) != (c,)):
                raise ValueError(f"w_{s} must be (C, C) = {(c, c)} and b_{s} (C,) or None; got "
                                 f"{np.shape(w)} and {None if b is None else np.shape(b)}.")

    def _check_input(self, x, name):
        x = as_float_array(x, name)
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"{name} must be (B, T, C={self.d_model}); got shape {x.shape}.")
        return x.astype(self.dtype, copy=False)
