"""Why scores are divided by sqrt(d_k): the plain computations of lesson 03.

Three facts, each a function here:

* the dot product of two independent vectors with mean-0, variance-1 entries
  has variance ``d_k``; divided by ``sqrt(d_k)`` it has variance 1
  (:func:`dot_product_variance` measures it on a seeded sample);
* the softmax Jacobian ``diag(p) - p p^T`` shrinks toward 0 as the softmax
  saturates (:func:`softmax_jacobian`, :func:`jacobian_norm`,
  :func:`jacobian_norm_curve`);
* one sampled query and its keys, read at growing head widths: without the
  division the weights sharpen as ``d_k`` grows, with it they keep about the
  same sharpness (:func:`sample_head`, :func:`scores_at_width`,
  :func:`scaling_state`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import (
    DTypeError,
    as_float_array,
    check_flag,
    check_non_negative_int,
    check_rng,
)
from .backward import softmax_jacobian
from .reference import softmax

__all__ = [
    "VarianceSample",
    "dot_product_variance",
    "jacobian_norm",
    "jacobian_norm_curve",
    "unit_variance_scores",
    "sample_head",
    "scores_at_width",
    "scaling_state",
    "jacobian_norms_by_width",
]


class VarianceSample(NamedTuple):
    """Measured variance of ``q . k`` for each head width, one entry per width."""

    d_k: np.ndarray  # (W,) the widths, int
    raw: np.ndarray  # (W,) variance of q . k
    scaled: np.ndarray  # (W,) variance of q . k / sqrt(d_k)


def _is_whole(n) -> bool:
    """True for a real, finite, integral number that is not a bool (4, 4.0, np.int64(4))."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, float, np.integer, np.floating)):
        return False
    return bool(np.isfinite(n)) and int(n) == n


def _check_width(d_k) -> int:
    if not _is_whole(d_k) or d_k < 1:
        raise ValueError(f"the head width d_k must be a positive integer; got {d_k!r}.")
    return int(d_k)


def _check_widths(d_ks) -> list[int]:
    """``d_ks`` as a non-empty list of positive int widths."""
    widths = [_check_width(d) for d in np.atleast_1d(np.asarray(d_ks, dtype=object))]
    if not widths:
        raise ValueError("d_ks must list at least one head width; got none.")
    return widths


def _check_seed(seed):
    """``seed`` as a non-negative int (or a ``np.random.Generator``, which is drawn from)."""
    return seed if isinstance(seed, np.random.Generator) else check_non_negative_int(seed, "seed")


def dot_product_variance(d_ks, n_pairs: int, rng: np.random.Generator) -> VarianceSample:
    """Variance of ``q . k`` over ``n_pairs`` random pairs, for each width in ``d_ks``.

    ``q`` and ``k`` are drawn independently with standard normal entries
    (mean 0, variance 1), shape ``(n_pairs, d_k)``. The variance of their dot
    product is then ``d_k`` exactly; the sample estimates it. Results are
    float64.

    Refuses widths that are not positive integers, ``n_pairs < 2`` (a
    variance needs at least two samples) and an ``rng`` that is not a
    ``np.random.Generator`` (pass ``np.random.default_rng(seed)``).
    """
    rng = check_rng(rng)
    widths = _check_widths(d_ks)
    if not _is_whole(n_pairs) or n_pairs < 2:
        raise ValueError(
            f"n_pairs must be an integer >= 2 to estimate a variance; got {n_pairs!r}.")
    raw, scaled = [], []
    for d in widths:
        q = rng.standard_normal((int(n_pairs), d))  # (n_pairs, d_k)
        k = rng.standard_normal((int(n_pairs), d))  # (n_pairs, d_k)
        dots = np.sum(q * k, axis=-1)  # (n_pairs,)
        raw.append(np.var(dots, ddof=1))
        scaled.append(np.var(dots / np.sqrt(d), ddof=1))
    return VarianceSample(np.array(widths), np.array(raw), np.array(scaled))


def jacobian_norm(probs) -> float:
    """Spectral norm (largest singular value) of :func:`softmax_jacobian`.

    It is the largest factor by which softmax turns a gradient on the weights
    into a gradient on the scores: ``|J g| <= jacobian_norm(p) * |g|``. For two
    weights ``(a, 1 - a)`` it is ``2 a (1 - a)``; for ``n`` equal weights
    ``1 / n``; for a one-hot ``p`` it is 0. Refuses anything but one row ``(n,)``.
    """
    if np.ndim(probs) != 1:
        raise ValueError(
            f"jacobian_norm takes one row of probabilities (n,); got shape {np.shape(probs)}."
        )
    j = softmax_jacobian(probs)
    # J is symmetric and positive semi-definite: its norm is its largest eigenvalue.
    return float(max(np.linalg.eigvalsh(j.astype(np.float64))[-1], 0.0))


def jacobian_norm_curve(z, scales) -> np.ndarray:
    """``jacobian_norm(softmax(c * z))`` for each score scale ``c`` in ``scales``.

    ``z (n,)`` is a fixed score vector, or ``(R, n)`` for ``R`` rows at once;
    ``c`` plays the role of an inverse temperature (``c = 1 / temperature``).
    Returns ``(len(scales),)`` float64, or ``(R, len(scales))`` for ``R`` rows.
    Refuses negative or non-finite scales and ``z`` of more than two axes.
    """
    z = as_float_array(z, "z").astype(np.float64)
    if z.ndim not in (1, 2):
        raise ValueError(f"z must be one row of scores (n,) or rows (R, n); got shape {z.shape}.")
    c = as_float_array(scales, "scales").astype(np.float64)
    if np.any(c < 0):
        raise ValueError("score scales must be >= 0 (a negative scale flips the ranking).")
    c = np.atleast_1d(c)
    probs = softmax(c[:, None] * z[..., None, :])  # (..., S, n): every scale at once
    # J is symmetric and positive semi-definite: its norm is its largest eigenvalue.
    top = np.linalg.eigvalsh(softmax_jacobian(probs))[..., -1]  # (..., S)
    return np.maximum(top, 0.0)


