"""Input checks shared by the NumPy and torch code: one wording for one mistake."""

from __future__ import annotations

import os

import numpy as np


class DTypeError(TypeError, ValueError):
    """An input of the wrong kind of dtype (bool, complex, object, strings, ...).

    It subclasses both ``TypeError`` and ``ValueError`` (as NumPy's
    ``AxisError`` subclasses two builtins), so ``except TypeError`` and
    ``except ValueError`` both catch it.
    """


class TooLargeError(ValueError, MemoryError):
    """An input whose computation would need more memory than the machine has.

    Raised before anything is allocated, with the size it would need; both a
    ``ValueError`` (a refused input, like every other refusal) and a
    ``MemoryError`` (what NumPy or torch would have raised, after trying).
    """


def first_index(flags) -> tuple[int, ...]:
    """Index of the first True entry of a boolean array, as a tuple of ints."""
    return tuple(int(i) for i in np.argwhere(np.asarray(flags))[0])


def check_real_dtype(arr: np.ndarray, name: str) -> None:
    """Refuse (``DTypeError``) any dtype other than integer or real floating.

    A boolean array gets its own message: it is most likely a mask passed
    where numbers were expected.
    """
    if arr.dtype == bool:
        raise DTypeError(
            f"{name} is a boolean array; expected real numbers. A boolean array looks like "
            "a mask: masks go in mask= (True = blocked), or become scores via "
            "np.where(mask, -np.inf, scores)."
        )
    if arr.dtype.kind not in "iuf":
        raise DTypeError(
            f"{name} must be real numbers (integer or floating); got dtype {arr.dtype}."
        )


def computation_dtype(dtype) -> np.dtype:
    """The floating dtype an input of ``dtype`` computes in: ``result_type(dtype, float32)``.

    float64 -> float64, float32 -> float32, float16 -> float32;
    int8 / int16 / uint8 / uint16 -> float32 (always exact);
    int32 / uint32 -> float64 (always exact); int64 / uint64 -> float64.
    """
    return np.result_type(np.dtype(dtype), np.float32)


