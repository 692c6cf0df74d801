"""The NumPy reference forward pass: softmax, scores, attention.

The backward pass lives in :mod:`mha.backward`.

Everything else in the package (torch modules, widgets, lessons) is checked
against these functions, so they favour clarity and loud refusals over speed.

Conventions used throughout:

* shapes are written ``(..., Tq, d_k)``: any leading batch/head dims, then
  positions, then features;
* a boolean ``mask`` means **True = blocked** (the key may not be read);
* dtype rule: inputs compute in ``np.result_type(x, np.float32)``, and the
  result has that dtype. ``float64`` stays ``float64``, ``float32`` stays
  ``float32``; ``float16``, ``int8``, ``int16``, ``uint8`` and ``uint16``
  compute in ``float32``; ``int32``, ``uint32``, ``int64`` and ``uint64`` in
  ``float64``. When several arrays meet (q, k, v), the widest wins.
* a refused dtype raises ``mha._checks.DTypeError``, which is both a
  ``TypeError`` and a ``ValueError``; every other refusal is a ``ValueError``.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    as_array,
    as_float_array,
    check_flag,
    check_has_features,
    check_has_keys,
    check_real_dtype,
    check_scale,
    check_scores_memory,
    first_index,
    to_float_exact,
)
from ._mask_checks import check_causal_lengths, check_mask
from .masks import causal_mask

__all__ = [
    "softmax",
    "attention",
    "scores",
]


def _normalize_axis(axis, ndim: int, who: str) -> int:
    if ndim == 0:
        raise ValueError(f"{who} needs at least one axis; got a 0-d scalar.")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"{who}: axis must be an int; got {axis!r}.")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{who}: axis {axis} is out of range for an array with {ndim} dims.")
    return int(axis) % ndim


def softmax(logits, axis: int = -1) -> np.ndarray:
    """Stable softmax along ``axis``: ``exp(s - max s) / sum exp(s - max s)``.

    Shapes: any ``(..., n, ...)`` in, the same shape out; every slice along
    ``axis`` sums to 1.

    Subtracting the row maximum first changes nothing mathematically
    (softmax is shift invariant) but keeps ``exp`` from overflowing:
    ``softmax([1000, 1000])`` is ``[0.5, 0.5]``.

    ``-inf`` is allowed and means "masked": it gets weight exactly 0.

    Dtype rule: the result is ``np.result_type(logits, float32)``: float64 and
    float32 are kept, float16 and 8/16-bit integers give float32, 32/64-bit
    integers give float64.

    Refuses:
      * non-real dtypes: bool (it looks like a mask), complex, object,
        strings (``DTypeError``, both a ``TypeError`` and a ``ValueError``);
      * a NumPy masked array (its mask would be ignored) and a torch tensor
        NumPy cannot read, e.g. bfloat16 (``DTypeError``);
      * a 0-d input, an ``axis`` out of range, an empty axis (``ValueError``);
      * integer logits that the computation dtype cannot hold exactly
        (past ``2**53`` for int64) (``ValueError``);
      * NaN or ``+inf`` anywhere (``ValueError``);
      * a row whose entries are all ``-inf``: every key of that row is
        masked, so there is no weight to share out (``ValueError``).
    """
    values = as_array(logits, "logits")
    check_real_dtype(values, "logits")
    axis = _normalize_axis(axis, values.ndim, "softmax")
    if values.shape[axis] == 0:
        raise ValueError(f"softmax over an empty axis (shape {values.shape}, axis={axis}).")

    computed = to_float_exact(values, "logits")
    if np.any(np.isnan(computed)):
        raise ValueError(f"logits contain NaN (first at index {first_index(np.isnan(computed))}).")
    if np.any(np.isposinf(computed)):
        raise ValueError(
            f"logits contain +inf (first at index {first_index(np.isposinf(computed))}); "
            "only -inf is allowed, and it means 'masked'."
        )
    fully_masked = np.all(np.isneginf(computed), axis=axis)
    if np.any(fully_masked):
        where = f"row index {first_index(fully_masked)}" if fully_masked.ndim else "the only row"
        raise ValueError(
            f"fully masked row: every logit is -inf in {where}; "
            "each row needs at least one allowed position."
        )

    # Finite logits far apart (e.g. -3e38 and 3e38 in float32) overflow the
    # subtraction to -inf; exp(-inf) = 0 is then the right weight.
    with np.errstate(over="ignore"):
        shifted = computed - np.max(computed, axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / np.sum(exps, axis=axis, keepdims=True)


def _check_scale(scale, dtype) -> np.ndarray:
    """``scale`` as a 0-d array of ``dtype``; refuse what is not a finite number >= 0."""
    return np.asarray(check_scale(scale)).astype(dtype)


def scores(q, k, scale: float | None = None) -> np.ndarray:
    """Scaled dot products ``S = q k^T * scale``.

    Shapes: ``q (..., Tq, d_k)``, ``k (..., Tk, d_k)`` -> ``(..., Tq, Tk)``, the
    leading dims broadcast. Row ``i`` is the query at ``i``, column ``j`` the
    key at ``j``.

    ``scale`` defaults to ``1 / sqrt(d_k)`` with ``d_k = q.shape[-1]``, the head
    width (not ``d_model``); pass ``scale=1.0`` for raw dot products.

    Dtype rule: ``np.result_type(q, k, float32)``.

    Refuses (as :func:`attention`): non-real dtypes (``DTypeError``), fewer
    than 2 dims, NaN or inf, integers not exactly representable, ``d_k`` that
    differs between q and k, ``d_k = 0``, ``Tk = 0``, leading dims that do not
    broadcast, a ``scale`` that is not a finite number ``>= 0``, and scores that
    overflow the dtype (inputs too large for, say, float32), and scores that
    would need more memory than the machine has (``TooLargeError``, a
    ``ValueError`` and a ``MemoryError``, naming the size).
    """
    q, k, _ = _check_qkv(q, k, None)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    s = _check_scale(scale, q.dtype)
    check_scores_memory(np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
                        + (q.shape[-2], k.shape[-2]), q.dtype, q.dtype.itemsize, _NO_SCORES)
    with np.errstate(over="ignore", invalid="ignore"):
        out = (q @ np.swapaxes(k, -1, -2)) * s
    bad = ~np.isfinite(out)
    if np.any(bad):
        raise ValueError(
            f"the scores q k^T * scale overflow {out.dtype} (first at index {first_index(bad)}): "
            f"the inputs are too large for {out.dtype}; rescale them or compute in float64."
        )
    return out


def attention(q, k, v, mask=None, scale: float | None = None, is_causal: bool = False):
    """Scaled dot-product attention: ``softmax(q k^T * scale, blocked -> -inf) v``.

    Shapes: ``q (..., Tq, d_k)``, ``k (..., Tk, d_k)``, ``v (..., Tk, dv)``;
    the leading dims broadcast, e.g. ``(B, H)``. ``mask`` is boolean with
    **True = blocked**, broadcastable to ``(..., Tq, Tk)``; blocked scores
    become ``-inf`` *before* the softmax, so blocked keys get weight exactly 0
    and each row still sums to 1. ``scale`` as in :func:`scores`.

    ``is_causal=True`` also blocks the future. The queries are the *last* ``Tq``
    positions of the keys (aligned lower-right, as with a KV cache): query ``i``
    sits at position ``Tk - Tq + i`` and reads keys ``0 .. Tk - Tq + i``. For
    ``Tq == Tk`` that is the usual causal mask; for two new queries over five
    keys, query 0 reads keys 0-3 and query 1 all five. (SDPA's own
    ``is_causal`` aligns upper-left when ``Tq != Tk``; this never does.) It
    combines with ``mask``: a key is blocked if either blocks it.

    Returns ``(output, weights)`` with shapes ``(..., Tq, dv)`` and
    ``(..., Tq, Tk)``.

    Dtype rule: both results are ``np.result_type(q, k, v, float32)``, e.g.
    float32 in gives float32 out, float16 gives float32.

    Refuses non-real inputs and a non-boolean mask (``DTypeError``, a
    ``TypeError``; an int or float mask gets a message naming the convention
    and the explicit conversion), and with ``ValueError`` naming the problem:
    fewer than 2 dims, NaN or inf, integers not exactly representable,
    mismatched ``d_k`` between q and k, ``d_k = 0``, mismatched ``Tk`` between k
    and v, ``Tk = 0``, leading dims that do not broadcast, a bad ``scale``,
    overflowing scores, a mask that does not broadcast, ``is_causal`` with
    ``Tq > Tk`` (the first queries would see no key), and a mask that blocks
    every key of a row.
    """
    q, k, v = _check_qkv(q, k, v)
    s = scores(q, k, scale)  # (..., Tq, Tk)
    if check_flag(is_causal, "is_causal"):
        t_q, t_k = s.shape[-2:]
        check_causal_lengths(t_q, t_k)
        blocked = causal_mask(t_q, t_k=t_k)  # (Tq, Tk), lower-right
        if mask is not None:
            blocked = check_mask(mask, s.shape, check_rows=False) | blocked
        m = check_mask(blocked, s.shape, "the mask combined with is_causal"
                       if mask is not None else "the causal mask")
        s = np.where(m, -np.inf, s)
    elif mask is not None:
        m = check_mask(mask, s.shape)
        s = np.where(m, -np.inf, s)
    weights = softmax(s, axis=-1)  # (..., Tq, Tk), rows sum to 1
    return weights @ v, weights


_NO_SCORES = ("mha.tiled.tiled_attention never builds them (its memory grows linearly in T); "
              "or use shorter sequences.")


def _check_qkv(q, k, v):
    """Validate q, k (and v unless None); return them in one common float dtype."""
    q = as_float_array(q, "q", min_ndim=2)
    k = as_float_array(k, "k", min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share the feature width d_k: q has shape {q.shape} (d_k={q.shape[-1]}), "
            f"k has shape {k.shape} (d_k={k.shape[-1]})."
        )
    check_has_features(q.shape, k.shape)
    check_has_keys(k.shape, "k")
    arrays = [q, k]
    if v is not None:
        v = as_float_array(v, "v", min_ndim=2)
        if k.shape[-2] != v.shape[-2]:
            raise ValueError(
                f"k and v must have the same number of positions Tk: k has shape {k.shape} "
                f"(Tk={k.shape[-2]}), v has shape {v.shape} (Tk={v.shape[-2]})."
            )
        arrays.append(v)
    try:
        np.broadcast_shapes(*(a.shape[:-2] for a in arrays))
    except ValueError:
        names = ", ".join(f"{n} {a.shape}" for n, a in zip("qkv", arrays, strict=False))
        raise ValueError(f"the leading (batch/head) dims do not broadcast: {names}.") from None
    dtype = np.result_type(*arrays)
    q, k = q.astype(dtype, copy=False), k.astype(dtype, copy=False)
    if v is not None:
        v = v.astype(dtype, copy=False)
    return q, k, v
