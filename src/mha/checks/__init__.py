"""Instant feedback for the graded exercises (``notebooks/exercises/``).

Each ``check_*`` function takes a learner's answer (a function), runs it on
several cases, edge cases included, and compares it with the package's
reference. A correct answer prints one short line; a wrong one raises
:class:`CheckFailed` (an ``AssertionError``, so nbgrader marks the cell
failed) whose message names the known mistake it matches, or else shows the
first case that differs (input, expected, got); an answer that still raises
``NotImplementedError`` gets "not attempted yet". :func:`check_answer` does
the same for a predicted value, by key (``"ex03.weights_dk64"``).

In IPython (a notebook) a failed check, or any failed ``assert`` once this
module is imported, shows its message only, without a traceback; so does an untouched
stub (a cell's ``raise NotImplementedError()``), as one line that says what to do. A passing check's
line is printed once (the returned :class:`~mha.checks._core.Passed` string is not
echoed again as ``Out``).

Grading does not trust these functions in the learner's kernel: under ``nbgrader
autograde`` they do nothing, and the hidden line of each test cell records the
answer's outputs (:mod:`mha.checks.grading`) for the grader to judge in its own
process (``course/mha_grading.py``, docs/TEACHING.md). ``importlib.reload(mha.checks)``
re-executes every submodule too. Nothing in the package imports this module.
"""

from __future__ import annotations

import importlib
import linecache
import sys

from .._wrap import wrap_for_display
from . import _core, _tasks, basics, debugging, grading, later, masks_grads, memory, pytorch

if getattr(sys.modules[__name__], "_loaded_once", False):  # a reload: refresh the submodules
    for _module in (_core, _tasks, basics, masks_grads, later, memory, pytorch, debugging,
                    grading):
        importlib.reload(_module)
    # modules imported on their own (your_turn, the lessons' turns_*) hold the old
    # CheckFailed and run_check: refresh them too, or a check's failure escapes their except
    for _name in sorted(n for n in sys.modules if n.startswith(__name__ + ".")):
        if _name.rsplit(".", 1)[1] not in ("_core", "_tasks", "basics", "masks_grads", "later",
                                           "memory", "pytorch", "debugging", "grading"):
            importlib.reload(sys.modules[_name])
_loaded_once = True

from ._core import CheckFailed, NotAttempted, check_prediction  # noqa: E402
from .basics import check_head_scores, check_read_out, check_scores, check_softmax  # noqa: E402
from .debugging import check_leak_test  # noqa: E402
from .later import (  # noqa: E402
    check_cache_mask,
    check_inference,
    check_merge_heads,
    check_split_heads,
    check_weight_transfer,
)
from .masks_grads import (  # noqa: E402
    check_attention_backward,
    check_causal_mask,
    check_masked_attention,
    check_softmax_backward,
    check_to_sdpa,
)
from .memory import check_online_softmax  # noqa: E402
from .pytorch import check_dropout_module, check_unpack_in_proj  # noqa: E402
from .your_turn import NOT_YET  # noqa: E402

PREDICTIONS = {**basics.PREDICTIONS, **masks_grads.PREDICTIONS, **later.PREDICTIONS,
               **memory.PREDICTIONS, **debugging.PREDICTIONS}

__all__ = [
    "CheckFailed",
    "NotAttempted",
    "PREDICTIONS",
    "check_answer",
    "check_attention_backward",
    "check_cache_mask",
    "check_causal_mask",
    "check_dropout_module",
    "check_head_scores",
    "check_inference",
    "check_leak_test",
    "check_masked_attention",
    "check_merge_heads",
    "check_online_softmax",
    "check_read_out",
    "check_scores",
    "check_softmax",
    "check_softmax_backward",
    "check_split_heads",
    "check_to_sdpa",
    "check_unpack_in_proj",
    "check_weight_transfer",
]


def check_answer(key: str, value) -> str:
    """Check a predicted ``value`` for the exercise question ``key`` (see ``PREDICTIONS``)."""
    if key not in PREDICTIONS:
        raise KeyError(f"no exercise question {key!r}; known: {sorted(PREDICTIONS)}.")
    return check_prediction(PREDICTIONS[key], value)


def _show_message_only(shell, etype, value, tb, tb_offset=None):
    """IPython handler: a failed check or assert shows its message, not a traceback; an
    untouched exercise stub shows one line that says what to do (:func:`_untouched_stub`).

    It covers every ``AssertionError`` of the notebook that imported this module, so a
    graded cell's hidden asserts show what failed but never their source lines. A check's
    failure starts "Not yet: ", as a lesson's your-turn verdict does (:func:`shown_label`),
    not with the exception's class name. The shown
    text is wrapped between words (:func:`mha._wrap.wrap_for_display`); the exception and
    its message stay as raised. A ``NotImplementedError`` stays an error output named
    ``NotImplementedError`` (a cell tagged ``raises-exception`` still raises; nbgrader still
    marks the cell failed); only what JupyterLab shows, the traceback, is the one line.
    Any other ``NotImplementedError`` gets IPython's usual traceback.
    """
    if not issubclass(etype, AssertionError):  # a NotImplementedError: the stub's line?
        message = _untouched_stub(shell, etype, value, tb)
        if message is None:  # raised by anything else: IPython's own traceback
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset,
                                running_compiled_code=True)
            return None
        stb = [wrap_for_display(message)]
    else:
        stb = [wrap_for_display(shown_label(etype, value))]
    shell._showtraceback(etype, value, stb)  # an error output, as nbgrader expects
    return stb


def shown_label(etype, value) -> str:
    """The text shown for a failed assert: ``Not yet: <message>`` for a check's failure (a
    :class:`CheckFailed`, an untouched stub's :class:`NotAttempted` included), as a lesson's
    your-turn cell says it (``your_turn.NOT_YET``), not the exception's class name;
    ``<ClassName>: <message>`` for any other ``AssertionError`` (a learner's own ``assert``).
    A ``CheckFailed`` of before an ``importlib.reload(mha.checks)`` (a check imported by name
    earlier) counts too."""
    if any(c.__name__ == "CheckFailed" and c.__module__ == _core.__name__
           for c in etype.__mro__):
        return NOT_YET + str(value)
    return f"{etype.__name__}: {value}"


# the line nbgrader's generate_assignment puts in every answer cell (its `code_stub`)
STUB_LINES = ("raise NotImplementedError()", "raise NotImplementedError")


def _untouched_stub(shell, etype, value, tb) -> str | None:
    """The one line to show when ``value`` comes from an exercise's stub: a bare
    ``NotImplementedError`` raised by the line ``raise NotImplementedError()`` of a notebook
    cell, at its top level (a prediction) or in a function defined there (an answer someone
    called). ``None`` for any other ``NotImplementedError`` (one with a message, or raised in
    a module, e.g. by a library), which keeps its traceback."""
    if etype is not NotImplementedError or value.args or tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    cell_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if cell_name is None or cell_name(code.co_filename) is None:  # not a cell of this kernel
        return None
    line = linecache.getline(code.co_filename, tb.tb_lineno).split("#")[0].strip()
    if line not in STUB_LINES:
        return None
    if code.co_name == "<module>":
        return (NOT_YET + "this cell still has the line `raise NotImplementedError()`; "
                "replace it with your answer, then run the cell again.")
    return (NOT_YET + f"{code.co_name} still has the line `raise NotImplementedError()`; "
            "replace it with your code, run its cell, then run this cell again.")


def _install_ipython_handler() -> None:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and hasattr(shell, "set_custom_exc"):
        shell.set_custom_exc((AssertionError, NotImplementedError), _show_message_only)


_install_ipython_handler()
