"""Checks for exercise set 07: crossing to PyTorch's layouts, and dropout's switch.

torch is imported inside the checks that need it, so ``import mha.checks`` stays NumPy only.
"""

from __future__ import annotations

import numpy as np

from ._core import Case, CheckFailed, Mistake, NotAttempted, as_numbers, run_check, show
from .later import DROPOUT_ON, TRANSPOSE_MISSING

_rng = np.random.default_rng(70)

IN_PROJ_CASES = (
    Case("C = 2: in_proj_weight of shape (6, 2)", (_rng.normal(size=(6, 2)),)),
    Case("C = 3: in_proj_weight of shape (9, 3)", (_rng.normal(size=(9, 3)),)),
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


def check_unpack_in_proj(answer, behaviour: str | None = None) -> str:
    """``answer(in_proj_weight (3C, C)) -> (w_q, w_k, w_v)``, each ``(C, C)`` for ``x @ w``."""
    return run_check("unpack_in_proj", answer, _unpack, IN_PROJ_CASES, IN_PROJ_MISTAKES,
                     behaviour, prepare=_three)


DROPOUT_NEVER_ON = (
    "dropout is never applied: in training mode (module.train(), self.training is True) pass "
    "dropout_p=self.p, so two calls on the same input differ."
)


def check_dropout_module(answer, behaviour: str | None = None, p: float = 0.5) -> str:
    """``answer(p)`` builds an ``nn.Module`` whose ``forward(q, k, v)`` is SDPA with dropout
    ``p`` in training mode and none in ``eval()`` mode.

    Behaviours: ``"inference"`` (eval: two calls agree and equal SDPA without dropout) and
    ``"training"`` (train: two calls differ).
    """
    __tracebackhide__ = True
    import torch
    import torch.nn.functional as F

    name = "dropout_module"
    if answer is None:
        raise NotAttempted(f"{name}: not attempted yet (it is still None).")
    q = torch.arange(24, dtype=torch.float64).reshape(1, 2, 4, 3) / 10  # (B, H, T, dh)
    try:
        module = answer(p)
        modes = {"inference": (False,), "training": (True,), None: (False, True)}[behaviour]
        for training in modes:
            module.train(training)
            torch.manual_seed(7)
            first, second = module(q, q, q), module(q, q, q)
            differ = not torch.equal(first, second)
            if not training and differ:
                raise CheckFailed(f"{name}: {DROPOUT_ON}")
            if not training and not torch.allclose(first, F.scaled_dot_product_attention(q, q, q)):
                raise CheckFailed(f"{name}: in eval() mode the output must be "
                                  "F.scaled_dot_product_attention(q, k, v) without dropout.")
            if training and not differ:
                raise CheckFailed(f"{name}: {DROPOUT_NEVER_ON}")
    except NotImplementedError:
        raise NotAttempted(f"{name}: not attempted yet: it still raises NotImplementedError; "
                           "replace that line with your code, run its cell, then run this "
                           "cell again.") from None
    except CheckFailed:
        raise
    except Exception as err:
        raise CheckFailed(f"{name}: your module raised {type(err).__name__}: {err}") from err
    line = f"{name}: correct in {' and '.join('train' if t else 'eval' for t in modes)} mode."
    print(line)
    return line
