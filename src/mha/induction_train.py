"""Training and evaluating :class:`mha.induction.AttentionOnly` on repeated blocks.

``train(...)`` is deterministic for a given seed and thread count: the data
come from one seeded ``torch.Generator``, the weights from ``torch.manual_seed``.
``tools/train_induction.py`` runs it with one thread and writes the shipped
weights; ``evaluate(...)`` gives the numbers the lesson reports.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F

from .induction import AttentionOnly, half_losses, head_scores, repeated_blocks

__all__ = ["BLOCKS", "EVAL_BLOCK", "evaluate", "train"]

BLOCKS = (4, 12)  # block lengths drawn per training step, inclusive: offsets vary
EVAL_BLOCK = 10  # the length every reported number is measured at


def train(n_heads: int = 4, steps: int = 600, seed: int = 0, batch: int = 64, lr: float = 1e-2,
          d_model: int = 32, positions: str = "rotary", log_every: int = 0):
    """Train a 2-layer model; returns ``(model in eval mode, history)``.

    Each step draws one block length ``L`` in :data:`BLOCKS` and ``batch``
    sequences of ``2L`` tokens, and minimises the next-token cross-entropy
    over all positions with Adam. ``history`` has ``"loss"`` (one float per
    step) and ``"seconds"`` (wall time of the loop).
    """
    torch.manual_seed(seed)
    model = AttentionOnly(d_model=d_model, n_layers=2, n_heads=n_heads, positions=positions)
    gen = torch.Generator().manual_seed(seed + 1)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    start = time.perf_counter()
    model.train()
    for step in range(steps):
        block = int(torch.randint(BLOCKS[0], BLOCKS[1] + 1, (1,), generator=gen))
        tokens = repeated_blocks(batch, block, model.vocab_size, seed=gen)  # (B, 2L)
        logits = model(tokens)  # (B, 2L, V)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, model.vocab_size),
                               tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.3f}")
    seconds = time.perf_counter() - start
    return model.eval(), {"loss": losses, "seconds": seconds}


def evaluate(model: AttentionOnly, batch: int = 256, block: int = EVAL_BLOCK,
             seed: int = 1234) -> dict:
    """Losses on each half and per-layer head scores on a fixed evaluation set.

    Returns ``{"first", "repeated", "log_vocab"}`` (nats, see
    :func:`mha.induction.half_losses`) plus ``"previous"`` and ``"induction"``:
    lists over layers of lists over heads (see :func:`mha.induction.head_scores`).
    """
    tokens = repeated_blocks(batch, block, model.vocab_size, seed=seed)
    result = half_losses(model, tokens)
    scores = [head_scores(w, block) for w in model.attention_maps(tokens)]
    result["previous"] = [np.round(s["previous"], 6).tolist() for s in scores]
    result["induction"] = [np.round(s["induction"], 6).tolist() for s in scores]
    return result
