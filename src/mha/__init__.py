"""mha: the small package behind the multi-head attention notebooks.

``import mha`` is cheap: it loads NumPy only. The torch modules
(:mod:`mha.layers`), plotting (:mod:`mha.plot`) and widgets
(:mod:`mha.widgets`) load when first used, e.g. ``mha.layers`` or
``from mha import widgets``.

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
