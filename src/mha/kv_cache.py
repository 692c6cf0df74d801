"""A KV cache: the keys and values of every token already seen, kept per layer.

When a decoder generates, token ``t`` needs the keys and values of tokens
``0..t``. Those of ``0..t-1`` were computed at earlier steps and do not change
(a causal model never lets a token read the future), so they are kept instead
of recomputed: each step projects only the new token and appends its K and V.

:class:`LayerCache` holds one attention layer's ``K, V (B, H_kv, T, dh)``.
:class:`KVCache` holds one :class:`LayerCache` per layer, plus, for the mask,
the absolute position and the padding flag of every cached token
(``positions (B, T)``, ``padding (B, T)``). Its memory is
``2 * layers * B * H_kv * T * dh * bytes`` (:func:`kv_cache_bytes`), which
:attr:`KVCache.nbytes` measures on the real tensors.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

from ._checks import (
    DTypeError,
    check_device,
    check_non_negative_int,
    check_positive_int,
    check_torch_float_dtype,
)

__all__ = ["KVCache", "LayerCache", "kv_cache_bytes"]


def kv_cache_bytes(n_layers: int, batch: int, n_kv_heads: int, length: int, d_head: int,
                   dtype=torch.float32) -> int:
    """The memory of a KV cache in bytes: ``2 * layers * B * H_kv * T * dh * bytes``.

    The 2 is for K and V; ``bytes`` is the size of one element of ``dtype``
    (4 for float32, 2 for bfloat16). The positions and padding flags a
    :class:`KVCache` also keeps are ``(B, T)``, independent of the model's width,
    and are not counted. Sizes may be NumPy integers. Refuses a negative size
    (``ValueError``), a bool or non-integer one, and a ``dtype`` that is not a
    floating torch dtype (``DTypeError``: the cache stores floating tensors;
    ``np.float32`` or ``"float32"`` is named with its torch spelling).
    """
    dtype = check_torch_float_dtype(dtype, "dtype")
    sizes = {"n_layers": n_layers, "batch": batch, "n_kv_heads": n_kv_heads,
             "length": length, "d_head": d_head}
    product = 2 * torch.empty((), dtype=dtype).element_size()
    for name, n in sizes.items():
        product *= check_non_negative_int(n, name)  # Python ints: no int64 overflow
    return product


class LayerCache:
    """The cached keys and values of one attention layer.

    ``append(k, v)`` takes the new tokens' ``k, v (B, H_kv, T_new, dh)`` and
    returns all of them so far, ``(B, H_kv, T, dh)`` with ``T`` the old length
    plus ``T_new``. The first append fixes ``B``, ``H_kv``, ``dh``, the dtype and
    the device; :meth:`reset` empties the cache and forgets them.

    Dtype rule: k and v are floating tensors of one dtype, kept as given (a
    bfloat16 cache stores bfloat16 and takes half the memory of float32).

    Refuses (the message names the problem): non-tensors or non-floating k, v
    (``TypeError``); k or v not 4-D, or of different shapes (``ValueError``);
    k and v of different dtypes, or a dtype or device other than the cached
    one (``TypeError``); another batch size, head count or head width than the
    cache holds (``ValueError``); an append that would pass ``max_len``
    (``ValueError``); k or v on the meta device (``ValueError``). Values are
    not scanned for NaN or +-inf (that would cost every decode step): the
    attention that reads the cache refuses them by name
    (:func:`mha.decoder.gqa_attention` checks the whole cached k and v), and
    a model's step then rolls the cache back (:meth:`KVCache.rollback_on_error`).
    """

    def __init__(self, max_len: int | None = None):
        self.max_len = None if max_len is None else check_positive_int(max_len, "max_len")
        self.k = self.v = None

    @property
    def length(self) -> int:
        """The number of cached positions ``T`` (0 when empty)."""
        return 0 if self.k is None else self.k.shape[2]

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached K and V, read from their storage."""
        if self.k is None:
            return 0
        return self.k.untyped_storage().nbytes() + self.v.untyped_storage().nbytes()

    def reset(self) -> None:
        """Empty the cache: the next append starts a new sequence (or batch)."""
        self.k = self.v = None

    def append(self, k, v):
        """Add ``k, v (B, H_kv, T_new, dh)``; return all cached ``(B, H_kv, T, dh)``.

        Values are not scanned for NaN or +-inf (a hot path): the attention that
        reads the returned k, v refuses them by name (see the class docstring)."""
        for name, t in (("k", k), ("v", v)):
            if not isinstance(t, torch.Tensor) or not t.is_floating_point():
                raise TypeError(f"the cache stores floating tensors; {name} is "
                                f"{getattr(t, 'dtype', type(t).__name__)}.")
            if t.ndim != 4:
                raise ValueError(f"{name} must be (B, H_kv, T_new, dh); got shape "
                                 f"{tuple(t.shape)}.")
            check_device(t, name)
        if k.shape != v.shape:
            raise ValueError(f"k and v must have one shape (B, H_kv, T_new, dh); got "
                             f"{tuple(k.shape)} and {tuple(v.shape)}.")
        if k.dtype != v.dtype:
            raise TypeError(f"k and v must share one dtype; got {k.dtype} and {v.dtype}.")
        if self.max_len is not None and self.length + k.shape[2] > self.max_len:
            raise ValueError(f"appending {k.shape[2]} positions to a cache of length "
                             f"{self.length} passes max_len={self.max_len}.")
        if self.k is None:
            # A copy, not the caller's tensor: the cache owns exactly what it reports.
            self.k = k.detach().clone(memory_format=torch.contiguous_format)
            self.v = v.detach().clone(memory_format=torch.contiguous_format)
            return self.k, self.v
        self._check_matches(k)
        self.k = torch.cat((self.k, k.detach()), dim=2)  # (B, H_kv, T, dh)
        self.v = torch.cat((self.v, v.detach()), dim=2)
        return self.k, self.v

    def _check_matches(self, k) -> None:
        if k.dtype != self.k.dtype or k.device != self.k.device:
            raise TypeError(f"the cache holds {self.k.dtype} on {self.k.device}; got {k.dtype} "
                            f"on {k.device}. Convert the model or reset the cache.")
        b, h, _, dh = self.k.shape
        if k.shape[0] != b:
            raise ValueError(f"batch mismatch: the cache holds B={b} sequences, the new k has "
                             f"B={k.shape[0]}. Reset the cache before a new batch.")
        if (k.shape[1], k.shape[3]) != (h, dh):
            raise ValueError(f"the cache holds H_kv={h} heads of width dh={dh}; the new k is "
                             f"{tuple(k.shape)} (B, H_kv, T_new, dh).")

    def __repr__(self) -> str:
        shape = None if self.k is None else tuple(self.k.shape)
        return f"LayerCache(k, v: {shape}, nbytes={self.nbytes})"


