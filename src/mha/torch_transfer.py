"""Crossings between :class:`mha.layers.MultiHeadAttention` and other implementations.

Weights: ``nn.Linear`` (and so our torch module and ``nn.MultiheadAttention``)
stores a projection as ``(out, in)`` and computes ``x @ W.T``; the NumPy class
:class:`mha.MultiHeadAttention` stores ``(in, out)`` and computes ``x @ W``. So
torch <-> NumPy transposes, and torch <-> ``nn.MultiheadAttention`` stacks
``W_Q, W_K, W_V`` as the row blocks of one ``in_proj_weight (3C, C)``.

Every transfer **copies** the parameters into a new module: training the copy
never changes the original, and gradients of the copy never reach it.

Masks: the package and ``nn.MultiheadAttention`` both read a boolean mask as
**True = blocked**, but ``nn.MultiheadAttention`` wants per-head masks flattened
to ``(B * H, Tq, Tk)`` and key padding as ``(B, Tk)``:
:func:`to_nn_multihead_masks` does that. ``F.scaled_dot_product_attention``
reads True as *allowed*: cross into it with :func:`mha.masks.to_sdpa`, as
:func:`sdpa_attention` does.
"""

from __future__ import annotations

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
    check_has_features,
    check_has_keys,
    check_positive_int,
    check_scale,
    refuse_nonfinite_attention,
)
from .layers import MultiHeadAttention, causal_mask_torch, check_torch_mask
from .multihead import MultiHeadAttention as NumpyMultiHeadAttention

__all__ = ["to_nn_multihead", "from_nn_multihead", "to_numpy", "from_numpy",
           "to_nn_multihead_masks", "sdpa_attention"]

_NP_TO_TORCH = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}
_TORCH_TO_NP = {v: k for k, v in _NP_TO_TORCH.items()}


def to_nn_multihead(module: MultiHeadAttention) -> nn.MultiheadAttention:
    """A new ``nn.MultiheadAttention(batch_first=True)`` holding a copy of ``module``'s weights.

    ``in_proj_weight (3C, C)`` is ``[W_Q; W_K; W_V]`` stacked by rows (each
    ``(out, in)`` as in ``nn.Linear``), ``in_proj_bias (3C,)`` likewise; bias,
    dropout, dtype, device and train/eval mode are carried over. With the same
    inputs and masks (see :func:`to_nn_multihead_masks`) the two compute the same
    function. The copy is independent: its gradients never reach ``module``.
    Refuses anything but :class:`mha.layers.MultiHeadAttention` (``TypeError``).
    """
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(f"to_nn_multihead takes mha.layers.MultiHeadAttention; got "
                        f"{_class_name(module)}.")
    ref = module.out_proj.weight
    target = nn.MultiheadAttention(module.d_model, module.n_heads, dropout=module.dropout,
                                   bias=module.bias, batch_first=True, device=ref.device,
                                   dtype=ref.dtype)
    (wq, bq), (wk, bk), (wv, bv) = module.in_projections()
    with torch.no_grad():
        target.in_proj_weight.copy_(torch.cat([wq, wk, wv], dim=0))
        target.out_proj.weight.copy_(module.out_proj.weight)
        if module.bias:
            target.in_proj_bias.copy_(torch.cat([bq, bk, bv], dim=0))
            target.out_proj.bias.copy_(module.out_proj.bias)
    return target.train(module.training)


