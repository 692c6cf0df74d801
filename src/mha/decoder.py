"""A tiny decoder-only language model that can run with a KV cache.

Token embedding, then ``n_layers`` pre-norm blocks (``x + attn(norm(x))``,
``x + mlp(norm(x))``), a final norm and a head (its own ``(V, C)`` matrix, or
the embedding's with ``tie_weights=True``). Positions enter through rotary
embeddings (:mod:`mha.rope`) on q and k only. Attention is grouped-query
when ``n_kv_heads < n_heads``: each K/V head serves ``n_heads // n_kv_heads``
consecutive query heads, so the cache holds ``n_kv_heads`` heads per layer
(multi-query attention is ``n_kv_heads = 1``).

Masks follow the package convention (bool, **True = blocked**) and are built
from *absolute positions* with :func:`mha.masks.mask_from_positions`: a query
at position ``p`` may read a cached key at position ``<= p``. They cross into
SDPA with :func:`mha.masks.to_sdpa`. One new query over keys that are all
real (no padding, no window) needs no mask at all, and gets none.
:func:`gqa_attention`, :func:`repeat_kv` and :func:`attention_mask` are written in
:mod:`mha._decoder_attention` and imported from here.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import (
    DTypeError,
    check_device,
    check_flag,
    check_heads,
    check_number,
    check_positive_int,
)
from ._decoder_attention import _IMPLS, attention_mask, gqa_attention, repeat_kv
from .kv_cache import KVCache, LayerCache
from .rope import apply_rope

__all__ = ["Attention", "Block", "MAX_NEW_TOKENS", "TinyDecoder", "attention_mask",
           "from_attention_only", "generate", "gqa_attention", "logits_in_chunks", "repeat_kv"]


class Attention(nn.Module):
    """Causal self-attention with rotary positions and ``n_kv_heads`` K/V heads.

    ``forward(x (B, T, C), positions (B, T) long, mask (B, 1, T, Tk) or None,
    cache=None)`` -> ``(B, T, C)``. With a :class:`mha.kv_cache.LayerCache` the
    rotated k and the v of the new tokens are appended and attention reads all
    cached keys (``Tk`` = cached + new). Projections: ``q (H * dh, C)``,
    ``k, v (H_kv * dh, C)``, ``out (C, C)``, no bias. Refuses x that is not
    ``(B, T, C)`` with ``C = d_model``, or of another dtype or device than the
    weights (e.g. token ids, which go through the model's embedding).
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 rope_base: float = 10000.0, impl: str = "manual"):
        super().__init__()
        d_model, n_heads = check_heads(d_model, n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else check_positive_int(n_kv_heads,
                                                                           "n_kv_heads")
        if n_heads % n_kv_heads or (d_model // n_heads) % 2:
            raise ValueError(f"need d_model={d_model} divisible by n_heads={n_heads}, n_heads by "
                             f"n_kv_heads={n_kv_heads}, and an even head width for RoPE.")
        if impl not in _IMPLS:
            raise ValueError(f"impl must be one of {_IMPLS}; got {impl!r}.")
        rope_base = check_number(rope_base, "rope_base", above=1)  # as mha.rope words it
        self.n_heads, self.n_kv_heads, self.d_head = n_heads, n_kv_heads, d_model // n_heads
        self.rope_base, self.impl = rope_base, impl
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def _check_x(self, x) -> None:
        """Refuse x that is not a ``(B, T, C)`` tensor of the weights' dtype and width C."""
        w = self.q_proj.weight  # (C, C)
        if not isinstance(x, torch.Tensor) or x.ndim != 3:
            raise ValueError(f"x must be a tensor (B, T, C) with C = d_model = {w.shape[1]}; "
                             f"got {tuple(getattr(x, 'shape', ())) or type(x).__name__}.")
        if x.dtype != w.dtype:
            raise DTypeError(f"x has dtype {x.dtype}, the attention's weights {w.dtype}: pass "
                             f"x.to({w.dtype}) (token ids go through the model's embedding), "
                             "or convert the module.")
        if x.shape[-1] != w.shape[1]:
            raise ValueError(f"x must be (B, T, C) with C = d_model = {w.shape[1]}; got shape "
                             f"{tuple(x.shape)}.")
        check_device(x, "x", w.device)

    def _split(self, x, n):  # (B, T, n * dh) -> (B, T, n, dh) -> (B, n, T, dh)
        return x.unflatten(-1, (n, self.d_head)).transpose(1, 2)

    def forward(self, x, positions, mask=None, cache=None):
        self._check_x(x)
        q = apply_rope(self._split(self.q_proj(x), self.n_heads), positions, self.rope_base)
        k = apply_rope(self._split(self.k_proj(x), self.n_kv_heads), positions, self.rope_base)
        v = self._split(self.v_proj(x), self.n_kv_heads)  # (B, H_kv, T, dh)
        if cache is not None:
            k, v = cache.append(k, v)  # (B, H_kv, Tk, dh): the past and the new tokens
        heads = gqa_attention(q, k, v, mask, self.impl)  # (B, H, T, dh)
        return self.out_proj(heads.transpose(1, 2).flatten(2))  # (B, T, C)


class Block(nn.Module):
    """Pre-norm block: ``x + attn(norm1(x))``, then ``x + mlp(norm2(x))`` (RMSNorm, GELU MLP).

    ``attention_only=True`` keeps only ``x + attn(x)`` (no norm, no MLP), the
    model of lesson 06.
    """

    def __init__(self, d_model, n_heads, n_kv_heads=None, d_mlp=None, rope_base=10000.0,
                 impl="manual", attention_only=False):
        super().__init__()
        attention_only = check_flag(attention_only, "attention_only")  # "False" is truthy
        self.attn = Attention(d_model, n_heads, n_kv_heads, rope_base, impl)
        d_mlp = 4 * d_model if d_mlp is None else check_positive_int(d_mlp, "d_mlp")
        norm = nn.Identity if attention_only else nn.RMSNorm
        self.norm1, self.norm2 = norm(d_model), norm(d_model)
        self.mlp = None if attention_only else nn.Sequential(
            nn.Linear(d_model, d_mlp), nn.GELU(), nn.Linear(d_mlp, d_model))

    def forward(self, x, positions, mask=None, cache=None):
        self.attn._check_x(x)  # before the norm, which would fail on the width in torch's words
        x = x + self.attn(self.norm1(x), positions, mask, cache)
        return x if self.mlp is None else x + self.mlp(self.norm2(x))


class TinyDecoder(nn.Module):
    """Decoder-only model: ``forward(tokens, positions=None, cache=None, padding=None)`` -> logits.

    ``tokens (B, T_new)`` long in ``0..vocab_size-1``; returns ``(B, T_new, V)``
    in the parameters' dtype. ``cache`` is a :class:`mha.kv_cache.KVCache` from
    :meth:`new_cache` (or None: the tokens are the whole sequence).
    ``padding (B, T_new)`` bool marks padding tokens (True), e.g. the left
    padding of a batched prompt. ``positions`` (``(T_new,)`` or ``(B, T_new)``)
    defaults to each sequence's next position (:meth:`KVCache.next_positions`,
    0 without a cache) counting only real tokens, so a left-padded prompt takes
    its positions from its padding and starts at 0 like the same prompt alone.
    Explicit positions rotate q and k; one new token over real keys still reads
    every cached key (see :mod:`mha._decoder_attention`). ``window`` makes
    attention a sliding window of that many positions.
    ``attention_only=True`` drops the norms and MLPs (see :func:`from_attention_only`).

    Refuses tokens that are not a ``(B, T)`` integer tensor or lie outside the
    vocabulary, padding or positions of another shape (or float positions), a
    cache with another number of layers or out of step (layers holding other
    lengths than its positions), and what the cache refuses (batch, dtype,
    ``max_len``); a refused step leaves the cache exactly as it was. Tokens of
    any integer dtype torch computes with are read (int8, int16 and uint8 as
    int64); unsigned 16/32/64-bit ones are refused (few operations support
    them). Refuses a ``cache`` that is not a :class:`KVCache` (a
    :class:`LayerCache` holds one layer), and parameters of several dtypes or
    devices (e.g. one block converted alone: convert the whole model).
    Refuses at construction a ``vocab_size``, ``n_layers``, ``d_mlp`` or
    ``window`` (None allowed for the last two) that is not a positive int,
    ``tie_weights`` or ``attention_only`` that is not True / False, and a
    ``rope_base`` that is not a finite number above 1.
    """

    def __init__(self, vocab_size: int, d_model: int = 32, n_heads: int = 4,
                 n_kv_heads: int | None = None, n_layers: int = 2, d_mlp: int | None = None,
                 tie_weights: bool = False, rope_base: float = 10000.0,
                 window: int | None = None, impl: str = "manual", attention_only: bool = False):
        super().__init__()
        vocab_size = check_positive_int(vocab_size, "vocab_size")
        d_model, _ = check_heads(d_model, n_heads)  # before nn.Embedding reads d_model
        n_layers = check_positive_int(n_layers, "n_layers")
        tie_weights = check_flag(tie_weights, "tie_weights")  # "no" is truthy
        attention_only = check_flag(attention_only, "attention_only")
        window = None if window is None else check_positive_int(window, "window")
        self.vocab_size, self.window = vocab_size, window
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, n_kv_heads, d_mlp, rope_base, impl,
                                          attention_only) for _ in range(n_layers))
        self.norm = nn.Identity() if attention_only else nn.RMSNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_weights:
            self.head.weight = self.embed.weight  # one (V, C) matrix reads tokens in and out

    @property
    def n_layers(self) -> int:
        return len(self.blocks)

    def new_cache(self, max_len: int | None = None) -> KVCache:
        """An empty :class:`mha.kv_cache.KVCache` with one layer cache per block."""
        return KVCache(self.n_layers, max_len)

    def forward(self, tokens, positions=None, cache=None, padding=None):
        if cache is not None:
            _check_cache(cache)
            if cache.n_layers != self.n_layers:
                raise ValueError(f"the cache has {cache.n_layers} layers, the model "
                                 f"{self.n_layers}.")
            cache.check_in_step()
        try:
            if cache is None:
                return self._forward(tokens, positions, None, padding)
            with cache.rollback_on_error():  # a refused step leaves the cache as it was
                return self._forward(tokens, positions, cache, padding)
        except (RuntimeError, DTypeError):  # name parameters of mixed dtypes if that is why
            self._check_parameters()  # looked at only on failure (a scan costs ~0.1 ms a step)
            raise

    def _forward(self, tokens, positions, cache, padding):
        tokens = self._check_tokens(tokens)
        b, t = tokens.shape
        if t == 0 and (cache is None or cache.length == 0):
            raise ValueError(f"tokens has no positions (T=0, shape {(b, t)}) and nothing is "
                             "cached: there is no key to read. Pass at least one token.")
        if padding is None:
            padding = torch.zeros(b, t, dtype=torch.bool, device=tokens.device)
        elif not isinstance(padding, torch.Tensor) or padding.dtype != torch.bool or \
                tuple(padding.shape) != (b, t):
            raise TypeError(f"padding must be a bool tensor (B, T) = {(b, t)}, True = padding.")
        if positions is None:
            start = cache.next_positions(b, tokens.device) if cache is not None else \
                torch.zeros(b, dtype=torch.long, device=tokens.device)
            # Real tokens count 0, 1, 2, ... from the start; padding before them takes the start.
            positions = start[:, None] + ((~padding).cumsum(dim=1) - 1).clamp(min=0)
        else:
            positions = _as_positions(positions, tokens.device)
            if positions.dtype.is_floating_point or positions.dtype == torch.bool or \
                    tuple(positions.shape) not in ((t,), (b, t)):
                raise ValueError(f"positions must be integer, (T,) = ({t},) or (B, T) = {(b, t)}; "
                                 f"got {positions.dtype} of shape {tuple(positions.shape)}.")
            positions = positions.expand(b, t)
        key_positions, key_padding = positions, padding
        if cache is not None:
            key_positions, key_padding = cache.add_tokens(positions, padding)  # (B, Tk)
        mask = attention_mask(positions, key_positions, key_padding, self.window)
        x = self.embed(tokens)  # (B, T, C)
        for i, block in enumerate(self.blocks):
            x = block(x, positions, mask, None if cache is None else cache[i])
        return self.head(self.norm(x))  # (B, T, V)

    def _check_parameters(self) -> None:
        """Refuse parameters of several dtypes or devices: a layer would fail deep in torch."""
        first_name, first = next(iter(self.named_parameters()))
        for name, p in self.named_parameters():
            if p.dtype != first.dtype or p.device != first.device:
                raise DTypeError(
                    f"the model's parameters differ: {first_name} is {first.dtype} on "
                    f"{first.device}, {name} is {p.dtype} on {p.device}. Convert the whole "
                    f"model (model.to(...)), not one block.")

    def _check_tokens(self, tokens):
        if not isinstance(tokens, torch.Tensor) or tokens.dtype.is_floating_point or \
                tokens.dtype.is_complex or tokens.dtype == torch.bool or tokens.ndim != 2:
            raise TypeError(f"tokens must be an integer tensor (B, T); got "
                            f"{getattr(tokens, 'dtype', type(tokens).__name__)} "
                            f"{tuple(getattr(tokens, 'shape', ()))}.")
        check_device(tokens, "tokens", self.embed.weight.device)
        if tokens.dtype in (torch.int8, torch.int16, torch.uint8):
            tokens = tokens.long()  # exact; F.embedding reads only int32 / int64
        elif tokens.dtype not in (torch.int32, torch.int64):
            raise DTypeError(f"tokens has dtype {tokens.dtype}, which torch supports in few "
                             "operations; convert it with tokens.to(torch.int64).")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            raise ValueError(f"tokens must lie in 0..{self.vocab_size - 1}; got "
                             f"{int(tokens.min())}..{int(tokens.max())}.")
        return tokens


