"""Run an exercise check inside a lesson's "your turn" cell.

A lesson's your-turn cell ends with ``your_turn(check_read_out, read_out)``:
the learner's function goes through the same check as the graded exercise
sets (its cases and its named mistakes), and the cell prints exactly one
verdict (one line, wrapped between words where it is wider than 72 columns):

* ``Correct: <the check's line>``
* ``Not yet: <what is wrong>`` (the named mistake, the first case that
  differs, or "not attempted yet" for the untouched stub).

It never raises, so a lesson with its stub still runs top to bottom (strict
nbval compares the stored ``Not yet`` line), and a learner sees a sentence,
not a traceback. ``tests/test_your_turn.py`` runs every lesson's stub and its
worked solution through this function.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable

from ._core import CheckFailed, NotAttempted, say

CORRECT = "Correct: "
NOT_YET = "Not yet: "


def verdict(check: Callable, answer, *args, **kwargs) -> str:
    """The one line :func:`your_turn` prints, without printing it."""
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet):  # the check prints its own line on success
            line = check(answer, *args, **kwargs)
    except NotAttempted as untouched:
        # the exercise sets' wording sends the learner to another cell; here the stub and
        # its check share one cell
        name = str(untouched).split(":", 1)[0]
        return NOT_YET + (f"{name}: not attempted yet: replace the `raise NotImplementedError` "
                          "line with your lines, then run this cell again.")
    except CheckFailed as failed:
        return NOT_YET + str(failed)
    except Exception as err:  # an answer that breaks the check itself: say what happened
        return NOT_YET + f"the check could not run your answer: {type(err).__name__}: {err}"
    text = line if isinstance(line, str) and line else quiet.getvalue().strip()
    return CORRECT + (text or "all cases agree.")


def your_turn(check: Callable, answer, *args, **kwargs) -> None:
    """Check ``answer`` with ``check`` (an ``mha.checks.check_*`` function) and
    print one verdict, ``Correct: ...`` or ``Not yet: ...`` (wrapped between words where it
    is wider than the output area: :func:`mha._wrap.wrap_for_display`); never raises."""
    say(verdict(check, answer, *args, **kwargs))
