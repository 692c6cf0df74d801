"""Refusals of the newer modules (rope, decoder, kv_cache, tiled, compare) and of what
they share with the older ones, found by a probe of bad inputs (issue 18).

Each test pins one input that was silently wrong or ended in a raw error from deep
inside torch or NumPy, and the refusal that now names the problem in the package's
words (``mha._checks``, ``mha._mask_checks``). Where the NumPy and the torch side
meet the same mistake they raise the same class with the same message.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mha
from mha import compare, layers, masks, numerical, rope, tiled
from mha._checks import DTypeError, TooLargeError
from mha.decoder import (
    TinyDecoder,
    attention_mask,
    generate,
    gqa_attention,
    logits_in_chunks,
    repeat_kv,
)
from mha.kv_cache import KVCache, LayerCache, kv_cache_bytes
from mha.torch_transfer import sdpa_attention, to_nn_multihead, to_nn_multihead_masks, to_numpy

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOKENS = torch.tensor([[1, 2, 3]])


def _model(**kw):
    torch.manual_seed(0)
    return TinyDecoder(10, **kw).eval()


def _k():
    return torch.randn(1, 2, 3, 4, generator=torch.Generator().manual_seed(0))


# -- rope -------------------------------------------------------------------------


def test_rope_angles_refuses_an_integer_dtype_that_would_round_sin_and_cos():
    with pytest.raises(DTypeError, match="dtype must be a floating torch dtype"):
        rope.rope_angles(torch.arange(3), 8, dtype=torch.int32)


def test_rope_angles_refuses_an_infinite_base():
    with pytest.raises(ValueError, match="base must be a finite number above 1; got inf"):
        rope.rope_angles(torch.arange(3), 8, base=float("inf"))


def test_rope_angles_refuses_a_string_base_by_name():
    with pytest.raises(DTypeError, match="base must be a real number; got '10000'"):
        rope.rope_angles(torch.arange(3), 8, base="10000")


def test_rope_angles_refuses_uint64_positions_naming_the_conversion():
    with pytest.raises(DTypeError, match=r"positions has dtype torch.uint64.*torch.int64"):
        rope.rope_angles(torch.tensor([0, 1, 2], dtype=torch.uint64), 8)


def test_apply_rope_refuses_a_tensor_on_the_meta_device():
    with pytest.raises(ValueError, match="x is on the meta device"):
        rope.apply_rope(torch.ones(1, 1, 3, 4, device="meta"), torch.arange(3))


# -- decoder: construction --------------------------------------------------------


def test_tiny_decoder_refuses_a_string_tie_weights_instead_of_tying_the_head():
    with pytest.raises(DTypeError, match="tie_weights must be True or False; got 'no'"):
        TinyDecoder(10, tie_weights="no")


def test_tiny_decoder_refuses_a_string_attention_only_instead_of_dropping_the_mlp():
    with pytest.raises(DTypeError, match="attention_only must be True or False; got 'False'"):
        TinyDecoder(10, attention_only="False")


@pytest.mark.parametrize("d_mlp", [0, -1, 2.5])
def test_tiny_decoder_refuses_a_d_mlp_that_is_not_a_positive_int(d_mlp):
    with pytest.raises(ValueError, match=f"d_mlp must be a positive int; got {d_mlp}"):
        TinyDecoder(10, d_mlp=d_mlp)


def test_tiny_decoder_refuses_a_string_rope_base_at_construction():
    with pytest.raises(DTypeError, match="rope_base must be a real number; got 'x'"):
        TinyDecoder(10, rope_base="x")


# -- decoder: repeat_kv and attention_mask ----------------------------------------


@pytest.mark.parametrize("n_rep", [0, -1, 2.5])
def test_repeat_kv_refuses_an_n_rep_that_is_not_a_positive_int(n_rep):
    with pytest.raises(ValueError, match=f"n_rep must be a positive int; got {n_rep}"):
        repeat_kv(_k(), n_rep)


def test_attention_mask_refuses_key_positions_of_another_batch():
    with pytest.raises(ValueError, match=r"must share the batch B"):
        attention_mask(torch.tensor([[3, 4]]), torch.arange(10).reshape(2, 5))


def test_attention_mask_refuses_1d_query_positions():
    with pytest.raises(ValueError, match=r"query_positions must be \(B, T\).*got shape \(2,\)"):
        attention_mask(torch.tensor([3, 4]), torch.arange(5)[None])


def test_attention_mask_refuses_key_padding_of_the_wrong_width():
    padding = torch.tensor([[True, False, False, False]])
    with pytest.raises(ValueError, match=r"key_padding must be \(B, Tk\) = \(1, 5\)"):
        attention_mask(torch.tensor([[3, 4]]), torch.arange(5)[None], padding)


def test_attention_mask_refuses_an_integer_key_padding():
    with pytest.raises(DTypeError, match="key_padding must be a bool tensor"):
        attention_mask(torch.tensor([[3, 4]]), torch.arange(5)[None],
                       torch.tensor([[1, 0, 0, 0, 0]]))


def test_attention_mask_refuses_more_queries_than_keys():
    with pytest.raises(ValueError, match="3 queries over 2 keys"):
        attention_mask(torch.tensor([[0, 1, 2]]), torch.arange(2)[None],
                       torch.tensor([[True, False]]))


# -- decoder: forward, generate, logits_in_chunks ---------------------------------


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int8])
def test_tiny_decoder_reads_small_integer_tokens_as_int64(dtype):
    model = _model()
    with torch.no_grad():
        assert torch.equal(model(TOKENS.to(dtype)), model(TOKENS))


def test_tiny_decoder_refuses_uint64_tokens_naming_the_conversion():
    with pytest.raises(DTypeError, match=r"tokens has dtype torch.uint64.*torch.int64"):
        _model()(TOKENS.to(torch.uint64))


@pytest.mark.parametrize("cache", [[], LayerCache()], ids=["list", "LayerCache"])
def test_tiny_decoder_refuses_a_cache_that_is_not_a_kv_cache(cache):
    with pytest.raises(TypeError, match="cache must be a mha.kv_cache.KVCache"):
        _model()(TOKENS, cache=cache)


def test_generate_refuses_a_layer_cache_saying_it_holds_one_layer():
    with pytest.raises(TypeError, match="A LayerCache holds one layer"):
        generate(_model(), TOKENS, 2, cache=LayerCache())


def test_logits_in_chunks_refuses_1d_tokens():
    with pytest.raises(TypeError, match=r"tokens must be an integer tensor \(B, T\)"):
        logits_in_chunks(_model(), TOKENS[0], [3])


def test_logits_in_chunks_refuses_an_int_for_the_list_of_chunks():
    with pytest.raises(DTypeError, match=r"chunks must be a list of chunk lengths.*got 5"):
        logits_in_chunks(_model(), TOKENS, 5)


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_tiny_decoder_refuses_one_block_in_another_dtype():
    model = _model()
    model.blocks[0].double()
    with pytest.raises(DTypeError, match="Convert the whole model"):
        model(TOKENS)


# -- kv_cache ---------------------------------------------------------------------


@pytest.mark.parametrize("index", ["0", 1.5])
def test_kv_cache_refuses_a_layer_index_that_is_not_an_int(index):
    with pytest.raises(DTypeError, match="a layer index must be an int"):
        KVCache(2)[index]


@pytest.mark.parametrize("dtype", ["float32", np.float32])
def test_kv_cache_bytes_refuses_a_non_torch_dtype_naming_its_torch_spelling(dtype):
    with pytest.raises(DTypeError, match="its torch spelling is torch.float32"):
        kv_cache_bytes(1, 1, 1, 1, 1, dtype=dtype)


# -- tiled ------------------------------------------------------------------------


def _keyless_case():
    q = np.random.default_rng(0).standard_normal((4, 2))
    mask = np.zeros((4, 4), dtype=bool)
    mask[0, 0] = True  # with is_causal, query 0 has no key left
    return q, mask


def test_tiled_backward_refuses_a_query_left_without_a_key_in_the_forwards_words():
    q, mask = _keyless_case()
    kw = {"mask": mask, "is_causal": True, "block_q": 2, "block_k": 2}
    with pytest.raises(ValueError) as forward:
        tiled.tiled_attention(q, q, q, **kw)
    with pytest.raises(ValueError) as backward:
        tiled.tiled_attention_backward(q, q, q, np.zeros((4, 2)), np.zeros(4),
                                       np.ones((4, 2)), **kw)
    assert str(backward.value) == str(forward.value)
    assert str(backward.value).startswith("fully masked row: the mask combined with is_causal")


def test_tile_plan_refuses_a_negative_length():
    with pytest.raises(ValueError, match="tq must be a non-negative int; got -1"):
        tiled.tile_plan(-1, 8, 4, 4)


def test_tile_plan_refuses_a_length_that_is_not_an_int():
    with pytest.raises(DTypeError, match="tq must be a non-negative int; got 2.5"):
        tiled.tile_plan(2.5, 8)


def test_tiled_attention_refuses_a_plan_past_max_tiles_with_the_count():
    q = np.zeros((4096, 8))
    with pytest.raises(ValueError, match=r"4,096 x 4,096 = 16,777,216 tiles .*max_tiles=65,536"):
        tiled.tiled_attention(q, q, q, block_q=1, block_k=1)


def test_tiled_attention_runs_past_the_default_tile_count_when_max_tiles_allows_it():
    q = np.random.default_rng(0).standard_normal((6, 2))
    with pytest.raises(ValueError, match="past max_tiles=35"):
        tiled.tiled_attention(q, q, q, block_q=1, block_k=1, max_tiles=35)
    out = tiled.tiled_attention(q, q, q, block_q=1, block_k=1, max_tiles=36).out
    np.testing.assert_allclose(out, mha.attention(q, q, q)[0], atol=1e-12)


# -- the NumPy class and the torch module -----------------------------------------


def test_an_overflowing_output_projection_is_refused_on_both_sides_in_one_wording():
    torch.manual_seed(0)
    module = layers.MultiHeadAttention(4, 2, bias=False, dtype=torch.float32).eval()
    with torch.no_grad():
        module.out_proj.weight.fill_(3e38)  # finite weights whose products overflow float32
    x = torch.ones(1, 2, 4)
    with pytest.raises(ValueError) as torch_side:
        module(x)
    with pytest.raises(ValueError) as numpy_side, np.errstate(over="ignore"):
        to_numpy(module)(x.numpy())
    assert str(numpy_side.value) == str(torch_side.value)
    assert str(torch_side.value).startswith("the output projection overflows float32")


def test_torch_module_refuses_dropout_set_after_construction_outside_0_1():
    module = layers.MultiHeadAttention(4, 2)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\); got 1.5"):
        module.dropout = 1.5


def test_torch_module_refuses_an_input_on_the_meta_device():
    with pytest.raises(ValueError, match="query is on the meta device"):
        layers.MultiHeadAttention(4, 2)(torch.ones(1, 3, 4, device="meta"))


def test_attention_refuses_scores_larger_than_memory_with_the_size():
    q = np.ones((2**20, 1))
    size = r"= \(1048576, 1048576\) in float64 alone need 8.0 TiB"
    with pytest.raises(TooLargeError, match=size) as info:
        mha.attention(q, q, q)
    assert isinstance(info.value, MemoryError)  # what NumPy raised, after trying


def test_torch_module_refuses_scores_larger_than_memory_with_the_size():
    module = layers.MultiHeadAttention(2, 1)
    x = torch.zeros(64, 2**17, 2)  # (64, 1, 2**17, 2**17) float32 scores: 4 TiB
    size = r"= \(64, 1, 131072, 131072\) in float32 alone need 4.0 TiB"
    with pytest.raises(TooLargeError, match=size):
        module(x)


# -- softmax ----------------------------------------------------------------------


def test_softmax_refuses_a_numpy_masked_array_whose_mask_it_would_ignore():
    with pytest.raises(DTypeError, match="logits is a NumPy masked array; its mask would be"):
        mha.softmax(np.ma.array([1.0, 2.0, 3.0], mask=[False, False, True]))


def test_softmax_refuses_a_bfloat16_tensor_naming_the_conversion():
    with pytest.raises(DTypeError, match=r"bfloat16, which NumPy has no dtype for.*\.numpy\(\)"):
        mha.softmax(torch.ones(3, dtype=torch.bfloat16))


# -- compare ----------------------------------------------------------------------


def test_seeded_module_refuses_an_integer_dtype():
    with pytest.raises(DTypeError, match="dtype must be a floating torch dtype"):
        compare.seeded_module(8, 2, dtype=torch.int32)


def test_seeded_module_refuses_a_numpy_dtype_naming_its_torch_spelling():
    with pytest.raises(DTypeError, match="its torch spelling is torch.float32"):
        compare.seeded_module(8, 2, dtype=np.float32)


def test_max_differences_refuses_a_missing_reference_naming_the_names():
    with pytest.raises(ValueError, match=r"no array named 'numpy'.*\['a', 'b'\]"):
        compare.max_differences({"a": np.zeros(2), "b": np.zeros(2)})


def test_format_table_refuses_an_empty_table():
    with pytest.raises(ValueError, match="at least one column and one row"):
        compare.format_table({})


def test_magnitude_refuses_a_string():
    with pytest.raises(DTypeError, match="magnitude takes a number; got 'x'"):
        compare.magnitude("x")


def test_magnitude_rounds_eight_float32_epsilons_up_not_down():
    assert compare.magnitude(8 * float(np.finfo(np.float32).eps)) == "1e-06"


def test_numpy_class_and_torch_module_refuse_scores_past_memory_in_one_wording():
    x = np.zeros((64, 2**17, 2), dtype=np.float32)
    with pytest.raises(TooLargeError) as numpy_side:
        to_numpy(layers.MultiHeadAttention(2, 1, bias=False))(x)
    with pytest.raises(TooLargeError) as torch_side:
        layers.MultiHeadAttention(2, 1)(torch.from_numpy(x))
    wording = str(numpy_side.value).split("; ")[0]
    assert str(torch_side.value).split("; ")[0] == wording
    assert wording.startswith("the scores (..., Tq, Tk) = (64, 1, 131072, 131072) in float32")


def test_attention_kernels_refuses_a_result_in_place_of_a_function():
    with pytest.raises(TypeError, match="pass a function such as lambda"):
        compare.attention_kernels(3)


# == found by probing the same modules further ======================================



def test_rope_angles_refuses_positions_that_are_not_numbers():
    with pytest.raises(DTypeError, match="positions must be an integer tensor"):
        rope.rope_angles("abc", 8)


def test_tiny_decoder_refuses_a_string_d_model_before_building_the_embedding():
    with pytest.raises(DTypeError, match="d_model must be a positive int; got '32'"):
        TinyDecoder(10, d_model="32")


def test_tiny_decoder_runs_an_empty_batch():
    with torch.no_grad():
        assert _model()(torch.zeros(0, 3, dtype=torch.long)).shape == (0, 3, 10)


def test_tiny_decoder_refuses_no_token_with_nothing_cached_naming_the_tokens():
    with pytest.raises(ValueError, match=r"tokens has no positions \(T=0"):
        _model()(torch.zeros(1, 0, dtype=torch.long))


def test_tiny_decoder_refuses_tokens_on_the_meta_device():
    with pytest.raises(ValueError, match="tokens is on the meta device"):
        _model()(TOKENS.to("meta"))


def test_gqa_attention_refuses_meta_inputs():
    q = _k().to("meta")
    with pytest.raises(ValueError, match="q is on the meta device"):
        gqa_attention(q, q, q)


def test_gqa_attention_refuses_scores_larger_than_memory_with_the_size():
    q = torch.zeros(64, 1, 2**17, 2)
    with pytest.raises(TooLargeError, match=r"\(64, 1, 131072, 131072\)"):
        gqa_attention(q, q, q)


def test_nan_appended_to_the_cache_is_refused_where_attention_reads_it():
    k = _k()
    cache = LayerCache()
    k_all, v_all = cache.append(k * float("nan"), k)  # stored: a scan would cost every step
    with pytest.raises(ValueError, match="k contains NaN"):
        gqa_attention(k, k_all, v_all)


def test_layer_cache_refuses_tensors_on_the_meta_device():
    k = _k().to("meta")
    with pytest.raises(ValueError, match="k is on the meta device"):
        LayerCache().append(k, k)


def test_kv_cache_refuses_uint64_positions():
    with pytest.raises(DTypeError, match="positions has dtype torch.uint64"):
        KVCache(1).add_tokens(torch.zeros(1, 2, dtype=torch.uint64),
                              torch.zeros(1, 2, dtype=torch.bool))


@pytest.mark.parametrize("batch", ["2", -1])
def test_next_positions_refuses_a_batch_that_is_not_an_int_at_least_0(batch):
    with pytest.raises(ValueError, match="batch must be a non-negative int"):
        KVCache(1).next_positions(batch)


def test_tiled_attention_refuses_a_bfloat16_tensor_it_cannot_read():
    t = torch.ones(3, 2, dtype=torch.bfloat16)
    with pytest.raises(DTypeError, match="q is a torch tensor that has dtype bfloat16"):
        tiled.tiled_attention(t, t, t)


def test_tiled_attention_refuses_a_masked_array_whose_mask_it_would_ignore():
    q = np.ma.array(np.ones((3, 2)), mask=np.eye(3, 2, dtype=bool))
    with pytest.raises(DTypeError, match="q is a NumPy masked array"):
        tiled.tiled_attention(q, q, q)


def test_peak_traced_bytes_refuses_a_result_in_place_of_a_function():
    with pytest.raises(TypeError, match="pass the function, not its result"):
        tiled.peak_traced_bytes(3)


def test_run_four_paths_refuses_a_bfloat16_module_the_numpy_path_cannot_hold():
    module = compare.seeded_module(4, 2, dtype=torch.bfloat16)
    with pytest.raises(DTypeError, match="holds float32 or float64; the module is torch.bfloat16"):
        compare.run_four_paths(module, torch.ones(1, 3, 4, dtype=torch.bfloat16))


def test_run_four_paths_names_the_numpy_class_by_its_module_when_refusing_it():
    with pytest.raises(TypeError, match=r"got mha.multihead.MultiHeadAttention"):
        compare.run_four_paths(mha.MultiHeadAttention(4, 2), torch.ones(1, 3, 4))


@pytest.mark.parametrize("seed", ["0", 1.5])
def test_seeded_module_refuses_a_seed_that_is_not_an_int(seed):
    with pytest.raises(DTypeError, match="seed must be an int"):
        compare.seeded_module(4, 2, seed=seed)


def test_difference_table_refuses_a_numpy_query():
    with pytest.raises(TypeError, match=r"query must be a torch tensor \(B, T, C\); got ndarray"):
        compare.difference_table(np.ones((1, 3, 4)), 2)


def test_difference_table_refuses_one_dtype_in_place_of_a_tuple():
    with pytest.raises(TypeError, match=r"dtypes must be a tuple or list, e.g. dtypes=\("):
        compare.difference_table(torch.ones(1, 3, 4), 2, dtypes=torch.float32)


def test_max_differences_refuses_nan_rather_than_reporting_it():
    with pytest.raises(ValueError, match=r"a contains NaN at index \(0,\); inputs must be finite"):
        compare.max_differences({"numpy": np.zeros(2), "a": np.array([np.nan, 0.0])})


def test_max_differences_refuses_a_tensor_that_requires_grad_naming_detach():
    with pytest.raises(DTypeError, match=r"a is a torch tensor that requires grad.*detach"):
        compare.max_differences({"numpy": np.zeros(2), "a": torch.zeros(2, requires_grad=True)})


def test_format_table_refuses_a_table_that_is_not_a_dict_of_dicts():
    with pytest.raises(TypeError, match=r"table must be a dict \{column: \{row: value\}\}"):
        compare.format_table([1])


def test_format_table_refuses_a_fmt_that_is_not_callable():
    with pytest.raises(TypeError, match="fmt must be a function"):
        compare.format_table({"a": {"r": 1.0}}, fmt=3)


def test_gradients_refuses_a_numpy_query():
    with pytest.raises(TypeError, match=r"query must be a torch tensor"):
        compare.gradients(compare.seeded_module(4, 2), np.ones((1, 3, 4)))


def test_missing_gradients_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match="missing_gradients takes a torch nn.Module; got int"):
        compare.missing_gradients(3)


def test_named_projections_refuses_another_kind_of_module():
    with pytest.raises(TypeError, match="named_projections takes mha.layers.MultiHeadAttention"):
        compare.named_projections(3, {})


def test_causal_mask_refuses_a_mask_larger_than_memory_with_the_size():
    with pytest.raises(TooLargeError, match=r"the mask \(1048576, 1048576\) in bool would need"):
        masks.causal_mask(2**20)


def test_mask_from_positions_accepts_empty_lists():
    assert masks.mask_from_positions([], []).shape == (0, 0)


def test_numerical_jacobian_refuses_a_jacobian_larger_than_memory_with_the_size():
    with pytest.raises(TooLargeError, match=r"the Jacobian \(131072, 131072\) in float64"):
        numerical.numerical_jacobian(lambda v: v, np.ones(2**17))


def test_numerical_gradient_refuses_a_bfloat16_tensor_it_cannot_read():
    with pytest.raises(DTypeError, match="x is a torch tensor that has dtype bfloat16"):
        numerical.numerical_gradient(lambda v: v.sum(), torch.ones(2, dtype=torch.bfloat16))


@pytest.mark.parametrize("dtype", [torch.int32, np.float32, "float32"])
def test_torch_module_refuses_a_dtype_that_is_not_a_floating_torch_dtype(dtype):
    with pytest.raises(DTypeError, match="dtype must be a"):
        layers.MultiHeadAttention(4, 2, dtype=dtype)


def test_torch_module_refuses_a_device_torch_does_not_know():
    with pytest.raises(ValueError, match="device must name a torch device.*got 'gpu'"):
        layers.MultiHeadAttention(4, 2, device="gpu")


def test_torch_module_refuses_a_mask_on_the_meta_device():
    mask = torch.zeros(3, 3, dtype=torch.bool, device="meta")
    with pytest.raises(ValueError, match="mask is on the meta device"):
        layers.MultiHeadAttention(4, 2)(torch.ones(1, 3, 4), mask=mask)


@pytest.mark.parametrize("t_q", ["3", -1, 2.0])
def test_causal_mask_torch_refuses_a_length_that_is_not_an_int_at_least_0(t_q):
    with pytest.raises(ValueError, match="t_q must be a non-negative int"):
        layers.causal_mask_torch(t_q, 3)


def test_sdpa_attention_refuses_meta_inputs():
    q = _k().to("meta")
    with pytest.raises(ValueError, match="q is on the meta device"):
        sdpa_attention(q, q, q)


@pytest.mark.parametrize(("kw", "name"), [({"n_heads": "2"}, "n_heads"),
                                          ({"n_heads": 0}, "n_heads"),
                                          ({"n_heads": 2, "batch_size": "1"}, "batch_size")])
def test_to_nn_multihead_masks_refuses_sizes_that_are_not_positive_ints(kw, name):
    with pytest.raises(ValueError, match=f"{name} must be a positive int"):
        to_nn_multihead_masks(torch.zeros(3, 3, dtype=torch.bool), **kw)


def test_to_numpy_refuses_a_string_ignore_dropout():
    with pytest.raises(DTypeError, match="ignore_dropout must be True or False; got 'no'"):
        to_numpy(layers.MultiHeadAttention(4, 2), ignore_dropout="no")


def test_to_nn_multihead_names_the_numpy_class_by_its_module_when_refusing_it():
    with pytest.raises(TypeError, match="got mha.multihead.MultiHeadAttention"):
        to_nn_multihead(mha.MultiHeadAttention(4, 2))


@pytest.mark.parametrize("seed", ["x", 1.5, -1])
def test_numpy_class_refuses_a_seed_that_is_not_an_int_at_least_0(seed):
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        mha.MultiHeadAttention(4, 2, seed=seed)


def test_numpy_class_refuses_a_torch_dtype_naming_the_numpy_one():
    with pytest.raises(DTypeError, match=r"got torch.float32 \(a NumPy dtype such as np.float32\)"):
        mha.MultiHeadAttention(4, 2, dtype=torch.float32)


def test_numpy_class_refuses_weights_replaced_by_another_shape_naming_them():
    module = mha.MultiHeadAttention(4, 2)
    module.w_q = np.ones((3, 3))
    with pytest.raises(ValueError, match=r"w_q must be \(C, C\) = \(4, 4\)"):
        module(np.ones((1, 3, 4)))
