"""Checks for the later exercise sets (06-10): heads, the KV cache, PyTorch crossings.

Each one recognises the classic mistake of its lesson: heads split with
``view``, upper-left causal alignment in the cache, the transpose missing in a
weight transfer, dropout left on at inference.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..masks import mask_from_positions
from ..multihead import merge_heads, split_heads
from ._core import (
    Case,
    CheckFailed,
    Mistake,
    NotAttempted,
    Passed,
    Prediction,
    as_numbers,
    graded_elsewhere,
    say,
)
from ._tasks import Rule, Task

# -- 06 heads -----------------------------------------------------------------

# Entries that encode where they come from: x[b, t, c] = 100 b + 10 t + c.
_X_CODED = (100 * np.arange(2)[:, None, None] + 10 * np.arange(3)[None, :, None]
            + np.arange(8)[None, None, :]).astype(float)  # (B, T, C) = (2, 3, 8)

SPLIT_CASES = (
    Case("(B, T, C) = (2, 3, 8) into H = 4 heads; x[b, t, c] = 100 b + 10 t + c", (_X_CODED, 4)),
    Case("the same x into H = 2 heads", (_X_CODED, 2)),
    Case("one head keeps every channel", (_X_CODED, 1)),
    Case("(B, T, C) = (1, 3, 8) into 2 heads, x = 0 .. 23",
         (np.arange(24.0).reshape(1, 3, 8), 2), hidden=True),
    Case("(B, T, C) = (3, 5, 6) into 3 heads",
         (np.random.default_rng(60).normal(size=(3, 5, 6)), 3), hidden=True),
)

NUMPY_TRANSPOSE = (
    "NumPy's transpose takes the order of all axes (torch's .transpose(1, 2) swaps two); "
    "to swap two use swapaxes(1, 2)."
)

WRONG_WAY_ROUND = (
    "channels split the wrong way round: reshape(B, T, dh, H) deals the channels out to the "
    "heads one at a time, but head i owns the dh neighbouring channels i * dh .. (i + 1) * dh "
    "- 1; reshape to (B, T, H, dh), then .swapaxes(1, 2)."
)

SPLIT_MISTAKES = (
    Mistake("heads split with view",
            "heads split with `view` (or reshape) straight to (B, H, T, dh): the shape is right "
            "and the values are wrong, because the channels of one position get spread over "
            "several positions; reshape to (B, T, H, dh) first, then move H in front of T.",
            lambda x, h: x.reshape(x.shape[0], h, x.shape[1], x.shape[2] // h)),
    Mistake("heads not moved in front of T",
            "your result is (B, T, H, dh): the channels are split right, but H must come before "
            "T, (B, H, T, dh); swap axes 1 and 2: .swapaxes(1, 2) (or transpose(0, 2, 1, 3); "
            "torch: .transpose(1, 2)).",
            lambda x, h: x.reshape(x.shape[0], x.shape[1], h, x.shape[2] // h)),
    Mistake("NumPy transpose given two axes", NUMPY_TRANSPOSE,
            lambda x, h: x.reshape(x.shape[0], x.shape[1], h, x.shape[2] // h).transpose(1, 2),
            raises="axes don't match array"),
    Mistake("channels split the wrong way round", WRONG_WAY_ROUND,
            lambda x, h: x.reshape(x.shape[0], x.shape[1], x.shape[2] // h, h).transpose(
                0, 3, 1, 2)),
    Mistake("channels split the wrong way round", WRONG_WAY_ROUND,
            lambda x, h: x.reshape(x.shape[0], x.shape[1], x.shape[2] // h, h).swapaxes(1, 2)),
)


SPLIT = Task("split_heads", lambda x, h: split_heads(as_numbers(x), h), SPLIT_CASES,
             SPLIT_MISTAKES, prepare=as_numbers,
             rules=(Rule("do not call mha.split_heads", calls=(("mha", "split_heads"),)),),
             says_answer_name=True)  # set 06 calls it split


def check_split_heads(answer, behaviour: str | None = None, torch_inputs: bool = False) -> str:
    """``answer(x (B, T, C), n_heads) -> (B, H, T, dh)``; ``torch_inputs`` passes tensors."""
    cases = SPLIT_CASES
    if torch_inputs:
        import torch

        cases = tuple(Case(c.label, (torch.tensor(c.args[0]), c.args[1]), c.kwargs, c.behaviour)
                      for c in SPLIT_CASES)
    if torch_inputs:
        return dataclasses.replace(SPLIT, cases=cases).check(answer, behaviour)
    return SPLIT.check(answer, behaviour)


def _merge_reference(x):
    return merge_heads(as_numbers(x))


_HEADS_CODED = split_heads(_X_CODED, 4)  # (B, H, T, dh) = (2, 4, 3, 2)

MERGE_CASES = (
    Case("(B, H, T, dh) = (2, 4, 3, 2), from the coded x", (_HEADS_CODED,)),
    Case("two heads", (split_heads(_X_CODED, 2),)),
    Case("one head", (split_heads(_X_CODED, 1),)),
    Case("(B, H, T, dh) = (2, 3, 2, 2), x = 0 .. 23 split by hand",
         (np.arange(24.0).reshape(2, 2, 3, 2).transpose(0, 2, 1, 3),), hidden=True),
    Case("(B, H, T, dh) = (1, 2, 4, 3)",
         (np.random.default_rng(61).normal(size=(1, 2, 4, 3)),), hidden=True),
)

MERGE_MISTAKES = (
    Mistake("heads merged without the transpose",
            "heads merged with a reshape straight from (B, H, T, dh): the shape is right and "
            "the values are wrong; move T back in front of H first (.swapaxes(1, 2), or "
            "transpose(0, 2, 1, 3); torch: .transpose(1, 2)), then reshape to (B, T, H * dh).",
            lambda x: x.reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3])),
    Mistake("NumPy transpose given two axes", NUMPY_TRANSPOSE,
            lambda x: x.transpose(1, 2), raises="axes don't match array"),
    Mistake("merged with the last two axes swapped",
            "you swapped the last two axes (T and dh); swap H and T, axes 1 and 2: "
            "x.swapaxes(1, 2) gives (B, T, H, dh), then reshape to (B, T, H * dh).",
            lambda x: x.swapaxes(2, 3).reshape(x.shape[0], x.shape[2], -1)),
)


MERGE = Task("merge_heads", _merge_reference, MERGE_CASES, MERGE_MISTAKES, prepare=as_numbers,
             rules=(Rule("do not call mha.merge_heads", calls=(("mha", "merge_heads"),)),),
             says_answer_name=True)  # set 06 calls it merge


def check_merge_heads(answer, behaviour: str | None = None) -> str:
    """``answer(x (B, H, T, dh)) -> (B, T, H * dh)``, the inverse of the split."""
    return MERGE.check(answer, behaviour)


# -- 08 the KV cache ----------------------------------------------------------

def cache_mask_reference(n_cached: int, n_new: int) -> np.ndarray:
    """New queries at positions ``n_cached ..`` over keys ``0 .. n_cached + n_new - 1``."""
    total = n_cached + n_new
    return mask_from_positions(np.arange(n_cached, total), np.arange(total))


CACHE_MASK_CASES = (
    Case("3 cached positions, 2 new queries", (3, 2)),
    Case("no cache yet: the square causal mask", (0, 3)),
    Case("one new query after 4 cached keys", (4, 1)),
    Case("1 cached position, 3 new queries", (1, 3)),
    Case("2 cached positions, 2 new queries", (2, 2), hidden=True),
    Case("5 cached positions, 3 new queries", (5, 3), hidden=True),
)

UPPER_LEFT = (
    "upper-left causal alignment in the cache: query i of the new block sits at position "
    "n_cached + i, so it reads keys 0 .. n_cached + i; build the mask from absolute positions "
    "(key_pos > query_pos is blocked), because `is_causal=True` on a non-square (Tq, Tk) "
    "aligns upper-left and hides cached keys."
)

CACHE_MASK_MISTAKES = (
    Mistake("upper-left causal alignment in the cache", UPPER_LEFT,
            lambda c, n: np.triu(np.ones((n, c + n), dtype=bool), k=1)),
    Mistake("mask inverted", "mask inverted: True must mean blocked, and you blocked the keys "
            "a query may read.", lambda c, n: ~cache_mask_reference(c, n)),
)


CACHE_MASK = Task("cache_mask", cache_mask_reference, CACHE_MASK_CASES, CACHE_MASK_MISTAKES,
                  prepare=as_numbers,
                  rules=(Rule("do not call mha.masks.mask_from_positions",
                              calls=(("mha", "mask_from_positions"),)),))


def check_cache_mask(answer, behaviour: str | None = None) -> str:
    """``answer(n_cached, n_new) -> (n_new, n_cached + n_new)`` bool, True = blocked."""
    return CACHE_MASK.check(answer, behaviour)


# -- 07 weights across the PyTorch boundary -----------------------------------

_rng = np.random.default_rng(7)
WEIGHT_CASES = (
    Case("nn.Linear(4, 6).weight, shape (out, in) = (6, 4)", (_rng.normal(size=(6, 4)),)),
    Case("a square (4, 4) weight", (_rng.normal(size=(4, 4)),)),
    Case("(out, in) = (3, 2), entries 1 .. 6", (np.arange(1.0, 7.0).reshape(3, 2),), hidden=True),
    Case("a square (2, 2) weight, entries 1 .. 4", (np.arange(1.0, 5.0).reshape(2, 2),),
         hidden=True),
)

TRANSPOSE_MISSING = (
    "transpose missing in weight transfer: nn.Linear stores its weight as (out, in) and computes "
    "x @ weight.T, so the NumPy matrix for x @ W is weight.T (a square weight hides the bug: "
    "no shape error, wrong values)."
)

WEIGHT_MISTAKES = (
    Mistake("transpose missing in weight transfer", TRANSPOSE_MISSING, lambda w: w),
)


WEIGHT_TRANSFER = Task("weight_transfer", lambda w: w.T, WEIGHT_CASES, WEIGHT_MISTAKES,
                       prepare=as_numbers)


def check_weight_transfer(answer, behaviour: str | None = None) -> str:
    """``answer(linear_weight (out, in)) -> W (in, out)`` such that ``x @ W`` is the layer."""
    return WEIGHT_TRANSFER.check(answer, behaviour)


# -- 07 / 10 inference is deterministic ---------------------------------------

DROPOUT_ON = (
    "dropout left on at inference: two runs on the same input gave different outputs; call "
    "model.eval() before evaluating, and pass dropout_p=0.0 to "
    "F.scaled_dot_product_attention outside training (eval() does not change that argument)."
)


def check_inference(run, x, expected, atol: float = 1e-5, name: str = "inference") -> str:
    """``run(x)`` twice: the same output both times, and equal to ``expected``."""
    __tracebackhide__ = True
    if graded_elsewhere():
        return Passed(f"{name}: graded by nbgrader.")
    if run is None:
        raise NotAttempted(f"{name}: not attempted yet (it is still None).")
    try:
        first, second = as_numbers(run(x)), as_numbers(run(x))
    except NotImplementedError:
        raise NotAttempted(f"{name}: not attempted yet: it still raises "
                           "NotImplementedError.") from None
    if np.shape(first) != np.shape(second) or np.max(np.abs(first - second), initial=0) > atol:
        raise CheckFailed(f"{name}: {DROPOUT_ON}")
    expected = as_numbers(expected)
    if np.shape(first) != np.shape(expected) or np.max(
            np.abs(first - expected), initial=0) > atol:
        raise CheckFailed(f"{name}: the output differs from the expected one (largest "
                          f"difference {float(np.max(np.abs(first - expected))):.3g}).")
    line = Passed(f"{name}: correct; two runs agree and match the expected output.")
    say(line)
    return line


_PARAMS = 4 * 512 * 512 + 4 * 512  # W_Q, W_K, W_V, W_O and their biases at C = 512
_NO_BIAS = "that is 4 C^2 without the biases; each of the four projections has C biases too."
_PER_HEAD = "the heads are slices of the same four (C, C) matrices, so H does not change the count."


def _cache_bytes(n_kv_heads: int, itemsize: int = 2, factor: int = 2) -> int:
    """2 * layers * B * H_kv * T * dh * bytes for 24 layers, B = 2, T = 4096, dh = 64."""
    return factor * 24 * 2 * n_kv_heads * 4096 * 64 * itemsize


_KV_FACTOR = "a cache holds keys and values, so the count has a factor 2 (K and V)."
_FP16 = "float16 takes 2 bytes a number, not 4."

PREDICTIONS = {
    "ex06.params_h8": Prediction(
        "params_h8", _PARAMS, 0.5,
        known_wrong=((4 * 512 * 512, _NO_BIAS), (8 * _PARAMS, _PER_HEAD)),
        hint="Four (C, C) weight matrices and four bias vectors of length C."),
    "ex06.params_h16": Prediction(
        "params_h16", _PARAMS, 0.5,
        known_wrong=((4 * 512 * 512, _NO_BIAS), (16 * _PARAMS, _PER_HEAD),
                     (2 * _PARAMS, _PER_HEAD)),
        hint="Does any of the four matrices change shape when H doubles?"),
    "ex08.cache_bytes": Prediction(
        "cache_bytes", _cache_bytes(16), 0.5,
        known_wrong=((_cache_bytes(16, factor=1), _KV_FACTOR),
                     (_cache_bytes(16, itemsize=4), _FP16)),
        hint="2 * layers * B * H_kv * T * dh * bytes per number."),
    "ex08.gqa_bytes": Prediction(
        "gqa_bytes", _cache_bytes(4), 0.5,
        known_wrong=((_cache_bytes(16), "with grouped-query attention only the 4 K/V heads "
                      "are cached, not the 16 query heads."),
                     (_cache_bytes(4, factor=1), _KV_FACTOR)),
        hint="Only H_kv changes: 16 -> 4."),
    "ex08.cache_read_out": Prediction(
        "cache_read_out", [25.0, 30.0], 1e-6,
        known_wrong=(([10.0, 15.0], UPPER_LEFT),),
        hint="Query 3 reads keys 0-3, query 4 reads keys 0-4; all scores are 0."),
}
