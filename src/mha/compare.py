"""One set of weights through every attention path, and how far apart the answers are.

The paths (names as in :data:`PATHS`):

* ``"numpy"``: :class:`mha.MultiHeadAttention`, from scratch in NumPy;
* ``"torch manual"``: :class:`mha.layers.MultiHeadAttention` with ``impl="manual"``;
* ``"torch sdpa"``: the same module with ``impl="sdpa"`` (its projections, then
  ``F.scaled_dot_product_attention``);
* ``nn.MultiheadAttention`` three ways: with gradients on and
  ``need_weights=True`` (it computes the weights itself, softmax and bmm) or
  ``need_weights=False`` (it calls SDPA), and in ``eval()`` with gradients off
  (``"fast path"``: for self-attention one fused ``_native_multi_head_attention``
  kernel; see the conditions in its docs). :func:`attention_kernels` shows
  which kernel a call ran.

Weights are copied with :mod:`mha.torch_transfer` and masks cross with its named
conversions, so a difference measured here is rounding, or a real bug. Masks use
the package convention, bool **True = blocked**. Every function runs in ``eval()``
on a copy of the state it needs and leaves the caller's module as it found it.
The gradient functions and :func:`run_nn_multihead` are written in
:mod:`mha._compare_grads` and imported from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from . import masks
from ._checks import DTypeError, as_float_array, check_flag, check_torch_float_dtype
from ._compare_grads import (
    NN,
    check_attention_module,
    check_query,
    check_seed,
    gradient_differences,
    gradients,
    migration_checks,
    missing_gradients,
    named_projections,
    run_nn_multihead,
)
from .layers import MultiHeadAttention
from .torch_transfer import to_nn_multihead, to_numpy

__all__ = ["PATHS", "FourPaths", "run_four_paths", "attention_kernels", "max_differences",
           "magnitude",
           "seeded_module", "difference_table", "format_table", "gradients",
           "gradient_differences", "missing_gradients", "migration_checks", "named_projections",
           "run_nn_multihead"]

PATHS = ("numpy", "torch manual", "torch sdpa", f"{NN}, need_weights=True",
         f"{NN}, need_weights=False", f"{NN}, fast path")


@dataclass(frozen=True)
class FourPaths:
    """What :func:`run_four_paths` returns.

    ``outputs``: path -> ``(B, Tq, C)`` NumPy array in the module's dtype, for
    every name in :data:`PATHS`. ``weights``: path -> ``(B, H, Tq, Tk)`` per-head
    attention weights, for the paths that return them (``"numpy"``,
    ``"torch manual"``, ``"nn.MultiheadAttention, need_weights=True"``). ``blocked``: the combined
    mask ``(B, H, Tq, Tk)`` the paths applied (True = blocked), or None.
    """

    outputs: dict
    weights: dict
    blocked: np.ndarray | None


def _blocked(module, query, context, mask, key_padding_mask):
    b, t_q, _ = query.shape
    t_k = t_q if context is None else context.shape[1]
    parts = [torch.as_tensor(m) for m in (mask,) if m is not None]
    if key_padding_mask is not None:
        parts.append(masks.key_padding_to_4d(torch.as_tensor(key_padding_mask)))
    if not parts:
        return None
    shape = (b, module.n_heads, t_q, t_k)
    return masks.combine(*parts).expand(shape).numpy().copy()


def run_four_paths(module: MultiHeadAttention, query, context=None, mask=None,
                   key_padding_mask=None) -> FourPaths:
    """Run ``module``'s weights through every path of :data:`PATHS`, in ``eval()``.

    ``module`` is a :class:`mha.layers.MultiHeadAttention` (float32 or float64);
    ``query (B, Tq, C)`` and ``context (B, Tk, C)`` (None for self-attention) are
    tensors of its dtype. ``mask`` is ``(Tq, Tk)`` or ``(B|1, H|1, Tq|1, Tk)`` and
    ``key_padding_mask`` ``(B, Tk)``, both bool with True = blocked. The module's
    ``impl`` and train/eval mode are restored afterwards. Refuses what the paths
    refuse (a fully masked row, a non-bool mask, a wrong shape or dtype), and a
    module of another class or dtype than float32 / float64.
    """
    _check_paths_module(module)
    training, impl = module.training, module.impl
    module.eval()
    kw = {"mask": mask, "key_padding_mask": key_padding_mask}
    outputs, weights = {}, {}
    try:
        with torch.no_grad():
            for name, which in (("torch manual", "manual"), ("torch sdpa", "sdpa")):
                module.impl = which
                out, w = module(query, context, need_weights=which == "manual", **kw)
                outputs[name] = out.numpy()
                if w is not None:
                    weights[name] = w.numpy()
            layer = to_nn_multihead(module)
            out, _ = run_nn_multihead(layer, query, context, need_weights=False, **kw)
            outputs[f"{NN}, fast path"] = out.numpy()  # eval() and no gradients
        with torch.enable_grad():  # parameters that need gradients: no fast path
            for need in (True, False):
                out, w = run_nn_multihead(layer, query, context, need_weights=need, **kw)
                outputs[f"{NN}, need_weights={need}"] = out.detach().numpy()
                if w is not None:
                    weights[f"{NN}, need_weights={need}"] = w.detach().numpy()
    finally:
        module.impl = impl
        module.train(training)
    blocked = _blocked(module, query, context, mask, key_padding_mask)
    out, w = to_numpy(module, ignore_dropout=True)(
        query.numpy(), None if context is None else context.numpy(), mask=blocked)
    outputs["numpy"], weights["numpy"] = out, w
    return FourPaths({p: outputs[p] for p in PATHS},
                     {p: weights[p] for p in PATHS if p in weights}, blocked)


def _check_paths_module(module) -> None:
    check_attention_module(module, "run_four_paths")
    dtype = module.out_proj.weight.dtype
    if dtype not in (torch.float32, torch.float64):
        raise DTypeError(f"run_four_paths compares with the NumPy class, which holds float32 or "
                         f"float64; the module is {dtype}. Convert it, e.g. module.double().")


def max_differences(arrays: dict, reference: str = "numpy") -> dict:
    """``{name: max |arrays[name] - arrays[reference]|}`` for every other name, as floats.

    The arrays must share one shape (``ValueError`` otherwise, naming both);
    ``reference`` must be one of the names (``ValueError`` naming those there are);
    each array must be real and finite, as :func:`mha.attention` words it.
    """
    if not isinstance(arrays, dict):
        raise TypeError(f"arrays must be a dict {{name: array}}; got {type(arrays).__name__}.")
    if reference not in arrays:
        raise ValueError(f"no array named {reference!r} to measure against; the names are "
                         f"{list(arrays)}. Pass reference= one of them.")
    # as_float_array: numbers only, finite (a NaN would make the difference NaN), tensors
    # that NumPy can read; in float64, where the subtraction of float32 values is exact.
    ref = as_float_array(arrays[reference], str(reference)).astype(np.float64)
    result = {}
    for name, value in arrays.items():
        if name == reference:
            continue
        value = as_float_array(value, str(name)).astype(np.float64)
        if value.shape != ref.shape:
            raise ValueError(f"{name} has shape {value.shape} but {reference} has {ref.shape}.")
        result[name] = float(np.abs(value - ref).max()) if value.size else 0.0
    return result


def magnitude(x: float) -> str:
    """The power of ten at or just above ``|x|``, an upper bound: ``"1e-06"`` for 1.2e-7 or 9.5e-7.

    Rounding differences move with the CPU and the thread count (a max
    difference of one float32 ulp near 1 is 1.2e-7, of eight ulps 9.5e-7); their
    order of magnitude moves far less, so a notebook can print it and stay
    comparable. ``"1e-06"`` reads "at most 1e-6" (and more than 1e-7); 0 is
    ``"0"``, +-inf and NaN are ``"inf"`` and ``"nan"``. Rounding up, never down:
    a printed bound is never smaller than the difference it stands for.
    Refuses a string, a bool or anything that is not one real number
    (``DTypeError``).
    """
    if isinstance(x, (str, bytes, bool, np.bool_)):
        raise DTypeError(f"magnitude takes a number; got {x!r}.")
    try:
        x = abs(float(x))
    except (TypeError, ValueError):
        raise DTypeError(f"magnitude takes one real number; got {x!r}.") from None
    if x == 0.0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    exponent = math.ceil(math.log10(x))
    if 10.0 ** exponent < x:  # log10 rounded down across a power of ten
        exponent += 1
    elif 10.0 ** (exponent - 1) >= x:  # rounded up across one
        exponent -= 1
    return f"{10.0 ** exponent:.0e}"


def seeded_module(d_model: int, n_heads: int, bias: bool = True, dtype=torch.float64,
                  seed: int = 0) -> MultiHeadAttention:
    """A :class:`mha.layers.MultiHeadAttention` in ``eval()`` with weights drawn from ``seed``.

    Parameters are uniform in ``+-1/sqrt(C)``, drawn in float64 from a private
    generator (the global torch seed is not touched) and then cast to ``dtype``:
    one seed gives the same weights, rounded, in float32 and float64.
    Refuses a ``dtype`` that is not a floating torch dtype (``DTypeError``;
    ``np.float32`` is named with its torch spelling), a ``seed`` that is not an
    int, and what the module refuses.
    """
    dtype = check_torch_float_dtype(dtype, "dtype")
    seed = check_seed(seed)
    with torch.random.fork_rng(devices=[]):  # nn.Linear's own init draws from the global seed
        module = MultiHeadAttention(d_model, n_heads, bias=bias, dtype=torch.float64)
    g = torch.Generator().manual_seed(seed)
    bound = 1.0 / math.sqrt(d_model)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 * bound - bound)
    return module.to(dtype).eval()


def difference_table(query, n_heads: int, mask=None, key_padding_mask=None, *,
                     dtypes=(torch.float32, torch.float64), biases=(True, False),
                     seed: int = 0) -> dict:
    """Max differences of the four paths, per (dtype, bias), from one seeded set of weights.

    ``query (B, T, C)`` is a tensor (any float dtype; cast to each of ``dtypes``).
    Returns ``{"float32, bias": {row: value}, ...}`` (one column per dtype and
    bias, ``"no bias"`` when False) where the rows are each path
    of :data:`PATHS` but ``"numpy"`` (max |out - NumPy out|), ``"rows sum to 1"``
    (max |sum of a row of weights - 1| over the paths that return weights) and
    ``"weight on a blocked key"`` (the largest such weight, 0.0 without a mask).
    Refuses a query that is not a tensor, ``dtypes`` or ``biases`` that are not
    tuples or lists (``TypeError``), and what :func:`seeded_module` and
    :func:`run_four_paths` refuse.
    """
    check_query(query, None)
    for name, given in (("dtypes", dtypes), ("biases", biases)):
        if not isinstance(given, (tuple, list)):
            raise TypeError(f"{name} must be a tuple or list, e.g. {name}=({given!r},); "
                            f"got {given!r}.")
    biases = [check_flag(b, "bias") for b in biases]
    table = {}
    for dtype in dtypes:
        for bias in biases:
            module = seeded_module(query.shape[-1], n_heads, bias=bias, dtype=dtype, seed=seed)
            run = run_four_paths(module, query.to(dtype), mask=mask,
                                 key_padding_mask=key_padding_mask)
            row = max_differences(run.outputs, "numpy")
            row["rows sum to 1"] = max(float(np.abs(w.sum(-1) - 1).max())
                                       for w in run.weights.values())
            row["weight on a blocked key"] = max(
                (float(w[run.blocked].max()) for w in run.weights.values()
                 if run.blocked is not None and run.blocked.any()), default=0.0)
            table[f"{str(dtype).removeprefix('torch.')}, {'bias' if bias else 'no bias'}"] = row
    return table


def format_table(table: dict, fmt=magnitude) -> str:
    """``{column: {row: value}}`` as text: one line per row, values through ``fmt``.

    Every column must have the same rows, and there must be at least one column
    and one row (``ValueError`` otherwise).
    """
    if not isinstance(table, dict) or not all(isinstance(c, dict) for c in table.values()):
        raise TypeError(f"table must be a dict {{column: {{row: value}}}}; got {table!r}.")
    if not callable(fmt):
        raise TypeError(f"fmt must be a function value -> str; got {type(fmt).__name__}.")
    columns = list(table)
    if not columns or not table[columns[0]]:
        raise ValueError(f"format_table needs at least one column and one row; got {table!r}.")
    rows = list(table[columns[0]])
    for c in columns:
        if list(table[c]) != rows:
            raise ValueError(f"column {c!r} has rows {list(table[c])}, expected {rows}.")
    width = max(len(str(r)) for r in rows) + 2
    col = max(len(str(c)) for c in columns) + 2
    lines = ["".ljust(width) + "".join(str(c).rjust(col) for c in columns)]
    for r in rows:
        lines.append(str(r).ljust(width)
                     + "".join(str(fmt(table[c][r])).rjust(col) for c in columns))
    return "\n".join(lines)


def attention_kernels(fn) -> list:
    """The softmax and attention kernels (aten ops) that ``fn()`` runs, in order, each once.

    Watches PyTorch's dispatcher with a ``TorchDispatchMode`` (from
    ``torch.utils._python_dispatch``, internal but used by PyTorch's own tools),
    which sees every aten op without changing the path a module takes (a
    ``TorchFunctionMode`` would: it turns ``nn.MultiheadAttention``'s fast path
    off). Names depend on the torch version and the device, e.g.
    ``"aten._softmax"``, ``"aten._scaled_dot_product_flash_attention_for_cpu"``,
    ``"aten._native_multi_head_attention"``. Refuses an ``fn`` that is not
    callable (``TypeError``: pass ``lambda: module(x)``, not ``module(x)``).
    """
    if not callable(fn):
        raise TypeError(f"attention_kernels runs fn(): pass a function such as "
                        f"lambda: module(x), not its result; got {type(fn).__name__}.")
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = f"aten.{func.overloadpacket.__name__}"
            if ("attention" in name or "softmax" in name) and name not in self.names:
                self.names.append(name)
            return func(*args, **(kwargs or {}))

    with _Log() as log:
        fn()
    return log.names
