"""Checks for exercise sets 04-05: masks, and the softmax and attention backward.

References: :func:`mha.causal_mask`, :func:`mha.attention`,
:func:`mha.softmax_backward`, :func:`mha.attention_backward`.
"""

from __future__ import annotations

import numpy as np

from ..backward import attention_backward, softmax_backward
from ..masks import causal_mask, padding_mask
from ..reference import attention
from ._core import Case, CheckFailed, Mistake, Prediction, run_check, show

# -- 04 masks ------------------------------------------------------------------

CAUSAL_CASES = tuple(Case(f"t = {t}", (t,)) for t in (1, 2, 3, 5))

MASK_INVERTED = (
    "mask inverted: True must mean blocked in this package, and you blocked the keys a query "
    "may read (the `mask == 0` or SDPA True = allowed mix-up)."
)

CAUSAL_MISTAKES = (
    Mistake("mask inverted", MASK_INVERTED, lambda t: ~causal_mask(t)),
    Mistake("diagonal blocked",
            "you also blocked the diagonal: a position may read itself, so only keys strictly "
            "after it (j > i) are blocked.", lambda t: np.triu(np.ones((t, t), dtype=bool))),
    Mistake("past blocked",
            "you blocked the past instead of the future: row i is the query, column j the key, "
            "and key j is blocked when j > i (above the diagonal).",
            lambda t: causal_mask(t).T),
    Mistake("additive mask",
            "you returned an additive float mask (0 / -inf); this function returns the boolean "
            "mask, True = blocked (convert with mha.masks.to_additive only where a library "
            "needs it).", lambda t: np.where(causal_mask(t), -np.inf, 0.0)),
    Mistake("numbers, not booleans",
            "you returned 0 / 1 numbers; return a boolean array (dtype bool), True = blocked, "
            "so that no one mistakes it for weights or an additive mask.",
            lambda t: causal_mask(t).astype(int)),
)


def check_causal_mask(answer, behaviour: str | None = None) -> str:
    """``answer(t) -> (t, t)`` bool, True strictly above the diagonal."""
    return run_check("causal_mask", answer, causal_mask, CAUSAL_CASES, CAUSAL_MISTAKES,
                     behaviour)


TO_SDPA_CASES = (
    Case("causal mask, T = 3", (causal_mask(3),)),
    Case("(B, 1, 1, Tk) padding mask", (padding_mask(np.array([3, 1]), 3),)),
    Case("nothing blocked", (np.zeros((2, 2), dtype=bool),)),
)

TO_SDPA_MISTAKES = (
    Mistake("mask inverted", "mask inverted: SDPA's boolean attn_mask means True = allowed, "
            "the opposite of the package's True = blocked, so pass the inverse (~mask); you "
            "passed the package mask unchanged.", lambda m: m),
    Mistake("additive mask", "you returned numbers; SDPA also takes a float mask, but that one "
            "is added to the scores (0 / -inf) and does not mean allowed / blocked, so return the "
            "boolean True = allowed mask.", lambda m: np.where(m, -np.inf, 0.0)),
)


def check_to_sdpa(answer, behaviour: str | None = None) -> str:
    """``answer(mask) -> allowed``: package mask (True = blocked) to SDPA's True = allowed."""
    return run_check("to_sdpa", answer, lambda m: ~m, TO_SDPA_CASES, TO_SDPA_MISTAKES,
                     behaviour, prepare=_as_array)


def _as_array(got):
    return np.asarray(got) if type(got).__module__.startswith("numpy") else got


def _plain_softmax(s):
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    return e / e.sum(axis=-1, keepdims=True)


def _plain_attention(q, k, v, blocked, scale=None):
    """Attention with no refusals, so a mistaken mask gives what the learner's code would."""
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    w = _plain_softmax(np.where(blocked, -np.inf, s))
    return w @ v, w


def _mask_after_softmax(q, k, v, mask):
    _, w = _plain_attention(q, k, v, False)
    w = w * ~mask
    return w @ v, w


_rng = np.random.default_rng(4)
_Q3, _K3, _V3 = _rng.normal(size=(3, 4)), _rng.normal(size=(3, 4)), _rng.normal(size=(3, 2))
_Q4, _K4, _V4 = _rng.normal(size=(4, 4)), _rng.normal(size=(4, 4)), _rng.normal(size=(4, 3))
_LAST_KEY = np.zeros((4, 4), dtype=bool)
_LAST_KEY[:, 3] = True
_QB, _KB, _VB = (_rng.normal(size=(2, 1, 3, 4)) for _ in range(3))  # (B, H, T, d)

