"""Lesson 03's "your turn": the scaled scores of one head.

``check_scaled_scores(answer)`` runs ``answer(q, k)`` with ``q (..., Tq, d_k)``
and ``k (..., Tk, d_k)`` and compares it with :func:`mha.reference.scores`,
``q k^T / sqrt(d_k)``. The cases have ``Tq``, ``Tk`` and ``d_k`` all
different, and one has leading (batch, head) axes, so each classic slip gives
numbers of its own and is named: no division, a division by ``d_k`` or by
``sqrt`` of a sequence length, a hard-coded 8, a multiplication by
``sqrt(d_k)``, ``K Q^T``, and ``k.T`` on a batch (it reverses every axis, not
the last two). On the batched case ``k.T`` usually makes NumPy's matmul raise
a shape error; the check then runs the answer once more on a probe whose
shapes let ``k.T`` through, and names the slip instead of passing on NumPy's
message.
"""

from __future__ import annotations

import numpy as np

from ..reference import scores as reference_scores
from ._core import Case, CheckFailed, Mistake, NotAttempted, _quiet_call, consistent, run_check

_rng = np.random.default_rng(303)
_Q2, _K2 = _rng.normal(size=(3, 16)), _rng.normal(size=(5, 16))  # Tq = 3, Tk = 5, d_k = 16
_Q1, _K1 = _rng.normal(size=(2, 4)), _rng.normal(size=(2, 4))  # Tq = Tk = 2, d_k = 4
_QB, _KB = _rng.normal(size=(4, 3, 4, 9)), _rng.normal(size=(4, 3, 4, 9))  # (B, H, T, d_k), B = T
# a probe, not a graded case: (B, H, T, d_k) = (1, 3, 3, 3), where q @ k.T runs (and is wrong)
_PROBE = Case("(B, H, T, d_k) = (1, 3, 3, 3)", (_rng.normal(size=(1, 3, 3, 3)),
                                                 _rng.normal(size=(1, 3, 3, 3))))

SCALED_SCORES_CASES = (
    Case("one head, Tq = 3, Tk = 5, d_k = 16", (_Q2, _K2)),
    Case("Tq = Tk = 2, d_k = 4", (_Q1, _K1)),
    Case("(B, H, T, d_k) = (4, 3, 4, 9)", (_QB, _KB)),
)


def _raw(q, k):
    return q @ np.swapaxes(k, -1, -2)


_K_T_SENTENCE = ("k.T reverses EVERY axis of a (B, H, T, d_k) array, not just the last two "
                 "(it gives (d_k, T, H, B)); swap only the last two: np.swapaxes(k, -1, -2) "
                 "(or k.swapaxes(-1, -2)), so the batch and head axes stay where they are.")

SCALED_SCORES_MISTAKES = (
    Mistake("not divided",
            "the scores are not divided: divide q k^T by sqrt(d_k), the square root of the "
            "width of the vectors you dot together (q.shape[-1]).",
            lambda q, k: _raw(q, k)),
    Mistake("divided by d_k",
            "you divided by d_k; divide by its square root, sqrt(d_k): the spread of q.k is "
            "sqrt(d_k), so dividing by d_k leaves the scores too flat.",
            lambda q, k: _raw(q, k) / q.shape[-1]),
    Mistake("divided by 8",
            "you divided by a fixed 8, which is sqrt(d_k) only when d_k = 64; read the width "
            "from the arrays, d_k = q.shape[-1], and divide by np.sqrt(d_k).",
            lambda q, k: _raw(q, k) / 8),
    Mistake("multiplied by sqrt(d_k)",
            "you multiplied by sqrt(d_k); divide by it: q k^T / np.sqrt(d_k) brings the spread "
            "of the scores down to 1, multiplying makes it d_k times larger.",
            lambda q, k: _raw(q, k) * np.sqrt(q.shape[-1])),
    Mistake("divided by sqrt(Tq)",
            "you divided by the square root of the number of queries (q.shape[-2] or len(q)); "
            "d_k is the width of each vector, the LAST axis: q.shape[-1].",
            lambda q, k: _raw(q, k) / np.sqrt(q.shape[-2])),
    Mistake("divided by sqrt(Tk)",
            "you divided by the square root of the number of keys; d_k is the width of each "
            "vector, the LAST axis: q.shape[-1].",
            lambda q, k: _raw(q, k) / np.sqrt(k.shape[-2])),
    Mistake("K Q^T",
            "your matrix is transposed: row i must be query i and column j key j, so "
            "S = q k^T (you computed k q^T).",
            lambda q, k: np.swapaxes(_raw(q, k), -1, -2) / np.sqrt(q.shape[-1])),
    Mistake("k.T on a batch", _K_T_SENTENCE, lambda q, k: q @ k.T / np.sqrt(q.shape[-1])),
)


def _uses_k_t(answer) -> bool:
    """On the probe the answer gives ``q @ k.T`` (under any of the scalings above)."""
    q, k = _PROBE.args
    try:
        got = _quiet_call(answer, _PROBE)
    except Exception:
        return False
    raw = q @ k.T
    factors = (1 / np.sqrt(3), 1, 1 / 3, 1 / 8, np.sqrt(3))  # d_k = 3 on the probe
    return any(consistent(got, raw * f, 1e-6) for f in factors)


def check_scaled_scores(answer, behaviour: str | None = None) -> str:
    """``answer(q (..., Tq, d_k), k (..., Tk, d_k)) -> (..., Tq, Tk)``, ``q k^T / sqrt(d_k)``."""
    __tracebackhide__ = True
    try:
        return run_check("scaled_scores", answer, lambda q, k: reference_scores(q, k),
                         SCALED_SCORES_CASES, SCALED_SCORES_MISTAKES, behaviour)
    except NotAttempted:
        raise
    except CheckFailed as failed:
        # k.T on the batched case makes NumPy raise a matmul shape error: name the slip
        if "your function raised" in str(failed) and _uses_k_t(answer):
            rest = str(failed).partition("and on the other cases: ")[2]
            extra = f" Then, on the 2-D cases: {rest}" if rest else ""
            raise CheckFailed(f"scaled_scores: {_K_T_SENTENCE}{extra}") from None
        raise
