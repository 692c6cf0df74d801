"""Holes an independent examiner found in grading (issue 20, round e), each closed here:
the visible check (the learner's test cell) and grading (records judged in the grader's
process) give the same verdict on each.

* set 09: a softmax on the whole row through torch (``torch.softmax``, ``Tensor.softmax``)
  or written by hand (``np.exp(s - s.max()) / sum``) broke the rule and got full points;
* set 05: the n x n Jacobian built with torch broke the vector-form rule and got full points,
  and the visible check passed the NumPy Jacobian that grading refused;
* ``_thread.start_new_thread`` escaped the call watcher;
* set 04: ``masked_attention`` could call an allowed mha function that does the attention;
* set 04's messages said ``causal_mask:`` of the learner's ``causal``.

Round g (the end of this file): set 09's ``exp`` bound before the answer ran (``from numpy
import exp``), torch in a thread the answer starts, every block in one ``exp`` call (refused,
now with a message saying why), ``mha.tiled.tiled_attention``; the two-pass softmax, which the
stated rule allows (the set says so); set 04's ``mask_from_positions`` and SDPA; set 06's
messages naming ``split`` / ``merge``.
"""

from __future__ import annotations

import _thread
import time

import numpy as np
import pytest
import torch
from test_grading import recorded

import mha
from mha import checks
from mha.checks import grading

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def graded(task, answer, behaviour=None, name=None) -> str:
    try:
        named = {"name": name} if name else {}
        return "passed: " + grading.judge_records(task, behaviour, recorded(
            task, answer, behaviour), **named)
    except AssertionError as err:
        return str(err)


def visible(check, answer, *args) -> str:
    try:
        return "passed: " + check(answer, *args)
    except AssertionError as err:
        return str(err)


# -- set 09: the online softmax ------------------------------------------------------------

def torch_softmax(s, v, block):
    return torch.softmax(torch.as_tensor(s), dim=0).numpy() @ v


def tensor_softmax(s, v, block):
    return torch.as_tensor(s).softmax(0).numpy() @ v


def numpy_by_hand(s, v, block):
    e = np.exp(s - s.max())
    return (e / e.sum()) @ v


def torch_by_hand(s, v, block):
    t = torch.as_tensor(s)
    e = (t - t.max()).exp()
    return (e / e.sum()).numpy() @ v


@pytest.mark.parametrize("answer, words", [
    (torch_softmax, "calls torch.softmax on every score of the row at once"),
    (tensor_softmax, "calls torch.softmax on every score of the row at once"),
    (numpy_by_hand, "takes numpy.exp of every score of the row at once"),
    (torch_by_hand, "takes torch.exp of every score of the row at once"),
])
def test_a_softmax_of_the_whole_row_breaks_the_rule_in_the_check_and_in_grading(answer, words):
    for said in (visible(checks.check_online_softmax, answer),
                 graded("online_softmax", answer)):
        assert "the task says" in said and "on the whole row" in said and words in said, said


def loops(s, v, block):
    m, total, out = -np.inf, 0.0, np.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        for x, row in zip(s[j:j + block], v[j:j + block], strict=True):
            m_new = max(m, float(x))
            c = np.exp(m - m_new)
            e = np.exp(x - m_new)
            total, out, m = total * c + e, out * c + e * row, m_new
    return out / total


def float32_blocks(s, v, block):
    s, v = np.asarray(s, np.float32), np.asarray(v, np.float32)
    m, total, out = np.float32(-np.inf), np.float32(0), np.zeros(v.shape[-1], np.float32)
    for j in range(0, len(s), block):
        blk = s[j:j + block]
        m_new = max(m, blk.max())
        c = np.exp(m - m_new)
        e = np.exp(blk - m_new)
        total, out, m = total * c + e.sum(), out * c + e @ v[j:j + block], m_new
    return out / total


def torch_blocks(s, v, block):
    s, v = torch.as_tensor(s), torch.as_tensor(v)
    m, total, out = torch.tensor(-torch.inf, dtype=s.dtype), 0.0, torch.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        blk = s[j:j + block]
        m_new = torch.maximum(m, blk.max())
        c = torch.exp(m - m_new)
        e = torch.exp(blk - m_new)
        total, out, m = total * c + e.sum(), out * c + e @ v[j:j + block], m_new
    return out / total


