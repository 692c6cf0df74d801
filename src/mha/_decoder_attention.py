"""The decoder's attention: grouped-query heads, and masks from absolute positions.

:func:`gqa_attention` lets ``H`` query heads share ``H_kv`` K/V heads (each K/V
head serves ``H // H_kv`` consecutive query heads, :func:`repeat_kv`);
:func:`attention_mask` builds the decoder's mask (bool, **True = blocked**) from
the positions a :class:`mha.kv_cache.KVCache` records. :mod:`mha.decoder` uses
both and re-exports them; import them from there.

Where the mask stops following the positions: one new query (``Tq == 1``) with
no padding and no window gets no mask and reads every cached key, whatever
position it is given. The cache order is the sequence order (a decode step's
keys all came before it), as in libraries that mask by cache slot; explicit
positions then change only the rotation. That is lesson 08's "positions
restarting at 0" bug, which runs without an error. With ``Tq > 1`` the mask
does block keys whose position is after the query's.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from . import masks
from ._checks import (
    DTypeError,
    all_finite,
    check_device,
    check_finite,
    check_has_features,
    check_has_keys,
    check_positive_int,
    refuse_nonfinite_attention,
)
from .layers import _check_scores_memory, check_torch_mask

__all__ = ["attention_mask", "gqa_attention", "repeat_kv"]

_IMPLS = ("manual", "sdpa")


def repeat_kv(x, n_rep: int):
    """``(B, H_kv, T, dh)`` -> ``(B, H_kv * n_rep, T, dh)``, each head repeated in place.

    ``repeat_interleave`` gives heads ``[0, 0, 1, 1]`` for ``n_rep = 2``: query
    head ``h`` reads K/V head ``h // n_rep``, as SDPA's ``enable_gqa=True`` does.
    ``x.repeat(1, n_rep, 1, 1)`` would give ``[0, 1, 0, 1]``: the right shape,
    the wrong heads, no error. Refuses ``n_rep`` not a positive int and ``x`` not 4-D.
    """
    n_rep = _check_repeat(x, n_rep)
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


def _check_repeat(x, n_rep) -> int:
    """``n_rep`` as an int >= 1 (0 would return no head at all); ``x`` a 4-D tensor."""
    n_rep = check_positive_int(n_rep, "n_rep")
    if not isinstance(x, torch.Tensor) or x.ndim != 4:
        raise ValueError(f"repeat_kv takes x as a tensor (B, H_kv, T, dh); got "
                         f"{tuple(getattr(x, 'shape', ())) or type(x).__name__}.")
    return n_rep


def gqa_attention(q, k, v, mask=None, impl: str = "manual"):
    """Grouped-query attention: ``q (B, H, Tq, dh)``, ``k, v (B, H_kv, Tk, dh)`` -> ``q``'s shape.

    ``H`` must be a multiple of ``H_kv``. ``mask`` is bool, True = blocked,
    broadcastable to ``(B, H, Tq, Tk)``, or None. ``impl="manual"`` repeats the
    K/V heads with :func:`repeat_kv` and writes softmax attention out;
    ``impl="sdpa"`` calls ``F.scaled_dot_product_attention(..., enable_gqa=True)``
    with the mask converted by :func:`mha.masks.to_sdpa`. q, k, v share one
    floating dtype, which the output keeps. Scale ``1/sqrt(dh)``.

    Refuses ``H`` not a multiple of ``H_kv``, mismatched batch, width or dtype,
    no key (``Tk = 0``), no feature (``dh = 0``), no head (``H`` or ``H_kv = 0``),
    an unknown ``impl``, the masks :func:`mha.layers.check_torch_mask`
    refuses (non-bool, not broadcastable, a fully masked row), and NaN or +-inf
    in q, k, v or in the scores (overflow), in :func:`mha.attention`'s words,
    q, k, v on different devices or the meta device, and (manual path) scores
    larger than the machine's memory (``TooLargeError``, naming the size).
    The manual path checks the scores before the mask; the SDPA path sees an
    overflow only in its output, so one on a blocked key gets through.
    """
    if impl not in _IMPLS:
        raise ValueError(f"impl must be one of {_IMPLS}; got {impl!r}.")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.ndim != 4:
            raise TypeError(f"{name} must be a floating tensor (B, H, T, dh); got "
                            f"{getattr(t, 'dtype', type(t).__name__)} "
                            f"{tuple(getattr(t, 'shape', ()))}.")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k, v must share one dtype; got {q.dtype}, {k.dtype}, {v.dtype}.")
    (b, h, t_q, dh), (bk, h_kv, t_k, dhk) = q.shape, k.shape
    if k.shape != v.shape or bk != b or dhk != dh:
        raise ValueError(f"q (B, H, Tq, dh) and k, v (B, H_kv, Tk, dh) must share B and dh; got "
                         f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}.")
    check_has_features(q.shape, k.shape)
    check_has_keys(k.shape, "k")
    if h == 0 or h_kv == 0:
        raise ValueError(f"q and k, v need at least one head; got H={h} and H_kv={h_kv} "
                         f"(q {tuple(q.shape)}, k {tuple(k.shape)}).")
    if h % h_kv:
        raise ValueError(f"n_heads={h} is not a multiple of n_kv_heads={h_kv}: every K/V head "
                         "must serve the same number of query heads.")
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_device(t, name, q.device)
        check_finite(t, name)  # mha.attention's words; one sum when finite
    if mask is not None:
        mask = check_torch_mask(mask, (b, h, t_q, t_k), "mask", q.device)
    if impl == "sdpa":
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None if mask is None else masks.to_sdpa(mask),
            enable_gqa=h != h_kv)
        if not all_finite(out):  # finite inputs: the scores overflowed
            refuse_nonfinite_attention(q, repeat_kv(k, h // h_kv), repeat_kv(v, h // h_kv),
                                       1 / math.sqrt(dh))
        return out
    _check_scores_memory((b, h, t_q, t_k), q.dtype, q.element_size())  # before repeat_kv
    k, v = repeat_kv(k, h // h_kv), repeat_kv(v, h // h_kv)  # (B, H, Tk, dh)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(dh)  # (B, H, Tq, Tk)
    if not all_finite(scores):  # before the mask, as mha.attention checks
        refuse_nonfinite_attention(q, k, v, 1 / math.sqrt(dh))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(dim=-1) @ v  # (B, H, Tq, dh)


def attention_mask(query_positions, key_positions, key_padding=None, window=None):
    """The decoder's mask ``(B, 1, Tq, Tk)`` bool (True = blocked), or None if it blocks nothing.

    ``query_positions (B, Tq)`` and ``key_positions (B, Tk)`` are absolute
    positions (long); the new queries are the last ``Tq`` of the ``Tk`` keys.
    Key ``j`` is blocked for query ``i`` when ``key_pos[j] > query_pos[i]`` (the
    future, :func:`mha.masks.mask_from_positions`), when it is ``window`` or
    more positions back, or when ``key_padding[:, j]`` (B, Tk) is True. A
    query that is padding itself reads only its own key (its output is never
    used; this keeps its row from being fully masked).

    One query (``Tq == 1``) with no padding and no window returns None without
    building anything: the newest token may read every cached key. Refuses
    positions or padding of another kind or shape, and ``Tq > Tk``.
    """
    b, t_q, t_k = _check_positions(query_positions, key_positions, key_padding)
    padded = key_padding is not None and bool(key_padding.any())
    if t_q == 1 and not padded and window is None:
        return None
    qp, kp = query_positions.cpu().numpy(), key_positions.cpu().numpy()
    rows = [masks.mask_from_positions(qp[i], kp[i], window=window) for i in range(b)]
    rows = np.stack(rows) if rows else np.zeros((0, t_q, t_k), dtype=bool)  # B = 0: no row
    blocked = torch.from_numpy(rows).to(query_positions.device)  # (B, Tq, Tk)
    if padded:
        blocked |= key_padding[:, None, :]
        own = torch.arange(t_q, device=blocked.device) + (t_k - t_q)  # each query's own key slot
        query_pad = key_padding[:, t_k - t_q:]  # (B, Tq)
        self_only = torch.ones_like(blocked).scatter_(
            2, own.expand(b, t_q)[..., None], False)  # (B, Tq, Tk): False on the own slot
        blocked = torch.where(query_pad[..., None], self_only, blocked)
    return blocked[:, None] if bool(blocked.any()) else None


def _check_positions(query_positions, key_positions, key_padding) -> tuple[int, int, int]:
    """``(B, Tq, Tk)`` of :func:`attention_mask`'s arguments, refusing positions that are
    not integer ``(B, T)`` tensors of one ``B``, ``Tq > Tk`` (the queries are the last
    ``Tq`` keys) and a ``key_padding`` that is not a bool ``(B, Tk)`` tensor."""
    for name, p in (("query_positions", query_positions), ("key_positions", key_positions)):
        if not isinstance(p, torch.Tensor) or p.dtype.is_floating_point or \
                p.dtype.is_complex or p.dtype == torch.bool:
            raise DTypeError(f"{name} must be an integer tensor (B, T) of absolute positions; "
                             f"got {getattr(p, 'dtype', type(p).__name__)}.")
        if p.ndim != 2:
            raise ValueError(f"{name} must be (B, T), one row of absolute positions per "
                             f"sequence; got shape {tuple(p.shape)}.")
    b, t_q = query_positions.shape
    t_k = key_positions.shape[1]
    if key_positions.shape[0] != b:
        raise ValueError(f"query_positions {tuple(query_positions.shape)} and key_positions "
                         f"{tuple(key_positions.shape)} must share the batch B (B, T).")
    if t_q > t_k:
        raise ValueError(f"{t_q} queries over {t_k} keys: the new queries are the last Tq of "
                         "the Tk keys (the cache holds them too), so Tq <= Tk.")
    if key_padding is not None:
        if not isinstance(key_padding, torch.Tensor) or key_padding.dtype != torch.bool:
            raise DTypeError(f"key_padding must be a bool tensor (B, Tk), True = padding; got "
                             f"{getattr(key_padding, 'dtype', type(key_padding).__name__)}.")
        if tuple(key_padding.shape) != (b, t_k):
            raise ValueError(f"key_padding must be (B, Tk) = {(b, t_k)}, one flag per key; got "
                             f"shape {tuple(key_padding.shape)}.")
    return b, t_q, t_k
