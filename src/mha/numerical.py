"""Central finite differences: the slow, obvious gradient to check a fast one against.

For a function ``f`` and an input ``x``, entry ``i`` of the gradient is
approximated by nudging ``x[i]`` both ways by ``eps``::

    (f(x + eps * e_i) - f(x - eps * e_i)) / (2 * eps)

The truncation error shrinks like ``eps**2`` and the rounding error grows like
``|f| * machine_eps / eps``. In float64 (machine epsilon about 2.2e-16) the
default ``eps = 1e-6`` makes them about 1e-13 and 1e-10 for values and
derivatives of order 1: plenty to tell a right gradient from a wrong one.

**Dtype rule: float64 only.** In float32 (machine epsilon about 1.2e-7) the
rounding error alone is about ``0.1 * |f|`` at ``eps = 1e-6`` (1.2e-7 / 1e-6):
a finite difference in float32 cannot tell a right gradient from a wrong one,
so it is refused rather than silently computed. Integer inputs are refused
too (convert them to float64 yourself). ``f`` is called with float64 copies
of ``x`` and must return float64 values.

Cost: two calls of ``f`` per entry of ``x``. Keep ``x`` small.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._checks import as_array, check_fits_in_memory

__all__ = ["numerical_gradient", "numerical_jacobian"]


def numerical_jacobian(f, x, eps: float = 1e-6) -> np.ndarray:
    """Central-difference Jacobian of ``f`` at ``x``.

    ``x`` is a float64 array of any shape; ``f(x)`` returns a float64 array
    (or scalar) of shape ``out``. Returns ``J`` of shape ``out + x.shape``
    with ``J[o..., i...] ~ d f(x)[o...] / d x[i...]``. ``x`` itself is never
    modified.

    Refuses (``TypeError``): ``x`` not float64 (float32 is too coarse, see the
    module docstring), an ``f`` that is not callable, an ``f`` that returns a
    non-float64 result. Refuses (``ValueError``): an empty or non-finite
    ``x``, an ``eps`` that is not a positive finite number, an ``f`` whose
    output changes shape or is not finite, and a Jacobian larger than the
    machine's memory (``TooLargeError``, naming the size). Also refuses a
    NumPy masked array or a torch tensor NumPy cannot read, as
    :func:`mha.attention` does.
    """
    x = _check_input(f, x, eps)
    base = _evaluate(f, x.copy(), None)
    check_fits_in_memory(8 * base.size * x.size,
                         f"the Jacobian {base.shape + x.shape} in float64 would",
                         "differentiate a smaller x, or a scalar loss with numerical_gradient "
                         "(whose result has x's shape).")
    jac = np.empty(base.shape + x.shape, dtype=np.float64)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        f_plus = _evaluate(f, plus, base.shape)
        f_minus = _evaluate(f, minus, base.shape)
        jac[(...,) + i] = (f_plus - f_minus) / (2 * eps)
    return jac


def numerical_gradient(f, x, eps: float = 1e-6) -> np.ndarray:
    """Central-difference gradient of a scalar function ``f`` at ``x``.

    ``x`` is a float64 array; ``f(x)`` returns one float64 number (a loss).
    Returns an array of ``x``'s shape: entry ``i`` approximates
    ``d f / d x[i]``. Refusals as in :func:`numerical_jacobian`, plus an ``f``
    whose result is not a scalar (``ValueError``: use
    :func:`numerical_jacobian`, or reduce the output to a loss first).
    """
    x = _check_input(f, x, eps)
    value = _evaluate(f, x.copy(), None)
    if value.shape != ():
        raise ValueError(
            f"numerical_gradient needs f to return a scalar (a loss); got shape {value.shape}. "
            "Reduce the output to one number, e.g. np.sum(out * upstream), or use "
            "numerical_jacobian."
        )
    return numerical_jacobian(f, x, eps)


def _check_input(f, x, eps) -> np.ndarray:
    if not callable(f):
        raise TypeError(f"f must be a function of one array; got {type(f).__name__}.")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (
        math.isfinite(eps) and eps > 0
    ):
        raise ValueError(f"eps must be a positive finite number; got {eps!r}.")
    arr = as_array(x, "x")  # refuses masked arrays and tensors NumPy cannot read
    if arr.dtype != np.float64:
        reason = ""
        if arr.dtype in (np.float32, np.float16):
            reason = (
                f" In {arr.dtype} a finite difference carries a rounding error of about "
                f"|f| * machine epsilon / eps ({np.finfo(arr.dtype).eps:.1e} / {eps:g} for "
                "this eps), which can swamp the gradient: the check would mean nothing."
            )
        raise TypeError(
            f"finite differences need float64 input; got {arr.dtype}.{reason} "
            "Convert with x.astype(np.float64) and compute f in float64."
        )
    if arr.size == 0:
        raise ValueError(f"x is empty (shape {arr.shape}); there is nothing to differentiate.")
    if not np.all(np.isfinite(arr)):
        raise ValueError("x contains NaN or inf; finite differences need a finite point.")
    return arr


def _evaluate(f, x: np.ndarray, shape) -> np.ndarray:
    out = np.asarray(f(x))
    if out.dtype != np.float64:
        raise TypeError(
            f"f returned dtype {out.dtype}; it must compute in float64, or the finite "
            "difference drowns in rounding error."
        )
    if shape is not None and out.shape != shape:
        raise ValueError(f"f changed its output shape from {shape} to {out.shape} between calls.")
    if not np.all(np.isfinite(out)):
        raise ValueError("f returned NaN or inf near x; finite differences need finite values.")
    return out
