"""Checks for exercise sets 04-05: masks, and the softmax and attention backward.

References: :func:`mha.causal_mask`, :func:`mha.attention`,
:func:`mha.softmax_backward`, :func:`mha.attention_backward`.
"""

from __future__ import annotations

import numpy as np

from ..backward import attention_backward, softmax_backward
from ..masks import causal_mask, padding_mask
from ..reference import attention
from ._core import Case, CheckFailed, Mistake, Prediction, as_numbers, show
from ._tasks import Rule, Task

# -- 04 masks ------------------------------------------------------------------

CAUSAL_CASES = tuple(Case(f"t = {t}", (t,)) for t in (1, 2, 3, 5)) + tuple(
    Case(f"t = {t}", (t,), hidden=True) for t in (4, 8))

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


def _no_python_list(got):
    """A list (``.tolist()``) or tuple is refused: the task asks for a boolean array."""
    if isinstance(got, (list, tuple)):
        raise CheckFailed(
            f"causal_mask: you returned a Python {type(got).__name__}; return a NumPy boolean "
            "array of shape (t, t), True = blocked (drop the .tolist(): masks are combined "
            "with |, which a list does not support).")
    return got


# Messages name the learner's function: ``causal`` in set 04, ``causal_mask`` in lesson 00.
CAUSAL = Task("causal_mask", causal_mask, CAUSAL_CASES, CAUSAL_MISTAKES, prepare=_no_python_list,
              rules=(Rule("do not call mha.causal_mask", calls=(("mha", "causal_mask"),)),
                     # the function causal_mask calls: the same mask from the positions
                     Rule("do not call mha.masks.mask_from_positions either (it builds the "
                          "causal mask from the positions)",
                          calls=(("mha", "mask_from_positions"),))),
              says_answer_name=True)


def check_causal_mask(answer, behaviour: str | None = None) -> str:
    """``answer(t) -> (t, t)`` bool, True strictly above the diagonal."""
    return CAUSAL.check(answer, behaviour)


TO_SDPA_CASES = (
    Case("causal mask, T = 3", (causal_mask(3),)),
    Case("(B, 1, 1, Tk) padding mask", (padding_mask(np.array([3, 1]), 3),)),
    Case("nothing blocked", (np.zeros((2, 2), dtype=bool),)),
    Case("[[False, True], [False, False]]", (np.array([[False, True], [False, False]]),),
         hidden=True),
    Case("causal mask, T = 5", (causal_mask(5),), hidden=True),
)

FLOAT_01_MASK = (
    "you returned a 0/1 number mask; a float mask is added to the scores: 0/1 blocks nothing; "
    "return a boolean mask, True = may attend (~mask)."
)

TO_SDPA_MISTAKES = (
    Mistake("mask inverted", "mask inverted: SDPA's boolean attn_mask means True = allowed, "
            "the opposite of the package's True = blocked, so pass the inverse (~mask); you "
            "passed the package mask unchanged.", lambda m: m),
    Mistake("additive mask", "you returned numbers; SDPA also takes a float mask, but that one "
            "is added to the scores (0 / -inf) and does not mean allowed / blocked, so return the "
            "boolean True = allowed mask.", lambda m: np.where(m, -np.inf, 0.0)),
    Mistake("0/1 float mask", FLOAT_01_MASK, lambda m: (~m).astype(float)),
    Mistake("0/1 float mask", FLOAT_01_MASK, lambda m: m.astype(float)),
)


def _as_array(got):
    if type(got).__module__.startswith("torch"):
        return as_numbers(got)
    return np.asarray(got) if type(got).__module__.startswith("numpy") else got


TO_SDPA = Task("to_sdpa", lambda m: ~m, TO_SDPA_CASES, TO_SDPA_MISTAKES, prepare=_as_array,
               rules=(Rule("do not call mha.masks.to_sdpa", calls=(("mha", "to_sdpa"),)),))


def check_to_sdpa(answer, behaviour: str | None = None) -> str:
    """``answer(mask) -> allowed``: package mask (True = blocked) to SDPA's True = allowed."""
    return TO_SDPA.check(answer, behaviour)


def _plain_softmax(s):
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    return e / e.sum(axis=-1, keepdims=True)


