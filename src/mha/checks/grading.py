"""Grading outside the learner's reach: record in the kernel, judge in the grader.

Under ``nbgrader autograde`` the hidden line of a graded cell is one call,
``_grading.record("softmax", softmax, behaviour="stable")``: it runs the answer on every
case of that behaviour (those the learner's check shows and those only grading runs) and
publishes what came out, case by case, as display data of type :data:`MIME` (the output,
or the error's type and message, the rule breaks and input writes the watchers saw). It
compares nothing. The grader's own process (``course/mha_grading.py``) reads those records
from the executed notebook and calls :func:`judge_records`, which rebuilds the cases from
its own copy of this package and compares; then it replaces the cell's outputs with the
verdict. Nothing an answer cell patches in the kernel (NumPy, builtins, these modules,
``sys.modules``) reaches that comparison, and the kernel never holds a hidden assertion to
read or print.

What a submission can still do in its kernel is publish records of its own: a forged record
carries outputs, which the grader compares with its own reference, so forging needs the
right outputs, i.e. a working answer. Grading flags records that do not fit (a second
record for one case, a label that is not the case's) for the instructor.
"""

from __future__ import annotations

import base64
import json

import numpy as np

from ._core import (
    CheckFailed,
    NotAttempted,
    RecordedError,
    bfloat16_values,
    error_text,
    judge_prediction,
)
from ._tasks import Observation, Task, observe

MIME = "application/vnd.mha.grading+json"

# Bound when this module is imported (the setup cell), before any answer cell runs.
_asarray = np.asarray
_b64encode = base64.b64encode
_dumps = json.dumps
_isinstance = isinstance
_type = type
_len = len
_str = str
_repr = repr
try:
    from IPython.display import publish_display_data as _publish
except ImportError:  # plain Python: records go to stdout as JSON lines
    _publish = None


def tasks() -> dict:
    """Every graded task by the name its hidden line uses."""
    from . import basics, debugging, later, masks_grads, memory, pytorch

    return {
        "read_out": basics.READ_OUT,
        "softmax": basics.SOFTMAX,
        "project_and_score": basics.SCORES,
        "head_scores": basics.HEAD_SCORES,
        "causal_mask": masks_grads.CAUSAL,
        "masked_attention": masks_grads.MASKED,
        "to_sdpa": masks_grads.TO_SDPA,
        "softmax_grad": masks_grads.SOFTMAX_BACKWARD,
        "attention_grads": masks_grads.attention_backward_task,
        "split_heads": later.SPLIT,
        "merge_heads": later.MERGE,
        "cache_mask": later.CACHE_MASK,
        "weight_transfer": later.WEIGHT_TRANSFER,
        "unpack_in_proj": pytorch.UNPACK_IN_PROJ,
        "dropout_module": pytorch.DROPOUT_MODULE,
        "online_softmax": memory.ONLINE,
        "leaks_future": debugging.LEAK_TEST,
    }


def task_for(name: str, behaviour: str | None) -> Task:
    task = tasks()[name]
    return task(behaviour) if callable(task) and not _isinstance(task, Task) else task


# -- values as JSON ----------------------------------------------------------------------------

def encode(x, depth: int = 0):
    """A JSON-able description of an answer's output (arrays as raw bytes, exactly).

    Only plain types are read; no method of the output's own class runs (a tensor subclass
    whose ``numpy()`` lies, a tuple subclass whose ``__iter__`` does): anything else is
    recorded by its type name and fails the comparison."""
    if depth > 4:
        return _opaque(x)
    kind = _type(x)
    if kind.__module__ == "torch" and kind.__name__ in ("Tensor", "Parameter"):
        import torch

        t = torch.Tensor.cpu(torch.Tensor.detach(x))
        if _str(t.dtype) == "torch.bfloat16":  # NumPy has none: its numbers, marked
            return {**encode(torch.Tensor.numpy(torch.Tensor.float(t)), depth + 1),
                    "bfloat16": True}
        return encode(torch.Tensor.numpy(t), depth + 1)
    if x is None or kind in (bool, int, str):
        return x
    if kind is float:
        return {"float": _repr(x)}
    if _isinstance(x, tuple):
        return {"tuple": [encode(i, depth + 1) for i in tuple.__iter__(x)]}
    if _isinstance(x, list):
        return {"list": [encode(i, depth + 1) for i in list.__iter__(x)]}
    if _isinstance(x, (np.ndarray, np.generic)):
        arr = _asarray(x)
        if arr.dtype.kind in "biufc":
            data = np.ascontiguousarray(arr)
            return {"array": arr.dtype.str, "shape": list(arr.shape),
                    "scalar": _isinstance(x, np.generic),
                    "b64": _b64encode(data.tobytes()).decode("ascii")}
    return _opaque(x)


def _opaque(x) -> dict:
    return {"repr": f"an object of type {_type(x).__name__}", "type": _type(x).__name__}


class Opaque:
    """An output grading cannot rebuild (a custom object): shown by its repr."""

    def __init__(self, text: str, type_name: str):
        self.text, self.type_name = text, type_name

    def __repr__(self) -> str:
        return self.text


