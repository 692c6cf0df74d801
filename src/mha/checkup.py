"""A check-up for any self-attention module: named invariance tests, pass or fail.

``checkup(module)`` runs :data:`CHECKS` on small random inputs and returns a
:class:`Report`; each failed check names the likely mistake. The module is
called through an :class:`Adapter`, whose one call signature is

    ``run(x (B, T, C), causal: bool, key_padding_mask (B, T) bool or None,
    need_weights: bool) -> (out (B, T, C), weights or None)``

with masks in the package convention (bool, **True = blocked** / padded) and
weights ``(B, H, T, T)`` or head-averaged ``(B, T, T)``. :func:`adapt` builds it for

* :class:`mha.layers.MultiHeadAttention` and any module with its call
  ``module(x, key_padding_mask=..., need_weights=..., is_causal=...)``
  (the classes of :mod:`mha.broken`); ``impl="sdpa"`` returns no weights;
* ``nn.MultiheadAttention`` and any module called
  ``module(query, key, value, attn_mask=..., key_padding_mask=...,
  need_weights=..., average_attn_weights=...)`` (:func:`qkv_adapter`), whose bool
  masks also mean True = not allowed; ``batch_first=False`` is honoured.

For another call, build ``Adapter(module, d_model, n_heads, run)`` yourself.
The check-up runs in ``eval()`` (one check in ``train()``), leaves the module's
mode, its ``.grad`` and torch's global random state as it found them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ._checkup_adapters import Adapter, _probe, adapt, package_adapter, qkv_adapter

__all__ = ["CHECKS", "Adapter", "CheckResult", "Report", "adapt", "checkup", "checkup_table",
           "package_adapter", "qkv_adapter"]

# check name -> the likely mistake when it fails
CHECKS = {
    "causality": "the future is not blocked: mask inverted (mask == 0 on a bool mask, or our "
                 "mask passed to SDPA uninverted), mask after softmax, or heads split with view",
    "padding invariance": "padded keys reach real positions: a (B, Tk) padding mask broadcast "
                          "as (Tq, Tk) (needs (B, 1, 1, Tk)), or the mask after softmax",
    "batch independence": "sequences mix: a batch_first mix-up, scores (H, B, T, T) from a wrong "
                          "transpose, or a (B*H) mask tiled with repeat, not repeat_interleave",
    "loop over heads": "differs from one head at a time: heads split with view, a wrong "
                       "scale (sqrt(d_model), not sqrt(dh)), or a projection used twice",
    "rows sum to 1": "softmax over the wrong axis, or the mask applied after the softmax",
    "eval determinism": "dropout at inference: SDPA's dropout_p is not switched off by eval()",
    "need_weights invariance": "asking for the weights changes the output: the weights path "
                               "computes something else",
    "score spread": "softmax saturates at initialisation: projections drawn far too large "
                    "(std 1, not about 0.02) or the 1/sqrt(dh) scale missing",
    "gradients": "a parameter never reaches the loss (its .grad stays None)",
    "finite in training": "NaN in train(): dropout applied to masked scores (-inf * 0 = NaN)",
}
SPREAD_LIMIT = 3.0  # std of a row of scores at initialisation above this saturates softmax


@dataclass(frozen=True)
class CheckResult:
    """``passed``: True, False, or None (skipped); ``detail``: what was measured."""

    name: str
    passed: bool | None
    detail: str

    @property
    def likely(self) -> str:
        return CHECKS[self.name] if self.passed is False else ""


@dataclass
class Report:
    """The check-up's results, one :class:`CheckResult` per name of :data:`CHECKS`."""

    results: list = field(default_factory=list)

    def __getitem__(self, name: str) -> CheckResult:
        return next(r for r in self.results if r.name == name)

    @property
    def failed(self) -> list:
        return [r.name for r in self.results if r.passed is False]

    @property
    def passed(self) -> bool:
        return not self.failed

    def __str__(self) -> str:
        lines = []
        for r in self.results:
            mark = {True: "pass", False: "FAIL", None: "skip"}[r.passed]
            lines.append(f"{mark}  {r.name}: {r.detail}")
            if r.passed is False:
                lines.append(f"      likely: {r.likely}")
        return "\n".join(lines)

    __repr__ = __str__