def unit_variance_scores(n_keys: int = 8, seed: int = 0) -> np.ndarray:
    """A fixed score vector ``z (n_keys,)`` float64: seeded standard normal draws,
    shifted and rescaled to mean 0 and (population) variance exactly 1.

    Refuses ``n_keys`` below 2 (one key has no variance to rescale) and a
    ``seed`` that is not a non-negative int.
    """
    if not _is_whole(n_keys) or n_keys < 2:
        raise ValueError(f"n_keys must be an integer >= 2; got {n_keys!r}.")
    z = np.random.default_rng(_check_seed(seed)).standard_normal(int(n_keys))
    return (z - z.mean()) / z.std()


def sample_head(n_keys: int = 8, max_width: int = 1024, seed: int = 0):
    """One seeded query and ``n_keys`` keys with ``max_width`` standard normal features.

    Returns ``(q (max_width,), k (n_keys, max_width))`` float64. A head of width
    ``d_k`` uses the first ``d_k`` features (:func:`scores_at_width`), so a wider
    head adds products to the same sums: the raw scores grow like a random walk,
    with spread ``sqrt(d_k)``. Refuses ``n_keys`` below 2, a width below 1
    and a ``seed`` that is not a non-negative int or a ``np.random.Generator``.
    """
    if not _is_whole(n_keys) or n_keys < 2:
        raise ValueError(f"n_keys must be an integer >= 2; got {n_keys!r}.")
    width = _check_width(max_width)
    draws = np.random.default_rng(_check_seed(seed)).standard_normal((int(n_keys) + 1, width))
    return draws[0], draws[1:]


def scores_at_width(q, k, d_k: int, divide: bool) -> np.ndarray:
    """Scores of one query against each key for a head of width ``d_k``.

    ``q (W,)`` and ``k (n, W)`` as from :func:`sample_head`; the head reads the
    first ``d_k`` features: ``s_j = q[:d_k] . k[j, :d_k]``, divided by
    ``sqrt(d_k)`` when ``divide``. Nothing is rescaled by hand: each width is
    its own sample, so a claim such as "divided scores keep a spread of about 1"
    is measured, and can fail. Returns float64 ``(n,)``. Refuses a ``d_k``
    that is not a positive integer or exceeds ``W``, and a ``divide`` that is
    not True / False.
    """
    d = _check_width(d_k)
    divide = check_flag(divide, "divide")  # "no" would divide
    q = as_float_array(q, "q").astype(np.float64)
    k = as_float_array(k, "k").astype(np.float64)
    if q.ndim != 1 or k.ndim != 2 or k.shape[1] != q.shape[0]:
        raise ValueError(
            f"q must be (W,) and k (n, W) with the same W; got {q.shape} and {k.shape}.")
    if d > q.shape[0]:
        raise ValueError(f"d_k={d} exceeds the {q.shape[0]} features sampled.")
    raw = k[:, :d] @ q[:d]  # (n,)
    return raw / np.sqrt(d) if divide else raw


def scaling_state(q, k, d_k: int, divide: bool) -> dict:
    """Everything the scaling explorer shows for one setting.

    Returns ``{"d_k", "divide", "scores" (n,), "weights" (n,),
    "largest_weight", "jacobian_norm"}`` for the scores of
    :func:`scores_at_width`.
    """
    s = scores_at_width(q, k, d_k, divide)
    p = softmax(s)
    return {
        "d_k": int(d_k),
        "divide": bool(divide),
        "scores": s,
        "weights": p,
        "largest_weight": float(np.max(p)),
        "jacobian_norm": jacobian_norm(p),
    }


def jacobian_norms_by_width(seeds, d_ks, divide: bool, n_keys: int = 8) -> np.ndarray:
    """The gradient size of :func:`scaling_state` for many samples at once.

    For each seed, :func:`sample_head` draws one query and ``n_keys`` keys
    (``max(d_ks)`` features); for each width in ``d_ks`` the scores are
    :func:`scores_at_width` and the result is the Jacobian norm of their
    softmax. Returns ``(len(seeds), len(d_ks))`` float64: row ``r`` is what the
    scaling explorer draws for ``seed = seeds[r]``, so a median over the rows
    says what a typical sample does, not what one sample does. Refuses what
    :func:`scores_at_width` refuses (``divide`` not True / False included) and
    seeds that are not non-negative ints.
    """
    widths = _check_widths(d_ks)
    divide = check_flag(divide, "divide")  # "no" would divide
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise DTypeError(f"seeds must be a list of ints, e.g. range(1, 101); got {seeds!r}.")
    seeds = [check_non_negative_int(s, "a seed") for s in seeds]
    out = np.empty((len(seeds), len(widths)))
    for r, seed in enumerate(seeds):
        q, k = sample_head(n_keys, max(widths), seed)
        s = np.stack([scores_at_width(q, k, d, divide) for d in widths])  # (W, n)
        top = np.linalg.eigvalsh(softmax_jacobian(softmax(s)))[..., -1]  # (W,)
        out[r] = np.maximum(top, 0.0)
    return out