def _as_positions(positions, device):
    """``positions`` as a tensor; refuse what ``torch.as_tensor`` cannot read (a string)."""
    try:
        return torch.as_tensor(positions, device=device)
    except (TypeError, ValueError, RuntimeError):
        raise DTypeError(f"positions must be integer, (T,) or (B, T); got {positions!r}.") from None


def _check_cache(cache) -> None:
    if not isinstance(cache, KVCache):
        extra = (" A LayerCache holds one layer; the model needs one per layer."
                 if isinstance(cache, LayerCache) else "")
        raise TypeError(f"cache must be a mha.kv_cache.KVCache, e.g. model.new_cache(); got "
                        f"{type(cache).__name__}.{extra}")


def _check_model(model) -> None:
    if not isinstance(model, TinyDecoder):
        raise TypeError(f"model must be a mha.decoder.TinyDecoder; got {type(model).__name__}.")


def from_attention_only(trained) -> TinyDecoder:
    """A cache-ready :class:`TinyDecoder` holding a copy of lesson 06's trained weights.

    ``trained`` is an :class:`mha.induction.AttentionOnly` with rotary
    positions (e.g. ``mha.induction.load_trained()``): embedding, residual
    attention layers without norm or MLP, unembedding. Its rotation pairs
    channels ``(c, c + dh/2)`` with base 10000, as :mod:`mha.rope` does, so the
    copy computes the same logits. Refuses a model with learned positions.
    """
    config = trained.config
    if config["positions"] != "rotary":
        raise ValueError("from_attention_only copies a rotary model; this one has "
                         f"positions={config['positions']!r}.")
    model = TinyDecoder(config["vocab_size"], config["d_model"], config["n_heads"],
                        n_layers=config["n_layers"], attention_only=True)
    with torch.no_grad():
        model.embed.weight.copy_(trained.embed.weight)
        model.head.weight.copy_(trained.unembed.weight)
        for block, layer in zip(model.blocks, trained.layers, strict=True):
            for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
                getattr(block.attn, name).weight.copy_(getattr(layer, name).weight)
    return model.eval()


