"""Specification of the NumPy reference (mha.reference, mha._checks, mha._mask_checks).

First the curriculum's worked numbers, then the dtype rule, then every
refusal with the words its message must contain.
"""

from __future__ import annotations

import numpy as np
import pytest

import mha
from mha import _checks, _mask_checks
from mha._checks import DTypeError

# ---------------------------------------------------------------- worked numbers (01)


def test_weighted_sum_of_two_values_reads_out_1_5_and_1():
    values = np.array([[2.0, 0.0], [0.0, 4.0]])
    weights = np.array([0.75, 0.25])
    np.testing.assert_allclose(weights @ values, [1.5, 1.0])


def test_attention_with_logits_log3_and_0_gives_weights_075_025_and_reads_out_15_1():
    # One query, two keys; scores [log 3, 0] (scale 1) give softmax [3/4, 1/4].
    q = np.array([[1.0]])
    k = np.array([[np.log(3.0)], [0.0]])
    v = np.array([[2.0, 0.0], [0.0, 4.0]])
    out, weights = mha.attention(q, k, v, scale=1.0)
    np.testing.assert_allclose(weights, [[0.75, 0.25]], rtol=1e-12)
    np.testing.assert_allclose(out, [[1.5, 1.0]], rtol=1e-12)


# ---------------------------------------------------------------- softmax (02)


def test_softmax_of_equal_large_logits_is_uniform():
    np.testing.assert_array_equal(mha.softmax(np.array([1000.0, 1000.0])), [0.5, 0.5])


def test_naive_softmax_of_large_logits_overflows_to_nan():
    x = np.array([1000.0, 1000.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(x) / np.sum(np.exp(x))
    assert np.all(np.isnan(naive))


def test_softmax_rows_sum_to_one_along_the_chosen_axis():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(mha.softmax(x, axis=0).sum(axis=0), np.ones(4))
    np.testing.assert_allclose(mha.softmax(x, axis=-1).sum(axis=-1), np.ones(3))


def test_softmax_gives_minus_inf_weight_exactly_zero():
    p = mha.softmax(np.array([0.0, -np.inf, 1.0]))
    assert p[1] == 0.0
    np.testing.assert_allclose(p.sum(), 1.0)


def test_softmax_of_float32_logits_far_apart_is_one_hot_without_warning():
    x = np.array([-3e38, 3e38], dtype=np.float32)
    with np.errstate(all="raise"):
        p = mha.softmax(x)
    np.testing.assert_array_equal(p, [0.0, 1.0])


# ---------------------------------------------------------------- scaling (03)


def test_scores_8_and_minus_8_unscaled_are_nearly_one_hot():
    p = mha.softmax(np.array([8.0, -8.0]))
    assert round(p[0], 7) == 0.9999999
    assert f"{p[1]:.1e}" == "1.1e-07"


def test_scores_8_and_minus_8_divided_by_sqrt_64_give_0881_0119():
    p = mha.softmax(np.array([8.0, -8.0]) / np.sqrt(64))
    np.testing.assert_array_equal(np.round(p, 3), [0.881, 0.119])


def test_default_scale_is_one_over_sqrt_of_the_head_width():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(3, 64)), rng.normal(size=(5, 64))
    np.testing.assert_allclose(mha.scores(q, k), q @ k.T / 8.0, rtol=1e-12)


def test_scale_one_gives_raw_dot_products():
    q, k = np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]])
    np.testing.assert_array_equal(mha.scores(q, k, scale=1.0), [[11.0]])


def test_dividing_scores_by_a_positive_number_changes_the_weights():
    s = np.array([8.0, -8.0, 1.0])
    assert not np.allclose(mha.softmax(s), mha.softmax(s / 8.0))


def test_subtracting_a_constant_from_scores_does_not_change_the_weights():
    s = np.array([8.0, -8.0, 1.0])
    np.testing.assert_allclose(mha.softmax(s), mha.softmax(s - 5.0), rtol=1e-12)


# ---------------------------------------------------------------- masks (04)


def test_mask_before_softmax_on_equal_scores_gives_all_weight_to_the_allowed_key():
    q, k = np.zeros((1, 1)), np.zeros((2, 1))  # scores [0, 0]
    v = np.array([[1.0], [3.0]])
    blocked = np.array([[False, True]])
    out, weights = mha.attention(q, k, v, mask=blocked)
    np.testing.assert_array_equal(weights, [[1.0, 0.0]])
    np.testing.assert_array_equal(out, [[1.0]])


