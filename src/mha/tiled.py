"""Tiled attention with an online softmax (the FlashAttention idea), in NumPy.

The plain path (:func:`mha.attention`) builds the whole ``(..., Tq, Tk)``
score matrix. This module never does: it walks over tiles of
``block_q`` queries by ``block_k`` keys and keeps, per query row, only a
running maximum ``m``, a running sum ``l`` of ``exp(s - m)`` and a running
weighted sum of values. When a new tile raises a row's maximum from ``m``
to ``m'``, the old sum and the old weighted sum are multiplied by
``exp(m - m')``: that is the *online softmax*. Extra memory is a few tiles
plus ``O(Tq)`` per row, so it grows linearly in ``T``, not quadratically.

The forward returns the output and the per-row log-sum-exp
``lse = m + log(l)``; that is all the backward (:func:`tiled_attention_backward`)
keeps. It recomputes each tile's weights as ``exp(s - lse)``.

Causal masking (``is_causal=True``) is aligned to the lower right, the KV
cache's meaning: with ``Tq`` queries and ``Tk`` keys, query ``i`` sits at
position ``i + Tk - Tq`` and sees the keys at or before it. Tiles entirely
above that diagonal are skipped without computing a score, and so are tiles
that an explicit ``mask`` blocks entirely (a sliding window skips most tiles).

Shapes, the dtype rule and the refusals follow :func:`mha.attention`. The tile
plan, one tile's scores and the argument checks are written in :mod:`mha._tiles`
and imported from here.
"""

from __future__ import annotations

import tracemalloc
from typing import NamedTuple

import numpy as np
from threadpoolctl import ThreadpoolController

from ._checks import as_float_array, first_index
from ._mask_checks import fully_masked_row_message
from ._tiles import (
    BLOCK_K,
    BLOCK_Q,
    FULL,
    MAX_TILES,
    PARTIAL,
    SKIPPED,
    _blocked,
    _prepare,
    _starts,
    _tile_scores,
    tile_plan,
)
from .backward import _unbroadcast

__all__ = [
    "MAX_TILES",
    "SKIPPED",
    "FULL",
    "PARTIAL",
    "TiledGrads",
    "TiledOutput",
    "peak_traced_bytes",
    "tile_plan",
    "tiled_attention",
    "tiled_attention_backward",
]

# The tile products are small. Split across BLAS threads they ran 10 to 40 times slower
# than on one thread on a shared 2-core machine (benchmarks/tiled_memory.py), so the
# loops run with one BLAS thread; other NumPy code keeps its threads.
_BLAS = ThreadpoolController()


class TiledOutput(NamedTuple):
    """What the tiled forward returns, and all its backward needs besides q, k, v."""

    out: np.ndarray  # (..., Tq, dv)
    lse: np.ndarray  # (..., Tq), log sum_j exp(s_ij) over the allowed keys


class TiledGrads(NamedTuple):
    """Gradients of a loss through :func:`tiled_attention`, one per input."""

    dq: np.ndarray  # (..., Tq, d_k)
    dk: np.ndarray  # (..., Tk, d_k)
    dv: np.ndarray  # (..., Tk, dv)


