"""Refusals of the newer modules, round 5 (issue 18): decoder attention, generate,
scaling, induction, the lesson 01 and 04 widgets' functions, and the KV cache.

Each test pins one input that was silently wrong or ended in a raw error from deep
inside torch or NumPy (found by an independent probe of ~280 bad inputs and by ours),
and the refusal that now names the problem in the package's words (``mha._checks``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mha import decoder, induction, scaling
from mha._checks import DTypeError
from mha.kv_cache import LayerCache
from mha.widgets.masks import mask_before_vs_after, mask_preset
from mha.widgets.weighted_sum import weighted_sum_readout

pytestmark = pytest.mark.usefixtures("one_torch_thread")

K = [[1.0, 0.0], [0.0, 1.0]]
V = [[2.0, 0.0], [0.0, 4.0]]


def _attn():
    torch.manual_seed(0)
    return decoder.TinyDecoder(10, d_model=16, n_heads=4).blocks[0].attn


def _model():
    torch.manual_seed(0)
    return decoder.TinyDecoder(10, d_model=16, n_heads=4).eval()


# -- decoder.Attention -------------------------------------------------------------


def test_decoder_attention_refuses_integer_x_by_name_not_a_matmul_dtype_error():
    with pytest.raises(DTypeError, match=r"x has dtype torch.int64, the attention's weights "
                                         r"torch.float32"):
        _attn()(torch.ones(2, 3, 16, dtype=torch.long), torch.arange(3))


def test_decoder_attention_refuses_float64_x_for_float32_weights():
    with pytest.raises(DTypeError, match="x has dtype torch.float64"):
        _attn()(torch.randn(2, 3, 16, dtype=torch.float64), torch.arange(3))


def test_decoder_attention_refuses_a_width_other_than_d_model():
    with pytest.raises(ValueError, match=r"C = d_model = 16; got shape \(2, 3, 15\)"):
        _attn()(torch.randn(2, 3, 15), torch.arange(3))


def test_decoder_attention_refuses_a_2d_x():
    with pytest.raises(ValueError, match=r"x must be a tensor \(B, T, C\)"):
        _attn()(torch.randn(3, 16), torch.arange(3))


# -- decoder.generate ----------------------------------------------------------------


def test_generate_refuses_a_billion_new_tokens_up_front_naming_the_limit():
    with pytest.raises(ValueError, match=r"n_new=1,000,000,000 is more than generate's limit "
                                         r"of 10,000"):
        decoder.generate(_model(), torch.tensor([[1, 2]]), 10**9)


def test_generate_refuses_a_million_new_tokens_up_front():
    with pytest.raises(ValueError, match="n_new=1,000,000 is more than"):
        decoder.generate(_model(), torch.tensor([[1, 2]]), 10**6)


def test_generate_refuses_a_run_past_the_cache_max_len_before_any_step():
    model = _model()
    cache = model.new_cache(max_len=8)
    with pytest.raises(ValueError, match=r"max_len=8 positions; 0 cached \+ 2 prompt \+ 9 fed "
                                         r"back = 11"):
        decoder.generate(model, torch.tensor([[1, 2]]), 10, cache=cache)
    assert cache.length == 0


def test_generate_fills_a_cache_exactly_to_max_len():
    model = _model()
    cache = model.new_cache(max_len=11)
    decoder.generate(model, torch.tensor([[1, 2]]), 10, cache=cache)
    assert cache.length == 11


# -- scaling ---------------------------------------------------------------------------


def test_dot_product_variance_refuses_an_int_rng_naming_default_rng():
    with pytest.raises(DTypeError, match=r"rng must be a np.random.Generator, e.g. "
                                         r"np.random.default_rng\(0\); got 0"):
        scaling.dot_product_variance([4], 10, 0)


def test_jacobian_norms_by_width_refuses_a_string_divide():
    with pytest.raises(DTypeError, match="divide must be True or False; got 'no'"):
        scaling.jacobian_norms_by_width([0], [4], "no")


def test_scores_at_width_refuses_a_string_divide():
    q, k = scaling.sample_head(4, 8)
    with pytest.raises(DTypeError, match="divide must be True or False; got 'False'"):
        scaling.scores_at_width(q, k, 4, "False")


def test_jacobian_norms_by_width_refuses_a_fractional_seed_instead_of_truncating_it():
    with pytest.raises(DTypeError, match="a seed must be a non-negative int; got 1.5"):
        scaling.jacobian_norms_by_width([1.5], [4], True)


# -- induction -------------------------------------------------------------------------


def test_letters_refuses_a_token_id_past_the_alphabet():
    with pytest.raises(ValueError, match=r"tokens must lie in 0..25; got 30 at index \(0,\)"):
        induction.letters(torch.tensor([30]))


def test_letters_refuses_a_negative_id_instead_of_reading_z():
    with pytest.raises(ValueError, match="got -1"):
        induction.letters([0, -1])


def test_letters_refuses_float_ids_instead_of_truncating_them():
    with pytest.raises(DTypeError, match="tokens must be integer token ids in 0..25; got dtype "
                                         "float64"):
        induction.letters([1.5])


def test_attention_layer_refuses_a_string_rotary_flag():
    with pytest.raises(DTypeError, match="rotary must be True or False; got 'no'"):
        induction.AttentionLayer(8, 2, "no")


def test_attention_layer_refuses_zero_heads_by_name():
    with pytest.raises(ValueError, match="n_heads must be a positive int; got 0"):
        induction.AttentionLayer(8, 0, True)


# -- widgets: lesson 04's masks, lesson 01's read-out ---------------------------------


def test_mask_before_vs_after_refuses_1d_scores_by_name():
    with pytest.raises(ValueError, match=r"scores must be \(Tq, Tk\), one row per query; got "
                                         r"shape \(2,\)"):
        mask_before_vs_after(np.array([1.0, 2.0]), np.array([True, True]))


def test_mask_before_vs_after_refuses_string_scores_by_name():
    with pytest.raises(DTypeError, match="scores must be real numbers"):
        mask_before_vs_after([["a", "b"]], np.array([[False, True]]))


@pytest.mark.parametrize("t", [0, -1])
def test_mask_preset_names_t_when_it_is_not_positive(t):
    with pytest.raises(ValueError, match=f"t must be a positive int; got {t}"):
        mask_preset("causal", t)


def test_mask_preset_refuses_a_fractional_n_padded():
    with pytest.raises(DTypeError, match="n_padded must be a non-negative int; got 1.5"):
        mask_preset("padding", 5, 1.5)


def test_weighted_sum_readout_refuses_a_string_query_by_name():
    with pytest.raises(DTypeError, match="query must be real numbers"):
        weighted_sum_readout("abc", K, V)


def test_weighted_sum_readout_refuses_boolean_values_as_a_likely_mask():
    with pytest.raises(DTypeError, match="values is a boolean array"):
        weighted_sum_readout([1.0, 0.0], K, [[True, False], [False, True]])


# -- kv_cache: NaN appended is refused where the cache is read --------------------------


def _nan_kv():
    k = torch.randn(1, 4, 2, 4)
    k[0, 1, 1, 2] = float("nan")
    return k, torch.randn(1, 4, 2, 4)


def test_layer_cache_append_keeps_nan_without_scanning_as_its_docstring_says():
    k, v = _nan_kv()
    cached_k, _ = LayerCache(max_len=8).append(k, v)
    assert torch.isnan(cached_k).any()
    for doc in (LayerCache.__doc__, LayerCache.append.__doc__):
        assert "not scanned for NaN" in " ".join(doc.split())


def test_attention_reading_a_cache_holding_nan_refuses_it_by_name():
    k, v = _nan_kv()
    cached_k, cached_v = LayerCache(max_len=8).append(k, v)
    with pytest.raises(ValueError, match=r"k contains NaN at index \(0, 1, 1, 2\); inputs must "
                                         r"be finite"):
        decoder.gqa_attention(torch.randn(1, 4, 1, 4), cached_k, cached_v)


def test_a_model_step_over_a_cache_holding_nan_is_refused_and_rolled_back():
    model = _model()
    cache = model.new_cache()
    model(torch.tensor([[1, 2]]), cache=cache)
    with torch.no_grad():
        cache[0].k[0, 0, 0, 0] = float("nan")  # as if a NaN had been appended
    before = [(layer.k.clone(), layer.v.clone()) for layer in cache.layers]
    with pytest.raises(ValueError, match=r"k contains NaN at index \(0, 0, 0, 0\)"):
        model(torch.tensor([[3]]), cache=cache)
    assert cache.length == 2
    for layer, (k, v) in zip(cache.layers, before, strict=True):
        assert torch.equal(layer.k.nan_to_num(), k.nan_to_num())
        assert torch.equal(layer.v, v)


# -- found by our own probe (same kinds: flags, seeds, token ids, 1-D inputs, widths) ---------


def test_decoder_block_refuses_a_width_other_than_d_model_before_its_norm():
    block = _model().blocks[0]
    with pytest.raises(ValueError, match=r"C = d_model = 16; got shape \(2, 3, 15\)"):
        block(torch.randn(2, 3, 15), torch.arange(3))


def test_tiny_decoder_refuses_string_positions_by_name():
    with pytest.raises(DTypeError, match="positions must be integer, .*got 'ab'"):
        _model()(torch.tensor([[1, 2]]), positions="ab")


def test_logits_in_chunks_refuses_a_padding_that_is_not_a_bool_tensor():
    with pytest.raises(TypeError, match=r"padding must be a bool tensor \(B, T\) = \(1, 2\)"):
        decoder.logits_in_chunks(_model(), torch.tensor([[1, 2]]), [2], padding="x")


def test_dot_product_variance_refuses_an_empty_list_of_widths():
    with pytest.raises(ValueError, match="d_ks must list at least one head width"):
        scaling.dot_product_variance([], 10, np.random.default_rng(0))


def test_jacobian_norms_by_width_refuses_a_single_int_for_seeds():
    with pytest.raises(DTypeError, match=r"seeds must be a list of ints, e.g. range\(1, 101\); "
                                         r"got 3"):
        scaling.jacobian_norms_by_width(3, [4], True)


@pytest.mark.parametrize("seed", [1.5, "a", -1])
def test_unit_variance_scores_refuses_a_seed_that_is_not_a_non_negative_int(seed):
    with pytest.raises((DTypeError, ValueError), match="seed must be a non-negative int"):
        scaling.unit_variance_scores(8, seed)


def test_sample_head_refuses_a_fractional_seed():
    with pytest.raises(DTypeError, match="seed must be a non-negative int; got 1.5"):
        scaling.sample_head(8, 16, 1.5)


def test_encode_refuses_a_non_string_by_name():
    with pytest.raises(DTypeError, match="encode takes a string of capital letters A-Z; got 5"):
        induction.encode(5)


@pytest.mark.parametrize(("kw", "words"), [
    ({"block": "3"}, "block must be a positive int; got '3'"),
    ({"batch": -1}, "batch must be a non-negative int; got -1"),
    ({"batch": 2.5}, "batch must be a non-negative int; got 2.5"),
    ({"seed": 1.5}, "seed must be a non-negative int; got 1.5"),
])
def test_repeated_blocks_refuses_sizes_and_seeds_that_are_not_ints(kw, words):
    args = {"batch": 2, "block": 3} | kw
    with pytest.raises((DTypeError, ValueError), match=words):
        induction.repeated_blocks(**args)


@pytest.mark.parametrize(("kw", "words"), [
    ({"vocab_size": "a"}, "vocab_size must be a positive int; got 'a'"),
    ({"n_layers": 0}, "n_layers must be a positive int; got 0"),
    ({"positions": "learned", "max_len": 0}, "max_len must be a positive int; got 0"),
])
def test_attention_only_refuses_sizes_that_are_not_positive_ints(kw, words):
    with pytest.raises((DTypeError, ValueError), match=words):
        induction.AttentionOnly(**kw)


def test_attention_only_refuses_positions_given_as_a_list():
    model = induction.AttentionOnly(d_model=8, n_heads=2)
    with pytest.raises(ValueError, match=r"positions must be a tensor \(T,\) = \(2,\); got "
                                         r"\[0, 1\]"):
        model(torch.tensor([[1, 2]]), positions=[0, 1])


def test_attention_only_refuses_negative_learned_positions():
    model = induction.AttentionOnly(d_model=8, n_heads=2, positions="learned", max_len=8)
    with pytest.raises(ValueError, match=r"learned positions lie in 0..max_len - 1 = 7; got "
                                         r"-1..0"):
        model(torch.tensor([[1, 2]]), positions=torch.tensor([-1, 0]))


def test_attention_layer_refuses_a_width_other_than_d_model():
    layer = induction.AttentionLayer(8, 2, True)
    with pytest.raises(ValueError, match=r"C = d_model = 8; got \(1, 3, 7\)"):
        layer(torch.randn(1, 3, 7), torch.arange(3))


def test_attention_layer_refuses_integer_x_by_name():
    layer = induction.AttentionLayer(8, 2, True)
    with pytest.raises(DTypeError, match="x has dtype torch.int64, the layer's weights "
                                         "torch.float32"):
        layer(torch.ones(1, 3, 8, dtype=torch.long), torch.arange(3))


def test_without_head_refuses_a_string_layer_index():
    model = induction.AttentionOnly(d_model=8, n_heads=2)
    with pytest.raises(DTypeError, match="layer must be a non-negative int; got '0'"):
        induction.without_head(model, "0", 0)


@pytest.mark.parametrize("tokens", [torch.tensor([1, 2, 1, 2]), torch.tensor([[1, 2, 3]])])
def test_half_losses_refuses_tokens_that_are_not_repeated_blocks_instead_of_nan(tokens):
    model = induction.AttentionOnly(d_model=8, n_heads=2)
    with pytest.raises(ValueError, match=r"tokens must be repeated blocks \(B, 2L\) with L >= 2"):
        induction.half_losses(model, tokens)


def test_head_scores_refuses_a_string_block_instead_of_doubling_it_to_22():
    with pytest.raises(DTypeError, match="block must be a positive int; got '2'"):
        induction.head_scores(torch.ones(1, 1, 4, 4) / 4, "2")


def test_mask_explorer_refuses_a_string_seed_by_name():
    from mha.widgets import MaskExplorer

    with pytest.raises(DTypeError, match="seed must be a non-negative int; got 'a'"):
        MaskExplorer(seed="a")


def test_weighted_sum_readout_refuses_a_scale_that_is_not_a_number_by_name():
    from mha.widgets.weighted_sum import weighted_sum_readout

    with pytest.raises(TypeError, match="scale must be a real number; got 'a'"):
        weighted_sum_readout([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 4.0]],
                             scale="a")
