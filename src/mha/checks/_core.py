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

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np


class CheckFailed(AssertionError):
    """An exercise check that did not pass; its message is meant for the learner."""


class NotAttempted(CheckFailed):
    """The answer is still the stub (``raise NotImplementedError``) or ``None``."""


@dataclass(frozen=True)
class Case:
    """One input to the answer: ``args`` (and ``kwargs``), a short description."""

    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    behaviour: str = "values"


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: ``compute`` gives what that mistake returns on a case."""

    name: str  # the mistake as tests and docs/TEACHING.md name it
    sentence: str  # what the learner reads
    compute: Callable


_BROKEN = object()  # an output that raised, or holds NaN / inf


def _quiet_call(fn, case: Case):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*_copied(case.args), **case.kwargs)


def _copied(args: tuple) -> tuple:
    """Copies of array inputs, so an answer that writes into its input cannot
    change the next comparison."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def as_numbers(x):
    """An answer's output as a NumPy array (torch tensors and tuples too), or ``x``
    itself when it is not array-like (e.g. ``None``)."""
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu().numpy()
    if isinstance(x, (tuple, list)) and any(type(i).__module__.startswith("torch") for i in x):
        x = [as_numbers(i) for i in x]
    try:
        arr = np.asarray(x)
    except Exception:  # ragged tuples and the like
        return x
    return x if arr.dtype == object else arr


def same(got, expected, atol: float = 1e-6, rtol: float = 1e-6) -> bool:
    """Same shape, same kind (bool vs number) and close values; NaN equals NaN.

    ``expected`` may be a tuple of arrays (e.g. ``(output, weights)``): then
    ``got`` must be a tuple of the same length, compared item by item.
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
    g, e = g.astype(np.float64), e.astype(np.float64)
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
    """``got`` is what ``predicted`` (a mistake's output) would give: both broken
    (an error, NaN, +inf) or the same values."""
    if _broken(got) or _broken(predicted):
        return _broken(got) and _broken(predicted)
    return same(got, predicted, atol)


def show(x, width: int = 300) -> str:
    """A short, readable rendering of an input or output."""
    if x is _BROKEN:
        return "an error"
    if isinstance(x, tuple):
        return "(" + ", ".join(show(i, width // max(len(x), 1)) for i in x) + ")"
    arr = as_numbers(x)
    if isinstance(arr, np.ndarray):
        text = np.array2string(arr, precision=4, suppress_small=True, threshold=40,
                               separator=", ")
        text = " ".join(text.split())
        shape = f" (shape {arr.shape}, {arr.dtype})" if arr.ndim else ""
        return (text if len(text) <= width else text[: width - 3] + "...") + shape
    text = repr(x)
    return text if len(text) <= width else text[: width - 3] + "..."


def _outcome(fn, case: Case, name: str):
    """The answer's output on ``case``, ``_BROKEN`` plus the error if it raised."""
    try:
        return _quiet_call(fn, case), None
    except NotImplementedError:
        raise NotAttempted(
            f"{name}: not attempted yet: it still raises NotImplementedError; replace that "
            "line with your code, run its cell, then run this cell again."
        ) from None
    except Exception as err:  # the learner's own error, reported as "got"
        return _BROKEN, err


def run_check(
    name: str,
    answer,
    reference: Callable,
    cases: Sequence[Case],
    mistakes: Sequence[Mistake] = (),
    behaviour: str | None = None,
    atol: float = 1e-6,
    prepare: Callable | None = None,
) -> str:
    """Compare ``answer`` with ``reference`` on ``cases``; raise :class:`CheckFailed`
    naming the mistake or the first differing case, or print one line and return it.

    ``behaviour`` keeps only the cases tagged with it (one graded cell checks
    one behaviour). ``prepare`` turns the answer's raw output into the
    compared form (e.g. a tuple of arrays) and may raise ``CheckFailed`` with
    a message of its own (a wrong return type).
    """
    __tracebackhide__ = True
    if answer is None or answer is Ellipsis:
        raise NotAttempted(f"{name}: not attempted yet (it is still {answer!r}).")
    if not callable(answer):
        raise CheckFailed(f"{name}: expected a function; got {show(answer)}.")
    chosen = [c for c in cases if behaviour is None or c.behaviour == behaviour]
    if not chosen:
        raise ValueError(f"{name}: no cases for behaviour {behaviour!r}.")
    results = []
    for case in chosen:
        got, err = _outcome(answer, case, name)
        if err is None and prepare is not None:
            got = prepare(got)
        expected = reference(*_copied(case.args), **case.kwargs)
        results.append((case, got, err, expected))
    wrong = [r for r in results if r[2] is not None or not same(r[1], r[3], atol)]
    if not wrong:
        line = f"{name}: correct on {len(chosen)} case{'s' * (len(chosen) != 1)}."
        print(line)
        return line
    for mistake in mistakes:
        if _matches(mistake, wrong, atol):
            raise CheckFailed(f"{name}: {mistake.sentence}")
    case, got, err, expected = wrong[0]
    got_text = f"an error: {type(err).__name__}: {err}" if err is not None else show(got)
    inputs = ", ".join(show(a, 120) for a in case.args)
    raise CheckFailed(
        f"{name}: wrong on case '{case.label}'.\n  input:    {inputs}\n"
        f"  expected: {show(expected)}\n  got:      {got_text}"
    )


def _matches(mistake: Mistake, wrong, atol: float) -> bool:
    """The answer behaves like ``mistake`` on every case it gets wrong."""
    for case, got, _err, expected in wrong:
        try:
            predicted = _quiet_call(mistake.compute, case)
        except Exception:
            predicted = _BROKEN
        if consistent(predicted, expected, atol):
            return False  # this mistake gives the right answer here, the learner did not
        if not consistent(got, predicted, atol):
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
        line = f"{pred.name}: correct."
        print(line)
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
        line = f"{pred.name}: correct."
        print(line)
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
