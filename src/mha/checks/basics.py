"""Checks for exercise sets 01-03: the weighted sum, scores and softmax, the scale.

Each ``check_*`` takes the learner's function and compares it with the
package's reference (:func:`mha.softmax`, :func:`mha.scores`) on several
cases; each ``PREDICTIONS`` entry is a value a learner predicts by hand.
"""

from __future__ import annotations

import numpy as np

from ..reference import scores as reference_scores
from ..reference import softmax as reference_softmax
from ._core import Case, Mistake, Prediction, run_check

# -- 01 the weighted sum -------------------------------------------------------

V2 = np.array([[2.0, 0.0], [0.0, 4.0]])
V3 = np.array([[1.0, 2.0, 0.0, -1.0], [3.0, -2.0, 1.0, 0.0], [0.0, 0.5, 4.0, 2.0]])

READ_OUT_CASES = (
    Case("weights [0.75, 0.25] on values [2, 0] and [0, 4]", (np.array([0.75, 0.25]), V2)),
    Case("a one-hot weight picks one value (a hard lookup)", (np.array([0.0, 1.0, 0.0]), V3)),
    Case("three keys, four features", (np.array([0.2, 0.5, 0.3]), V3)),
    Case("two queries at once: weights (Tq, Tk)",
         (np.array([[0.75, 0.25], [0.5, 0.5]]), V2), behaviour="batched"),
    Case("three queries, three keys", (np.array([[1, 0, 0], [0.2, 0.3, 0.5], [0, 0.5, 0.5]]), V3),
         behaviour="batched"),
)

READ_OUT_MISTAKES = (
    Mistake("plain average",
            "you took a plain average of the values; the weights decide the mix: "
            "sum over j of w_j * v_j (weights @ values).",
            lambda w, v: np.asarray(v).mean(axis=0)),
    Mistake("weighted but not summed",
            "you multiplied each value by its weight but did not add them up; the read-out is "
            "one vector per query, sum over j of w_j * v_j (weights @ values).",
            lambda w, v: np.asarray(w)[..., :, None] * np.asarray(v)),
)


def check_read_out(answer, behaviour: str | None = None) -> str:
    """``answer(weights (..., Tk), values (Tk, dv)) -> (..., dv)``, the weighted sum."""
    return run_check("read_out", answer, lambda w, v: w @ v, READ_OUT_CASES,
                     READ_OUT_MISTAKES, behaviour)


# -- 02 scores and softmax -----------------------------------------------------

SOFTMAX_CASES = (
    Case("one row [1, 2, 3]", (np.array([1.0, 2.0, 3.0]),)),
    Case("equal logits give equal weights", (np.array([0.5, 0.5, 0.5, 0.5]),)),
    Case("two rows, each normalised on its own", (np.array([[1.0, 2.0], [3.0, 5.0]]),)),
    Case("three rows of three", (np.array([[0.0, 1.0, -1.0], [2.0, 2.0, 0.0], [5.0, 0.0, 0.0]]),)),
    Case("large equal logits [1000, 1000]", (np.array([1000.0, 1000.0]),), behaviour="stable"),
    Case("large logits in rows", (np.array([[1000.0, 999.0], [-1000.0, -1001.0]]),),
         behaviour="stable"),
    Case("-inf means masked: weight exactly 0", (np.array([0.0, -np.inf, 1.0]),),
         behaviour="masked"),
    Case("-inf in rows", (np.array([[2.0, -np.inf], [-np.inf, -3.0]]),), behaviour="masked"),
)