def _plain_attention(q, k, v, blocked, scale=None, axis=-1, k_q_t=False, fill=-np.inf):
    """Attention with no refusals, so a mistaken mask gives what the learner's code would.
    ``fill``: what a blocked score becomes (-inf, or a large negative number like -1e9,
    which differs where a whole column is blocked and the softmax runs down the columns)."""
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = (k @ np.swapaxes(q, -1, -2) if k_q_t else q @ np.swapaxes(k, -1, -2)) * scale
    s = np.where(blocked, fill, s)
    if axis == -1:
        w = _plain_softmax(s)
    else:
        w = np.swapaxes(_plain_softmax(np.swapaxes(s, -1, -2)), -1, -2)
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
    # graded only
    Case("three equal scores, the middle key blocked",
         (np.zeros((1, 2)), np.zeros((3, 2)), np.array([[3.0], [6.0], [9.0]]),
          np.array([[False, True, False]])), hidden=True),
    Case("scores [4, 0] / sqrt(4), nothing blocked",
         (np.ones((1, 4)), np.array([[1.0] * 4, [0.0] * 4]), np.array([[1.0], [0.0]]),
          np.array([[False, False]])), hidden=True),
    Case("float32 inputs, causal mask, T = 4",
         (_Q4.astype(np.float32), _K4.astype(np.float32), _V4.astype(np.float32),
          causal_mask(4)), hidden=True),
    Case("(B, 1, 1, Tk) padding mask, B = 2, H = 1, T = 2",
         (np.zeros((2, 1, 2, 2)), np.zeros((2, 1, 2, 2)),
          np.array([1.0, 3.0, 5.0, 7.0]).reshape(2, 1, 2, 1),
          np.array([[False, True], [False, False]]).reshape(2, 1, 1, 2)),
         behaviour="broadcast", hidden=True),
    Case("(B, H, T, d) = (2, 3, 4, 2) with a (B, 1, 1, Tk) padding mask",
         (*(np.random.default_rng(40 + i).normal(size=(2, 3, 4, 2)) for i in range(3)),
          padding_mask(np.array([4, 2]), 4)), behaviour="broadcast", hidden=True),
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
    Mistake("softmax over the wrong axis",
            "softmax over the wrong axis: your weights' columns sum to 1, but each row (one "
            "query) must; take the softmax along the last axis (axis=-1).",
            lambda q, k, v, mask: _plain_attention(q, k, v, mask, axis=-2)),
    Mistake("softmax over the wrong axis, blocked scores set to -1e9",
            "softmax over the wrong axis: your weights' columns sum to 1, but each row (one "
            "query) must; take the softmax along the last axis (axis=-1).",
            lambda q, k, v, mask: _plain_attention(q, k, v, mask, axis=-2, fill=-1e9)),
    Mistake("K Q^T", "your score matrix is transposed: row i must be the query at i and "
            "column j the key at j, so S = Q K^T / sqrt(d_k) (you computed K Q^T).",
            lambda q, k, v, mask: _plain_attention(q, k, v, mask, k_q_t=True)),
)


def _output_and_weights(got):
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailed(f"masked_attention: return (output, weights); got {show(got, 120)}.")
    return tuple(got)


# The set allows mha.softmax, not mha.attention: nor anything else of the package that
# computes attention for the answer (MultiHeadAttention, tiled_attention, the torch layers:
# they call mha.attention or do its work themselves). The scores, the masks, the softmax and
# the package's small helpers stay allowed.
ALLOWED_IN_MASKED = ("mha.reference.softmax", "mha.reference.scores", "mha.reference._",
                     "mha.masks.", "mha._checks.", "mha._wrap.", "mha.__getattr__",
                     "mha.source.")

MASKED = Task("masked_attention", lambda q, k, v, m: attention(q, k, v, mask=m), MASKED_CASES,
              MASKED_MISTAKES, prepare=_output_and_weights,
              rules=(Rule("do not call mha.attention or any other function of mha that computes "
                          "attention (mha.softmax, mha.scores and mha.masks are allowed)",
                          calls=(("mha", "attention"),), allowed_mha=ALLOWED_IN_MASKED),
                     # PyTorch's fused attention takes the mask and does the rest
                     Rule("do not call torch.nn.functional.scaled_dot_product_attention (SDPA): "
                          "it applies the mask and does the attention for you",
                          calls=(("torch", "scaled_dot_product_attention"),),
                          detail="calls torch.nn.functional.scaled_dot_product_attention"),))


def check_masked_attention(answer, behaviour: str | None = None) -> str:
    """``answer(q, k, v, mask) -> (output, weights)``, ``mask`` True = blocked.

    Behaviours: ``"values"`` (2-d inputs) and ``"broadcast"`` (a ``(B, 1, 1, Tk)``
    or ``(B, 1, T, T)`` mask against ``(B, H, T, d)`` inputs).
    """
    return MASKED.check(answer, behaviour)


# -- 05 softmax backward ------------------------------------------------------

_P4 = np.exp(_rng.normal(size=4))
_P4 /= _P4.sum()
_P34 = np.exp(_rng.normal(size=(3, 4)))
_P34 /= _P34.sum(axis=-1, keepdims=True)
_ROWS_1024 = np.exp(np.random.default_rng(50).normal(size=(2, 1024)))  # own stream: the
_ROWS_1024 /= _ROWS_1024.sum(axis=-1, keepdims=True)  # cases drawn from _rng stay as they were

