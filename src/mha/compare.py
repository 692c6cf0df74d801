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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from . import masks
from .layers import MultiHeadAttention, check_torch_mask
from .torch_transfer import to_nn_multihead, to_nn_multihead_masks, to_numpy

__all__ = ["PATHS", "FourPaths", "run_four_paths", "attention_kernels", "max_differences",
           "magnitude",
           "seeded_module", "difference_table", "format_table", "gradients",
           "gradient_differences", "missing_gradients", "migration_checks", "named_projections",
           "run_nn_multihead"]

NN = "nn.MultiheadAttention"
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


def _nn_masks(mask, key_padding_mask, n_heads, b, t_q, t_k):
    """Package masks -> ``(attn_mask, key_padding_mask)`` for ``nn.MultiheadAttention``.

    Checked as :class:`mha.layers.MultiHeadAttention` checks them (bool only,
    True = blocked; no fully masked row, the two combined): ``nn.MultiheadAttention``
    would read a float mask as additive and return NaN for a row with no key.
    """
    attn_mask, padding, parts, names = None, None, [], []
    if mask is not None:
        attn_mask, padding = to_nn_multihead_masks(torch.as_tensor(mask), n_heads,
                                                   batch_size=b, tgt_len=t_q)
        parts.append(torch.as_tensor(mask))
        names.append("mask")
    if key_padding_mask is not None:
        given = key_padding_mask if isinstance(key_padding_mask, torch.Tensor) else \
            np.asarray(key_padding_mask)
        if tuple(given.shape) != (b, t_k):
            raise ValueError(f"key_padding_mask must be (B, Tk) = {(b, t_k)} with True = "
                             f"padded; got shape {tuple(given.shape)}.")
        given = check_torch_mask(given, (b, t_k), "key_padding_mask", check_rows=False)
        padding = given if padding is None else padding | given
        parts.append(masks.key_padding_to_4d(given))
        names.append("key_padding_mask")
    if parts:  # each part may leave open keys that the other blocks
        check_torch_mask(masks.combine(*parts), (b, n_heads, t_q, t_k),
                         " combined with ".join(names))
    return attn_mask, padding


