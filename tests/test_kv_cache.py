"""Specification of mha.kv_cache: one layer's K/V, a whole model's cache, its memory."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mha.kv_cache import KVCache, LayerCache, kv_cache_bytes


def _kv(b=2, h=2, t=3, dh=4, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    k, v = torch.randn(2, b, h, t, dh, generator=g).to(dtype)  # each (B, H_kv, T, dh)
    return k, v


def test_append_returns_everything_cached_in_order():
    cache = LayerCache()
    k1, v1 = _kv(t=3)
    k2, v2 = _kv(t=2, seed=1)
    cache.append(k1, v1)
    k, v = cache.append(k2, v2)
    torch.testing.assert_close(k, torch.cat((k1, k2), dim=2), rtol=0, atol=0)
    torch.testing.assert_close(v, torch.cat((v1, v2), dim=2), rtol=0, atol=0)
    assert cache.length == 5


def test_an_empty_cache_has_length_and_bytes_zero():
    assert LayerCache().length == 0 and LayerCache().nbytes == 0
    assert KVCache(2).length == 0 and KVCache(2).nbytes == 0


def test_the_cache_keeps_a_copy_not_the_callers_tensor():
    cache = LayerCache()
    k, v = _kv()
    cache.append(k, v)
    k.zero_()
    assert cache.k.abs().sum() > 0


def test_memory_formula_worked_number():
    # 2 (K and V) x 2 layers x B=1 x H_kv=2 x T=10 x dh=8 x 4 bytes
    assert kv_cache_bytes(2, 1, 2, 10, 8, torch.float32) == 2 * 2 * 1 * 2 * 10 * 8 * 4 == 2560


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_nbytes_is_the_memory_formula(dtype):
    cache = KVCache(3)
    for t in (4, 1, 1):
        k, v = _kv(b=2, h=2, t=t, dh=8, dtype=dtype)
        for layer in cache.layers:
            layer.append(k, v)
    assert cache.nbytes == kv_cache_bytes(3, 2, 2, 6, 8, dtype)


def test_bfloat16_halves_the_bytes_of_float32():
    assert kv_cache_bytes(1, 1, 1, 7, 8, torch.bfloat16) * 2 == kv_cache_bytes(1, 1, 1, 7, 8)


def test_reset_empties_the_layer_and_forgets_its_shape():
    cache = LayerCache()
    cache.append(*_kv(b=2))
    cache.reset()
    assert cache.length == 0 and cache.nbytes == 0
    cache.append(*_kv(b=1))  # another batch size is fine after a reset
    assert cache.k.shape[0] == 1


def test_reset_of_the_model_cache_empties_every_layer_and_the_positions():
    cache = KVCache(2)
    cache.add_tokens(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 3, dtype=torch.bool))
    for layer in cache.layers:
        layer.append(*_kv(b=1))
    cache.reset()
    assert cache.length == 0 and cache.nbytes == 0 and cache.positions is None


def test_next_positions_count_the_real_tokens():
    cache = KVCache(1)
    assert cache.next_positions(2).tolist() == [0, 0]
    padding = torch.tensor([[True, True, False], [False, False, False]])
    cache.add_tokens(torch.tensor([[0, 0, 0], [0, 1, 2]]), padding)
    assert cache.next_positions(2).tolist() == [1, 3]
    assert cache.length == 3


@pytest.mark.parametrize(("k", "v", "error", "words"), [
    (torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), ValueError, r"\(B, H_kv, T_new, dh\)"),
    (torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 2, 4), ValueError, "one shape"),
    (torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4, dtype=torch.float64), TypeError,
     "share one dtype"),
    (torch.zeros(1, 2, 3, 4, dtype=torch.long), torch.zeros(1, 2, 3, 4), TypeError, "floating"),
])
def test_refuses_bad_k_or_v(k, v, error, words):
    with pytest.raises(error, match=words):
        LayerCache().append(k, v)


def test_refuses_a_dtype_other_than_the_cached_one():
    cache = LayerCache()
    cache.append(*_kv())
    with pytest.raises(TypeError, match="the cache holds torch.float32"):
        cache.append(*_kv(dtype=torch.bfloat16))


def test_refuses_another_batch_size():
    cache = LayerCache()
    cache.append(*_kv(b=2))
    with pytest.raises(ValueError, match="batch mismatch.*Reset the cache"):
        cache.append(*_kv(b=1))


def test_refuses_another_head_count_or_width():
    cache = LayerCache()
    cache.append(*_kv(h=2, dh=4))
    with pytest.raises(ValueError, match="H_kv=2 heads of width dh=4"):
        cache.append(*_kv(h=1, dh=4))


def test_refuses_to_pass_max_len():
    cache = LayerCache(max_len=4)
    cache.append(*_kv(t=3))
    with pytest.raises(ValueError, match="passes max_len=4"):
        cache.append(*_kv(t=2))
    assert cache.length == 3  # the refused append changed nothing


def test_model_cache_refuses_positions_of_another_batch():
    cache = KVCache(1)
    cache.add_tokens(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="batch mismatch"):
        cache.add_tokens(torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.bool))


def test_model_cache_refuses_float_positions():
    with pytest.raises(TypeError, match="integer tensor"):
        KVCache(1).add_tokens(torch.zeros(1, 3), torch.zeros(1, 3, dtype=torch.bool))


def test_model_cache_refuses_a_layer_out_of_range():
    with pytest.raises(IndexError, match="2 layers"):
        KVCache(2)[2]


def test_refuses_a_bad_size_in_the_formula():
    with pytest.raises(ValueError, match="length"):
        kv_cache_bytes(1, 1, 1, -1, 8)


def test_numpy_integer_sizes_are_ints():
    cache = KVCache(np.int64(2), max_len=np.int64(5))
    assert cache.n_layers == 2 and cache.max_len == 5 and cache[0].max_len == 5
    assert type(cache.max_len) is int and type(LayerCache(np.int32(3)).max_len) is int


def test_the_formula_takes_numpy_integers():
    sizes = (2, 1, 4, 16, 8)
    assert kv_cache_bytes(*map(np.int64, sizes)) == kv_cache_bytes(*sizes)


def test_refuses_a_float_length_in_the_formula():
    with pytest.raises(TypeError, match="length must be a non-negative int; got 16.0"):
        kv_cache_bytes(1, 1, 1, 16.0, 8)


def test_rollback_on_error_restores_positions_and_every_layer():
    cache = KVCache(2)
    positions, padding = torch.arange(3)[None], torch.zeros(1, 3, dtype=torch.bool)
    cache.add_tokens(positions, padding)
    k, v = _kv(b=1, t=3)
    cache[0].append(k, v)
    with pytest.raises(RuntimeError, match="refused"), cache.rollback_on_error():
        cache.add_tokens(positions + 3, padding)
        cache[0].append(k, v)
        raise RuntimeError("refused")
    assert cache.length == 3 and cache[0].length == 3 and cache[1].length == 0
    assert torch.equal(cache.positions, positions) and torch.equal(cache[0].k, k)
