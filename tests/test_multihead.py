"""Specification of the NumPy multi-head attention (mha.multihead)."""

from __future__ import annotations

import numpy as np
import pytest

import mha

B, T, H, DH = 2, 3, 4, 5
C = H * DH


def encoded(b=B, t=T, h=H, dh=DH):
    """(B, T, C) whose entry at (b, t, h*dh + c) is the number b t h c written in digits."""
    bi, ti, hi, ci = np.meshgrid(np.arange(b), np.arange(t), np.arange(h), np.arange(dh),
                                 indexing="ij")
    return (1000 * bi + 100 * ti + 10 * hi + ci).reshape(b, t, h * dh)


def test_split_heads_gives_shape_b_h_t_dh():
    assert mha.split_heads(np.zeros((B, T, C)), H).shape == (B, H, T, DH)


def test_split_heads_puts_each_heads_channels_in_place():
    heads = mha.split_heads(encoded(), H)
    for b in range(B):
        for h in range(H):
            for t in range(T):
                expected = 1000 * b + 100 * t + 10 * h + np.arange(DH)
                np.testing.assert_array_equal(heads[b, h, t], expected)


def test_naive_reshape_to_b_h_t_dh_has_the_right_shape_and_wrong_values():
    x = encoded()
    naive = x.reshape(B, H, T, DH)
    right = mha.split_heads(x, H)
    assert naive.shape == right.shape
    assert not np.array_equal(naive, right)
    # Head 0 of the naive split mixes positions: its second row is still position 0.
    assert naive[0, 0, 1, 0] // 100 % 10 == 0 and right[0, 0, 1, 0] // 100 % 10 == 1


def test_merge_heads_inverts_split_heads():
    x = np.random.default_rng(0).normal(size=(B, T, C))
    np.testing.assert_array_equal(mha.merge_heads(mha.split_heads(x, H)), x)


def test_split_heads_inverts_merge_heads():
    heads = np.random.default_rng(1).normal(size=(B, H, T, DH))
    np.testing.assert_array_equal(mha.split_heads(mha.merge_heads(heads), H), heads)


def test_merge_heads_returns_a_contiguous_array():
    assert mha.merge_heads(mha.split_heads(encoded(), H)).flags.c_contiguous


def test_split_heads_works_on_a_torch_tensor_as_the_torch_module_splits():
    torch = pytest.importorskip("torch")
    from mha.layers import MultiHeadAttention as TorchMHA

    x = torch.from_numpy(encoded())
    heads = mha.split_heads(x, H)
    assert isinstance(heads, torch.Tensor)
    assert torch.equal(heads, TorchMHA(C, H)._split_heads(x))


def test_merge_heads_of_a_torch_tensor_inverts_split_heads_and_passes_gradients():
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(encoded()).double().requires_grad_(True)
    back = mha.merge_heads(mha.split_heads(x, H))
    assert torch.equal(back, x) and back.is_contiguous()
    back.sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))


def test_multihead_docstring_examples_hold():
    # The float16 example states what the class returns (float32), not what it stores.
    import doctest

    import mha.multihead

    result = doctest.testmod(mha.multihead)
    assert result.attempted >= 3 and result.failed == 0


def test_split_heads_refuses_a_width_not_divisible_by_the_heads():
    with pytest.raises(ValueError, match=r"C=10 is not divisible by n_heads=4"):
        mha.split_heads(np.zeros((1, 2, 10)), 4)


def test_split_heads_refuses_an_input_that_is_not_3d():
    pattern = r"split_heads takes x of shape \(B, T, C\); got shape \(2, 8\)"
    with pytest.raises(ValueError, match=pattern):
        mha.split_heads(np.zeros((2, 8)), 2)


@pytest.mark.parametrize("n_heads", [0, -2])
def test_split_heads_refuses_a_non_positive_head_count(n_heads):
    with pytest.raises(ValueError, match=r"n_heads must be a positive int"):
        mha.split_heads(np.zeros((1, 2, 8)), n_heads)


def test_split_heads_refuses_a_float_head_count():
    with pytest.raises(TypeError, match=r"n_heads must be a positive int; got 2.0"):
        mha.split_heads(np.zeros((1, 2, 8)), 2.0)


def test_merge_heads_refuses_an_input_that_is_not_4d():
    with pytest.raises(ValueError, match=r"merge_heads takes x of shape \(B, H, T, dh\)"):
        mha.merge_heads(np.zeros((2, 3, 8)))


# ---------------------------------------------------------------- the layer


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_parameter_count_is_4_c_squared_whatever_the_heads(n_heads):
    assert mha.MultiHeadAttention(16, n_heads).n_parameters == 4 * 16**2


@pytest.mark.parametrize("n_heads", [1, 4])
def test_parameter_count_with_bias_adds_4_c(n_heads):
    assert mha.MultiHeadAttention(16, n_heads, bias=True).n_parameters == 4 * 16**2 + 4 * 16