SOFTMAX_BACKWARD_CASES = (
    Case("weights (0.5, 0.5), loss = the first weight",
         (np.array([0.5, 0.5]), np.array([1.0, 0.0]))),
    Case("a constant upstream gives zero",
         (np.array([0.2, 0.3, 0.5]), np.array([3.0, 3.0, 3.0]))),
    Case("four weights, random upstream", (_P4, _rng.normal(size=4))),
    Case("three rows of four", (_P34, _rng.normal(size=(3, 4)))),
    Case("two rows of two: rows (0.25, 0.75) and (0.6, 0.4)",
         (np.array([[0.25, 0.75], [0.6, 0.4]]), np.array([[1.0, -1.0], [0.5, 2.0]]))),
    # large enough that the Jacobian rule is seen in the learner's own check too, not only
    # by grading (an n x n Jacobian passed the visible cells and failed the graded one)
    Case("two rows of 1024 weights (the vector form needs no 1024 x 1024 matrix)",
         (_ROWS_1024, np.random.default_rng(51).normal(size=(2, 1024)))),
    # graded only
    Case("rows (0.5, 0.5) and (0.1, 0.9)",
         (np.array([[0.5, 0.5], [0.1, 0.9]]), np.array([[0.0, 1.0], [2.0, 2.0]])), hidden=True),
    Case("a row of 1024 weights (the vector form needs no 1024 x 1024 matrix)",
         (np.full((1, 1024), 1 / 1024), np.linspace(-1.0, 1.0, 1024)[None, :]), hidden=True),
)

NO_CROSS_TERM = (
    "softmax backward without the cross term: raising one score also lowers every other "
    "weight (the -p_i p_j entries of the Jacobian), so subtract the weighted mean: "
    "p * (g - sum(p * g))."
)

DIAGONAL_ONLY = (
    "softmax backward without the cross term: you used only the diagonal of the "
    "Jacobian, p_i (1 - p_i); the off-diagonal -p_i p_j entries matter too, which gives "
    "p * (g - sum(p * g))."
)

SOFTMAX_BACKWARD_MISTAKES = (
    Mistake("softmax backward without the cross term", NO_CROSS_TERM, lambda p, g: p * g),
    Mistake("softmax backward without the cross term (diagonal only)", DIAGONAL_ONLY,
            lambda p, g: p * (1 - p) * g),
    Mistake("sign flipped", "the sign is flipped: it is p * (g - sum(p * g)), not "
            "p * (sum(p * g) - g).", lambda p, g: p * ((p * g).sum(-1, keepdims=True) - g)),
    Mistake("summed over the wrong axis",
            "the weighted mean runs over the wrong axis: sum(p * g) is taken along each row "
            "(axis=-1, keepdims=True), the axis the softmax normalised.",
            lambda p, g: p * (g - (p * g).sum(0, keepdims=True))),
    Mistake("keepdims dropped",
            "the row sums lost their axis: sum(p * g, axis=-1) without keepdims=True has shape "
            "(rows,), which NumPy lines up with the last axis (an error, or on a square input "
            "wrong numbers without one); keep it, (p * g).sum(axis=-1, keepdims=True).",
            lambda p, g: p * (g - (p * g).sum(-1)), raises="could not be broadcast"),
    Mistake("unweighted mean",
            "you subtracted the plain mean of g; subtract its mean weighted by the softmax "
            "weights, sum(p * g) along the row: p * (g - (p * g).sum(axis=-1, keepdims=True)).",
            lambda p, g: p * (g - g.mean(-1, keepdims=True))),
    Mistake("unweighted sum",
            "you subtracted the plain sum of g; subtract its mean weighted by the softmax "
            "weights, sum(p * g) along the row: p * (g - (p * g).sum(axis=-1, keepdims=True)).",
            lambda p, g: p * (g - g.sum(-1, keepdims=True))),
    Mistake("summed over all rows",
            "you summed p * g over the whole array, so every row subtracts the same number; "
            "each row (one softmax) has its own weighted mean: (p * g).sum(axis=-1, "
            "keepdims=True).", lambda p, g: p * (g - (p * g).sum())),
    Mistake("factor p left out",
            "the factor p in front is missing: the gradient is p * (g - sum(p * g)), "
            "each entry multiplied by its own weight p_i (a weight near 0 passes almost "
            "nothing back).", lambda p, g: g - (p * g).sum(-1, keepdims=True)),
)


