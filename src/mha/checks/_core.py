"""The machinery of every exercise check: run the answer, compare, name the mistake.

A check runs the learner's answer on a list of :class:`Case` objects and
compares each result with the reference's. Then, in this order:

* the answer still raises ``NotImplementedError`` (or a prediction is still
  ``None``): "not attempted yet";
* every case agrees: one short line is printed;
* the answer agrees, on every case, with one of the check's known
  :class:`Mistake` functions (where the two differ from the reference): that
  mistake's sentence;
* otherwise: the first case that differs, with its input, the expected value
  and what the answer gave.

A failed check raises :class:`CheckFailed`, an ``AssertionError``, so that
nbgrader marks the cell failed. The comparisons here use plain NumPy
arithmetic, never ``np.testing``, so an answer cell that replaces
``np.testing.assert_allclose`` with a no-op changes nothing.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._wrap import wrap_for_display


class CheckFailed(AssertionError):
    """An exercise check that did not pass; its message is meant for the learner."""


def say(line: str) -> None:
    """Print a check's line as the learner reads it: wrapped between words
    (:func:`mha._wrap.wrap_for_display`); the returned line itself stays one line."""
    print(wrap_for_display(line))


class Passed(str):
    """The line a passing check prints and returns.

    IPython does not echo it a second time as ``Out[...]`` when a check call ends a cell.
    """

    def _ipython_display_(self) -> None:
        return None


def graded_elsewhere() -> bool:
    """True while ``nbgrader autograde`` runs the notebook: the grade then comes from the
    recorded outputs, judged outside the kernel (:mod:`mha.checks.grading`), so a visible
    check does nothing there (an answer that hangs costs one time limit, not two)."""
    return os.environ.get("NBGRADER_EXECUTION") == "autograde"


class RecordedError(Exception):
    """An exception an answer raised, as recorded in the kernel: its type name and message."""

    def __init__(self, type_name: str, message: str):
        super().__init__(message)
        self.type_name = type_name


def error_text(err: BaseException) -> str:
    """``TypeError: message`` for a live or a recorded exception."""
    name = err.type_name if isinstance(err, RecordedError) else type(err).__name__
    message = str(err)
    if len(message) > 300:
        message = message[:297] + "..."
    return f"{name}: {message}" if message else name


class NotAttempted(CheckFailed):
    """The answer is still the stub (``raise NotImplementedError``) or ``None``."""


@dataclass(frozen=True)
class Case:
    """One input to the answer: ``args`` (and ``kwargs``), a short description."""

    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    behaviour: str = "values"
    hidden: bool = False  # run by grading only, never by the check in the learner's cell


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: ``compute`` gives what that mistake returns on a case."""

    name: str  # the mistake as tests and docs/TEACHING.md name it
    sentence: str  # what the learner reads
    compute: Callable
    # a fragment of the error this mistake raises where ``compute`` raises (e.g. NumPy's
    # "could not be broadcast"): an answer that raises it on those cases, and matches
    # ``compute`` on the others, is named too; empty: only wrong values are named
    raises: str = ""


_BROKEN = object()  # an output that raised (in a mistake's computation), or holds NaN / inf

NOT_ATTEMPTED = ("not attempted yet: it still raises NotImplementedError; replace that "
                 "line with your code, run its cell, then run this cell again.")


def _quiet_call(fn, case: Case):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*_copied(case.args), **case.kwargs)