def test_parameter_count_matches_the_stored_arrays():
    layer = mha.MultiHeadAttention(12, 3, bias=True)
    arrays = [layer.w_q, layer.w_k, layer.w_v, layer.w_o,
              layer.b_q, layer.b_k, layer.b_v, layer.b_o]
    assert sum(a.size for a in arrays) == layer.n_parameters


def test_self_attention_shapes():
    out, weights = mha.MultiHeadAttention(C, H)(np.zeros((B, T, C)))
    assert out.shape == (B, T, C) and weights.shape == (B, H, T, T)


def test_cross_attention_with_tq_different_from_tk():
    x, context = np.ones((B, 2, C)), np.ones((B, 7, C))
    out, weights = mha.MultiHeadAttention(C, H)(x, context)
    assert out.shape == (B, 2, C) and weights.shape == (B, H, 2, 7)


def test_causal_mask_gives_zero_weight_on_the_future():
    x = np.random.default_rng(2).normal(size=(B, 6, C))
    _, weights = mha.MultiHeadAttention(C, H)(x, mask=mha.causal_mask(6))
    future = np.triu(np.ones((6, 6), dtype=bool), k=1)
    assert np.all(weights[..., future] == 0.0)
    assert np.all(weights[..., ~future] > 0.0)


def test_padding_mask_gives_zero_weight_on_padded_keys():
    x = np.random.default_rng(3).normal(size=(2, 4, C))
    _, weights = mha.MultiHeadAttention(C, H)(x, mask=mha.padding_mask([4, 2], 4))
    assert np.all(weights[1, :, :, 2:] == 0.0) and np.all(weights[0] > 0.0)


def test_one_head_equals_plain_attention_on_the_projections():
    layer = mha.MultiHeadAttention(6, 1, seed=4)
    x = np.random.default_rng(4).normal(size=(1, 3, 6))
    heads, _ = mha.attention(x @ layer.w_q, x @ layer.w_k, x @ layer.w_v)
    np.testing.assert_allclose(layer(x)[0], heads @ layer.w_o, rtol=1e-12)


def test_the_layer_computes_in_its_construction_dtype():
    layer = mha.MultiHeadAttention(8, 2, dtype=np.float32)
    out, weights = layer(np.ones((1, 3, 8)))
    assert layer.w_q.dtype == np.float32 and out.dtype == np.float32
    assert weights.dtype == np.float32


def test_the_same_seed_gives_the_same_weights():
    a, b = mha.MultiHeadAttention(8, 2, seed=7), mha.MultiHeadAttention(8, 2, seed=7)
    np.testing.assert_array_equal(a.w_o, b.w_o)


def test_layer_refuses_d_model_not_divisible_by_n_heads():
    with pytest.raises(ValueError, match=r"d_model=10 is not divisible by n_heads=4"):
        mha.MultiHeadAttention(10, 4)


def test_layer_refuses_zero_heads():
    with pytest.raises(ValueError, match=r"n_heads must be a positive int; got 0"):
        mha.MultiHeadAttention(8, 0)


def test_layer_refuses_a_non_positive_width():
    with pytest.raises(ValueError, match=r"d_model must be a positive int; got 0"):
        mha.MultiHeadAttention(0, 1)


def test_layer_refuses_a_float_width():
    with pytest.raises(TypeError, match=r"d_model must be a positive int; got 8.0"):
        mha.MultiHeadAttention(8.0, 2)


def test_layer_refuses_an_integer_dtype():
    with pytest.raises(TypeError, match=r"dtype must be a floating dtype; got int64"):
        mha.MultiHeadAttention(8, 2, dtype=np.int64)


def test_layer_refuses_input_of_the_wrong_width():
    with pytest.raises(ValueError, match=r"x must be \(B, T, C=8\); got shape \(1, 3, 6\)"):
        mha.MultiHeadAttention(8, 2)(np.ones((1, 3, 6)))


def test_layer_refuses_input_without_a_batch_dim():
    with pytest.raises(ValueError, match=r"x must be \(B, T, C=8\); got shape \(3, 8\)"):
        mha.MultiHeadAttention(8, 2)(np.ones((3, 8)))


def test_layer_refuses_context_of_the_wrong_width():
    with pytest.raises(ValueError, match=r"context must be \(B, T, C=8\)"):
        mha.MultiHeadAttention(8, 2)(np.ones((1, 3, 8)), np.ones((1, 4, 4)))


def test_layer_refuses_x_and_context_with_different_batch_sizes():
    with pytest.raises(ValueError, match=r"same batch size B"):
        mha.MultiHeadAttention(8, 2)(np.ones((1, 3, 8)), np.ones((2, 4, 8)))


def test_layer_refuses_nan_input():
    x = np.ones((1, 3, 8))
    x[0, 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"x contains NaN at index \(0, 1, 2\)"):
        mha.MultiHeadAttention(8, 2)(x)


def test_layer_refuses_a_mask_that_blocks_a_whole_row():
    mask = np.zeros((3, 3), dtype=bool)
    mask[2] = True
    with pytest.raises(ValueError, match=r"fully masked row"):
        mha.MultiHeadAttention(8, 2)(np.ones((1, 3, 8)), mask=mask)