def softmax_per_block(s, v, block):
    """A block's own softmax (mha.softmax on a block is allowed), merged by its max and sum."""
    m, total, out = -np.inf, 0.0, np.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        blk = s[j:j + block]
        m_blk = blk.max()
        p = mha.softmax(blk)
        l_blk = np.exp(blk - m_blk).sum()
        m_new = max(m, m_blk)
        c, c_blk = np.exp(m - m_new), np.exp(m_blk - m_new)
        total, out, m = total * c + l_blk * c_blk, out * c + l_blk * c_blk * (p @ v[j:j + block]), \
            m_new
    return out / total


@pytest.mark.parametrize("answer", [loops, float32_blocks, torch_blocks, softmax_per_block])
def test_a_block_wise_answer_passes_in_the_check_and_in_grading(answer):
    assert visible(checks.check_online_softmax, answer).startswith("passed: ")
    assert graded("online_softmax", answer).startswith("passed: ")


def test_numpy_exp_is_itself_again_after_the_check():
    checks.check_online_softmax(float32_blocks)
    assert isinstance(np.exp, np.ufunc)
    with pytest.raises(AssertionError):
        checks.check_online_softmax(numpy_by_hand)
    assert isinstance(np.exp, np.ufunc)


# -- set 05: the Jacobian -------------------------------------------------------------------

def torch_diag_outer(p, g):
    p, g = torch.as_tensor(p), torch.as_tensor(g)
    rows = [(torch.diag(pr) - torch.outer(pr, pr)) @ gr
            for pr, gr in zip(p.reshape(-1, p.shape[-1]), g.reshape(-1, p.shape[-1]),
                              strict=True)]
    return torch.stack(rows).reshape(p.shape)


def torch_autograd_jacobian(p, g):
    p, g = torch.as_tensor(p), torch.as_tensor(g)
    rows = []
    for sr, gr in zip(torch.log(p).reshape(-1, p.shape[-1]), g.reshape(-1, p.shape[-1]),
                      strict=True):
        jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), sr)
        rows.append(jac.T @ gr)
    return torch.stack(rows).reshape(p.shape)


def numpy_jacobian(p, g):
    jac = np.einsum("...i,ij->...ij", p, np.eye(p.shape[-1])) - p[..., :, None] * p[..., None, :]
    return np.einsum("...ij,...j->...i", jac, g)


@pytest.mark.parametrize("answer", [torch_diag_outer, torch_autograd_jacobian, numpy_jacobian])
def test_a_jacobian_breaks_the_vector_form_rule_in_the_check_and_in_grading(answer):
    for said in (visible(checks.check_softmax_backward, answer), graded("softmax_grad", answer)):
        assert "the task says use the vector form, without building the n x n Jacobian" in said, \
            said


def torch_vector_form(p, g):
    p, g = torch.as_tensor(p), torch.as_tensor(g)
    return p * (g - (p * g).sum(-1, keepdim=True))


def torch_vjp(p, g):
    s = torch.log(torch.as_tensor(p)).requires_grad_()
    torch.softmax(s, -1).backward(torch.as_tensor(g))
    return s.grad


@pytest.mark.parametrize("answer", [torch_vector_form, torch_vjp,
                                    lambda p, g: p * (g - (p * g).sum(-1, keepdims=True))])
def test_a_vector_form_answer_passes_the_jacobian_rule(answer):
    assert visible(checks.check_softmax_backward, answer).startswith("passed: ")
    assert graded("softmax_grad", answer).startswith("passed: ")


# -- threads started with _thread -----------------------------------------------------------

def in_a_raw_thread(q, k, v, mask):
    box = []
    _thread.start_new_thread(lambda: box.append(mha.attention(q, k, v, mask=mask)), ())
    while not box:
        time.sleep(0.001)
    return box[0]


