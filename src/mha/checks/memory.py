"""Checks for exercise set 09: the size of the score tensor, the online softmax, float16.

The online softmax is the idea behind tiled (FlashAttention-style) attention: a row's
softmax and read-out computed block by block over the keys, keeping only a running
maximum, a running sum and a running output.
"""

from __future__ import annotations

import numpy as np

from ..reference import softmax
from ._core import Case, Mistake, Prediction
from ._tasks import Rule, Task


def _reference(scores, values, block):
    return softmax(np.asarray(scores, dtype=float)) @ values


def _online(scores, values, block, rescale=True, shift=True, rescale_out=True,
            rescale_sum=True):
    """The online softmax with one step switched to a known mistake."""
    m, total, out = -np.inf, 0.0, np.zeros(values.shape[-1])
    for j in range(0, len(scores), block):
        s, v = scores[j:j + block], values[j:j + block]
        m_new = max(m, float(np.max(s))) if shift else 0.0
        correction = np.exp(m - m_new) if (rescale and shift) else 1.0
        e = np.exp(s - m_new)
        total = total * (correction if rescale_sum else 1.0) + e.sum()
        out = out * (correction if rescale_out else 1.0) + e @ v
        m = m_new
    return out / total


_rng = np.random.default_rng(9)
_V6 = _rng.normal(size=(6, 2))

ONLINE_CASES = (
    Case("6 keys in blocks of 2, the maximum grows every block",
         (np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]), _V6, 2)),
    Case("5 keys in blocks of 2 (a short last block)", (_rng.normal(size=5), _V6[:5], 2)),
    Case("one block holds every key", (np.array([1.0, -1.0, 0.5]), _V6[:3], 8)),
    Case("blocks of 1", (np.array([2.0, 0.0, 1.0, 3.0]), _V6[:4], 1)),
    Case("large scores in blocks of 2", (np.array([1000.0, 999.0, 1001.0, 998.0]), _V6[:4], 2)),
    # graded only
    Case("scores [0, ln 3, 5000, 5000] in blocks of 2",
         (np.array([0.0, np.log(3.0), 5000.0, 5000.0]), np.array([[1.0], [5.0], [2.0], [4.0]]), 2),
         hidden=True),
    Case("scores [0, ln 3] in blocks of 1", (np.array([0.0, np.log(3.0)]),
                                            np.array([[1.0], [5.0]]), 1), hidden=True),
    Case("scores near 20000 (past np.longdouble's exp) in blocks of 3",
         (np.array([20000.0, 19999.0, 20001.0, 19998.0, 20002.0, 0.0, 19997.0]),
          np.random.default_rng(92).normal(size=(7, 2)), 3),
         hidden=True),
    Case("200 keys in blocks of 16", (np.random.default_rng(90).normal(size=200) * 3,
                                     np.random.default_rng(91).normal(size=(200, 3)), 16),
         hidden=True),
)

ONLINE_MISTAKES = (
    Mistake("running sum not rescaled",
            "the running sum and output are not rescaled when the maximum grows: multiply both "
            "by exp(m_old - m_new) before adding the new block, or earlier blocks count too much.",
            lambda s, v, b: _online(s, v, b, rescale=False)),
    Mistake("running output not rescaled",
            "the running output is not rescaled when the maximum grows (the sum is): multiply "
            "the output o by exp(m_old - m_new) too before adding the new block.",
            lambda s, v, b: _online(s, v, b, rescale_out=False)),
    Mistake("running sum not rescaled (output rescaled)",
            "the running sum l is not rescaled when the maximum grows (the output is): multiply "
            "l by exp(m_old - m_new) too before adding the new block.",
            lambda s, v, b: _online(s, v, b, rescale_sum=False)),
    Mistake("softmax without the max shift",
            "softmax without the max shift: exp(1000) overflows to inf and inf / inf is NaN; "
            "keep a running maximum and subtract it before exp.",
            lambda s, v, b: _online(s, v, b, shift=False)),
)


def _whole_row(case: Case) -> float:
    """A softmax call counts as "on the whole row" when it gets every score of a row that
    spans more than one block."""
    scores, _, block = case.args
    return len(scores) if len(scores) > block else np.inf


