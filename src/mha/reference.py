"""The NumPy reference: softmax, its backward, attention, and its backward.

Everything else in the package (torch modules, widgets, lessons) is checked
against these functions, so they favour clarity and loud refusals over speed.

Conventions used throughout:

* shapes are written ``(..., Tq, dk)``: any leading batch/head dims, then
  positions, then features;
* a boolean ``mask`` means **True = blocked** (the key may not be read);
* results are floating point: ``float64`` stays ``float64``, ``float32``
  stays ``float32``, ``float16`` and small integers compute in ``float32``,
  larger integers in ``float64`` (``np.result_type(x, np.float32)``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import as_float_array, check_mask, first_index

__all__ = [
    "softmax",
    "softmax_backward",
    "attention",
    "attention_backward",
    "AttentionGrads",
    "scores",
]


def softmax(logits, axis: int = -1) -> np.ndarray:
    """Stable softmax along ``axis``.

    Subtracting the row maximum first changes nothing mathematically
    (softmax is shift invariant) but keeps ``exp`` from overflowing:
    ``softmax([1000, 1000])`` is ``[0.5, 0.5]``.

    ``-inf`` is allowed and means "masked": it gets weight exactly 0.

    Refuses (``ValueError`` naming the rule):
      * non-real dtypes (complex, bool, object, strings);
      * NaN or ``+inf`` anywhere;
      * a row whose entries are all ``-inf`` (a fully masked row has no
        valid denominator: there is nothing to normalise over);
      * integer logits that the computation dtype cannot hold exactly;
      * an empty axis.
    """
    values = np.asarray(logits)
    if values.dtype == bool:
        raise ValueError(
            "softmax got boolean logits; a boolean array looks like a mask. "
            "Turn it into scores first (e.g. np.where(mask, -np.inf, scores))."
        )
    if values.dtype.kind not in "iuf":
        raise ValueError(
            f"softmax needs real-valued logits (integer or floating); got dtype {values.dtype}."
        )
    if values.ndim == 0:
        raise ValueError("softmax needs at least one axis; got a 0-d scalar.")
    if values.shape[axis] == 0:
        raise ValueError(f"softmax over an empty axis (shape {values.shape}, axis={axis}).")

    computed = values.astype(np.result_type(values.dtype, np.float32), copy=False)
    if values.dtype.kind in "iu":
        # float32 holds every integer only up to 2**24, float64 up to 2**53;
        # past that, compare exactly with Python ints (only those few entries).
        limit = 2.0 ** (np.finfo(computed.dtype).nmant + 1)
        lost = np.abs(values.astype(np.float64)) >= limit
        for index in zip(*np.nonzero(lost)):
            lost[index] = int(computed[index]) != int(values[index])
        if np.any(lost):
            where = first_index(lost)
            raise ValueError(
                f"integer logit {values[where]} at index {where} cannot be held exactly in "
                f"{computed.dtype}; convert the logits to float yourself if rounding is acceptable."
            )

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

    shifted = computed - np.max(computed, axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / np.sum(exps, axis=axis, keepdims=True)


def softmax_backward(probs, upstream, axis: int = -1) -> np.ndarray:
    """Gradient of a loss with respect to the logits of a softmax.

    ``probs`` is the softmax output ``p`` and ``upstream`` is ``dL/dp`` (same
    shape). The Jacobian is ``diag(p) - p p^T``; applied to ``g`` it gives the
    vector form ``p * (g - sum(p * g))``. A constant ``g`` therefore gives 0.

    Refuses shapes that differ, non-real dtypes, and ``probs`` whose rows do
    not sum to 1 (the classic slip of passing logits instead of probabilities).
    """
    p = as_float_array(probs, "probs")
    g = as_float_array(upstream, "upstream")
    if p.shape != g.shape:
        raise ValueError(f"probs has shape {p.shape} but upstream has shape {g.shape}; they must match.")
    if np.any(p < 0):
        raise ValueError("probs has negative entries; pass the softmax output, not the logits.")
    dtype = np.result_type(p, g)
    tol = 1e-6 if dtype == np.float64 else 1e-3
    sums = np.sum(p, axis=axis)
    if not np.allclose(sums, 1.0, atol=tol, rtol=0):
        raise ValueError(
            f"probs rows must sum to 1 along axis {axis} (found {float(sums.flat[0]):.4g} in the "
            "first row); pass the softmax output, not the logits."
        )
    weighted_mean = np.sum(p * g, axis=axis, keepdims=True)
    return (p * (g - weighted_mean)).astype(dtype, copy=False)


def scores(q, k, scale: float | None = None) -> np.ndarray:
    """Scaled dot products ``S = q k^T * scale`` of shape ``(..., Tq, Tk)``.

    ``scale`` defaults to ``1 / sqrt(dk)`` with ``dk = q.shape[-1]``, the head
    width (not ``d_model``). Shapes and refusals as in :func:`attention`.
    """
    q, k, _ = _check_qkv(q, k, None)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    return (q @ np.swapaxes(k, -1, -2)) * np.asarray(scale, dtype=q.dtype)


def attention(q, k, v, mask=None, scale: float | None = None):
    """Scaled dot-product attention: ``softmax(q k^T * scale + mask) v``.

    Shapes: ``q (..., Tq, dk)``, ``k (..., Tk, dk)``, ``v (..., Tk, dv)``;
    the leading dims broadcast, e.g. ``(B, H)``. ``mask`` is boolean with
    **True = blocked**, broadcastable to ``(..., Tq, Tk)``; blocked scores
    become ``-inf`` *before* the softmax, so blocked keys get weight exactly 0
    and each row still sums to 1.

    Returns ``(output, weights)`` with shapes ``(..., Tq, dv)`` and
    ``(..., Tq, Tk)``.

    Refuses (``ValueError`` / ``TypeError`` naming the problem): mismatched
    ``dk`` between q and k, mismatched ``Tk`` between k and v, leading dims
    that do not broadcast, non-real or non-finite inputs, a non-boolean mask,
    a mask that does not broadcast, and a mask that blocks every key of a row.
    """
    q, k, v = _check_qkv(q, k, v)
    s = scores(q, k, scale)  # (..., Tq, Tk)
    if mask is not None:
        m = check_mask(mask, s.shape)
        s = np.where(m, -np.inf, s)
    weights = softmax(s, axis=-1)  # (..., Tq, Tk), rows sum to 1
    return weights @ v, weights


class AttentionGrads(NamedTuple):
    """Gradients of a loss through :func:`attention`, one per stage."""

    dq: np.ndarray  # (..., Tq, dk)
    dk: np.ndarray  # (..., Tk, dk)
    dv: np.ndarray  # (..., Tk, dv)
    d_weights: np.ndarray  # dL/dA, (..., Tq, Tk)
    d_scores: np.ndarray  # dL/dS, (..., Tq, Tk), S already scaled and masked


def attention_backward(q, k, v, d_out, mask=None, scale: float | None = None) -> AttentionGrads:
    """Backward pass of :func:`attention`, written out stage by stage.

    With ``S = q k^T * scale``, ``A = softmax(S)``, ``O = A v`` and
    ``G = dL/dO`` (``d_out``, shape ``(..., Tq, dv)``):

    * ``dV = A^T G``
    * ``dA = G V^T``
    * ``dS = A * (dA - rowsum(A * dA))``   (softmax backward, row by row)
    * ``dQ = dS K * scale`` and ``dK = dS^T Q * scale``

    Blocked entries have ``A = 0`` and so ``dS = 0``: no gradient flows
    through a masked path. Inputs are refused as in :func:`attention`.
    """
    q, k, v = _check_qkv(q, k, v)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    out, a = attention(q, k, v, mask=mask, scale=scale)
    g = as_float_array(d_out, "d_out")
    if g.shape != out.shape:
        raise ValueError(f"d_out has shape {g.shape} but the output has shape {out.shape}.")
    d_v = np.swapaxes(a, -1, -2) @ g  # (..., Tk, dv)
    d_a = g @ np.swapaxes(v, -1, -2)  # (..., Tq, Tk)
    d_s = a * (d_a - np.sum(a * d_a, axis=-1, keepdims=True))
    d_q = (d_s @ k) * scale  # (..., Tq, dk)
    d_k = (np.swapaxes(d_s, -1, -2) @ q) * scale  # (..., Tk, dk)
    # Broadcast leading dims (e.g. one k shared by many q) sum back to the input's shape.
    return AttentionGrads(
        _unbroadcast(d_q, q.shape), _unbroadcast(d_k, k.shape), _unbroadcast(d_v, v.shape), d_a, d_s
    )


def _unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def _check_qkv(q, k, v):
    q = as_float_array(q, "q", min_ndim=2)
    k = as_float_array(k, "k", min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share the feature width dk: q has shape {q.shape} (dk={q.shape[-1]}), "
            f"k has shape {k.shape} (dk={k.shape[-1]})."
        )
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
        names = ", ".join(f"{n} {a.shape}" for n, a in zip("qkv", arrays))
        raise ValueError(f"the leading (batch/head) dims do not broadcast: {names}.") from None
    dtype = np.result_type(*arrays)
    q, k = q.astype(dtype, copy=False), k.astype(dtype, copy=False)
    if v is not None:
        v = v.astype(dtype, copy=False)
    return q, k, v