MAX_NEW_TOKENS = 10_000
"""The most tokens one :func:`generate` call produces. Each token is one step of
Python and torch calls; measured on this project's 2-core machine (one torch
thread, other jobs running), ``TinyDecoder(10, d_model=16, n_heads=4)`` with the
cache took 9.9 s for 1,000 tokens, so 10**6 tokens would run for hours without a
word. Past the limit, call :func:`generate` again with the same ``cache=``."""


def _check_n_new(n_new, cache, prompt) -> int:
    """``n_new`` as an int in ``1..MAX_NEW_TOKENS`` that fits a passed cache's ``max_len``."""
    n_new = check_positive_int(n_new, "n_new")
    if n_new > MAX_NEW_TOKENS:
        raise ValueError(f"n_new={n_new:,} is more than generate's limit of {MAX_NEW_TOKENS:,} "
                         "new tokens per call (one decode step each, about 10 ms a step for a "
                         "tiny model on a laptop CPU: hours for a million). Generate in pieces: "
                         "call generate again with the same cache=.")
    max_len = getattr(cache, "max_len", None)
    if max_len is not None and isinstance(prompt, torch.Tensor) and prompt.ndim == 2:
        need = cache.length + prompt.shape[1] + n_new - 1  # the last token is never fed back
        if need > max_len:
            raise ValueError(f"the cache holds at most max_len={max_len} positions; "
                             f"{cache.length} cached + {prompt.shape[1]} prompt + {n_new - 1} "
                             f"fed back = {need}. Pass a larger max_len or a smaller n_new.")
    return n_new