def _copied(args: tuple) -> tuple:
    """Copies of array inputs, so an answer that writes into its input cannot
    change the next comparison."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


class BFloat16Values(np.ndarray):
    """The numbers of a bfloat16 answer, held as float32 (NumPy has no bfloat16): a
    comparison allows bfloat16's rounding (:func:`tolerance`), not float32's."""

    eps = 2.0 ** -7  # bfloat16 keeps 8 significant bits

    def __array_finalize__(self, obj) -> None:  # a slice or a copy stays bfloat16
        return None


def bfloat16_values(arr: np.ndarray) -> BFloat16Values:
    return np.ascontiguousarray(arr, dtype=np.float32).view(BFloat16Values)


def as_numbers(x):
    """An answer's output as a NumPy array (torch tensors and tuples too), or ``x``
    itself when it is not array-like (e.g. ``None``). A bfloat16 tensor becomes
    :class:`BFloat16Values` (its float32 numbers, compared at bfloat16's precision)."""
    if isinstance(x, BFloat16Values):
        return x
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":  # NumPy has no bfloat16
            return bfloat16_values(x.float().numpy())
        x = x.numpy()
    if isinstance(x, (tuple, list)) and any(type(i).__module__.startswith("torch") for i in x):
        x = [as_numbers(i) for i in x]
    try:
        arr = np.asarray(x)
    except Exception:  # ragged tuples and the like
        return x
    return x if arr.dtype == object else arr


# How many of its own epsilons an answer in a narrow float type may be off, relative to the
# size of the expected values: float32 (eps 2^-23) gets 64; the 16-bit types (float16, eps
# 2^-10; bfloat16, eps 2^-7) get 8, since 64 of their epsilons (0.06, 0.5) would let
# mistakes through. Right bfloat16 and float16 answers of the tasks that allow torch were off
# by at most 1.05 of their eps on the graded cases (tests/test_grading.py asserts under 2);
# a bfloat16 softmax fails the large-logits cases honestly: 999 and 1000 are one bfloat16.
ULPS = {4: 64, 2: 8}


def answer_eps(got) -> float:
    """The rounding unit of the float type the answer computed in (0 for float64)."""
    if isinstance(got, BFloat16Values):
        return got.eps
    kind = got.dtype if got.dtype.kind == "f" else np.dtype(np.float64)
    return float(np.finfo(kind).eps) if kind.itemsize < 8 else 0.0


def tolerance(got: np.ndarray, expected: np.ndarray, atol: float, rtol: float):
    """``(atol, rtol)`` for comparing ``got`` with ``expected``: at least the given ones, and
    wide enough for rounding in the answer's own float type (float32: 64 epsilons; float16
    and bfloat16: 8), scaled by the size of the expected values (a right float32 answer
    passes)."""
    eps = answer_eps(got)
    if eps:
        ulps = ULPS[2] if eps >= 2.0 ** -10 else ULPS[4]
        finite = np.abs(expected[np.isfinite(expected)]) if expected.size else np.zeros(0)
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        atol = max(atol, ulps * eps * scale)
        rtol = max(rtol, ulps * eps)
    return atol, rtol


def same(got, expected, atol: float = 1e-6, rtol: float = 1e-6) -> bool:
    """Same shape, same kind (bool vs number) and close values; NaN equals NaN.

    ``expected`` may be a tuple of arrays (e.g. ``(output, weights)``): then
    ``got`` must be a tuple of the same length, compared item by item. The tolerance
    follows the answer's float type (:func:`tolerance`).
    """
    if isinstance(expected, tuple):
        return (isinstance(got, (tuple, list)) and len(got) == len(expected)
                and all(same(g, e, atol, rtol) for g, e in zip(got, expected, strict=True)))
    g, e = as_numbers(got), np.asarray(expected)
    if not isinstance(g, np.ndarray) or g.shape != e.shape:
        return False
    if (g.dtype == bool) != (e.dtype == bool):
        return False
    if e.dtype == bool:
        return bool(np.all(g == e))
    if g.dtype.kind not in "iuf" or e.dtype.kind not in "iuf":
        return False
    atol, rtol = tolerance(g, e.astype(np.float64), atol, rtol)
    g, e = g.view(np.ndarray).astype(np.float64), e.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(e)
    finite = np.isfinite(e)
    with np.errstate(invalid="ignore"):
        close = finite & (np.abs(g - e) <= atol + rtol * np.abs(np.where(finite, e, 0.0)))
    close |= both_nan | ((g == e) & np.isinf(e))
    return bool(np.all(close))


def _broken(out) -> bool:
    if out is _BROKEN:
        return True
    items = out if isinstance(out, (tuple, list)) else (out,)
    for item in items:
        arr = as_numbers(item)
        if isinstance(arr, np.ndarray) and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            # -inf entries are a legitimate output of an additive mask; NaN and +inf are not
            if np.any(np.isnan(arr)) or np.any(np.isposinf(arr)):
                return True
    return False


def consistent(got, predicted, atol: float) -> bool:
    """``got`` is what ``predicted`` (a mistake's output) would give: both hold NaN or
    +inf, or the same values. A mistake whose own computation raised predicts nothing."""
    if predicted is _BROKEN:
        return False
    if _broken(got) or _broken(predicted):
        # both hold NaN / +inf: the same entries must be broken, the others close (two
        # different mistakes that each give a NaN somewhere are not the same mistake)
        return _broken(got) and _broken(predicted) and same(got, predicted, atol)
    return same(got, predicted, atol)


def show(x, width: int = 300) -> str:
    """A short, readable rendering of an input or output."""
    if x is _BROKEN:
        return "an error"
    if isinstance(x, tuple):
        return "(" + ", ".join(show(i, width // max(len(x), 1)) for i in x) + ")"
    if callable(x) and hasattr(x, "__name__"):
        return f"the function {x.__name__}"
    arr = as_numbers(x)
    if isinstance(arr, np.ndarray):
        text = np.array2string(arr, precision=4, suppress_small=True, threshold=40,
                               separator=", ")
        text = " ".join(text.split())
        dtype = "bfloat16" if isinstance(arr, BFloat16Values) else arr.dtype
        shape = f" (shape {arr.shape}, {dtype})" if arr.ndim else ""
        return (text if len(text) <= width else text[: width - 3] + "...") + shape
    text = repr(x)
    return text if len(text) <= width else text[: width - 3] + "..."


def _outcome(fn, case: Case, name: str):
    """The answer's output on ``case``, or ``_BROKEN`` and the error it raised."""
    try:
        return _quiet_call(fn, case), None
    except NotImplementedError:
        raise NotAttempted(f"{name}: {NOT_ATTEMPTED}") from None
    except Exception as err:  # the learner's own error, reported as such
        return _BROKEN, err


def case_label(case: Case) -> str:
    """How a message names a case: hidden ones say that only grading runs them."""
    return f"'{case.label}'" + (" (a case only grading runs, not your test cell)"
                                if case.hidden else "")


def run_check(
    name: str,
    answer,
    reference: Callable,
    cases: Sequence[Case],
    mistakes: Sequence[Mistake] = (),
    behaviour: str | None = None,
    atol: float = 1e-6,
    prepare: Callable | None = None,
    *,
    include_hidden: bool = False,
) -> str:
    """Compare ``answer`` with ``reference`` on ``cases``; raise :class:`CheckFailed`
    naming the mistake or the first differing case, or print one line and return it.

    ``behaviour`` keeps only the cases tagged with it (one graded cell checks
    one behaviour). ``prepare`` turns the answer's raw output into the
    compared form (e.g. a tuple of arrays) and may raise ``CheckFailed`` with
    a message of its own (a wrong return type). Cases marked ``hidden`` run only
    with ``include_hidden`` (grading).
    """
    __tracebackhide__ = True
    chosen = [c for c in cases if (behaviour is None or c.behaviour == behaviour)
              and (include_hidden or not c.hidden)]
    if not chosen:
        raise ValueError(f"{name}: no cases for behaviour {behaviour!r}.")
    if graded_elsewhere():
        return Passed(f"{name}: graded by nbgrader.")
    if answer is None or answer is Ellipsis:
        raise NotAttempted(f"{name}: not attempted yet (it is still {answer!r}).")
    if not callable(answer):
        raise CheckFailed(f"{name}: expected a function; got {show(answer)}.")
    outcomes = [_outcome(answer, case, name) for case in chosen]
    return judge(name, chosen, outcomes, reference, mistakes, atol, prepare)


def judge(name: str, cases: Sequence[Case], outcomes, reference: Callable,
          mistakes: Sequence[Mistake] = (), atol: float = 1e-6,
          prepare: Callable | None = None) -> str:
    """The verdict on ``outcomes`` (``(output, error or None)`` per case), wherever they were
    computed: the learner's kernel (a check) or a recording judged by the grader."""
    __tracebackhide__ = True
    results = []
    for case, (got, err) in zip(cases, outcomes, strict=True):
        if err is not None and (isinstance(err, NotImplementedError) or getattr(
                err, "type_name", "") == "NotImplementedError"):
            raise NotAttempted(f"{name}: {NOT_ATTEMPTED}") from None
        if err is None and prepare is not None:
            got = prepare(got)
        expected = reference(*_copied(case.args), **case.kwargs)
        results.append((case, got, err, expected))
    wrong = [r for r in results if r[2] is not None or not same(r[1], r[3], atol)]
    if not wrong:
        n = len(cases)
        line = Passed(f"{name}: correct on {n} case{'s' * (n != 1)}.")
        say(line)
        return line
    raised = [r for r in wrong if r[2] is not None]
    valued = [r for r in wrong if r[2] is None]
    if raised:
        by_error = next((m for m in mistakes if m.raises and _matches(m, wrong, atol)
                         and _agrees(m, results, atol)), None)
        if by_error is not None:
            case, _, err, _ = raised[0]
            raise CheckFailed(f"{name}: {by_error.sentence}\n  (your function raised "
                              f"{error_text(err)} on case {case_label(case)})")
    named = next((m for m in mistakes if valued and _matches(m, valued, atol)
                  and _agrees(m, results, atol)), None)
    if raised:
        case, _, err, _ = raised[0]
        inputs = ", ".join(show(a, 120) for a in case.args)
        text = (f"{name}: your function raised {error_text(err)}\n  on case "
                f"{case_label(case)}\n  input:    {inputs}")
        if named is not None:
            text += f"\n  and on the other cases: {named.sentence}"
        raise CheckFailed(text)
    if named is not None:
        raise CheckFailed(f"{name}: {named.sentence}")
    case, got, _, expected = wrong[0]
    inputs = ", ".join(show(a, 120) for a in case.args)
    raise CheckFailed(
        f"{name}: wrong on case {case_label(case)}.\n  input:    {inputs}\n"
        f"  expected: {show(expected)}\n  got:      {show(got)}"
    )


def _matches(mistake: Mistake, wrong, atol: float) -> bool:
    """The answer behaves like ``mistake`` on every case it gets wrong: the same values, or
    (a mistake with ``raises``) the same error where the mistake's code raises."""
    for case, got, err, expected in wrong:
        try:
            predicted = _quiet_call(mistake.compute, case)
        except Exception:
            predicted = _BROKEN
        if err is not None:
            if not (mistake.raises and predicted is _BROKEN and mistake.raises in str(err)):
                return False
            continue
        if predicted is not _BROKEN and consistent(predicted, expected, atol):
            return False  # this mistake gives the right answer here, the learner did not
        if not consistent(got, predicted, atol):
            return False
    return True


def _agrees(mistake: Mistake, results, atol: float) -> bool:
    """The mistake gives what the answer gave on the cases the answer gets right too
    (where the mistake's code runs and gives finite values): a mistake is named only when it
    explains every case.
    (Set 10's "never flags" matched, on the leaks it missed, a test that looks at one
    position only, though that test flags the unmasked model.)"""
    for case, got, err, expected in results:
        if err is not None or not same(got, expected, atol):
            continue
        try:
            predicted = _quiet_call(mistake.compute, case)
        except Exception:
            continue
        # a mistake that overflows where the answer did not (a softmax without the shift,
        # in np.longdouble) is no evidence either way: only a finite prediction counts
        if not _broken(predicted) and not consistent(got, predicted, atol):
            return False
    return True


@dataclass(frozen=True)
class Prediction:
    """A value the learner predicts; known wrong values map to a sentence."""

    name: str
    expected: object
    atol: float = 1e-9
    known_wrong: tuple = ()  # ((value, sentence), ...)
    hint: str = ""


def check_prediction(pred: Prediction, got) -> str:
    """Compare a predicted value with ``pred.expected``."""
    __tracebackhide__ = True
    if graded_elsewhere():
        return Passed(f"{pred.name}: graded by nbgrader.")
    return judge_prediction(pred, got)


def judge_prediction(pred: Prediction, got) -> str:
    """The verdict on a predicted value, wherever it was recorded."""
    __tracebackhide__ = True
    if got is None or got is Ellipsis:
        raise NotAttempted(f"{pred.name}: not attempted yet (it is still {got!r}).")
    expected = pred.expected
    if isinstance(expected, str):  # a multiple-choice letter
        if not isinstance(got, str):
            raise CheckFailed(f"{pred.name}: answer with a letter in quotes, e.g. \"a\"; "
                              f"got {show(got)}.")
        got = got.strip().lower()
        for value, sentence in pred.known_wrong:
            if got == value:
                raise CheckFailed(f"{pred.name}: {sentence}")
        if got != expected:
            raise CheckFailed(f"{pred.name}: not this one; got {got!r}. {pred.hint}".rstrip())
        line = Passed(f"{pred.name}: correct.")
        say(line)
        return line
    if isinstance(expected, bool):
        ok = isinstance(got, (bool, np.bool_)) and bool(got) == expected
        if not ok and not isinstance(got, (bool, np.bool_)):
            raise CheckFailed(f"{pred.name}: answer True or False; got {show(got)}.")
    elif isinstance(expected, tuple) and all(isinstance(i, int) for i in expected):
        ok = isinstance(got, (tuple, list)) and tuple(int(i) for i in got) == expected
    else:
        ok = same(np.asarray(got, dtype=float) if _numeric(got) else got,
                  np.asarray(expected, dtype=float), pred.atol, 0.0)
    if ok:
        line = Passed(f"{pred.name}: correct.")
        say(line)
        return line
    for value, sentence in pred.known_wrong:
        if _numeric(got) and _numeric(value) and np.shape(got) == np.shape(value) and same(
            np.asarray(got, dtype=float), np.asarray(value, dtype=float), pred.atol, 0.0
        ):
            raise CheckFailed(f"{pred.name}: {sentence}")
        if isinstance(value, tuple) and isinstance(got, (tuple, list)) and tuple(got) == value:
            raise CheckFailed(f"{pred.name}: {sentence}")
    hint = f" {pred.hint}" if pred.hint else ""
    raise CheckFailed(f"{pred.name}: not this one; got {show(got)}.{hint}")


def _numeric(x) -> bool:
    try:
        arr = np.asarray(x)
    except Exception:
        return False
    return arr.dtype.kind in "iuf" and not isinstance(x, bool)
