"""mha: the small package behind the multi-head attention notebooks.

``import mha`` is cheap: it loads NumPy only. The submodules named in
``_LAZY`` load on first use, ``mha.layers`` or ``from mha import widgets``:

==================  ================================================  ==========
module              what it holds                                     loads
==================  ================================================  ==========
layers              torch MultiHeadAttention (manual and SDPA)        torch
torch_transfer      weights and masks to and from nn.Multihead-       torch
                    Attention and NumPy; the SDPA wrapper
compare             one set of weights through every attention path   torch
kv_cache            the KV cache                                      torch
rope                rotary positions                                  torch
decoder             a tiny decoder-only model that uses the cache     torch
induction           a tiny model that learns an induction head        torch
plot                the lessons' pictures                             matplotlib
widgets             the lessons' explorers                            ipywidgets
checks              feedback for the graded exercises                 NumPy
numerical           finite differences                                NumPy
scaling             lesson 03's computations                          NumPy
tiled               tiled (online-softmax) attention                  NumPy
broken              the classic mistakes, each a small named module   torch
checkup             named invariance checks for any attention module  torch
==================  ================================================  ==========

A name can be reserved in ``_LAZY`` before its module is written (marked
``(absent)`` here); until then ``mha.<name>`` raises ``AttributeError``, and
``dir(mha)`` lists only the modules present.

Masks everywhere in the package are boolean with **True = blocked**
(see :mod:`mha.masks`).
"""

from __future__ import annotations

import importlib
import importlib.util

from .backward import AttentionGrads, attention_backward, softmax_backward, softmax_jacobian
from .masks import causal_mask, padding_mask
from .multihead import MultiHeadAttention, merge_heads, split_heads
from .reference import attention, scores, softmax
from .source import environment_report, show_source

__version__ = "0.1.0"

__all__ = [
    "AttentionGrads",
    "MultiHeadAttention",
    "attention",
    "attention_backward",
    "causal_mask",
    "environment_report",
    "merge_heads",
    "padding_mask",
    "scores",
    "show_source",
    "softmax",
    "softmax_backward",
    "softmax_jacobian",
    "split_heads",
]

# Submodules that pull in heavy libraries load on first attribute access.
_LAZY = {
    "layers", "torch_transfer", "plot", "widgets", "checks", "kv_cache", "decoder", "induction",
    "tiled", "broken", "checkup", "numerical", "scaling", "rope", "compare",
}


def __getattr__(name: str):
    if name in _LAZY:
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise  # the submodule exists but needs a missing library, e.g. torch
            raise AttributeError(f"module 'mha' has no submodule {name!r}") from err
    raise AttributeError(f"module 'mha' has no attribute {name!r}")


def __dir__():
    present = {name for name in _LAZY if importlib.util.find_spec(f".{name}", __name__)}
    return sorted(set(globals()) | present)