def tiled_attention(q, k, v, mask=None, *, is_causal: bool = False, scale: float | None = None,
                    block_q: int = BLOCK_Q, block_k: int = BLOCK_K,
                    max_tiles: int = MAX_TILES) -> TiledOutput:
    """Attention ``softmax(q k^T * scale) v`` tile by tile, never building ``(Tq, Tk)``.

    Shapes: ``q (..., Tq, d_k)``, ``k (..., Tk, d_k)``, ``v (..., Tk, dv)``, the
    leading dims broadcast (e.g. ``(B, H)``). Returns ``TiledOutput(out, lse)``
    with ``out (..., Tq, dv)``, equal to ``mha.attention(...)[0]``, and the
    per-row log-sum-exp ``lse (..., Tq)``. ``mask`` (bool, True = blocked,
    broadcastable to ``(..., Tq, Tk)``) and ``is_causal`` (lower-right aligned)
    may be combined; ``scale`` defaults to ``1 / sqrt(d_k)``. ``block_q`` and
    ``block_k`` set the tile; they change the rounding, not the result.

    Dtype rule: as :func:`mha.attention`, ``np.result_type(q, k, v, float32)``.

    Refuses what :func:`mha.attention` refuses, with the same words (among them
    ``is_causal`` with ``Tq > Tk`` or not a bool, a query that ``mask`` and
    ``is_causal`` together leave without a key, and a score that overflows even
    where it is blocked, in a tile that is skipped), a tile side that is not
    an integer >= 1, and more than ``max_tiles`` tiles (:func:`tile_plan`).
    """
    q, k, v, lead, tq, tk, scale, mask, block_q, block_k, is_causal, plan = _prepare(
        q, k, v, mask, is_causal, scale, block_q, block_k, max_tiles)
    offset = tk - tq
    out = np.empty(lead + (tq, v.shape[-1]), dtype=q.dtype)
    lse = np.empty(lead + (tq,), dtype=q.dtype)
    keyless = np.zeros(lead + (tq,), dtype=bool)
    with _BLAS.limit(limits=1, user_api="blas"):  # small products: one BLAS thread
        for a, i0 in enumerate(_starts(tq, block_q)):
            i1 = min(i0 + block_q, tq)
            q_tile = q[..., i0:i1, :]
            m = np.full(lead + (i1 - i0,), -np.inf, dtype=q.dtype)  # running row max
            row_sum = np.zeros_like(m)  # running sum of exp(s - m)
            acc = np.zeros(lead + (i1 - i0, v.shape[-1]), dtype=q.dtype)  # running sum of p v
            for b, j0 in enumerate(_starts(tk, block_k)):
                if plan[a, b] == SKIPPED:
                    continue
                j1 = min(j0 + block_k, tk)
                s = _tile_scores(q_tile, k[..., j0:j1, :], scale,
                                 _blocked(i0, i1, j0, j1, offset, is_causal, mask), i0, j0)
                m_new = np.maximum(m, s.max(axis=-1))
                m_safe = np.where(np.isneginf(m_new), 0.0, m_new)  # a row with no key yet
                p = np.exp(s - m_safe[..., None])  # (..., bq, bk); blocked -> exactly 0
                rescale = np.exp(m - m_safe)  # exp(m - m'): 0 for a row's first key
                row_sum = row_sum * rescale + p.sum(axis=-1)
                acc = acc * rescale[..., None] + p @ v[..., j0:j1, :]
                m = m_new
            keyless[..., i0:i1] = row_sum == 0  # mask and is_causal together left no key
            with np.errstate(divide="ignore", invalid="ignore"):  # keyless: refused below
                out[..., i0:i1, :] = acc / row_sum[..., None]
                lse[..., i0:i1] = m + np.log(row_sum)
    if np.any(keyless):
        raise ValueError(fully_masked_row_message(first_index(keyless),
                                                  "the mask combined with is_causal"))
    return TiledOutput(out, lse)