def decode(x):
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, dict):
        if "float" in x:
            return float(x["float"])
        if "tuple" in x:
            return tuple(decode(i) for i in x["tuple"])
        if "list" in x:
            return [decode(i) for i in x["list"]]
        if "array" in x:
            arr = np.frombuffer(base64.b64decode(x["b64"]), dtype=np.dtype(x["array"]))
            arr = arr.reshape(x["shape"]).copy()
            if x.get("bfloat16") and arr.dtype == np.float32:
                return bfloat16_values(arr)  # compared at bfloat16's precision
            return arr[()] if x.get("scalar") else arr
        if "repr" in x:
            return Opaque(str(x["repr"]), str(x.get("type", "object")))
    return Opaque(repr(x)[:200], type(x).__name__)


# -- in the kernel -----------------------------------------------------------------------------

def _emit(record: dict) -> None:
    if _publish is None:
        print(_dumps({MIME: record}))
    else:
        _publish({MIME: record, "text/plain": f"[grading record {record.get('case', '')}]"})


def record(task_name: str, answer, behaviour: str | None = None) -> None:
    """Run ``answer`` on every case of the task and publish one record per case."""
    task = task_for(task_name, behaviour)
    cases = task.cases_for(behaviour, include_hidden=True)
    head = {"task": task_name, "behaviour": behaviour}
    if answer is None or answer is Ellipsis or not callable(answer):
        _emit({**head, "answer": "none" if answer is None or answer is Ellipsis else
               _repr(answer)[:200]})
        return
    for i, case in enumerate(cases):
        obs = observe(task, answer, case, catch_interrupts=True)
        rec = {**head, "case": i, "label": case.label, "stopped": obs.stopped,
               "broken": [list(b) for b in obs.broken], "mutated": list(obs.mutated)}
        if obs.err is not None:
            rec["error"] = [_type(obs.err).__name__, _str(obs.err)[:500]]
        else:
            try:
                rec["out"] = encode(obs.out)
            except Exception as err:  # an output that breaks on conversion
                rec["error"] = [_type(err).__name__, f"its output could not be read: {err}"]
        _emit(rec)
        if obs.stopped:
            break


def record_answer(key: str, value) -> None:
    """Publish a predicted value for the question ``key``."""
    try:
        encoded = encode(value)
    except Exception as err:
        encoded = {"repr": f"an unreadable value ({error_text(err)})", "type": "object"}
    _emit({"task": key, "behaviour": None, "value": encoded})


# -- in the grader -----------------------------------------------------------------------------

class RecordProblem(Exception):
    """Records that do not fit what the graded cell asked for: flagged for review."""


def judge_records(task_name: str, behaviour: str | None, records: list[dict],
                  name: str | None = None) -> str:
    """The verdict on what ``record`` published for one graded cell (in the grader's
    process): the passing line, or :class:`CheckFailed` / :class:`NotAttempted`; raises
    :class:`RecordProblem` when the records do not fit. ``name``: the variable the cell
    graded (a task that names the learner's function uses it, as the visible check does)."""
    task = task_for(task_name, behaviour)
    cases = task.cases_for(behaviour, include_hidden=True)
    _fit(records, task_name, behaviour)
    if any("answer" in r for r in records):
        (rec,) = [r for r in records if "answer" in r]
        if rec["answer"] == "none":
            raise NotAttempted(f"{task.name}: not attempted yet (it is still None).")
        raise CheckFailed(f"{task.name}: expected a function; got {rec['answer']}.")
    by_case: dict[int, dict] = {}
    for rec in records:
        i = rec.get("case")
        if not isinstance(i, int) or not 0 <= i < len(cases):
            raise RecordProblem(f"a grading record for case {i!r}, which {task_name} lacks")
        if rec.get("label") != cases[i].label:
            raise RecordProblem(f"a grading record for case {i} labelled {rec.get('label')!r}, "
                                f"not {cases[i].label!r}")
        if i in by_case:
            raise RecordProblem(f"two grading records for case {i} of {task_name}")
        by_case[i] = rec
    observations = []
    for i in range(len(cases)):
        if i not in by_case:
            break
        rec = by_case[i]
        obs = Observation(stopped=str(rec.get("stopped") or ""),
                          broken=[tuple(b) for b in rec.get("broken", [])],
                          mutated=list(rec.get("mutated", [])))
        if rec.get("error"):
            obs.err = RecordedError(*[str(t) for t in rec["error"][:2]])
        else:
            obs.out = decode(rec.get("out"))
        observations.append(obs)
        if obs.stopped:
            break
    if len(observations) < len(cases) and not (observations and observations[-1].stopped):
        if not observations:
            raise RecordProblem("no grading record at all")
    return task.verdict(cases, observations, name=name)


def judge_answer(key: str, records: list[dict]) -> str:
    """The verdict on a recorded prediction (in the grader's process)."""
    from . import PREDICTIONS

    _fit(records, key, None)
    if len(records) != 1 or "value" not in records[0]:
        raise RecordProblem(f"{len(records)} grading records for the answer {key}")
    value = decode(records[0]["value"])
    if isinstance(value, Opaque):
        raise CheckFailed(f"{PREDICTIONS[key].name}: answer with a number, a list, a tuple, "
                          f"True / False or a letter; got {value!r}.")
    return judge_prediction(PREDICTIONS[key], value)


def _fit(records: list[dict], task: str, behaviour: str | None) -> None:
    for rec in records:
        if (not isinstance(rec, dict) or rec.get("task") != task
                or rec.get("behaviour") != behaviour):
            raise RecordProblem("a grading record for another task "
                                f"({rec.get('task') if isinstance(rec, dict) else rec!r})")