def test_zeroing_after_softmax_gives_half_weight_and_shrinks_the_output():
    q, k = np.zeros((1, 1)), np.zeros((2, 1))
    v = np.array([[1.0], [3.0]])
    blocked = np.array([[False, True]])
    _, unmasked = mha.attention(q, k, v)
    wrong = np.where(blocked, 0.0, unmasked)
    np.testing.assert_array_equal(wrong, [[0.5, 0.0]])
    right_out, _ = mha.attention(q, k, v, mask=blocked)
    assert (wrong @ v)[0, 0] == 0.5 < right_out[0, 0]


# ---------------------------------------------------------------- softmax backward (05)


def test_softmax_backward_at_half_half_with_upstream_1_0_is_quarter_minus_quarter():
    grad = mha.softmax_backward(np.array([0.5, 0.5]), np.array([1.0, 0.0]))
    np.testing.assert_allclose(grad, [0.25, -0.25])


def test_softmax_backward_of_a_constant_upstream_is_zero():
    p = mha.softmax(np.array([0.3, -1.2, 2.0]))
    np.testing.assert_allclose(mha.softmax_backward(p, np.full(3, 7.0)), 0.0, atol=1e-15)


def test_softmax_backward_equals_the_explicit_jacobian_times_upstream():
    rng = np.random.default_rng(1)
    p = mha.softmax(rng.normal(size=5))
    g = rng.normal(size=5)
    jacobian = np.diag(p) - np.outer(p, p)
    np.testing.assert_allclose(mha.softmax_backward(p, g), jacobian @ g, rtol=1e-12, atol=1e-15)


def test_softmax_backward_along_axis_0_treats_columns_as_rows():
    rng = np.random.default_rng(2)
    p = mha.softmax(rng.normal(size=(4, 3)), axis=0)
    g = rng.normal(size=(4, 3))
    expected = mha.softmax_backward(p.T, g.T).T
    np.testing.assert_allclose(mha.softmax_backward(p, g, axis=0), expected, rtol=1e-12)


# ---------------------------------------------------------------- dtype rule


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (np.float64, np.float64),
        (np.float32, np.float32),
        (np.float16, np.float32),
        (np.int8, np.float32),
        (np.int16, np.float32),
        (np.uint8, np.float32),
        (np.uint16, np.float32),
        (np.int32, np.float64),
        (np.uint32, np.float64),
        (np.int64, np.float64),
    ],
)
def test_softmax_result_dtype_follows_result_type_with_float32(dtype, expected):
    assert mha.softmax(np.array([1, 2, 3], dtype=dtype)).dtype == expected


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [(np.float64, np.float64), (np.float32, np.float32), (np.float16, np.float32),
     (np.int16, np.float32), (np.int64, np.float64)],
)
def test_attention_output_and_weights_dtype_follow_the_rule(dtype, expected):
    q = np.ones((2, 3), dtype=dtype)
    out, weights = mha.attention(q, q, q)
    assert out.dtype == expected and weights.dtype == expected


def test_attention_with_mixed_float32_and_float64_computes_in_float64():
    q32 = np.ones((2, 3), dtype=np.float32)
    out, weights = mha.attention(q32, q32, np.ones((2, 3)))
    assert out.dtype == np.float64 and weights.dtype == np.float64


def test_softmax_backward_dtype_is_the_wider_of_its_inputs():
    p32 = np.array([0.5, 0.5], dtype=np.float32)
    assert mha.softmax_backward(p32, p32).dtype == np.float32
    assert mha.softmax_backward(p32, np.array([1.0, 0.0])).dtype == np.float64


def test_scores_dtype_follows_the_rule_for_float32():
    q = np.ones((2, 3), dtype=np.float32)
    assert mha.scores(q, q).dtype == np.float32


def test_int32_logits_past_2_to_24_are_exact_because_they_compute_in_float64():
    # 2**24 + 1 does not fit float32, but int32 computes in float64: no refusal, exact.
    p = mha.softmax(np.array([2**24 + 1, 2**24], dtype=np.int32))
    assert p.dtype == np.float64
    np.testing.assert_allclose(p, mha.softmax(np.array([1.0, 0.0])), rtol=1e-12)


def test_int64_logits_up_to_2_to_53_are_accepted():
    p = mha.softmax(np.array([2**53, 2**53], dtype=np.int64))
    np.testing.assert_array_equal(p, [0.5, 0.5])


def test_computation_dtype_matches_the_documented_table():
    table = {np.float16: np.float32, np.int16: np.float32, np.int32: np.float64,
             np.float32: np.float32, np.uint64: np.float64}
    for dtype, expected in table.items():
        assert _checks.computation_dtype(dtype) == expected


