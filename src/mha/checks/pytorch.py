"""Checks for exercise set 07: crossing to PyTorch's layouts, and dropout's switch.

torch is imported inside the checks that need it, so ``import mha.checks`` stays NumPy only.
"""

from __future__ import annotations

import numpy as np

from ._core import (
    Case,
    CheckFailed,
    Mistake,
    Passed,
    as_numbers,
    error_text,
    say,
    show,
    tolerance,
)
from ._tasks import Task
from .later import DROPOUT_ON, TRANSPOSE_MISSING

_rng = np.random.default_rng(70)

IN_PROJ_CASES = (
    Case("C = 2: in_proj_weight of shape (6, 2)", (_rng.normal(size=(6, 2)),)),
    Case("C = 3: in_proj_weight of shape (9, 3)", (_rng.normal(size=(9, 3)),)),
    Case("C = 2: in_proj_weight = 0 .. 11 as (6, 2)", (np.arange(12.0).reshape(6, 2),),
         hidden=True),
    Case("C = 4: in_proj_weight of shape (12, 4)",
         (np.random.default_rng(71).normal(size=(12, 4)),), hidden=True),
)


def _unpack(w, transpose=True, axis=0):
    parts = np.split(np.asarray(w), 3, axis=axis)
    return tuple(p.T if transpose else p for p in parts)


IN_PROJ_MISTAKES = (
    Mistake("transpose missing in weight transfer", TRANSPOSE_MISSING,
            lambda w: _unpack(w, transpose=False)),
    Mistake("in_proj_weight split along the wrong axis",
            "in_proj_weight stacks W_Q, W_K and W_V by rows, (3C, C): cut it into three (C, C) "
            "blocks of rows (chunk(3) along dim 0), then transpose each for x @ W.",
            lambda w: _unpack(w, axis=1) if w.shape[1] % 3 == 0 else 1 / 0),
)


def _three(got):
    if not (isinstance(got, (tuple, list)) and len(got) == 3):
        raise CheckFailed(f"unpack_in_proj: return (w_q, w_k, w_v); got {show(got, 120)}.")
    return tuple(as_numbers(g) for g in got)


UNPACK_IN_PROJ = Task("unpack_in_proj", _unpack, IN_PROJ_CASES, IN_PROJ_MISTAKES, prepare=_three)


def check_unpack_in_proj(answer, behaviour: str | None = None) -> str:
    """``answer(in_proj_weight (3C, C)) -> (w_q, w_k, w_v)``, each ``(C, C)`` for ``x @ w``."""
    return UNPACK_IN_PROJ.check(answer, behaviour)


DROPOUT_NEVER_ON = (
    "dropout is never applied: in training mode (module.train(), self.training is True) pass "
    "dropout_p=self.p, so two calls on the same input differ."
)


T_DROP = 6  # positions in the dropout cases


def dropout_inputs():
    """q, k (B, H, T, dh) = (1, 2, 6, 3) and v = [I | 1], (1, 2, 6, 7), float64 tensors.

    With v's first T columns the identity, the output shows the dropped weights themselves;
    its last column, all ones, gives each row's sum, which equals the sum of the shown
    weights only when dropout acts on the weights (not on the output)."""
    import torch

    q = torch.arange(36, dtype=torch.float64).reshape(1, 2, T_DROP, 3) / 20
    k = torch.flip(q, dims=(2,)) * 0.7
    eye = torch.eye(T_DROP, dtype=torch.float64).expand(1, 2, T_DROP, T_DROP)
    v = torch.cat([eye, torch.ones(1, 2, T_DROP, 1, dtype=torch.float64)], dim=-1)
    return q, k, v


def _weights() -> np.ndarray:
    q = np.arange(36, dtype=np.float64).reshape(1, 2, T_DROP, 3) / 20
    k = q[:, :, ::-1] * 0.7
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(3)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


N_TRAIN_CALLS = 16


def _run_module(answer, args, kwargs):
    """Build ``answer(p)``; in eval mode call it twice, in train mode 16 times (seeds 0..15)."""
    import torch

    p, mode = args
    module = answer(p)
    module.train(mode == "train")
    q, k, v = dropout_inputs()
    calls = 2 if mode == "eval" else N_TRAIN_CALLS
    outputs = []
    for seed in range(calls):
        torch.manual_seed(seed)
        outputs.append(module(q, k, v))
    return tuple(outputs)


