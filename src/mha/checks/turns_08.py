"""Lesson 08's your-turn check: append one decoding step's keys and values to the cache.

A cache holds one layer's ``K, V (B, H_kv, T, dh)``. A decoding step brings the new
token's ``k, v (B, H_kv, 1, dh)``; appending puts them after the cached positions,
on the time axis (dim 2), and gives ``(B, H_kv, T + 1, dh)``. The classic wrong
answers run without an error on some shapes: the wrong axis, the new token first,
the cache thrown away, K and V crossed, the value not appended, ``torch.stack``.
"""

from __future__ import annotations

import torch

from ._core import Case, CheckFailed, Mistake, NotAttempted, as_numbers, run_check

__all__ = ["check_append_step"]


_STACK = ("torch.stack puts the tensors on a new axis (the result has 5 axes) and needs them the "
          "same shape; torch.cat joins them along an existing axis: "
          "torch.cat((cache_k, k_new), dim=2), the time axis.")


def _reference(cache_k, cache_v, k_new, v_new):
    return torch.cat((cache_k, k_new), dim=2), torch.cat((cache_v, v_new), dim=2)


def _cat(dim, new_first=False):
    def compute(cache_k, cache_v, k_new, v_new):
        pairs = ((k_new, cache_k), (v_new, cache_v)) if new_first else ((cache_k, k_new),
                                                                           (cache_v, v_new))
        return tuple(torch.cat(p, dim=dim) for p in pairs)
    return compute


def _case(label, b, h, t, dh, seed):
    gen = torch.Generator().manual_seed(seed)
    cache_k, cache_v = torch.randn(2, b, h, t, dh, generator=gen)
    k_new, v_new = torch.randn(2, b, h, 1, dh, generator=gen)
    return Case(label, (cache_k, cache_v, k_new, v_new))


APPEND_CASES = (
    _case("one cached token, B=1, H_kv=2, dh=4 (joined on a wrong axis, this one raises no error)",
          1, 2, 1, 4, 0),
    _case("three cached tokens, B=1, H_kv=2, dh=4", 1, 2, 3, 4, 1),
    _case("five cached tokens, a batch of 2, one K/V head, dh=3", 2, 1, 5, 3, 2),
)

APPEND_MISTAKES = (
    Mistake("appended on the head axis",
            "joined on dim 1, the head axis: the cache would gain heads, not positions. "
            "K and V are (B, H_kv, T, dh); positions run along dim 2.", _cat(1),
            raises="Sizes of tensors must match"),
    Mistake("appended on the channel axis",
            "joined on the last axis, the head channels: each key would get wider, not the cache "
            "longer. Positions run along dim 2 of (B, H_kv, T, dh).", _cat(-1),
            raises="Sizes of tensors must match"),
    Mistake("appended on the batch axis",
            "joined on dim 0, the batch axis: the new token became a new sequence. "
            "Positions run along dim 2 of (B, H_kv, T, dh).", _cat(0),
            raises="Sizes of tensors must match"),
    Mistake("new token before the cache",
            "the new token is first: torch.cat((k_new, cache_k), dim=2) puts it at position 0. "
            "The cache keeps the order of positions: old ones first, the new one last.",
            _cat(2, new_first=True)),
    Mistake("cache replaced by the new token",
            "only the new token is returned: the step must keep every cached key and value and "
            "add the new one (the query reads all of them).",
            lambda ck, cv, kn, vn: (kn, vn)),
    Mistake("keys and values crossed",
            "keys and values are crossed: append k_new to cache_k and v_new to cache_v.",
            lambda ck, cv, kn, vn: (torch.cat((cv, vn), dim=2), torch.cat((ck, kn), dim=2))),
    Mistake("value not appended",
            "the keys gained the new token but the values did not: v_all must be "
            "torch.cat((cache_v, v_new), dim=2), or the query reads T + 1 keys and only T values.",
            lambda ck, cv, kn, vn: (torch.cat((ck, kn), dim=2), cv)),
    Mistake("new key appended to the values",
            "k_new was appended to the value cache: v_all = torch.cat((cache_v, v_new), dim=2), "
            "with v_new, the new token's value.",
            lambda ck, cv, kn, vn: (torch.cat((ck, kn), dim=2), torch.cat((cv, kn), dim=2))),
    Mistake("torch.stack instead of torch.cat", _STACK,
            lambda ck, cv, kn, vn: (torch.stack((ck, kn), dim=2), torch.stack((cv, vn), dim=2))),
)


def _pair(out):
    """The answer's ``(k_all, v_all)`` as two arrays; ``...`` left in means not attempted."""
    if out is Ellipsis or (isinstance(out, (tuple, list)) and any(o is Ellipsis for o in out)):
        raise NotAttempted("append_step: not attempted yet: replace each ... with your line.")
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise CheckFailed("append_step: return two tensors, (k_all, v_all); got "
                          f"{type(out).__name__}.")
    pair = tuple(as_numbers(o) for o in out)
    if any(getattr(o, "ndim", 4) == 5 for o in pair):  # what torch.stack gives
        raise CheckFailed(f"append_step: {_STACK}")
    return pair


def check_append_step(answer, behaviour: str | None = None) -> str:
    """``answer(cache_k, cache_v, k_new, v_new) -> (k_all, v_all)``: the new token's
    ``(B, H_kv, 1, dh)`` appended after the cached ``(B, H_kv, T, dh)``, on the time axis."""
    __tracebackhide__ = True
    if answer is None or answer is Ellipsis or not callable(answer):
        return run_check("append_step", answer, _reference, APPEND_CASES)  # its own message

    def on_copies(*tensors):  # an answer that writes into its inputs cannot spoil a case
        return answer(*(t.clone() for t in tensors))

    return run_check("append_step", on_copies, lambda *a: _pair(_reference(*a)), APPEND_CASES,
                     [Mistake(m.name, m.sentence, lambda *a, f=m.compute: _pair(f(*a)), m.raises)
                      for m in APPEND_MISTAKES], behaviour, prepare=_pair)