# ---------------------------------------------------------------- refusals: softmax


@pytest.mark.parametrize(
    ("logits", "pattern"),
    [
        (np.array([1 + 2j, 0j]), r"real numbers .* complex128"),
        (np.array(["a", "b"]), r"real numbers .* <U1"),
        (np.array([1.0, 2.0], dtype=object), r"real numbers .* object"),
    ],
    ids=["complex", "string", "object"],
)
def test_softmax_refuses_non_real_dtypes(logits, pattern):
    with pytest.raises(DTypeError, match=pattern):
        mha.softmax(logits)


def test_softmax_refuses_boolean_logits_as_a_likely_mask():
    with pytest.raises(DTypeError, match=r"logits is a boolean array.*looks like a mask"):
        mha.softmax(np.array([True, False]))


def test_dtype_refusal_is_both_a_type_error_and_a_value_error():
    with pytest.raises(TypeError):
        mha.softmax(np.array([True]))
    with pytest.raises(ValueError):
        mha.softmax(np.array([True]))


def test_softmax_refuses_nan():
    with pytest.raises(ValueError, match=r"NaN \(first at index \(1,\)\)"):
        mha.softmax(np.array([0.0, np.nan]))


def test_softmax_refuses_plus_inf():
    with pytest.raises(ValueError, match=r"\+inf .* only -inf is allowed"):
        mha.softmax(np.array([np.inf, 0.0]))


def test_softmax_refuses_a_fully_masked_row_and_names_it():
    logits = np.array([[0.0, 1.0], [-np.inf, -np.inf]])
    with pytest.raises(ValueError, match=r"fully masked row.*row index \(1,\)"):
        mha.softmax(logits)


def test_softmax_refuses_a_single_fully_masked_vector():
    with pytest.raises(ValueError, match=r"fully masked row.*the only row"):
        mha.softmax(np.array([-np.inf, -np.inf]))


def test_softmax_refuses_int64_logits_that_float64_cannot_hold_exactly():
    pattern = r"integer 9007199254740993 .* float64 cannot hold exactly"
    with pytest.raises(ValueError, match=pattern):
        mha.softmax(np.array([2**53 + 1, 0]))


def test_softmax_refuses_uint64_logits_that_float64_cannot_hold_exactly():
    with pytest.raises(ValueError, match=r"cannot hold exactly"):
        mha.softmax(np.array([2**64 - 1, 0], dtype=np.uint64))


def test_softmax_refuses_an_empty_axis():
    with pytest.raises(ValueError, match=r"empty axis"):
        mha.softmax(np.zeros((3, 0)))


def test_softmax_refuses_a_0d_scalar():
    with pytest.raises(ValueError, match=r"at least one axis.*0-d"):
        mha.softmax(np.float64(1.0))


def test_softmax_refuses_an_axis_out_of_range():
    with pytest.raises(ValueError, match=r"axis 2 is out of range .* 1 dims"):
        mha.softmax(np.ones(3), axis=2)


def test_softmax_refuses_a_non_integer_axis():
    with pytest.raises(TypeError, match=r"axis must be an int; got 1.0"):
        mha.softmax(np.ones((2, 2)), axis=1.0)


# ---------------------------------------------------------------- refusals: softmax_backward


def test_softmax_backward_refuses_shapes_that_differ():
    with pytest.raises(ValueError, match=r"probs has shape \(2,\) but upstream has shape \(3,\)"):
        mha.softmax_backward(np.array([0.5, 0.5]), np.ones(3))


def test_softmax_backward_refuses_logits_in_place_of_probabilities():
    with pytest.raises(ValueError, match=r"row \(1,\) sums to 5.*not the logits"):
        mha.softmax_backward(np.array([[0.5, 0.5], [2.0, 3.0]]), np.ones((2, 2)))


def test_softmax_backward_refuses_negative_probabilities():
    with pytest.raises(ValueError, match=r"negative entry at index \(1,\)"):
        mha.softmax_backward(np.array([1.5, -0.5]), np.ones(2))


def test_softmax_backward_refuses_complex_upstream():
    with pytest.raises(DTypeError, match=r"upstream must be real numbers"):
        mha.softmax_backward(np.array([0.5, 0.5]), np.array([1j, 0j]))


def test_softmax_backward_refuses_nan_upstream():
    with pytest.raises(ValueError, match=r"upstream contains NaN at index \(0,\)"):
        mha.softmax_backward(np.array([0.5, 0.5]), np.array([np.nan, 0.0]))