MASKED_CASES = (
    Case("two equal scores, only the first key allowed",
         (np.zeros((1, 2)), np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 1.0]]),
          np.array([[False, True]]))),
    Case("causal mask, T = 3", (_Q3, _K3, _V3, causal_mask(3))),
    Case("the last key is padding, T = 4", (_Q4, _K4, _V4, _LAST_KEY)),
    Case("nothing blocked", (_Q3, _K3, _V3, np.zeros((3, 3), dtype=bool))),
    Case("(B, 1, 1, Tk) padding mask against (B, H, T, T) scores",
         (_QB, _KB, _VB, padding_mask(np.array([3, 2]), 3)), behaviour="broadcast"),
    Case("causal and padding combined, (B, 1, T, T)",
         (_QB, _KB, _VB, causal_mask(3) | padding_mask(np.array([2, 3]), 3)),
         behaviour="broadcast"),
)

MASK_AFTER_SOFTMAX = (
    "mask applied after softmax: zeroing blocked weights after the softmax leaves rows that "
    "sum to less than 1 (two equal scores with the second blocked give [0.5, 0], not [1, 0]); "
    "set blocked scores to -inf before the softmax."
)

MASKED_MISTAKES = (
    Mistake("mask applied after softmax", MASK_AFTER_SOFTMAX, _mask_after_softmax),
    Mistake("mask inverted", MASK_INVERTED,
            lambda q, k, v, mask: _plain_attention(q, k, v, ~mask)),
    Mistake("mask ignored", "the mask is not applied: blocked keys still get weight; set the "
            "scores where mask is True to -inf before the softmax.",
            lambda q, k, v, mask: _plain_attention(q, k, v, False)),
    Mistake("not scaled", "the scores are not scaled: divide q.k by sqrt(d_k) before masking.",
            lambda q, k, v, mask: _plain_attention(q, k, v, mask, scale=1.0)),
)


def _output_and_weights(got):
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailed(f"masked_attention: return (output, weights); got {show(got, 120)}.")
    return tuple(got)


def check_masked_attention(answer, behaviour: str | None = None) -> str:
    """``answer(q, k, v, mask) -> (output, weights)``, ``mask`` True = blocked.

    Behaviours: ``"values"`` (2-d inputs) and ``"broadcast"`` (a ``(B, 1, 1, Tk)``
    or ``(B, 1, T, T)`` mask against ``(B, H, T, d)`` inputs).
    """
    return run_check("masked_attention", answer, lambda q, k, v, m: attention(q, k, v, mask=m),
                     MASKED_CASES, MASKED_MISTAKES, behaviour, prepare=_output_and_weights)


# -- 05 softmax backward ------------------------------------------------------

_P4 = np.exp(_rng.normal(size=4))
_P4 /= _P4.sum()
_P34 = np.exp(_rng.normal(size=(3, 4)))
_P34 /= _P34.sum(axis=-1, keepdims=True)

SOFTMAX_BACKWARD_CASES = (
    Case("weights (0.5, 0.5), loss = the first weight",
         (np.array([0.5, 0.5]), np.array([1.0, 0.0]))),
    Case("a constant upstream gives zero",
         (np.array([0.2, 0.3, 0.5]), np.array([3.0, 3.0, 3.0]))),
    Case("four weights, random upstream", (_P4, _rng.normal(size=4))),
    Case("three rows of four", (_P34, _rng.normal(size=(3, 4)))),
)

NO_CROSS_TERM = (
    "softmax backward without the cross term: raising one score also lowers every other "
    "weight (the -p_i p_j entries of the Jacobian), so subtract the weighted mean: "
    "p * (g - sum(p * g))."
)

SOFTMAX_BACKWARD_MISTAKES = (
    Mistake("softmax backward without the cross term", NO_CROSS_TERM, lambda p, g: p * g),
    Mistake("softmax backward without the cross term (diagonal only)",
            "softmax backward without the cross term: you used only the diagonal of the "
            "Jacobian, p_i (1 - p_i); the off-diagonal -p_i p_j entries matter too, which gives "
            "p * (g - sum(p * g)).", lambda p, g: p * (1 - p) * g),
    Mistake("sign flipped", "the sign is flipped: it is p * (g - sum(p * g)), not "
            "p * (sum(p * g) - g).", lambda p, g: p * ((p * g).sum(-1, keepdims=True) - g)),
    Mistake("summed over the wrong axis",
            "the weighted mean runs over the wrong axis: sum(p * g) is taken along each row "
            "(axis=-1, keepdims=True), the axis the softmax normalised.",
            lambda p, g: p * (g - (p * g).sum(0, keepdims=True))),
)


def check_softmax_backward(answer, behaviour: str | None = None) -> str:
    """``answer(p (..., n), g (..., n)) -> (..., n)``, the gradient on the scores."""
    return run_check("softmax_grad", answer, softmax_backward, SOFTMAX_BACKWARD_CASES,
                     SOFTMAX_BACKWARD_MISTAKES, behaviour)