def to_float_exact(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` (integer or floating) in its :func:`computation_dtype`.

    Refuses (``ValueError``) integers that the floating dtype cannot hold
    exactly (past ``2**53`` for float64): rounding them would silently change
    the input. Only 64-bit integers can hit this.
    """
    target = computation_dtype(arr.dtype)
    out = arr.astype(target, copy=False)
    if arr.dtype.kind in "iu":
        # Below 2**(nmant+1) every integer is exact; above, compare with Python ints.
        limit = 2.0 ** (np.finfo(target).nmant + 1)
        lost = np.abs(arr.astype(np.float64)) >= limit
        for index in map(tuple, np.argwhere(lost)):
            lost[index] = int(out[index]) != int(arr[index])
        if np.any(lost):
            where = first_index(lost)
            raise ValueError(
                f"{name} holds the integer {arr[where]} at index {where}, which {target} "
                f"cannot hold exactly; convert {name} to float yourself if rounding is acceptable."
            )
    return out


def as_array(x, name: str) -> np.ndarray:
    """``np.asarray(x)``, refusing what it would read silently wrong or fail on deep inside.

    Refuses a NumPy masked array (``DTypeError``: ``np.asarray`` drops its mask,
    so masked entries would count; the package's masks are separate boolean
    arrays, True = blocked) and a torch tensor NumPy cannot read (bfloat16, one
    that requires grad, or one not on the CPU), naming the explicit conversion.
    A CPU tensor of a NumPy dtype is read as before.
    """
    if isinstance(x, np.ma.MaskedArray):
        raise DTypeError(
            f"{name} is a NumPy masked array; its mask would be ignored. The package takes "
            "a mask as its own boolean array, True = blocked (np.ma's convention too): pass "
            "x.data and mask=np.ma.getmaskarray(x), or for logits "
            "np.where(np.ma.getmaskarray(x), -np.inf, x.data)."
        )
    if _is_torch(x) and hasattr(x, "device"):
        if x.device.type != "cpu" or x.requires_grad or str(x.dtype) in _NO_NUMPY_DTYPE:
            why = (f"is on the {x.device.type} device" if x.device.type != "cpu" else
                   "requires grad" if x.requires_grad else
                   f"has dtype {dtype_name(x.dtype)}, which NumPy has no dtype for")
            raise DTypeError(
                f"{name} is a torch tensor that {why}; this function computes in NumPy. "
                f"Convert it explicitly (e.g. {name}.detach().cpu().double().numpy()) or use "
                "the torch code (mha.layers, mha.torch_transfer.sdpa_attention)."
            )
    return np.asarray(x)


_NO_NUMPY_DTYPE = ("torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2",
                   "torch.uint16", "torch.uint32", "torch.uint64", "torch.complex32")


def as_float_array(x, name: str, min_ndim: int = 0) -> np.ndarray:
    """``x`` as a real floating array; refuse what would compute silently wrong.

    Dtype rule: :func:`computation_dtype` (``np.result_type(x, float32)``).
    Refuses bool, complex, object and string arrays (``DTypeError``, a
    ``TypeError``), fewer than ``min_ndim`` dims, integers the floating dtype
    cannot hold exactly, and NaN or +-inf anywhere (``ValueError``), and what
    :func:`as_array` refuses (a NumPy masked array, whose mask would be
    ignored; a torch tensor NumPy cannot read).
    """
    arr = as_array(x, name)
    check_real_dtype(arr, name)
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dims (..., T, d); got shape {arr.shape}."
        )
    arr = to_float_exact(arr, name)
    check_finite(arr, name)
    return arr


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def all_finite(x) -> bool:
    """True if the NumPy array or torch tensor ``x`` holds no NaN and no +-inf.

    On a tensor it first sums: any NaN or inf makes the sum NaN or inf, and one
    sum costs about 1/40 of ``isfinite().all()`` (4 x 8 x 256 x 256 float32 on
    one CPU thread: 0.09 ms against 3.6 ms). Only when the sum is not finite
    (a non-finite entry, or finite entries whose sum overflows) is every entry
    looked at.
    """
    if _is_torch(x):
        if bool(x.detach().sum().isfinite()):
            return True
        return bool(x.isfinite().all())
    return bool(np.all(np.isfinite(x)))


def _first_nonfinite(x) -> tuple[int, ...] | None:
    """Index of the first NaN or +-inf of a NumPy array or torch tensor, or None."""
    if _is_torch(x):
        if all_finite(x):
            return None
        return tuple(int(i) for i in (~x.isfinite()).nonzero()[0])
    bad = ~np.isfinite(x)
    return first_index(bad) if np.any(bad) else None


def check_finite(x, name: str) -> None:
    """Refuse (``ValueError``) a NumPy array or torch tensor holding NaN or +-inf.

    The one wording for both sides: ``"q contains NaN at index (0, 1, 2, 0);
    inputs must be finite."`` (:func:`as_float_array` uses it; so do the torch
    module, ``sdpa_attention`` and any torch code that calls it on its inputs).
    A finite tensor costs one sum (see :func:`all_finite`).
    """
    where = _first_nonfinite(x)
    if where is None:
        return
    value = float(x[where])
    kind = "NaN" if value != value else ("+inf" if value > 0 else "-inf")
    raise ValueError(f"{name} contains {kind} at index {where}; inputs must be finite.")


def check_scores_finite(scores) -> None:
    """Refuse (``ValueError``) scores ``q k^T * scale`` that overflowed (NumPy or torch).

    Finite inputs can still give infinite scores when they are too large for the
    dtype (about 1e19 per entry in float32). The wording is :func:`mha.scores`'s.
    """
    where = _first_nonfinite(scores)
    if where is not None:
        dtype = dtype_name(scores.dtype)
        raise ValueError(
            f"the scores q k^T * scale overflow {dtype} (first at index {where}): "
            f"the inputs are too large for {dtype}; rescale them or compute in float64."
        )


def refuse_nonfinite_attention(q, k, v, scale: float) -> None:
    """Name why an attention output is not finite, in the NumPy side's words and order.

    Call it (torch side) when a cheap :func:`all_finite` on the scores or the
    output fails: it refuses (``ValueError``) NaN or +-inf in ``q``, ``k``, ``v``
    (e.g. a projection that overflowed) with :func:`check_finite`, then
    overflowing scores with :func:`check_scores_finite`, as :func:`mha.attention`
    does. ``q (..., Tq, dh)``, ``k (..., Tk, dh)``, ``v (..., Tk, dv)`` with
    leading dims that broadcast. Returns None if none of these is the cause.
    """
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_finite(x, name)
    check_scores_finite((q @ k.swapaxes(-1, -2)) * scale)


def check_output_finite(out, what: str) -> None:
    """Refuse (``ValueError``) an output that overflowed although its inputs were finite.

    ``out`` is a NumPy array or torch tensor; ``what`` names the step, e.g.
    ``"the output projection"``. One sum when finite (:func:`all_finite`).
    The NumPy class and the torch module use it with one wording.
    """
    where = _first_nonfinite(out)
    if where is not None:
        dtype = dtype_name(out.dtype)
        way = "rescale them" if dtype == "float64" else "rescale them or compute in float64"
        raise ValueError(
            f"{what} overflows {dtype} (first at index {where}): the inputs or weights are "
            f"too large for {dtype}; {way}."
        )


def physical_memory() -> int | None:
    """The machine's RAM in bytes, or None where the OS does not say (then nothing is refused)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n < 2**40 else f"{n / 2**40:,.1f} TiB"


def check_fits_in_memory(n_bytes: int, what: str, hint: str) -> None:
    """Refuse (:class:`TooLargeError`) ``what`` needing more than the machine's RAM.

    Called before the allocation, so the refusal costs nothing and names the
    size: ``"the scores (1, 1, 1048576, 1048576) float64 need 8.0 TiB, more
    than this machine's 23.5 GiB of memory"``, then ``hint``. Anything that
    fits is left to try (the OS may still be short of free memory).
    """
    total = physical_memory()
    if total is not None and n_bytes > total:
        raise TooLargeError(f"{what} need {_gib(n_bytes)}, more than this machine's "
                            f"{_gib(total)} of memory; {hint}")


def check_scores_memory(shape: tuple[int, ...], dtype, itemsize: int, way_out: str) -> None:
    """Refuse (:class:`TooLargeError`) ``(..., Tq, Tk)`` scores larger than the machine's RAM.

    One wording for the NumPy and the torch side: ``"the scores (..., Tq, Tk) =
    (1, 1048576, 1048576) in float64 alone need 8.0 TiB, more than this
    machine's 23.5 GiB of memory; "`` then ``way_out``. Only the scores are
    counted (the weights and the masked copy come on top), so what is refused
    could never have run.
    """
    n = itemsize
    for size in shape:
        n *= int(size)  # Python ints: no overflow
    check_fits_in_memory(n, f"the scores (..., Tq, Tk) = {tuple(int(s) for s in shape)} in "
                            f"{dtype_name(dtype)} alone", way_out)


def check_number(x, name: str, *, above=None) -> float:
    """``x`` as a finite Python float; refuse a bool, string, tensor or array
    (``DTypeError``) and NaN, +-inf or a value not above ``above`` (``ValueError``)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                             np.floating)):
        raise DTypeError(f"{name} must be a real number; got {x!r}.")
    x = float(x)
    if not np.isfinite(x) or (above is not None and not x > above):
        limit = "" if above is None else f" above {above}"
        raise ValueError(f"{name} must be a finite number{limit}; got {x!r}.")
    return x


def check_non_negative_int(n, name: str) -> int:
    """``n`` as a Python int >= 0 (NumPy integers too), worded as
    :func:`check_positive_int`: ``DTypeError`` for a bool or non-integer,
    ``ValueError`` below 0."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise DTypeError(f"{name} must be a non-negative int; got {n!r}.")
    if n < 0:
        raise ValueError(f"{name} must be a non-negative int; got {n!r}.")
    return int(n)


def check_device(x, name: str, device=None) -> None:
    """Refuse (``ValueError``) a tensor on the meta device (a shape but no values), and
    one on another device than ``device`` (the parameters'), when ``device`` is given."""
    if x.device.type == "meta":
        raise ValueError(f"{name} is on the meta device: it has a shape but no values. "
                         "Create it on a real device (e.g. torch.randn(..., device='cpu')).")
    if device is not None and x.device != device:
        raise ValueError(f"{name} is on {x.device} but the parameters are on {device}; "
                         f"move one of them (e.g. {name}.to({str(device)!r})).")


def check_torch_float_dtype(dtype, name: str = "dtype"):
    """``dtype`` if it is a floating ``torch.dtype``; refuse anything else (``DTypeError``).

    A NumPy dtype or a string gets the torch spelling in the message (``np.float32``
    -> ``torch.float32``). Written without importing torch, so the NumPy side stays
    free of it.
    """
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        if dtype.is_floating_point:
            return dtype
        raise DTypeError(f"{name} must be a floating torch dtype (torch.float32, torch.float64, "
                         f"torch.bfloat16, ...); got {dtype}.")
    try:
        spelled = f"; its torch spelling is torch.{np.dtype(dtype).name}"
    except TypeError:
        spelled = ""
    raise DTypeError(f"{name} must be a torch dtype such as torch.float32; got {dtype!r}"
                     f"{spelled}.")


def check_probs(p: np.ndarray, name: str = "probs", axis: int = -1) -> None:
    """Refuse (``ValueError``) ``p`` unless it looks like a softmax output along ``axis``.

    ``p`` is a floating array already checked by :func:`as_float_array`.
    Negative entries, or a row whose sum is off 1 by more than ``1e-6``
    (float64) / ``1e-3`` (lower precision), point at logits passed in place
    of probabilities; the message names the first bad row. An empty axis is
    refused as empty (its rows would "sum to 0").
    """
    if p.ndim and p.shape[axis] == 0:
        raise ValueError(f"{name} is empty along axis {axis} (shape {p.shape}); "
                         "a softmax row needs an entry.")
    if np.any(p < 0):
        where = first_index(p < 0)
        raise ValueError(
            f"{name} has a negative entry at index {where}; "
            "pass the softmax output, not the logits."
        )
    tol = 1e-6 if p.dtype == np.float64 else 1e-3
    sums = np.sum(p, axis=axis)
    off = np.abs(sums - 1.0) > tol
    if np.any(off):
        where = first_index(off) if off.ndim else ()
        row = f"row {where}" if where else "the only row"
        raise ValueError(
            f"{name} rows must sum to 1 along axis {axis}; {row} sums to "
            f"{float(sums[where]):.4g}. Pass the softmax output, not the logits."
        )


def dtype_name(dtype) -> str:
    """A dtype's name without the ``torch.`` prefix: ``int64`` for NumPy and torch alike,
    so one refusal reads the same on both sides."""
    return str(dtype).removeprefix("torch.")


def check_positive_int(n, name: str) -> int:
    """``n`` as a Python int >= 1; NumPy integers are accepted, as Python ints are.

    Refuses a bool, a float (even ``8.0``), a string or another non-integer
    (``DTypeError``, both a ``TypeError`` and a ``ValueError``) and an int below 1
    (``ValueError``). The NumPy and torch classes both use it for ``d_model`` and
    ``n_heads``.
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise DTypeError(f"{name} must be a positive int; got {n!r}.")
    if n < 1:
        raise ValueError(f"{name} must be a positive int; got {n!r}.")
    return int(n)


def check_heads(d_model, n_heads) -> tuple[int, int]:
    """``(d_model, n_heads)`` as ints, refusing what :func:`check_positive_int` refuses
    and a ``d_model`` that ``n_heads`` does not divide (``ValueError``)."""
    d_model = check_positive_int(d_model, "d_model")
    n_heads = check_positive_int(n_heads, "n_heads")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}: "
                         "each head needs the same width dh = d_model // n_heads.")
    return d_model, n_heads


def check_flag(value, name: str) -> bool:
    """``value`` as a bool; refuse anything but ``True`` / ``False`` (``DTypeError``).

    ``packed_qkv="no"`` or ``bias=None`` would otherwise be read by truthiness.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise DTypeError(f"{name} must be True or False; got {value!r}.")
    return bool(value)


def check_has_keys(shape: tuple[int, ...], name: str = "k") -> None:
    """Refuse (``ValueError``) keys of length 0: ``shape`` is ``(..., Tk, d)``.

    With no key a query has nothing to read: softmax over an empty row is 0 / 0,
    and SDPA or a module would return zeros or the output bias instead of an error.
    """
    if shape[-2] == 0:
        raise ValueError(f"{name} has no positions (Tk=0, shape {tuple(shape)}); every query "
                         "needs at least one key.")


def check_has_features(q_shape: tuple[int, ...], k_shape: tuple[int, ...]) -> None:
    """Refuse (``ValueError``) q and k of width ``d_k = 0``: a dot product needs a feature.

    Without the check NumPy gives scores of 0 and SDPA averages V, silently.
    """
    if q_shape[-1] == 0:
        raise ValueError(f"q and k have no features (d_k=0, shapes {tuple(q_shape)} and "
                         f"{tuple(k_shape)}); a dot product needs at least one.")


def check_dropout(p, name: str = "dropout") -> float:
    """``p`` as a float in ``[0, 1)``; refuse a bool, a string or another non-number
    (``DTypeError``) and a number outside the range, NaN included (``ValueError``)."""
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{name} must be a number in [0, 1); got {p!r}.")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{name} must be in [0, 1); got {p}.")
    return float(p)


def check_scale(scale) -> float:
    """``scale`` as a Python float; refuse what is not one finite real number >= 0.

    Refuses a bool, complex, string or other non-number (``DTypeError``), an
    array of several numbers or a torch tensor (``ValueError``: SDPA takes a
    float, so a tensor's gradient would be lost silently), and NaN, inf or a
    negative number (``ValueError``).
    """
    if type(scale).__module__.startswith("torch"):
        raise ValueError(
            "scale must be a Python number, not a tensor: SDPA takes a float, so a tensor's "
            "gradient would be lost. For a learned temperature, multiply q by it before the call."
        )
    s = np.asarray(scale)
    if s.ndim != 0:
        raise ValueError(f"scale must be a single number; got shape {s.shape}.")
    if s.dtype == bool or s.dtype.kind not in "iuf":
        raise DTypeError(f"scale must be a real number; got {scale!r} (dtype {s.dtype}).")
    if not np.isfinite(s) or s < 0:
        raise ValueError(
            f"scale must be a finite number >= 0 (the default is 1/sqrt(d_k)); got {scale!r}. "
            "A negative scale would turn the preferences upside down."
        )
    return float(s)


def check_rng(rng, name: str = "rng") -> np.random.Generator:
    """``rng`` if it is a ``np.random.Generator``; refuse anything else (``DTypeError``).

    An int seed, ``np.random.RandomState`` or the ``np.random`` module would
    fail deep inside (``'int' object has no attribute 'standard_normal'``) or
    draw from another stream than the docstring promises; the message names the
    fix, ``np.random.default_rng(seed)``.
    """
    if not isinstance(rng, np.random.Generator):
        raise DTypeError(f"{name} must be a np.random.Generator, e.g. np.random.default_rng(0); "
                         f"got {rng!r}.")
    return rng


def check_token_ids(ids, n: int, name: str = "tokens") -> np.ndarray:
    """``ids`` (array-like or tensor of integers) as an int64 NumPy array, each in ``0..n-1``.

    Refuses a non-integer dtype (floats, bools, strings: ``DTypeError``, as
    ``int(1.5)`` would silently read token 1) and an id outside ``0..n-1``
    (``ValueError``, naming the first one: a negative id would silently index
    from the end).
    """
    if _is_torch(ids) and hasattr(ids, "detach"):
        ids = ids.detach().cpu()
    arr = np.asarray(ids)
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        raise DTypeError(f"{name} must be integer token ids in 0..{n - 1}; got dtype "
                         f"{dtype_name(arr.dtype)}.")
    bad = (arr < 0) | (arr >= n)
    if np.any(bad):
        where = first_index(bad)
        raise ValueError(f"{name} must lie in 0..{n - 1}; got {int(arr[where])} at index "
                         f"{where}.")
    return arr.astype(np.int64)
