"""Checks for exercise set 10: an invariance test a learner writes, and symptoms to bugs.

The models a causality test is tried on are single-head NumPy attention over ``x`` itself
(no projections): a correct causal one, one without a mask, one whose mask blocks the past,
and one that splits heads with a straight reshape (the `view` bug), which mixes positions.
"""

from __future__ import annotations

import numpy as np

from ..masks import causal_mask
from ..multihead import merge_heads
from ..reference import attention
from ._core import Case, Mistake, Prediction, run_check


def causal_model(x):
    """(B, T, C) -> (B, T, C): one causal head over x itself."""
    return attention(x, x, x, mask=causal_mask(x.shape[1]))[0]


def unmasked_model(x):
    return attention(x, x, x)[0]


def past_blocked_model(x):
    t = x.shape[1]
    return attention(x, x, x, mask=np.tril(np.ones((t, t), dtype=bool), k=-1))[0]


def view_split_model(x, n_heads: int = 2):
    """Causal attention per head, heads split with a straight reshape to (B, H, T, dh)."""
    b, t, c = x.shape
    heads = x.reshape(b, n_heads, t, c // n_heads)  # the bug: mixes positions
    return merge_heads(attention(heads, heads, heads, mask=causal_mask(t))[0])


def leaks_future_reference(model, x, seed: int = 0) -> bool:
    """True when changing the tokens after some t changes an output at or before t."""
    rng = np.random.default_rng(seed)
    base = model(x)
    for t in range(x.shape[1] - 1):
        changed = x.copy()
        changed[:, t + 1:] = rng.normal(size=changed[:, t + 1:].shape)
        if not np.allclose(model(changed)[:, : t + 1], base[:, : t + 1], atol=1e-9):
            return True
    return False


_X = np.random.default_rng(10).normal(size=(2, 4, 4))  # (B, T, C)

LEAK_CASES = (
    Case("a correct causal head", (causal_model, _X)),
    Case("no mask at all", (unmasked_model, _X)),
    Case("a mask that blocks the past instead of the future", (past_blocked_model, _X)),
    Case("heads split with a straight reshape (the view bug)", (view_split_model, _X)),
)

LEAK_MISTAKES = (
    Mistake("compares every position",
            "your test flags a correct causal head: when tokens after t change, the outputs "
            "after t may change too, so compare only the outputs at positions 0 .. t.",
            lambda model, x: True),
    Mistake("never flags", "your test never flags a leak: change the tokens after t (not at "
            "or before it) and compare the outputs at positions 0 .. t, for every t.",
            lambda model, x: False),
)


def check_leak_test(answer, behaviour: str | None = None) -> str:
    """``answer(model, x) -> bool``: does ``model`` let a position read later tokens?"""
    return run_check("leaks_future", answer, leaks_future_reference, LEAK_CASES, LEAK_MISTAKES,
                     behaviour, prepare=lambda got: np.bool_(got) if isinstance(got, bool) else got)


SYMPTOMS = {
    "a": "mask applied after softmax shows as rows of weights that sum to less than 1",
    "b": "an inverted mask lets each query read exactly the keys it should not",
    "c": "heads split with `view` mix positions, so a causal model's early outputs change when "
         "later tokens change",
    "d": "scaling by sqrt(d_model) makes the weights too flat, and flatter the more heads",
    "e": "dropout left on at inference makes two identical calls in eval mode differ",
}


def _symptom_question(name: str, answer: str) -> Prediction:
    wrong = tuple((letter, f"{letter} is not it: {text}.") for letter, text in SYMPTOMS.items()
                  if letter != answer)
    return Prediction(name, answer, known_wrong=wrong,
                      hint="Answer with one letter, a to e.")


PREDICTIONS = {
    "ex10.rows_sum_below_one": _symptom_question("rows_sum_below_one", "a"),
    "ex10.eval_calls_differ": _symptom_question("eval_calls_differ", "e"),
    "ex10.flatter_with_heads": _symptom_question("flatter_with_heads", "d"),
    "ex10.early_outputs_move": _symptom_question("early_outputs_move", "c"),
}
