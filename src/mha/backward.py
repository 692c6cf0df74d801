"""The backward pass, by hand: softmax's Jacobian and the whole attention.

Checked against torch autograd, ``torch.autograd.gradcheck`` and central
finite differences (:mod:`mha.numerical`) in ``tests/test_attention_backward.py``.
Shapes, dtype rule and refusals follow :mod:`mha.reference`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import as_float_array, check_probs
from .reference import _check_qkv, _check_scale, _normalize_axis, attention

__all__ = [
    "softmax_backward",
    "softmax_jacobian",
    "attention_backward",
    "AttentionGrads",
]


def softmax_backward(probs, upstream, axis: int = -1) -> np.ndarray:
    """Gradient of a loss with respect to the logits of a softmax.

    ``probs`` is the softmax output ``p`` and ``upstream`` is ``g = dL/dp``,
    both of the same shape ``(..., n, ...)`` with the softmax taken along
    ``axis``; the result ``dL/ds`` has that shape too. It is ``J^T g`` for the
    Jacobian ``J = diag(p) - p p^T``, computed in O(n) per row as
    ``p*g - p * rowsum(p*g)``: the products ``p_i g_i`` minus ``p`` times their
    total. A constant ``g = c`` gives 0: the total is then ``c``, and ``p c - p c = 0``.

    Dtype rule: ``np.result_type(probs, upstream, float32)``.

    Refuses non-real dtypes (``DTypeError``), and with ``ValueError``: shapes
    that differ, a 0-d input, an ``axis`` out of range, an empty axis, NaN or
    inf, and ``probs`` with a negative entry or a row that does not sum to 1
    (the classic slip of passing logits instead of probabilities).
    """
    p = as_float_array(probs, "probs")
    g = as_float_array(upstream, "upstream")
    if p.shape != g.shape:
        raise ValueError(
            f"probs has shape {p.shape} but upstream has shape {g.shape}; they must match."
        )
    axis = _normalize_axis(axis, p.ndim, "softmax_backward")
    if p.shape[axis] == 0:
        raise ValueError(
            f"softmax_backward over an empty axis (shape {p.shape}, axis={axis})."
        )
    check_probs(p, "probs", axis=axis)
    dtype = np.result_type(p, g)
    # Entry j of J^T g is sum_i g_i p_i (delta_ij - p_j) = p_j g_j - p_j * sum_i p_i g_i.
    # Both terms share the products p_i g_i: form them once, then take p times their
    # row total away from them. No (n, n) matrix is built.
    pg = p * g
    pulled_back = pg - p * pg.sum(axis=axis, keepdims=True)
    return pulled_back.astype(dtype, copy=False)



class AttentionGrads(NamedTuple):
    """Gradients of a loss through :func:`attention`, one per stage."""

    dq: np.ndarray  # (..., Tq, d_k)
    dk: np.ndarray  # (..., Tk, d_k)
    dv: np.ndarray  # (..., Tk, dv)
    d_weights: np.ndarray  # dL/dA, (..., Tq, Tk)
    d_scores: np.ndarray  # dL/dS, (..., Tq, Tk), S already scaled and masked


def attention_backward(q, k, v, d_out, mask=None, scale: float | None = None,
                       is_causal: bool = False) -> AttentionGrads:
    """Backward pass of :func:`attention`, written out stage by stage.

    With ``S = q k^T * scale`` (blocked entries set to ``-inf``),
    ``A = softmax(S)`` row by row, ``O = A v`` and ``G = dL/dO`` (``d_out``):

    * ``dV = A^T G``                                 ``(..., Tk, dv)``
    * ``dA = G V^T``                                 ``(..., Tq, Tk)``
    * ``dS = A * (dA - rowsum(A * dA))``             softmax backward, row by row
    * ``dQ = dS K * scale``                          ``(..., Tq, d_k)``
    * ``dK = dS^T Q * scale``                        ``(..., Tk, d_k)``

    Shapes and ``mask`` / ``scale`` / ``is_causal`` as in :func:`attention`; ``d_out`` has the
    output's shape ``(..., Tq, dv)``, leading dims already broadcast. A blocked
    entry has ``A = 0`` and so ``dS = 0``: no gradient flows through a masked
    path. Where q, k or v was broadcast over a leading dim (one k shared by
    many heads), its gradient is summed back to that input's shape.

    Dtype rule: the forward computes in ``np.result_type(q, k, v)`` (at least
    ``float32``); ``d_out`` is cast to that dtype, and all five gradients come
    out in it, as in torch, where a gradient has its tensor's dtype.

    Refuses what :func:`attention` refuses, and a ``d_out`` that is not
    real and finite or whose shape differs from the output's.
    """
    q, k, v = _check_qkv(q, k, v)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    out, a = attention(q, k, v, mask=mask, scale=scale, is_causal=is_causal)  # (..., Tq, dv/Tk)
    g = as_float_array(d_out, "d_out")
    if g.shape != out.shape:
        raise ValueError(
            f"d_out has shape {g.shape} but the attention output has shape {out.shape} "
            "(..., Tq, dv); d_out = dL/dO must match it exactly."
        )
    g = g.astype(out.dtype, copy=False)
    scale = _check_scale(scale, out.dtype)  # already accepted by attention(); now a 0-d array
    d_v = np.swapaxes(a, -1, -2) @ g  # (..., Tk, dv)
    d_a = g @ np.swapaxes(v, -1, -2)  # (..., Tq, Tk)
    d_s = softmax_backward(a, d_a, axis=-1)  # (..., Tq, Tk), 0 where blocked
    d_q = (d_s @ k) * scale  # (..., Tq, d_k)
    d_k = (np.swapaxes(d_s, -1, -2) @ q) * scale  # (..., Tk, d_k)
    return AttentionGrads(
        _unbroadcast(d_q, q.shape), _unbroadcast(d_k, k.shape), _unbroadcast(d_v, v.shape),
        d_a, d_s,
    )


def _unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``grad`` back to ``shape``: the reverse of NumPy broadcasting.

    An input that was broadcast (a missing leading dim, or a dim of size 1
    stretched) was read many times, so its gradient is the sum of the
    gradients of every copy.
    """
    extra = grad.ndim - len(shape)
    if extra < 0:
        raise ValueError(f"cannot unbroadcast a gradient of shape {grad.shape} to {shape}.")
    grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    grad = grad.sum(axis=stretched, keepdims=True)
    if grad.shape != tuple(shape):
        raise ValueError(f"cannot unbroadcast a gradient of shape {grad.shape} to {shape}.")
    return grad