def test_a_forbidden_call_in_a_thread_started_with_thread_is_seen():
    for said in (visible(checks.check_masked_attention, in_a_raw_thread, "values"),
                 graded("masked_attention", in_a_raw_thread, "values")):
        assert "do not call mha.attention" in said, said
    assert _thread.start_new_thread.__module__ == "_thread"  # put back after the check


# -- set 04: mha functions that do the attention --------------------------------------------

def multihead_class(q, k, v, mask):
    mha.MultiHeadAttention(q.shape[-1], 1)
    return mha.multihead.attention(q, k, v, mask=mask)


def tiled(q, k, v, mask):
    out = mha.tiled.tiled_attention(q, k, v, mask).out
    return out, mha.softmax(np.where(mask, -np.inf, mha.scores(q, k)))


@pytest.mark.parametrize("answer, what", [(multihead_class, "mha.multihead.MultiHeadAttention"),
                                          (tiled, "mha.tiled.tiled_attention")])
def test_masked_attention_through_an_mha_function_that_does_the_attention_breaks_the_rule(
        answer, what):
    for behaviour in ("values", "broadcast"):
        for said in (visible(checks.check_masked_attention, answer, behaviour),
                     graded("masked_attention", answer, behaviour)):
            assert "the task says do not call mha.attention or any other function of mha" in said
            assert f"your answer calls {what}" in said, said


def with_package_helpers(q, k, v, mask):
    w = mha.softmax(mha.scores(q, k) + mha.masks.to_additive(mask), axis=-1)
    return w @ v, w


def test_masked_attention_may_use_the_softmax_the_scores_and_the_masks():
    for behaviour in ("values", "broadcast"):
        assert visible(checks.check_masked_attention, with_package_helpers,
                       behaviour).startswith("passed: ")
        assert graded("masked_attention", with_package_helpers, behaviour).startswith("passed: ")


# -- set 04: the learner's function name ----------------------------------------------------

def causal(t):
    return ~np.triu(np.ones((t, t), dtype=bool), k=1)


def causal_mask(t):
    return np.triu(np.ones((t, t), dtype=bool), k=1).tolist()


def test_the_causal_check_names_the_learners_function_as_grading_does():
    said = visible(checks.check_causal_mask, causal)
    assert said.startswith("causal: mask inverted"), said
    assert graded("causal_mask", causal, name="causal").startswith("causal: mask inverted")
    # lesson 00 calls its function causal_mask
    assert visible(checks.check_causal_mask, causal_mask).startswith(
        "causal_mask: you returned a Python list")
    assert visible(checks.check_causal_mask, lambda t: causal(t)).startswith("causal_mask: ")


def imports_inside(q, k, v, mask):
    import mha.tiled  # noqa: F401  (imported, not called)
    w = mha.softmax(np.where(mask, -np.inf, mha.scores(q, k)), axis=-1)
    return w @ v, w


def test_importing_an_mha_module_inside_masked_attention_calls_nothing():
    assert visible(checks.check_masked_attention, imports_inside, "values").startswith("passed")


# -- issue 20, round g ----------------------------------------------------------------------
# set 09: `exp` bound before the answer ran, torch in a thread the answer starts, every block
# in one exp call, mha.tiled.tiled_attention; set 04: mask_from_positions, SDPA; set 06:
# messages naming split / merge.

from numpy import exp  # noqa: E402  (bound before the answer runs, as a notebook cell would)

EXP = np.exp


def from_numpy_exp(s, v, block):
    e = exp(s - s.max())
    return (e / e.sum()) @ v


def aliased_exp(s, v, block):
    e = EXP(s - s.max())
    return (e / e.sum()) @ v


def default_exp(s, v, block, ex=np.exp):
    e = ex(s - s.max())
    return (e / e.sum()) @ v


def _closing_over(ex):
    def online_softmax(s, v, block):
        e = ex(s - s.max())
        return (e / e.sum()) @ v
    return online_softmax


@pytest.mark.parametrize("answer", [from_numpy_exp, aliased_exp, default_exp,
                                    _closing_over(np.exp)])
def test_exp_bound_before_the_answer_ran_is_seen_in_the_check_and_in_grading(answer):
    for said in (visible(checks.check_online_softmax, answer),
                 graded("online_softmax", answer)):
        assert "takes numpy.exp of every score of the row at once" in said, said
    # each name is numpy's exp again afterwards
    assert exp is np.exp and EXP is np.exp and default_exp.__defaults__[0] is np.exp


