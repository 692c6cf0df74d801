"""Specifications of mha.masks: the boolean convention (True = blocked), the
mask builders, and every crossing to another library's convention."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import mha
from mha import masks

# -- causal_mask ------------------------------------------------------------


def test_causal_mask_blocks_exactly_the_strict_upper_triangle():
    expected = np.array([[False, True, True], [False, False, True], [False, False, False]])
    np.testing.assert_array_equal(masks.causal_mask(3), expected)


def test_causal_mask_lets_each_position_see_itself():
    assert not np.any(np.diagonal(masks.causal_mask(6)))


def test_causal_mask_as_additive_is_zero_on_and_below_the_diagonal_and_minus_inf_above():
    additive = masks.to_additive(masks.causal_mask(4))
    np.testing.assert_array_equal(np.tril(additive), np.zeros((4, 4)))
    assert np.all(np.isneginf(additive[np.triu_indices(4, 1)]))


def test_causal_mask_is_exported_at_top_level():
    assert mha.causal_mask is masks.causal_mask


def test_causal_mask_with_window_blocks_keys_that_far_back():
    m = masks.causal_mask(4, window=2)
    np.testing.assert_array_equal(m[3], [True, True, False, False])


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "3"])
def test_causal_mask_refuses_a_length_that_is_not_a_positive_integer(bad):
    with pytest.raises(ValueError, match="causal_mask needs a positive integer length"):
        masks.causal_mask(bad)


def test_causal_mask_matches_torch_is_causal_on_a_square():
    q, k, v = torch.randn(3, 1, 1, 5, 4, dtype=torch.float64)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = F.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.from_numpy(masks.to_sdpa(masks.causal_mask(5))))
    torch.testing.assert_close(got, expected)


# -- mask_from_positions ----------------------------------------------------


def test_mask_from_positions_blocks_keys_after_the_query():
    m = masks.mask_from_positions([3, 4], np.arange(5))
    np.testing.assert_array_equal(m, [[False, False, False, False, True], [False] * 5])


def test_kv_cache_mask_from_positions_gives_25_and_30():
    """Cached positions 0, 1, 2 plus new 3, 4; all scores 0; values 10..50."""
    q, k = np.zeros((2, 1)), np.zeros((5, 1))
    v = np.array([[10.0], [20.0], [30.0], [40.0], [50.0]])
    out, _ = mha.attention(q, k, v, mask=masks.mask_from_positions([3, 4], np.arange(5)))
    np.testing.assert_allclose(out[:, 0], [25.0, 30.0])


def test_kv_cache_upper_left_causal_mask_gives_10_and_15():
    """The mask of is_causal=True on a (2, 5) score matrix: aligned top-left, wrong here."""
    q, k = np.zeros((2, 1)), np.zeros((5, 1))
    v = np.array([[10.0], [20.0], [30.0], [40.0], [50.0]])
    upper_left = np.triu(np.ones((2, 5)), 1).astype(bool)
    out, _ = mha.attention(q, k, v, mask=upper_left)
    np.testing.assert_allclose(out[:, 0], [10.0, 15.0])


def test_mask_from_positions_equals_causal_mask_when_positions_are_0_to_t():
    pos = np.arange(6)
    np.testing.assert_array_equal(masks.mask_from_positions(pos, pos), masks.causal_mask(6))


def test_mask_from_positions_window_keeps_the_query_and_window_minus_one_before():
    m = masks.mask_from_positions([5], np.arange(6), window=3)
    np.testing.assert_array_equal(m[0], [True, True, True, False, False, False])


def test_mask_from_positions_refuses_float_positions():
    with pytest.raises(TypeError, match="positions must be integer arrays"):
        masks.mask_from_positions([0.0, 1.0], [0, 1])


def test_mask_from_positions_refuses_positions_that_are_not_1d():
    with pytest.raises(ValueError, match=r"positions must be 1-D, \(Tq,\) and \(Tk,\)"):
        masks.mask_from_positions(np.zeros((2, 2), dtype=int), [0, 1])


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_mask_from_positions_refuses_a_window_below_one_or_not_an_integer(bad):
    with pytest.raises(ValueError, match="window must be an integer >= 1"):
        masks.mask_from_positions([0, 1], [0, 1], window=bad)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_mask_from_positions_with_unsigned_positions_and_a_window_does_not_wrap_around(dtype):
    # Query 0 - window 2 would underflow to a huge unsigned number and block every key.
    pos = np.arange(4, dtype=dtype)
    expected = masks.mask_from_positions(np.arange(4), np.arange(4), window=2)
    np.testing.assert_array_equal(masks.mask_from_positions(pos, pos, window=2), expected)


def test_mask_from_positions_with_int8_positions_near_the_minimum_and_a_window():
    pos = np.array([-128, -127, -126], dtype=np.int8)
    expected = masks.mask_from_positions(np.arange(3), np.arange(3), window=2)
    np.testing.assert_array_equal(masks.mask_from_positions(pos, pos, window=2), expected)


def test_mask_from_positions_with_a_window_wider_than_the_dtype_blocks_only_the_future():
    pos = np.arange(4, dtype=np.int8)
    np.testing.assert_array_equal(masks.mask_from_positions(pos, pos, window=300),
                                  mha.causal_mask(4))


def test_mask_from_positions_refuses_positions_whose_differences_overflow_int64():
    with pytest.raises(ValueError, match=r"key positions must lie strictly between -2\*\*62"):
        masks.mask_from_positions(np.array([0]), np.array([2**63], dtype=np.uint64))


# -- padding_mask and key_padding_to_4d -------------------------------------


def test_padding_mask_is_b_1_1_t_and_blocks_the_keys_past_each_length():
    m = masks.padding_mask([3, 5], 5)
    assert m.shape == (2, 1, 1, 5)
    np.testing.assert_array_equal(m[:, 0, 0], [[False] * 3 + [True] * 2, [False] * 5])


def test_padding_mask_broadcasts_against_b_h_tq_tk_scores():
    scores = np.zeros((2, 3, 4, 5))  # (B, H, Tq, Tk)
    assert np.broadcast_shapes(masks.padding_mask([2, 5], 5).shape, scores.shape) == scores.shape


def test_padding_mask_gives_padded_keys_zero_weight_in_every_head_and_query():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 2, 2, 4, 3))  # each (B=2, H=2, T=4, dh=3)
    _, w = mha.attention(q, k, v, mask=masks.padding_mask([2, 4], 4))
    assert np.all(w[0, :, :, 2:] == 0)
    assert np.all(w[1] > 0)


def test_padding_mask_is_exported_at_top_level():
    assert mha.padding_mask is masks.padding_mask


def test_padding_mask_refuses_a_zero_length():
    with pytest.raises(ValueError, match=r"every length must be in 1\.\.4; got \[0, 4\]"):
        masks.padding_mask([0, 4], 4)


def test_padding_mask_refuses_a_length_longer_than_t():
    with pytest.raises(ValueError, match=r"every length must be in 1\.\.4; got \[5\]"):
        masks.padding_mask([5], 4)


def test_padding_mask_refuses_non_integer_lengths():
    with pytest.raises(TypeError, match=r"lengths must be a 1-D integer array \(B,\)"):
        masks.padding_mask([2.0, 3.0], 4)


def test_padding_mask_refuses_a_bad_t():
    with pytest.raises(ValueError, match="padding_mask needs a positive integer length"):
        masks.padding_mask([1], 0)


def test_key_padding_to_4d_inserts_head_and_query_axes():
    kp = np.array([[False, True], [False, False]])
    out = masks.key_padding_to_4d(kp)
    assert out.shape == (2, 1, 1, 2)
    np.testing.assert_array_equal(out[:, 0, 0], kp)


def test_key_padding_to_4d_keeps_a_torch_tensor_a_tensor():
    out = masks.key_padding_to_4d(torch.tensor([[False, True]]))
    assert isinstance(out, torch.Tensor) and out.shape == (1, 1, 1, 2)


def test_key_padding_to_4d_refuses_a_non_boolean_mask():
    with pytest.raises(TypeError, match=r"boolean key padding mask \(True = padded\)"):
        masks.key_padding_to_4d(np.array([[1, 0]]))


def test_key_padding_to_4d_refuses_a_mask_that_is_not_2d():
    with pytest.raises(ValueError, match=r"key padding mask must be \(B, Tk\)"):
        masks.key_padding_to_4d(np.zeros((1, 1, 3), dtype=bool))


def test_unreshaped_b_tk_mask_is_refused_by_attention_when_b_differs_from_tq():
    q = np.zeros((2, 1, 4, 3))  # (B=2, H=1, T=4, dh=3)
    with pytest.raises(ValueError, match=r"needs reshaping to \(B, 1, 1, Tk\)"):
        mha.attention(q, q, q, mask=np.zeros((2, 4), dtype=bool))


def test_unreshaped_b_tk_mask_silently_masks_query_rows_when_b_equals_tq():
    """The bug the 4-D shape prevents: row b of the (B, Tk) mask lands on query b."""
    kp = np.array([[False, False, True], [False, False, False], [False, True, True]])  # (B=3, Tk)
    wrong = np.broadcast_to(kp, (3, 1, 3, 3))  # what broadcasting does to (B, H, Tq, Tk)
    right = np.broadcast_to(masks.key_padding_to_4d(kp), (3, 1, 3, 3))
    # sequence 1 has no padding, yet its query 2 gets sequence 2's padding (key 1 blocked)
    assert wrong[1, 0, 2, 1] and not right[1, 0, 2, 1]
    # and sequence 0's padded key 2 is open to its query 1
    assert not wrong[0, 0, 1, 2] and right[0, 0, 1, 2]


# -- combine ----------------------------------------------------------------


def test_combine_is_a_logical_or():
    a, b = np.array([True, False, False]), np.array([False, False, True])
    np.testing.assert_array_equal(masks.combine(a, b), [True, False, True])


def test_combine_of_causal_and_padding_is_b_1_t_t():
    m = masks.combine(masks.causal_mask(4), masks.padding_mask([2, 4], 4))
    assert m.shape == (2, 1, 4, 4)
    np.testing.assert_array_equal(m[0, 0, 3], [False, False, True, True])
    np.testing.assert_array_equal(m[1, 0], masks.causal_mask(4))


def test_combine_of_causal_and_padding_leaves_every_row_a_key():
    m = masks.combine(masks.causal_mask(5), masks.padding_mask([1, 3, 5], 5))
    assert not np.any(np.all(m, axis=-1))


def test_combine_of_one_mask_returns_it():
    m = masks.causal_mask(3)
    np.testing.assert_array_equal(masks.combine(m), m)


def test_combine_works_on_torch_tensors():
    out = masks.combine(torch.tensor([True, False]), torch.tensor([False, False]))
    assert out.tolist() == [True, False]


def test_combine_refuses_no_masks():
    with pytest.raises(ValueError, match="combine needs at least one mask"):
        masks.combine()


def test_combine_refuses_a_non_boolean_mask():
    with pytest.raises(TypeError, match=r"combine takes a boolean mask \(True = blocked\)"):
        masks.combine(masks.causal_mask(2), np.zeros((2, 2)))


def test_combine_refuses_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match="do not broadcast"):
        masks.combine(masks.causal_mask(4), np.zeros((2, 3), dtype=bool))


def test_combine_refuses_numpy_and_torch_mixed():
    with pytest.raises(TypeError, match="NumPy arrays and torch tensors mixed"):
        masks.combine(masks.causal_mask(2), torch.zeros(2, 2, dtype=torch.bool))


# -- to_sdpa / from_sdpa ----------------------------------------------------


def test_to_sdpa_inverts_the_convention():
    np.testing.assert_array_equal(masks.to_sdpa(np.array([True, False])), [False, True])


def test_from_sdpa_undoes_to_sdpa():
    m = masks.causal_mask(4)
    np.testing.assert_array_equal(masks.from_sdpa(masks.to_sdpa(m)), m)


def test_to_sdpa_makes_torch_sdpa_agree_with_the_numpy_reference():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 2, 5, 4))
    m = masks.combine(masks.causal_mask(5), masks.padding_mask([3, 5], 5)[:, 0])  # (2, 5, 5)
    expected, _ = mha.attention(q, k, v, mask=m)
    got = F.scaled_dot_product_attention(
        *(torch.from_numpy(x) for x in (q, k, v)), attn_mask=torch.from_numpy(masks.to_sdpa(m)))
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-12)


def test_our_mask_works_unchanged_as_nn_multiheadattention_bool_mask():
    """nn.MultiheadAttention's bool attn_mask means True = not allowed, like ours."""
    torch.manual_seed(0)
    layer = torch.nn.MultiheadAttention(4, 1, batch_first=True)
    x = torch.randn(1, 5, 4)
    blocked = torch.from_numpy(masks.causal_mask(5))
    _, w = layer(x, x, x, attn_mask=blocked)
    assert torch.all(w[0][blocked] == 0) and torch.all(w[0][~blocked] > 0)