DROPOUT_CASES = (
    Case("eval() mode, p = 0.5", (0.5, "eval"), behaviour="inference"),
    Case("train() mode, p = 0.2", (0.2, "train"), behaviour="training"),
    Case("eval() mode, p = 0.9", (0.9, "eval"), behaviour="inference", hidden=True),
    Case("train() mode, p = 0.5", (0.5, "train"), behaviour="training", hidden=True),
    Case("train() mode, p = 0.1", (0.1, "train"), behaviour="training", hidden=True),
)

KEEPS_P = ("dropout keeps each weight with probability p instead of 1 - p: p is the "
           "probability of dropping (dropout_p=self.p, or F.dropout(weights, self.p)), and the "
           "kept weights are scaled by 1 / (1 - p).")
ON_THE_OUTPUT = ("dropout is applied to the output, not to the attention weights: attention "
                 "dropout zeroes weights before they mix the values (dropout_p in "
                 "F.scaled_dot_product_attention, or F.dropout on the weights, then weights @ v).")


def _judge_dropout(task, cases, outcomes) -> str:
    name = task.name
    weights = _weights()
    expected_eval = weights @ np.concatenate([np.broadcast_to(np.eye(T_DROP), weights.shape),
                                              np.ones(weights.shape[:-1] + (1,))], axis=-1)
    for case, (got, err) in zip(cases, outcomes, strict=True):
        p, mode = case.args
        where = f"(case '{case.label}')"
        if err is not None:
            raise CheckFailed(f"{name}: your module raised {error_text(err)} {where}.")
        outs = [as_numbers(o) for o in got]
        if any(not isinstance(o, np.ndarray) or o.shape != expected_eval.shape for o in outs):
            raise CheckFailed(f"{name}: forward must return the (B, H, T, dv) = "
                              f"{expected_eval.shape} output of attention; got "
                              f"{show(got[0], 120)} {where}.")
        outs = np.stack([o.astype(np.float64) for o in outs])
        atol, _ = tolerance(as_numbers(got[0]), expected_eval, 1e-6, 1e-6)
        differ = not all(np.array_equal(o, outs[0]) for o in outs[1:])
        if mode == "eval":
            if differ:
                raise CheckFailed(f"{name}: {DROPOUT_ON}")
            if np.abs(outs[0] - expected_eval).max() > atol:
                raise CheckFailed(f"{name}: in eval() mode the output must be "
                                  "F.scaled_dot_product_attention(q, k, v) without dropout "
                                  f"{where}.")
            continue
        if not differ:
            raise CheckFailed(f"{name}: {DROPOUT_NEVER_ON}")
        shown, row_sums = outs[..., :T_DROP], outs[..., T_DROP]
        if np.abs(row_sums - shown.sum(-1)).max() > 1e-6 + 10 * atol:
            raise CheckFailed(f"{name}: {ON_THE_OUTPUT}")
        dropped = np.abs(shown) <= atol
        share = float(dropped.mean())
        if abs(share - p) > 0.1:
            if abs(share - (1 - p)) <= 0.1:
                raise CheckFailed(f"{name}: {KEEPS_P}")
            raise CheckFailed(f"{name}: with p = {p} your module dropped {share:.0%} of the "
                              f"weights; dropout drops each weight with probability p "
                              f"(about {p:.0%}) {where}.")
        scale = np.median(shown[~dropped] / np.broadcast_to(weights, shown.shape)[~dropped])
        if abs(scale - 1 / (1 - p)) > 0.01 * (1 / (1 - p)):
            raise CheckFailed(f"{name}: the kept weights are scaled by {scale:.3g}; dropout "
                              f"scales them by 1 / (1 - p) = {1 / (1 - p):.3g}, so that the "
                              f"expected output stays the same {where}.")
    modes = sorted({c.args[1] for c in cases})
    line = Passed(f"{name}: correct in {' and '.join(modes)} mode.")
    say(line)
    return line


DROPOUT_MODULE = Task("dropout_module", None, DROPOUT_CASES, call=_run_module,
                      judge_fn=_judge_dropout)


def check_dropout_module(answer, behaviour: str | None = None, p: float = 0.5) -> str:
    """``answer(p)`` builds an ``nn.Module`` whose ``forward(q, k, v)`` is SDPA with dropout
    ``p`` on the attention weights in training mode and none in ``eval()`` mode.

    Behaviours: ``"inference"`` (eval: two calls agree and equal SDPA without dropout) and
    ``"training"`` (train: calls differ, about a share p of the weights is dropped, the kept
    ones scaled by 1 / (1 - p), the weights and not the output). ``p`` is kept for
    compatibility; the cases choose their own p.
    """
    __tracebackhide__ = True
    behaviour = {"inference": "inference", "training": "training", None: None}[behaviour]
    return DROPOUT_MODULE.check(answer, behaviour)