def tiled_attention_backward(q, k, v, out, lse, d_out, mask=None, *, is_causal: bool = False,
                             scale: float | None = None, block_q: int = BLOCK_Q,
                             block_k: int = BLOCK_K, max_tiles: int = MAX_TILES) -> TiledGrads:
    """Backward of :func:`tiled_attention` by recomputation, tile by tile.

    Keeps from the forward only ``out (..., Tq, dv)`` and ``lse (..., Tq)``.
    Per tile it recomputes the scores ``S``, the weights ``P = exp(S - lse)``
    (exactly the forward's softmax), and with ``G = d_out`` and the row term
    ``D = rowsum(G * out)`` (equal to ``rowsum(P * dP)``, see lesson 09):

    * ``dV += P^T G``,  ``dP = G V^T``,  ``dS = P * (dP - D)``
    * ``dQ += dS K * scale``,  ``dK += dS^T Q * scale``

    Returns ``TiledGrads(dq, dk, dv)``, equal to ``mha.attention_backward``'s;
    a broadcast input gets its gradient summed back to its shape. Arguments
    ``mask``, ``is_causal``, ``scale`` and the tile sides must be the forward's
    (the tiles may differ: the result does not depend on them).

    Dtype rule: as the forward; ``out``, ``lse`` and ``d_out`` are cast to it.
    Refuses what the forward refuses, and ``out``, ``lse`` or ``d_out`` that
    are not real and finite or whose shapes are not ``(..., Tq, dv)`` and
    ``(..., Tq)``. A query that ``mask`` and ``is_causal`` together leave
    without a key is refused in the forward's words, before any gradient.
    """
    q, k, v, lead, tq, tk, scale, mask, block_q, block_k, is_causal, plan = _prepare(
        q, k, v, mask, is_causal, scale, block_q, block_k, max_tiles)
    if is_causal and mask is not None:  # rows not checked by _prepare: look tile by tile
        _refuse_keyless_rows(lead, tq, tk, block_q, block_k, mask, plan)
    out_shape = lead + (tq, v.shape[-1])
    arrays = {}
    for name, x, shape in (("out", out, out_shape), ("lse", lse, lead + (tq,)),
                           ("d_out", d_out, out_shape)):
        x = as_float_array(x, name)
        if x.shape != shape:
            raise ValueError(
                f"{name} has shape {x.shape} but must be {shape}: "
                + ("(..., Tq), one log-sum-exp per query, as the forward returned."
                   if name == "lse" else "(..., Tq, dv), the attention output's shape.")
            )
        arrays[name] = x.astype(q.dtype, copy=False)
    out, lse, g = arrays["out"], arrays["lse"], arrays["d_out"]
    offset = tk - tq
    d_row = np.sum(g * out, axis=-1)  # D = rowsum(dO * O), (..., Tq)
    dq = np.zeros(lead + q.shape[-2:], dtype=q.dtype)
    dk = np.zeros(lead + k.shape[-2:], dtype=q.dtype)
    dv = np.zeros(lead + v.shape[-2:], dtype=q.dtype)
    with _BLAS.limit(limits=1, user_api="blas"):  # small products: one BLAS thread
        for b, j0 in enumerate(_starts(tk, block_k)):
            j1 = min(j0 + block_k, tk)
            k_tile, v_tile = k[..., j0:j1, :], v[..., j0:j1, :]
            for a, i0 in enumerate(_starts(tq, block_q)):
                if plan[a, b] == SKIPPED:
                    continue
                i1 = min(i0 + block_q, tq)
                q_tile, g_tile = q[..., i0:i1, :], g[..., i0:i1, :]
                s = _tile_scores(q_tile, k_tile, scale,
                                 _blocked(i0, i1, j0, j1, offset, is_causal, mask), i0, j0)
                p = np.exp(s - lse[..., i0:i1, None])  # (..., bq, bk), the forward's weights
                dv[..., j0:j1, :] += np.swapaxes(p, -1, -2) @ g_tile
                dp = g_tile @ np.swapaxes(v_tile, -1, -2)  # (..., bq, bk)
                ds = p * (dp - d_row[..., i0:i1, None])  # softmax backward with D
                dq[..., i0:i1, :] += (ds @ k_tile) * scale
                dk[..., j0:j1, :] += (np.swapaxes(ds, -1, -2) @ q_tile) * scale
    return TiledGrads(*(grad if grad.shape == x.shape else _unbroadcast(grad, x.shape)
                        for grad, x in ((dq, q), (dk, k), (dv, v))))


def _refuse_keyless_rows(lead, tq, tk, block_q, block_k, mask, plan) -> None:
    """Refuse a query that ``mask`` and the causal mask leave without a key, as the forward.

    Walks the computed tiles' masks only (no score, no ``(Tq, Tk)`` array): a row has
    a key when some computed tile leaves one of its entries open.
    """
    has_key = np.zeros(lead + (tq,), dtype=bool)
    for a, i0 in enumerate(_starts(tq, block_q)):
        i1 = min(i0 + block_q, tq)
        for b, j0 in enumerate(_starts(tk, block_k)):
            if plan[a, b] != SKIPPED:
                blocked = _blocked(i0, i1, j0, min(j0 + block_k, tk), tk - tq, True, mask)
                has_key[..., i0:i1] |= ~np.all(blocked, axis=-1)
    if not np.all(has_key):
        raise ValueError(fully_masked_row_message(first_index(~has_key),
                                                  "the mask combined with is_causal"))


def peak_traced_bytes(fn, *args, **kwargs) -> int:
    """Peak bytes allocated while ``fn(*args, **kwargs)`` runs, its result included.

    Measured with :mod:`tracemalloc`, which sees NumPy's array buffers (and
    Python objects) but not torch's allocations. Memory held before the call
    (the inputs) does not count: this is the call's *extra* memory.
    """
    if not callable(fn):
        raise TypeError(f"peak_traced_bytes runs fn(*args, **kwargs): pass the function, not "
                        f"its result; got {type(fn).__name__}.")
    if tracemalloc.is_tracing():
        raise RuntimeError("peak_traced_bytes needs tracemalloc stopped; it starts its own trace.")
    tracemalloc.start()
    try:
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
