"""Lesson 09's your-turn check: one tile step of the online softmax, for one query.

The running state of a query is ``m`` (the largest score so far), ``l`` (the sum of
``exp(s - m)`` so far) and ``o`` (the sum of ``exp(s - m) v`` so far, shape ``(dv,)``: the output
before the division by ``l``).
A tile brings scores ``s (n,)`` and values ``v (n, dv)``; the step returns
``(m_new, l_new, o_new)`` with ``m_new = max(m, max(s))`` and the old sums brought
to the new maximum by ``exp(m - m_new)``. The first tile starts from
``m = -inf, l = 0, o = 0``.
"""

from __future__ import annotations

import numpy as np

from ._core import Case, CheckFailed, Mistake, NotAttempted, run_check

__all__ = ["check_tile_step", "tile_step_reference"]


def _step(m, ell, o, s, v, *, rescale="both", running_max=True, shift="new", mix="@"):
    """The tile step, with one part switched to a known mistake."""
    m_new = max(m, float(np.max(s))) if running_max else float(np.max(s))
    factor = {"both": lambda: np.exp(m - m_new), "inverted": lambda: np.exp(m_new - m),
              "none": lambda: 1.0, "ratio": lambda: np.exp(m) / np.exp(m_new)}
    r = factor["none" if rescale in ("none", "sum only", "output only") else rescale]()
    e = np.exp(s - {"new": m_new, "old": m, "none": 0.0}[shift])
    r_l = np.exp(m - m_new) if rescale == "sum only" else r
    r_a = np.exp(m - m_new) if rescale == "output only" else r
    weighted = e @ v if mix == "@" else (e * v).sum()
    return m_new, ell * r_l + e.sum(), o * r_a + weighted


def tile_step_reference(m, ell, o, s, v):
    """``(m_new, l_new, o_new)`` after one tile: scores ``s (n,)``, values ``v (n, dv)``."""
    return _step(m, ell, o, s, v)


_rng = np.random.default_rng(90)
_V = _rng.normal(size=(3, 2))


def _state(scores, values):
    """The running state after the tiles ``scores`` (a list of arrays) of one query."""
    m, ell, o = -np.inf, 0.0, np.zeros(values.shape[-1])
    start = 0
    for s in scores:
        m, ell, o = _step(m, ell, o, s, values[start:start + len(s)])
        start += len(s)
    return m, ell, o


TILE_CASES = (
    Case("the first tile: m = -inf, l = 0, o = 0", (-np.inf, 0.0, np.zeros(2),
                                                     np.array([1.0, 2.0]), _V[:2])),
    Case("a tile that raises the maximum from 2 to 4",
         (*_state([np.array([1.0, 2.0])], _V), np.array([4.0, 0.0]), _V[1:3])),
    Case("a tile whose scores are all below the maximum",
         (*_state([np.array([3.0, 1.0])], _V), np.array([0.5, -1.0, 2.0]), _V)),
    Case("large scores: the maximum goes from 1000 to 1001",
         (*_state([np.array([1000.0, 999.0])], _V), np.array([1001.0]), _V[2:])),
)

TILE_MISTAKES = (
    Mistake("old sums not rescaled",
            "the old l and o are added as they are: when the maximum grows, multiply both by "
            "exp(m - m_new) first, or the earlier tiles count too much.",
            lambda *c: _step(*c, rescale="none")),
    Mistake("rescale factor inverted",
            "the old sums are multiplied by exp(m_new - m), which grows them; the factor that "
            "brings them to the new maximum is exp(m - m_new), at most 1.",
            lambda *c: _step(*c, rescale="inverted")),
    Mistake("only the sum rescaled",
            "l is rescaled but o is not: both running sums carry exp(-m), so both take the "
            "factor exp(m - m_new).", lambda *c: _step(*c, rescale="sum only")),
    Mistake("only the output rescaled",
            "o is rescaled but l is not: both running sums carry exp(-m), so both take the "
            "factor exp(m - m_new).", lambda *c: _step(*c, rescale="output only")),
    Mistake("the tile's maximum instead of the running maximum",
            "m_new is the largest score of this tile only; it must be the largest seen so far, "
            "max(m, max(s)), or a tile with smaller scores lowers it.",
            lambda *c: _step(*c, running_max=False)),
    Mistake("values mixed with * and sum",
            "mixed the values with * and sum instead of a weighted sum: (np.exp(s - m_new) * v)"
            ".sum() multiplies entries that do not belong together and adds them into one number "
            "(and fails when the tile's n keys differ from dv). The weighted sum of the value rows "
            "is np.exp(s - m_new) @ v, a (dv,) vector.", lambda *c: _step(*c, mix="*"),
            raises="could not be broadcast"),
    Mistake("rescale as a ratio of two exponentials",
            "rescale = exp(m) / exp(m_new) is right on paper, but each exponential alone overflows "
            "for large scores (exp(1000) = inf, and inf / inf = nan). Write it as one exponential "
            "of the difference, exp(m - m_new), which is at most 1.",
            lambda *c: _step(*c, rescale="ratio")),
    Mistake("the old maximum in the tile's exponentials",
            "the tile's exponentials subtract the old maximum, exp(s - m): a score above m then "
            "gives a number above 1 (inf on the first tile, where m = -inf). Subtract m_new, the "
            "maximum after this tile, as the rescaled old sums do.",
            lambda *c: _step(*c, shift="old")),
    Mistake("softmax without the max shift",
            "exp of the raw scores, exp(s): exp(1000) overflows to inf. Subtract the running "
            "maximum before exp: np.exp(s - m_new).", lambda *c: _step(*c, shift="none")),
)


def _triple(out):
    """The answer's ``(m_new, l_new, o_new)``; ``...`` left in means not attempted."""
    if out is Ellipsis or (isinstance(out, (tuple, list)) and any(o is Ellipsis for o in out)):
        raise NotAttempted("tile_step: not attempted yet: replace each ... with your line.")
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise CheckFailed("tile_step: return three things, (m_new, l_new, o_new); got "
                          f"{type(out).__name__}.")
    m_new, l_new, o_new = out
    return np.float64(m_new), np.float64(l_new), np.asarray(o_new, dtype=np.float64)


def check_tile_step(answer, behaviour: str | None = None) -> str:
    """``answer(m, l, o, s, v) -> (m_new, l_new, o_new)``: one tile of the online softmax."""
    __tracebackhide__ = True
    return run_check("tile_step", answer, tile_step_reference, TILE_CASES, TILE_MISTAKES,
                     behaviour, prepare=_triple)
