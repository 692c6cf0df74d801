"""Checks for exercise sets 01-03: the weighted sum, scores and softmax, the scale.

Each ``check_*`` takes the learner's function and compares it with the
package's reference (:func:`mha.softmax`, :func:`mha.scores`) on several
cases; each ``PREDICTIONS`` entry is a value a learner predicts by hand.
"""

from __future__ import annotations

import numpy as np

from ..reference import scores as reference_scores
from ..reference import softmax as reference_softmax
from ._core import Case, Mistake, Prediction
from ._tasks import Rule, Task

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
    # graded only
    Case("weights [0.1, 0.9] on values [10, 0] and [0, 10]",
         (np.array([0.1, 0.9]), np.array([[10.0, 0.0], [0.0, 10.0]])), hidden=True),
    Case("five keys, float32 inputs", (np.array([0.1, 0.2, 0.3, 0.25, 0.15], np.float32),
                                       np.arange(15, dtype=np.float32).reshape(5, 3) - 7),
         hidden=True),
    Case("a one-hot row and a mixed row",
         (np.array([[1.0, 0.0], [0.25, 0.75]]), np.array([[4.0, 8.0], [0.0, 4.0]])),
         behaviour="batched", hidden=True),
    Case("four queries, five keys",
         (np.full((4, 5), 0.2)
          + np.array([0.4, -0.1, -0.1, -0.1, -0.1]) * np.arange(4)[:, None] / 4,
          np.arange(10.0).reshape(5, 2)), behaviour="batched", hidden=True),
)

PLAIN_AVERAGE = ("you took a plain average of the values; the weights decide the mix: "
                 "sum over j of w_j * v_j (weights @ values).")

READ_OUT_MISTAKES = (
    Mistake("plain average", PLAIN_AVERAGE, lambda w, v: np.asarray(v).mean(axis=0)),
    Mistake("plain average", PLAIN_AVERAGE,  # one average per query row
            lambda w, v: np.broadcast_to(np.asarray(v).mean(axis=0),
                                         np.shape(w)[:-1] + np.shape(v)[-1:])),
    Mistake("weighted but not summed",
            "you multiplied each value by its weight but did not add them up; the read-out is "
            "one vector per query, sum over j of w_j * v_j (weights @ values).",
            lambda w, v: np.asarray(w)[..., :, None] * np.asarray(v)),
)


READ_OUT = Task("read_out", lambda w, v: w @ v, READ_OUT_CASES, READ_OUT_MISTAKES)


def check_read_out(answer, behaviour: str | None = None) -> str:
    """``answer(weights (..., Tk), values (Tk, dv)) -> (..., dv)``, the weighted sum."""
    return READ_OUT.check(answer, behaviour)


# -- 02 scores and softmax -----------------------------------------------------

SOFTMAX_CASES = (
    Case("one row [1, 2, 3]", (np.array([1.0, 2.0, 3.0]),)),
    Case("equal logits give equal weights", (np.array([0.5, 0.5, 0.5, 0.5]),)),
    Case("two rows, each normalised on its own", (np.array([[1.0, 2.0], [3.0, 5.0]]),)),
    Case("three rows of three", (np.array([[0.0, 1.0, -1.0], [2.0, 2.0, 0.0], [5.0, 0.0, 0.0]]),)),
    Case("large equal logits [1000, 1000]", (np.array([1000.0, 1000.0]),), behaviour="stable"),
    Case("large logits in rows", (np.array([[1000.0, 999.0], [-1000.0, -1001.0]]),),
         behaviour="stable"),
    Case("rows far apart: [0, 1, -1] and [900, 901, 899]",
         (np.array([[0.0, 1.0, -1.0], [900.0, 901.0, 899.0]]),), behaviour="stable"),
    Case("-inf means masked: weight exactly 0", (np.array([0.0, -np.inf, 1.0]),),
         behaviour="masked"),
    Case("-inf in rows", (np.array([[2.0, -np.inf], [-np.inf, -3.0]]),), behaviour="masked"),
    # graded only
    Case("rows [0, ln 3] and [1, 1]", (np.array([[0.0, np.log(3.0)], [1.0, 1.0]]),),
         hidden=True),
    Case("float32 logits", (np.array([[0.5, -1.0, 2.0], [3.0, 3.0, -2.0]], np.float32),),
         hidden=True),
    Case("logits near 5000 and -5000",
         (np.array([[5000.0, 5002.0], [-5000.0, -5000.0]]),), behaviour="stable", hidden=True),
    Case("logits near 20000, past what even np.longdouble's exp can hold",
         (np.array([[20000.0, 20001.0, 19998.0], [-20000.0, -19999.0, -20000.0]]),),
         behaviour="stable", hidden=True),
    Case("-inf in the first column", (np.array([[-np.inf, 0.0, 0.0], [0.0, -np.inf, -np.inf]]),),
         behaviour="masked", hidden=True),
)


def _softmax_no_shift(x):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_global_shift(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max())
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
    Mistake("softmax shifted by the global maximum",
            "you subtracted the maximum of the whole array (x - x.max()): a row far below it "
            "underflows to exp = 0 everywhere and 0 / 0 is NaN; shift each row by its own "
            "maximum (max over the last axis, keepdims=True).",
            _softmax_global_shift),
    Mistake("softmax over the wrong axis",
            "softmax over the wrong axis: your columns sum to 1, but each row (one query) must; "
            "take max and sum along axis=-1 with keepdims=True.",
            _softmax_over_columns),
    Mistake("normalised over the whole array",
            "you normalised over the whole array, so all rows together sum to 1; normalise each "
            "row on its own (sum along axis=-1 with keepdims=True).",
            _softmax_whole_array),
)


