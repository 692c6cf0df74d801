"""A check-up for anyone's self-attention module: named checks, each pass, FAIL or not run.

``checkup(module)`` calls the module on small random inputs ``x (B, T, C)`` and
measures what it does. It reads the call from the module's ``forward``
signature (:func:`adapt`: ``(x)``, ``(x, mask=)``, ``(x, key_padding_mask=,
is_causal=)``, ``(query, key, value, ...)`` like ``nn.MultiheadAttention``,
``batch_first`` either way) and watches the call at the level of torch's
operators (:mod:`mha.checkup._trace`: the softmax's input and ``dim``, SDPA's
arguments, the products of ``x`` with the projections, whatever their names:
three ``nn.Linear``, one packed ``(3C, C)`` layer, bare parameters, ``einsum``).

Each :class:`CheckResult` is ``passed`` True, False, or None (**not run**: the
module offers no way to run it, and the detail says what to pass). A check
fails only on what it measured; its detail says what, and ``mistakes`` names
the classic mistakes (:data:`MISTAKES`) the measurement points to.
Tolerances follow the dtype and the size of the values compared:
``tol = k * eps(dtype) * largest |value|`` (``k`` in :data:`TOL_EPS`), or ``atol=``
when given.

The check-up runs in ``eval()`` (one check in ``train()``) and leaves the
module's mode, its ``.grad`` and torch's global random state as it found them.
From a terminal: ``python -m mha.checkup file.py:ClassName --d-model 16 --heads 4``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import torch

from .._checkup_adapters import Adapter, adapt, mask_meaning
from .._wrap import wrap_for_display
from . import _checks

__all__ = ["CHECKS", "MISTAKES", "TOL_EPS", "Adapter", "CheckResult", "Report", "adapt",
           "checkup", "checkup_table"]

# check name -> what it measures
CHECKS = {
    "causality": "asked for causal attention, position i reads positions 0..i only "
                 "(change later tokens: outputs up to i stay)",
    "padding invariance": "a padded sequence's real positions ignore its padded tokens",
    "batch independence": "changing one sequence leaves the others' outputs as they were",
    "positions stay apart": "without a mask, permuting the tokens permutes the outputs "
                            "(each head's rows are positions)",
    "scale": "the scores fed to softmax are q.k / sqrt(dh) of the module's own projections",
    "rows sum to 1": "each query's weights sum to 1 over the keys",
    "weights path": "asking for the weights changes nothing, and the weights returned are "
                    "the weights the output used",
    "eval determinism": "two calls in eval() give the same output",
    "score spread": "at initialisation the scores of a row spread by at most 3 (std)",
    "gradients": "every parameter reaches the loss",
    "finite in training": "in train() the output has no NaN or inf (a NaN already in eval() "
                          "is left to causality)",
}

# mistake -> what it is (the words a failed check's ``mistakes`` point to)
MISTAKES = {
    "scale sqrt(d_model)": "scores divided by sqrt(d_model), not sqrt(dh): weights too flat "
                           "by a factor sqrt(H) in the exponent",
    "no scale": "scores not divided by sqrt(dh): softmax saturates as dh grows",
    "wrong scale": "scores divided by something other than sqrt(dh)",
    "mask inverted": "the mask blocks what it should allow (mask == 0 on a True = blocked "
                     "mask, or a keep-mask passed where True means blocked)",
    "mask after softmax": "weights zeroed after the softmax: rows sum to less than 1 and the "
                          "blocked scores still sit in the denominator",
    "mask ignored": "the causal mask never reaches the scores",
    "causal off by one": "the causal mask starts one diagonal off (triu(0) blocks the "
                         "diagonal; triu(2) lets the next position in)",
    "padding on the query axis": "the key padding mask blocks query rows ((B, 1, Tq, 1)), "
                                 "not key columns ((B, 1, 1, Tk))",
    "padding not on the keys": "padded keys reach real positions: the mask is ignored or "
                               "broadcast as (Tq, Tk) (a (B, Tk) mask needs (B, 1, 1, Tk))",
    "softmax over the wrong axis": "softmax over the queries (dim=-2), not the keys",
    "view split": "heads split with view(B, H, T, dh) straight from (B, T, C), without the "
                  "transpose: each head's rows mix several positions",
    "sequences mix": "a batch_first mix-up, scores (H, B, T, T) from a wrong transpose, or a "
                     "(B*H) mask tiled with repeat, not repeat_interleave",
    "dropout at inference": "dropout that eval() cannot switch off (F.dropout(..., "
                            "training=True), SDPA's dropout_p)",
    "weights path differs": "the weights returned are computed apart from the output",
    "large init": "projections drawn far too large (std 1, not about 0.02): softmax one-hot",
    "unused parameter": "a parameter never reaches the loss (a projection used twice, or "
                        "built and skipped)",
    "dropout on masked scores": "dropout on the scores before softmax: -inf * 0 = NaN",
    "fully blocked row": "a row with every key blocked: softmax of all -inf is NaN",
    "input changed in place": "the forward pass changes its input tensor in place (x.mul_, "
                              "x += ...): the caller's tokens are changed",
    "non-finite output": "NaN or inf on ordinary inputs with no mask (a division by zero, "
                         "a log of 0, an overflow)",
}

TOL_EPS = {torch.float64: 64, torch.float32: 32, torch.float16: 16, torch.bfloat16: 8}


@dataclass(frozen=True)
class CheckResult:
    """``passed``: True, False, or None (not run); ``detail``: what was measured.

    ``mistakes``: keys of :data:`MISTAKES` the measurement points to (a failed
    check only).
    """

    name: str
    passed: bool | None
    detail: str
    mistakes: tuple = ()

    @property
    def likely(self) -> str:
        """The named mistakes of a failed check, in words ('' when it did not fail)."""
        if self.passed is not False:
            return ""
        return "; ".join(f"{m}: {MISTAKES[m]}" for m in self.mistakes) or CHECKS[self.name]

    def __str__(self) -> str:
        """The check's line of the report, and its ``likely:`` line when it failed (wrapped
        between words, :func:`mha._wrap.wrap_for_display`)."""
        mark = {True: "pass", False: "FAIL", None: "not run"}[self.passed]
        lines = [f"{mark}  {self.name}: {self.detail}"]
        if self.passed is False:
            lines.append(f"      likely: {self.likely}")
        return wrap_for_display("\n".join(lines))


@dataclass
class Report:
    """The check-up's results, one :class:`CheckResult` per name of :data:`CHECKS`."""

    results: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def __getitem__(self, name: str) -> CheckResult:
        return next(r for r in self.results if r.name == name)

    @property
    def failed(self) -> list:
        return [r.name for r in self.results if r.passed is False]

    @property
    def not_run(self) -> list:
        return [r.name for r in self.results if r.passed is None]

    @property
    def mistakes(self) -> list:
        """Every mistake a failed check names, each once, in check order."""
        found = []
        for r in self.results:
            found += [m for m in r.mistakes if r.passed is False and m not in found]
        return found

    @property
    def passed(self) -> bool:
        return not self.failed

    def __str__(self) -> str:
        """One line per note and per check (wrapped between words at 72 columns, so that
        JupyterLab never breaks a word: :func:`mha._wrap.wrap_for_display`)."""
        lines = [f"# {note}" for note in self.notes] + [str(r) for r in self.results]
        return wrap_for_display("\n".join(lines))

    __repr__ = __str__


