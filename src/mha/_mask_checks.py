"""Mask checks shared by the NumPy and torch code: one wording for one mask mistake.

The package's convention is a boolean mask with True = blocked; these name what is
wrong with any other (dtype, rank, broadcasting, a fully masked row, a causal mask
with more queries than keys). Value and argument checks are in ``_checks``.
"""

from __future__ import annotations

import numpy as np

from ._checks import DTypeError, dtype_name, first_index


def mask_dtype_hint(m) -> str:
    """How to turn a non-boolean mask into the package's convention, explicitly.

    ``m`` is a NumPy array or a torch tensor; one wording serves both.
    """
    if isinstance(m, np.ndarray):
        floating, integer = m.dtype.kind == "f", m.dtype.kind in "iu"
    else:  # a torch tensor: ask its dtype, not its name (bfloat16 is floating too)
        floating = m.dtype.is_floating_point
        integer = not floating and not m.dtype.is_complex and str(m.dtype) != "torch.bool"
    # Floats holding only 0 and 1 (with at least one 1) read as a 0/1 mask; any other
    # float mask, all-zero included, reads as additive (0 allowed, -inf blocked).
    zero_one = floating and bool(((m == 0) | (m == 1)).all()) and bool((m == 1).any())
    if integer or zero_one:
        return (" For a 0/1 mask, say which value blocks: `mask == 1` if 1 means blocked, "
                "`mask == 0` if 1 means allowed.")
    if floating:
        return (" For an additive mask (0 / -inf) use mha.masks.from_additive(mask), "
                "which takes NumPy arrays and torch tensors.")
    return ""


def non_bool_mask_message(name: str, mask) -> str:
    """The one wording for a mask that is not boolean, NumPy array or torch tensor.

    Raised as :class:`DTypeError` by :func:`check_mask`, by the torch side's
    ``mha.layers.check_torch_mask`` and so by every attention function's ``mask=``.
    """
    return (f"{name} must be boolean with True = blocked; got dtype {dtype_name(mask.dtype)}."
            f"{mask_dtype_hint(mask)}")


def fully_masked_row_message(where: tuple[int, ...], who: str = "the mask") -> str:
    """The one wording for a mask that blocks every key of a query, NumPy and torch.

    ``where`` is the index of the first such row in the ``(..., Tq)`` leading
    shape of the scores; ``who`` names the mask (``"the mask"``,
    ``"the mask combined with key_padding_mask"``, ...).
    """
    lead = f" of batch/head index {where[:-1]}" if len(where) > 1 else ""
    return (
        f"fully masked row: {who} blocks every key for query {where[-1]}{lead} "
        f"(index {where}); each query needs at least one allowed key "
        "(softmax would divide 0 by 0 and return NaN)."
    )


def check_causal_lengths(t_q: int, t_k: int, who: str = "is_causal=True") -> None:
    """Refuse (``ValueError``) a causal mask with more queries than keys.

    The package's causal mask aligns the queries with the *last* ``Tq`` key
    positions (lower-right, the KV cache's meaning: query ``i`` sits at position
    ``Tk - Tq + i``). With ``Tq > Tk`` the first ``Tq - Tk`` queries would sit
    before every key and read nothing.
    """
    if t_q > t_k:
        raise ValueError(
            f"{who} with Tq={t_q} queries and Tk={t_k} keys: a causal mask puts the queries at "
            "the last Tq key positions (aligned lower-right, as with a KV cache), so with "
            f"Tq > Tk the first {t_q - t_k} queries would see no key (fully masked rows). "
            "For another alignment pass an explicit mask (True = blocked), e.g. from "
            "mha.masks.mask_from_positions."
        )


def check_mask(mask, scores_shape: tuple[int, ...], who: str = "the mask",
               check_rows: bool = True) -> np.ndarray:
    """Validate a package-convention mask (bool, **True = blocked**) against scores.

    Returns the mask broadcast to ``scores_shape`` ``(..., Tq, Tk)``. Refuses a
    non-boolean mask (``DTypeError``, a ``TypeError``: say which convention you
    mean by converting explicitly), a mask that does not broadcast, and a mask
    that blocks every key for some query (``ValueError``: softmax would have
    nothing to normalise; skipped with ``check_rows=False`` for a part that is
    combined with others first). ``who`` names the mask in that message.
    """
    m = np.asarray(mask)
    if m.dtype != bool:
        raise DTypeError(non_bool_mask_message("mask", m))
    try:
        m = np.broadcast_to(m, scores_shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {np.shape(mask)} does not broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., Tq, Tk). A (B, Tk) padding mask needs "
            "reshaping to (B, 1, 1, Tk): mha.masks.key_padding_to_4d(mask) does it, "
            "and mha.masks.padding_mask builds one from lengths."
        ) from None
    if check_rows:
        fully = np.all(m, axis=-1)
        if np.any(fully):
            raise ValueError(fully_masked_row_message(first_index(fully), who))
    return m


def check_mask_rank(shape: tuple[int, ...]) -> None:
    """Refuse (``ValueError``) a multi-head module's mask that is neither 2-D nor 4-D.

    ``shape`` is the mask's own shape, already checked to broadcast to the
    scores ``(B, H, Tq, Tk)``. ``(Tq, Tk)`` is shared by every sequence and head;
    a 4-D mask names its axes. A 3-D mask could be ``(B, Tq, Tk)`` or
    ``(H, Tq, Tk)``: broadcasting reads it as the second, so a per-sequence mask
    would land on the heads. A 1-D mask does not say whose keys it blocks. The
    NumPy class and the torch module both use it, with this one wording.
    """
    shape = tuple(shape)
    if len(shape) in (2, 4):
        return
    head = "mask must be (Tq, Tk) or 4-D (B, 1|H, 1|Tq, Tk); "
    if len(shape) == 1:
        raise ValueError(
            f"{head}got a 1-D mask of shape {shape}, which does not say whose keys it "
            "blocks: key padding per sequence goes in key_padding_mask as (B, Tk); the same "
            "keys blocked for every query and sequence is mask[None, :], shape (1, Tk)."
        )
    if len(shape) == 3:
        raise ValueError(
            f"{head}got shape {shape}. A 3-D mask is ambiguous (batch or heads first?): "
            "add the missing axis yourself, e.g. mask[:, None] for (B, 1, Tq, Tk)."
        )
    raise ValueError(f"{head}got shape {shape}.")