def run_nn_multihead(layer: nn.MultiheadAttention, query, context=None, mask=None,
                     key_padding_mask=None, need_weights=True):
    """Call a ``batch_first`` ``nn.MultiheadAttention`` with package-convention masks.

    ``query (B, Tq, C)``, ``context (B, Tk, C)`` or None (self-attention);
    ``mask`` as for :class:`mha.layers.MultiHeadAttention`, ``key_padding_mask
    (B, Tk)``. Returns ``(out (B, Tq, C), per-head weights (B, H, Tq, Tk) or None)``.
    Refuses what the package module refuses: a non-bool mask or key padding, a key
    padding not ``(B, Tk)``, a row that the masks, alone or combined, fully block.
    """
    kv = query if context is None else context
    attn_mask, padding = _nn_masks(mask, key_padding_mask, layer.num_heads, query.shape[0],
                                   query.shape[1], kv.shape[1])
    return layer(query, kv, kv, attn_mask=attn_mask, key_padding_mask=padding,
                 need_weights=need_weights, average_attn_weights=False)


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
    refuse (a fully masked row, a non-bool mask, a wrong shape or dtype).
    """
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


def max_differences(arrays: dict, reference: str = "numpy") -> dict:
    """``{name: max |arrays[name] - arrays[reference]|}`` for every other name, as floats.

    The arrays must share one shape (``ValueError`` otherwise, naming both).
    """
    ref = np.asarray(arrays[reference], dtype=np.float64)
    result = {}
    for name, value in arrays.items():
        if name == reference:
            continue
        value = np.asarray(value, dtype=np.float64)
        if value.shape != ref.shape:
            raise ValueError(f"{name} has shape {value.shape} but {reference} has {ref.shape}.")
        result[name] = float(np.abs(value - ref).max()) if value.size else 0.0
    return result


def magnitude(x: float) -> str:
    """The power of ten at or just below ``|x|``: ``"1e-07"`` for 1.2e-7 or 4.8e-7; 0 is ``"0"``.

    Rounding differences move with the CPU and the thread count (a max
    difference of one float32 ulp near 1 is 1.2e-7, of four ulps 4.8e-7); their
    order of magnitude moves far less, so a notebook can print it and stay
    comparable. ``"1e-07"`` reads "between 1e-7 and 1e-6".
    """
    x = abs(float(x))
    if x == 0.0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    exponent = math.floor(math.log10(x))
    if 10.0 ** (exponent + 1) <= x:  # log10 rounded up across a power of ten
        exponent += 1
    return f"{10.0 ** exponent:.0e}"


def seeded_module(d_model: int, n_heads: int, bias: bool = True, dtype=torch.float64,
                  seed: int = 0) -> MultiHeadAttention:
    """A :class:`mha.layers.MultiHeadAttention` in ``eval()`` with weights drawn from ``seed``.

    Parameters are uniform in ``+-1/sqrt(C)``, drawn in float64 from a private
    generator (the global torch seed is not touched) and then cast to ``dtype``:
    one seed gives the same weights, rounded, in float32 and float64.
    """
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
    """
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

    Every column must have the same rows (``ValueError`` otherwise).
    """
    columns = list(table)
    rows = list(table[columns[0]])
    for c in columns:
        if list(table[c]) != rows:
            raise ValueError(f"column {c!r} has rows {list(table[c])}, expected {rows}.")
    width = max(len(r) for r in rows) + 2
    col = max(len(c) for c in columns) + 2
    lines = ["".ljust(width) + "".join(c.rjust(col) for c in columns)]
    for r in rows:
        lines.append(r.ljust(width) + "".join(fmt(table[c][r]).rjust(col) for c in columns))
    return "\n".join(lines)


def attention_kernels(fn) -> list:
    """The softmax and attention kernels (aten ops) that ``fn()`` runs, in order, each once.

    Watches PyTorch's dispatcher with a ``TorchDispatchMode`` (from
    ``torch.utils._python_dispatch``, internal but used by PyTorch's own tools),
    which sees every aten op without changing the path a module takes (a
    ``TorchFunctionMode`` would: it turns ``nn.MultiheadAttention``'s fast path
    off). Names depend on the torch version and the device, e.g.
    ``"aten._softmax"``, ``"aten._scaled_dot_product_flash_attention_for_cpu"``,
    ``"aten._native_multi_head_attention"``.
    """
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


# -- gradients ------------------------------------------------------------------

def named_projections(module, grads: dict) -> dict:
    """``grads`` (a dict keyed by parameter name: gradients, or the parameters themselves)
    renamed W_Q, b_Q, ..., W_O, b_O, whatever the module's layout: ``nn.MultiheadAttention``,
    the package's packed (3C, C) or separate projections. W_Q, W_K, W_V are (C, C) views."""
    if isinstance(module, nn.MultiheadAttention):
        w, b = grads["in_proj_weight"], grads.get("in_proj_bias")
        w_o, b_o = grads["out_proj.weight"], grads.get("out_proj.bias")
    elif module.packed_qkv:
        w, b = grads["qkv.weight"], grads.get("qkv.bias")
        w_o, b_o = grads["out_proj.weight"], grads.get("out_proj.bias")
    else:
        names = {"Q": "q_proj", "K": "k_proj", "V": "v_proj", "O": "out_proj"}
        named = {f"W_{s}": grads[f"{p}.weight"] for s, p in names.items()}
        named.update({f"b_{s}": grads[f"{p}.bias"] for s, p in names.items()
                      if f"{p}.bias" in grads})
        return named
    named = dict(zip(("W_Q", "W_K", "W_V"), w.chunk(3, dim=0), strict=True))
    named["W_O"] = w_o
    if b is not None:
        named.update(zip(("b_Q", "b_K", "b_V"), b.chunk(3, dim=0), strict=True))
        named["b_O"] = b_o
    return named


def gradients(module, query, mask=None, key_padding_mask=None, seed: int = 0,
              impl: str | None = None) -> dict:
    """Gradients of ``L = sum(out * G)`` for a fixed random ``G`` (from ``seed``).

    ``G`` is drawn in float64 and rounded to the output's dtype, so float32 and
    float64 runs with one seed differentiate the same loss.

    ``module`` is a :class:`mha.layers.MultiHeadAttention` (``impl`` overrides
    its own for this call) or a ``batch_first`` ``nn.MultiheadAttention`` (called
    with ``need_weights=False``). Self-attention on ``query (B, T, C)``; masks in
    the package convention. Returns ``{"x": dL/dquery, "W_Q": ..., "b_O": ...}``
    as tensors, in the same names for both layouts (``in_proj_weight`` is cut
    into ``W_Q, W_K, W_V``). Uses ``torch.autograd.grad``: no ``.grad`` is left
    on the module.
    """
    x = query.detach().clone().requires_grad_()
    if isinstance(module, nn.MultiheadAttention):
        out, _ = run_nn_multihead(module, x, mask=mask, key_padding_mask=key_padding_mask,
                                  need_weights=False)
    else:
        saved = module.impl
        module.impl = impl or saved
        try:
            out, _ = module(x, mask=mask, key_padding_mask=key_padding_mask)
        finally:
            module.impl = saved
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed),
                    dtype=torch.float64).to(out.dtype)  # one G for both dtypes, rounded
    names, params = zip(*module.named_parameters(), strict=True)
    grads = torch.autograd.grad((out * g).sum(), [x, *params])
    return {"x": grads[0], **named_projections(module, dict(zip(names, grads[1:], strict=True)))}


