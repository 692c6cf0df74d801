"""A tiny attention-only transformer that learns an induction head (lesson 06).

The data: each sequence is a block of ``L`` distinct random letters written
twice, ``tokens (B, 2L)``. The first half cannot be predicted; the second half
is a copy, so a model that finds "the token after the earlier copy of the
current token" predicts it. Two attention layers are the least that can do it:
a *previous-token head* (layer 0, query ``i`` reads key ``i - 1``) writes into
position ``j + 1`` which token stood at ``j``; an *induction head* (layer 1,
query ``i`` reads key ``i - L + 1``) then finds the position whose previous
token equals the current one, and copies the token found there.

The model (:class:`AttentionOnly`): token embedding, optional learned position
embedding, ``n_layers`` residual self-attention layers with a causal mask and
``n_heads`` heads of width ``d_head = d_model // n_heads`` (rotary positions on
the queries and keys by default), no MLP, no LayerNorm, a linear unembedding.

Public API (kept stable for lesson 08, the KV cache; see ``forward``):

- ``load_trained(name)``: a shipped model in eval mode (float32, CPU).
- ``model(tokens)`` / ``model.forward(tokens, positions=None)``: logits.
- ``model.attention_maps(tokens)``: per layer, the weights ``(B, H, T, T)``.
- ``repeated_blocks``, ``letters`` / ``encode``: the data and its strings.
- ``head_scores``, ``half_losses``, ``position_losses``: what the heads do, the losses.
- ``without_head(model, layer, head)``: a copy with one head's output removed.

Training lives in :mod:`mha.induction_train`.
"""

from __future__ import annotations

import math
import string
from importlib import resources

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import masks
from ._checks import (
    DTypeError,
    check_flag,
    check_heads,
    check_non_negative_int,
    check_positive_int,
    check_token_ids,
)

# Rotary positions are lesson 08's idea too: one implementation, under the name lesson 06 uses.
from .rope import apply_rope as apply_rotary

__all__ = [
    "ALPHABET", "AttentionOnly", "AttentionLayer", "TRAINED", "apply_rotary", "encode",
    "half_losses", "head_scores", "letters", "load_trained", "position_losses",
    "repeated_blocks", "without_head",
]

ALPHABET = string.ascii_uppercase  # token t is the letter ALPHABET[t]
TRAINED = ("induction_2l_1h", "induction_2l_4h")  # shipped weights, in src/mha/data/


def letters(tokens) -> list[str]:
    """Token ids ``(T,)`` -> their letters, e.g. ``[0, 2] -> ['A', 'C']`` (``(1, T)`` is read
    flat, so ``letters(encode("AB"))`` works too).

    Refuses ids that are not integers or lie outside ``0..25`` (``-1`` would
    silently read ``'Z'``)."""
    return [ALPHABET[t] for t in check_token_ids(tokens, len(ALPHABET)).reshape(-1)]


def encode(text: str) -> torch.Tensor:
    """A string of capital letters -> token ids ``(1, T)`` (int64). Refuses other characters."""
    if not isinstance(text, str):
        raise DTypeError(f"encode takes a string of capital letters A-Z; got {text!r}.")
    bad = sorted({c for c in text if c not in ALPHABET})
    if bad:
        raise ValueError(f"encode takes capital letters A-Z only; got {bad}.")
    return torch.tensor([[ALPHABET.index(c) for c in text]], dtype=torch.int64)