def test_to_sdpa_keeps_a_torch_tensor_a_tensor():
    out = masks.to_sdpa(torch.tensor([[False, True]]))
    assert isinstance(out, torch.Tensor) and out.tolist() == [[True, False]]


def test_to_sdpa_refuses_a_non_boolean_mask_and_names_the_0_1_choice():
    with pytest.raises(TypeError, match=r"`mask == 1` if 1 means blocked"):
        masks.to_sdpa(np.array([[0, 1]]))


def test_to_sdpa_refuses_a_float_mask_and_points_to_from_additive():
    with pytest.raises(TypeError, match=r"from_additive"):
        masks.to_sdpa(np.array([[0.0, -np.inf]]))


def test_to_sdpa_refuses_a_fully_masked_row():
    m = np.array([[False, True], [True, True]])
    with pytest.raises(ValueError, match=r"fully masked row.*index \(1,\).*to_sdpa"):
        masks.to_sdpa(m)


def test_to_sdpa_refuses_a_fully_masked_row_in_a_torch_tensor():
    with pytest.raises(ValueError, match="fully masked row"):
        masks.to_sdpa(torch.ones(2, 3, dtype=torch.bool))


def test_to_sdpa_refuses_a_0d_mask():
    with pytest.raises(ValueError, match="needs a mask with a key axis"):
        masks.to_sdpa(np.array(False))


