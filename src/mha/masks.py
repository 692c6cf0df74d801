"""Boolean attention masks, and the crossings to other libraries' conventions.

**The package convention: a boolean mask, True = blocked.** ``mask[i, j]`` is
True when query ``i`` may *not* read key ``j``. It matches the boolean
``attn_mask`` / ``key_padding_mask`` of ``torch.nn.MultiheadAttention``, and it
is the *inverse* of ``torch.nn.functional.scaled_dot_product_attention``, whose
boolean ``attn_mask`` means True = allowed. Every crossing goes through a named
function here (:func:`to_sdpa`, :func:`from_sdpa`, :func:`to_additive`,
:func:`from_additive`), never through a bare ``~`` or ``== 0`` in a lesson.

The outbound crossings (:func:`to_sdpa`, :func:`to_additive`) refuse a mask
that blocks every key of some query: on the other side of the boundary such a
row does not raise, it silently becomes NaN (``torch.softmax``,
``nn.MultiheadAttention`` with ``need_weights=True``) or a row of zeros (SDPA,
and ``nn.MultiheadAttention`` with ``need_weights=False``, which calls SDPA),
as observed with torch 2.13 on CPU; ``tests/test_masks.py`` pins both.

The crossings (:func:`to_sdpa`, :func:`from_sdpa`, :func:`to_additive`,
:func:`from_additive`), :func:`key_padding_to_4d` and :func:`combine` take NumPy
arrays (or anything ``np.asarray`` accepts) and torch tensors; a torch tensor in
gives a torch tensor out, on its device. The builders (:func:`causal_mask`,
:func:`padding_mask`, :func:`mask_from_positions`) always return NumPy arrays,
even from CPU tensors of lengths or positions: cross with ``torch.from_numpy``
(the torch module and ``sdpa_attention`` also take NumPy masks).
"""

from __future__ import annotations

import numpy as np

