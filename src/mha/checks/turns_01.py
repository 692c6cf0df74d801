"""Lesson 01's "your turn": the attention read-out in four lines of NumPy.

``check_attend(attend)`` takes the learner's ``attend(q, k, v)`` (queries
``(Tq, d_k)``, keys ``(Tk, d_k)``, values ``(Tk, d_v)``) and compares what it
returns, the read-outs ``(Tq, d_v)``, with the package's attention, on the
lesson's keys and values, on random ones and on scores large enough to
overflow an unshifted ``exp``, and on two rows whose maxima lie far apart, where
a softmax shifted by the one largest score of the whole matrix (instead of each
row's own maximum) underflows a row to 0 / 0. The classic wrong answers are named.
"""

from __future__ import annotations

import numpy as np

from ..reference import attention as reference_attention
from ._core import Case, Mistake, run_check

_rng = np.random.default_rng(1)
K01 = np.array([[1.0, 0.0], [0.0, 1.0]])
V01 = np.array([[2.0, 0.0], [0.0, 4.0]])
Q01 = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0]])

ATTEND_CASES = (
    Case("lesson 01's three queries on k0 = [1, 0], k1 = [0, 1], values [2, 0], [0, 4]",
         (Q01, K01, V01)),
    Case("4 queries, 5 keys of width 3, values of width 2",
         (_rng.normal(size=(4, 3)), _rng.normal(size=(5, 3)), _rng.normal(size=(5, 2)))),
    Case("one query, scores near 1000 (an unshifted exp overflows)",
         (np.array([[1500.0, 30.0]]), np.array([[1.0, 0.0], [1.0, 0.05]]), V01)),
    Case("two queries whose scores lie far apart: row 0 near 778, row 1 at 0",
         (np.array([[1100.0, 0.0], [0.0, 0.0]]), K01, V01)),
)


def _readout(q, k, v):
    return reference_attention(q, k, v)[0]


def _softmax_rows(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _unscaled(q, k, v):
    return _softmax_rows(q @ k.T) @ v


def _over_queries(q, k, v):
    return _softmax_rows(q @ k.T / np.sqrt(k.shape[1]), axis=0) @ v


def _not_normalised(q, k, v):
    s = q @ k.T / np.sqrt(k.shape[1])
    return np.exp(s - s.max(axis=-1, keepdims=True)) @ v


def _no_shift(q, k, v):
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(q @ k.T / np.sqrt(k.shape[1]))
        return (e / e.sum(axis=-1, keepdims=True)) @ v


def _global_shift(q, k, v):
    with np.errstate(under="ignore", invalid="ignore"):
        s = q @ k.T / np.sqrt(k.shape[1])
        e = np.exp(s - s.max())  # one shift for the whole matrix: a low row underflows to 0
        return (e / e.sum(axis=-1, keepdims=True)) @ v


def _weights_not_readout(q, k, v):
    return _softmax_rows(q @ k.T / np.sqrt(k.shape[1]))


ATTEND_MISTAKES = (
    Mistake("not scaled",
            "the scores are not divided by sqrt(d_k): S = q @ k.T / np.sqrt(k.shape[1]) "
            "(lesson 03 says why).", _unscaled),
    Mistake("softmax over the queries",
            "your softmax runs down the columns (over the queries); each query's row of "
            "weights must sum to 1: take max and sum along axis=-1 with keepdims=True.",
            _over_queries),
    Mistake("weights not normalised",
            "the weights do not sum to 1: divide each row of exp(...) by its own sum "
            "(e / e.sum(axis=-1, keepdims=True)).", _not_normalised),
    Mistake("shift each row by its own maximum",
            "you subtract the largest score of the whole matrix (s.max()), so a row whose "
            "scores all lie far below it underflows to exp = 0 and 0 / 0 is NaN: shift each "
            "row by its own maximum, s.max(axis=-1, keepdims=True).", _global_shift),
    Mistake("no max shift",
            "exp of a large score overflows to inf and inf / inf is NaN: subtract each row's "
            "maximum before exp (it changes no weight).", _no_shift),
    Mistake("weights, not read-out",
            "you returned the weights A; the read-out mixes the values with them: A @ v.",
            _weights_not_readout),
)


def check_attend(answer, behaviour: str | None = None) -> str:
    """``answer(q (Tq, d_k), k (Tk, d_k), v (Tk, d_v)) -> (Tq, d_v)``: the read-outs
    ``softmax(q k^T / sqrt(d_k)) v``, softmax along each row."""
    return run_check("attend", answer, _readout, ATTEND_CASES, ATTEND_MISTAKES, behaviour)