def test_from_sdpa_refuses_a_non_boolean_mask():
    with pytest.raises(TypeError, match=r"from_sdpa takes a boolean SDPA mask \(True = allowed\)"):
        masks.from_sdpa(np.array([1, 0]))


def test_sdpa_gives_zeros_not_an_error_for_a_fully_masked_row():
    """Why to_sdpa refuses first: SDPA (torch 2.13, CPU) returns zeros silently."""
    q = torch.randn(1, 2, 3)
    allowed = torch.tensor([[True, True], [False, False]])  # SDPA convention, row 1 empty
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=allowed)
    assert torch.all(out[0, 1] == 0)


def test_nn_multiheadattention_gives_nan_or_zeros_for_a_fully_masked_row_by_need_weights():
    """Lesson 04 section 7: NaN when the layer computes the weights itself, zeros when
    need_weights=False sends it through SDPA; neither raises (torch 2.13, CPU)."""
    x = torch.randn(1, 3, 4)
    blocked = torch.tensor([[False, True, True], [False, False, True], [True, True, True]])
    layer = torch.nn.MultiheadAttention(4, 1, batch_first=True)
    with_weights, _ = layer(x, x, x, attn_mask=blocked)
    without, _ = layer(x, x, x, attn_mask=blocked, need_weights=False)
    assert torch.all(torch.isnan(with_weights[0, 2]))
    assert torch.all(without[0, 2] == 0)
    assert not torch.isnan(with_weights[0, :2]).any()