MAX_SEED = 2**63 - 1  # torch's generator takes a signed 64-bit seed
MAX_ATOL = 0.05  # above it a change as large as a leaked token's can count as equal
MAX_SIZE = 64  # batch and length: the check-up calls the module ~length + 30 times


def _check_number(name, value, *, integer):
    ok = isinstance(value, numbers.Integral if integer else numbers.Real) and \
        not isinstance(value, bool)
    if integer:
        if not ok or not 0 <= value <= MAX_SEED:
            raise ValueError(f"{name} must be an int >= 0 (at most 2**63 - 1, torch's "
                             f"largest seed); got {value!r}.")
    elif not ok or not math.isfinite(float(value)) or not 0 < value <= MAX_ATOL:
        raise ValueError(f"atol must be a finite number with 0 < atol <= {MAX_ATOL} (0 counts "
                         "rounding as a change; a larger atol counts a change as large as a "
                         f"leaked token's as equal); got {value!r}.")


def _tensors_checked(module):
    """The module's dtype; refuses parameters off the CPU or of mixed float dtypes."""
    tensors = [*module.parameters(), *module.buffers()]
    devices = sorted({t.device.type for t in tensors} - {"cpu"})
    if devices:
        raise ValueError(f"the module's parameters are on {devices[0]}; the check-up runs on "
                         "CPU tensors: move it with module.to('cpu') (a meta module needs "
                         "module.to_empty(device='cpu') and its initialisation first).")
    dtypes = sorted({str(t.dtype) for t in module.parameters() if t.is_floating_point()})
    if len(dtypes) > 1:
        raise ValueError(f"the module's parameters have mixed dtypes ({', '.join(dtypes)}); "
                         "cast it to one with module.to(dtype) first.")
    return next((t.dtype for t in tensors if t.is_floating_point()), torch.float32)


def _not_run_report(notes, why):
    """Every check not run, for a module the check-up could call but not measure."""
    return Report([CheckResult(n, None, f"not run: {why}") for n in CHECKS], notes)


