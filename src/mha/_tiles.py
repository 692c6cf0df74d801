"""The tiles of :mod:`mha.tiled`: which are computed, their scores, the shared checks.

:func:`tile_plan` marks each ``block_q x block_k`` tile of the ``(Tq, Tk)`` score
matrix SKIPPED, FULL or PARTIAL; :func:`_tile_scores` computes one tile's
scores; :func:`_prepare` checks the arguments of the forward and the backward
in :func:`mha.attention`'s words. :mod:`mha.tiled` imports these names (and
re-exports the public ones): import them from there.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_flag, check_non_negative_int, check_positive_int, first_index
from ._mask_checks import check_causal_lengths, check_mask
from .reference import _check_qkv, _check_scale

__all__ = ["BLOCK_K", "BLOCK_Q", "FULL", "PARTIAL", "MAX_TILES", "SKIPPED", "tile_plan"]

SKIPPED, FULL, PARTIAL = 0, 1, 2  # a tile's state in tile_plan
BLOCK_Q, BLOCK_K = 256, 256  # defaults: a 256 x 256 float64 tile is 512 KiB, cache-sized
# Each tile costs tens of microseconds of Python around its products (about 80 us measured,
# 128 x 128 with 1 x 1 tiles, 2-core laptop CPU): 65,536 tiles is a few seconds. T = 4096 with
# 1 x 1 tiles (16.8 million) would run over 20 minutes without a word.
MAX_TILES = 2**16
_SECONDS_PER_TILE = 80e-6


def _check_block(block, name: str) -> int:
    if isinstance(block, (bool, np.bool_)) or not isinstance(block, (int, np.integer)) \
            or block < 1:
        raise ValueError(f"{name} must be an integer >= 1 (a tile's side); got {block!r}.")
    return int(block)


def _starts(t: int, block: int) -> range:
    return range(0, t, block)


def tile_plan(tq: int, tk: int, block_q: int = BLOCK_Q, block_k: int = BLOCK_K,
              is_causal: bool = False, mask=None, *, max_tiles: int = MAX_TILES) -> np.ndarray:
    """Which tiles the tiled attention computes: ``(ceil(Tq/block_q), ceil(Tk/block_k))`` ints.

    Entry ``[a, b]`` describes the tile of queries ``a*block_q ...`` and keys
    ``b*block_k ...``: ``SKIPPED`` (0) when every score in it is blocked (above
    the causal diagonal, or blocked by ``mask`` everywhere), ``FULL`` (1)
    when none is, ``PARTIAL`` (2) when some are. ``mask`` is a package mask
    (True = blocked) broadcastable to ``(..., Tq, Tk)``; a tile counts as
    skipped only if it is blocked for every leading (batch/head) index.
    Refuses a non-boolean mask (a 0/1 mask must say which value blocks) or one
    that does not broadcast, as :func:`mha._mask_checks.check_mask` words it, a
    non-bool ``is_causal``, lengths that are not ints >= 0, a tile side that is
    not an integer >= 1, and a plan of more than ``max_tiles`` tiles
    (:data:`MAX_TILES`, 65,536: each tile costs tens of microseconds of Python,
    so more would run for minutes; the message gives the count; pass a larger
    ``max_tiles`` to run it anyway).
    """
    tq, tk = check_non_negative_int(tq, "tq"), check_non_negative_int(tk, "tk")
    block_q, block_k = _check_block(block_q, "block_q"), _check_block(block_k, "block_k")
    is_causal = check_flag(is_causal, "is_causal")
    check_tile_count(tq, tk, block_q, block_k, max_tiles)
    if mask is not None:  # rows are not checked here: the plan skips what is blocked
        mask = check_mask(mask, np.shape(mask)[:-2] + (tq, tk), check_rows=False)
    offset = tk - tq  # query i sits at position i + offset (lower-right alignment)
    plan = np.empty((len(_starts(tq, block_q)), len(_starts(tk, block_k))), dtype=np.int8)
    for a, i0 in enumerate(_starts(tq, block_q)):
        i1 = min(i0 + block_q, tq)
        for b, j0 in enumerate(_starts(tk, block_k)):
            j1 = min(j0 + block_k, tk)
            state = FULL
            if is_causal and j0 > i1 - 1 + offset:
                state = SKIPPED  # even the tile's last query sees none of its keys
            elif is_causal and j1 - 1 > i0 + offset:
                state = PARTIAL  # the diagonal crosses the tile
            if state != SKIPPED and mask is not None:
                tile = mask[..., i0:i1, j0:j1]
                if tile.all():
                    state = SKIPPED
                elif tile.any():
                    state = PARTIAL
            plan[a, b] = state
    return plan


def check_tile_count(tq: int, tk: int, block_q: int, block_k: int, max_tiles: int) -> None:
    """Refuse (``ValueError``) a plan of more than ``max_tiles`` tiles, naming the count."""
    max_tiles = check_positive_int(max_tiles, "max_tiles")
    rows, cols = len(_starts(tq, block_q)), len(_starts(tk, block_k))
    if rows * cols > max_tiles:
        minutes = rows * cols * _SECONDS_PER_TILE / 60
        raise ValueError(
            f"{rows:,} x {cols:,} = {rows * cols:,} tiles of {block_q} x {block_k} for "
            f"Tq={tq}, Tk={tk}: past max_tiles={max_tiles:,}. Each tile costs tens of "
            f"microseconds of Python (about {minutes:,.1f} minutes in all at 80 us a tile). Use "
            f"larger tiles (the default {BLOCK_Q} x {BLOCK_K} gives "
            f"{len(_starts(tq, BLOCK_Q)) * len(_starts(tk, BLOCK_K)):,}), or pass max_tiles= "
            "to run it anyway.")


def _blocked(i0, i1, j0, j1, offset, is_causal, mask):
    """The tile's blocked entries, (bq, bk) or (..., bq, bk), or None if none is blocked."""
    blocked = None
    if is_causal and j1 - 1 > i0 + offset:
        blocked = np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None] + offset
    if mask is not None:
        tile = mask[..., i0:i1, j0:j1]
        blocked = tile if blocked is None else (blocked | tile)
    return blocked