# -- to_additive / from_additive --------------------------------------------


def test_to_additive_is_zero_where_allowed_and_minus_inf_where_blocked():
    np.testing.assert_array_equal(masks.to_additive(np.array([False, True])), [0.0, -np.inf])


def test_to_additive_defaults_to_float64_for_numpy():
    assert masks.to_additive(np.array([False])).dtype == np.float64


def test_to_additive_honours_dtype():
    assert masks.to_additive(np.array([False]), dtype=np.float32).dtype == np.float32


def test_to_additive_of_a_tensor_is_a_tensor_of_the_default_float_dtype():
    out = masks.to_additive(torch.tensor([False, True]))
    assert out.dtype == torch.get_default_dtype() and out.tolist() == [0.0, -float("inf")]


def test_additive_and_bool_masks_give_the_same_nn_multiheadattention_output():
    torch.manual_seed(0)
    layer = torch.nn.MultiheadAttention(4, 2, batch_first=True)
    x = torch.randn(2, 5, 4)
    m = torch.from_numpy(masks.causal_mask(5))
    out_bool, _ = layer(x, x, x, attn_mask=m)
    out_add, _ = layer(x, x, x, attn_mask=masks.to_additive(m))
    torch.testing.assert_close(out_bool, out_add)


def test_to_additive_refuses_a_fully_masked_row():
    with pytest.raises(ValueError, match="fully masked row.*to_additive"):
        masks.to_additive(np.array([[True, True]]))