def from_nn_multihead(source: nn.MultiheadAttention, packed_qkv: bool = False,
                      impl: str = "manual") -> MultiHeadAttention:
    """A new :class:`mha.layers.MultiHeadAttention` holding a copy of ``source``'s weights.

    The inverse of :func:`to_nn_multihead`: ``in_proj_weight (3C, C)`` is cut into
    ``W_Q, W_K, W_V`` by rows. Our module takes ``(B, T, C)``; a ``source`` built
    with ``batch_first=False`` takes ``(T, B, C)`` (same weights, other layout).
    The copy is independent: its gradients never reach ``source``.

    Refuses (``ValueError``) configurations our module cannot express: ``kdim`` or
    ``vdim`` different from ``embed_dim``, ``add_bias_kv=True``,
    ``add_zero_attn=True``, and a bias on some projections only.
    """
    if not isinstance(source, nn.MultiheadAttention):
        raise TypeError(f"from_nn_multihead takes nn.MultiheadAttention; got "
                        f"{_class_name(source)}.")
    c = source.embed_dim
    if source.kdim != c or source.vdim != c:
        raise ValueError(f"nn.MultiheadAttention has kdim={source.kdim}, vdim={source.vdim} "
                         f"different from embed_dim={c}; our module projects keys and values "
                         "from width C only.")
    if source.bias_k is not None or source.bias_v is not None:
        raise ValueError("nn.MultiheadAttention was built with add_bias_kv=True (learned extra "
                         "key/value rows); our module has no such parameters.")
    if source.add_zero_attn:
        raise ValueError("nn.MultiheadAttention was built with add_zero_attn=True (an extra "
                         "all-zero key); our module has no such option.")
    has_in_bias, has_out_bias = source.in_proj_bias is not None, source.out_proj.bias is not None
    if has_in_bias != has_out_bias:
        raise ValueError(f"nn.MultiheadAttention has in_proj_bias={has_in_bias} but out_proj bias="
                         f"{has_out_bias}; our module has a bias on all projections or none.")
    ref = source.in_proj_weight
    target = MultiHeadAttention(c, source.num_heads, bias=has_in_bias, dropout=source.dropout,
                                packed_qkv=packed_qkv, impl=impl, device=ref.device,
                                dtype=ref.dtype)
    weights = source.in_proj_weight.chunk(3, dim=0)
    biases = source.in_proj_bias.chunk(3, dim=0) if has_in_bias else (None,) * 3
    with torch.no_grad():
        for (w, b), w_src, b_src in zip(target.in_projections(), weights, biases, strict=True):
            w.copy_(w_src)
            if b is not None:
                b.copy_(b_src)
        target.out_proj.weight.copy_(source.out_proj.weight)
        if has_out_bias:
            target.out_proj.bias.copy_(source.out_proj.bias)
    return target.train(source.training)


def to_numpy(module: MultiHeadAttention, ignore_dropout: bool = False) -> NumpyMultiHeadAttention:
    """A NumPy :class:`mha.MultiHeadAttention` with a copy of ``module``'s weights.

    Each ``(out, in)`` torch weight is transposed into the ``(in, out)`` matrix the
    NumPy class multiplies as ``x @ W``; float32 stays float32, float64 float64.
    Refuses other dtypes (``TypeError``) and, unless ``ignore_dropout=True``, a
    module with ``dropout > 0`` (``ValueError``): the NumPy class has no dropout,
    so the two would agree only in ``eval()``.
    """
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(f"to_numpy takes mha.layers.MultiHeadAttention; got "
                        f"{_class_name(module)}.")
    dtype = module.out_proj.weight.dtype
    if dtype not in _TORCH_TO_NP:
        raise TypeError(f"to_numpy copies float32 or float64 parameters; got {dtype}.")
    ignore_dropout = check_flag(ignore_dropout, "ignore_dropout")
    if module.dropout > 0 and not ignore_dropout:
        raise ValueError(f"the module has dropout={module.dropout} but the NumPy class has no "
                         "dropout; they agree only in eval(). Pass ignore_dropout=True to "
                         "accept that.")
    target = NumpyMultiHeadAttention(module.d_model, module.n_heads, bias=module.bias,
                                     dtype=_TORCH_TO_NP[dtype])
    pairs = (*module.in_projections(), (module.out_proj.weight, module.out_proj.bias))
    for suffix, (w, b) in zip("qkvo", pairs, strict=True):
        # .numpy() would share memory with the tensor; .copy() makes the NumPy side independent.
        setattr(target, f"w_{suffix}", w.detach().cpu().numpy().T.copy())
        setattr(target, f"b_{suffix}", None if b is None else b.detach().cpu().numpy().copy())
    return target


def from_numpy(source: NumpyMultiHeadAttention, packed_qkv: bool = False,
               impl: str = "manual", device=None) -> MultiHeadAttention:
    """A torch :class:`mha.layers.MultiHeadAttention` with a copy of the NumPy weights.

    The inverse of :func:`to_numpy`: each ``(in, out)`` matrix is transposed into
    ``nn.Linear``'s ``(out, in)``; float32 / float64 are kept (others refused with
    ``TypeError``). Refuses (``ValueError``) biases on some projections only, and
    weights whose shapes are not ``(C, C)`` / ``(C,)``.
    """
    if not isinstance(source, NumpyMultiHeadAttention):
        raise TypeError(f"from_numpy takes the NumPy mha.MultiHeadAttention; got "
                        f"{_class_name(source)}.")
    dtype = np.dtype(source.dtype)
    if dtype not in _NP_TO_TORCH:
        raise TypeError(f"from_numpy copies float32 or float64 weights; got {dtype}.")
    c = source.d_model
    ws = [np.asarray(getattr(source, f"w_{s}")) for s in "qkvo"]
    bs = [getattr(source, f"b_{s}") for s in "qkvo"]
    has_bias = {b is not None for b in bs}
    if len(has_bias) != 1:
        raise ValueError("the NumPy module has biases on some projections only; our module has "
                         "a bias on all four projections or none.")
    bias = has_bias.pop()
    for s, w, b in zip("qkvo", ws, bs, strict=True):
        if w.shape != (c, c) or (b is not None and np.shape(b) != (c,)):
            raise ValueError(f"w_{s} must be (C, C) = {(c, c)} and b_{s} (C,); got "
                             f"{w.shape} and {None if b is None else np.shape(b)}.")
    target = MultiHeadAttention(c, source.n_heads, bias=bias, packed_qkv=packed_qkv, impl=impl,
                                device=device, dtype=_NP_TO_TORCH[dtype])
    pairs = (*target.in_projections(), (target.out_proj.weight, target.out_proj.bias))
    with torch.no_grad():
        for (w, b), w_np, b_np in zip(pairs, ws, bs, strict=True):
            w.copy_(torch.from_numpy(np.ascontiguousarray(w_np.T, dtype=dtype)))
            if b is not None:
                b.copy_(torch.from_numpy(np.asarray(b_np, dtype=dtype)))
    return target