def _largest(a, b=None) -> float:
    d = a if b is None else (a - b)
    return float(d.abs().max()) if torch.isfinite(d).all() else math.inf


def _changed(diff: float, atol: float) -> tuple[bool, str]:
    if diff <= atol:
        return True, f"largest change under {atol:g}"
    return False, "NaN or inf in the output" if math.isinf(diff) else f"changed by {diff:.2g}"


def _loop_over_heads(x, p, n_heads):
    """One head at a time from the module's own weights: the reference output ``(B, T, C)``."""
    def lin(name, rows=slice(None)):
        bias = p.get(f"b_{name}")
        return x @ p[f"W_{name}"][rows].T + (0 if bias is None else bias[rows])
    dh = x.shape[-1] // n_heads
    heads = []
    for h in range(n_heads):
        rows = slice(h * dh, (h + 1) * dh)
        q, k, v = lin("Q", rows), lin("K", rows), lin("V", rows)  # each (B, T, dh)
        w = (q @ k.transpose(-2, -1) / math.sqrt(dh)).softmax(dim=-1)  # (B, T, T)
        heads.append(w @ v)
    cat = torch.cat(heads, dim=-1)  # (B, T, C)
    return cat @ p["W_O"].T + (0 if p.get("b_O") is None else p["b_O"])


def _run_checks(a: Adapter, x, pad, x_other, atol):
    run, (b, t, _) = a.run, x.shape
    cut = t // 2  # causality: tokens after position `cut` change

    def causality():
        changed = x.clone()
        changed[:, cut + 1:] = x_other[:, cut + 1:]
        d = _largest(run(x, True, None, False)[0][:, :cut + 1],
                     run(changed, True, None, False)[0][:, :cut + 1])
        return _changed(d, atol)

    def padding():
        out = run(x, False, pad, False)[0]
        diffs = [0.0]
        for i in range(b):
            n = int((~pad[i]).sum())
            if n < t:  # this sequence is padded: compare with it alone, unpadded
                diffs.append(_largest(out[i, :n], run(x[i:i + 1, :n], False, None, False)[0][0]))
        return _changed(max(diffs), atol)

    def batch():
        x2, pad2 = x.clone(), pad.clone()
        x2[0], pad2[0] = x_other[0], torch.arange(t) >= t - 2  # sequence 0: new tokens, padded
        d = _largest(run(x, False, pad, False)[0][1:], run(x2, False, pad2, False)[0][1:])
        return _changed(d, atol)

    def heads():
        if a.projections is None:
            return None, "no projections given"
        ref = _loop_over_heads(x, a.projections(), a.n_heads)
        return _changed(_largest(run(x, False, None, False)[0], ref), atol)

    def rows():
        w = run(x, True, None, True)[1] if a.has_weights else None
        if w is None:
            return None, "no weights returned"
        return _changed(_largest(w.sum(dim=-1) - 1), atol)

    def determinism():
        first, second = run(x, True, None, False)[0], run(x, True, None, False)[0]
        same = torch.allclose(first, second, rtol=0.0, atol=0.0, equal_nan=True)
        return same, "two calls equal" if same else "two calls in eval() differ"

    def need_weights():
        if not a.has_weights:
            return None, "no weights returned"
        return _changed(_largest(run(x, True, None, False)[0], run(x, True, None, True)[0]),
                        atol)

    def spread():
        w = run(x, False, None, True)[1] if a.has_weights else None
        if w is None:
            return None, "no weights returned"
        s = float(w.clamp_min(1e-30).log().std(dim=-1).mean())  # = std of a row of scores
        return s <= SPREAD_LIMIT, f"std of a row of scores {s:.2g} (limit {SPREAD_LIMIT:g})"

    def gradients():
        named = [(n, p) for n, p in a.module.named_parameters() if p.requires_grad]
        with torch.enable_grad():
            out = run(x.clone().requires_grad_(), True, None, False)[0]
            found = torch.autograd.grad(out.square().sum(), [p for _, p in named],
                                        allow_unused=True)
        unused = [n for (n, _), g in zip(named, found, strict=True) if g is None]
        return not unused, "every parameter reached" if not unused else f"no gradient: {unused}"

    def training():
        a.module.train()
        try:
            finite = bool(torch.isfinite(run(x, True, None, False)[0]).all())
        finally:
            a.module.eval()
        return finite, "finite" if finite else "NaN in the output in train()"

    return {"causality": causality, "padding invariance": padding, "batch independence": batch,
            "loop over heads": heads, "rows sum to 1": rows, "eval determinism": determinism,
            "need_weights invariance": need_weights, "score spread": spread,
            "gradients": gradients, "finite in training": training}