@torch.no_grad()
def generate(model: TinyDecoder, prompt, n_new: int, use_cache: bool = True, padding=None,
             cache: KVCache | None = None):
    """Greedy decoding: ``(tokens (B, n_new), logits (B, n_new, V))``.

    ``prompt (B, T0)`` long, ``padding (B, T0)`` bool for a left-padded batch.
    With ``use_cache`` the prompt is run once (prefill) and each step feeds only
    the newest token; without it, each step reruns the whole sequence so far.
    ``logits[:, s]`` are the logits that chose token ``s``. A ``cache`` passed
    in is used as it is, **not reset**: pass an empty one for a new prompt.
    Refuses an empty prompt (``T0 = 0``) or a sequence of it that is all padding,
    a ``use_cache`` that is not a bool, and what the model refuses. Refuses
    up front ``n_new`` above :data:`MAX_NEW_TOKENS` (decoding is one step per
    token: at the limit about two minutes for a tiny model on a laptop CPU,
    see there; continue with ``cache=`` for more), and a ``cache`` whose
    ``max_len`` the sequence would pass (rather than after running up to it).
    """
    _check_model(model)
    n_new = _check_n_new(n_new, cache, prompt)
    use_cache = check_flag(use_cache, "use_cache")
    if cache is not None:
        _check_cache(cache)
    if model._check_tokens(prompt).shape[1] == 0:
        raise ValueError(f"the prompt must hold at least one token: (B, T0) with T0 >= 1; got "
                         f"shape {tuple(prompt.shape)}. Greedy decoding starts from the logits "
                         "of the prompt's last token.")
    if isinstance(padding, torch.Tensor) and padding.shape == prompt.shape and \
            bool(padding.all(dim=1).any()):
        row = int(padding.all(dim=1).nonzero()[0, 0])
        raise ValueError(f"sequence {row} of the prompt is all padding: it has no token to "
                         "continue from.")
    b = prompt.shape[0]
    pad = torch.zeros(prompt.shape, dtype=torch.bool) if padding is None else padding
    no_pad = torch.zeros(b, 1, dtype=torch.bool)
    if use_cache:
        cache = model.new_cache() if cache is None else cache
        step_logits = model(prompt, cache=cache, padding=pad)[:, -1]  # prefill
    else:
        seq = prompt
        step_logits = model(seq, padding=pad)[:, -1]
    tokens, logits = [], []
    for step in range(n_new):
        logits.append(step_logits)
        nxt = step_logits.argmax(dim=-1, keepdim=True)  # (B, 1)
        tokens.append(nxt)
        if step == n_new - 1:
            break
        if use_cache:
            step_logits = model(nxt, cache=cache)[:, -1]
        else:
            seq, pad = torch.cat((seq, nxt), dim=1), torch.cat((pad, no_pad), dim=1)
            step_logits = model(seq, padding=pad)[:, -1]
    return torch.cat(tokens, dim=1), torch.stack(logits, dim=1)