def repeated_blocks(batch: int, block: int, vocab_size: int = 26, seed=0) -> torch.Tensor:
    """``(batch, 2 * block)`` int64 tokens: ``block`` distinct random tokens, then the same again.

    ``seed`` is an int or a ``torch.Generator`` (drawn from, so successive calls
    differ). Tokens within a block are distinct, so every token of the second
    half has exactly one earlier copy. Refuses ``block`` outside
    ``[2, vocab_size]``, sizes that are not ints (``batch >= 0``, the others
    positive) and a ``seed`` that is neither an int nor a ``torch.Generator``.
    """
    batch = check_non_negative_int(batch, "batch")
    block = check_positive_int(block, "block")
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if not isinstance(seed, torch.Generator):
        seed = check_non_negative_int(seed, "seed")  # int(1.5) would seed 1 silently
    if not 2 <= block <= vocab_size:
        raise ValueError(f"block must be in [2, vocab_size={vocab_size}]; got {block}.")
    gen = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(seed)
    first = torch.rand(batch, vocab_size, generator=gen).argsort(dim=-1)[:, :block]
    return torch.cat([first, first], dim=1)


class AttentionLayer(nn.Module):
    """Causal self-attention with ``n_heads`` heads: ``q_proj, k_proj, v_proj, out_proj``
    (``nn.Linear``, no bias). ``forward(x (B, T, C), positions (T,))`` returns
    ``(out (B, T, C), weights (B, H, T, T))``. Refuses at construction what
    :func:`mha._checks.check_heads` refuses and a ``rotary`` that is not True / False;
    at the call, x that is not a ``(B, T, C)`` tensor of the weights' dtype and width
    (a forward pre-hook, so the forward shown in lesson 06 stays as it is)."""

    def __init__(self, d_model: int, n_heads: int, rotary: bool):
        super().__init__()
        d_model, n_heads = check_heads(d_model, n_heads)
        rotary = check_flag(rotary, "rotary")  # "no" is truthy
        self.n_heads, self.d_head, self.rotary = n_heads, d_model // n_heads, rotary
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model, bias=False) for _ in range(4))
        self.register_forward_pre_hook(_check_layer_input)

    def split(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, dh)

    def forward(self, x, positions):
        b, t, c = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        if self.rotary:
            q, k = apply_rotary(q, positions), apply_rotary(k, positions)
        blocked = torch.from_numpy(masks.causal_mask(t)).to(x.device)  # (T, T), True = blocked
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_head)  # (B, H, T, T)
        weights = scores.masked_fill(blocked, float("-inf")).softmax(dim=-1)
        heads = weights @ v  # (B, H, T, dh)
        return self.out_proj(heads.transpose(1, 2).reshape(b, t, c)), weights


def _check_layer_input(layer, args) -> None:
    """Forward pre-hook of :class:`AttentionLayer`: refuse x (args[0]) by name before
    ``b, t, c = x.shape`` or a projection fails on it in torch's words."""
    x, w = args[0], layer.q_proj.weight  # w (C, C)
    if not isinstance(x, torch.Tensor) or x.ndim != 3 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"x must be a tensor (B, T, C) with C = d_model = {w.shape[1]}; got "
                         f"{tuple(getattr(x, 'shape', ())) or type(x).__name__}.")
    if x.dtype != w.dtype:
        raise DTypeError(f"x has dtype {x.dtype}, the layer's weights {w.dtype}: pass "
                         f"x.to({w.dtype}) (token ids go through the model's embedding).")


