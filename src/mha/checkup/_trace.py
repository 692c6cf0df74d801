"""Watch one call of a module at torch's operator level: what it projects, what it softmaxes.

:func:`trace` runs ``run()`` under a ``TorchDispatchMode`` that records

* **scores**: the input of every softmax over a ``(..., T, T)`` tensor (with its
  ``dim``), and the scores an SDPA kernel computes (recomputed from its
  ``q, k, attn_mask, is_causal, scale``), each as ``(B, h, T, T)`` in float64;
* **used**: for each, whether its weights reach a matrix product (the output
  path) or are only returned, and the weights that entered that product;
* **projections**: every matrix product whose rows are the rows of ``x``,
  reshaped to ``(B, T, D)``, in call order (biases added later are found by
  :func:`projection_candidates` among the module's 1-D parameters).

It reads operators, never attribute names, so it sees ``nn.Linear``, a packed
``(3C, C)`` layer, bare parameters, ``einsum``, ``nn.MultiheadAttention`` and
SDPA alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
_SOFTMAX = {aten._softmax.default, aten._safe_softmax.default} \
    if hasattr(aten, "_safe_softmax") else {aten._softmax.default}
_PRODUCTS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default,
             aten.matmul.default}
_SDPA = [getattr(aten, n).default for n in (
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_attention_math",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "scaled_dot_product_attention") if hasattr(aten, n)]


@dataclass
class Event:
    """One attention step seen inside the call."""

    scores: torch.Tensor  # (B, h, T, T) float64, the softmax's input
    weights: torch.Tensor  # (B, h, T, T) float64, the softmax's output
    dim: int | None  # the softmax's dim, counted from the end (-1 = keys); None for SDPA
    used: bool = False  # its weights reach a matrix product
    entered: torch.Tensor | None = None  # (B, h, T, T): the weights as they entered it
    sdpa: bool = False


@dataclass
class Trace:
    events: list = field(default_factory=list)
    projections: list = field(default_factory=list)  # (B, T, D) float64, call order
    x: torch.Tensor | None = None  # (B, T, C) float64, the input


def _storage(t):
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


class _Watcher(TorchDispatchMode):
    def __init__(self, x, t):
        super().__init__()
        c = x.shape[-1]  # x is (B, T, C); the module may see its rows in either order
        self.orders = {True: x.reshape(-1, c), False: x.transpose(0, 1).reshape(-1, c)}
        self.b, self.t = x.shape[0], t
        self.trace = Trace(x=x.detach().double())
        self.taint = {}  # storage pointer -> index of the event its values come from
        self.keep = []  # hold every tensor so no storage pointer is reused during the call

    def _to_bt(self, out, batch_major):  # (B*T, D) rows in the order seen -> (B, T, D)
        d = out.shape[-1]
        y = out.detach().reshape(-1, d).double()
        if batch_major:
            return y.reshape(self.b, self.t, d)
        return y.reshape(self.t, self.b, d).transpose(0, 1)

    def _order_of_x(self, a):
        """True / False: ``a`` holds the rows of x batch-major / time-major; None: not x."""
        rows = self.orders[True]
        if not isinstance(a, torch.Tensor) or a.dim() < 2 or a.numel() != rows.numel() \
                or a.shape[-1] != rows.shape[-1] or a.dtype != rows.dtype:
            return None
        flat = a.detach().reshape(-1, a.shape[-1])
        return next((k for k, r in self.orders.items() if torch.equal(flat, r)), None)

    def _add_event(self, scores, weights, dim, sdpa=False):
        n = scores.numel() // (self.t * self.t)
        b = self.b if n % self.b == 0 else 1
        shape = (b, n // b, self.t, self.t)
        ev = Event(scores.detach().double().reshape(shape), weights.detach().double()
                   .reshape(shape), dim, used=sdpa, sdpa=sdpa)
        if sdpa:
            ev.entered = ev.weights
        self.trace.events.append(ev)
        return len(self.trace.events) - 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:  # watching must never change or break the call
            self._watch(func, args, kwargs, out)
        except Exception:  # noqa: BLE001, S110 - a shape the watcher does not know: skip it
            pass
        return out

    def _watch(self, func, args, kwargs, out):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        tensors += [a for a in kwargs.values() if isinstance(a, torch.Tensor)]
        self.keep.append(out)
        t = self.t
        if func in _SOFTMAX and args[0].dim() >= 2 and args[0].shape[-2:] == (t, t):
            dim = args[1] - args[0].dim() if args[1] >= 0 else args[1]
            i = self._add_event(args[0], out, dim)
            self._mark(out, i)
            return
        if func in _SDPA and args[0].shape[-2] == t:
            self._sdpa(args, kwargs)
            return
        if func in _PRODUCTS:
            for a in tensors:
                i = self.taint.get(_storage(a))
                if i is not None and not self.trace.events[i].used and a.shape[-2:] == (t, t):
                    ev = self.trace.events[i]
                    ev.used = True
                    ev.entered = a.detach().double().reshape(ev.weights.shape)
            mats = [a for a in tensors if a.dim() >= 2]
            orders = [self._order_of_x(a) for a in mats]
            order = next((o for o in orders if o is not None), None)
            c = self.orders[True].shape[-1]
            # a projection: x times one (C, D) matrix (no batch axis: a weight, not x^T)
            weight = [a for a, o in zip(mats, orders, strict=True) if o is None]
            if order is not None and isinstance(out, torch.Tensor) and len(weight) == 1 and \
                    out.numel() % (self.b * t) == 0 and \
                    weight[0].numel() == c * (out.numel() // (self.b * t)):
                self.trace.projections.append(self._to_bt(out, order))
                self._proj_out, self._proj_order = _storage(out), order
            return
        # an op on a tainted tensor (dropout, masked_fill, view) passes the taint on
        found = [self.taint[p] for p in map(_storage, tensors) if p in self.taint]
        if found and isinstance(out, torch.Tensor):
            self._mark(out, found[0])
        # a bias added to the last projection: keep the sum instead
        if func in (aten.add.Tensor,) and self.trace.projections and len(tensors) == 2 and \
                getattr(self, "_proj_out", None) in map(_storage, tensors) and \
                isinstance(out, torch.Tensor) and out.numel() == tensors[0].numel():
            d = self.trace.projections[-1].shape[-1]
            if out.shape[-1] == d:
                self.trace.projections[-1] = self._to_bt(out, self._proj_order)
            elif out.dim() == 4 and out.shape[0] == self.b and out.shape[2] == t and \
                    out.shape[1] * out.shape[3] == d and self._proj_order:  # (B, H, T, dh)
                self.trace.projections[-1] = out.detach().double().transpose(1, 2) \
                    .reshape(self.b, t, d)
            self._proj_out = _storage(out)

    def _mark(self, out, i):
        if isinstance(out, torch.Tensor):
            p = _storage(out)
            if p is not None:
                self.taint[p] = i

    def _sdpa(self, args, kwargs):
        q, k = args[0], args[1]
        mask, causal, scale = kwargs.get("attn_mask"), kwargs.get("is_causal", False), \
            kwargs.get("scale")
        # the kernels' schemas differ: read the arguments after q, k, v by type;
        # a float after the is_causal bool is the scale (the one before it, dropout_p)
        seen_bool = False
        for a in args[3:]:
            if isinstance(a, bool):
                causal, seen_bool = causal or a, True
            elif isinstance(a, torch.Tensor) and a.dim() >= 2:
                mask = a
            elif isinstance(a, float) and seen_bool and scale is None:
                scale = a
        qd, kd = q.detach().double(), k.detach().double()
        s = qd @ kd.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
        if causal:
            s = s.masked_fill(torch.ones(self.t, self.t, dtype=torch.bool).triu(1), -math.inf)
        if mask is not None:
            m = mask.detach()
            s = s.masked_fill(~m, -math.inf) if m.dtype == torch.bool else s + m.double()
        self._add_event(s, s.softmax(dim=-1), None, sdpa=True)


def trace(run, x):
    """``(result of run(), Trace)``: run the call once under the watcher; ``x`` is (B, T, C)."""
    watcher = _Watcher(x, x.shape[1])
    with torch.enable_grad(), watcher:  # grad on: nn.MultiheadAttention skips its fused path
        result = run()
    return result, watcher.trace


def projection_candidates(trace_: Trace, c: int, module) -> list:
    """The ``(B, T, C)`` tensors that may be Q, K or V, with their biases.

    A ``(B, T, 3C)`` product is cut in three; narrow products of one width
    (one per head, as a list of single-head modules makes them) are grouped by
    call order into three ``(B, T, H dh)`` tensors. Each comes as it was and
    plus each 1-D parameter of its width (a bias added with ``+``).
    """
    outs = [trace_.x] if trace_.x.shape[-1] == c else []  # Q = K = x, no projection
    narrow = [p for p in trace_.projections if p.shape[-1] < c]
    for p in trace_.projections:
        d = p.shape[-1]
        if d == c:
            outs.append(p)
        elif d == 3 * c:
            outs.extend(p.split(c, dim=-1))
    if narrow and len(narrow) % 3 == 0 and all(p.shape == narrow[0].shape for p in narrow):
        outs.extend(torch.cat(narrow[i::3], dim=-1) for i in range(3))
    if narrow and not outs:
        outs.extend(narrow)
    biases = [p.detach().double().reshape(-1) for p in module.parameters()
              if p.dim() == 1 or (p.dim() == 2 and p.numel() <= 3 * c and c % p.shape[-1] == 0
                                  and p.shape[0] * p.shape[1] in (c, 3 * c))]
    cands = []
    for o in outs:
        cands.append(o)
        for bias in biases:
            if bias.shape[0] == o.shape[-1]:
                cands.append(o + bias)
            elif bias.shape[0] == 3 * o.shape[-1]:
                cands.extend(o + part for part in bias.split(o.shape[-1]))
    return cands
