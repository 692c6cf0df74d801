"""Rotary position embeddings (RoPE): positions enter as rotations of q and k.

Each head vector of width ``dh`` is cut into ``dh / 2`` pairs; pair ``i`` is
rotated by the angle ``position * base ** (-2 i / dh)``. Here a pair is
``(x[i], x[i + dh/2])`` (the "half" layout of GPT-NeoX and Llama in Hugging
Face); the original paper pairs neighbours ``(x[2i], x[2i + 1])``. Both give
the same property, the reason RoPE exists: the score of a query at position
``m`` with a key at position ``n`` depends on the positions only through
``m - n``.

Only q and k are rotated, never v; a KV cache stores k *after* rotation, so a
cached key keeps the position it was computed at. The position of a new token
must therefore continue from what the cache holds; restarting at 0 is a
classic bug that lesson 08 shows.
"""

from __future__ import annotations

import torch

from ._checks import (
    DTypeError,
    check_device,
    check_number,
    check_positive_int,
    check_torch_float_dtype,
)

__all__ = ["apply_rope", "rope_angles"]

_EXACT = 2**53  # float64 holds every integer of magnitude up to 2**53
# Integer dtypes torch computes with on every device (uint16/32/64 lack max, min, ...).
_POSITION_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _as_positions(positions, device=None):
    """``positions`` as a tensor; a list or NumPy array is converted, anything else refused."""
    if isinstance(positions, torch.Tensor):
        return positions if device is None else positions.to(device)
    try:
        return torch.as_tensor(positions, device=device)
    except (TypeError, ValueError, RuntimeError):
        raise DTypeError(f"positions must be an integer tensor (absolute positions); got "
                         f"{positions!r}.") from None


def rope_angles(positions, d_head: int, base: float = 10000.0, dtype=torch.float32):
    """``(cos, sin)``, each ``positions.shape + (dh / 2,)``, in ``dtype`` (float32).

    ``positions`` is an integer tensor of any shape, e.g. ``(T,)`` or
    ``(B, T)``; its entries are absolute positions (negative ones are allowed:
    a rotation by a negative angle). Angle of pair ``i``:
    ``position * base ** (-2 i / dh)``. Computed in float64 and returned in
    ``dtype``. Where that stops being exact: an angle's rounding error grows
    with the position, at most about ``position * 1.1e-16`` radians (measured
    for ``dh = 64``: 1.4e-8 at position 5e8, under float32's 6e-8 steps near 1;
    1.5e-5 at ``2**40``). Past ``2**53`` float64 no longer holds every integer,
    so neighbouring positions would share one angle: refused.

    Refuses a non-integer ``positions`` (``TypeError``: a float position is
    usually a mask or a length passed by mistake), a position beyond
    ``+-2**53``, a ``d_head`` that is not a positive int (NumPy integers are
    ints) or is odd, a ``base`` that is not a finite number above 1
    (``DTypeError`` for a string, ``ValueError`` for ``inf``: pairs 1 on would
    never rotate), a ``dtype`` that is not a floating torch dtype (an integer
    one would round sin and cos to 0 and 1), positions of torch's unsigned
    16/32/64-bit dtypes (few operations support them: convert to int64) and
    positions on the meta device (``ValueError``).
    """
    positions = _as_positions(positions)
    if positions.dtype.is_floating_point or positions.dtype.is_complex or \
            positions.dtype == torch.bool:
        raise TypeError(f"positions must be an integer tensor (absolute positions); "
                        f"got {positions.dtype}.")
    if positions.dtype not in _POSITION_DTYPES:
        raise DTypeError(f"positions has dtype {positions.dtype}, which torch supports in few "
                         "operations; convert it with positions.to(torch.int64).")
    check_device(positions, "positions")
    dtype = check_torch_float_dtype(dtype, "dtype")
    base = check_number(base, "base", above=1)
    d_head = check_positive_int(d_head, "d_head")  # NumPy integers too
    if d_head % 2:
        raise ValueError(f"RoPE rotates pairs of channels, so d_head must be a positive even "
                         f"int; got {d_head!r}.")
    if positions.numel() and (int(positions.max()) > _EXACT or int(positions.min()) < -_EXACT):
        raise ValueError(f"positions must lie within +-2**53, where float64 (the angles' dtype) "
                         f"holds every integer; got values from {int(positions.min())} to "
                         f"{int(positions.max())}.")
    half = d_head // 2
    inv_freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / d_head)  # (dh/2,)
    angles = positions.to(torch.float64)[..., None] * inv_freq  # (..., dh/2)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x, positions, base: float = 10000.0):
    """Rotate ``x (B, H, T, dh)`` by the positions of its tokens.

    ``positions`` is an integer tensor ``(T,)`` (the same positions for every
    sequence) or ``(B, T)`` (one row per sequence, e.g. from a left-padded
    batch). The output has ``x``'s shape and dtype (the rotation is computed
    in float32 for bfloat16 / float16 input, in ``x``'s dtype otherwise).
    Position 0 leaves ``x`` unchanged; every rotation keeps each pair's norm.

    Refuses a non-tensor or non-floating ``x`` and ``x`` that is not 4-D
    (``TypeError`` / ``ValueError``), positions whose length is not ``T`` or
    whose batch is not ``B``, ``x`` on the meta device, and everything
    :func:`rope_angles` refuses. NaN or +-inf in ``x`` is not looked for: a
    rotation passes it on (to the pair it shares), and the attention that reads
    q and k refuses it by name (:func:`mha.decoder.gqa_attention`,
    :func:`mha.attention`); a scan here would cost every decode step a sum.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"apply_rope rotates a floating tensor (B, H, T, dh); got "
                        f"{getattr(x, 'dtype', type(x).__name__)}.")
    if x.ndim != 4:
        raise ValueError(f"apply_rope takes x as (B, H, T, dh); got shape {tuple(x.shape)}.")
    check_device(x, "x")
    b, _, t, dh = x.shape
    positions = _as_positions(positions, x.device)
    if positions.ndim == 1 and positions.shape[0] == t:
        pass
    elif positions.ndim == 2 and tuple(positions.shape) == (b, t):
        positions = positions[:, None]  # (B, 1, T): the same rotation for every head
    else:
        raise ValueError(f"positions must be (T,) = ({t},) or (B, T) = {(b, t)} for x of shape "
                         f"{tuple(x.shape)}; got shape {tuple(positions.shape)}.")
    work = torch.float32 if x.dtype in (torch.bfloat16, torch.float16) else x.dtype
    cos, sin = rope_angles(positions, dh, base, work)  # (T, dh/2) or (B, 1, T, dh/2)
    first, second = x.to(work).chunk(2, dim=-1)  # pair i is (first[i], second[i])
    rotated = torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)
    return rotated.to(x.dtype)