class AttentionOnly(nn.Module):
    """Embedding, ``n_layers`` residual attention layers (no MLP, no LayerNorm), unembedding.

    ``positions="rotary"`` rotates queries and keys (:func:`apply_rotary`);
    ``"learned"`` adds a learned ``(max_len, C)`` position embedding to the input.
    Parameters: ``embed`` ``(V, C)``, optional ``pos_embed``, ``layers[l]`` (an
    :class:`AttentionLayer`), ``unembed`` ``(V, C)`` (``nn.Linear``, no bias).
    Refuses sizes that are not positive ints and ``d_model`` not divisible by
    ``n_heads``.
    """

    def __init__(self, vocab_size: int = 26, d_model: int = 32, n_layers: int = 2,
                 n_heads: int = 1, positions: str = "rotary", max_len: int = 64):
        super().__init__()
        if positions not in ("rotary", "learned"):
            raise ValueError(f"positions must be 'rotary' or 'learned'; got {positions!r}.")
        for name, n in (("vocab_size", vocab_size), ("n_layers", n_layers), ("max_len", max_len)):
            check_positive_int(n, name)
        check_heads(d_model, n_heads)
        self.config = {"vocab_size": vocab_size, "d_model": d_model, "n_layers": n_layers,
                       "n_heads": n_heads, "positions": positions, "max_len": max_len}
        self.vocab_size, self.n_layers, self.n_heads = vocab_size, n_layers, n_heads
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = nn.Embedding(max_len, d_model) if positions == "learned" else None
        self.layers = nn.ModuleList(
            AttentionLayer(d_model, n_heads, rotary=positions == "rotary") for _ in range(n_layers))
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)

    def _run(self, tokens, positions):
        tokens = self._check_tokens(tokens)
        t = tokens.shape[1]
        if positions is None:
            positions = torch.arange(t, device=tokens.device)
        elif not isinstance(positions, torch.Tensor) or positions.shape != (t,):
            raise ValueError(f"positions must be a tensor (T,) = ({t},); got "
                             f"{tuple(getattr(positions, 'shape', ())) or positions!r}.")
        x = self.embed(tokens)  # (B, T, C)
        if self.pos_embed is not None:
            if t and (int(positions.max()) >= self.max_len or int(positions.min()) < 0):
                raise ValueError(f"learned positions lie in 0..max_len - 1 = {self.max_len - 1}; "
                                 f"got {int(positions.min())}..{int(positions.max())}.")
            x = x + self.pos_embed(positions)
        maps = []
        for layer in self.layers:
            out, weights = layer(x, positions)
            x = x + out  # residual stream (B, T, C)
            maps.append(weights)
        return self.unembed(x), maps

    def forward(self, tokens, positions=None):
        """``tokens (B, T)`` int64 -> ``logits (B, T, V)``: row ``i`` predicts token ``i + 1``.

        ``positions (T,)`` defaults to ``0..T-1`` (pass others to continue a
        sequence). Refuses tokens that are not a 2-D integer tensor in
        ``[0, vocab_size)``.
        """
        return self._run(tokens, positions)[0]

    def attention_maps(self, tokens, positions=None) -> list[torch.Tensor]:
        """Per layer, the attention weights ``(B, H, T, T)`` (query i, key j), without grad."""
        with torch.no_grad():
            return self._run(tokens, positions)[1]

    def _check_tokens(self, tokens):
        if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.int64 or tokens.ndim != 2:
            raise TypeError("tokens must be a (B, T) int64 tensor; got "
                            f"{getattr(tokens, 'dtype', type(tokens).__name__)} "
                            f"of shape {tuple(getattr(tokens, 'shape', ()))}.")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise ValueError(f"tokens must lie in [0, {self.vocab_size}); got values "
                             f"{int(tokens.min())}..{int(tokens.max())}.")
        return tokens


def position_losses(model: AttentionOnly, tokens: torch.Tensor) -> np.ndarray:
    """Next-token cross-entropy (nats) at each position, averaged over the batch.

    ``tokens (B, T)`` -> ``(T - 1,)`` float64: entry ``i`` is the loss of the
    prediction made at position ``i`` for the token at ``i + 1``.
    """
    with torch.no_grad():
        logits = model(tokens)
        loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
    return loss.mean(dim=0).to(torch.float64).numpy()


def without_head(model: AttentionOnly, layer: int, head: int) -> AttentionOnly:
    """A copy of ``model`` in which one head writes nothing (its ``out_proj`` columns zeroed).

    The head still computes its map; only its contribution to the residual
    stream is removed. Refuses a layer or head index that is not an int or out of range.
    """
    import copy

    layer, head = check_non_negative_int(layer, "layer"), check_non_negative_int(head, "head")

    if not (0 <= layer < model.n_layers and 0 <= head < model.n_heads):
        raise ValueError(f"no head ({layer}, {head}): the model has {model.n_layers} layers "
                         f"of {model.n_heads} heads.")
    ablated = copy.deepcopy(model)
    block = ablated.layers[layer]
    with torch.no_grad():
        block.out_proj.weight[:, head * block.d_head:(head + 1) * block.d_head] = 0.0
    return ablated.eval()