def checkup(module, *, batch: int = 5, length: int = 5, seed: int = 0,
            atol: float | None = None, d_model: int | None = None,
            n_heads: int | None = None, batch_first: bool | None = None,
            mask_means: str | None = None, causal: bool | None = None) -> Report:
    """Run every check of :data:`CHECKS` on ``module`` (see the module docstring).

    Inputs: ``x (batch, length, C)`` standard normal in the module's dtype,
    drawn from ``seed``; key padding of lengths ``length, length - 1, ...``
    (at least 2). ``batch == length`` (the default) lets a ``(B, Tk)`` mask
    broadcast as ``(Tq, Tk)`` silently, as it would in a learner's run.
    ``d_model``, ``n_heads``, ``batch_first``: found on the module (attributes,
    its first ``nn.Linear``, the number of score maps it computes) unless given.
    ``mask_means``, ``causal``: see :func:`adapt`.

    Refuses (``ValueError``) ``batch`` outside 2..64, ``length`` outside 3..64, an
    ``atol`` that is not a number in (0, 0.05], a ``seed`` that is not an int in
    0..2**63 - 1, parameters off the CPU or of mixed dtypes, and a module whose
    plain call raises ``TypeError`` or changes the shape (before any check,
    naming what it got). A plain call that raises anything else is reported:
    every check not run, saying what it raised.
    """
    for name, value, least in (("batch", batch, 2), ("length", length, 3)):
        if isinstance(value, bool) or not isinstance(value, int) or \
                not least <= value <= MAX_SIZE:
            raise ValueError(f"{name} must be an int from {least} to {MAX_SIZE} (the check-up "
                             f"calls the module about length + 30 times; small inputs show "
                             f"every mistake it names); got {value!r}.")
    _check_number("seed", seed, integer=True)
    if atol is not None:
        _check_number("atol", atol, integer=False)
    a = adapt(module, d_model=d_model, n_heads=n_heads, batch_first=batch_first,
              mask_means=mask_means, causal=causal)
    dtype = _tensors_checked(a.module)
    g = torch.Generator().manual_seed(int(seed))
    x = torch.randn(batch, length, a.d_model, generator=g, dtype=torch.float64).to(dtype)
    x_other = 2 * torch.randn(x.shape, generator=g, dtype=torch.float64).to(dtype)
    lengths = torch.tensor([max(length - i, 2) for i in range(batch)])
    pad = torch.arange(length) >= lengths[:, None]  # (B, T), True = padded
    eps = torch.finfo(dtype).eps
    report = Report(notes=list(a.notes))
    training = a.module.training
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(int(seed))
        a.module.eval()
        try:
            ctx = _checks.Context(a, x, x_other, pad, atol, TOL_EPS.get(dtype, 32) * eps, g)
            raised = _checks.probe(ctx)
            if raised:
                return _not_run_report(report.notes, raised)
            if "returned" in getattr(a, "_seen", {}):
                report.notes.append(a._seen["returned"])
            _checks.settle_layout(ctx, report.notes)
            _checks.settle_call(ctx, report.notes)
            if getattr(a, "_mask_name", None) and a._meaning["mask"] is None and \
                    a._style["causal"] != "flag":
                found = mask_meaning(a, x, ctx.differ)
                other = {"keep": "blocked", "blocked": "keep"}.get(found)
                report.notes.append(
                    f"{a._mask_name}=: read as an additive float mask (0 kept, -inf blocked) "
                    "(from the module's behaviour: no bool reading is causal; pass "
                    "mask_means= to insist)" if found == "additive" else
                    f"{a._mask_name}=: True read as {found} (from the module's behaviour; if "
                    f"yours means True = {other}, its mask is inverted: pass "
                    f"mask_means={other!r} to check it so)" if found else
                    f"{a._mask_name}=: no reading of True gives a causal output; used True "
                    "= blocked")
                a._meaning["mask"] = found or "blocked"
            _checks.settle(ctx, report.notes)
            _checks.preconditions(ctx)
            for name, check in _checks.CHECK_FUNCTIONS.items():
                try:
                    passed, detail, *named = check(ctx)
                except _checks.ShapeChanged as err:  # a shape it does not take: no measurement
                    passed, named = None, []
                    detail = f"not run: {err}: the module does not take the mask this check " \
                        "passes (pass an Adapter that calls it)"
                except Exception as err:  # noqa: BLE001 - the check-up's own call failed
                    passed, named = None, []
                    detail = "not run: calling the module for this check raised " + \
                        f"{type(err).__name__}: " + str(err).strip().splitlines()[0][:120]
                report.results.append(CheckResult(name, passed, detail,
                                                  tuple(named[0]) if named else ()))
        finally:
            a.module.train(training)
    return report


def checkup_table(reports: dict) -> str:
    """``{row name: Report}`` as text: one row per module, one column per check (numbered).

    ``.`` pass, ``X`` fail, ``-`` not run; a legend line names the columns.
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