@torch.no_grad()
def logits_in_chunks(model: TinyDecoder, tokens, chunks, padding=None):
    """Logits ``(B, T, V)`` of a fixed sequence fed through one cache chunk by chunk.

    ``chunks`` lists the chunk lengths, summing to ``T`` (``[T]``: one-shot
    prefill; ``[4, 1, 1, ...]``: prefill then one token at a time). Compare
    with ``model(tokens)`` to check the cache. Refuses ``chunks`` that is not a
    list of positive ints summing to ``T``, ``padding`` that is not a bool
    ``(B, T)`` tensor, and what the model refuses.
    """
    _check_model(model)
    tokens = model._check_tokens(tokens)
    if isinstance(chunks, (str, bytes, torch.Tensor)) or not hasattr(chunks, "__iter__"):
        raise DTypeError(f"chunks must be a list of chunk lengths summing to T, e.g. "
                         f"[{tokens.shape[1]}] or [4, 1, 1, ...]; got {chunks!r}.")
    chunks = [check_positive_int(n, "a chunk length") for n in chunks]
    if sum(chunks) != tokens.shape[1]:
        raise ValueError(f"chunk lengths {list(chunks)} must be positive and sum to "
                         f"T={tokens.shape[1]}.")
    if padding is not None and (not isinstance(padding, torch.Tensor) or
                                padding.dtype != torch.bool or padding.shape != tokens.shape):
        raise TypeError(f"padding must be a bool tensor (B, T) = {tuple(tokens.shape)}, "
                        "True = padding.")
    cache, out, start = model.new_cache(), [], 0
    for n in chunks:
        part = None if padding is None else padding[:, start:start + n]
        out.append(model(tokens[:, start:start + n], cache=cache, padding=part))
        start += n
    return torch.cat(out, dim=1)