def checkup(module, *, batch: int = 5, length: int = 5, seed: int = 0,
            atol: float | None = None) -> Report:
    """Run every check of :data:`CHECKS` on ``module`` (see the module docstring).

    Inputs: ``x (batch, length, C)`` standard normal in the module's dtype,
    drawn from ``seed``, and sequences of lengths ``length, length - 1, ...``
    (at least 2) as key padding. ``batch == length`` (the default) lets a
    ``(B, Tk)`` mask broadcast as ``(Tq, Tk)`` silently, as it would in a
    learner's run; a check whose call raises fails and shows the error.
    ``atol``: 1e-5 for float32, 1e-10 for float64 by default.

    Refuses ``batch < 2`` or ``length < 3`` (``ValueError``), a module
    :func:`adapt` cannot wrap, and one whose first plain call raises
    ``TypeError``, returns no ``(out, weights)`` pair, or changes the shape
    (refused before any check, naming what it got).
    """
    for name, value, least in (("batch", batch, 2), ("length", length, 3)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an int >= {least}; got {value!r}.")
    a = adapt(module)
    dtype = next(a.module.parameters()).dtype
    atol = (1e-10 if dtype == torch.float64 else 1e-5) if atol is None else atol
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, a.d_model, generator=g, dtype=torch.float64).to(dtype)
    x_other = torch.randn(x.shape, generator=g, dtype=torch.float64).to(dtype)
    lengths = torch.tensor([max(length - i, 2) for i in range(batch)])
    pad = torch.arange(length) >= lengths[:, None]  # (B, T), True = padded
    training = a.module.training
    report = Report()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        a.module.eval()
        try:
            _probe(a, x)
            for name, check in _run_checks(a, x, pad, x_other, atol).items():
                try:
                    passed, detail = check()
                except Exception as err:  # a check whose call raises has failed
                    passed, detail = False, f"raised {type(err).__name__}: " + \
                        str(err).strip().splitlines()[0][:120]
                report.results.append(CheckResult(name, passed, detail))
        finally:
            a.module.train(training)
    return report


def checkup_table(reports: dict) -> str:
    """``{row name: Report}`` as text: one row per module, one column per check (numbered).

    ``.`` pass, ``X`` fail, ``-`` skipped; a legend line names the columns.
    """
    names = list(CHECKS)
    width = max(len(r) for r in reports) + 2
    legend = [f"{i}: {n}" for i, n in enumerate(names, 1)]
    lines = ["  ".join(legend[i:i + 4]) for i in range(0, len(legend), 4)]
    lines += ["".ljust(width) + "".join(f"{i:>3}" for i in range(1, len(names) + 1))]
    for row, report in reports.items():
        marks = {r.name: {True: ".", False: "X", None: "-"}[r.passed] for r in report.results}
        lines.append(row.ljust(width) + "".join(f"{marks[n]:>3}" for n in names))
    return "\n".join(lines)
