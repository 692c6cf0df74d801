"""Lesson 04's "your turn": a key padding mask built from the sequence lengths.

``check_padding(answer)`` runs ``answer(lengths, t)`` and compares it with
:func:`mha.masks.padding_mask`: a ``(B, 1, 1, t)`` boolean mask, True (blocked)
on key ``j`` of sequence ``b`` exactly when ``j >= lengths[b]``. The cases have
``B != t`` and different lengths, so each classic slip is named: the mask
inverted (True on the real keys), left as ``(B, t)`` without the two axes
of size 1, the padding one key off either way, and a 0/1 number mask.
"""

from __future__ import annotations

import numpy as np

from ..masks import padding_mask
from ._core import Case, Mistake, run_check

PADDING_CASES = (
    Case("lengths [5, 3], t = 5", (np.array([5, 3]), 5)),
    Case("lengths [2, 4, 1], t = 4", (np.array([2, 4, 1]), 4)),
    Case("lengths [3], t = 6", (np.array([3]), 6)),
)


def _flat(lengths, t, shift=0):  # (B, t): True where key j >= lengths[b] + shift
    return np.arange(t)[None, :] >= np.asarray(lengths)[:, None] + shift


def _4d(flat):  # (B, t) -> (B, 1, 1, t)
    return flat[:, None, None, :]


PADDING_MISTAKES = (
    Mistake("mask inverted",
            "your mask is True on the real keys; in this package True means blocked, so it must be "
            "True on the padding: key j of sequence b where j >= lengths[b].",
            lambda lengths, t: _4d(~_flat(lengths, t))),
    Mistake("not reshaped to (B, 1, 1, Tk)",
            "your mask has shape (B, Tk); against (B, H, Tq, Tk) scores it would line B up "
            "with the queries: add the two axes of size 1, mask[:, None, None, :].",
            lambda lengths, t: _flat(lengths, t)),
    Mistake("one key too many",
            "you also block the last real key: key j is padding when j >= lengths[b] (keys 0 .. "
            "lengths[b] - 1 are text).",
            lambda lengths, t: _4d(_flat(lengths, t, -1))),
    Mistake("one key too few",
            "you leave the first padded key open: key j is padding when j >= lengths[b], and key "
            "lengths[b] itself is the first one.",
            lambda lengths, t: _4d(_flat(lengths, t, 1))),
    Mistake("0/1 numbers",
            "you returned numbers; a mask here is boolean (dtype bool), True = blocked: compare, "
            "do not cast to int or float.",
            lambda lengths, t: _4d(_flat(lengths, t)).astype(float)),
)


def check_padding(answer, behaviour: str | None = None) -> str:
    """``answer(lengths (B,), t) -> (B, 1, 1, t)`` bool, True on the padded keys."""
    __tracebackhide__ = True
    return run_check("padding", answer, lambda lengths, t: padding_mask(lengths, t),
                     PADDING_CASES, PADDING_MISTAKES, behaviour)