def softmax_jacobian(probs) -> np.ndarray:
    """Jacobian of softmax, ``J[..., i, j] = dp_i / ds_j = p_i (delta_ij - p_j)``.

    ``probs (..., n)`` is the softmax output ``p`` along the last axis;
    returns ``diag(p) - p p^T`` of shape ``(..., n, n)``. ``J`` is symmetric,
    and ``J^T g`` equals :func:`softmax_backward` ``(p, g)``, which never builds
    the ``n x n`` matrix. Dtype rule as in :func:`softmax_backward`.

    Refuses a 0-d input, non-real dtypes, negative entries, and rows that do
    not sum to 1 (pass the softmax output, not the logits).
    """
    p = as_float_array(probs, "probs", min_ndim=1)
    check_probs(p, "probs", axis=-1)
    n = p.shape[-1]
    jac = -p[..., :, None] * p[..., None, :]  # (..., n, n), off-diagonal -p_i p_j
    # The diagonal p_i - p_i**2 equals p_i * (sum of the other weights). Written that way it
    # keeps its tiny value when p_i rounds to 1 (a saturated row), where p_i - p_i**2 gives 0.
    others = (p[..., None, :] * ~np.eye(n, dtype=bool)).sum(axis=-1)  # (..., n)
    jac[..., np.arange(n), np.arange(n)] = p * others
    return jac