def _tile_scores(q_tile, k_tile, scale, blocked, i0, j0):
    """``q_tile k_tile^T * scale``, blocked entries -inf; refuses overflow as mha.scores does."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = (q_tile @ np.swapaxes(k_tile, -1, -2)) * scale
    if not np.isfinite(s.max()) or not np.isfinite(s.min()):
        where = first_index(~np.isfinite(s))
        where = where[:-2] + (where[-2] + i0, where[-1] + j0)  # index in the (..., Tq, Tk) scores
        raise ValueError(
            f"the scores q k^T * scale overflow {s.dtype} (first at index {where}): "
            f"the inputs are too large for {s.dtype}; rescale them or compute in float64."
        )
    if blocked is not None:
        s = np.where(blocked, -np.inf, s)
    return s


def _check_skipped_tiles(q, k, scale, plan, block_q, block_k):
    """Refuse an overflowing score in a skipped tile, as :func:`mha.attention` refuses it.

    Cheap for ordinary inputs: every score, and every partial sum of its dot product,
    is at most ``d_k * max|q| * max|k|`` in size. Only when that bound comes near the
    dtype's largest number are the skipped tiles computed, one at a time, to look.
    """
    if not np.any(plan == SKIPPED) or q.size == 0 or k.size == 0:
        return
    top = float(np.finfo(q.dtype).max) / 4  # a margin for the rounding of the sums
    size_q, size_k = max(q.max(), -q.min()), max(k.max(), -k.min())  # no |q| copy
    bound = q.shape[-1] * float(size_q) * float(size_k)  # Python floats: inf, no error
    if bound < top and bound * float(scale) < top:
        return
    for a, b in zip(*np.nonzero(plan == SKIPPED), strict=True):
        i0, j0 = int(a) * block_q, int(b) * block_k
        _tile_scores(q[..., i0:i0 + block_q, :], k[..., j0:j0 + block_k, :], scale, None, i0, j0)


def _prepare(q, k, v, mask, is_causal, scale, block_q, block_k, max_tiles=MAX_TILES):
    is_causal = check_flag(is_causal, "is_causal")
    q, k, v = _check_qkv(q, k, v)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    tq, tk = q.shape[-2], k.shape[-2]
    scale = _check_scale(1.0 / np.sqrt(q.shape[-1]) if scale is None else scale, q.dtype)
    if is_causal:
        check_causal_lengths(tq, tk)  # lower-right: Tq > Tk leaves the first queries no key
    if mask is not None:  # a broadcast view: no (Tq, Tk) copy; with is_causal the rows are
        mask = check_mask(mask, lead + (tq, tk), check_rows=not is_causal)  # checked per tile
    block_q, block_k = _check_block(block_q, "block_q"), _check_block(block_k, "block_k")
    plan = tile_plan(tq, tk, block_q, block_k, is_causal, mask, max_tiles=max_tiles)
    _check_skipped_tiles(q, k, scale, plan, block_q, block_k)
    return q, k, v, lead, tq, tk, scale, mask, block_q, block_k, is_causal, plan