def blocks_with_bound_exp(s, v, block):
    m, total, out = -np.inf, 0.0, np.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        blk = s[j:j + block]
        m_new = max(m, blk.max())
        c, e = exp(m - m_new), exp(blk - m_new)
        total, out, m = total * c + e.sum(), out * c + e @ v[j:j + block], m_new
    return out / total


def test_a_block_wise_answer_with_exp_bound_before_passes():
    assert visible(checks.check_online_softmax, blocks_with_bound_exp).startswith("passed: ")
    assert graded("online_softmax", blocks_with_bound_exp).startswith("passed: ")
    assert exp is np.exp


def _in_a_thread(work):
    import threading

    box = []
    thread = threading.Thread(target=lambda: box.append(work()))
    thread.start()
    thread.join()
    return box[0]


def torch_exp_in_a_thread(s, v, block):
    def work():
        t = torch.as_tensor(s)
        e = (t - t.max()).exp()
        return (e / e.sum()).numpy() @ v
    return _in_a_thread(work)


def torch_softmax_in_a_pool(s, v, block):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: torch.softmax(torch.as_tensor(s), 0).numpy() @ v).result()


@pytest.mark.parametrize("answer, words", [
    (torch_exp_in_a_thread, "takes torch.exp of every score of the row at once"),
    (torch_softmax_in_a_pool, "calls torch.softmax on every score of the row at once"),
])
def test_torch_in_a_thread_the_answer_starts_is_seen_in_the_check_and_in_grading(answer, words):
    for said in (visible(checks.check_online_softmax, answer),
                 graded("online_softmax", answer)):
        assert words in said, said


def test_a_block_wise_torch_answer_in_a_thread_passes():
    def answer(s, v, block):
        return _in_a_thread(lambda: torch_blocks(s, v, block))
    assert visible(checks.check_online_softmax, answer).startswith("passed: ")
    assert graded("online_softmax", answer).startswith("passed: ")


def every_block_in_one_call(s, v, block):
    """Blocks padded with -inf, reshaped to (n_blocks, block): one exp sees them all."""
    n_blocks = -(-len(s) // block)
    scores = np.full(n_blocks * block, -np.inf)
    scores[:len(s)] = s
    scores = scores.reshape(n_blocks, block)
    values = np.zeros((n_blocks * block, v.shape[-1]))
    values[:len(s)] = v
    m_blk = scores.max(axis=1)
    e = np.exp(scores - m_blk[:, None])
    l_blk, o_blk = e.sum(axis=1), np.einsum("nb,nbd->nd", e, values.reshape(n_blocks, block, -1))
    c = np.exp(m_blk - m_blk.max())
    return (c @ o_blk) / (c @ l_blk)


def test_every_block_in_one_exp_call_is_refused_and_the_message_says_why():
    for said in (visible(checks.check_online_softmax, every_block_in_one_call),
                 graded("online_softmax", every_block_in_one_call)):
        assert "every block in one call, even reshaped to (n_blocks, block), is the whole row" \
            in said and "each exp may see one block" in said, said


def through_tiled_attention(s, v, block):
    q, k = np.ones((1, 1)), np.asarray(s, dtype=float)[:, None]  # q . k = s
    return mha.tiled.tiled_attention(q, k, v, scale=1.0, block_k=block).out[0]


def through_attention(s, v, block):
    q, k = np.ones((1, 1)), np.asarray(s, dtype=float)[:, None]
    return mha.attention(q, k, v, scale=1.0)[0][0]


@pytest.mark.parametrize("answer, what", [(through_tiled_attention, "mha.tiled.tiled_attention"),
                                          (through_attention, "mha.reference.attention")])
def test_an_mha_function_that_does_the_work_breaks_the_online_rule(answer, what):
    for said in (visible(checks.check_online_softmax, answer),
                 graded("online_softmax", answer)):
        assert "the task says do not call mha.tiled.tiled_attention, mha.attention or any other " \
               "function of mha that does the work" in said, said
        assert f"your answer calls {what}" in said, said


def two_passes_with_math_exp(s, v, block):
    """The row's maximum first, then math.exp score by score: every exp sees one score, so
    the stated rule holds (the set's text says the check accepts the two-pass softmax)."""
    import math

    top = max(float(x) for x in s)
    total, out = 0.0, np.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        for x, row in zip(s[j:j + block], v[j:j + block], strict=True):
            e = math.exp(float(x) - top)
            total, out = total + e, out + e * row
    return out / total


def test_the_two_pass_softmax_follows_the_stated_rule_and_the_set_says_so():
    assert visible(checks.check_online_softmax, two_passes_with_math_exp).startswith("passed: ")
    assert graded("online_softmax", two_passes_with_math_exp).startswith("passed: ")
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[1] / "course/source/ex09_memory_speed_precision/"
                     "ex09_memory_speed_precision.ipynb").read_text())
    text = " ".join("".join(c["source"]).replace("\n", " ") for c in nb["cells"])
    assert "(the two-pass softmax) follows these rules and passes" in text
    assert "`(n_blocks, block)`" in text and "`mha.tiled.tiled_attention`" in text


