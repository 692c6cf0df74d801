"""Broken attention on purpose: each classic mistake as a small, named module.

**Do not use these modules for anything but learning.** Each class here is a
copy of :class:`StepwiseAttention` (correct self-attention written as small
steps) with one step overridden by a classic mistake. Its docstring says the
symptom and the check of :func:`mha.checkup.checkup` that catches it (its
``caught_by``), so lesson 10 and the tests run the check-up on every one.

Every class takes ``(d_model, n_heads, ...)`` like
:class:`mha.layers.MultiHeadAttention` (whose parameters it inherits: ``q_proj``,
``k_proj``, ``v_proj``, ``out_proj``) and is called
``module(query (B, T, C), key_padding_mask=None (B, T), need_weights=False, *,
is_causal=False) -> (out (B, T, C), weights (B, H, T, T) or None)``:
self-attention only, masks bool with **True = blocked**.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import masks
from .layers import MultiHeadAttention

__all__ = ["BROKEN", "StepwiseAttention"]  # the broken classes are listed in BROKEN


class StepwiseAttention(MultiHeadAttention):
    """Correct self-attention as overridable steps (the base of every broken class).

    ``forward(query, key_padding_mask=None, need_weights=False, *, is_causal=False)``:
    project, :meth:`split` into heads, build the :meth:`blocked` mask, :meth:`mix`
    (scores, mask, softmax, dropout, weighted sum of V), :meth:`merge`, ``out_proj``.
    """

    caught_by = None  # the check-up finds nothing wrong

    def forward(self, query, key_padding_mask=None, need_weights=False, *, is_causal=False):
        query = self._check_input(query, "query")  # a (B, T, C) float tensor, refused by name
        b, t, _ = query.shape
        q, k, v = (self.split(p(query)) for p in self.projections_used())  # each (B, H, T, dh)
        blocked = self.blocked(b, t, key_padding_mask, is_causal)  # (B|1, 1, T, T) or None
        heads, weights = self.mix(q, k, v, blocked)  # (B, H, T, dh), (B, H, T, T) or None
        out = self.out_proj(self.merge(heads))  # (B, T, C)
        return out, (weights if need_weights else None)

    def projections_used(self):
        return self.q_proj, self.k_proj, self.v_proj

    def split(self, x):  # (B, T, C) -> (B, T, H, dh) -> (B, H, T, dh)
        b, t, _ = x.shape
        return x.reshape(b, t, self.n_heads, self.d_head).transpose(1, 2)

    def merge(self, heads):  # (B, H, T, dh) -> (B, T, H, dh) -> (B, T, C)
        return heads.transpose(1, 2).reshape(-1, heads.shape[-2], self.d_model)

    def blocked(self, b, t, key_padding_mask, is_causal):
        parts = []
        if is_causal:
            parts.append(torch.ones(t, t, dtype=torch.bool).triu(1))  # (T, T): the future
        if key_padding_mask is not None:
            parts.append(masks.key_padding_to_4d(key_padding_mask))  # (B, 1, 1, T)
        return masks.combine(*parts) if parts else None

    def scores(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, T, T)

    def weights(self, scores, blocked):
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        return F.dropout(scores.softmax(dim=-1), self.dropout, self.training)

    def mix(self, q, k, v, blocked):
        weights = self.weights(self.scores(q, k), blocked)
        return weights @ v, weights


class BrokenViewSplit(StepwiseAttention):
    """Heads split with ``view(B, H, T, dh)`` straight from ``(B, T, C)``.

    Symptom: right shapes, no error; each "head" holds pieces of several
    positions, so with the usual merge a position reads the future. Caught by
    positions stay apart (and causality, scale).
    """

    caught_by = "positions stay apart"

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, self.n_heads, t, self.d_head)  # wrong: mixes positions and heads


class BrokenMaskAfterSoftmax(StepwiseAttention):
    """The mask zeroes weights *after* the softmax.

    Symptom: rows of weights sum to less than 1, and the blocked keys still
    shape the denominator (the future leaks in through it). Caught by rows
    sum to 1 (and causality, padding invariance).
    """

    caught_by = "rows sum to 1"

    def weights(self, scores, blocked):
        w = scores.softmax(dim=-1)
        return w if blocked is None else w.masked_fill(blocked, 0.0)  # wrong order


class BrokenScaleDModel(StepwiseAttention):
    """Scores divided by ``sqrt(d_model)`` instead of ``sqrt(dh)``.

    Symptom: weights too flat by a factor ``sqrt(H)`` in the exponent; trains,
    slowly. Caught by scale.
    """

    caught_by = "scale"

    def scores(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(self.d_model)  # wrong: d_model


class BrokenInvertedMask(StepwiseAttention):
    """Code written for a keep-mask (1 = keep) fed our mask: ``mask == 0`` blocks the allowed keys.

    Symptom: queries read only the keys they should not; the last causal row
    is fully blocked and gives NaN. Caught by causality.
    """

    caught_by = "causality"

    def weights(self, scores, blocked):
        if blocked is not None:
            scores = scores.masked_fill(blocked == 0, float("-inf"))  # wrong: inverts a bool mask
        return scores.softmax(dim=-1)


class BrokenSdpaMaskNotInverted(StepwiseAttention):
    """Our mask (True = blocked) passed to SDPA, whose bool mask means True = allowed.

    Symptom: each query reads only the future (and a fully blocked row). Caught by causality.
    SDPA returns no weights, so the weight checks are skipped.
    """

    caught_by = "causality"

    def mix(self, q, k, v, blocked):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=blocked), None  # not to_sdpa


class BrokenTranspose(StepwiseAttention):
    """Heads split to ``(H, B, T, dh)``: scores ``(H, B, T, T)``, merged as if ``(B, H, ...)``.

    Symptom: no error (the merge's ``reshape(-1, T, C)`` fits); outputs of one
    sequence mix in rows of the others. Caught by batch independence.
    """

    caught_by = "batch independence"

    def split(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.n_heads, self.d_head).permute(2, 0, 1, 3)  # (H, B, T, dh)

    def blocked(self, b, t, key_padding_mask, is_causal):
        mask = super().blocked(b, t, key_padding_mask, is_causal)  # (B|1, 1, T, T)
        return None if mask is None else mask.transpose(0, 1)  # (1, B|1, T, T): fits (H, B, T, T)


class BrokenDropoutAtInference(StepwiseAttention):
    """SDPA called with ``dropout_p=self.dropout`` whatever the mode (``eval()`` cannot reach it).

    Symptom: two calls in ``eval()`` give different outputs. Caught by eval
    determinism. Built with ``dropout=0.1`` unless told otherwise.
    """

    caught_by = "eval determinism"

    def __init__(self, d_model, n_heads, dropout=0.1, **kw):
        super().__init__(d_model, n_heads, dropout=dropout, **kw)

    def mix(self, q, k, v, blocked):
        mask = None if blocked is None else masks.to_sdpa(blocked)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                              dropout_p=self.dropout), None  # wrong: always on


class BrokenDropoutOnScores(StepwiseAttention):
    """Dropout applied to the masked scores, before the softmax, instead of to the weights.

    Symptom: in training a dropped ``-inf`` becomes ``-inf * 0 = NaN`` and the
    row is NaN (``eval()`` hides it). Caught by finite in training. Built with
    ``dropout=0.1`` unless told otherwise.
    """

    caught_by = "finite in training"

    def __init__(self, d_model, n_heads, dropout=0.1, **kw):
        super().__init__(d_model, n_heads, dropout=dropout, **kw)

    def weights(self, scores, blocked):
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        return F.dropout(scores, self.dropout, self.training).softmax(dim=-1)  # wrong place


class BrokenLargeInit(StepwiseAttention):
    """Projections drawn with std 1 instead of about 0.02 (or ``+-1/sqrt(C)``).

    Symptom: scores spread over tens of units at initialisation, softmax is
    one-hot and its gradient vanishes. Caught by score spread.
    """

    caught_by = "score spread"

    def __init__(self, d_model, n_heads, **kw):
        super().__init__(d_model, n_heads, **kw)
        with torch.no_grad():
            for p in (self.q_proj.weight, self.k_proj.weight, self.v_proj.weight):
                p.normal_(0.0, 1.0)  # wrong: about 0.02 is usual


class BrokenUnusedProjection(StepwiseAttention):
    """Keys computed with ``q_proj``: ``k_proj`` never reaches the loss.

    Symptom: training runs; ``k_proj.weight.grad is None`` after ``backward()``
    (None, not zeros). Caught by gradients.
    """

    caught_by = "gradients"

    def projections_used(self):
        return self.q_proj, self.q_proj, self.v_proj  # wrong: q_proj twice


class BrokenPaddingBroadcast(StepwiseAttention):
    """A ``(B, Tk)`` padding mask used as is against ``(B, H, Tq, Tk)`` scores.

    Symptom: when ``B == Tq`` it broadcasts as ``(Tq, Tk)``, with no error:
    query ``i`` of every sequence loses the keys padded in sequence ``i``.
    Caught by padding invariance.
    """

    caught_by = "padding invariance"

    def blocked(self, b, t, key_padding_mask, is_causal):
        parts = [torch.ones(t, t, dtype=torch.bool).triu(1)] if is_causal else []
        if key_padding_mask is not None:
            parts.append(key_padding_mask)  # wrong: needs (B, 1, 1, Tk)
        return masks.combine(*parts) if parts else None


class BrokenRepeatMask(StepwiseAttention):
    """Scores as ``(B*H, T, T)`` (as ``bmm`` code has them), the mask tiled with ``repeat``.

    Row ``b*H + h`` needs sequence ``b``'s mask: ``repeat_interleave(H, dim=0)``;
    ``repeat(H, 1, 1)`` gives it sequence ``(b*H + h) % B``'s. Symptom: a
    sequence's padding blocks keys of other sequences. Caught by batch independence.
    """

    caught_by = "batch independence"

    def mix(self, q, k, v, blocked):
        b, h, t, dh = q.shape
        scores = self.scores(q, k).reshape(b * h, t, t)  # (B*H, T, T)
        if blocked is not None:
            per_seq = blocked.expand(b, 1, t, t)[:, 0]  # (B, T, T)
            scores = scores.masked_fill(per_seq.repeat(h, 1, 1), float("-inf"))  # wrong: tiled
        weights = scores.softmax(dim=-1).reshape(b, h, t, t)  # (B, H, T, T)
        return weights @ v, weights


class BrokenSequenceFirst(StepwiseAttention):
    """Code written for ``(T, B, C)`` inputs (``nn.MultiheadAttention`` without
    ``batch_first=True``) given ``(B, T, C)``.

    Symptom: when ``B == T`` every mask fits and no error comes; attention runs
    across the batch. Caught by batch independence.
    """

    caught_by = "batch independence"

    def forward(self, query, key_padding_mask=None, need_weights=False, *, is_causal=False):
        seq_first = query.transpose(0, 1)  # what the code believes is (B, T, C)
        out, w = super().forward(seq_first, key_padding_mask, need_weights, is_causal=is_causal)
        return out.transpose(0, 1), w


class BrokenSoftmaxAxis(StepwiseAttention):
    """Softmax over the queries (``dim=-2``) instead of the keys.

    Symptom: columns sum to 1, rows do not; a query's weights depend on other
    queries (the future too). Caught by rows sum to 1.
    """

    caught_by = "rows sum to 1"

    def weights(self, scores, blocked):
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        return scores.softmax(dim=-2)  # wrong axis


class BrokenWeightsPath(StepwiseAttention):
    """Asked for weights, it averages them over heads and multiplies V by the average.

    Symptom: the output changes with ``need_weights``; a test that asks for
    weights checks a different model than the one deployed. Caught by
    weights path.
    """

    caught_by = "weights path"

    def forward(self, query, key_padding_mask=None, need_weights=False, *, is_causal=False):
        out, weights = super().forward(query, key_padding_mask, True, is_causal=is_causal)
        if not need_weights:
            return out, None
        mean = weights.mean(dim=1, keepdim=True)  # (B, 1, T, T)
        heads = mean @ self.split(self.v_proj(query))  # wrong: one average for all heads
        return self.out_proj(self.merge(heads)), mean.expand_as(weights)


BROKEN = (BrokenViewSplit, BrokenMaskAfterSoftmax, BrokenScaleDModel, BrokenInvertedMask,
          BrokenSdpaMaskNotInverted, BrokenTranspose, BrokenDropoutAtInference,
          BrokenDropoutOnScores, BrokenLargeInit, BrokenUnusedProjection,
          BrokenPaddingBroadcast, BrokenRepeatMask, BrokenSequenceFirst, BrokenSoftmaxAxis,
          BrokenWeightsPath)
__all__ += [c.__name__ for c in BROKEN]
