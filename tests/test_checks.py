"""mha.checks, the exercise feedback: each known mistake, fed to its check, is named.

Also: a correct answer gets one short line, a stub gets "not attempted yet", an unknown
wrong answer gets the first differing case (input, expected, got), every failure is an
AssertionError (so nbgrader marks the cell failed), and reloading the module undoes an
answer cell that replaced its functions.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import mha
from mha import checks


def failure(check, answer, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        check(answer, **kwargs)
    return str(info.value)


def one_sentence(message: str) -> bool:
    """No full stop followed by a new sentence."""
    return re.search(r"\.\s+[A-Z]", message) is None


def softmax_rows(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def plain_attention(q, k, v, blocked, scale=None, after=False):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if after:
        w = softmax_rows(s) * ~blocked
    else:
        s = np.where(blocked, -np.inf, s)
        m = s.max(-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(m), m, 0))
        w = e / e.sum(-1, keepdims=True)
    return w @ v, w


def grads(q, k, v, g, cross=True, scaled=True, ds_t=True, a_t=True):
    scale = 1 / np.sqrt(q.shape[-1])
    a = softmax_rows(q @ k.T * scale)
    d_a = g @ v.T
    d_s = a * (d_a - (a * d_a).sum(-1, keepdims=True)) if cross else a * d_a
    s = scale if scaled else 1.0
    return d_s @ k * s, (d_s.T if ds_t else d_s) @ q * s, (a.T if a_t else a) @ g


# (check, a wrong answer, words the message must contain, behaviour)
MISTAKES = {
    "read_out plain average": (checks.check_read_out, lambda w, v: v.mean(axis=0),
                               "plain average", None),
    "read_out weighted but not summed": (checks.check_read_out,
                                         lambda w, v: w[..., :, None] * v, "did not add", None),
    "softmax without the max shift": (
        checks.check_softmax, lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
        "softmax without the max shift", "stable"),
    "softmax over the wrong axis": (
        checks.check_softmax, lambda x: np.exp(x - x.max(0)) / np.exp(x - x.max(0)).sum(0),
        "softmax over the wrong axis", "values"),
    "softmax normalised over the whole array": (
        checks.check_softmax, lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
        "whole array", "values"),
    "scores scaled by sqrt(d_model)": (
        checks.check_scores, lambda x, wq, wk: (x @ wq) @ (x @ wk).T / np.sqrt(x.shape[1]),
        "scaled by sqrt(d_model)", None),
    "scores not scaled": (checks.check_scores, lambda x, wq, wk: (x @ wq) @ (x @ wk).T,
                          "not scaled", None),
    "scores divided by d_k": (
        checks.check_scores, lambda x, wq, wk: (x @ wq) @ (x @ wk).T / wq.shape[1],
        "divided by d_k", None),
    "scores transposed": (
        checks.check_scores, lambda x, wq, wk: (x @ wk) @ (x @ wq).T / np.sqrt(wq.shape[1]),
        "K Q^T", None),
    "head scores scaled by sqrt(d_model)": (
        checks.check_head_scores,
        lambda q, k, d_model: q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model),
        "scaled by sqrt(d_model)", None),
    "head scores not scaled": (checks.check_head_scores,
                               lambda q, k, d_model: q @ np.swapaxes(k, -1, -2),
                               "not scaled", None),
    "head scores divided by d_k": (
        checks.check_head_scores, lambda q, k, d_model: q @ np.swapaxes(k, -1, -2) / q.shape[-1],
        "divided by d_k", None),
    "causal mask inverted": (checks.check_causal_mask,
                             lambda t: np.tril(np.ones((t, t), dtype=bool)), "mask inverted",
                             None),
    "causal mask blocks the diagonal": (checks.check_causal_mask,
                                        lambda t: np.triu(np.ones((t, t), dtype=bool)),
                                        "diagonal", None),
    "causal mask blocks the past": (checks.check_causal_mask,
                                    lambda t: np.tril(np.ones((t, t), dtype=bool), k=-1),
                                    "blocked the past", None),
    "causal mask additive": (
        checks.check_causal_mask,
        lambda t: np.where(np.triu(np.ones((t, t), dtype=bool), 1), -np.inf, 0.0),
        "additive float mask", None),
    "causal mask as numbers": (checks.check_causal_mask,
                               lambda t: np.triu(np.ones((t, t), dtype=int), 1),
                               "0 / 1 numbers", None),
    "to_sdpa mask inverted": (checks.check_to_sdpa, lambda m: m, "mask inverted", None),
    "to_sdpa additive": (checks.check_to_sdpa, lambda m: np.where(m, -np.inf, 0.0),
                         "added to the scores", None),
    "mask applied after softmax": (
        checks.check_masked_attention,
        lambda q, k, v, m: plain_attention(q, k, v, m, after=True),
        "mask applied after softmax", "values"),
    "masked attention mask inverted": (
        checks.check_masked_attention, lambda q, k, v, m: plain_attention(q, k, v, ~m),
        "mask inverted", "values"),
    "masked attention mask ignored": (
        checks.check_masked_attention, lambda q, k, v, m: plain_attention(q, k, v, False),
        "mask is not applied", "values"),
    "masked attention not scaled": (
        checks.check_masked_attention, lambda q, k, v, m: plain_attention(q, k, v, m, scale=1.0),
        "not scaled", "values"),
    "softmax backward without the cross term": (
        checks.check_softmax_backward, lambda p, g: p * g,
        "softmax backward without the cross term", None),
    "softmax backward diagonal only": (
        checks.check_softmax_backward, lambda p, g: p * (1 - p) * g,
        "softmax backward without the cross term", None),
    "softmax backward sign flipped": (
        checks.check_softmax_backward, lambda p, g: p * ((p * g).sum(-1, keepdims=True) - g),
        "sign is flipped", None),
    "softmax backward wrong axis": (
        checks.check_softmax_backward, lambda p, g: p * (g - (p * g).sum(0, keepdims=True)),
        "wrong axis", None),
    "attention backward without the cross term": (
        checks.check_attention_backward, lambda q, k, v, g: grads(q, k, v, g, cross=False),
        "softmax backward without the cross term", "dq_dk"),
    "attention backward scale missing": (
        checks.check_attention_backward, lambda q, k, v, g: grads(q, k, v, g, scaled=False),
        "carry that factor", "dq_dk"),
    "attention backward dS not transposed": (
        checks.check_attention_backward, lambda q, k, v, g: grads(q, k, v, g, ds_t=False),
        "dS transposed", "dq_dk"),
    "attention backward A not transposed": (
        checks.check_attention_backward, lambda q, k, v, g: grads(q, k, v, g, a_t=False),
        "weights transposed", "dv"),
    "heads split with view": (
        checks.check_split_heads,
        lambda x, h: x.reshape(x.shape[0], h, x.shape[1], x.shape[2] // h),
        "heads split with `view`", None),
    "heads not moved in front of T": (
        checks.check_split_heads,
        lambda x, h: x.reshape(x.shape[0], x.shape[1], h, x.shape[2] // h),
        "H must come before", None),
    "heads merged without the transpose": (
        checks.check_merge_heads,
        lambda x: x.reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3]),
        "heads merged with a reshape straight from", None),
    "upper-left causal alignment in the cache": (
        checks.check_cache_mask, lambda c, n: np.triu(np.ones((n, c + n), dtype=bool), k=1),
        "upper-left causal alignment in the cache", None),
    "cache mask inverted": (
        checks.check_cache_mask,
        lambda c, n: ~(np.arange(c + n)[None, :] > np.arange(c, c + n)[:, None]),
        "mask inverted", None),
    "online softmax running sum not rescaled": (
        checks.check_online_softmax,
        lambda s, v, b: checks.memory._online(s, v, b, rescale=False),
        "not rescaled when the maximum grows", None),
    "online softmax without the max shift": (
        checks.check_online_softmax,
        lambda s, v, b: checks.memory._online(s, v, b, shift=False),
        "softmax without the max shift", None),
    "causality test that compares every position": (
        checks.check_leak_test, lambda model, x: True, "flags a correct causal head", None),
    "causality test that never flags": (
        checks.check_leak_test, lambda model, x: False, "never flags a leak", None),
    "transpose missing in weight transfer": (checks.check_weight_transfer, lambda w: w,
                                             "transpose missing in weight transfer", None),
    "in_proj_weight chunks not transposed": (
        checks.check_unpack_in_proj, lambda w: tuple(np.split(w, 3)),
        "transpose missing in weight transfer", None),
    "in_proj_weight split along the wrong axis": (
        checks.check_unpack_in_proj, lambda w: tuple(c.T for c in np.split(w, 3, axis=1)),
        "stacks W_Q, W_K and W_V by rows", None),
}


@pytest.mark.parametrize("key", sorted(MISTAKES))
def test_a_known_mistake_gets_its_name_in_one_sentence(key):
    check, answer, words, behaviour = MISTAKES[key]
    message = failure(check, answer, behaviour=behaviour)
    assert words in message, message
    assert "expected:" not in message, message
    assert one_sentence(message), message


def test_heads_split_with_torch_view_is_named():
    torch = pytest.importorskip("torch")

    def split(x, h):
        b, t, c = x.shape
        return x.view(b, h, t, c // h)

    assert torch is not None
    message = failure(checks.check_split_heads, split, torch_inputs=True)
    assert "heads split with `view`" in message


def test_dropout_left_on_at_inference_is_named():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    x = torch.ones(3, 4)
    with torch.no_grad():
        expected = layer.eval()(x)
    layer.train()  # the mistake: evaluating in training mode
    with pytest.raises(AssertionError, match="dropout left on at inference"):
        checks.check_inference(lambda inp: layer(inp).detach(), x, expected)


def dropout_modules():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    class Right(torch.nn.Module):
        def __init__(self, p):
            super().__init__()
            self.p = p

        def forward(self, q, k, v):
            p = self.p if self.training else 0.0
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p)

    class LeftOn(Right):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)

    class NeverOn(Right):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v)

    return Right, LeftOn, NeverOn


def test_a_dropout_module_left_on_at_inference_is_named():
    _, left_on, _ = dropout_modules()
    message = failure(checks.check_dropout_module, left_on, behaviour="inference")
    assert "dropout left on at inference" in message and one_sentence(message)


def test_a_dropout_module_that_never_drops_is_named():
    _, _, never_on = dropout_modules()
    message = failure(checks.check_dropout_module, never_on, behaviour="training")
    assert "dropout is never applied" in message and one_sentence(message)


def test_a_right_dropout_module_gets_one_line(capsys):
    right, _, _ = dropout_modules()
    checks.check_dropout_module(right)
    assert capsys.readouterr().out == "dropout_module: correct in eval and train mode.\n"


def test_a_dropout_module_stub_is_not_attempted_yet():
    def stub(p):
        raise NotImplementedError()

    with pytest.raises(checks.NotAttempted, match="not attempted yet"):
        checks.check_dropout_module(stub, behaviour="inference")


def test_inference_in_eval_mode_passes(capsys):
    torch = pytest.importorskip("torch")
    layer = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).eval()
    x = torch.ones(3, 4)
    with torch.no_grad():
        checks.check_inference(lambda inp: layer(inp), x, layer(x))
    assert capsys.readouterr().out.count("\n") == 1


# -- predictions --------------------------------------------------------------

PREDICTION_MISTAKES = {
    "ex03.weights_dk64 unscaled": ("ex03.weights_dk64", [1.0, 0.0], "unscaled softmax"),
    "ex03.weights_dk64 divided by 64": ("ex03.weights_dk64", [0.562, 0.438], "divided by d_k"),
    "ex04.zeroed_after as if masked before": ("ex04.zeroed_after", [1.0, 0.0],
                                              "masking before the softmax"),
    "ex05.grad_075 without the cross term": ("ex05.grad_075", [0.75, 0.0],
                                             "softmax backward without the cross term"),
    "ex05.constant_upstream without the cross term": (
        "ex05.constant_upstream", [0.6, 0.9, 1.5], "softmax backward without the cross term"),
    "ex08.cache_read_out upper-left": ("ex08.cache_read_out", [10.0, 15.0],
                                       "upper-left causal alignment in the cache"),
    "ex02.cross_shape transposed": ("ex02.cross_shape", (5, 3), "rows are queries"),
    "ex01.read_out plain average": ("ex01.read_out", [2 / 3, 2 / 3], "plain average"),
    "ex09.score_bytes one row per position": ("ex09.score_bytes", 4 * 12 * 2048 * 4,
                                               "T * T entries"),
    "ex09.score_bytes_2t doubled": ("ex09.score_bytes_2t", 2 * 805306368, "doubling T"),
    "ex10.rows_sum_below_one as dropout": ("ex10.rows_sum_below_one", "e",
                                           "dropout left on at inference"),
    "ex10.early_outputs_move as an inverted mask": ("ex10.early_outputs_move", " B ",
                                                    "inverted mask"),
    "ex06.params_h8 without biases": ("ex06.params_h8", 1048576, "without the biases"),
    "ex06.params_h16 per head": ("ex06.params_h16", 16 * 1050624, "does not change the count"),
    "ex08.cache_bytes without K and V": ("ex08.cache_bytes", 402653184, "factor 2"),
    "ex08.cache_bytes in float32": ("ex08.cache_bytes", 1610612736, "2 bytes"),
    "ex08.gqa_bytes with every query head": ("ex08.gqa_bytes", 805306368, "grouped-query"),
}


@pytest.mark.parametrize("key", sorted(PREDICTION_MISTAKES))
def test_a_known_wrong_prediction_is_named(key):
    question, value, words = PREDICTION_MISTAKES[key]
    with pytest.raises(AssertionError, match=re.escape(words)):
        checks.check_answer(question, value)


@pytest.mark.parametrize(("question", "value"), [
    ("ex01.read_out", [0.75, 0.5]), ("ex01.weight_on_first", 0.5), ("ex01.reachable", False),
    ("ex02.cross_shape", (3, 5)), ("ex03.weights_dk64", [0.881, 0.119]),
    ("ex03.shifted", [0.881, 0.119]), ("ex03.divided", [0.731, 0.269]),
    ("ex04.zeroed_after", [0.5, 0.0]), ("ex05.grad_075", [0.1875, -0.1875]),
    ("ex05.constant_upstream", [0.0, 0.0, 0.0]), ("ex08.cache_read_out", [25.0, 30.0]),
    ("ex06.params_h8", 1050624), ("ex06.params_h16", 1050624),
    ("ex09.score_bytes", 805306368), ("ex09.score_bytes_2t", 3221225472),
    ("ex09.raw_fits_fp16", False), ("ex09.scaled_fits_fp16", True),
    ("ex10.rows_sum_below_one", "a"), ("ex10.eval_calls_differ", "E"),
    ("ex10.flatter_with_heads", "d"), ("ex10.early_outputs_move", "c"),
    ("ex08.cache_bytes", 805306368), ("ex08.gqa_bytes", 201326592),
])
def test_a_right_prediction_gets_one_line(question, value, capsys):
    checks.check_answer(question, value)
    out = capsys.readouterr().out
    assert out.endswith("correct.\n") and out.count("\n") == 1, out


def test_a_multiple_choice_question_refuses_a_non_letter():
    with pytest.raises(AssertionError, match="a letter in quotes"):
        checks.check_answer("ex10.rows_sum_below_one", 1)


def test_the_leak_test_models_are_what_they_claim():
    d = checks.debugging
    assert [d.leaks_future_reference(m, d._X) for m in
            (d.causal_model, d.unmasked_model, d.past_blocked_model, d.view_split_model)] == [
        False, True, True, True]


def test_a_prediction_left_as_none_is_not_attempted():
    with pytest.raises(AssertionError, match="not attempted yet"):
        checks.check_answer("ex01.read_out", None)


def test_a_yes_no_question_refuses_a_number():
    with pytest.raises(AssertionError, match="True or False"):
        checks.check_answer("ex01.reachable", 0)


def test_the_cache_memory_predictions_match_the_package_formula():
    torch = pytest.importorskip("torch")
    from mha.kv_cache import kv_cache_bytes

    p = checks.PREDICTIONS
    assert p["ex08.cache_bytes"].expected == kv_cache_bytes(24, 2, 16, 4096, 64, torch.float16)
    assert p["ex08.gqa_bytes"].expected == kv_cache_bytes(24, 2, 4, 4096, 64, torch.float16)


def test_the_worked_numbers_of_the_predictions_come_from_the_package():
    """0.881 / 0.119 is softmax([8, -8] / 8); 0.1875 is the vector form at p = 0.75."""
    p = checks.PREDICTIONS
    np.testing.assert_allclose(p["ex03.weights_dk64"].expected, mha.softmax([1.0, -1.0]))
    np.testing.assert_allclose(p["ex05.grad_075"].expected,
                               mha.softmax_backward([0.75, 0.25], [1.0, 0.0]))


# -- the general behaviour ------------------------------------------------------

REFERENCES = {
    "read_out": (checks.check_read_out, lambda w, v: w @ v),
    "softmax": (checks.check_softmax, softmax_rows),
    "scores": (checks.check_scores,
               lambda x, wq, wk: (x @ wq) @ (x @ wk).T / np.sqrt(wq.shape[1])),
    "head_scores": (checks.check_head_scores, lambda q, k, d: mha.scores(q, k)),
    "causal_mask": (checks.check_causal_mask, lambda t: np.triu(np.ones((t, t), bool), k=1)),
    "to_sdpa": (checks.check_to_sdpa, lambda m: ~m),
    "masked_attention": (checks.check_masked_attention,
                         lambda q, k, v, m: plain_attention(q, k, v, m)),
    "softmax_backward": (checks.check_softmax_backward,
                         lambda p, g: p * (g - (p * g).sum(-1, keepdims=True))),
    "attention_backward": (checks.check_attention_backward, grads),
    "split_heads": (checks.check_split_heads, lambda x, h: x.reshape(
        x.shape[0], x.shape[1], h, -1).transpose(0, 2, 1, 3)),
    "merge_heads": (checks.check_merge_heads, lambda x: x.transpose(0, 2, 1, 3).reshape(
        x.shape[0], x.shape[2], -1)),
    "cache_mask": (checks.check_cache_mask, lambda c, n: np.arange(c + n)[None, :]
                   > np.arange(c, c + n)[:, None]),
    "weight_transfer": (checks.check_weight_transfer, lambda w: w.T),
    "online_softmax": (checks.check_online_softmax, checks.memory._online),  # block by block
    "leak_test": (checks.check_leak_test, checks.debugging.leaks_future_reference),
    "unpack_in_proj": (checks.check_unpack_in_proj,
                       lambda w: tuple(c.T for c in np.split(w, 3))),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_a_correct_answer_gets_one_short_line(name, capsys):
    check, reference = REFERENCES[name]
    line = check(reference)
    out = capsys.readouterr().out
    assert out == line + "\n" and "correct" in line and len(line) < 60, out


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_a_stub_is_not_attempted_yet_not_a_traceback(name):
    def stub(*args):
        raise NotImplementedError()

    check, _ = REFERENCES[name]
    with pytest.raises(checks.NotAttempted, match="not attempted yet") as info:
        check(stub)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_an_unknown_mistake_shows_the_first_differing_case():
    message = failure(checks.check_read_out, lambda w, v: w @ v + 0.1)
    assert "wrong on case 'weights [0.75, 0.25] on values [2, 0] and [0, 4]'" in message
    assert "input:    [0.75, 0.25]" in message
    assert "expected: [1.5, 1. ]" in message
    assert "got:      [1.6, 1.1]" in message


def test_an_answer_that_raises_shows_its_error_as_got():
    def broken(w, v):
        raise ValueError("shapes do not line up")

    message = failure(checks.check_read_out, broken)
    assert "your function raised ValueError: shapes do not line up" in message
    assert "on case 'weights [0.75, 0.25] on values [2, 0] and [0, 4]'" in message


def test_a_wrong_return_type_is_named():
    message = failure(checks.check_masked_attention, lambda q, k, v, m: q)
    assert "return (output, weights)" in message


def test_a_failed_check_is_an_assertion_error():
    assert issubclass(checks.CheckFailed, AssertionError)
    assert issubclass(checks.NotAttempted, checks.CheckFailed)


def test_a_behaviour_selects_its_own_cases():
    no_shift = MISTAKES["softmax without the max shift"][1]
    checks.check_softmax(no_shift, behaviour="values")  # small logits: fine
    with pytest.raises(AssertionError):
        checks.check_softmax(no_shift, behaviour="stable")


def test_an_answer_that_writes_into_its_input_does_not_change_the_reference():
    def in_place(x):
        x -= x.max(axis=-1, keepdims=True)
        np.exp(x, out=x)
        x /= x.sum(axis=-1, keepdims=True)
        return x

    checks.check_softmax(in_place)


RELOAD = """
import importlib
import mha.checks as checks
from mha.checks.your_turn import verdict
checks.check_softmax = lambda *args, **kwargs: None
checks._core.run_check = lambda *args, **kwargs: "patched"
fresh = importlib.reload(checks)
try:
    fresh.check_softmax(lambda x: x)
    raise SystemExit("the replaced check still ran")