def test_softmax_backward_refuses_a_0d_input():
    with pytest.raises(ValueError, match=r"softmax_backward needs at least one axis"):
        mha.softmax_backward(np.float64(1.0), np.float64(1.0))


def test_softmax_backward_refuses_an_axis_out_of_range():
    with pytest.raises(ValueError, match=r"softmax_backward: axis -3 is out of range"):
        mha.softmax_backward(np.full((2, 2), 0.5), np.ones((2, 2)), axis=-3)


def test_softmax_backward_refuses_an_empty_axis():
    with pytest.raises(ValueError, match=r"empty axis"):
        mha.softmax_backward(np.zeros((2, 0)), np.zeros((2, 0)))


# ---------------------------------------------------------------- refusals: scores / attention

Q = np.ones((2, 4))
K = np.ones((3, 4))
V = np.ones((3, 5))


def test_scores_refuse_q_and_k_of_different_width():
    with pytest.raises(ValueError, match=r"share the feature width d_k.*d_k=4.*d_k=3"):
        mha.scores(Q, np.ones((3, 3)))


def test_attention_refuses_k_and_v_with_different_numbers_of_positions():
    with pytest.raises(ValueError, match=r"same number of positions Tk.*Tk=3.*Tk=2"):
        mha.attention(Q, K, np.ones((2, 5)))


def test_attention_refuses_leading_dims_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"leading \(batch/head\) dims do not broadcast"):
        mha.attention(np.ones((2, 2, 4)), np.ones((3, 3, 4)), np.ones((3, 3, 5)))


def test_attention_broadcasts_leading_dims():
    out, weights = mha.attention(np.ones((2, 1, 2, 4)), np.ones((3, 3, 4)), np.ones((3, 3, 5)))
    assert out.shape == (2, 3, 2, 5) and weights.shape == (2, 3, 2, 3)


@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_attention_refuses_nan_in_any_input_and_names_it(name):
    arrays = {"q": Q.copy(), "k": K.copy(), "v": V.copy()}
    arrays[name][1, 2] = np.nan
    with pytest.raises(ValueError, match=rf"{name} contains NaN at index \(1, 2\)"):
        mha.attention(**arrays)


def test_attention_refuses_minus_inf_in_k_with_its_sign():
    k = K.copy()
    k[0, 0] = -np.inf
    with pytest.raises(ValueError, match=r"k contains -inf at index \(0, 0\)"):
        mha.attention(Q, k, V)


def test_attention_refuses_plus_inf_in_v_with_its_sign():
    v = V.copy()
    v[2, 4] = np.inf
    with pytest.raises(ValueError, match=r"v contains \+inf at index \(2, 4\)"):
        mha.attention(Q, K, v)


def test_attention_refuses_complex_q():
    with pytest.raises(DTypeError, match=r"q must be real numbers.*complex"):
        mha.attention(Q.astype(complex), K, V)


def test_attention_refuses_boolean_v_as_a_likely_mask():
    with pytest.raises(DTypeError, match=r"v is a boolean array.*mask="):
        mha.attention(Q, K, np.ones((3, 5), dtype=bool))


def test_attention_refuses_1d_q():
    with pytest.raises(ValueError, match=r"q must have at least 2 dims \(\.\.\., T, d\)"):
        mha.attention(np.ones(4), K, V)


def test_attention_refuses_int64_input_not_exactly_representable():
    q = np.array([[2**53 + 1]], dtype=np.int64)
    pattern = r"q holds the integer 9007199254740993.*cannot hold exactly"
    with pytest.raises(ValueError, match=pattern):
        mha.attention(q, np.ones((1, 1)), np.ones((1, 1)))


def test_scores_refuse_zero_features():
    with pytest.raises(ValueError, match=r"no features \(d_k=0"):
        mha.scores(np.ones((2, 0)), np.ones((3, 0)))


def test_attention_refuses_zero_keys():
    with pytest.raises(ValueError, match=r"k has no positions \(Tk=0"):
        mha.attention(Q, np.ones((0, 4)), np.ones((0, 5)))


def test_scores_refuse_float32_overflow_instead_of_calling_it_a_mask():
    big = np.full((1, 2), 1e20, dtype=np.float32)
    with pytest.raises(ValueError, match=r"overflow float32"):
        mha.scores(big, big)


