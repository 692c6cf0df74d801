"""Properties of the NumPy reference that hold for every shape, dtype and mask."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha

# Modest example counts: the suite shares a small machine.
FEW = settings(max_examples=50, deadline=None, database=None)

DTYPES = st.sampled_from([np.float32, np.float64])
TOL = {np.float32: 1e-5, np.float64: 1e-12}


@st.composite
def attention_case(draw, with_mask=True):
    """q (..., Tq, dk), k (..., Tk, dk), v (..., Tk, dv), a mask with an allowed key per row."""
    dtype = draw(DTYPES)
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    tq, tk = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    dk, dv = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q = rng.normal(size=(*lead, tq, dk)).astype(dtype)
    k = rng.normal(size=(*lead, tk, dk)).astype(dtype)
    v = rng.normal(size=(*lead, tk, dv)).astype(dtype)
    mask = None
    if with_mask:
        mask = rng.random((*lead, tq, tk)) < 0.5
        keep = rng.integers(0, tk, size=(*lead, tq))  # one key per row stays allowed
        np.put_along_axis(mask, keep[..., None], False, axis=-1)
    return dtype, q, k, v, mask


@st.composite
def logits_rows(draw):
    dtype = draw(DTYPES)
    rows, n = draw(st.integers(1, 4)), draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0]))
    return dtype, (rng.normal(size=(rows, n)) * scale).astype(dtype)


@FEW
@given(attention_case())
def test_attention_weight_rows_sum_to_one(case):
    dtype, q, k, v, mask = case
    _, weights = mha.attention(q, k, v, mask=mask)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=0, atol=10 * TOL[dtype])


@FEW
@given(attention_case())
def test_attention_keeps_the_input_float_dtype(case):
    dtype, q, k, v, mask = case
    out, weights = mha.attention(q, k, v, mask=mask)
    assert out.dtype == dtype and weights.dtype == dtype


@FEW
@given(attention_case())
def test_blocked_keys_get_exactly_zero_weight(case):
    _, q, k, v, mask = case
    _, weights = mha.attention(q, k, v, mask=mask)
    assert np.all(weights[mask] == 0.0)


@FEW
@given(attention_case())
def test_output_is_a_convex_combination_of_the_allowed_values(case):
    dtype, q, k, v, mask = case
    out, _ = mha.attention(q, k, v, mask=mask)  # (..., Tq, dv)
    allowed = ~mask[..., :, :, None]  # (..., Tq, Tk, 1)
    vals = v[..., None, :, :]  # (..., 1, Tk, dv)
    lo = np.min(np.where(allowed, vals, np.inf), axis=-2)
    hi = np.max(np.where(allowed, vals, -np.inf), axis=-2)
    slack = 10 * TOL[dtype] * (1 + np.abs(v).max())
    assert np.all(out >= lo - slack) and np.all(out <= hi + slack)


@FEW
@given(logits_rows(), st.floats(-50, 50))
def test_softmax_is_invariant_to_adding_a_constant(case, shift):
    dtype, s = case
    np.testing.assert_allclose(
        mha.softmax(s + dtype(shift)), mha.softmax(s), rtol=100 * TOL[dtype], atol=TOL[dtype]
    )


@FEW
@given(logits_rows())
def test_softmax_is_invariant_to_a_per_row_constant(case):
    dtype, s = case
    per_row = np.arange(s.shape[0], dtype=dtype)[:, None] * dtype(3.0)
    np.testing.assert_allclose(
        mha.softmax(s - per_row), mha.softmax(s), rtol=100 * TOL[dtype], atol=TOL[dtype]
    )


@FEW
@given(logits_rows(), st.sampled_from([0.25, 0.5, 2.0, 4.0]))
def test_softmax_changes_under_positive_scaling_of_a_non_constant_row(case, factor):
    _, s = case
    # Keep rows unsaturated and non-constant: entries in [-3, 3], the first 1 above the rest.
    s = np.clip(s.astype(np.float64), -3.0, 3.0)
    s = np.concatenate([s.max(axis=-1, keepdims=True) + 1.0, s], axis=-1)
    p, scaled = mha.softmax(s), mha.softmax(s * factor)
    assert np.all(np.max(np.abs(p - scaled), axis=-1) > 1e-6)


@FEW
@given(logits_rows())
def test_softmax_backward_sums_to_zero_along_the_row(case):
    dtype, s = case
    p = mha.softmax(s)
    g = np.random.default_rng(0).normal(size=s.shape).astype(dtype)
    np.testing.assert_allclose(mha.softmax_backward(p, g).sum(axis=-1), 0.0, atol=100 * TOL[dtype])


@FEW
@given(attention_case(with_mask=False), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_leaves_the_output_unchanged(case, random):
    dtype, q, k, v, _ = case
    perm = list(range(k.shape[-2]))
    random.shuffle(perm)
    out, _ = mha.attention(q, k, v)
    permuted, _ = mha.attention(q, k[..., perm, :], v[..., perm, :])
    np.testing.assert_allclose(permuted, out, rtol=100 * TOL[dtype], atol=100 * TOL[dtype])


@FEW
@given(attention_case(with_mask=False), st.randoms(use_true_random=False))
def test_permuting_queries_permutes_the_output_rows(case, random):
    dtype, q, k, v, _ = case
    perm = list(range(q.shape[-2]))
    random.shuffle(perm)
    out, _ = mha.attention(q, k, v)
    permuted, _ = mha.attention(q[..., perm, :], k, v)
    np.testing.assert_allclose(permuted, out[..., perm, :], rtol=100 * TOL[dtype],
                               atol=100 * TOL[dtype])


@pytest.mark.parametrize("bias", [False, True])
@settings(max_examples=25, deadline=None, database=None)
@given(
    n_heads=st.sampled_from([1, 2, 4]),
    t=st.integers(2, 6),
    seed=st.integers(0, 2**32 - 1),
    random=st.randoms(use_true_random=False),
)
def test_multihead_self_attention_is_permutation_equivariant(bias, n_heads, t, seed, random):
    layer = mha.MultiHeadAttention(8, n_heads, bias=bias, seed=seed % 1000)
    x = np.random.default_rng(seed).normal(size=(2, t, 8))
    perm = list(range(t))
    random.shuffle(perm)
    out, weights = layer(x)
    out_p, weights_p = layer(x[:, perm])
    np.testing.assert_allclose(out_p, out[:, perm], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights_p, weights[:, :, perm][..., perm], rtol=1e-10, atol=1e-12)


@FEW
@given(attention_case(with_mask=False), st.data())
def test_is_causal_output_of_a_query_ignores_every_key_after_its_position(case, data):
    """Query i sits at position Tk - Tq + i: changing later keys and values changes nothing."""
    dtype, q, k, v, _ = case
    tq, tk = q.shape[-2], k.shape[-2]
    if tq > tk:
        q = q[..., :tk, :]
        tq = tk
    i = data.draw(st.integers(0, tq - 1))
    first_hidden = tk - tq + i + 1
    k2, v2 = k.copy(), v.copy()
    k2[..., first_hidden:, :] += 3.0
    v2[..., first_hidden:, :] -= 5.0
    out, _ = mha.attention(q, k, v, is_causal=True)
    out2, _ = mha.attention(q, k2, v2, is_causal=True)
    np.testing.assert_allclose(out2[..., i, :], out[..., i, :], rtol=TOL[dtype], atol=TOL[dtype])


@FEW
@given(attention_case(with_mask=False))
def test_is_causal_equals_the_explicit_lower_right_mask(case):
    _, q, k, v, _ = case
    tq, tk = q.shape[-2], k.shape[-2]
    if tq > tk:
        with pytest.raises(ValueError, match="is_causal=True with Tq="):
            mha.attention(q, k, v, is_causal=True)
        return
    out, w = mha.attention(q, k, v, is_causal=True)
    blocked = mha.masks.mask_from_positions(np.arange(tk - tq, tk), np.arange(tk))
    out_m, w_m = mha.attention(q, k, v, mask=blocked)
    np.testing.assert_array_equal(out, out_m)
    np.testing.assert_array_equal(w, w_m)
