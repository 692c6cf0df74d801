"""Multi-head attention as a torch ``nn.Module``, written from scratch.

:class:`MultiHeadAttention` computes either by hand (``impl="manual"``: scores,
mask, softmax, dropout, weighted sum) or through
``torch.nn.functional.scaled_dot_product_attention`` (``impl="sdpa"``), from the
same parameters.

Masks follow the package convention: **boolean, True = blocked**. SDPA's
boolean ``attn_mask`` means the opposite (True = allowed), so every call into it
goes through :func:`mha.masks.to_sdpa`. The crossings to other code (weights to
and from ``nn.MultiheadAttention`` and the NumPy class, masks for
``nn.MultiheadAttention``, ``sdpa_attention``) live in
:mod:`mha.torch_transfer`, which imports this module (never the other way):
``from mha.torch_transfer import to_nn_multihead``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import masks
from ._checks import (
    DTypeError,
    all_finite,
    check_device,
    check_dropout,
    check_finite,
    check_flag,
    check_has_keys,
    check_heads,
    check_non_negative_int,
    check_output_finite,
    check_scale,
    check_scores_memory,
    check_torch_float_dtype,
    refuse_nonfinite_attention,
)
from ._mask_checks import (
    check_causal_lengths,
    check_mask_rank,
    fully_masked_row_message,
    non_bool_mask_message,
)

__all__ = ["MultiHeadAttention", "causal_mask_torch", "check_torch_mask"]

_IMPLS = ("manual", "sdpa")


def check_torch_mask(mask, shape: tuple[int, ...], name: str = "mask", device=None,
                     check_rows: bool = True):
    """Validate a package-convention mask (bool, **True = blocked**) for scores of ``shape``.

    ``mask`` is a bool tensor or NumPy array broadcastable to ``shape``
    ``(..., Tq, Tk)``, e.g. ``(B, H, Tq, Tk)``; it is returned as a bool tensor
    on ``device`` (not expanded). Refuses a non-boolean mask (``DTypeError``, a
    ``TypeError`` and a ``ValueError``, with :func:`mha.attention`'s words: the
    convention must be chosen by an explicit conversion), a mask that does not
    broadcast to ``shape`` (``ValueError``), and a mask that blocks every key for
    some query (``ValueError``: softmax would return NaN; skipped with
    ``check_rows=False`` for a part that is combined with others first).
    """
    if isinstance(mask, np.ndarray):
        if mask.dtype != bool:
            raise _non_bool_error(name, mask)
        mask = torch.from_numpy(np.ascontiguousarray(mask))
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a bool tensor or array (True = blocked); "
                        f"got {type(mask).__name__}.")
    if mask.dtype != torch.bool:
        raise _non_bool_error(name, mask)
    check_device(mask, name)  # a meta mask has no values to read
    mask = mask.to(device) if device is not None else mask
    try:
        fits = torch.broadcast_shapes(mask.shape, shape) == torch.Size(shape)
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
            f"{tuple(shape)} (..., Tq, Tk). A (B, Tk) padding mask goes in key_padding_mask= "
            "or is reshaped to (B, 1, 1, Tk) with mha.masks.key_padding_to_4d."
        )
    if check_rows:
        fully = mask.expand(shape).all(dim=-1)
        if fully.any():
            index = tuple(int(i) for i in torch.nonzero(fully)[0])
            raise ValueError(fully_masked_row_message(index, f"the {name}"))
    return mask


def _check_scores_memory(shape: tuple[int, ...], dtype, element_size: int) -> None:
    """Refuse (``TooLargeError``) ``(B, H, Tq, Tk)`` scores larger than the machine's RAM,
    in the NumPy side's words (:func:`mha._checks.check_scores_memory`)."""
    check_scores_memory(shape, dtype, element_size,
                        "impl='sdpa' (fused kernels that never build them) or shorter sequences.")