def to_nn_multihead_masks(mask, n_heads: int, batch_size: int | None = None,
                          tgt_len: int | None = None):
    """Package mask -> ``(attn_mask, key_padding_mask)`` for ``nn.MultiheadAttention``.

    ``nn.MultiheadAttention`` reads bool masks as True = not allowed, like the
    package, so no value is inverted; only shapes change. It accepts
    ``attn_mask`` as exactly ``(Tq, Tk)`` or ``(B * H, Tq, Tk)`` (batch-major:
    row ``b * H + h``), and ``key_padding_mask`` as ``(B, Tk)``. ``mask`` is
    ``(Tq, Tk)`` or ``(B|1, H|1, Tq|1, Tk)``:

    * ``(Tq, Tk)`` or ``(1, 1, Tq, Tk)`` -> ``((Tq, Tk), None)``;
    * ``(B, 1, 1, Tk)`` (key padding) -> ``(None, (B, Tk))``;
    * anything else -> ``((B * H, Tq, Tk), None)``.

    ``batch_size`` / ``tgt_len`` expand axes of size 1 that ``nn.MultiheadAttention``
    will not broadcast. Returns bool tensors. Refuses a non-bool mask
    (``DTypeError``, a ``TypeError``), ``n_heads``, ``batch_size`` or ``tgt_len``
    that is not a positive int, other ranks or a head axis that is neither 1 nor ``n_heads``,
    axes that cannot expand, and fully masked rows (``ValueError``:
    ``nn.MultiheadAttention`` would return NaN for them).
    """
    n_heads = check_positive_int(n_heads, "n_heads")
    batch_size = None if batch_size is None else check_positive_int(batch_size, "batch_size")
    tgt_len = None if tgt_len is None else check_positive_int(tgt_len, "tgt_len")
    m = check_torch_mask(mask, tuple(np.shape(mask)), "mask")
    if m.ndim == 2:
        t_q = tgt_len or m.shape[0]
        return _expand(m, (t_q, m.shape[1])), None
    if m.ndim != 4:
        raise ValueError(f"mask must be (Tq, Tk) or (B, H, Tq, Tk) with 1 for broadcast axes; "
                         f"got shape {tuple(m.shape)}.")
    b, h, t_q, t_k = m.shape
    if h not in (1, n_heads):
        raise ValueError(f"the mask's head axis is {h}; it must be 1 or n_heads={n_heads}.")
    b_out, t_out = batch_size or b, tgt_len or t_q
    if b == 1 and h == 1:
        return _expand(m[0, 0], (t_out, t_k)), None
    if h == 1 and t_q == 1:
        return None, _expand(m[:, 0, 0, :], (b_out, t_k))
    full = _expand(m, (b_out, n_heads, t_out, t_k))
    return full.reshape(b_out * n_heads, t_out, t_k), None