from ._checks import DTypeError, check_fits_in_memory, first_index
from ._mask_checks import check_causal_lengths, check_mask, mask_dtype_hint

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
    it lies ``w`` or more positions back (the query then sees itself and the
    ``w - 1`` positions before it).

    Shapes: ``query_positions (Tq,)``, ``key_positions (Tk,)`` -> ``(Tq, Tk)`` bool,
    a NumPy array (also for CPU tensors of positions).
    This is the mask a KV cache needs: two new queries at positions 3 and 4
    reading five cached keys 0..4 block only key 4 for query 3.

    Any integer dtype works, unsigned and 8-bit included: positions are
    compared in int64, so ``qp - window`` never wraps around.

    Refuses non-integer or non-1-D positions, positions of magnitude ``2**62``
    or more (``ValueError``; their differences would not fit int64), a
    window that is not an integer >= 1, and a mask larger than the machine's
    memory (``TooLargeError``, naming the size). It does not refuse a query that sees no
    key (all keys after it): :func:`mha.attention` and the outbound conversions do.
    """
    qp = np.asarray(query_positions)
    kp = np.asarray(key_positions)
    # An empty list reads as float64; with no position there is nothing to mistake.
    qp, kp = (p.astype(np.int64) if p.size == 0 and p.dtype == np.float64 else p
              for p in (qp, kp))
    if qp.dtype.kind not in "iu" or kp.dtype.kind not in "iu":
        raise DTypeError(
            f"positions must be integer arrays; got {qp.dtype} (queries) and {kp.dtype} (keys)."
        )
    if qp.ndim != 1 or kp.ndim != 1:
        raise ValueError(
            f"positions must be 1-D, (Tq,) and (Tk,); got shapes {qp.shape} and {kp.shape}."
        )
    qp, kp = _positions_as_int64(qp, "query"), _positions_as_int64(kp, "key")
    check_fits_in_memory(qp.size * kp.size, f"the mask ({qp.size}, {kp.size}) in bool would",
                         "attention at this length needs mha.tiled.tiled_attention "
                         "(is_causal=True, no mask) or a shorter sequence.")
    blocked = kp[None, :] > qp[:, None]  # (Tq, Tk)
    if window is not None:
        whole = isinstance(window, (int, np.integer)) or (
            isinstance(window, (float, np.floating)) and float(window).is_integer())
        if isinstance(window, (bool, np.bool_)) or not whole or window < 1:
            raise ValueError(
                f"window must be an integer >= 1 (the query sees itself); got {window!r}."
            )
        # qp - kp fits int64 (|positions| < 2**62); a window past int64 blocks nothing more.
        w = min(int(window), np.iinfo(np.int64).max)
        blocked |= (qp[:, None] - kp[None, :]) >= w
    return blocked


_POSITION_LIMIT = 2**62


def _positions_as_int64(p: np.ndarray, which: str) -> np.ndarray:
    """Integer positions as int64, refusing magnitudes whose differences overflow int64."""
    if p.size and (int(p.max()) >= _POSITION_LIMIT or int(p.min()) <= -_POSITION_LIMIT):
        raise ValueError(
            f"{which} positions must lie strictly between -2**62 and 2**62; got values from "
            f"{int(p.min())} to {int(p.max())}."
        )
    return p.astype(np.int64)


def causal_mask(t: int, window: int | None = None, t_k: int | None = None) -> np.ndarray:
    """``(t, t)`` bool, True strictly above the diagonal: position ``i`` sees
    itself and everything before it, never the future.

    As an additive mask (:func:`to_additive`) that is 0 on and below the
    diagonal and ``-inf`` above it. ``window=w`` also blocks keys ``w`` or
    more positions back (a sliding window).

    ``t_k`` gives ``(t, t_k)``: ``t`` queries that are the *last* ``t``
    positions of ``t_k`` keys (aligned lower-right, the KV cache's meaning;
    ``torch.nn.attention.bias.causal_lower_right`` is the same mask). Query
    ``i`` sits at position ``t_k - t + i``: two queries over five keys block
    only key 4 for query 0. Refuses ``t > t_k`` (the first queries would see no
    key) and lengths that are not positive integers.
    """
    _require_length(t, "causal_mask")
    if t_k is None:
        pos = np.arange(int(t))
        return mask_from_positions(pos, pos, window=window)
    _require_length(t_k, "causal_mask")
    check_causal_lengths(int(t), int(t_k), f"causal_mask(t={t}, t_k={t_k})")
    return mask_from_positions(np.arange(t_k - t, t_k), np.arange(int(t_k)), window=window)


def padding_mask(lengths, t: int) -> np.ndarray:
    """Key padding mask for a batch of sequences padded to length ``t``.

    ``lengths (B,)`` valid lengths -> ``(B, 1, 1, t)`` bool, True on the padded
    keys, ready to broadcast against scores ``(B, H, Tq, Tk)``. Only keys are
    blocked: a padded *query* still reads the valid keys (its output is unused,
    not NaN). Refuses a length of 0 (every key would be blocked) or one longer
    than ``t``.
    """
    _require_length(t, "padding_mask")
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise TypeError(
            f"lengths must be a 1-D integer array (B,); got dtype {lengths.dtype}, "
            f"shape {lengths.shape}."
        )
    if np.any(lengths < 1) or np.any(lengths > t):
        raise ValueError(f"every length must be in 1..{t}; got {lengths.tolist()}.")
    blocked = np.arange(t)[None, :] >= lengths[:, None]  # (B, t)
    return key_padding_to_4d(blocked)


def key_padding_to_4d(key_padding):
    """``(B, Tk)`` -> ``(B, 1, 1, Tk)``, so it broadcasts over heads and queries.

    Works on NumPy arrays and torch tensors. Forgetting this reshape is a
    classic bug: a ``(B, Tk)`` mask against ``(B, H, Tq, Tk)`` scores lines
    ``B`` up with ``Tq``, so it either fails to broadcast or, when ``B == Tq``,
    silently masks the wrong rows (query ``b`` of every sequence gets the
    padding of sequence ``b``).
    """
    key_padding = _bool_mask(key_padding, "key_padding_to_4d", "key padding mask (True = padded)")
    if key_padding.ndim != 2:
        raise ValueError(
            f"key padding mask must be (B, Tk); got shape {tuple(key_padding.shape)}."
        )
    return key_padding[:, None, None, :]


def combine(*masks):
    """Blocked if *any* mask blocks it (logical OR), with broadcasting.

    ``combine(causal_mask(T), padding_mask(lengths, T))`` is ``(B, 1, T, T)``.
    Refuses no masks, non-boolean masks, shapes that do not broadcast, and a
    mix of NumPy arrays and torch tensors.
    """
    if not masks:
        raise ValueError("combine needs at least one mask.")
    masks = [_bool_mask(m, "combine") for m in masks]
    kinds = {_is_torch(m) for m in masks}
    if len(kinds) > 1:
        raise TypeError(
            "combine got NumPy arrays and torch tensors mixed; convert them to one kind."
        )
    shapes = [tuple(m.shape) for m in masks]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(
            f"combine: mask shapes {shapes} do not broadcast; a (B, Tk) padding mask needs "
            "reshaping to (B, 1, 1, Tk) (key_padding_to_4d)."
        ) from None
    out = masks[0]
    for m in masks[1:]:
        out = out | m
    return out


def to_sdpa(mask):
    """Package mask (True = blocked) -> SDPA boolean ``attn_mask`` (True = allowed).

    Works on NumPy arrays and torch tensors. Refuses a non-boolean mask and a
    fully masked row (SDPA would return a row of zeros for it, without error).
    """
    mask = _bool_mask(mask, "to_sdpa")
    _refuse_fully_masked(mask, "to_sdpa")
    return ~mask


def from_sdpa(allowed):
    """SDPA boolean ``attn_mask`` (True = allowed) -> package mask (True = blocked)."""
    allowed = _bool_mask(allowed, "from_sdpa", "SDPA mask (True = allowed)")
    return ~allowed


def to_additive(mask, dtype=None):
    """Package mask -> additive float mask: 0 where allowed, ``-inf`` where blocked.

    ``dtype`` defaults to float64 for NumPy and to torch's default float dtype
    for a tensor. Refuses a non-boolean mask, a ``dtype`` that is not floating
    or is the other library's (``DTypeError``, a ``TypeError``: an integer type
    cannot hold ``-inf``, and NumPy would put its minimum there with only a
    warning; a tensor needs a torch dtype, an array a NumPy one), and a fully
    masked row (adding a row of ``-inf`` makes ``torch.softmax`` return NaN).
    """
    mask = _bool_mask(mask, "to_additive")
    _refuse_fully_masked(mask, "to_additive")
    if _is_torch(mask):
        import torch

        dtype = torch.get_default_dtype() if dtype is None else dtype
        if not isinstance(dtype, torch.dtype):
            raise DTypeError("to_additive needs a torch dtype for a torch tensor (e.g. "
                             f"torch.float32); got {dtype!r}.")
        if not dtype.is_floating_point:
            raise DTypeError(f"to_additive needs a floating dtype to hold -inf; got {dtype}.")
        zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
        return zeros.masked_fill(mask, -torch.inf)
    if _is_torch(dtype):
        raise DTypeError("to_additive needs a NumPy dtype for a NumPy array (e.g. np.float32); "
                         f"got {dtype}.")
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if dtype.kind != "f":
        raise DTypeError(f"to_additive needs a floating dtype to hold -inf; got {dtype}.")
    return np.where(mask, -np.inf, 0.0).astype(dtype)


def from_additive(additive):
    """Additive float mask (0 allowed, ``-inf`` blocked) -> package mask.

    Refuses anything other than 0 and -inf, such as a large negative number
    (-1e9) or a soft bias: those are not a yes/no mask. The message names the
    first such value and its index, for NumPy arrays and torch tensors alike.
    """
    if _is_torch(additive):
        import torch

        if not additive.dtype.is_floating_point:
            raise DTypeError(f"an additive mask is floating (0 / -inf); got {additive.dtype}.")
        bad = ~((additive == 0) | torch.isneginf(additive))
        if bool(bad.any()):
            where = first_index(bad.cpu().numpy())
            raise ValueError(_not_additive_message(float(additive[where]), where))
        return torch.isneginf(additive)
    a = np.asarray(additive)
    if a.dtype.kind != "f":
        raise DTypeError(f"an additive mask is floating (0 / -inf); got {a.dtype}.")
    bad = ~((a == 0) | np.isneginf(a))
    if np.any(bad):
        where = first_index(bad)
        raise ValueError(_not_additive_message(float(a[where]), where))
    return np.isneginf(a)


def _not_additive_message(value: float, where: tuple[int, ...]) -> str:
    return (f"an additive mask must hold only 0 (allowed) and -inf (blocked); found "
            f"{value:g} at index {where}.")


# -- helpers ----------------------------------------------------------------

def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _bool_mask(mask, who: str, what: str = "mask (True = blocked)"):
    """``mask`` as a boolean array (a torch tensor stays a tensor); refuse other dtypes
    (``DTypeError``, both a ``TypeError`` and a ``ValueError``)."""
    if _is_torch(mask):
        if str(mask.dtype) != "torch.bool":
            raise DTypeError(f"{who} takes a boolean {what}; got {mask.dtype}.")
        return mask
    m = np.asarray(mask)
    if m.dtype != bool:
        raise DTypeError(f"{who} takes a boolean {what}; got dtype {m.dtype}.{mask_dtype_hint(m)}")
    return m


def _refuse_fully_masked(mask, who: str) -> None:
    if mask.ndim == 0:
        raise ValueError(f"{who} needs a mask with a key axis, (..., Tk); got a 0-d mask.")
    fully = mask.all(-1)
    if bool(fully.any()):
        where = first_index(np.asarray(fully.cpu() if _is_torch(fully) else fully))
        raise ValueError(
            f"fully masked row: the mask blocks every key for the query at index {where}; "
            f"refusing to convert it in {who}, because the library on the other side returns "
            "NaN or zeros for such a row instead of an error."
        )


def _require_length(t, who: str) -> None:
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1:
        raise ValueError(f"{who} needs a positive integer length; got {t!r}.")