class KVCache:
    """One :class:`LayerCache` per layer, and the positions and padding of the cached tokens.

    ``cache[i]`` is layer ``i``'s :class:`LayerCache`. :attr:`positions` and
    :attr:`padding` are ``(B, T)`` (long and bool, True = padding), recorded by
    :meth:`add_tokens` once per forward pass, before the layers append; the
    model builds its mask from them (key ``j`` is blocked for a query at
    position ``p`` when ``positions[:, j] > p`` or ``padding[:, j]``).
    :meth:`next_positions` gives the position the next token of each sequence
    takes: the number of real (non-padding) tokens cached, which is
    :attr:`length` when nothing is padded.

    Refuses what :class:`LayerCache` refuses, a layer index that is not an int
    or is out of range, and
    positions / padding that are not ``(B, T_new)`` integer / bool tensors or
    whose batch differs from the cached one.
    """

    def __init__(self, n_layers: int, max_len: int | None = None):
        n_layers = check_positive_int(n_layers, "n_layers")
        self.layers = [LayerCache(max_len) for _ in range(n_layers)]
        self.max_len = self.layers[0].max_len  # checked: an int or None
        self.positions = self.padding = None

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def length(self) -> int:
        """Cached positions ``T``, counted by :meth:`add_tokens` (0 when empty)."""
        return 0 if self.positions is None else self.positions.shape[1]

    @property
    def nbytes(self) -> int:
        """Bytes held by every layer's K and V (positions and padding not counted)."""
        return sum(layer.nbytes for layer in self.layers)

    def __getitem__(self, i: int) -> LayerCache:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise DTypeError(f"a layer index must be an int; got {i!r}.")
        if not -self.n_layers <= i < self.n_layers:
            raise IndexError(f"layer {i} out of range: the cache has {self.n_layers} layers.")
        return self.layers[i]

    def reset(self) -> None:
        """Empty every layer and forget the positions: call it between prompts."""
        for layer in self.layers:
            layer.reset()
        self.positions = self.padding = None

    @contextmanager
    def rollback_on_error(self):
        """``with cache.rollback_on_error(): ...``: if the block raises, the cache is
        left exactly as it was before it (positions, padding and every layer).

        A model's forward records the new tokens, then appends layer by layer; a
        layer that refuses (a dtype, a max_len) would otherwise leave the cache
        counting tokens some layers never stored. Cheap: it keeps references, not
        copies (an append builds new tensors, it never writes into the old ones).
        """
        saved = self.positions, self.padding, [(layer.k, layer.v) for layer in self.layers]
        try:
            yield self
        except BaseException:
            self.positions, self.padding = saved[0], saved[1]
            for layer, (k, v) in zip(self.layers, saved[2], strict=True):
                layer.k, layer.v = k, v
            raise

    def check_in_step(self) -> None:
        """Refuse (``ValueError``) a cache whose layers do not all hold :attr:`length` tokens."""
        for i, layer in enumerate(self.layers):
            if layer.length != self.length:
                raise ValueError(
                    f"the cache is out of step: its positions count {self.length} tokens but "
                    f"layer {i} holds {layer.length}; reset it (cache.reset()) and prefill again.")

    def next_positions(self, batch: int, device=None):
        """``(B,)`` long: the position of each sequence's next token (0 when empty)."""
        batch = check_non_negative_int(batch, "batch")
        if self.positions is None:
            return torch.zeros(batch, dtype=torch.long, device=device)
        if batch != self.positions.shape[0]:
            raise ValueError(f"batch mismatch: the cache holds B={self.positions.shape[0]} "
                             f"sequences, the new tokens have B={batch}. Reset the cache "
                             "before a new batch.")
        return (~self.padding).sum(dim=1)

    def add_tokens(self, positions, padding):
        """Record ``positions (B, T_new)`` long and ``padding (B, T_new)`` bool.

        Returns all ``(positions, padding)`` so far, each ``(B, T)``.
        """
        if not isinstance(positions, torch.Tensor) or positions.dtype.is_floating_point \
                or positions.dtype == torch.bool or positions.ndim != 2:
            raise TypeError("positions must be an integer tensor (B, T_new); got "
                            f"{getattr(positions, 'dtype', type(positions).__name__)}"
                            f"{'' if not hasattr(positions, 'shape') else tuple(positions.shape)}.")
        if positions.dtype in (torch.uint16, torch.uint32, torch.uint64):
            raise DTypeError(f"positions has dtype {positions.dtype}, which torch supports in "
                             "few operations; convert it with positions.to(torch.int64).")
        if not isinstance(padding, torch.Tensor) or padding.dtype != torch.bool or \
                padding.shape != positions.shape:
            raise TypeError(f"padding must be a bool tensor (B, T_new) = "
                            f"{tuple(positions.shape)}, True = padding.")
        if self.max_len is not None and self.length + positions.shape[1] > self.max_len:
            raise ValueError(f"appending {positions.shape[1]} positions to a cache of length "
                             f"{self.length} passes max_len={self.max_len}.")
        if self.positions is None:
            self.positions, self.padding = positions.long().clone(), padding.clone()
        else:
            self.next_positions(positions.shape[0])  # refuses a batch mismatch
            self.positions = torch.cat((self.positions, positions.long()), dim=1)
            self.padding = torch.cat((self.padding, padding), dim=1)
        return self.positions, self.padding

    def __repr__(self) -> str:
        return f"KVCache(n_layers={self.n_layers}, length={self.length}, nbytes={self.nbytes})"