def _expand(m: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    try:
        return m.expand(shape)
    except RuntimeError:
        raise ValueError(f"mask of shape {tuple(m.shape)} cannot expand to {shape} (batch_size / "
                         "tgt_len must match the mask's axes or replace axes of size 1).") from None


def sdpa_attention(q, k, v, mask=None, dropout_p: float = 0.0, *, is_causal: bool = False,
                   scale: float | None = None):
    """``F.scaled_dot_product_attention`` called with a package-convention mask.

    Shapes: ``q (..., Tq, dh)``, ``k (..., Tk, dh)``, ``v (..., Tk, dv)``, e.g.
    ``(B, H, T, dh)``; returns ``(..., Tq, dv)``. Scale ``1/sqrt(dh)`` unless
    ``scale`` (a number >= 0) is given.
    ``mask`` is bool, **True = blocked**, broadcastable to ``(..., Tq, Tk)``
    (a ``(Tk,)`` mask blocks the same keys for every query, as in
    :func:`mha.attention`); it
    is inverted with :func:`mha.masks.to_sdpa` because SDPA's bool mask means
    True = allowed. q, k, v must be floating tensors of one dtype, which the
    output keeps. ``dropout_p`` is applied as given: SDPA is a function and
    knows nothing of ``train()`` / ``eval()``.

    ``is_causal=True`` blocks the future with the queries as the *last* ``Tq``
    key positions (aligned lower-right, as :func:`mha.attention`; the KV cache's
    meaning). With ``Tq == Tk`` and no ``mask`` it is passed to SDPA as its own
    ``is_causal=True`` (fused kernels, no mask tensor); otherwise it becomes an
    explicit lower-right mask, combined with ``mask``, because SDPA's own flag
    aligns upper-left when ``Tq != Tk``.

    Refuses: q, k, v that are not floating tensors of one dtype, or a
    non-boolean mask (``DTypeError``, both a ``TypeError`` and a ``ValueError``;
    the mask in :func:`mha.attention`'s words); mismatched widths, lengths or
    leading dims, ``Tk = 0`` or ``dh = 0`` (SDPA returns zeros or averages V for them), a
    ``dropout_p`` outside ``[0, 1)``, a bad ``scale``, ``is_causal`` with
    ``Tq > Tk``, a mask that does not broadcast, and a fully masked row
    (``ValueError``; SDPA would return NaN or zeros for it, depending on the
    kernel, instead of an error). NaN or +-inf in q, k or v, and scores that
    overflow the dtype, are refused in :func:`mha.attention`'s words
    (``ValueError``; SDPA returns zeros for a NaN query row). The overflow is
    seen in the output, so one that never reaches it (on a blocked key, or a
    score overflowing to -inf beside finite ones) gets through.
    """
    lead = _check_qkv(q, k, v)
    check_dropout(dropout_p, "dropout_p")
    is_causal = check_flag(is_causal, "is_causal")
    if scale is not None:
        scale = check_scale(scale)
    t_q, t_k = q.shape[-2], k.shape[-2]
    if is_causal and mask is None and t_q == t_k:
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True,
                                             scale=scale)
        return _refuse_overflow(out, q, k, v, scale)
    attn_mask = None
    if mask is not None or is_causal:
        shape = (*lead, t_q, t_k)
        blocked = None
        if mask is not None:
            blocked = check_torch_mask(mask, shape, device=q.device, check_rows=not is_causal)
            if blocked.ndim < 2:  # (Tk,) or 0-d: as mha.attention, one row for every query
                blocked = blocked.expand(t_q, t_k)  # SDPA itself wants at least (Tq, Tk)
        if is_causal:
            causal = causal_mask_torch(t_q, t_k, q.device)  # (Tq, Tk), lower-right
            blocked = causal if blocked is None else check_torch_mask(
                blocked | causal, shape, "mask combined with is_causal")
        attn_mask = masks.to_sdpa(blocked)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                                         scale=scale)
    return _refuse_overflow(out, q, k, v, scale)


def _refuse_overflow(out, q, k, v, scale):
    """``out``, unless it is not finite: then refuse the overflowing scores by name."""
    if not all_finite(out):  # the inputs are finite, so the scores overflowed
        refuse_nonfinite_attention(q, k, v, q.shape[-1] ** -0.5 if scale is None else scale)
    return out


def _check_qkv(q, k, v) -> torch.Size:
    """Refuse unusable q, k, v; return their broadcast leading dims."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.ndim < 2:
            # A tensor of the wrong dtype is a DTypeError (a TypeError, as before, too).
            error = DTypeError if isinstance(t, torch.Tensor) and t.ndim >= 2 else TypeError
            raise error(f"{name} must be a floating tensor (..., T, d); got {_describe(t)}.")
        check_device(t, name, q.device)
        check_finite(t, name)
    if not q.dtype == k.dtype == v.dtype:
        raise DTypeError(f"q, k, v must share one dtype; got {q.dtype}, {k.dtype}, {v.dtype}.")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the width dh: q {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}.")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same Tk: k {tuple(k.shape)}, v {tuple(v.shape)}.")
    check_has_features(q.shape, k.shape)
    check_has_keys(k.shape, "k")
    try:
        return torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the leading (batch/head) dims do not broadcast: q {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}.") from None


def _describe(t) -> str:
    if isinstance(t, torch.Tensor):
        return f"{t.dtype} tensor of shape {tuple(t.shape)}"
    return type(t).__name__


def _class_name(obj) -> str:
    """``mha.multihead.MultiHeadAttention``: the NumPy class and the torch module share a name."""
    return f"{type(obj).__module__}.{type(obj).__qualname__}"
