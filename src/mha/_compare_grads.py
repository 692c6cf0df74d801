"""The gradient half of :mod:`mha.compare`, and the call into ``nn.MultiheadAttention``.

:func:`run_nn_multihead` calls a ``batch_first`` ``nn.MultiheadAttention`` with
package-convention masks (bool, **True = blocked**), checked first;
:func:`gradients` and :func:`gradient_differences` differentiate one loss through
the paths; :func:`missing_gradients` and :func:`migration_checks` are the
checklist of a migration. :mod:`mha.compare` imports and re-exports every name:
import them from there.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from . import masks
from ._checks import DTypeError, check_flag
from .layers import MultiHeadAttention, check_torch_mask
from .torch_transfer import to_nn_multihead, to_nn_multihead_masks

__all__ = ["gradient_differences", "gradients", "migration_checks", "missing_gradients",
           "named_projections", "run_nn_multihead"]

NN = "nn.MultiheadAttention"


def check_seed(seed) -> int:
    """``seed`` as a Python int (NumPy integers too); refuse anything else (``DTypeError``)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise DTypeError(f"seed must be an int; got {seed!r}.")
    return int(seed)


def check_attention_module(module, who: str, nn_too: bool = False) -> None:
    """Refuse (``TypeError``) a module of another class than the functions of
    :mod:`mha.compare` read (by their parameter names)."""
    allowed = (MultiHeadAttention, nn.MultiheadAttention) if nn_too else (MultiHeadAttention,)
    if not isinstance(module, allowed):
        names = " or ".join(("mha.layers.MultiHeadAttention", NN)[:len(allowed)])
        given = f"{type(module).__module__}.{type(module).__qualname__}"  # two classes share
        raise TypeError(f"{who} takes {names}; got {given}.")  # the name MultiHeadAttention


def check_query(query, module) -> None:
    """Refuse a query that is not a tensor, in the torch module's words."""
    if not isinstance(query, torch.Tensor):
        raise TypeError(f"query must be a torch tensor (B, T, C); got {type(query).__name__}.")


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


# -- gradients ------------------------------------------------------------------

def named_projections(module, grads: dict) -> dict:
    """``grads`` (a dict keyed by parameter name: gradients, or the parameters themselves)
    renamed W_Q, b_Q, ..., W_O, b_O, whatever the module's layout: ``nn.MultiheadAttention``,
    the package's packed (3C, C) or separate projections. W_Q, W_K, W_V are (C, C) views."""
    check_attention_module(module, "named_projections", nn_too=True)
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
    on the module. Refuses another kind of module, a query that is not a tensor
    and a ``seed`` that is not an int.
    """
    check_attention_module(module, "gradients", nn_too=True)
    check_query(query, module)
    seed = check_seed(seed)
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
    check_attention_module(module, "gradient_differences")
    seed = check_seed(seed)
    relative = check_flag(relative, "relative")
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
    if not isinstance(module, nn.Module):
        raise TypeError(f"missing_gradients takes a torch nn.Module; got {type(module).__name__}.")
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

    Refuses an ``atol`` that is not a number (``DTypeError``) or not finite and
    >= 0 (``ValueError``: NaN would make every check read False), a batch of one,
    modules that are not ``nn.Module``, runners that are not callable, an ``x``
    that is not a floating tensor and a ``seed`` that is not an int.
    Uses ``torch.autograd.grad``: no ``.grad`` is left on either module.
    """
    if isinstance(atol, (bool, np.bool_)) or \
            not isinstance(atol, (int, float, np.integer, np.floating)):
        raise DTypeError(f"atol must be a finite number >= 0; got {atol!r}.")
    if not 0.0 <= atol < math.inf:  # NaN fails too: every check would read False
        raise ValueError(f"atol must be a finite number >= 0; got {atol!r}.")
    seed = check_seed(seed)
    for name, m in (("ours", ours), ("theirs", theirs)):
        if not isinstance(m, nn.Module):
            raise TypeError(f"{name} must be a torch nn.Module; got {type(m).__name__}.")
    for name, run in (("run_ours", run_ours), ("run_theirs", run_theirs)):
        if not callable(run):
            raise TypeError(f"{name} must be a function (module, x) -> output; got "
                            f"{type(run).__name__}.")
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating torch tensor (B, T, C); got "
                        f"{getattr(x, 'dtype', type(x).__name__)}.")
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