def _softmax_no_shift(x):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_over_columns(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def _softmax_whole_array(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max())
    return e / e.sum()


SOFTMAX_MISTAKES = (
    Mistake("softmax without the max shift",
            "softmax without the max shift: exp(1000) overflows to inf and inf / inf is NaN; "
            "subtract each row's maximum before exp, which changes nothing mathematically.",
            _softmax_no_shift),
    Mistake("softmax over the wrong axis",
            "softmax over the wrong axis: your columns sum to 1, but each row (one query) must; "
            "take max and sum along axis=-1 with keepdims=True.",
            _softmax_over_columns),
    Mistake("normalised over the whole array",
            "you normalised over the whole array, so all rows together sum to 1; normalise each "
            "row on its own (sum along axis=-1 with keepdims=True).",
            _softmax_whole_array),
)


def check_softmax(answer, behaviour: str | None = None) -> str:
    """``answer(logits (..., n)) -> (..., n)``, a row-wise softmax along the last axis.

    Behaviours: ``"values"`` (small logits, one or more rows), ``"stable"``
    (large logits), ``"masked"`` (``-inf`` entries).
    """
    return run_check("softmax", answer, reference_softmax, SOFTMAX_CASES, SOFTMAX_MISTAKES,
                     behaviour)


_rng = np.random.default_rng(2)
X = _rng.normal(size=(3, 8))  # (T, C) with C = d_model = 8
W_Q = _rng.normal(size=(8, 2))  # (C, d_k) with d_k = 2
W_K = _rng.normal(size=(8, 2))
X5 = _rng.normal(size=(5, 8))
W_Q4 = _rng.normal(size=(8, 4))
W_K4 = _rng.normal(size=(8, 4))

SCORES_CASES = (
    Case("T = 3, d_model = 8, d_k = 2", (X, W_Q, W_K)),
    Case("T = 5, d_model = 8, d_k = 4", (X5, W_Q4, W_K4)),
    Case("a single position", (X[:1], W_Q, W_K)),
)


def _project_and_score(x, w_q, w_k):
    return reference_scores(x @ w_q, x @ w_k)


def _scaled_by(x, w_q, w_k, divisor):
    return (x @ w_q) @ (x @ w_k).T / divisor


SQRT_D_MODEL = (
    "scaled by sqrt(d_model): divide by the square root of the head width d_k "
    "(q.shape[-1]), not of the model width d_model; the variance of q.k grows with d_k."
)
UNSCALED = (
    "the scores are not scaled: divide q.k by sqrt(d_k), or the spread of the scores grows "
    "with the head width and the softmax saturates."
)
DIVIDED_BY_DK = (
    "you divided by d_k; divide by sqrt(d_k): that brings the spread of q.k back to about 1."
)

SCORES_MISTAKES = (
    Mistake("scaled by sqrt(d_model)", SQRT_D_MODEL,
            lambda x, w_q, w_k: _scaled_by(x, w_q, w_k, np.sqrt(x.shape[-1]))),
    Mistake("not scaled", UNSCALED, lambda x, w_q, w_k: _scaled_by(x, w_q, w_k, 1.0)),
    Mistake("divided by d_k", DIVIDED_BY_DK,
            lambda x, w_q, w_k: _scaled_by(x, w_q, w_k, w_q.shape[-1])),
    Mistake("K Q^T", "your matrix is transposed: row i must be the query at i and column j "
            "the key at j, so S = Q K^T (you computed K Q^T).",
            lambda x, w_q, w_k: _project_and_score(x, w_q, w_k).T),
)


def check_scores(answer, behaviour: str | None = None) -> str:
    """``answer(x (T, C), w_q (C, d_k), w_k (C, d_k)) -> (T, T)``, ``Q K^T / sqrt(d_k)``."""
    return run_check("project_and_score", answer, _project_and_score, SCORES_CASES,
                     SCORES_MISTAKES, behaviour)


# -- 03 the scale: the head width, not d_model ---------------------------------

Q_HEADS = _rng.normal(size=(2, 4, 3, 2))  # (B, H, T, dh) with d_model = H * dh = 8
K_HEADS = _rng.normal(size=(2, 4, 3, 2))
Q_ONE = _rng.normal(size=(5, 16))  # one head, dh = 16, in a model with d_model = 64
K_ONE = _rng.normal(size=(5, 16))

HEAD_SCORES_CASES = (
    Case("one head, T = 5, d_k = 16, d_model = 64", (Q_ONE, K_ONE, 64)),
    Case("(B, H, T, d_k) = (2, 4, 3, 2), d_model = 8", (Q_HEADS, K_HEADS, 8)),
)

HEAD_SCORES_MISTAKES = (
    Mistake("scaled by sqrt(d_model)", SQRT_D_MODEL,
            lambda q, k, d_model: q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model)),
    Mistake("not scaled", UNSCALED, lambda q, k, d_model: q @ np.swapaxes(k, -1, -2)),
    Mistake("divided by d_k", DIVIDED_BY_DK,
            lambda q, k, d_model: q @ np.swapaxes(k, -1, -2) / q.shape[-1]),
)