def test_to_additive_refuses_a_non_boolean_mask():
    with pytest.raises(TypeError, match="to_additive takes a boolean mask"):
        masks.to_additive(np.array([0.0, 1.0]))


@pytest.mark.parametrize("dtype", [np.int64, np.int8, bool])
def test_to_additive_refuses_a_numpy_dtype_that_cannot_hold_minus_inf(dtype):
    with pytest.raises(TypeError, match="to_additive needs a floating dtype to hold -inf"):
        masks.to_additive(np.array([False, True]), dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool])
def test_to_additive_refuses_a_torch_dtype_that_cannot_hold_minus_inf(dtype):
    with pytest.raises(TypeError, match="to_additive needs a floating dtype to hold -inf"):
        masks.to_additive(torch.tensor([False, True]), dtype=dtype)


def test_from_additive_reads_minus_inf_as_blocked():
    np.testing.assert_array_equal(masks.from_additive(np.array([0.0, -np.inf])), [False, True])


def test_from_additive_works_on_torch_tensors():
    out = masks.from_additive(torch.tensor([0.0, -float("inf")]))
    assert out.tolist() == [False, True]


def test_from_additive_refuses_a_large_negative_number():
    with pytest.raises(ValueError, match=r"only 0 \(allowed\) and -inf \(blocked\); found -1e\+09"):
        masks.from_additive(np.array([0.0, -1e9]))


def test_from_additive_refuses_a_large_negative_number_in_a_tensor():
    with pytest.raises(ValueError, match=r"only 0 \(allowed\) and -inf"):
        masks.from_additive(torch.tensor([0.0, -1e9]))


def test_from_additive_refuses_a_boolean_mask():
    with pytest.raises(TypeError, match=r"an additive mask is floating \(0 / -inf\); got bool"):
        masks.from_additive(np.array([True]))


def test_from_additive_refuses_a_boolean_tensor():
    with pytest.raises(TypeError, match="an additive mask is floating"):
        masks.from_additive(torch.tensor([True]))


# -- check_mask (re-exported) -----------------------------------------------


def test_check_mask_refuses_a_fully_masked_row_naming_the_query():
    with pytest.raises(ValueError, match=r"fully masked row.*query 1 of batch/head index \(0,\)"):
        masks.check_mask(np.array([[[False, True], [True, True]]]), (1, 2, 2))


def test_check_mask_refuses_an_integer_mask():
    with pytest.raises(TypeError, match="mask must be boolean with True = blocked"):
        masks.check_mask(np.array([[0, 1]]), (1, 2))


def test_attention_refuses_a_fully_masked_row_instead_of_returning_nan():
    q = np.zeros((2, 3))
    with pytest.raises(ValueError, match="fully masked row"):
        mha.attention(q, q, q, mask=np.array([[False, True], [True, True]]))


# -- mask before softmax ----------------------------------------------------


def test_masking_before_softmax_gives_one_zero_and_zeroing_after_gives_half_zero():
    s, blocked = np.array([0.0, 0.0]), np.array([False, True])
    before = mha.softmax(np.where(blocked, -np.inf, s))
    after = np.where(blocked, 0.0, mha.softmax(s))
    np.testing.assert_array_equal(before, [1.0, 0.0])
    np.testing.assert_array_equal(after, [0.5, 0.0])


# -- properties -------------------------------------------------------------


@given(st.integers(1, 12))
def test_every_causal_row_keeps_at_least_one_key(t):
    assert not np.any(np.all(masks.causal_mask(t), axis=-1))


@given(st.lists(st.booleans(), min_size=1, max_size=8).filter(lambda r: not all(r)))
def test_to_additive_round_trips(row):
    m = np.array(row)
    np.testing.assert_array_equal(masks.from_additive(masks.to_additive(m)), m)


@given(st.lists(st.integers(0, 20), min_size=1, max_size=6), st.integers(0, 20))
def test_mask_from_positions_never_lets_a_query_read_a_later_key(keys, query):
    m = masks.mask_from_positions([query], keys)
    np.testing.assert_array_equal(m[0], np.array(keys) > query)