NO_READY_MADE_SOFTMAX = Rule(
    "do not call a ready-made softmax (mha.softmax, scipy.special.softmax, torch.softmax)",
    calls=(("mha", "softmax"), ("scipy", "softmax"), ("torch", "softmax"),
           ("torch", "log_softmax")))

SOFTMAX = Task("softmax", reference_softmax, SOFTMAX_CASES, SOFTMAX_MISTAKES,
               rules=(NO_READY_MADE_SOFTMAX,))


def check_softmax(answer, behaviour: str | None = None) -> str:
    """``answer(logits (..., n)) -> (..., n)``, a row-wise softmax along the last axis.

    Behaviours: ``"values"`` (small logits, one or more rows), ``"stable"``
    (large logits), ``"masked"`` (``-inf`` entries).
    """
    return SOFTMAX.check(answer, behaviour)


_rng = np.random.default_rng(2)
_HIDDEN_RNG = np.random.default_rng(20)  # the graded-only cases draw from their own stream
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
    Case("x = I, w_q = rows [1, 1, 1, 1] and [0, 0, 0, 0], w_k = ones",
         (np.eye(2), np.array([[1.0] * 4, [0.0] * 4]), np.ones((2, 4))), hidden=True),
    Case("T = 4, d_model = 6, d_k = 3", (_HIDDEN_RNG.normal(size=(4, 6)),
                                        _HIDDEN_RNG.normal(size=(6, 3)),
                                        _HIDDEN_RNG.normal(size=(6, 3))), hidden=True),
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

K_Q_T = ("your matrix is transposed: row i must be the query at i and column j "
         "the key at j, so S = Q K^T (you computed K Q^T).")

SCORES_MISTAKES = (
    Mistake("scaled by sqrt(d_model)", SQRT_D_MODEL,
            lambda x, w_q, w_k: _scaled_by(x, w_q, w_k, np.sqrt(x.shape[-1]))),
    Mistake("not scaled", UNSCALED, lambda x, w_q, w_k: _scaled_by(x, w_q, w_k, 1.0)),
    Mistake("divided by d_k", DIVIDED_BY_DK,
            lambda x, w_q, w_k: _scaled_by(x, w_q, w_k, w_q.shape[-1])),
    Mistake("K Q^T", K_Q_T, lambda x, w_q, w_k: _project_and_score(x, w_q, w_k).T),
)


SCORES = Task("project_and_score", _project_and_score, SCORES_CASES, SCORES_MISTAKES)


def check_scores(answer, behaviour: str | None = None) -> str:
    """``answer(x (T, C), w_q (C, d_k), w_k (C, d_k)) -> (T, T)``, ``Q K^T / sqrt(d_k)``."""
    return SCORES.check(answer, behaviour)


# -- 03 the scale: the head width, not d_model ---------------------------------

Q_HEADS = _rng.normal(size=(2, 4, 3, 2))  # (B, H, T, dh) with d_model = H * dh = 8
K_HEADS = _rng.normal(size=(2, 4, 3, 2))
Q_ONE = _rng.normal(size=(5, 16))  # one head, dh = 16, in a model with d_model = 64
K_ONE = _rng.normal(size=(5, 16))

HEAD_SCORES_CASES = (
    Case("one head, T = 5, d_k = 16, d_model = 64", (Q_ONE, K_ONE, 64)),
    Case("(B, H, T, d_k) = (2, 4, 3, 2), d_model = 8", (Q_HEADS, K_HEADS, 8)),
    Case("ones, (B, H, T, d_k) = (1, 2, 1, 4), d_model = 8",
         (np.ones((1, 2, 1, 4)), np.ones((1, 2, 1, 4)), 8), hidden=True),
    Case("(H, T, d_k) = (3, 4, 5), d_model = 15",
         (_HIDDEN_RNG.normal(size=(3, 4, 5)), _HIDDEN_RNG.normal(size=(3, 4, 5)), 15),
         hidden=True),
)

HEAD_SCORES_MISTAKES = (
    Mistake("scaled by sqrt(d_model)", SQRT_D_MODEL,
            lambda q, k, d_model: q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model)),
    Mistake("not scaled", UNSCALED, lambda q, k, d_model: q @ np.swapaxes(k, -1, -2)),
    Mistake("divided by d_k", DIVIDED_BY_DK,
            lambda q, k, d_model: q @ np.swapaxes(k, -1, -2) / q.shape[-1]),
    Mistake("K Q^T", K_Q_T,
            lambda q, k, d_model: k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1])),
    Mistake("K Q^T", K_Q_T,  # and the d_model scale left in
            lambda q, k, d_model: k @ np.swapaxes(q, -1, -2) / np.sqrt(d_model)),
)


HEAD_SCORES = Task("head_scores", lambda q, k, d_model: reference_scores(q, k),
                   HEAD_SCORES_CASES, HEAD_SCORES_MISTAKES)


def check_head_scores(answer, behaviour: str | None = None) -> str:
    """``answer(q (..., T, d_k), k (..., T, d_k), d_model) -> (..., T, T)``, scaled by sqrt(d_k)."""
    return HEAD_SCORES.check(answer, behaviour)


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