def check_head_scores(answer, behaviour: str | None = None) -> str:
    """``answer(q (..., T, d_k), k (..., T, d_k), d_model) -> (..., T, T)``, scaled by sqrt(d_k)."""
    return run_check("head_scores", answer, lambda q, k, d_model: reference_scores(q, k),
                     HEAD_SCORES_CASES, HEAD_SCORES_MISTAKES, behaviour)


def _softmax(x):
    return reference_softmax(np.asarray(x, dtype=float))


PREDICTIONS = {
    "ex01.read_out": Prediction(
        "read_out prediction", [0.75, 0.5], 1e-6,
        known_wrong=(([2 / 3, 2 / 3], "that is the plain average; weight each value first."),),
        hint="Multiply each value by its weight and add: 0.5*[1, 0] + 0.25*[0, 1] + 0.25*[1, 1]."),
    "ex01.weight_on_first": Prediction(
        "weight_on_first", 0.5, 1e-6,
        known_wrong=((0.25, "0.25 reads out [0.5, 3]; the target is [1, 2]."),),
        hint="The first feature of the read-out is 2 * w, the second 4 * (1 - w)."),
    "ex01.reachable": Prediction(
        "can_read_out_2_2", False,
        hint="A read-out of two values lies on the segment between them: [2w, 4(1 - w)]."),
    "ex02.cross_shape": Prediction(
        "cross_scores_shape", (3, 5),
        known_wrong=(((5, 3), "rows are queries and columns are keys: (Tq, Tk)."),
                     ((3, 3), "the keys come from the other sequence, so there are Tk = 5 "
                              "columns, not Tq."),
                     ((5, 5), "there is one row per query: Tq = 3 rows.")),
        hint="S = Q K^T with Q (Tq, d_k) and K (Tk, d_k)."),
    "ex03.weights_dk64": Prediction(
        "weights_dk64", _softmax(np.array([8.0, -8.0]) / 8.0), 1e-3,
        known_wrong=((_softmax([8.0, -8.0]), "that is the unscaled softmax of [8, -8]; "
                      "divide the scores by sqrt(64) = 8 first."),
                     (_softmax(np.array([8.0, -8.0]) / 64), "you divided by d_k = 64; "
                      "divide by sqrt(d_k) = 8.")),
        hint="Divide [8, -8] by sqrt(64), then take the softmax of [1, -1]."),
    "ex03.shifted": Prediction(
        "weights_shifted", _softmax([2.0, 0.0]), 1e-3,
        known_wrong=(([0.5, 0.5],
                      "subtracting a constant does not flatten the weights."),),
        hint="Softmax depends only on differences of scores, and [-3, -5] keeps the difference 2."),
    "ex03.divided": Prediction(
        "weights_divided", _softmax([1.0, 0.0]), 1e-3,
        known_wrong=((_softmax([2.0, 0.0]), "dividing every score by 2 halves their "
                      "differences, so the weights change: they get flatter."),),
        hint="Dividing [2, 0] by 2 gives [1, 0]."),
}
