"""How the check-up calls a module: one ``run(x, causal, key_padding_mask, need_weights)``.

:func:`adapt` wraps the package's modules (and :mod:`mha.broken`'s) and
``nn.MultiheadAttention``-style ``(query, key, value)`` modules; masks are in the
package convention (bool, **True = blocked** / padded). Imported by
:mod:`mha.checkup`, which re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .compare import named_projections


@dataclass
class Adapter:
    """``module`` with the check-up's call: ``run(x, causal, key_padding_mask, need_weights)``.

    ``has_weights`` False means ``run`` returns None for the weights (the
    weight checks are then skipped). ``projections`` returns
    ``{"W_Q": (C, C), "b_Q": (C,) or absent, ..., "W_O", "b_O"}`` in ``nn.Linear``'s
    ``(out, in)`` layout for the loop over heads; None skips that check.
    """

    module: nn.Module
    d_model: int
    n_heads: int
    run: object
    has_weights: bool = True
    projections: object = None


def _projections(module):
    return lambda: named_projections(module, dict(module.named_parameters()))


def package_adapter(module) -> Adapter:
    """Adapter for ``module(x, key_padding_mask=, need_weights=, is_causal=)`` modules."""
    has_weights = getattr(module, "impl", "manual") != "sdpa"

    def run(x, causal, key_padding_mask, need_weights):
        return module(x, key_padding_mask=key_padding_mask, need_weights=need_weights,
                      is_causal=causal)

    return Adapter(module, module.d_model, module.n_heads, run, has_weights,
                   _projections(module))


def qkv_adapter(module, batch_first: bool | None = None) -> Adapter:
    """Adapter for ``nn.MultiheadAttention``-style ``(query, key, value)`` modules.

    ``batch_first`` defaults to ``module.batch_first``; when False the input is
    transposed to ``(T, B, C)`` and the output back. The causal mask goes in as
    ``attn_mask`` ``(T, T)`` bool, True = not allowed (``nn.MultiheadAttention``'s
    meaning, the same as the package's); per-head weights are asked for.
    """
    first = getattr(module, "batch_first", True) if batch_first is None else batch_first

    def run(x, causal, key_padding_mask, need_weights):
        t = x.shape[1]
        attn_mask = torch.ones(t, t, dtype=torch.bool).triu(1) if causal else None
        inp = x if first else x.transpose(0, 1)
        out, w = module(inp, inp, inp, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                        need_weights=need_weights, average_attn_weights=False)
        return (out if first else out.transpose(0, 1)), w

    return Adapter(module, module.embed_dim, module.num_heads, run, True, _projections(module))


def adapt(module) -> Adapter:
    """An :class:`Adapter` for ``module``: itself, :func:`qkv_adapter` or the package call.

    Refuses (``TypeError``) anything but an ``nn.Module`` with ``d_model`` and
    ``n_heads`` attributes, an ``nn.MultiheadAttention``, or an :class:`Adapter`.
    """
    if isinstance(module, Adapter):
        return module
    if isinstance(module, nn.MultiheadAttention):
        return qkv_adapter(module)
    if not isinstance(module, nn.Module) or not hasattr(module, "d_model") \
            or not hasattr(module, "n_heads"):
        raise TypeError(f"checkup needs an nn.Module with d_model and n_heads (the package's "
                        f"call), an nn.MultiheadAttention, or a checkup.Adapter; got "
                        f"{type(module).__name__}. Wrap other modules in "
                        "Adapter(module, d_model, n_heads, run).")
    return package_adapter(module)


def _probe(a: Adapter, x) -> None:
    """Refuse a module the adapter cannot call, before any check runs."""
    try:
        result = a.run(x, False, None, False)
    except TypeError as err:
        raise TypeError(f"checkup could not call the module as run(x, causal, "
                        f"key_padding_mask, need_weights): {err}. Wrap it in "
                        "checkup.Adapter(module, d_model, n_heads, run) with a run that "
                        "calls it.") from err
    if not (isinstance(result, tuple | list) and len(result) == 2):
        raise TypeError(f"the module must return (out, weights or None); got "
                        f"{type(result).__name__}.")
    if tuple(result[0].shape) != tuple(x.shape):
        raise ValueError(f"the module returned out of shape {tuple(result[0].shape)} for x of "
                         f"shape {tuple(x.shape)}; the check-up needs (B, T, C) in and out.")