def gradient_differences(module: MultiHeadAttention, query, mask=None,
                         key_padding_mask=None, seed: int = 0, relative: bool = False) -> dict:
    """Max gradient differences against the manual path, per path and per gradient.

    Returns ``{"torch sdpa": {...}, "nn.MultiheadAttention": {...}}``, each
    ``{"x": float, "W_Q": float, ...}`` (see :func:`gradients`), for the module in
    ``eval()``; its mode is restored. ``relative=True`` divides each difference
    by the largest entry of the manual path's gradient of the same tensor
    (infinite where that gradient is exactly 0). Note that ``b_K``'s gradient is
    0 in exact arithmetic (a key bias adds one constant to a row of scores), so
    its relative difference measures only rounding noise.
    """
    training = module.training
    module.eval()
    try:
        ref = gradients(module, query, mask, key_padding_mask, seed, impl="manual")
        others = {"torch sdpa": gradients(module, query, mask, key_padding_mask, seed,
                                          impl="sdpa"),
                  NN: gradients(to_nn_multihead(module), query, mask, key_padding_mask, seed)}
    finally:
        module.train(training)
    size = {name: float(g.abs().max()) if relative else 1.0 for name, g in ref.items()}
    return {path: {name: _ratio(float((g - ref[name]).abs().max()), size[name])
                   for name, g in grads.items()} for path, grads in others.items()}


def _ratio(diff: float, size: float) -> float:
    if size == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / size


def missing_gradients(module: nn.Module) -> list:
    """Names of the parameters whose ``.grad`` is None (after a backward pass).

    A parameter the forward never uses gets no gradient at all: ``None``, not
    zeros. Call after ``loss.backward()``; an empty list means every parameter
    was reached. Parameters with ``requires_grad=False`` are skipped.
    """
    return [name for name, p in module.named_parameters() if p.requires_grad and p.grad is None]


# -- a migration checklist ---------------------------------------------------------

def migration_checks(ours: nn.Module, theirs: nn.Module, x, run_ours, run_theirs, *,
                     atol: float, seed: int = 0) -> dict:
    """Run the checks of a migration on two modules that should compute the same function.

    ``ours`` and ``theirs`` hold the same weights (the caller copies them);
    ``run_ours(module, x)`` / ``run_theirs(module, x)`` return the output
    ``(B, T, C)`` for input ``x (B, T, C)``, masks included. Both modules are
    put in ``eval()`` (and left there). ``atol`` is the agreement tolerance,
    e.g. 1e-12 in float64, 1e-5 in float32. Returns ``{check: bool}``:

    * ``"outputs agree"``: max |out_ours - out_theirs| <= atol;
    * ``"input gradients agree"``: the same for dL/dx with ``L = sum(out * G)``;
    * ``"every parameter gets a gradient"``: in both modules (no ``None``);
    * ``"eval() is deterministic"``: two calls of each give equal outputs;
    * ``"batch items are independent"``: changing ``x[1:]`` leaves ``ours``'s
      ``out[0]`` unchanged (needs B >= 2).

    Uses ``torch.autograd.grad``: no ``.grad`` is left on either module.
    """
    if x.shape[0] < 2:
        raise ValueError(f"migration_checks needs a batch of at least 2; got x of shape "
                         f"{tuple(x.shape)}.")
    ours.eval()
    theirs.eval()
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed), dtype=x.dtype)
    pairs = ((ours, run_ours), (theirs, run_theirs))
    results, outs, grads = {}, [], []
    for module, run in pairs:
        xi = x.detach().clone().requires_grad_()
        out = run(module, xi)
        params = [p for p in module.parameters() if p.requires_grad]
        found = torch.autograd.grad((out * g).sum(), [xi, *params], allow_unused=True)
        outs.append(out.detach())
        grads.append(found)
    results["outputs agree"] = bool((outs[0] - outs[1]).abs().max() <= atol)
    dx = [torch.zeros_like(x) if found[0] is None else found[0] for found in grads]
    results["input gradients agree"] = bool((dx[0] - dx[1]).abs().max() <= atol)
    results["every parameter gets a gradient"] = all(
        d is not None for found in grads for d in found[1:])
    with torch.no_grad():
        results["eval() is deterministic"] = all(torch.equal(run(m, x), run(m, x))
                                                 for m, run in pairs)
        changed = x.clone()
        changed[1:] += 1.0
        results["batch items are independent"] = bool(
            (run_ours(ours, changed)[0] - run_ours(ours, x)[0]).abs().max() <= atol)
    return results