except AssertionError:
    pass
assert checks.basics.Task is checks._tasks.Task
line = verdict(fresh.check_softmax, lambda x: x)
assert line.startswith("Not yet: softmax: wrong on case"), line
print("ok")
"""


def test_reload_restores_functions_an_answer_cell_replaced():
    # in a process of its own: a reload makes new exception classes, which the other test
    # modules (imported before it) would no longer catch
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", RELOAD], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_checks_do_not_use_np_testing():
    """An answer cell may replace np.testing.assert_allclose; the checks never call it."""
    original = np.testing.assert_allclose
    try:
        np.testing.assert_allclose = lambda *args, **kwargs: None
        with pytest.raises(AssertionError):
            checks.check_softmax(lambda x: x)
    finally:
        np.testing.assert_allclose = original


def test_no_package_module_imports_checks():
    import pathlib

    src = pathlib.Path(mha.__file__).parent
    for path in src.rglob("*.py"):
        if "checks" in path.relative_to(src).parts[0]:
            continue
        text = path.read_text()
        assert "from .checks" not in text and "mha.checks" not in text, path


def test_the_teaching_guide_names_every_mistake_as_the_checks_do():
    import pathlib

    src = pathlib.Path(checks.__file__).parent
    names = set()
    for path in src.glob("*.py"):
        names |= set(re.findall(r'Mistake\(\s*"([^"]+)"', path.read_text()))
    assert len(names) > 20
    guide = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "TEACHING.md").read_text()
    guide = " ".join(guide.replace("`", "").split())
    missing = sorted(n for n in names if n.split(" (")[0] not in guide)
    assert not missing, f"docs/TEACHING.md does not name: {missing}"


# -- wrong answers newcomers tried in the lessons' "your turn" cells ---------------------------
# Each: the wrong answer gets its sentence through the lesson's your_turn verdict (one line,
# no case dump), and the right answer to the same check still passes.

def told(check, answer) -> str:
    from mha.checks.your_turn import verdict

    line = verdict(check, answer)
    assert line.startswith("Not yet: ") and "expected:" not in line, line
    return line


def passes(check, answer) -> bool:
    from mha.checks.your_turn import verdict

    return verdict(check, answer).startswith("Correct: ")


def softmax_grad(p, g):
    return p * (g - (p * g).sum(axis=-1, keepdims=True))


def split(x, h):
    b, t, c = x.shape
    return x.reshape(b, t, h, c // h).swapaxes(1, 2)


def merge(x):
    b, h, t, dh = x.shape
    return x.swapaxes(1, 2).reshape(b, t, h * dh)


def test_a_softmax_shifted_by_the_global_maximum_is_told_to_shift_each_row():
    def global_shift(x):
        e = np.exp(x - x.max())
        return e / e.sum(axis=-1, keepdims=True)

    line = told(checks.check_softmax, global_shift)
    assert "shift each row by its own maximum (max over the last axis, keepdims=True)" in line
    assert passes(checks.check_softmax, softmax_rows)


def test_softmax_has_a_case_with_rows_far_apart():
    far = [c for c in checks.basics.SOFTMAX_CASES if c.label.startswith("rows far apart")]
    assert len(far) == 1 and not far[0].hidden and far[0].behaviour == "stable"
    assert np.isfinite(softmax_rows(far[0].args[0])).all()


def test_softmax_backward_without_keepdims_is_named_not_a_bare_broadcast_error():
    line = told(checks.check_softmax_backward, lambda p, g: p * (g - (p * g).sum(axis=-1)))
    assert "keepdims=True" in line and "lost their axis" in line
    assert passes(checks.check_softmax_backward, softmax_grad)


def test_softmax_backward_without_keepdims_on_square_inputs_only_is_named():
    square = [c for c in checks.masks_grads.SOFTMAX_BACKWARD_CASES
              if c.args[0].ndim == 2 and c.args[0].shape[0] == c.args[0].shape[1]]
    task = checks.masks_grads.SOFTMAX_BACKWARD
    outcomes = [(c.args[0] * (c.args[1] - (c.args[0] * c.args[1]).sum(-1)), None)
                for c in square]  # silently wrong numbers, no error
    with pytest.raises(AssertionError, match="lost their axis"):
        checks._core.judge(task.name, square, outcomes, task.reference, task.mistakes)


def test_softmax_backward_with_an_unweighted_mean_is_named():
    line = told(checks.check_softmax_backward, lambda p, g: p * (g - g.mean(-1, keepdims=True)))
    assert "plain mean of g" in line and "weighted by the softmax weights" in line
    assert passes(checks.check_softmax_backward, softmax_grad)


def test_softmax_backward_with_an_unweighted_sum_is_named():
    line = told(checks.check_softmax_backward, lambda p, g: p * (g - g.sum(-1, keepdims=True)))
    assert "plain sum of g" in line


def test_softmax_backward_summed_over_all_rows_is_named():
    line = told(checks.check_softmax_backward, lambda p, g: p * (g - (p * g).sum()))
    assert "summed p * g over the whole array" in line
    assert passes(checks.check_softmax_backward, softmax_grad)


def test_softmax_backward_without_the_factor_p_is_named():
    line = told(checks.check_softmax_backward, lambda p, g: g - (p * g).sum(-1, keepdims=True))
    assert "the factor p in front is missing" in line
    assert passes(checks.check_softmax_backward, softmax_grad)


def test_a_causal_mask_returned_as_a_python_list_is_refused():
    line = told(checks.check_causal_mask,
                lambda t: np.triu(np.ones((t, t), dtype=bool), 1).tolist())
    assert "you returned a Python list" in line and "boolean array" in line
    assert passes(checks.check_causal_mask, lambda t: np.triu(np.ones((t, t), dtype=bool), 1))


@pytest.mark.parametrize("check, answer", [
    (checks.check_split_heads, lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1)),
    (checks.check_merge_heads, lambda x: x.reshape(x.shape[0], x.shape[2], -1)),
], ids=["split", "merge"])
def test_the_missing_transpose_message_names_swapaxes_as_the_lesson_does(check, answer):
    assert ".swapaxes(1, 2)" in told(check, answer)


@pytest.mark.parametrize("check, answer, right", [
    (checks.check_split_heads,
     lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1).transpose(1, 2), split),
    (checks.check_merge_heads,
     lambda x: x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1), merge),
], ids=["split", "merge"])
def test_torch_style_transpose_on_a_numpy_array_is_named(check, answer, right):
    line = told(check, answer)
    assert ("NumPy's transpose takes the order of all axes" in line
            and "to swap two use swapaxes(1, 2)" in line), line
    assert passes(check, right)


@pytest.mark.parametrize("answer", [
    lambda x, h: x.reshape(x.shape[0], x.shape[1], -1, h).transpose(0, 3, 1, 2),
    lambda x, h: x.reshape(x.shape[0], x.shape[1], -1, h).swapaxes(1, 2),
], ids=["to (B, H, T, dh)", "swapaxes only"])
def test_heads_split_with_the_channels_the_wrong_way_round_are_named(answer):
    assert "channels split the wrong way round" in told(checks.check_split_heads, answer)
    assert passes(checks.check_split_heads, split)


def test_heads_merged_with_the_last_two_axes_swapped_are_named():
    line = told(checks.check_merge_heads,
                lambda x: x.swapaxes(2, 3).reshape(x.shape[0], x.shape[2], -1))
    assert "you swapped the last two axes" in line
    assert passes(checks.check_merge_heads, merge)


@pytest.mark.parametrize("answer", [
    lambda m: (~m).astype(float), lambda m: 1 - m, lambda m: m.astype(float)],
    ids=["(~m).astype(float)", "1 - m", "m.astype(float)"])
def test_a_zero_one_float_mask_for_sdpa_is_named(answer):
    line = told(checks.check_to_sdpa, answer)
    assert ("a float mask is added to the scores: 0/1 blocks nothing; return a boolean mask, "
            "True = may attend") in line
    assert passes(checks.check_to_sdpa, lambda m: ~m)


def leaks_at_t0_only(model, x):
    changed = x.copy()
    changed[:, 1:] += 1.0
    return not np.allclose(model(changed)[:, :1], model(x)[:, :1])


def test_a_leak_test_of_t_0_only_fails_on_a_model_that_leaks_in_the_middle():
    from mha.checks import debugging

    x = debugging._X6
    assert debugging.leaks_future_reference(debugging.hole_2_3_model, x)
    assert not leaks_at_t0_only(debugging.hole_2_3_model, x)
    line = told(checks.check_leak_test, leaks_at_t0_only)
    assert "test every position t, not only the first" in line
    assert passes(checks.check_leak_test, debugging.leaks_future_reference)


def test_a_leak_test_that_also_changes_token_t_is_told_to_change_only_later_tokens():
    def with_token_t(model, x):
        base = model(x)
        for t in range(x.shape[1]):
            changed = x.copy()
            changed[:, t:] += 1.0  # the mistake: token t changes too
            if not np.allclose(model(changed)[:, : t + 1], base[:, : t + 1]):
                return True
        return False

    line = told(checks.check_leak_test, with_token_t)
    assert "change only the tokens after t" in line


# -- forbidden calls: the answer's own, not those an allowed mha function makes ------------


def cache_mask_by_slicing(n_cached, n_new):
    return mha.causal_mask(n_cached + n_new)[n_cached:]  # causal_mask calls mask_from_positions


def test_an_allowed_mha_function_that_internally_calls_a_forbidden_one_is_not_blamed():
    assert passes(checks.check_cache_mask, cache_mask_by_slicing)


def test_a_direct_call_of_the_forbidden_mask_from_positions_is_blamed():
    def direct(n_cached, n_new):
        return mha.masks.mask_from_positions(np.arange(n_cached, n_cached + n_new),
                                             np.arange(n_cached + n_new))

    line = told(checks.check_cache_mask, direct)
    assert "the task says do not call mha.masks.mask_from_positions" in line


def test_a_forbidden_call_from_a_helper_the_answer_defines_is_blamed():
    def positions_mask(queries, keys):
        return mha.masks.mask_from_positions(queries, keys)

    def with_helper(n_cached, n_new):
        return positions_mask(np.arange(n_cached, n_cached + n_new), np.arange(n_cached + n_new))

    line = told(checks.check_cache_mask, with_helper)
    assert "the task says do not call mha.masks.mask_from_positions" in line


def test_an_answer_that_is_the_forbidden_function_itself_is_blamed():
    line = told(checks.check_softmax, mha.softmax)
    assert "the task says do not call a ready-made softmax" in line


def test_a_forbidden_function_handed_to_numpy_to_call_is_blamed():
    line = told(checks.check_softmax, lambda x: np.apply_along_axis(mha.softmax, -1, x))
    assert "the task says do not call a ready-made softmax" in line


def test_a_forbidden_function_handed_to_an_mha_function_to_call_is_blamed():
    def via_mha(x):
        mha.numerical.numerical_jacobian(mha.softmax, np.asarray(x, dtype=float))
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    line = told(checks.check_softmax, via_mha)
    assert "the task says do not call a ready-made softmax" in line
