"""Input checks shared by the NumPy and torch code: one wording for one mistake."""

from __future__ import annotations

import numpy as np


def first_index(flags) -> tuple[int, ...]:
    """Index of the first True entry of a boolean array, as a tuple of ints."""
    return tuple(int(i) for i in np.argwhere(np.asarray(flags))[0])


def as_float_array(x, name: str, min_ndim: int = 0) -> np.ndarray:
    """``x`` as a real floating array; refuse what would compute silently wrong.

    Integers become ``np.result_type(x, float32)``; bool, complex and object
    arrays are refused (``TypeError``), and so are NaN and +-inf (``ValueError``).
    """
    arr = np.asarray(x)
    if arr.dtype == bool:
        raise TypeError(f"{name} is a boolean array; expected numbers (a mask goes in mask=).")
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers (integer or floating); got dtype {arr.dtype}.")
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dims (..., T, d); got shape {arr.shape}."
        )
    arr = arr.astype(np.result_type(arr.dtype, np.float32), copy=False)
    bad = ~np.isfinite(arr)
    if np.any(bad):
        kind = "NaN" if np.isnan(arr[first_index(bad)]) else "inf"
        raise ValueError(f"{name} contains {kind} at index {first_index(bad)}; inputs must be finite.")
    return arr


def check_mask(mask, scores_shape: tuple[int, ...]) -> np.ndarray:
    """Validate a package-convention mask (bool, **True = blocked**) against scores.

    Returns the mask broadcast to ``scores_shape`` ``(..., Tq, Tk)``. Refuses a
    non-boolean mask (``TypeError``: say which convention you mean by converting
    explicitly), a mask that does not broadcast, and a mask that blocks every key
    for some query (``ValueError``: softmax would have nothing to normalise).
    """
    m = np.asarray(mask)
    if m.dtype != bool:
        hint = ""
        if m.dtype.kind in "iu":
            hint = (" For a 0/1 mask, say which value blocks: `mask == 1` if 1 means blocked, "
                    "`mask == 0` if 1 means allowed.")
        elif m.dtype.kind == "f":
            hint = " For an additive mask (0 / -inf) use mha.masks.from_additive(mask)."
        raise TypeError(
            f"mask must be boolean with True = blocked; got dtype {m.dtype}.{hint}"
        )
    try:
        m = np.broadcast_to(m, scores_shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {np.shape(mask)} does not broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., Tq, Tk). A (B, Tk) padding mask needs "
            "reshaping to (B, 1, 1, Tk): see mha.masks.padding_mask."
        ) from None
    fully = np.all(m, axis=-1)
    if np.any(fully):
        raise ValueError(
            f"fully masked row: the mask blocks every key for the query at index "
            f"{first_index(fully)}; each query needs at least one allowed key "
            "(softmax would divide 0 by 0 and return NaN)."
        )
    return m