def _grads_by_hand(q, k, v, g, cross_term=True, scale_grads=True, transpose_ds=True,
                   transpose_a=True):
    """The attention backward with one stage switched to a known mistake."""
    scale = 1.0 / np.sqrt(q.shape[-1])
    _, a = _plain_attention(q, k, v, False)
    d_v = (a.T if transpose_a else a) @ g
    d_a = g @ v.T
    d_s = a * (d_a - (a * d_a).sum(-1, keepdims=True)) if cross_term else a * d_a
    s = scale if scale_grads else 1.0
    return d_s @ k * s, (d_s.T if transpose_ds else d_s) @ q * s, d_v


_SQ, _SK, _SV, _SG = (_rng.normal(size=(3, 4)), _rng.normal(size=(3, 4)),
                      _rng.normal(size=(3, 2)), _rng.normal(size=(3, 2)))
_CQ, _CK, _CV, _CG = (_rng.normal(size=(2, 3)), _rng.normal(size=(4, 3)),
                      _rng.normal(size=(4, 2)), _rng.normal(size=(2, 2)))
_SQ2, _SK2, _SV2, _SG2 = (_rng.normal(size=(4, 2)) for _ in range(4))

ATTENTION_BACKWARD_CASES = tuple(
    Case(label, args, behaviour=b)
    for b in ("dv", "dq_dk")
    for label, args in (
        ("self-attention, T = 3, d_k = 4, dv = 2", (_SQ, _SK, _SV, _SG)),
        ("self-attention, T = 4, d_k = 2", (_SQ2, _SK2, _SV2, _SG2)),
        ("cross-attention, Tq = 2, Tk = 4", (_CQ, _CK, _CV, _CG)),
    )
)


def _three_grads(got):
    if not (isinstance(got, (tuple, list)) and len(got) == 3):
        raise CheckFailed(f"attention_grads: return (dq, dk, dv); got {show(got, 120)}.")
    return tuple(got)


def check_attention_backward(answer, behaviour: str | None = None) -> str:
    """``answer(q, k, v, d_out) -> (dq, dk, dv)`` for one unmasked head, scale 1/sqrt(d_k).

    Behaviours: ``"dv"`` compares dV only, ``"dq_dk"`` compares dQ and dK.
    """
    if behaviour not in ("dv", "dq_dk", None):
        raise ValueError(f"behaviour must be 'dv' or 'dq_dk'; got {behaviour!r}.")
    parts = {"dv": (2,), "dq_dk": (0, 1), None: (0, 1, 2)}[behaviour]

    def pick(grads):
        return tuple(grads[i] for i in parts)

    def reference(q, k, v, g):
        grads = attention_backward(q, k, v, g)
        return pick((grads.dq, grads.dk, grads.dv))

    def mistake(**switch):
        return lambda q, k, v, g: pick(_grads_by_hand(q, k, v, g, **switch))

    mistakes = (
        Mistake("softmax backward without the cross term", NO_CROSS_TERM,
                mistake(cross_term=False)),
        Mistake("scale missing in dQ and dK", "the forward multiplied the scores by "
                "1/sqrt(d_k), so dQ and dK carry that factor too: dQ = dS K / sqrt(d_k).",
                mistake(scale_grads=False)),
        Mistake("dS not transposed in dK", "dK needs dS transposed: dK = dS^T Q / sqrt(d_k) "
                "(row j of dK collects what every query sent to key j).",
                mistake(transpose_ds=False)),
        Mistake("A not transposed in dV", "dV needs the weights transposed: dV = A^T dO "
                "(value j receives from every query that read it).", mistake(transpose_a=False)),
    )
    return run_check("attention_grads", answer, reference, ATTENTION_BACKWARD_CASES,
                     mistakes, behaviour, prepare=lambda got: pick(_three_grads(got)))


PREDICTIONS = {
    "ex04.zeroed_after": Prediction(
        "weights_zeroed_after", [0.5, 0.0], 1e-6,
        known_wrong=(([1.0, 0.0], "[1, 0] is what masking before the softmax gives (the right "
                      "way); zeroing after the softmax keeps the 0.5 the first key already had."),),
        hint="Softmax of [0, 0] first, then set the blocked weight to 0."),
    "ex05.grad_075": Prediction(
        "grad_075", [0.1875, -0.1875], 1e-6,
        known_wrong=(([0.75, 0.0], NO_CROSS_TERM), ([0.1875, 0.0], NO_CROSS_TERM)),
        hint="Use p * (g - sum(p * g)) with p = [0.75, 0.25] and g = [1, 0]."),
    "ex05.constant_upstream": Prediction(
        "grad_constant", [0.0, 0.0, 0.0], 1e-9,
        known_wrong=(([0.6, 0.9, 1.5], NO_CROSS_TERM),),
        hint="g - sum(p * g) is g minus its weighted mean."),
}