def causal_from_positions(t):
    return mha.masks.mask_from_positions(np.arange(t), np.arange(t))


def test_the_causal_mask_from_positions_breaks_the_rule():
    for said in (visible(checks.check_causal_mask, causal_from_positions),
                 graded("causal_mask", causal_from_positions)):
        assert "the task says do not call mha.masks.mask_from_positions" in said, said
    # an allowed function that calls it (mha.causal_mask in set 08's cache mask) is not blamed
    assert visible(checks.check_cache_mask, lambda n_cached, n_new: mha.causal_mask(
        n_cached + n_new)[n_cached:]).startswith("passed: ")


def through_sdpa(q, k, v, mask):
    import torch.nn.functional as F

    w = mha.softmax(np.where(mask, -np.inf, mha.scores(q, k)), axis=-1)
    q, k, v = (torch.as_tensor(x) for x in (q, k, v))
    allowed = torch.as_tensor(~np.broadcast_to(mask, w.shape))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed).numpy(), w


def test_masked_attention_through_sdpa_breaks_the_rule():
    for behaviour in ("values", "broadcast"):
        for said in (visible(checks.check_masked_attention, through_sdpa, behaviour),
                     graded("masked_attention", through_sdpa, behaviour)):
            assert "the task says do not call torch.nn.functional.scaled_dot_product_attention" \
                in said and "your answer calls torch.nn.functional.scaled_dot_product_attention" \
                in said, said


def torch_masked(q, k, v, mask):
    q, k, v = (torch.as_tensor(x) for x in (q, k, v))
    s = (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(torch.as_tensor(mask),
                                                                  -torch.inf)
    w = torch.softmax(s, -1)
    return w @ v, w


def test_masked_attention_in_torch_without_sdpa_passes():
    for behaviour in ("values", "broadcast"):
        assert visible(checks.check_masked_attention, torch_masked, behaviour).startswith("passed")
        assert graded("masked_attention", torch_masked, behaviour).startswith("passed: ")


def split(x, n_heads):
    return x.reshape(x.shape[0], n_heads, x.shape[1], x.shape[2] // n_heads)


def merge(heads):
    return heads.reshape(heads.shape[0], heads.shape[2], heads.shape[1] * heads.shape[3])


def test_the_head_checks_name_the_learners_functions_as_grading_does():
    for answer, check, task in ((split, checks.check_split_heads, "split_heads"),
                                (merge, checks.check_merge_heads, "merge_heads")):
        assert visible(check, answer).startswith(f"{answer.__name__}: heads "), answer
        assert graded(task, answer, name=answer.__name__).startswith(
            f"{answer.__name__}: heads "), answer
    assert visible(checks.check_split_heads, split, None, True).startswith("split: heads ")
    # the lesson and the package call them split_heads / merge_heads: messages follow the name
    assert visible(checks.check_split_heads, lambda x, h: split(x, h)).startswith(
        "split_heads: heads ")