def _jacobian_budget(case: Case):
    """Bytes a vector-form answer stays well under on the large cases: 64 copies of the
    input; the n x n Jacobian alone is n times the input (NumPy's arrays as tracemalloc
    counts them, torch's as the largest tensor a torch call returned: torch.outer,
    torch.diag_embed, torch.autograd.functional.jacobian)."""
    p = case.args[0]
    return 64 * p.nbytes if p.shape[-1] >= 1024 else None


SOFTMAX_BACKWARD = Task(
    "softmax_grad", softmax_backward, SOFTMAX_BACKWARD_CASES, SOFTMAX_BACKWARD_MISTAKES,
    rules=(Rule("do not call mha.softmax_backward", calls=(("mha", "softmax_backward"),)),
           Rule("use the vector form, without building the n x n Jacobian",
                max_peak=_jacobian_budget,
                detail="held {name} at once, the size of an n x n matrix")))


def check_softmax_backward(answer, behaviour: str | None = None) -> str:
    """``answer(p (..., n), g (..., n)) -> (..., n)``, the gradient on the scores."""
    return SOFTMAX_BACKWARD.check(answer, behaviour)


def _grads_by_hand(q, k, v, g, cross_term=True, scale_grads=True, transpose_ds=True,
                   transpose_a=True, diagonal_only=False, transpose_da=False):
    """The attention backward with one stage switched to a known mistake."""
    scale = 1.0 / np.sqrt(q.shape[-1])
    _, a = _plain_attention(q, k, v, False)
    d_v = (a.T if transpose_a else a) @ g
    d_a = (v @ g.T) if transpose_da else g @ v.T
    if diagonal_only:
        d_s = a * (1 - a) * d_a
    else:
        d_s = a * (d_a - (a * d_a).sum(-1, keepdims=True)) if cross_term else a * d_a
    s = scale if scale_grads else 1.0
    return d_s @ k * s, (d_s.T if transpose_ds else d_s) @ q * s, d_v


_SQ, _SK, _SV, _SG = (_rng.normal(size=(3, 4)), _rng.normal(size=(3, 4)),
                      _rng.normal(size=(3, 2)), _rng.normal(size=(3, 2)))
_CQ, _CK, _CV, _CG = (_rng.normal(size=(2, 3)), _rng.normal(size=(4, 3)),
                      _rng.normal(size=(4, 2)), _rng.normal(size=(2, 2)))
_SQ2, _SK2, _SV2, _SG2 = (_rng.normal(size=(4, 2)) for _ in range(4))

_HR = np.random.default_rng(11)  # the graded-only cases draw from their own stream
_HQ, _HK, _HV, _HG = (_HR.normal(size=(2, 3)), _HR.normal(size=(3, 3)), _HR.normal(size=(3, 2)),
                      _HR.normal(size=(2, 2)))
_HQ5, _HK5, _HV5, _HG5 = (_HR.normal(size=(5, 3)) for _ in range(4))

ATTENTION_BACKWARD_CASES = tuple(
    Case(label, args, behaviour=b)
    for b in ("dv", "dq_dk")
    for label, args in (
        ("self-attention, T = 3, d_k = 4, dv = 2", (_SQ, _SK, _SV, _SG)),
        ("self-attention, T = 4, d_k = 2", (_SQ2, _SK2, _SV2, _SG2)),
        ("cross-attention, Tq = 2, Tk = 4", (_CQ, _CK, _CV, _CG)),
    )
) + tuple(
    Case(label, args, behaviour=b, hidden=True)
    for b in ("dv", "dq_dk")
    for label, args in (
        ("scores [2, 0] for query 0, d_out picks it",
         (np.array([[1.0], [0.0]]), np.array([[2.0], [0.0]]), np.ones((2, 1)),
          np.array([[1.0], [0.0]]))),
        ("cross-attention, Tq = 2, Tk = 3, d_k = 3", (_HQ, _HK, _HV, _HG)),
        ("self-attention, T = 5, d_k = 3", (_HQ5, _HK5, _HV5, _HG5)),
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
    return attention_backward_task(behaviour).check(answer, behaviour)


def attention_backward_task(behaviour: str | None) -> Task:
    """The task of one graded cell: ``"dv"`` compares dV, ``"dq_dk"`` dQ and dK."""
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
        Mistake("softmax backward without the cross term (diagonal only)", DIAGONAL_ONLY,
                mistake(diagonal_only=True)),
        Mistake("dA transposed", "dA is transposed: dA = dO V^T, shape (Tq, Tk), one row per "
                "query like A (you computed V dO^T).", mistake(transpose_da=True)),
    )
    return Task("attention_grads", reference, ATTENTION_BACKWARD_CASES, mistakes,
                prepare=lambda got: pick(_three_grads(got)),
                rules=(Rule("do not call mha.attention_backward",
                            calls=(("mha", "attention_backward"),)),))


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
