"""Specification of the hand-written backward: mha.attention_backward and softmax_jacobian.

The reference is torch autograd in float64 on the same forward formula
(scores, mask before softmax, weighted sum), with retain_grad() on the
intermediate scores and weights.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import numerical
from mha.backward import AttentionGrads, _unbroadcast, softmax_jacobian


def torch_grads(q, k, v, d_out, mask=None, scale=None):
    """Autograd of L = sum(attention(q, k, v) * d_out), one gradient per stage."""
    qt, kt, vt = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = (qt @ kt.transpose(-1, -2)) * scale
    s.retain_grad()
    masked = s if mask is None else s.masked_fill(torch.tensor(mask), -torch.inf)
    a = torch.softmax(masked, dim=-1)
    a.retain_grad()
    ((a @ vt) * torch.tensor(d_out)).sum().backward()
    return AttentionGrads(qt.grad.numpy(), kt.grad.numpy(), vt.grad.numpy(),
                          a.grad.numpy(), s.grad.numpy())


def random_case(rng, q_shape, k_shape, v_shape):
    q, k, v = (rng.standard_normal(shape) for shape in (q_shape, k_shape, v_shape))
    out, _ = mha.attention(q, k, v)
    return q, k, v, rng.standard_normal(out.shape)


def assert_grads_close(ours, theirs, atol=1e-12):
    assert isinstance(ours, AttentionGrads)
    for name, mine, ref in zip(AttentionGrads._fields, ours, theirs, strict=True):
        assert mine.shape == ref.shape, f"{name}: shape {mine.shape} != torch {ref.shape}"
        np.testing.assert_allclose(mine, ref, rtol=0, atol=atol, err_msg=name)


# --- agreement with torch autograd -------------------------------------------------------

def test_matches_autograd_for_one_head_without_batch():
    q, k, v, g = random_case(np.random.default_rng(0), (4, 3), (4, 3), (4, 3))
    assert_grads_close(mha.attention_backward(q, k, v, g), torch_grads(q, k, v, g))


def test_matches_autograd_with_batch_and_head_dims():
    q, k, v, g = random_case(np.random.default_rng(1), (2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4))
    assert_grads_close(mha.attention_backward(q, k, v, g), torch_grads(q, k, v, g))


def test_matches_autograd_for_cross_attention_with_tq_tk_dk_dv_all_different():
    q, k, v, g = random_case(np.random.default_rng(2), (3, 2), (5, 2), (5, 4))
    grads = mha.attention_backward(q, k, v, g)
    assert (grads.dq.shape, grads.dk.shape, grads.dv.shape) == ((3, 2), (5, 2), (5, 4))
    assert grads.d_weights.shape == grads.d_scores.shape == (3, 5)
    assert_grads_close(grads, torch_grads(q, k, v, g))


def test_broadcast_key_and_value_get_gradients_summed_over_the_shared_dim():
    # One k, v per batch shared by all 3 heads: (2, 1, Tk, d) against q (2, 3, Tq, d).
    q, k, v, g = random_case(np.random.default_rng(3), (2, 3, 4, 2), (2, 1, 5, 2), (2, 1, 5, 3))
    grads = mha.attention_backward(q, k, v, g)
    assert grads.dk.shape == k.shape and grads.dv.shape == v.shape
    assert_grads_close(grads, torch_grads(q, k, v, g))


def test_missing_leading_dims_get_gradients_summed_over_them():
    # q without batch dims, k and v with (B, H): dq must be (Tq, dk) again.
    q, k, v, g = random_case(np.random.default_rng(4), (4, 2), (2, 3, 4, 2), (2, 3, 4, 3))
    grads = mha.attention_backward(q, k, v, g)
    assert grads.dq.shape == (4, 2)
    assert_grads_close(grads, torch_grads(q, k, v, g))


def test_matches_autograd_with_a_custom_scale():
    q, k, v, g = random_case(np.random.default_rng(5), (3, 4), (3, 4), (3, 2))
    assert_grads_close(mha.attention_backward(q, k, v, g, scale=0.3),
                       torch_grads(q, k, v, g, scale=0.3))


@settings(max_examples=25, deadline=None)
@given(
    lead=st.sampled_from([(), (2,), (2, 3)]),
    tq=st.integers(1, 4), tk=st.integers(1, 4), dk=st.integers(1, 4), dv=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_matches_autograd_on_random_shapes(lead, tq, tk, dk, dv, seed):
    q, k, v, g = random_case(np.random.default_rng(seed), (*lead, tq, dk), (*lead, tk, dk),
                             (*lead, tk, dv))
    assert_grads_close(mha.attention_backward(q, k, v, g), torch_grads(q, k, v, g))


# --- masks -------------------------------------------------------------------------------

def test_matches_autograd_with_a_causal_mask():
    q, k, v, g = random_case(np.random.default_rng(6), (2, 5, 3), (2, 5, 3), (2, 5, 2))
    mask = mha.causal_mask(5)
    assert_grads_close(mha.attention_backward(q, k, v, g, mask=mask),
                       torch_grads(q, k, v, g, mask=mask))


def test_is_causal_gives_the_gradients_of_the_explicit_causal_mask():
    q, k, v, g = random_case(np.random.default_rng(16), (5, 3), (5, 3), (5, 2))
    assert_grads_close(mha.attention_backward(q, k, v, g, is_causal=True),
                       mha.attention_backward(q, k, v, g, mask=mha.causal_mask(5)), atol=0)


def test_is_causal_with_fewer_queries_than_keys_aligns_lower_right():
    q, k, v, g = random_case(np.random.default_rng(17), (2, 3), (5, 3), (5, 2))
    lower_right = np.triu(np.ones((2, 5), dtype=bool), k=4)  # queries at positions 3 and 4
    assert_grads_close(mha.attention_backward(q, k, v, g, is_causal=True),
                       torch_grads(q, k, v, g, mask=lower_right))


def test_blocked_entries_get_exactly_zero_d_scores():
    q, k, v, g = random_case(np.random.default_rng(7), (6, 3), (6, 3), (6, 2))
    mask = mha.causal_mask(6)
    d_scores = mha.attention_backward(q, k, v, g, mask=mask).d_scores
    assert np.all(d_scores[mask] == 0)
    assert np.all(d_scores[~mask & ~np.eye(6, dtype=bool)] != 0)  # allowed paths do carry some


def test_matches_autograd_with_a_padding_mask_over_batch_and_heads():
    rng = np.random.default_rng(8)
    q, k, v, g = random_case(rng, (2, 3, 4, 2), (2, 3, 4, 2), (2, 3, 4, 3))
    mask = mha.padding_mask(np.array([4, 2]), 4)  # (2, 1, 1, 4)
    grads = mha.attention_backward(q, k, v, g, mask=mask)
    assert np.all(grads.d_scores[1, :, :, 2:] == 0)
    assert np.all(grads.dk[1, :, 2:] == 0) and np.all(grads.dv[1, :, 2:] == 0)  # padded keys
    assert_grads_close(grads, torch_grads(q, k, v, g, mask=mask))


def test_first_causal_query_gets_no_gradient():
    # Query 0 reads only key 0 with weight 1 whatever its score: a constant has no gradient.
    q, k, v, g = random_case(np.random.default_rng(9), (4, 2), (4, 2), (4, 3))
    grads = mha.attention_backward(q, k, v, g, mask=mha.causal_mask(4))
    assert np.all(grads.d_scores[0] == 0) and np.all(grads.dq[0] == 0)


# --- worked numbers and properties -----------------------------------------------------

def test_worked_example_loss_on_the_first_weight_gives_quarter_minus_quarter():
    # Scores (0, 0) -> weights (0.5, 0.5); values (1, 0) make the output the first weight.
    q, k = np.zeros((1, 1)), np.zeros((2, 1))
    v, d_out = np.array([[1.0], [0.0]]), np.array([[1.0]])
    grads = mha.attention_backward(q, k, v, d_out)
    np.testing.assert_allclose(grads.d_weights, [[1.0, 0.0]])
    np.testing.assert_allclose(grads.d_scores, [[0.25, -0.25]], atol=1e-15)


def test_rows_of_d_scores_sum_to_zero():
    q, k, v, g = random_case(np.random.default_rng(10), (3, 6, 4), (3, 7, 4), (3, 7, 5))
    d_scores = mha.attention_backward(q, k, v, g).d_scores
    np.testing.assert_allclose(d_scores.sum(axis=-1), 0.0, atol=1e-14)


def test_dq_matches_central_differences_of_the_forward():
    q, k, v, g = random_case(np.random.default_rng(11), (3, 2), (4, 2), (4, 3))
    mask = np.array([[False, True, False, False]] * 3)
    fd = numerical.numerical_gradient(lambda x: np.sum(mha.attention(x, k, v, mask=mask)[0] * g),
                                      q)
    np.testing.assert_allclose(mha.attention_backward(q, k, v, g, mask=mask).dq, fd, atol=1e-8)


def test_float32_inputs_give_float32_gradients_even_for_a_float64_d_out():
    q, k, v, g = random_case(np.random.default_rng(12), (3, 2), (3, 2), (3, 2))
    grads = mha.attention_backward(*(x.astype(np.float32) for x in (q, k, v)), g)
    assert {x.dtype for x in grads} == {np.dtype(np.float32)}
    assert_grads_close(grads, torch_grads(q, k, v, g), atol=1e-5)


# --- refusals ----------------------------------------------------------------------------

def test_refuses_d_out_of_the_wrong_shape():
    q, k, v, g = random_case(np.random.default_rng(13), (3, 2), (4, 2), (4, 5))
    with pytest.raises(ValueError, match=r"d_out has shape \(5, 3\).*\(3, 5\)"):
        mha.attention_backward(q, k, v, g.T)


def test_refuses_d_out_shaped_like_the_unbroadcast_input():
    q, k, v, _ = random_case(np.random.default_rng(14), (4, 2), (2, 4, 2), (2, 4, 3))
    with pytest.raises(ValueError, match="d_out has shape"):
        mha.attention_backward(q, k, v, np.ones((4, 3)))  # output is (2, 4, 3)


def test_refuses_a_non_finite_d_out():
    q, k, v, g = random_case(np.random.default_rng(15), (2, 2), (2, 2), (2, 2))
    g[1, 0] = np.nan
    with pytest.raises(ValueError, match="d_out contains NaN"):
        mha.attention_backward(q, k, v, g)


def test_refuses_a_boolean_d_out():
    q, k, v, _ = random_case(np.random.default_rng(16), (2, 2), (2, 2), (2, 2))
    with pytest.raises(TypeError, match="d_out is a boolean"):
        mha.attention_backward(q, k, v, np.ones((2, 2), dtype=bool))


def test_refuses_q_and_k_of_different_widths():
    rng = np.random.default_rng(17)
    with pytest.raises(ValueError, match="feature width d_k"):
        mha.attention_backward(rng.standard_normal((2, 3)), rng.standard_normal((2, 4)),
                               rng.standard_normal((2, 4)), np.ones((2, 4)))


def test_refuses_a_fully_masked_row():
    q, k, v, g = random_case(np.random.default_rng(18), (2, 2), (2, 2), (2, 2))
    mask = np.array([[False, False], [True, True]])
    with pytest.raises(ValueError, match="fully masked"):
        mha.attention_backward(q, k, v, g, mask=mask)


def test_refuses_a_non_boolean_mask():
    q, k, v, g = random_case(np.random.default_rng(19), (2, 2), (2, 2), (2, 2))
    with pytest.raises(TypeError, match="boolean"):
        mha.attention_backward(q, k, v, g, mask=np.triu(np.ones((2, 2)), 1))


def test_unbroadcast_refuses_a_shape_it_cannot_reach():
    with pytest.raises(ValueError, match="unbroadcast"):
        _unbroadcast(np.ones((2, 3)), (2, 4))


# --- softmax_jacobian --------------------------------------------------------------------

def test_jacobian_at_half_half_is_quarter_with_minus_quarter_off_diagonal():
    np.testing.assert_allclose(softmax_jacobian([0.5, 0.5]), [[0.25, -0.25], [-0.25, 0.25]])


def test_jacobian_transposed_times_g_is_softmax_backward():
    rng = np.random.default_rng(20)
    p, g = mha.softmax(rng.standard_normal((3, 5))), rng.standard_normal((3, 5))
    via_jacobian = np.einsum("rij,ri->rj", softmax_jacobian(p), g)  # J^T g, row by row
    np.testing.assert_allclose(via_jacobian, mha.softmax_backward(p, g), atol=1e-15)


def test_jacobian_matches_central_differences_of_softmax():
    s = np.random.default_rng(21).standard_normal(5)
    fd = numerical.numerical_jacobian(mha.softmax, s)
    np.testing.assert_allclose(softmax_jacobian(mha.softmax(s)), fd, atol=1e-9)


def test_jacobian_rows_sum_to_zero():
    p = mha.softmax(np.random.default_rng(22).standard_normal((2, 6)))
    np.testing.assert_allclose(softmax_jacobian(p).sum(axis=-1), 0.0, atol=1e-15)


def test_jacobian_keeps_float32():
    assert softmax_jacobian(np.array([0.25, 0.75], dtype=np.float32)).dtype == np.float32


def test_jacobian_refuses_logits_that_do_not_sum_to_one():
    with pytest.raises(ValueError, match="sum to 1"):
        softmax_jacobian([0.2, 0.3])


def test_jacobian_refuses_negative_entries():
    with pytest.raises(ValueError, match="negative"):
        softmax_jacobian([1.5, -0.5])


def test_jacobian_refuses_a_scalar():
    with pytest.raises(ValueError, match="at least 1 dims"):
        softmax_jacobian(1.0)