def test_attention_refuses_scores_that_overflow_to_minus_inf():
    # Without the check every score is -inf and softmax would blame "a fully masked row".
    q = np.full((1, 1), 1e20, dtype=np.float32)
    k = np.full((2, 1), -1e20, dtype=np.float32)
    with pytest.raises(ValueError, match=r"overflow float32.*float64"):
        mha.attention(q, k, np.ones((2, 1), dtype=np.float32))


@pytest.mark.parametrize(
    ("scale", "pattern"),
    [(-1.0, r"finite number >= 0"), (np.inf, r"finite number >= 0"),
     (np.nan, r"finite number >= 0"), (np.ones(2), r"single number")],
    ids=["negative", "inf", "nan", "array"],
)
def test_scores_refuse_a_bad_scale(scale, pattern):
    with pytest.raises(ValueError, match=pattern):
        mha.scores(Q, K, scale=scale)


def test_scores_refuse_a_boolean_scale():
    with pytest.raises(DTypeError, match=r"scale must be a real number"):
        mha.scores(Q, K, scale=True)


def test_scale_zero_gives_uniform_weights():
    rng = np.random.default_rng(3)
    _, weights = mha.attention(rng.normal(size=(2, 4)), rng.normal(size=(3, 4)), V, scale=0.0)
    np.testing.assert_allclose(weights, np.full((2, 3), 1 / 3))


# ---------------------------------------------------------------- refusals: masks in attention


def test_attention_refuses_an_integer_mask_and_names_the_convention_and_fix():
    with pytest.raises(DTypeError, match=r"True = blocked.*int64.*`mask == 1`.*`mask == 0`"):
        mha.attention(Q, K, V, mask=np.array([0, 1, 0]))


def test_attention_refuses_a_float_mask_and_points_to_from_additive():
    with pytest.raises(DTypeError, match=r"True = blocked.*float64.*from_additive"):
        mha.attention(Q, K, V, mask=np.array([0.0, -np.inf, 0.0]))


def test_attention_refuses_a_float_0_1_mask_and_asks_which_value_blocks():
    with pytest.raises(DTypeError, match=r"True = blocked.*float32.*0/1 mask.*`mask == 1`"):
        mha.attention(Q, K, V, mask=np.array([0.0, 1.0, 0.0], dtype=np.float32))


def test_attention_refuses_a_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"mask of shape \(4,\) does not broadcast.*\(2, 3\)"):
        mha.attention(Q, K, V, mask=np.zeros(4, dtype=bool))


def test_attention_refuses_a_mask_that_blocks_a_whole_row():
    mask = np.array([[False, True, True], [True, True, True]])
    with pytest.raises(ValueError, match=r"fully masked row.*for query 1 \(index \(1,\)\)"):
        mha.attention(Q, K, V, mask=mask)


def test_attention_accepts_a_key_mask_that_broadcasts_over_queries():
    _, weights = mha.attention(Q, K, V, mask=np.array([False, True, False]))
    np.testing.assert_array_equal(weights[:, 1], 0.0)


# ---------------------------------------------------------------- the helpers in _checks


def test_first_index_returns_plain_ints():
    index = _checks.first_index(np.array([[False, False], [False, True]]))
    assert index == (1, 1) and all(type(i) is int for i in index)


def test_as_float_array_refuses_too_few_dims():
    with pytest.raises(ValueError, match=r"x must have at least 3 dims.*\(2, 2\)"):
        _checks.as_float_array(np.ones((2, 2)), "x", min_ndim=3)


def test_as_float_array_refuses_strings():
    with pytest.raises(DTypeError, match=r"x must be real numbers.*<U3"):
        _checks.as_float_array(np.array(["abc"]), "x")


def test_as_float_array_keeps_float64_without_copying():
    x = np.ones(3)
    assert _checks.as_float_array(x, "x") is x


def test_check_mask_returns_the_mask_broadcast_to_the_scores_shape():
    m = _mask_checks.check_mask(np.array([False, True]), (3, 2))
    assert m.shape == (3, 2) and m[:, 1].all() and not m[:, 0].any()


def test_check_mask_refuses_an_object_mask():
    with pytest.raises(DTypeError, match=r"mask must be boolean with True = blocked"):
        _mask_checks.check_mask(np.array([None, None]), (1, 2))


def test_check_probs_accepts_a_softmax_output():
    _checks.check_probs(mha.softmax(np.arange(6.0).reshape(2, 3)))


def test_check_probs_reports_the_sum_of_the_only_row():
    with pytest.raises(ValueError, match=r"the only row sums to 0.5"):
        _checks.check_probs(np.array([0.25, 0.25]))