def half_losses(model: AttentionOnly, tokens: torch.Tensor) -> dict[str, float]:
    """Mean next-token cross-entropy (nats) on each half of repeated blocks ``(B, 2L)``.

    ``"first"``: targets ``1 .. L-1`` (random letters: the best any model can do
    is guess among the letters not used yet, close to ``log V``).
    ``"repeated"``: targets ``L+1 .. 2L-1``, each the letter after the earlier
    copy of the current one. Target ``L`` (the first repeated letter) is left
    out: nothing announces that the copy starts there. Also ``"log_vocab"``.
    Refuses tokens that are not ``(B, 2L)`` with ``L >= 2`` (an odd length or
    ``L = 1`` would average no loss: NaN).
    """
    shape = tuple(getattr(tokens, "shape", ()))
    if len(shape) != 2 or shape[1] % 2 or shape[1] < 4:
        raise ValueError(f"tokens must be repeated blocks (B, 2L) with L >= 2; got shape {shape}.")
    block = tokens.shape[1] // 2
    with torch.no_grad():
        logits = model(tokens)
        loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
    return {"first": float(loss[:, : block - 1].mean()),  # predictions at 0..L-2
            "repeated": float(loss[:, block:].mean()),  # predictions at L..2L-2
            "log_vocab": math.log(model.vocab_size)}


def head_scores(weights, block: int) -> dict[str, np.ndarray]:
    """Previous-token and induction scores of each head, from its attention map.

    ``weights (B, H, T, T)`` for repeated blocks of length ``block`` (``T = 2 *
    block``). ``"previous"[h]``: mean weight of query ``i`` on key ``i - 1``
    over ``i = 1..T-1``. ``"induction"[h]``: mean weight of query ``i`` on key
    ``i - block + 1`` (the token after the earlier copy) over ``i = block..T-1``.
    Both are in ``[0, 1]``; 1 means the head does nothing else. Returns ``(H,)``
    arrays (float64). Refuses a ``block`` that is not a positive int and
    weights of another shape.
    """
    block = check_positive_int(block, "block")  # "2" * 2 would be "22"
    try:
        w = torch.as_tensor(weights).detach().to(torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise DTypeError(f"weights must be attention weights (B, H, T, T), a tensor or array of "
                         f"numbers; got {type(weights).__name__}.") from None
    if w.ndim != 4 or w.shape[-1] != w.shape[-2] or w.shape[-1] != 2 * block:
        raise ValueError(f"weights must be (B, H, T, T) with T = 2 * block = {2 * block}; "
                         f"got shape {tuple(w.shape)}.")
    t = 2 * block
    i = torch.arange(1, t)
    previous = w[:, :, i, i - 1].mean(dim=(0, 2))
    i = torch.arange(block, t)
    induction = w[:, :, i, i - block + 1].mean(dim=(0, 2))
    return {"previous": previous.numpy(), "induction": induction.numpy()}


def load_trained(name: str = "induction_2l_4h") -> AttentionOnly:
    """A shipped model (one of :data:`TRAINED`), float32 on the CPU, in eval mode.

    Weights and their training record come from ``tools/train_induction.py``;
    ``model.record`` holds the record (config, seed, steps, metrics measured
    after training). Refuses an unknown name.
    """
    if name not in TRAINED:
        raise ValueError(f"no trained model {name!r}; choose one of {TRAINED}.")
    path = resources.files("mha") / "data" / f"{name}.pt"
    with resources.as_file(path) as file:
        saved = torch.load(file, map_location="cpu", weights_only=True)
    model = AttentionOnly(**saved["config"])
    model.load_state_dict(saved["state_dict"])
    model.record = saved["record"]
    return model.eval()
