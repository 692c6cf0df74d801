"""Boolean attention masks, and the crossings to other libraries' conventions.

**The package convention: a boolean mask, True = blocked.** ``mask[i, j]`` is
True when query ``i`` may *not* read key ``j``. It matches the boolean
``attn_mask`` / ``key_padding_mask`` of ``torch.nn.MultiheadAttention``, and it
is the *inverse* of ``torch.nn.functional.scaled_dot_product_attention``, whose
boolean ``attn_mask`` means True = allowed. Every crossing goes through a named
function here (:func:`to_sdpa`, :func:`from_sdpa`, :func:`to_additive`,
:func:`from_additive`), never through a bare ``~`` or ``== 0`` in a lesson.

The functions work on NumPy arrays and, where noted, on torch tensors too
(they use only ``~``, ``|`` and comparisons).
"""

from __future__ import annotations

import numpy as np

from ._checks import check_mask

__all__ = [
    "causal_mask",
    "mask_from_positions",
    "padding_mask",
    "key_padding_to_4d",
    "combine",
    "to_sdpa",
    "from_sdpa",
    "to_additive",
    "from_additive",
    "check_mask",
]


def mask_from_positions(query_positions, key_positions, window: int | None = None) -> np.ndarray:
    """Causal mask from absolute positions: key ``j`` is blocked for query ``i``
    when ``key_pos[j] > query_pos[i]`` (the future), or, with ``window=w``, when
    it lies ``w`` or more positions back.

    Shapes: ``query_positions (Tq,)``, ``key_positions (Tk,)`` -> ``(Tq, Tk)`` bool.
    This is the mask a KV cache needs: two new queries at positions 3 and 4
    reading five cached keys 0..4 block only key 4 for query 3.
    """
    qp = np.asarray(query_positions)[:, None]  # (Tq, 1)
    kp = np.asarray(key_positions)[None, :]  # (1, Tk)
    if qp.dtype.kind not in "iu" or kp.dtype.kind not in "iu":
        raise TypeError("positions must be integer arrays.")
    blocked = kp > qp
    if window is not None:
        if window < 1:
            raise ValueError(f"window must be >= 1 (the query sees itself); got {window}.")
        blocked |= kp <= qp - window
    return blocked


def causal_mask(t: int, window: int | None = None) -> np.ndarray:
    """``(t, t)`` bool, True strictly above the diagonal: position ``i`` sees
    itself and everything before it, never the future."""
    if int(t) != t or t < 1:
        raise ValueError(f"causal_mask needs a positive integer length; got {t!r}.")
    pos = np.arange(int(t))
    return mask_from_positions(pos, pos, window=window)


def padding_mask(lengths, t: int) -> np.ndarray:
    """Key padding mask for a batch of sequences padded to length ``t``.

    ``lengths (B,)`` valid lengths -> ``(B, 1, 1, t)`` bool, True on the padded
    keys, ready to broadcast against scores ``(B, H, Tq, Tk)``. Refuses a
    length of 0 (every key would be blocked) or one longer than ``t``.
    """
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise TypeError(f"lengths must be a 1-D integer array (B,); got {lengths.dtype} {lengths.shape}.")
    if np.any(lengths < 1) or np.any(lengths > t):
        raise ValueError(f"every length must be in 1..{t}; got {lengths.tolist()}.")
    blocked = np.arange(t)[None, :] >= lengths[:, None]  # (B, t)
    return key_padding_to_4d(blocked)


def key_padding_to_4d(key_padding):
    """``(B, Tk)`` -> ``(B, 1, 1, Tk)``, so it broadcasts over heads and queries.

    Works on NumPy arrays and torch tensors. Forgetting this reshape is a
    classic bug: a ``(B, Tk)`` mask against ``(B, H, Tq, Tk)`` scores either
    fails to broadcast or, when ``B == Tq``, silently masks the wrong rows.
    """
    if key_padding.dtype != bool and str(key_padding.dtype) != "torch.bool":
        raise TypeError(f"key padding mask must be boolean (True = padded); got {key_padding.dtype}.")
    if key_padding.ndim != 2:
        raise ValueError(f"key padding mask must be (B, Tk); got shape {tuple(key_padding.shape)}.")
    return key_padding[:, None, None, :]


def combine(*masks):
    """Blocked if *any* mask blocks it (logical OR), with broadcasting.

    ``combine(causal_mask(T), padding_mask(lengths, T))`` is ``(B, 1, T, T)``.
    """
    if not masks:
        raise ValueError("combine needs at least one mask.")
    for m in masks:
        if m.dtype != bool and str(m.dtype) != "torch.bool":
            raise TypeError(f"combine takes boolean masks (True = blocked); got {m.dtype}.")
    out = masks[0]
    for m in masks[1:]:
        out = out | m
    return out


def to_sdpa(mask):
    """Package mask (True = blocked) -> SDPA boolean ``attn_mask`` (True = allowed).

    Works on NumPy arrays and torch tensors.
    """
    _require_bool(mask, "to_sdpa")
    return ~mask


def from_sdpa(allowed):
    """SDPA boolean ``attn_mask`` (True = allowed) -> package mask (True = blocked)."""
    _require_bool(allowed, "from_sdpa")
    return ~allowed


def to_additive(mask, dtype=np.float64) -> np.ndarray:
    """Package mask -> additive float mask: 0 where allowed, ``-inf`` where blocked."""
    m = np.asarray(mask)
    _require_bool(m, "to_additive")
    return np.where(m, -np.inf, 0.0).astype(dtype)


def from_additive(additive) -> np.ndarray:
    """Additive float mask (0 allowed, ``-inf`` blocked) -> package mask.

    Refuses anything other than 0 and -inf, such as a large negative number
    (-1e9) or a soft bias: those are not a yes/no mask.
    """
    a = np.asarray(additive)
    if a.dtype.kind != "f":
        raise TypeError(f"an additive mask is floating (0 / -inf); got {a.dtype}.")
    if not np.all((a == 0) | np.isneginf(a)):
        raise ValueError("an additive mask must hold only 0 (allowed) and -inf (blocked).")
    return np.isneginf(a)


def _require_bool(mask, who: str) -> None:
    if mask.dtype != bool and str(mask.dtype) != "torch.bool":
        raise TypeError(f"{who} takes a boolean mask; got {mask.dtype}.")
