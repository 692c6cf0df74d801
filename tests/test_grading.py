"""Grading's pieces without nbgrader: records, their judgement, the watchers, the code scan.

tests/test_grading_corpus.py runs the same through the real nbgrader flow.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mha.checks import _core, _tasks, grading

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "course"))
import mha_grading  # noqa: E402


def recorded(task, answer, behaviour=None, monkeypatch=None) -> list:
    records = []
    original = grading._emit
    grading._emit = lambda r: records.append(json.loads(json.dumps(r)))
    try:
        grading.record(task, answer, behaviour)
    finally:
        grading._emit = original
    return records


def verdict(task, answer, behaviour=None) -> str:
    try:
        return "passed: " + grading.judge_records(task, behaviour, recorded(task, answer,
                                                                             behaviour))
    except AssertionError as err:
        return str(err)


def softmax_rows(x, dtype=float):
    x = np.asarray(x, dtype=dtype)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("value", [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array([np.nan, -np.inf, 1.5]),
    np.array([[True, False]]), np.float64(0.25), np.bool_(True), (np.eye(2), [1, 2.5, "a"]),
    None, 3, "b"])
def test_a_recorded_value_comes_back_exactly(value):
    back = grading.decode(json.loads(json.dumps(grading.encode(value))))
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value, equal_nan=True)
    elif isinstance(value, tuple):
        assert np.array_equal(back[0], value[0]) and back[1] == value[1]
    else:
        assert back == value and type(back) is type(value)


def test_a_torch_output_is_recorded_as_its_numbers():
    torch = pytest.importorskip("torch")
    back = grading.decode(grading.encode(torch.ones(2, 3, dtype=torch.bfloat16)))
    assert back.dtype == np.float32 and back.shape == (2, 3)


def test_a_right_answer_passes_with_every_graded_case(capsys):
    line = verdict("softmax", softmax_rows, "stable")
    assert line == "passed: softmax: correct on 5 cases."  # 3 visible + 2 graded only


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_right_float32_or_float64_answer_gets_full_marks(dtype):
    for behaviour in ("values", "stable", "masked"):
        assert verdict("softmax", lambda x: softmax_rows(x, dtype), behaviour).startswith("passed")


def _in_torch(fn, dtype):
    torch = pytest.importorskip("torch")

    def answer(*args):
        out = fn(*(torch.as_tensor(np.asarray(a), dtype=getattr(torch, dtype)) for a in args))
        return out
    return answer


def _attention(q, k, v, mask, k_q_t=False):
    torch = pytest.importorskip("torch")
    s = (k @ q.transpose(-1, -2) if k_q_t else q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    w = torch.softmax(s.masked_fill(mask.bool(), float("-inf")), dim=-1)
    return w @ v, w


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_right_16_bit_torch_answer_gets_full_marks(dtype):
    assert verdict("masked_attention", _in_torch(_attention, dtype)).startswith("passed")
    assert verdict("softmax_grad", _in_torch(lambda p, g: p * (g - (p * g).sum(
        -1, keepdim=True)), dtype)).startswith("passed")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_wrong_16_bit_torch_answer_is_named(dtype):
    assert "transposed" in verdict("masked_attention", _in_torch(
        lambda *a: _attention(*a, k_q_t=True), dtype))
    assert "diagonal" in verdict("softmax_grad", _in_torch(lambda p, g: p * (1 - p) * g, dtype))


@pytest.mark.parametrize("dtype,eps", [("bfloat16", 2 ** -7), ("float16", 2 ** -10)])
def test_right_16_bit_answers_are_within_two_of_their_epsilons(dtype, eps):
    """What the 8-epsilon tolerance of _core.ULPS rests on (masked attention, 11 cases)."""
    task = grading.task_for("masked_attention", None)
    answer = _in_torch(_attention, dtype)
    worst = 0.0
    for case in task.cases_for(None, include_hidden=True):
        for got, want in zip(task.prepare(answer(*case.args)), task.reference(*case.args),
                             strict=True):
            got = _core.as_numbers(got).view(np.ndarray).astype(float)
            scale = max(1.0, float(np.abs(want).max()))
            worst = max(worst, float(np.abs(got - want).max()) / (eps * scale))
    assert worst < 2, worst
    assert _core.ULPS[2] >= 4 * worst


def test_a_softmax_in_longdouble_without_the_shift_fails_the_stability_cell():
    def no_shift(x):
        e = np.exp(np.asarray(x, dtype=np.longdouble))
        return (e / e.sum(axis=-1, keepdims=True)).astype(float)

    assert "max shift" in verdict("softmax", no_shift, "stable")


def test_a_softmax_shifted_by_the_global_maximum_is_named_by_grading_too():
    def global_shift(x):
        e = np.exp(x - x.max())
        return e / e.sum(axis=-1, keepdims=True)

    assert "shift each row by its own maximum" in verdict("softmax", global_shift, "stable")


def test_a_recorded_error_that_a_known_mistake_raises_is_named_by_grading():
    text = verdict("softmax_grad", lambda p, g: p * (g - (p * g).sum(axis=-1)))
    assert "keepdims=True" in text and "raised ValueError" in text, text


def test_a_mask_returned_as_a_list_is_refused_by_grading_too():
    text = verdict("causal_mask", lambda t: np.triu(np.ones((t, t), dtype=bool), 1).tolist())
    assert "you returned a Python list" in text, text


def test_patching_numpy_while_answering_changes_only_the_answer(monkeypatch):
    def cheat(x):
        np.abs = lambda *a, **k: 0.0  # the comparison does not run here
        return np.zeros(np.shape(x))

    original = np.abs
    try:
        records = recorded("softmax", cheat, "values")
    finally:
        np.abs = original
    with pytest.raises(_core.CheckFailed, match="wrong on case"):
        grading.judge_records("softmax", "values", records)


def test_an_answer_that_raises_is_told_so_with_its_type_and_message():
    def broken(x):
        raise TypeError("half done")

    text = verdict("softmax", broken, "values")
    assert "raised TypeError: half done" in text and "max shift" not in text


def test_a_forbidden_call_under_an_alias_is_named_by_its_rule():
    from mha import softmax as ready_made

    text = verdict("softmax", lambda x: ready_made(x), "values")
    assert "the task says do not call a ready-made softmax" in text


def test_a_stopped_answer_is_told_it_ran_past_the_time_limit():
    def stopped(x):
        raise KeyboardInterrupt

    assert "ran past the time limit" in verdict("softmax", stopped, "values")


def test_a_forged_second_record_for_a_case_is_a_record_problem():
    records = recorded("softmax", softmax_rows, "values")
    with pytest.raises(grading.RecordProblem, match="two grading records"):
        grading.judge_records("softmax", "values", records + records[:1])


def test_a_record_for_another_task_is_a_record_problem():
    records = recorded("read_out", lambda w, v: w @ v, "values")
    with pytest.raises(grading.RecordProblem, match="another task"):
        grading.judge_records("softmax", "values", records)


def test_in_place_work_is_not_penalised_unless_the_task_says_so():
    def in_place(x):
        x = np.asarray(x)
        x *= 2
        return x

    cases = (_core.Case("ones", (np.ones(3),)),)
    free = _tasks.Task("double", lambda x: 2 * x, cases)
    assert free.check(in_place) == "double: correct on 1 case."
    strict = _tasks.Task("double", lambda x: 2 * x, cases, keeps_inputs=True)
    with pytest.raises(_core.CheckFailed, match="must not change its inputs"):
        strict.check(in_place)


def test_building_the_jacobian_breaks_the_vector_form_rule():
    def jacobian(p, g):
        eye = np.eye(p.shape[-1])
        jac = np.einsum("...i,ij->...ij", p, eye) - p[..., :, None] * p[..., None, :]
        return np.einsum("...ij,...j->...i", jac, g)

    assert "without building the n x n Jacobian" in verdict("softmax_grad", jacobian)
    vector = verdict("softmax_grad", lambda p, g: p * (g - (p * g).sum(-1, keepdims=True)))
    assert vector.startswith("passed")


def test_a_passing_line_is_not_echoed_by_ipython():
    line = _core.Passed("x: correct.")
    assert line == "x: correct." and line._ipython_display_() is None


def test_visible_checks_step_aside_under_autograde(monkeypatch):
    from mha import checks

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert "graded by nbgrader" in checks.check_softmax(lambda x: x)
    assert "graded by nbgrader" in checks.check_answer("ex01.read_out", [0, 0])


# -- the code scan ----------------------------------------------------------------------------

HOSTILE = {
    "import builtins\nbuiltins.abs = len": "imports builtins",
    "np.abs = lambda x: 0": "rewrites np.abs",
    "import inspect\nf = inspect.currentframe().f_back": "f_back",
    "print(In)": "uses In",
    "import sys\nsys.modules['mha.checks'] = None": "imports sys",
    "while True:\n    try:\n        pass\n    except KeyboardInterrupt:\n        pass":
        "catches KeyboardInterrupt",
    "try:\n    pass\nexcept:\n    pass": "bare except",
    "exec('1')": "uses exec",
    "checks.check_softmax = print": "checks",
    "x = getattr(np, 'a' + 'bs')": "getattr with a computed name",
    "def f(model, x):\n    return model.__name__": "__name__",
    'g = getattr(f, "__globals__")': "getattr(..., '__globals__')",
    "import numpy as xp\nxp.abs = len": "rewrites xp.abs",
    "from numpy import linalg as la\nla.norm = len": "rewrites la.norm",
    "import posix": "imports posix",
    "import sqlite3": "imports sqlite3",
    "import ctypes": "imports ctypes",
    "import subprocess": "imports subprocess",
    "import multiprocessing": "imports multiprocessing",
    "import signal": "imports signal",
    "import gc": "imports gc",
    "import tracemalloc": "imports tracemalloc",
    "s = np.loadtxt('mha_grading.py', dtype=str, delimiter='\\n')": "uses .loadtxt",
    "np.save('/tmp/x.npy', np.zeros(2))": "uses .save",
    "g = torch.load('gradebook.db')": "uses .load",
    "sys.setprofile(None)": "calls sys.setprofile",
    "from sys import settrace as t\nt(None)": "calls sys.settrace",
    "tracemalloc.stop()": "calls tracemalloc.stop",
    "os.fork()": "calls os.fork",
    "importlib.import_module('ctypes')": "imports ctypes",
    "%time import posix": "in %time: imports posix",
    "!rm -rf gradebook.db": "runs a shell command",
    "w = checks.PREDICTIONS['ex03.weights_dk64'].expected": "PREDICTIONS",
    "x = " + "-" * 5000 + "1": "could not be read: nested too deep",
    # file reads the scan did not see (issue 20's last examiner: torch.from_file)
    "t = torch.from_file(p, size=100, dtype=torch.uint8)": "uses .from_file",
    "s = torch.UntypedStorage.from_file(p, False, 100)": "uses .from_file",
    "a = np.fromfile(p, dtype=np.uint8)": "uses .fromfile",
    "m = np.memmap(p, dtype=np.uint8)": "uses .memmap",
    "m = np.lib.format.open_memmap(p)": "uses .open_memmap",
    "fd = os.open(p, 0)": "uses .open",
    "b = io.FileIO(p).read()": "uses .FileIO",
    "import codecs": "imports codecs",
    "t = codecs.open(p).read()": "uses .open",
    "import mmap": "imports mmap",
    "import fileinput": "imports fileinput",
    "d = pd.read_json(p)": "uses .read_json",
    "b = mha.__spec__.loader.get_data('../../../source/ex01/ex01.ipynb')":
        "names a path of the course's files",
    "p = 'gradebook.db'": "names a path of the course's files",
}


def test_an_alias_bound_in_another_cell_is_watched_like_np():
    guarded = mha_grading.module_aliases(["import numpy as xp", "ys = xp"])
    assert mha_grading.suspicious("ys.abs = len", guarded) == ["rewrites ys.abs (line 1)"]


def test_a_cell_too_deep_to_parse_does_not_stop_the_scan_of_forbidden_names():
    assert mha_grading.forbidden_mentions("x = " + "-" * 5000 + "1", {"attention"}) == []


@pytest.mark.parametrize("code", sorted(HOSTILE))
def test_the_scan_names_what_reaches_past_an_answer(code):
    found = "; ".join(mha_grading.suspicious(code))
    assert HOSTILE[code] in found, found


def test_the_scan_flags_no_solution_of_any_set():
    import re

    import nbformat

    for path in sorted((ROOT / "course" / "source").glob("*/*.ipynb")):
        for cell in nbformat.read(path, 4).cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                code = re.sub(r".*### (BEGIN|END) SOLUTION\n", "", cell.source)
                assert mha_grading.suspicious(code) == [], (path.name, cell.source)


def test_released_source_drops_exactly_the_hidden_lines():
    source = "# 1 point\n### BEGIN HIDDEN TESTS\nsecret()\n### END HIDDEN TESTS\nvisible()"
    assert mha_grading.released_source(source) == "# 1 point\nvisible()"


def test_naming_a_forbidden_function_anywhere_in_an_answer_is_flagged():
    found = mha_grading.forbidden_mentions(
        "from mha import softmax as s\nTABLE = mha.reference.softmax(x)", {"softmax"})
    assert found == ["imports softmax from mha (line 1)",
                     "names mha.reference.softmax (line 2)"]


def test_no_solution_names_a_function_its_set_forbids():
    import nbformat

    for path in sorted((ROOT / "course" / "source").glob("*/*.ipynb")):
        nb = nbformat.read(path, 4)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                cell.metadata["nbgrader"]["locked"] = False
        assert mha_grading._rule_flags(nb) == [], path.name


def test_an_output_of_a_tensor_subclass_is_not_read_through_its_methods():
    torch = pytest.importorskip("torch")

    class Liar(torch.Tensor):
        def numpy(self):
            return np.zeros(2)

    back = grading.decode(grading.encode(torch.ones(2).as_subclass(Liar)))
    assert isinstance(back, grading.Opaque)


def _notebook(*sources):
    import nbformat

    nb = nbformat.v4.new_notebook()
    for grade_id, source in sources:
        cell = nbformat.v4.new_code_cell(source)
        if grade_id:
            cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": True, "grade": False,
                                         "locked": False, "schema_version": 3}
        nb.cells.append(cell)
    return nb


def test_a_forbidden_call_in_a_table_built_at_definition_time_breaks_the_rule():
    nb = _notebook(("causal", "_T = {n: mha.causal_mask(n) for n in range(1, 9)}\n"
                              "def causal(t):\n    return _T[t]"))
    breaks = mha_grading.rule_breaks(nb, grading.task_for("causal_mask", None), "causal")
    assert breaks == [("do not call mha.causal_mask",
                       "mha.causal_mask (the cell causal, line 1)")]


def test_a_forbidden_name_in_a_comment_or_a_string_breaks_no_rule():
    nb = _notebook(("causal", 'def causal(t):\n    """Not mha.causal_mask(t)."""\n'
                              "    # mha.causal_mask is what I must not call\n"
                              "    return np.triu(np.ones((t, t), bool), 1)"))
    assert mha_grading.rule_breaks(nb, grading.task_for("causal_mask", None), "causal") == []


def test_every_solution_breaks_no_rule_of_its_set():
    import nbformat

    for path in sorted((ROOT / "course" / "source").glob("*/*.ipynb")):
        nb = nbformat.read(path, 4)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                cell.metadata["nbgrader"]["locked"] = False
        for cell in nb.cells:
            match = mha_grading.HIDDEN_CALL.search(cell.source)
            if match and match.group(1) == "record":
                task = grading.task_for(match.group(2), match.group(4))
                assert mha_grading.rule_breaks(nb, task, match.group(3)) == [], path.name


def test_a_forbidden_call_in_a_thread_is_seen_by_the_profile_hook():
    from concurrent.futures import ThreadPoolExecutor

    import mha

    pool = ThreadPoolExecutor(1)

    def masked_attention(q, k, v, mask):
        return pool.submit(mha.attention, q, k, v, mask).result()

    assert "do not call mha.attention" in verdict("masked_attention", masked_attention)


def test_grading_does_not_blame_an_allowed_mha_function_that_internally_calls_a_forbidden_one():
    import mha

    def cache_mask(n_cached, n_new):
        return mha.causal_mask(n_cached + n_new)[n_cached:]  # calls mask_from_positions

    assert verdict("cache_mask", cache_mask).startswith("passed: ")


def test_grading_blames_a_direct_call_of_the_forbidden_mask_from_positions():
    import mha

    def cache_mask(n_cached, n_new):
        return mha.masks.mask_from_positions(np.arange(n_cached, n_cached + n_new),
                                             np.arange(n_cached + n_new))

    assert "do not call mha.masks.mask_from_positions" in verdict("cache_mask", cache_mask)


def test_a_loop_variable_named_like_history_is_not_history():
    assert mha_grading.suspicious("for _i in range(3):\n    print(_i)") == []
    assert "uses _i (reads IPython's history or namespace) (line 1)" in \
        mha_grading.suspicious("print(_i)")


def test_reaching_into_the_package_with_vars_is_named_as_a_possible_forgery():
    found = "; ".join(mha_grading.suspicious('_ns = vars(vars(mha)["checks"])'))
    assert "reaches into the namespace of mha" in found and "forged" in found


@pytest.mark.parametrize("reason, withheld", [
    ("read_out: imports traceback (line 1)", True), ("an added cell (4): uses open (line 3)", True),
    ("read_out: uses .f_back (line 2)", True), ("attend: uses .loadtxt (line 1)", True),
    ("split: catches KeyboardInterrupt (line 3)", False),
    ("causal: imports causal_mask from mha (line 1), which a task forbids", False),
    ("the locked cell test_x was edited (grading restored it)", False)])
def test_feedback_withholds_outputs_only_for_reasons_that_can_read(reason, withheld):
    assert mha_grading.withholds(reason) == withheld


def test_a_hidden_test_marker_outside_a_test_cell_is_rewritten_and_flagged():
    nb = _notebook(("score", "def f():\n    # ### BEGIN HIDDEN TESTS\n    return 1"))
    flags = []
    mha_grading.neutralise_markers(nb, flags)
    assert "HIDDEN TESTS" not in nb.cells[0].source and "hidden-test marker" in flags[0]


def test_a_huge_output_is_cut_saying_how_much():
    out = mha_grading._cap({"output_type": "stream", "text": "x" * 50_000})
    assert len(out["text"]) < 21_000 and "30,000 more characters" in out["text"]


def test_the_file_scan_does_not_flag_set_01s_read_out():
    assert mha_grading.suspicious("y = mha.read_out(w, v)\nz = answers.read_out") == []


def secrets_of(assignment: str = "ex01_weighted_sum") -> list[str]:
    import nbformat

    lines = []
    path = ROOT / "course" / "source" / assignment / f"{assignment}.ipynb"
    for cell in nbformat.read(path, 4).cells:
        if "BEGIN HIDDEN TESTS" in cell.source:
            released = set(mha_grading.released_source(cell.source).splitlines())
            lines += [line.strip() for line in cell.source.splitlines()
                      if line.strip() and line not in released]
    return lines


def hidden_chunk() -> str:
    text = (ROOT / "course" / "source" / "ex01_weighted_sum" / "ex01_weighted_sum.ipynb"
            ).read_text()
    i = text.find("HIDDEN TESTS")
    return text[i - 100:i + 400]


@pytest.mark.parametrize("how", ["as printed", "reversed", "hex", "base64", "codes", "rot13"])
def test_an_output_showing_hidden_test_code_in_a_simple_encoding_is_caught(how):
    import base64
    import codecs

    chunk = hidden_chunk()  # as the raw file holds it: JSON-escaped quotes and newlines
    text = {"as printed": chunk, "reversed": chunk[::-1], "hex": chunk.encode().hex(),
            "base64": base64.b64encode(chunk.encode()).decode(),
            "codes": str(list(chunk.encode())), "rot13": codecs.encode(chunk, "rot13")}[how]
    skeletons = mha_grading.secret_skeletons(secrets_of())
    assert mha_grading.leak("some output\n" + text, skeletons)


@pytest.mark.parametrize("text", ["read_out: correct on 5 cases.", "[1.5 1. ]",
                                  str(list(range(300))), "ab" * 20000])
def test_ordinary_outputs_are_not_taken_for_hidden_test_code(text):
    assert mha_grading.leak(text, mha_grading.secret_skeletons(secrets_of())) is None


def test_a_copied_cell_keeps_its_id_on_the_last_copy_and_is_noted():
    import nbformat

    nb = nbformat.v4.new_notebook()
    meta = {"grade_id": "split", "solution": True, "grade": False, "locked": False,
            "schema_version": 3, "task": False}
    nb.cells = [nbformat.v4.new_code_cell("stub", metadata={"nbgrader": dict(meta)}),
                nbformat.v4.new_code_cell("answer", metadata={"nbgrader": dict(meta)}),
                nbformat.v4.new_markdown_cell("text")]
    nb, _ = mha_grading.KeepOneCopy().preprocess(nb, {})
    assert "nbgrader" not in nb.cells[0].metadata
    assert nb.cells[1].metadata["nbgrader"]["grade_id"] == "split"
    (flag,) = nb.metadata["mha_grading"]["flags"]
    assert flag.startswith("split: ") and "copied cell" in flag and "cell 0" in flag, flag
    assert not mha_grading.withholds(flag)  # a copied cell reads nothing: outputs shown


def test_a_test_that_looks_at_the_middle_position_only_is_not_told_it_never_flags():
    """Issue 20's last examiner: a registered mistake used to be compared only on the cases
    the answer got wrong, so "never flags" (always False) matched a test that flags the
    unmasked model and misses leaks elsewhere."""
    def middle_only(model, x):
        t = x.shape[1] // 2
        x2 = x.copy()
        x2[:, t + 1:] = np.random.default_rng(0).normal(size=x2[:, t + 1:].shape)
        return not np.allclose(model(x)[:, :t + 1], model(x2)[:, :t + 1])

    def position_1_only(model, x):
        x2 = x.copy()
        x2[:, 2:] += 1.0
        return not np.allclose(model(x)[:, :2], model(x2)[:, :2])

    text = verdict("leaks_future", middle_only)
    assert "never flags" not in text and "one position t only" in text, text
    text = verdict("leaks_future", position_1_only)
    assert "never flags" not in text, text
    assert "never flags" in verdict("leaks_future", lambda model, x: False)
