"""Specification of mha.layers (the torch module) and mha.torch_transfer (its crossings).

Agreement with NumPy, SDPA and nn.MultiheadAttention over random shapes lives in
tests/test_agreement.py; here each test pins one behaviour on a small fixed case.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mha
from mha.layers import MultiHeadAttention
from mha.torch_transfer import (
    from_nn_multihead,
    from_numpy,
    sdpa_attention,
    to_nn_multihead,
    to_nn_multihead_masks,
    to_numpy,
)

B, H, TQ, TK, C = 2, 2, 3, 5, 8


def make(seed=0, **kw):
    torch.manual_seed(seed)
    kw.setdefault("dtype", torch.float64)
    return MultiHeadAttention(C, H, **kw).eval()


def inputs(seed=1, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(B, TQ, C, generator=g, dtype=dtype)
    context = torch.randn(B, TK, C, generator=g, dtype=dtype)
    return query, context


def one_open_key_per_row(shape, seed=2):
    """A random bool mask (True = blocked) with key 0 always allowed."""
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(shape, generator=g) < 0.5
    m[..., 0] = False
    return m


def params(module):
    return {n: p.detach().clone() for n, p in module.named_parameters()}


# -- shapes and weights --------------------------------------------------------


@pytest.mark.parametrize("mask_shape", [None, (TQ, TK), (B, 1, 1, TK), (B, 1, TQ, TK),
                                        (B, H, TQ, TK)])
def test_cross_attention_output_and_weight_shapes_for_each_mask_shape(mask_shape):
    query, context = inputs()
    mask = None if mask_shape is None else one_open_key_per_row(mask_shape)
    out, weights = make()(query, context, mask=mask, need_weights=True)
    assert out.shape == (B, TQ, C)
    assert weights.shape == (B, H, TQ, TK)


def test_key_padding_mask_gives_zero_weight_on_padded_keys():
    query, context = inputs()
    padded = torch.tensor([[False] * 4 + [True], [False] * 2 + [True] * 3])
    _, weights = make()(query, context, key_padding_mask=padded, need_weights=True)
    assert torch.all(weights[padded[:, None, None, :].expand_as(weights)] == 0)


def test_key_padding_mask_equals_the_same_mask_reshaped_to_4d():
    query, context = inputs()
    padded = torch.tensor([[False] * 4 + [True], [False] * 2 + [True] * 3])
    module = make()
    by_kpm, _ = module(query, context, key_padding_mask=padded)
    by_mask, _ = module(query, context, mask=mha.masks.key_padding_to_4d(padded))
    torch.testing.assert_close(by_kpm, by_mask, rtol=0, atol=0)


def test_numpy_bool_mask_is_accepted_like_a_tensor():
    query, _ = inputs()
    module = make()
    causal = mha.causal_mask(TQ)
    torch.testing.assert_close(module(query, mask=causal)[0],
                               module(query, mask=torch.from_numpy(causal))[0], rtol=0, atol=0)


def test_need_weights_rows_sum_to_one():
    query, context = inputs()
    _, weights = make()(query, context, mask=one_open_key_per_row((B, H, TQ, TK)),
                        need_weights=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, TQ, dtype=torch.float64))


def test_blocked_keys_get_exactly_zero_weight():
    query, context = inputs()
    mask = one_open_key_per_row((B, H, TQ, TK))
    _, weights = make()(query, context, mask=mask, need_weights=True)
    assert torch.all(weights[mask] == 0)


def test_causal_self_attention_puts_no_weight_on_the_future():
    query, _ = inputs()
    _, weights = make()(query, mask=torch.from_numpy(mha.causal_mask(TQ)), need_weights=True)
    assert torch.all(weights.triu(diagonal=1) == 0)


def test_weights_are_none_unless_asked_for():
    query, _ = inputs()
    assert make()(query)[1] is None


def test_packed_and_separate_projections_agree_for_the_same_weights():
    separate = make()
    packed = from_nn_multihead(to_nn_multihead(separate), packed_qkv=True).eval()
    query, context = inputs()
    torch.testing.assert_close(packed(query)[0], separate(query)[0], rtol=0, atol=1e-15)
    torch.testing.assert_close(packed(query, context)[0], separate(query, context)[0],
                               rtol=0, atol=1e-15)


def test_parameter_count_is_four_c_squared_plus_four_c_whatever_the_heads():
    for h in (1, 2, 4, 8):
        torch.manual_seed(0)
        module = MultiHeadAttention(C, h, packed_qkv=h % 2 == 0)
        assert sum(p.numel() for p in module.parameters()) == 4 * C * C + 4 * C


def test_output_keeps_the_parameters_dtype():
    query, _ = inputs(dtype=torch.float32)
    assert make(dtype=torch.float32)(query)[0].dtype == torch.float32


# -- dropout ---------------------------------------------------------------------


def test_dropout_in_training_mode_changes_the_output():
    module = make(dropout=0.5).train()
    query, _ = inputs()
    torch.manual_seed(3)
    first = module(query)[0]
    second = module(query)[0]
    assert not torch.allclose(first, second)


def test_eval_mode_is_deterministic_and_ignores_dropout():
    module = make(dropout=0.5)
    query, _ = inputs()
    without = make(dropout=0.0)(query)[0]
    torch.testing.assert_close(module(query)[0], module(query)[0], rtol=0, atol=0)
    torch.testing.assert_close(module(query)[0], without, rtol=0, atol=0)


@pytest.mark.parametrize("training", [True, False])
def test_sdpa_impl_uses_dropout_only_in_training(training):
    module = make(dropout=0.5, impl="sdpa").train(training)
    query, _ = inputs()
    torch.manual_seed(4)
    differs = not torch.allclose(module(query)[0], module(query)[0])
    assert differs == training


def test_dropped_out_weights_are_returned_in_training_mode():
    module = make(dropout=0.5).train()
    query, _ = inputs()
    torch.manual_seed(5)
    _, weights = module(query, need_weights=True)
    assert torch.any(weights == 0)
    assert not torch.allclose(weights.sum(-1), torch.ones(B, H, TQ, dtype=torch.float64))


# -- refusals ----------------------------------------------------------------------


def test_refuses_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match="d_model=10 is not divisible by n_heads=4"):
        MultiHeadAttention(10, 4)


@pytest.mark.parametrize("n_heads", [0, 2.0, True])
def test_refuses_n_heads_that_is_not_a_positive_int(n_heads):
    with pytest.raises(ValueError, match="n_heads must be a positive int"):
        MultiHeadAttention(C, n_heads)


def test_refuses_unknown_impl():
    with pytest.raises(ValueError, match="impl must be one of"):
        MultiHeadAttention(C, H, impl="flash")


@pytest.mark.parametrize("shape", [(TQ, C), (1, B, TQ, C)])
def test_refuses_input_that_is_not_3d(shape):
    with pytest.raises(ValueError, match=r"query must be \(B, T, C=8\)"):
        make()(torch.zeros(shape, dtype=torch.float64))


def test_refuses_last_dim_other_than_d_model():
    with pytest.raises(ValueError, match=r"key must be \(B, T, C=8\); got shape \(2, 5, 6\)"):
        make()(inputs()[0], torch.zeros(B, TK, 6, dtype=torch.float64))


def test_refuses_key_with_another_batch_size():
    query, context = inputs()
    with pytest.raises(ValueError, match="query and key must share the batch size B"):
        make()(query, context[:1])


def test_refuses_value_with_another_length_than_key():
    query, context = inputs()
    with pytest.raises(ValueError, match=r"key and value must share \(B, Tk\)"):
        make()(query, context, context[:, :-1])


def test_refuses_value_without_key():
    query, context = inputs()
    with pytest.raises(ValueError, match="value given without key"):
        make()(query, value=context)


def test_refuses_input_of_another_dtype_than_the_parameters():
    with pytest.raises(TypeError, match="query has dtype torch.float32 but the module's param"):
        make()(inputs(dtype=torch.float32)[0])


@pytest.mark.parametrize("bad, hint", [
    (torch.zeros(TQ, TK), "from_additive"),
    (torch.zeros(TQ, TK, dtype=torch.int64), "say which value blocks"),
])
def test_refuses_non_bool_mask_naming_the_convention(bad, hint):
    with pytest.raises(TypeError, match=f"boolean with True = blocked.*{hint}"):
        make()(*inputs(), mask=bad)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_refuses_mask_that_does_not_broadcast_to_the_scores(impl):
    with pytest.raises(ValueError, match=r"does not broadcast to the scores' shape \(2, 2, 3, 5\)"):
        make(impl=impl)(*inputs(), mask=torch.zeros(B, TK, dtype=torch.bool))


def test_refuses_3d_mask_as_ambiguous():
    with pytest.raises(ValueError, match="3-D mask is ambiguous"):
        make()(*inputs(), mask=torch.zeros(B, TQ, TK, dtype=torch.bool))


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_refuses_a_1d_mask_with_its_own_message_not_the_3d_one(impl):
    with pytest.raises(ValueError, match=r"got a 1-D mask of shape \(5,\)") as info:
        make(impl=impl)(*inputs(), mask=torch.zeros(TK, dtype=torch.bool))
    assert "3-D" not in str(info.value) and "key_padding_mask" in str(info.value)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_refuses_a_key_of_length_zero_instead_of_returning_the_output_bias(impl):
    query, _ = inputs()
    with pytest.raises(ValueError, match=r"key has no positions \(Tk=0, shape \(2, 0, 8\)\)"):
        make(impl=impl)(query, torch.zeros(B, 0, C, dtype=torch.float64))


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_refuses_fully_masked_row_naming_the_query(impl):
    mask = torch.zeros(B, H, TQ, TK, dtype=torch.bool)
    mask[1, 0, 2] = True
    with pytest.raises(ValueError, match=r"fully masked row: the mask blocks every key for query 2 "
                                         r"of batch/head index \(1, 0\) \(index \(1, 0, 2\)\)"):
        make(impl=impl)(*inputs(), mask=mask)


def test_refuses_row_fully_masked_only_by_mask_and_padding_together():
    mask = torch.zeros(TQ, TK, dtype=torch.bool)
    mask[0, :3] = True
    padded = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    with pytest.raises(ValueError,
                       match="fully masked row: the mask combined with key_padding_mask"):
        make()(*inputs(), mask=mask, key_padding_mask=padded)


def test_refuses_key_padding_mask_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"key_padding_mask must be \(B, Tk\) = \(2, 5\)"):
        make()(*inputs(), key_padding_mask=torch.zeros(TK, B, dtype=torch.bool).T[:1])


def test_a_4d_key_padding_mask_is_told_the_shape_key_padding_mask_takes():
    padded_4d = torch.zeros(B, 1, 1, TK, dtype=torch.bool)  # broadcasts, but is not (B, Tk)
    with pytest.raises(ValueError, match=r"key_padding_mask must be \(B, Tk\) = \(2, 5\) with "
                                         r"True = padded; got shape \(2, 1, 1, 5\)"):
        make()(*inputs(), key_padding_mask=padded_4d)


def test_refuses_need_weights_with_sdpa():
    with pytest.raises(ValueError, match="SDPA does not return the attention weights"):
        make(impl="sdpa")(inputs()[0], need_weights=True)


# -- sdpa_attention and the KV-cache worked numbers --------------------------------


def kv_cache_case():
    q = torch.zeros(1, 1, 2, 2)
    k = torch.zeros(1, 1, 5, 2)
    v = torch.tensor([10.0, 20.0, 30.0, 40.0, 50.0]).reshape(1, 1, 5, 1)
    return q, k, v


def test_kv_cache_mask_from_positions_reads_25_and_30():
    q, k, v = kv_cache_case()
    mask = mha.masks.mask_from_positions(np.array([3, 4]), np.arange(5))
    out = sdpa_attention(q, k, v, mask=torch.from_numpy(mask))
    assert out.flatten().tolist() == [25.0, 30.0]


def test_sdpa_is_causal_on_non_square_scores_aligns_upper_left_giving_10_and_15():
    q, k, v = kv_cache_case()
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.flatten().tolist() == [10.0, 15.0]


def test_sdpa_attention_matches_the_numpy_reference():
    g = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(B, H, t, 4, generator=g, dtype=torch.float64) for t in (TQ, TK, TK))
    mask = one_open_key_per_row((B, 1, TQ, TK))
    expected, _ = mha.attention(q.numpy(), k.numpy(), v.numpy(), mask=mask.numpy())
    np.testing.assert_allclose(sdpa_attention(q, k, v, mask=mask).numpy(), expected,
                               rtol=1e-12, atol=1e-12)


def test_sdpa_attention_refuses_fully_masked_row_instead_of_returning_nan():
    q, k, v = kv_cache_case()
    with pytest.raises(ValueError, match="fully masked row"):
        sdpa_attention(q, k, v, mask=torch.ones(2, 5, dtype=torch.bool))


@pytest.mark.parametrize("k_shape, message", [
    ((1, 1, 5, 3), "q and k must share the width dh"),
    ((2, 1, 5, 2), "leading .* dims do not broadcast"),
])
def test_sdpa_attention_refuses_qkv_that_do_not_fit(k_shape, message):
    q, _, _ = kv_cache_case()
    q = q.expand(3, 1, 2, 2)
    with pytest.raises(ValueError, match=message):
        sdpa_attention(q, torch.zeros(k_shape), torch.zeros(*k_shape[:-1], 1))


def test_sdpa_attention_refuses_keys_of_length_zero_instead_of_returning_zeros():
    q, k, v = kv_cache_case()
    with pytest.raises(ValueError, match=r"k has no positions \(Tk=0, shape \(1, 1, 0, 2\)\)"):
        sdpa_attention(q, k[..., :0, :], v[..., :0, :])


def test_sdpa_attention_refuses_width_zero_instead_of_averaging_v():
    q, k, v = kv_cache_case()
    with pytest.raises(ValueError, match=r"q and k have no features \(d_k=0"):
        sdpa_attention(q[..., :0], k[..., :0], v)


@pytest.mark.parametrize("bad", [-0.5, 1.0, float("nan")])
def test_sdpa_attention_refuses_a_dropout_p_outside_zero_one(bad):
    with pytest.raises(ValueError, match=r"dropout_p must be in \[0, 1\)"):
        sdpa_attention(*kv_cache_case(), dropout_p=bad)


def test_sdpa_attention_refuses_a_dropout_p_that_is_not_a_number():
    with pytest.raises(TypeError, match=r"dropout_p must be a number in \[0, 1\); got '0.1'"):
        sdpa_attention(*kv_cache_case(), dropout_p="0.1")


def test_sdpa_attention_refusals_use_the_numpy_words():
    q, k, v = kv_cache_case()
    for args in ((q, k[..., :0, :], v[..., :0, :]), (q[..., :0], k[..., :0], v)):
        with pytest.raises(ValueError) as torch_info:
            sdpa_attention(*args)
        with pytest.raises(ValueError) as numpy_info:
            mha.attention(*(t.numpy() for t in args))
        assert str(torch_info.value) == str(numpy_info.value)


def test_sdpa_attention_refuses_an_sdpa_style_float_mask():
    q, k, v = kv_cache_case()
    with pytest.raises(TypeError, match="True = blocked"):
        sdpa_attention(q, k, v, mask=torch.zeros(2, 5))


# -- weight transfer ---------------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("packed", [True, False])
def test_round_trip_through_nn_multihead_reproduces_parameters_exactly(bias, packed):
    original = make(bias=bias, packed_qkv=packed)
    back = from_nn_multihead(to_nn_multihead(original), packed_qkv=packed)
    assert params(back).keys() == params(original).keys()
    for name, value in params(original).items():
        assert torch.equal(params(back)[name], value), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_round_trip_through_numpy_reproduces_parameters_exactly(bias, dtype):
    original = make(bias=bias, dtype=dtype)
    back = from_numpy(to_numpy(original))
    for name, value in params(original).items():
        assert params(back)[name].dtype == dtype
        assert torch.equal(params(back)[name], value), name


def test_in_proj_weight_stacks_w_q_w_k_w_v_by_rows():
    module = make()
    target = to_nn_multihead(module)
    stacked = torch.cat([module.q_proj.weight, module.k_proj.weight, module.v_proj.weight])
    assert target.in_proj_weight.shape == (3 * C, C)
    assert torch.equal(target.in_proj_weight, stacked)


def test_to_numpy_transposes_out_in_into_in_out():
    module = make()
    np_module = to_numpy(module)
    np.testing.assert_array_equal(np_module.w_q, module.q_proj.weight.detach().numpy().T)
    np.testing.assert_array_equal(np_module.w_o, module.out_proj.weight.detach().numpy().T)


def test_to_nn_multihead_carries_dropout_and_mode():
    target = to_nn_multihead(make(dropout=0.25).train())
    assert (target.dropout, target.training, target.batch_first) == (0.25, True, True)


@pytest.mark.parametrize("copy", [to_nn_multihead, lambda m: from_numpy(to_numpy(m)),
                                  lambda m: from_nn_multihead(to_nn_multihead(m))],
                         ids=["to_nn", "numpy_round_trip", "nn_round_trip"])
def test_gradients_of_a_transferred_copy_do_not_reach_the_original(copy):
    original = make()
    query, _ = inputs()
    copy(original)(query, query, query)[0].sum().backward()
    assert all(p.grad is None for p in original.parameters())


def test_a_copy_does_not_share_memory_with_the_original():
    original = make()
    target = to_nn_multihead(original)
    np_copy = to_numpy(original)
    with torch.no_grad():
        original.q_proj.weight.zero_()
    assert target.in_proj_weight[:C].abs().sum() > 0
    assert np.abs(np_copy.w_q).sum() > 0


@pytest.mark.parametrize("kwargs, message", [
    ({"kdim": 4}, "kdim=4"),
    ({"add_bias_kv": True}, "add_bias_kv=True"),
    ({"add_zero_attn": True}, "add_zero_attn=True"),
])
def test_from_nn_multihead_refuses_configurations_we_cannot_express(kwargs, message):
    with pytest.raises(ValueError, match=message):
        from_nn_multihead(nn.MultiheadAttention(C, H, batch_first=True, **kwargs))


def test_to_numpy_refuses_dropout_unless_told_to_ignore_it():
    module = make(dropout=0.1)
    with pytest.raises(ValueError, match="the NumPy class has no dropout"):
        to_numpy(module)
    assert to_numpy(module, ignore_dropout=True).d_model == C


def test_to_numpy_refuses_half_precision():
    with pytest.raises(TypeError, match="float32 or float64"):
        to_numpy(make(dtype=torch.float16))


def test_from_numpy_refuses_bias_on_some_projections_only():
    np_module = mha.MultiHeadAttention(C, H, bias=True)
    np_module.b_o = None
    with pytest.raises(ValueError, match="biases on some projections only"):
        from_numpy(np_module)


# -- masks for nn.MultiheadAttention -----------------------------------------------


def test_nn_masks_causal_2d_passes_through_unchanged():
    causal = torch.from_numpy(mha.causal_mask(TQ))
    attn_mask, padding = to_nn_multihead_masks(causal, H)
    assert torch.equal(attn_mask, causal) and padding is None


def test_nn_masks_padding_4d_becomes_key_padding_mask():
    pad = one_open_key_per_row((B, 1, 1, TK))
    attn_mask, padding = to_nn_multihead_masks(pad, H)
    assert attn_mask is None and torch.equal(padding, pad[:, 0, 0, :])


def test_nn_masks_per_head_flattens_batch_major_to_b_times_h():
    mask = one_open_key_per_row((B, H, TQ, TK))
    attn_mask, _ = to_nn_multihead_masks(mask, H)
    assert attn_mask.shape == (B * H, TQ, TK)
    assert torch.equal(attn_mask[1 * H + 0], mask[1, 0])


def test_nn_masks_refuse_a_head_axis_other_than_1_or_h():
    with pytest.raises(ValueError, match="head axis is 3"):
        to_nn_multihead_masks(torch.zeros(B, 3, TQ, TK, dtype=torch.bool), H)


def test_nn_masks_refuse_fully_masked_row():
    with pytest.raises(ValueError, match="fully masked row"):
        to_nn_multihead_masks(torch.ones(TQ, TK, dtype=torch.bool), H)


# -- packaging ---------------------------------------------------------------------


def test_import_mha_does_not_import_torch():
    code = "import sys, mha; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
