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
from ._core import Case, Mistake, Prediction
from ._tasks import Task


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


def _one_hole(x, query: int, key: int):
    """A causal head whose mask has one hole: ``query`` may also read ``key``."""
    blocked = causal_mask(x.shape[1])
    blocked[query, key] = False
    return attention(x, x, x, mask=blocked)[0]


def hole_2_3_model(x):
    """Causal except that position 2 reads key 3: only a test of t = 2 sees it (neither
    a change of the last token alone nor a look at position 0)."""
    return _one_hole(x, 2, 3)


def hole_3_last_model(x):
    """Causal except that position 3 reads the last key: a look at position 0 misses it."""
    return _one_hole(x, 3, x.shape[1] - 1)


def middle_leak_model(x):
    """Causal except that position 2 also reads the token at position 3."""
    out = np.cumsum(x, axis=1) / np.arange(1, x.shape[1] + 1)[None, :, None]
    out[:, 2] += x[:, 3]
    return out


def last_into_second_last_model(x):
    """Causal except that the second-to-last position reads the last token."""
    out = np.maximum.accumulate(x, axis=1)
    out[:, -2] += 0.5 * x[:, -1]
    return out


def first_reads_second_model(x):
    """Causal except that position 0 reads position 1 (a change of the last token alone
    shows nothing)."""
    out = np.tanh(np.cumsum(x, axis=1))
    out[:, 0] += x[:, 1]
    return out


def second_sequence_leak_model(x):
    """Causal, except in the second sequence of the batch, where position 0 reads the last
    token."""
    out = np.cumsum(x, axis=1)
    out[-1, 0] += x[-1, -1]
    return out


def running_max_model(x):
    """Causal and nonlinear: position t holds the running maximum of tokens 0 .. t."""
    return np.maximum.accumulate(x, axis=1)


_X = np.random.default_rng(10).normal(size=(2, 4, 4))  # (B, T, C)
_X6 = np.random.default_rng(12).normal(size=(2, 6, 3))

LEAK_CASES = (
    Case("a correct causal head", (causal_model, _X)),
    Case("no mask at all", (unmasked_model, _X)),
    Case("a mask that blocks the past instead of the future", (past_blocked_model, _X)),
    Case("heads split with a straight reshape (the view bug)", (view_split_model, _X)),
    Case("a mask with one hole: only position 2 reads ahead, to key 3 (T = 6)",
         (hole_2_3_model, _X6)),
    Case("a mask with one hole: only position 3 reads ahead, to the last key (T = 6)",
         (hole_3_last_model, _X6)),
    # graded only
    Case("position 2 reads position 3 (T = 6)", (middle_leak_model, _X6), hidden=True),
    Case("the second-to-last position reads the last token", (last_into_second_last_model, _X6),
         hidden=True),
    Case("position 0 reads position 1 only", (first_reads_second_model, _X6), hidden=True),
    Case("only the second sequence of the batch leaks", (second_sequence_leak_model, _X6),
         hidden=True),
    Case("a causal running maximum", (running_max_model, _X6), hidden=True),
)

LEAK_MISTAKES = (
    Mistake("compares every position",
            "your test flags a correct causal head: output t may read tokens 0 .. t, so change "
            "only the tokens after t (t + 1 onwards, never t itself) and compare only the "
            "outputs at positions 0 .. t.",
            lambda model, x: True),
    Mistake("changes only the last token",
            "your test only changes the last token: a position can read any later token, so "
            "for every t change all the tokens after t and compare the outputs 0 .. t.",
            lambda model, x: _only_last_token(model, x)),
    Mistake("compares only position 0",
            "your test only compares the output at position 0: a later position can read the "
            "future too; test every position t, not only the first (for each t change the "
            "tokens after t and compare the outputs at positions 0 .. t).",
            lambda model, x: _only_position_0(model, x)),
    Mistake("only one sequence of the batch",
            "your test only compares the first sequence of the batch: a leak can sit in any "
            "sequence (its own tokens); compare the outputs of every sequence, "
            "model(x)[:, :t + 1], not model(x)[0, :t + 1].",
            lambda model, x: leaks_future_reference(lambda z: model(z)[:1], x)),
    Mistake("tests one position only",
            "your test looks at one position t only (the middle one): it flags a model that "
            "leaks there, and misses a leak at any other position; repeat it for every t from "
            "0 to T - 2 (change the tokens after t, compare the outputs at positions 0 .. t).",
            lambda model, x: _only_position(model, x, x.shape[1] // 2)),
    Mistake("never flags", "your test never flags a leak: change the tokens after t (not at "
            "or before it) and compare the outputs at positions 0 .. t, for every t.",
            lambda model, x: False),
)


def _only_last_token(model, x) -> bool:
    changed = x.copy()
    changed[:, -1] += 1.0
    return not np.allclose(model(changed)[:, :-1], model(x)[:, :-1])


def _only_position(model, x, t: int) -> bool:
    changed = x.copy()
    changed[:, t + 1:] += 1.0
    return not np.allclose(model(changed)[:, :t + 1], model(x)[:, :t + 1])


def _only_position_0(model, x) -> bool:
    changed = x.copy()
    changed[:, 1:] += 1.0
    return not np.allclose(model(changed)[:, :1], model(x)[:, :1])


def _as_bool(got):
    return np.bool_(got) if isinstance(got, (bool, np.bool_)) else got


LEAK_TEST = Task("leaks_future", leaks_future_reference, LEAK_CASES, LEAK_MISTAKES,
                 prepare=_as_bool)


def check_leak_test(answer, behaviour: str | None = None) -> str:
    """``answer(model, x) -> bool``: does ``model`` let a position read later tokens?"""
    return LEAK_TEST.check(answer, behaviour)


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