_TORCH_SOFTMAXES = tuple(("torch", name) for name in (
    "softmax", "log_softmax", "special_softmax", "special_log_softmax", "_softmax",
    "_log_softmax"))

# The package's softmax (on one block; the rule above refuses it on the whole row) and its
# small helpers; not tiled_attention, attention, the layers or anything else that computes
# the softmax's read-out for the answer.
ALLOWED_IN_ONLINE = ("mha.reference.softmax", "mha.reference._", "mha._checks.", "mha._wrap.",
                     "mha.__getattr__", "mha.source.")

ONLINE = Task("online_softmax", _reference, ONLINE_CASES, ONLINE_MISTAKES, rules=(
    # torch.softmax, Tensor.softmax and F.softmax alike (a torch function mode sees their
    # arguments), scipy's and the package's
    Rule("do not call a softmax function on the whole row (mha.softmax, scipy.special.softmax, "
         "torch.nn.functional.softmax)",
         calls=(("mha", "softmax"), ("scipy", "softmax"), ("scipy", "log_softmax"),
                *_TORCH_SOFTMAXES),
         min_size=_whole_row, detail="calls {name} on every score of the row at once"),
    # the same softmax written by hand, np.exp(s - s.max()) / its sum: no block-wise answer
    # takes exp of a whole row's scores at once (np.exp under any name the answer's code
    # bound it to, `from numpy import exp` too: docs/TEACHING.md). Every block's scores
    # reshaped to (n_blocks, block) and taken exp of in one call is refused as well: the
    # task asks for one block at a time, as a tile of tiled attention holds one block of keys.
    Rule("work one block at a time and do not compute the softmax on the whole row",
         calls=(("numpy", "exp"), ("numpy", "exp2"), ("torch", "exp"), ("torch", "exp_"),
                ("torch", "exp2"), ("torch", "special_exp2")),
         min_size=_whole_row,
         detail="takes {name} of every score of the row at once (every block in one call, "
                "even reshaped to (n_blocks, block), is the whole row: each exp may see one "
                "block, as a tile of tiled attention holds one block of keys)"),
    # a function of the package that does the work: tiled_attention is this very loop. Seen
    # by the profile hook only (no names for grading's reading of the code: a self-test in
    # the answer cell that compares with mha.attention is no call of the answer's)
    Rule("do not call mha.tiled.tiled_attention, mha.attention or any other function of mha "
         "that does the work (mha.softmax on one block is allowed)",
         allowed_mha=ALLOWED_IN_ONLINE, detail="calls {name}"),
))


def check_online_softmax(answer, behaviour: str | None = None) -> str:
    """``answer(scores (Tk,), values (Tk, dv), block) -> (dv,)``: softmax(scores) @ values,
    computed one block of keys at a time."""
    return ONLINE.check(answer, behaviour)


_SCORES_BYTES = 4 * 12 * 2048 * 2048 * 4  # (B, H, T, T) float32 at B = 4, H = 12, T = 2048
_QUADRATIC = "the score tensor is (B, H, T, T): doubling T doubles both of its last two axes."

PREDICTIONS = {
    "ex09.score_bytes": Prediction(
        "score_bytes", _SCORES_BYTES, 0.5,
        known_wrong=((4 * 12 * 2048 * 4, "that is one row per position; the score tensor has "
                      "T * T entries per head: (B, H, T, T)."),
                     (_SCORES_BYTES // 4, "float32 takes 4 bytes a number; you counted "
                      "numbers, not bytes.")),
        hint="B * H * T * T numbers of 4 bytes."),
    "ex09.score_bytes_2t": Prediction(
        "score_bytes_2t", 4 * _SCORES_BYTES, 0.5,
        known_wrong=((2 * _SCORES_BYTES, _QUADRATIC),),
        hint="What happens to T * T when T doubles?"),
    "ex09.raw_fits_fp16": Prediction(
        "raw_score_fits_fp16", False,
        hint="128 * 30 * 30 = 115200, and float16 stops at 65504."),
    "ex09.scaled_fits_fp16": Prediction(
        "scaled_first_fits_fp16", True,
        hint="Scale q by 1/sqrt(128) first: 128 * (30 / sqrt(128)) * 30 is about 10182."),
}
