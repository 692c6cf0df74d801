"""How the check-up calls a module: one ``run(x, causal, key_padding_mask, need_weights)``.

:func:`adapt` reads the module's ``forward`` signature and builds the call,
renaming nothing in the module:

* self-attention ``forward(x, ...)`` or ``(query, key, value, ...)`` (three
  required inputs, as ``nn.MultiheadAttention``: called with ``x`` three times);
  ``batch_first`` from the module's attribute of that name (True if it has none);
* causal attention by a flag (``is_causal=`` / ``causal=``), a mask argument
  (``attn_mask=`` / ``mask=`` / ``attention_mask=``), or none at all (a module
  with a fixed causal buffer, or no mask);
* key padding by ``key_padding_mask=`` (True = padded, PyTorch's meaning),
  ``padding_mask=`` / ``pad_mask=`` / ``pad=`` or a mask argument (``(B, 1, T, T)``,
  else ``(B, T, T)``, else ``(B, T)``: a shape that raises, or that changes the
  output's shape, does not fit);
* weights by ``need_weights=`` / ``return_weights=`` / ``return_attention=`` /
  ``output_attentions=`` (``average_attn_weights=False`` when it exists), or
  returned always (``(out, weights)``), or never (a bare tensor).

A mask argument whose meaning the name does not fix (``mask=``, ``attn_mask=``,
``attention_mask=``, ``padding_mask=``) is read from the module's behaviour
(:func:`mask_meaning`: True = blocked, True = keep, or, when neither bool reading fits, an
additive float mask of 0 / -inf) unless ``mask_means="blocked"`` / ``"keep"`` /
``"additive"`` is given. With no ``batch_first`` attribute or argument, the layout is read
from behaviour too (see :func:`mha.checkup.checkup`).
Inside the check-up every mask is bool with **True = blocked** / padded.
Imported by :mod:`mha.checkup`, which re-exports :class:`Adapter` and :func:`adapt`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import torch
from torch import nn

__all__ = ["Adapter", "adapt", "mask_meaning"]

_CAUSAL_FLAGS = ("is_causal", "causal")
_PAD_NAMES = ("key_padding_mask", "src_key_padding_mask", "padding_mask", "pad_mask", "pad")
_MASK_NAMES = ("attn_mask", "mask", "attention_mask", "src_mask")
_WEIGHT_FLAGS = ("need_weights", "return_weights", "return_attention", "output_attentions",
                 "return_attn", "return_attn_weights")
_D_MODEL_NAMES = ("d_model", "embed_dim", "n_embd", "d_out", "hidden_size", "dim", "emb_dim",
                  "embedding_dim", "d_in")
_HEAD_NAMES = ("n_heads", "num_heads", "n_head", "nhead", "heads", "h", "num_attention_heads")


@dataclass
class Adapter:
    """``module`` with the check-up's call: ``run(x, causal, key_padding_mask, need_weights)``.

    ``run`` returns ``(out (B, T, C), weights or None)``; ``key_padding_mask`` is
    ``(B, T)`` bool, True = padded. What the call can ask for:
    ``causal``: "flag" (asked per call), "always" (the module is causal whatever
    the call), "never"; ``padding``: the call can pass a key padding mask;
    ``weights``: "flag" (returned when asked), "always", or None (never);
    ``d_model``, ``n_heads`` (None: read from the module's behaviour);
    ``notes``: how the module was called, for the report.
    A hand-built ``Adapter(module, d_model, n_heads, run)`` claims every option.
    """

    module: nn.Module
    d_model: int
    n_heads: int | None
    run: object
    has_weights: bool = True
    causal: str = "flag"
    padding: bool = True
    weights: str | None = "flag"
    notes: list = field(default_factory=list)

    def __post_init__(self):
        if not self.has_weights:
            self.weights = None


def _find_int(module, names):
    for name in names:
        value = getattr(module, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _d_model(module):
    found = _find_int(module, _D_MODEL_NAMES)
    if found is not None:
        return found
    for sub in module.modules():  # the first nn.Linear's input width
        if isinstance(sub, nn.Linear):
            return sub.in_features
    for p in module.parameters():  # or the first matrix's
        if p.dim() == 2:
            return p.shape[0]
    return None


def _split(out, seen=None):
    """``(out, weights or None)`` from whatever the module returned (``seen``: what it was)."""
    if isinstance(out, torch.Tensor):
        return out, None
    if isinstance(out, tuple | list) and out and isinstance(out[0], torch.Tensor):
        w = out[1] if len(out) > 1 and isinstance(out[1], torch.Tensor) else None
        if seen is not None and len(out) > 2:
            seen["returned"] = f"returns a {type(out).__name__} of {len(out)}: element 0 " \
                "taken as the output" + (", element 1 as the weights" if w is not None else "")
        return out[0], w
    raise TypeError(f"the module must return a tensor or (out, weights); got "
                    f"{type(out).__name__}.")


def _causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)  # (T, T), True = blocked


def adapt(module, *, d_model=None, n_heads=None, batch_first=None, mask_means=None,
          causal=None) -> Adapter:
    """An :class:`Adapter` for ``module`` from its ``forward`` signature (see the module docstring).

    ``mask_means``: "blocked" or "keep", the meaning of True in a mask argument
    whose name does not fix it (None: read from behaviour). ``causal``: True or
    False to say whether a module without a causal option is meant to be causal
    (None: read from its behaviour and buffers). Refuses (``TypeError``)
    anything but an ``nn.Module`` or an :class:`Adapter`, and (``ValueError``)
    a ``d_model`` it cannot find (pass ``d_model=``).
    """
    if isinstance(module, Adapter):
        return module
    if not isinstance(module, nn.Module):
        raise TypeError(f"checkup needs an nn.Module (or a checkup.Adapter); got "
                        f"{type(module).__name__}.")
    if mask_means not in (None, "blocked", "keep", "additive"):
        raise ValueError(f"mask_means must be 'blocked', 'keep', 'additive' or None; got "
                         f"{mask_means!r}.")
    for name, value in (("causal", causal), ("batch_first", batch_first)):
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"{name} must be True, False or None; got {value!r}.")
    for name, value in (("d_model", d_model), ("n_heads", n_heads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or
                                  value < 1):
            raise ValueError(f"{name} must be an int >= 1; got {value!r}.")
    c = d_model if d_model is not None else _d_model(module)
    if c is None:
        raise ValueError(f"checkup could not find the model width of {type(module).__name__} "
                         "(no d_model/embed_dim attribute, no nn.Linear, no matrix parameter); "
                         "pass d_model=.")
    heads = n_heads if n_heads is not None else _find_int(module, _HEAD_NAMES)
    if n_heads is not None and c % n_heads:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={c}: each head gets "
                         "d_model / n_heads features.")
    params = inspect.signature(module.forward).parameters
    names = list(params)
    required = [n for n, p in params.items() if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    n_inputs = 3 if len(required) >= 3 else 1
    first = getattr(module, "batch_first", True) if batch_first is None else batch_first
    layout_known = batch_first is not None or hasattr(module, "batch_first")
    flag = next((n for n in _CAUSAL_FLAGS if n in names), None)
    pad = next((n for n in _PAD_NAMES if n in names), None)
    mask = next((n for n in _MASK_NAMES if n in names), None)
    wflag = next((n for n in _WEIGHT_FLAGS if n in names), None)
    fixed_meaning = {"key_padding_mask": "blocked", "src_key_padding_mask": "blocked"}
    notes = [f"called as {type(module).__name__}({'x, x, x' if n_inputs == 3 else 'x'}, ...), "
             f"input {'(B, T, C)' if first else '(T, B, C)'}"]
    meaning = {"pad": fixed_meaning.get(pad, mask_means), "mask": mask_means}
    # causal: "flag", "mask", "flag+mask" (the flag needs a mask too) or "none";
    # form: how padding goes in the mask argument: "4" (B, 1, T, T), "3" (B, T, T), "keys" (B, T)
    style = {"causal": "flag" if flag else "mask", "form": "4", "first": bool(first)}

    def to_module(m, which, dtype):  # our True = blocked -> the module's meaning
        if meaning[which] == "additive":  # a float mask added to the scores
            return torch.zeros(m.shape, dtype=dtype).masked_fill(m, float("-inf"))
        return m if meaning[which] in (None, "blocked") else ~m

    seen = {}

    def run(x, causal_, key_padding_mask, need_weights):
        b, t, _ = x.shape
        kw = {}
        if flag:  # "flag_on" False: the mask alone makes it causal (the flag is a hint)
            kw[flag] = bool(causal_) and style.get("flag_on", True)
        blocked = None
        if causal_ and style["causal"] in ("mask", "flag+mask") and mask:
            blocked = _causal_mask(t)  # (T, T)
        if key_padding_mask is not None:
            if pad:
                kw[pad] = to_module(key_padding_mask, "pad", x.dtype)
            elif mask and style["form"] == "keys":
                blocked = key_padding_mask  # (B, T): the module spreads it itself
            elif mask:
                keys = key_padding_mask[:, None, None, :]  # (B, 1, 1, T)
                blocked = (keys if blocked is None else (blocked | keys)).expand(b, 1, t, t)
                if style["form"] == "3":
                    blocked = blocked[:, 0]  # (B, T, T) for a one-head module
        if wflag:
            kw[wflag] = bool(need_weights)
        if "average_attn_weights" in names:
            kw["average_attn_weights"] = False
        inp = x if style["first"] else x.transpose(0, 1)
        if blocked is not None:
            kw[mask] = to_module(blocked, "mask", x.dtype)
        out, w = _split(module(*([inp] * n_inputs), **kw), seen)
        if not style["first"]:
            out = out.transpose(0, 1)
        return out, w

    a = Adapter(module, c, heads, run, causal="flag" if (flag or mask) else "unknown",
                padding=bool(pad or mask), weights="flag" if wflag else "unknown", notes=notes)
    a._meaning, a._mask_name, a._pad_name = meaning, mask, pad
    a._style, a._flag = style, flag
    a._declared_causal = causal
    a._layout_known, a._seen = layout_known, seen
    return a


def mask_meaning(a: Adapter, x, outputs_differ) -> str | None:
    """Read what True means in the module's mask argument from its behaviour.

    Passes a causal mask both ways: the reading under which the output at
    position 0 ignores later tokens is the module's (``outputs_differ(a, b)``
    compares two outputs). Returns "blocked", "keep", "additive" (a 0 / -inf float
    mask, tried only when neither bool reading fits), or None when no reading, or
    both bool ones, are causal (the module then ignores the mask or is broken).
    """
    name = getattr(a, "_mask_name", None)
    if name is None:
        return None
    if a._style["causal"] not in ("mask", "flag+mask"):
        return _meaning_from_padding(a, x, outputs_differ)
    x2 = x.clone()
    x2[:, 1:] = -2.0 * x[:, 1:].flip(1)
    found = []
    for reading in ("blocked", "keep", "additive"):
        if reading == "additive" and found:
            break  # a float mask only when no bool reading fits
        a._meaning["mask"] = reading
        try:
            first, second = a.run(x, True, None, False)[0], a.run(x2, True, None, False)[0]
        except Exception:  # noqa: BLE001 - this reading does not fit the module
            continue
        if first.shape != x.shape:  # the mask broadcast to another shape: it does not fit
            continue
        first, second = first[:, :1], second[:, :1]
        if torch.isfinite(first).all() and not outputs_differ(first, second):
            found.append(reading)
    a._meaning["mask"] = found[0] if len(found) == 1 else None
    return a._meaning["mask"]


def _meaning_from_padding(a, x, outputs_differ):
    """What True means in a padding-only mask argument: the reading under which the real
    positions of a padded sequence ignore its padded tokens."""
    if a._pad_name is not None:
        return None
    t = x.shape[1]
    pad = torch.zeros(x.shape[0], t, dtype=torch.bool)
    pad[:, t - 2:] = True  # the last two positions padded in every sequence
    x2 = x.clone()
    x2[:, t - 2:] = -2.0 * x[:, t - 2:]
    found = []
    for reading in ("blocked", "keep", "additive"):
        if reading == "additive" and found:
            break  # a float mask only when no bool reading fits
        a._meaning["mask"] = reading
        try:
            first, second = a.run(x, False, pad, False)[0], a.run(x2, False, pad, False)[0]
        except Exception:  # noqa: BLE001 - this reading does not fit the module
            continue
        if first.shape != x.shape:  # the mask broadcast to another shape: it does not fit
            continue
        first, second = first[:, :t - 2], second[:, :t - 2]
        if torch.isfinite(first).all() and not outputs_differ(first, second):
            found.append(reading)
    a._meaning["mask"] = found[0] if len(found) == 1 else None
    return a._meaning["mask"]