def _non_bool_error(name, mask) -> DTypeError:
    return DTypeError(non_bool_mask_message(name, mask))


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``H`` heads of width ``dh = d_model // H``.

    ``forward(query, key=None, value=None, mask=None, key_padding_mask=None,
    need_weights=False, *, average_attn_weights=False, is_causal=False,
    scale=None)`` returns ``(out (B, Tq, C), weights or None)``. Self-attention
    when ``key`` is None; cross-attention otherwise (``value`` defaults to
    ``key``; ``Tq != Tk`` is fine).

    Weights: None unless ``need_weights=True`` (``nn.MultiheadAttention``
    defaults to True; here they cost a ``(B, H, Tq, Tk)`` tensor, so they are
    asked for). Then ``(B, H, Tq, Tk)``, one map per head, or with
    ``average_attn_weights=True`` their mean over heads ``(B, Tq, Tk)``: the
    two shapes ``nn.MultiheadAttention`` returns for ``average_attn_weights``
    False / True (whose default is True; here it is False, per-head).

    Masks use the package convention, bool **True = blocked**: ``mask`` is
    ``(Tq, Tk)``, ``(B, 1, 1, Tk)``, ``(B, 1, Tq, Tk)`` or ``(B, H, Tq, Tk)``;
    ``key_padding_mask`` is ``(B, Tk)``, True on padded keys. ``is_causal=True``
    blocks the future, with the queries as the *last* Tq positions of the keys
    (aligned lower-right, the KV cache's meaning; see :func:`causal_mask_torch`).
    Any of the three may be combined: a key is blocked if any blocks it. Square
    self-attention with ``is_causal`` and no other mask calls SDPA with its own
    ``is_causal=True`` (fused kernels, no mask tensor); note that SDPA's own flag
    aligns upper-left when ``Tq != Tk``, which this module never does.
    ``scale`` (a number >= 0) replaces ``1/sqrt(dh)`` in both implementations.

    Parameters: ``q_proj, k_proj, v_proj`` (or one packed ``qkv`` of weight
    ``(3C, C)`` when ``packed_qkv=True``) and ``out_proj``, all ``nn.Linear``
    storing ``(out, in)`` and initialised uniform in ``+-1/sqrt(C)``. Inputs must
    be floating with the parameters' dtype, which the output keeps.

    ``impl="manual"`` writes attention out; ``impl="sdpa"`` calls
    ``F.scaled_dot_product_attention`` and cannot return weights. Dropout (on
    the attention weights) acts only in training mode, in both. With
    ``need_weights=True`` the weights returned are those multiplied with V, so in
    training with dropout they are the dropped-out ones (as in
    ``nn.MultiheadAttention``); in ``eval()`` every row sums to 1.

    Refuses at construction, with the same rule and words as the NumPy class
    :class:`mha.MultiHeadAttention`: ``d_model`` or ``n_heads`` that is not a
    positive int (NumPy integers are fine; ``DTypeError``, both a ``TypeError``
    and a ``ValueError``, for a non-int), ``d_model % n_heads != 0``, a
    ``dropout`` that is not a number in ``[0, 1)``, ``bias`` or ``packed_qkv``
    that is not True / False, a ``dtype`` that is not a floating torch dtype
    (``DTypeError``) and a ``device`` torch does not know. Refuses at call time
    (message names the problem):
    inputs not ``(B, T, C)``, of another dtype (``DTypeError``), or key/value
    batch or length mismatch; keys of length 0 (``Tk = 0``: the output would be
    ``out_proj.bias`` everywhere; ``Tq = 0`` is fine and gives ``(B, 0, C)``); a
    non-bool mask (``DTypeError``, in :func:`mha.attention`'s words); a mask that
    does not broadcast to ``(B, H, Tq, Tk)`` or is neither 2-D nor 4-D; a fully
    masked row; ``is_causal`` with ``Tq > Tk``; a ``scale`` that is not a finite
    number >= 0; ``need_weights``, ``average_attn_weights`` or ``is_causal``
    that is not True / False (``DTypeError``); ``need_weights`` with SDPA; an
    input on another device than the parameters, or on the meta device
    (``ValueError``); with ``impl="manual"``, scores and weights larger than the
    machine's memory (``TooLargeError``, a ``ValueError`` and a ``MemoryError``,
    naming the size). Setting ``module.dropout`` later is checked as at
    construction. NaN or +-inf in an input, scores that overflow the dtype, and
    an output projection that overflows, are refused in the NumPy class's words
    (its q, k, v are the projections). The manual path
    checks the scores before the mask, as :func:`mha.attention` does; the SDPA
    path checks only its output, so it misses an overflow that never reaches
    the output (on a blocked key, or a score overflowing to -inf beside finite
    ones).
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = True, dropout: float = 0.0,
                 packed_qkv: bool = False, impl: str = "manual", device=None, dtype=None):
        super().__init__()
        d_model, n_heads = check_heads(d_model, n_heads)
        dropout = check_dropout(dropout, "dropout")
        bias, packed_qkv = check_flag(bias, "bias"), check_flag(packed_qkv, "packed_qkv")
        dtype = None if dtype is None else check_torch_float_dtype(dtype, "dtype")
        if device is not None:
            try:
                device = torch.device(device)
            except (RuntimeError, TypeError):
                raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda'; "
                                 f"got {device!r}.") from None
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.bias, self.dropout, self.packed_qkv = bias, dropout, packed_qkv
        self.impl = impl
        kw = {"bias": bias, "device": device, "dtype": dtype}
        if packed_qkv:
            self.qkv = nn.Linear(d_model, 3 * d_model, **kw)
        else:
            self.q_proj = nn.Linear(d_model, d_model, **kw)
            self.k_proj = nn.Linear(d_model, d_model, **kw)
            self.v_proj = nn.Linear(d_model, d_model, **kw)
        self.out_proj = nn.Linear(d_model, d_model, **kw)

    @property
    def dropout(self) -> float:
        """The dropout probability on the attention weights; a new value is checked as at
        construction (a number in ``[0, 1)``)."""
        return self._dropout

    @dropout.setter
    def dropout(self, value: float) -> None:
        self._dropout = check_dropout(value, "dropout")

    @property
    def impl(self) -> str:
        return self._impl

    @impl.setter
    def impl(self, value: str) -> None:
        if value not in _IMPLS:
            raise ValueError(f"impl must be one of {_IMPLS}; got {value!r}.")
        self._impl = value

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, bias={self.bias}, "
                f"dropout={self.dropout}, packed_qkv={self.packed_qkv}, impl={self.impl!r}")

    def in_projections(self):
        """``((W_Q, b_Q), (W_K, b_K), (W_V, b_V))``: views of the parameters.

        Each ``W`` is ``(C, C)`` stored ``(out, in)`` as ``nn.Linear`` does; each
        ``b`` is ``(C,)`` or None. With ``packed_qkv`` they are row blocks of the
        ``(3C, C)`` weight, so writing into them (under ``no_grad``) writes it.
        """
        if self.packed_qkv:
            ws = self.qkv.weight.chunk(3, dim=0)
            bs = self.qkv.bias.chunk(3, dim=0) if self.bias else (None,) * 3
            return tuple(zip(ws, bs, strict=True))
        return tuple((p.weight, p.bias) for p in (self.q_proj, self.k_proj, self.v_proj))

    def forward(self, query, key=None, value=None, mask=None, key_padding_mask=None,
                need_weights: bool = False, *, average_attn_weights: bool = False,
                is_causal: bool = False, scale: float | None = None):
        """``(out (B, Tq, C), weights or None)``; see the class docstring."""
        need_weights = check_flag(need_weights, "need_weights")  # "False" is truthy
        if need_weights and self.impl == "sdpa":
            raise ValueError("need_weights=True with impl='sdpa': SDPA does not return the "
                             "attention weights; use impl='manual' to get them.")
        if key is None and value is not None:
            raise ValueError("value given without key; pass key (and value) for cross-attention.")
        self_attention = key is None
        query = self._check_input(query, "query")
        key = query if key is None else self._check_input(key, "key")
        value = key if value is None else self._check_input(value, "value")
        b, t_q, _ = query.shape
        t_k = key.shape[1]
        if key.shape[0] != b:
            raise ValueError(f"query and key must share the batch size B: query "
                             f"{tuple(query.shape)}, key {tuple(key.shape)}.")
        if value.shape[:2] != key.shape[:2]:
            raise ValueError(f"key and value must share (B, Tk): key {tuple(key.shape)}, "
                             f"value {tuple(value.shape)}.")
        check_has_keys(key.shape, "query" if self_attention else "key")
        scale = 1.0 / math.sqrt(self.d_head) if scale is None else check_scale(scale)
        is_causal = check_flag(is_causal, "is_causal")
        average_attn_weights = check_flag(average_attn_weights, "average_attn_weights")
        if self.impl == "manual":  # before any (Tq, Tk) mask or score is allocated
            _check_scores_memory((b, self.n_heads, t_q, t_k), query.dtype, query.element_size())
        # Square causal self-attention with no other mask goes to SDPA's own is_causal
        # (its fused kernels); every other causal case becomes an explicit lower-right mask.
        sdpa_causal = is_causal and mask is None and key_padding_mask is None and t_q == t_k
        blocked = None
        if not (sdpa_causal and self.impl == "sdpa"):
            blocked = self._combined_mask(mask, key_padding_mask, (b, self.n_heads, t_q, t_k),
                                          query.device, is_causal)

        q, k, v = self._project_qkv(query, key, value, self_attention)  # each (B, H, T, dh)
        weights = None
        if self.impl == "manual":
            scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, Tq, Tk)
            if not all_finite(scores):  # before the mask, as mha.attention checks
                refuse_nonfinite_attention(q, k, v, scale)
            if blocked is not None:
                # Before the softmax, so blocked keys get exactly 0 and rows still sum to 1.
                scores = scores.masked_fill(blocked, float("-inf"))
            weights = F.dropout(scores.softmax(dim=-1), p=self.dropout, training=self.training)
            heads = weights @ v  # (B, H, Tq, dh)
        else:
            # F.scaled_dot_product_attention is a function: eval() does not reach it, so the
            # module must pass dropout_p = 0 itself outside training.
            heads = F.scaled_dot_product_attention(
                q, k, v,
                attn_mask=None if blocked is None else masks.to_sdpa(blocked),
                dropout_p=self.dropout if self.training else 0.0,
                is_causal=sdpa_causal, scale=scale,
            )
        if not all_finite(heads):  # finite inputs, but a projection or SDPA overflowed
            refuse_nonfinite_attention(q, k, v, scale)
        # (B, H, Tq, dh) -> (B, Tq, H, dh) -> (B, Tq, C): after the transpose the memory is
        # no longer in (B, Tq, C) order, so reshape (which copies when needed), not view.
        merged = heads.transpose(1, 2).reshape(b, t_q, self.d_model)
        out = self.out_proj(merged)
        if not all_finite(out):  # finite heads, but the output projection overflowed
            check_output_finite(out, "the output projection")
        if not need_weights:
            return out, None
        # As nn.MultiheadAttention: the mean over heads (B, Tq, Tk), or every head (B, H, Tq, Tk).
        return out, (weights.mean(dim=1) if average_attn_weights else weights)

    def _split_heads(self, x):
        # (B, T, C) -> (B, T, H, dh) -> (B, H, T, dh). The heads sit side by side along C,
        # so C must be cut into (H, dh) first; viewing straight to (B, H, T, dh) has the right
        # shape but mixes positions and heads, with no error.
        b, t, _ = x.shape
        return x.reshape(b, t, self.n_heads, self.d_head).transpose(1, 2)

    def _project_qkv(self, query, key, value, self_attention: bool):
        if self.packed_qkv and self_attention:
            # One (3C, C) matmul instead of three: the reason packed weights exist.
            q, k, v = self.qkv(query).chunk(3, dim=-1)
        else:
            (wq, bq), (wk, bk), (wv, bv) = self.in_projections()
            q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
        return self._split_heads(q), self._split_heads(k), self._split_heads(v)

    def _check_input(self, x, name: str):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor (B, T, C); got {type(x).__name__}.")
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"{name} must be (B, T, C={self.d_model}); "
                             f"got shape {tuple(x.shape)}.")
        own = self.out_proj.weight
        if x.dtype != own.dtype:
            raise DTypeError(f"{name} has dtype {x.dtype} but the module's parameters are "
                             f"{own.dtype}; convert one of them (e.g. x.to({own.dtype}) or "
                             f"module.to({x.dtype})).")
        check_device(x, name, own.device)
        check_finite(x, name)
        return x

    def _combined_mask(self, mask, key_padding_mask, shape, device, is_causal=False):
        """One bool mask broadcastable to ``shape`` (B, H, Tq, Tk), True = blocked, or None."""
        parts = []
        if mask is not None:
            mask = check_torch_mask(mask, shape, "mask", device, check_rows=False)
            check_mask_rank(tuple(mask.shape))
            parts.append(mask)
        if key_padding_mask is not None:
            b, _, _, t_k = shape
            # The shape first: a (B, 1, 1, Tk) mask that broadcasts would otherwise get the
            # generic broadcasting message, which sends the caller to key_padding_mask=.
            given_shape = tuple(getattr(key_padding_mask, "shape", (b, t_k)))
            if given_shape != (b, t_k):
                raise ValueError(f"key_padding_mask must be (B, Tk) = {(b, t_k)} with True = "
                                 f"padded; got shape {given_shape}.")
            pad = check_torch_mask(key_padding_mask, (b, t_k), "key_padding_mask", device,
                                   check_rows=False)
            parts.append(masks.key_padding_to_4d(pad))  # (B, 1, 1, Tk)
        if is_causal:
            t_q, t_k = shape[-2:]
            check_causal_lengths(t_q, t_k)
            causal = causal_mask_torch(t_q, t_k, device)  # (Tq, Tk), lower-right
            if not parts:
                return causal  # never blocks a whole row when Tq <= Tk
            parts.append(causal)
        if not parts:
            return None
        given = (("mask", mask), ("key_padding_mask", key_padding_mask),
                 ("is_causal", is_causal or None))
        name = " combined with ".join(n for n, m in given if m is not None)
        # Checked after combining: each part may leave open keys that the other blocks.
        return check_torch_mask(masks.combine(*parts), shape, name)


def causal_mask_torch(t_q: int, t_k: int, device=None) -> torch.Tensor:
    """``(Tq, Tk)`` bool tensor, True = blocked: the causal mask aligned lower-right.

    Query ``i`` is position ``Tk - Tq + i`` of the keys (the KV cache's meaning, as
    :func:`mha.masks.causal_mask` with ``t_k`` and
    ``torch.nn.attention.bias.causal_lower_right``); for ``Tq == Tk`` it is the usual
    triangle. Refuses ``Tq > Tk`` (``ValueError``: the first queries would see no key)
    and lengths that are not ints >= 0.
    """
    t_q, t_k = check_non_negative_int(t_q, "t_q"), check_non_negative_int(t_k, "t_k")
    check_causal_lengths(t_q, t_k)
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).triu(t_k - t_q + 1)
