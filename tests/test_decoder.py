"""Specification of mha.decoder: the tiny decoder with and without its KV cache."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.decoder import (
    Attention,
    TinyDecoder,
    attention_mask,
    from_attention_only,
    generate,
    gqa_attention,
    logits_in_chunks,
    repeat_kv,
)
from mha.kv_cache import kv_cache_bytes

pytestmark = pytest.mark.usefixtures("one_torch_thread")


V = 40
# Cached vs uncached logits, measured on this model (|logits| up to about 2): float32 differs
# by under 1e-6; bfloat16 by at most a few of its own steps (2 ** -7 = 0.0078 between 1 and 2).
TOL = {torch.float32: 1e-6, torch.bfloat16: 3e-2}


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    config = {"d_model": 32, "n_heads": 4, "n_layers": 2} | kw
    return TinyDecoder(V, **config).eval()


def _prompt(b=2, t=6, seed=1):
    return torch.randint(0, V, (b, t), generator=torch.Generator().manual_seed(seed))


@functools.cache
def _gqa_model(window=None):
    return _model(n_kv_heads=2, window=window)


def test_cached_and_uncached_logits_agree_within_1e_6_over_a_generated_sequence():
    model = _model()
    tokens_c, logits_c = generate(model, _prompt(), 40, use_cache=True)
    tokens_u, logits_u = generate(model, _prompt(), 40, use_cache=False)
    assert torch.equal(tokens_c, tokens_u)
    torch.testing.assert_close(logits_c, logits_u, rtol=0, atol=TOL[torch.float32])


def test_cached_and_uncached_logits_agree_in_bfloat16_within_its_tolerance():
    model = _model().to(torch.bfloat16)
    seq = torch.cat((_prompt(), generate(_model(), _prompt(), 30)[0]), dim=1)
    with torch.no_grad():
        whole = model(seq).float()
    stepwise = logits_in_chunks(model, seq, [6] + [1] * 30).float()
    torch.testing.assert_close(stepwise, whole, rtol=0, atol=TOL[torch.bfloat16])


@pytest.mark.parametrize(("impl", "n_kv_heads"), [("manual", 1), ("sdpa", 2), ("sdpa", 4)])
def test_cached_equals_uncached_for_grouped_heads_and_both_impls(impl, n_kv_heads):
    model = _model(impl=impl, n_kv_heads=n_kv_heads)
    tokens_c, logits_c = generate(model, _prompt(), 20, use_cache=True)
    tokens_u, logits_u = generate(model, _prompt(), 20, use_cache=False)
    assert torch.equal(tokens_c, tokens_u)
    torch.testing.assert_close(logits_c, logits_u, rtol=0, atol=TOL[torch.float32])


def test_chunked_prefill_gives_the_logits_of_one_shot_prefill():
    model, seq = _model(), _prompt(t=20)
    one_shot = logits_in_chunks(model, seq, [20])
    torch.testing.assert_close(logits_in_chunks(model, seq, [7, 5, 1, 7]), one_shot,
                               rtol=0, atol=1e-6)


@settings(max_examples=15)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=8).filter(lambda c: sum(c) <= 24),
       st.sampled_from([None, 3]))
def test_any_chunking_gives_the_logits_of_the_whole_sequence(chunks, window):
    model = _gqa_model(window)
    seq = _prompt(t=sum(chunks), seed=sum(chunks))
    with torch.no_grad():
        whole = model(seq)
    torch.testing.assert_close(logits_in_chunks(model, seq, chunks), whole, rtol=0, atol=1e-6)


def test_sdpa_and_manual_attention_give_one_model():
    manual, sdpa = _model(n_kv_heads=2), _model(n_kv_heads=2, impl="sdpa")
    seq = _prompt(t=12)
    with torch.no_grad():
        torch.testing.assert_close(sdpa(seq), manual(seq), rtol=0, atol=1e-5)


def _left_padded(prompts):
    t = max(p.shape[1] for p in prompts)
    rows = [F.pad(p, (t - p.shape[1], 0)) for p in prompts]
    padding = torch.stack([torch.arange(t) < t - p.shape[1] for p in prompts])
    return torch.cat(rows), padding


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_left_padded_batch_generates_what_each_prompt_generates_alone(use_cache):
    model = _model()
    prompts = [_prompt(1, 3, 2), _prompt(1, 7, 3), _prompt(1, 5, 4)]
    batch, padding = _left_padded(prompts)
    tokens, _ = generate(model, batch, 12, use_cache=use_cache, padding=padding)
    for row, prompt in zip(tokens, prompts, strict=True):
        assert torch.equal(row[None], generate(model, prompt, 12)[0])


def test_left_padded_positions_start_at_zero_at_the_first_real_token():
    model, cache = _model(), _model().new_cache()
    batch, padding = _left_padded([_prompt(1, 2, 2), _prompt(1, 4, 3)])
    model(batch, cache=cache, padding=padding)
    assert cache.positions.tolist() == [[0, 0, 0, 1], [0, 1, 2, 3]]
    assert cache.next_positions(2).tolist() == [2, 4]


def test_a_cache_reused_without_reset_changes_the_next_prompts_logits():
    model, cache = _model(), _model().new_cache()
    generate(model, _prompt(1, 6, 5), 8, cache=cache)
    _, alone = generate(model, _prompt(1, 6, 6), 8)
    _, stale = generate(model, _prompt(1, 6, 6), 8, cache=cache)  # still holds the first prompt
    cache.reset()
    _, fresh = generate(model, _prompt(1, 6, 6), 8, cache=cache)
    assert (stale - alone).abs().max() > 0.01
    torch.testing.assert_close(fresh, alone, rtol=0, atol=1e-6)


def test_positions_restarting_at_zero_give_other_logits():
    model, seq = _model(), _prompt(1, 10)
    with torch.no_grad():
        right_cache, wrong_cache = model.new_cache(), model.new_cache()
        model(seq[:, :9], cache=right_cache)
        model(seq[:, :9], cache=wrong_cache)
        right = model(seq[:, 9:], cache=right_cache)  # position 9
        wrong = model(seq[:, 9:], cache=wrong_cache, positions=torch.tensor([0]))
        whole = model(seq)[:, 9:]
    torch.testing.assert_close(right, whole, rtol=0, atol=1e-6)
    assert (wrong - whole).abs().max() > 0.01


def test_sliding_window_gives_the_same_logits_with_and_without_the_cache():
    model, seq = _model(window=4), _prompt(t=14)
    with torch.no_grad():
        whole = model(seq)
    torch.testing.assert_close(logits_in_chunks(model, seq, [5] + [1] * 9), whole,
                               rtol=0, atol=1e-6)
    with torch.no_grad():
        assert (_model()(seq) - whole).abs().max() > 0.01  # the window changes the model


def test_one_new_query_over_real_keys_gets_no_mask():
    assert attention_mask(torch.tensor([[5]]), torch.arange(6)[None]) is None


def test_one_new_query_needs_a_mask_with_padding_or_a_window():
    pad = torch.tensor([[True, False, False, False]])
    padded = attention_mask(torch.tensor([[2]]), torch.tensor([[0, 0, 1, 2]]), pad)
    windowed = attention_mask(torch.tensor([[3]]), torch.arange(4)[None], window=2)
    assert padded[0, 0].tolist() == [[True, False, False, False]]
    assert windowed[0, 0].tolist() == [[True, True, False, False]]


def test_one_new_query_reads_every_cached_key_whatever_its_position():
    # Lesson 08's restart bug: the cache order is the sequence order, positions only rotate.
    assert attention_mask(torch.tensor([[0]]), torch.tensor([[0, 1, 2, 3, 0]])) is None


def test_several_new_queries_do_not_read_keys_at_later_positions():
    mask = attention_mask(torch.tensor([[1, 2]]), torch.tensor([[0, 1, 2, 3, 1, 2]]))
    assert mask[0, 0, 0].tolist() == [False, False, True, True, False, True]


def test_the_mask_comes_from_absolute_positions():
    mask = attention_mask(torch.tensor([[3, 4]]), torch.arange(5)[None])  # 2 new queries, 5 keys
    assert mask[0, 0].tolist() == [[False, False, False, False, True], [False] * 5]


def test_a_padded_query_reads_only_its_own_key():
    pad = torch.tensor([[True, True, False]])
    mask = attention_mask(torch.tensor([[0, 0, 0]]), torch.tensor([[0, 0, 0]]), pad)
    assert mask[0, 0].tolist() == [[False, True, True], [True, False, True], [True, True, False]]


def test_repeat_kv_repeats_each_head_in_place():
    k = torch.arange(2.0).reshape(1, 2, 1, 1)  # heads 0, 1
    assert repeat_kv(k, 2).flatten().tolist() == [0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize("n_kv_heads", [1, 2])
def test_grouped_query_attention_matches_sdpa_enable_gqa(n_kv_heads):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 3, 8, generator=g)
    k, v = torch.randn(2, 2, n_kv_heads, 5, 8, generator=g)
    mask = torch.tensor([[False, False, False, True, True]] * 3)  # True = blocked
    ours = gqa_attention(q, k, v, mask)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask, enable_gqa=True)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)


def test_tiling_the_heads_instead_of_interleaving_gives_other_outputs():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 4, 3, 8, generator=g)  # (B, H, Tq, dh)
    k, v = torch.randn(2, 1, 2, 5, 8, generator=g)  # each (B, H_kv, Tk, dh)
    tiled = F.scaled_dot_product_attention(q, k.repeat(1, 2, 1, 1), v.repeat(1, 2, 1, 1))
    assert (tiled - gqa_attention(q, k, v)).abs().max() > 0.01


def test_grouped_query_attention_equals_full_mha_with_repeated_kv_heads():
    torch.manual_seed(0)
    gqa, full = Attention(32, 4, n_kv_heads=2), Attention(32, 4)
    with torch.no_grad():
        full.q_proj.weight.copy_(gqa.q_proj.weight)
        full.out_proj.weight.copy_(gqa.out_proj.weight)
        for name in ("k_proj", "v_proj"):  # (H_kv * dh, C) -> (H * dh, C), head by head
            w = getattr(gqa, name).weight.unflatten(0, (2, 8))
            getattr(full, name).weight.copy_(w.repeat_interleave(2, dim=0).flatten(0, 1))
    x, pos = torch.randn(2, 6, 32), torch.arange(6)
    with torch.no_grad():
        torch.testing.assert_close(gqa(x, pos), full(x, pos), rtol=0, atol=1e-6)


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_the_cache_of_a_model_is_the_memory_formula(n_kv_heads):
    model, cache = _model(n_kv_heads=n_kv_heads), _model().new_cache()
    generate(model, _prompt(), 10, cache=cache)
    assert cache.length == 6 + 9  # the last token is chosen, not yet fed back
    assert cache.nbytes == kv_cache_bytes(2, 2, n_kv_heads, 15, 8, torch.float32)
    real = sum(t.untyped_storage().nbytes() for layer in cache.layers for t in (layer.k, layer.v))
    assert cache.nbytes == real


def test_multi_query_attention_shrinks_the_cache_by_n_heads():
    sizes = {}
    for n_kv in (4, 1):
        cache = _model().new_cache()
        generate(_model(n_kv_heads=n_kv), _prompt(), 5, cache=cache)
        sizes[n_kv] = cache.nbytes
    assert sizes[4] == 4 * sizes[1]


def test_tied_weights_share_one_matrix():
    model = _model(tie_weights=True)
    assert model.head.weight is model.embed.weight


def test_refuses_tokens_outside_the_vocabulary():
    with pytest.raises(ValueError, match=f"0..{V - 1}"):
        _model()(torch.tensor([[0, V]]))


def test_refuses_float_tokens():
    with pytest.raises(TypeError, match="integer tensor"):
        _model()(torch.zeros(1, 3))


def test_refuses_padding_of_another_shape():
    with pytest.raises(TypeError, match="padding"):
        _model()(_prompt(), padding=torch.zeros(2, 5, dtype=torch.bool))


def test_refuses_positions_of_another_length():
    with pytest.raises(ValueError, match=r"positions must be integer, \(T,\) = \(6,\)"):
        _model()(_prompt(), positions=torch.arange(5))


def test_refuses_a_cache_of_another_model_depth():
    with pytest.raises(ValueError, match="3 layers"):
        _model()(_prompt(), cache=_model(n_layers=3).new_cache())


def test_refuses_a_cache_filled_with_another_batch():
    model, cache = _model(), _model().new_cache()
    model(_prompt(b=2), cache=cache)
    with pytest.raises(ValueError, match="batch mismatch"):
        model(_prompt(b=1), cache=cache)


def test_a_refused_step_leaves_the_cache_as_it_was():
    model, cache = _model(), _model().new_cache()
    model(_prompt(b=1, t=3), cache=cache)
    model.double()
    with pytest.raises(TypeError, match="Convert the model or reset the cache"):
        model(torch.tensor([[4]]), cache=cache)
    assert cache.length == 3 and [layer.length for layer in cache.layers] == [3, 3]


def test_after_a_refused_step_converting_the_model_back_gives_the_clean_logits():
    model, cache, clean = _model(), _model().new_cache(), _model().new_cache()
    model(_prompt(b=1, t=3), cache=cache)
    model(_prompt(b=1, t=3), cache=clean)
    with pytest.raises(TypeError):
        model.double()(torch.tensor([[4]]), cache=cache)
    model.float()
    torch.testing.assert_close(model(torch.tensor([[4]]), cache=cache),
                               model(torch.tensor([[4]]), cache=clean), rtol=0, atol=0)


def test_refuses_a_cache_whose_layers_and_positions_disagree():
    model, cache = _model(), _model().new_cache()
    model(_prompt(b=1, t=3), cache=cache)
    cache[1].append(torch.zeros(1, 4, 5, 8), torch.zeros(1, 4, 5, 8))  # layer 1: 3 + 5
    with pytest.raises(ValueError, match="out of step.*layer 1 holds 8.*reset"):
        model(torch.tensor([[4]]), cache=cache)


@pytest.mark.parametrize("window", [0, -1, 2.0, True])
def test_refuses_a_window_that_is_not_a_positive_int(window):
    with pytest.raises(ValueError, match=f"window must be a positive int; got {window!r}"):
        _model(window=window)


@pytest.mark.parametrize(("size", "value"), [("n_layers", 0), ("vocab_size", 0),
                                             ("n_layers", 1.0)])
def test_refuses_a_model_size_that_is_not_a_positive_int(size, value):
    config = {"vocab_size": V, "n_layers": 1} | {size: value}
    with pytest.raises(ValueError, match=f"{size} must be a positive int; got {value!r}"):
        TinyDecoder(config.pop("vocab_size"), 8, 2, **config)


def test_generate_refuses_a_use_cache_that_is_not_a_bool():
    with pytest.raises(TypeError, match="use_cache must be True or False; got 'no'"):
        generate(_model(), _prompt(), 2, use_cache="no")


def test_generate_refuses_a_prompt_row_that_is_all_padding():
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[1] = True
    with pytest.raises(ValueError, match="sequence 1 of the prompt is all padding"):
        generate(_model(), _prompt(), 2, padding=padding)


@pytest.mark.parametrize("chunks", [[4.0, 2.0], [3, True, 2]])
def test_logits_in_chunks_refuses_chunk_lengths_that_are_not_ints(chunks):
    with pytest.raises(TypeError, match="chunk length must be a positive int"):
        logits_in_chunks(_model(), _prompt(), chunks)


def test_refuses_heads_that_do_not_group():
    with pytest.raises(ValueError, match="n_kv_heads=3"):
        _model(n_kv_heads=3)


def test_refuses_zero_kv_heads():
    with pytest.raises(ValueError, match="n_kv_heads must be a positive int; got 0"):
        Attention(8, 2, n_kv_heads=0)


def test_generate_takes_a_numpy_integer_count():
    tokens, _ = generate(_model(), _prompt(), np.int64(3))
    assert torch.equal(tokens, generate(_model(), _prompt(), 3)[0])


def test_generate_refuses_an_empty_prompt():
    with pytest.raises(ValueError, match=r"at least one token.*\(1, 0\)"):
        generate(_model(), torch.zeros(1, 0, dtype=torch.long), 2)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_grouped_attention_refuses_keys_of_length_zero(impl):
    q, kv = torch.randn(1, 2, 2, 4), torch.randn(1, 1, 0, 4)
    with pytest.raises(ValueError, match=r"k has no positions \(Tk=0"):
        gqa_attention(q, kv, kv, impl=impl)


def test_grouped_attention_refuses_a_head_width_of_zero():
    q, kv = torch.randn(1, 2, 2, 0), torch.randn(1, 1, 3, 0)
    with pytest.raises(ValueError, match=r"no features \(d_k=0"):
        gqa_attention(q, kv, kv)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_grouped_attention_refuses_nan_input_as_mha_attention_words_it(impl, name):
    qkv = {"q": torch.randn(1, 2, 2, 4), "k": torch.randn(1, 1, 3, 4), "v": torch.ones(1, 1, 3, 4)}
    qkv[name][0, 0, 1, 2] = float("nan")
    with pytest.raises(ValueError, match=rf"{name} contains NaN at index \(0, 0, 1, 2\); inputs "
                                         "must be finite"):
        gqa_attention(qkv["q"], qkv["k"], qkv["v"], impl=impl)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_grouped_attention_refuses_scores_that_overflow_float32(impl):
    q, kv = torch.full((1, 2, 2, 4), 1e20), torch.full((1, 1, 3, 4), 1e20)
    with pytest.raises(ValueError, match=r"the scores q k\^T \* scale overflow float32"):
        gqa_attention(q, kv, kv, impl=impl)


def test_grouped_attention_refuses_zero_kv_heads():
    q, kv = torch.randn(1, 2, 2, 4), torch.randn(1, 0, 3, 4)
    with pytest.raises(ValueError, match="H_kv=0"):
        gqa_attention(q, kv, kv)


def test_refuses_an_unknown_impl():
    with pytest.raises(ValueError, match="impl"):
        gqa_attention(torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2),
                      impl="flash")


def test_lesson_06_weights_give_the_same_logits_in_the_decoder():
    from mha import induction

    trained = induction.load_trained("induction_2l_4h")
    tokens = induction.repeated_blocks(3, 8, seed=0)
    with torch.no_grad():
        torch.testing.assert_close(from_attention_only(trained)(tokens), trained(tokens),
                                   rtol=0, atol=1e-6)


def test_the_trained_copier_finishes_the_copy_through_the_cache():
    from mha import induction

    copier = from_attention_only(induction.load_trained("induction_2l_4h"))
    blocks = induction.repeated_blocks(1, 10, seed=3)
    tokens, _ = generate(copier, blocks[:, :13], 7)
    assert torch.equal(tokens, blocks[:, 13:])
