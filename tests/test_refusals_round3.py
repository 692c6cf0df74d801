"""Refusals that one side made and the other did not, or made in other words.

Each test pins one refusal of the core attention path: the NumPy class
``mha.MultiHeadAttention`` and the torch module ``mha.layers.MultiHeadAttention``,
``mha.attention`` and ``mha.torch_transfer.sdpa_attention``, and the mask
conversions of ``mha.masks``. Where both sides refuse the same mistake they raise
the same exception class with the same message, word for word.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mha
from mha import layers, masks
from mha._checks import DTypeError
from mha.torch_transfer import sdpa_attention, to_numpy

B, H, T, C = 2, 2, 3, 4


def both_modules(dtype=torch.float64):
    """A torch module in eval() and the NumPy class holding the same weights."""
    torch.manual_seed(0)
    module = layers.MultiHeadAttention(C, H, bias=False, dtype=dtype).eval()
    return module, to_numpy(module)


def refusal(call):
    """(exception class, message) of what ``call()`` raises."""
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


def x_numpy(seed=0):
    return np.random.default_rng(seed).standard_normal((B, T, C))


# -- F1: the NumPy class refuses the mask ranks the torch module refuses ----------


@pytest.mark.parametrize("shape", [(B, T, T), (T,), ()], ids=["3-D", "1-D", "0-D"])
def test_numpy_class_refuses_a_mask_rank_the_torch_module_refuses_with_its_words(shape):
    torch_module, numpy_module = both_modules()
    x, m = x_numpy(), np.zeros(shape, dtype=bool)
    numpy_refusal = refusal(lambda: numpy_module(x, mask=m))
    torch_refusal = refusal(lambda: torch_module(torch.from_numpy(x), mask=torch.from_numpy(m)))
    assert numpy_refusal == torch_refusal
    assert numpy_refusal[0] is ValueError
    assert numpy_refusal[1].startswith("mask must be (Tq, Tk) or 4-D (B, 1|H, 1|Tq, Tk)")


def test_a_3d_mask_is_refused_as_ambiguous_not_read_as_heads():
    _, numpy_module = both_modules()
    m3 = np.zeros((B, T, T), dtype=bool)
    m3[0, :, 2] = True  # meant: block key 2 in sequence 0 only
    with pytest.raises(ValueError, match="A 3-D mask is ambiguous"):
        numpy_module(x_numpy(), mask=m3)


@pytest.mark.parametrize("shape", [(T, T), (B, 1, 1, T), (1, H, T, T)])
def test_numpy_class_and_torch_module_agree_on_the_mask_ranks_they_accept(shape):
    torch_module, numpy_module = both_modules()
    m = np.zeros(shape, dtype=bool)
    m[..., 1:] = True  # every query reads key 0 only
    x = x_numpy()
    w_np = numpy_module(x, mask=m)[1]
    w_t = torch_module(torch.from_numpy(x), mask=torch.from_numpy(m), need_weights=True)[1]
    np.testing.assert_allclose(w_np, w_t.detach().numpy(), atol=1e-12)
    assert np.all(w_np[..., 0] == 1.0)


def test_a_0d_mask_gets_the_generic_rank_message_not_the_3d_one():
    _, numpy_module = both_modules()
    with pytest.raises(ValueError) as info:
        numpy_module(x_numpy(), mask=np.array(False))
    assert "got shape ()." in str(info.value) and "3-D" not in str(info.value)


# -- F12: one exception class and one wording for a dtype refusal ----------------


@pytest.mark.parametrize("dtype", [np.int64, np.float32], ids=["0/1 integer", "float"])
def test_a_non_bool_mask_gets_one_class_and_one_message_on_both_sides(dtype):
    torch_module, numpy_module = both_modules()
    x, m = x_numpy(), np.zeros((T, T), dtype=dtype)
    expected = refusal(lambda: mha.attention(x, x, x, mask=m))
    assert expected[0] is DTypeError
    xt, mt = torch.from_numpy(x), torch.from_numpy(m)
    assert refusal(lambda: numpy_module(x, mask=m)) == expected
    assert refusal(lambda: torch_module(xt, mask=mt)) == expected
    assert refusal(lambda: sdpa_attention(xt, xt, xt, mask=mt)) == expected
    assert refusal(lambda: layers.check_torch_mask(mt, (T, T))) == expected


def test_a_non_bool_key_padding_mask_is_a_dtype_error_naming_the_argument():
    torch_module, _ = both_modules()
    kind, words = refusal(lambda: torch_module(torch.zeros(B, T, C, dtype=torch.float64),
                                               key_padding_mask=torch.zeros(B, T)))
    assert kind is DTypeError
    assert words.startswith("key_padding_mask must be boolean with True = blocked; got dtype "
                            "float32.")


def test_sdpa_attention_refuses_mixed_dtypes_with_a_dtype_error():
    q = torch.zeros(1, 2, 4)
    kind, words = refusal(lambda: sdpa_attention(q, q.double(), q))
    assert kind is DTypeError
    assert words == "q, k, v must share one dtype; got torch.float32, torch.float64, torch.float32."


def test_sdpa_attention_refuses_an_integer_tensor_with_a_dtype_error():
    q = torch.zeros(1, 2, 4)
    assert refusal(lambda: sdpa_attention(q.long(), q, q))[0] is DTypeError


def test_the_module_refuses_an_input_of_another_dtype_with_a_dtype_error():
    torch_module, _ = both_modules()
    kind, words = refusal(lambda: torch_module(torch.zeros(B, T, C)))
    assert kind is DTypeError and words.startswith("query has dtype torch.float32 but the module")


@pytest.mark.parametrize("call", [
    lambda: masks.to_sdpa(torch.zeros(2, 2)),
    lambda: masks.combine(np.zeros((2, 2), int)),
    lambda: masks.key_padding_to_4d(torch.zeros(2, 2)),
    lambda: masks.to_additive(np.array([False, True]), dtype=np.int64),
    lambda: masks.to_additive(torch.tensor([False, True]), dtype=torch.int64),
    lambda: masks.from_additive(torch.tensor([True])),
    lambda: masks.mask_from_positions(np.array([0.0]), np.arange(2)),
], ids=["to_sdpa", "combine", "key_padding_to_4d", "to_additive numpy dtype",
        "to_additive torch dtype", "from_additive", "mask_from_positions"])
def test_the_mask_functions_refuse_a_wrong_dtype_with_a_dtype_error(call):
    assert refusal(call)[0] is DTypeError


# -- F3: the torch side refuses NaN, inf and overflowing scores as NumPy does -----


def qkv_numpy(seed=3):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((1, H, T, C)) for _ in range(3))  # (B, H, T, dh)


@pytest.mark.parametrize("which, bad, kind", [(0, np.nan, "NaN"), (1, np.inf, "+inf"),
                                              (2, -np.inf, "-inf")])
def test_sdpa_attention_refuses_a_non_finite_input_in_the_numpy_words(which, bad, kind):
    arrays = list(qkv_numpy())
    arrays[which][0, 1, 2, 0] = bad
    expected = refusal(lambda: mha.attention(*arrays))
    assert expected == (ValueError, f"{'qkv'[which]} contains {kind} at index (0, 1, 2, 0); "
                                    "inputs must be finite.")
    assert refusal(lambda: sdpa_attention(*(torch.from_numpy(a) for a in arrays))) == expected


def test_sdpa_attention_does_not_return_zeros_for_a_nan_query_row():
    q, k, v = torch.randn(1, 1, 2, 2), torch.randn(1, 1, 3, 2), torch.ones(1, 1, 3, 2)
    q[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"q contains NaN at index \(0, 0, 0, 0\)"):
        sdpa_attention(q, k, v)


def test_sdpa_attention_refuses_overflowing_float32_scores_in_the_numpy_words():
    q, k, v = (a.astype(np.float32) for a in qkv_numpy())
    q, k = q * 1e20, k * 1e20  # finite inputs, scores near 1e40 > float32's 3.4e38
    expected = refusal(lambda: mha.attention(q, k, v))
    assert expected[0] is ValueError
    assert expected[1].startswith("the scores q k^T * scale overflow float32 (first at index ")
    assert refusal(lambda: sdpa_attention(*(torch.from_numpy(a) for a in (q, k, v)))) == expected


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
@pytest.mark.parametrize("bad, kind", [(np.nan, "NaN"), (np.inf, "+inf")])
def test_the_module_refuses_a_non_finite_query_in_the_numpy_words(impl, bad, kind):
    torch_module, numpy_module = both_modules()
    torch_module.impl = impl
    x = x_numpy()
    x[1, 2, 3] = bad
    words = f" contains {kind} at index (1, 2, 3); inputs must be finite."
    assert refusal(lambda: numpy_module(x)) == (ValueError, "x" + words)
    assert refusal(lambda: torch_module(torch.from_numpy(x))) == (ValueError, "query" + words)


@pytest.mark.parametrize("name", ["key", "value"])
def test_the_module_refuses_a_non_finite_key_or_value(name):
    torch_module, _ = both_modules()
    query, context = torch.zeros(B, T, C, dtype=torch.float64), torch.zeros(B, 5, C,
                                                                             dtype=torch.float64)
    bad = context.clone()
    bad[0, 4, 1] = float("nan")
    args = (query, bad, context) if name == "key" else (query, context, bad)
    assert refusal(lambda: torch_module(*args)) == (
        ValueError, f"{name} contains NaN at index (0, 4, 1); inputs must be finite.")


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_the_module_refuses_overflowing_float32_scores_as_the_numpy_class_does(impl):
    torch_module, numpy_module = both_modules(torch.float32)
    torch_module.impl = impl
    x = (x_numpy() * 1e20).astype(np.float32)  # finite; the scores overflow float32
    expected = refusal(lambda: numpy_module(x))
    assert expected[0] is ValueError
    assert expected[1].startswith("the scores q k^T * scale overflow float32 (first at index ")
    assert refusal(lambda: torch_module(torch.from_numpy(x))) == expected


def test_the_module_refuses_an_overflowing_score_on_a_blocked_key_as_numpy_does():
    torch_module, numpy_module = both_modules(torch.float32)
    x = x_numpy().astype(np.float32)
    x[:, 2] *= 1e20  # position 2 overflows its scores; the mask blocks it as a key
    m = np.zeros((T, T), dtype=bool)
    m[:, 2] = True
    expected = refusal(lambda: numpy_module(x, mask=m))
    assert expected[0] is ValueError and "overflow float32" in expected[1]
    assert refusal(lambda: torch_module(torch.from_numpy(x), mask=torch.from_numpy(m))) == expected


def test_the_module_still_returns_finite_results_for_ordinary_inputs():
    torch_module, numpy_module = both_modules()
    x = x_numpy()
    for impl in ("manual", "sdpa"):
        torch_module.impl = impl
        out = torch_module(torch.from_numpy(x))[0].detach().numpy()
        np.testing.assert_allclose(out, numpy_module(x)[0], atol=1e-12)


# -- F8: sdpa_attention reads a 1-D (or 0-d) mask as mha.attention does -----------


@pytest.mark.parametrize("mask", [np.array([False, True, False]), np.array(False)],
                         ids=["1-D (Tk,)", "0-d"])
def test_sdpa_attention_broadcasts_a_low_rank_mask_as_mha_attention_does(mask):
    q, k, v = qkv_numpy()
    expected = mha.attention(q, k, v, mask=mask)[0]
    out = sdpa_attention(*(torch.from_numpy(a) for a in (q, k, v)), mask=torch.from_numpy(mask))
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-12)


def test_sdpa_attention_refuses_a_fully_blocking_1d_mask_in_mha_attention_words():
    q, k, v = qkv_numpy()
    m = np.ones(T, dtype=bool)
    expected = refusal(lambda: mha.attention(q, k, v, mask=m))
    assert expected[0] is ValueError and expected[1].startswith("fully masked row")
    got = refusal(lambda: sdpa_attention(*(torch.from_numpy(a) for a in (q, k, v)),
                                         mask=torch.from_numpy(m)))
    assert got == expected


def test_sdpa_attention_combines_a_1d_mask_with_is_causal():
    q, k, v = qkv_numpy()
    m = np.array([False, True, False])
    expected = mha.attention(q, k, v, mask=m, is_causal=True)[0]
    out = sdpa_attention(*(torch.from_numpy(a) for a in (q, k, v)), mask=torch.from_numpy(m),
                         is_causal=True)
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-12)


# -- F9: need_weights is True or False, nothing read by truthiness -----------------


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
@pytest.mark.parametrize("bad", ["False", 0, None])
def test_the_module_refuses_a_need_weights_that_is_not_true_or_false(impl, bad):
    torch_module, _ = both_modules()
    torch_module.impl = impl
    kind, words = refusal(lambda: torch_module(torch.zeros(B, T, C, dtype=torch.float64),
                                               need_weights=bad))
    assert kind is DTypeError and words == f"need_weights must be True or False; got {bad!r}."


# -- F11: two misleading messages --------------------------------------------------


def test_softmax_jacobian_refuses_an_empty_last_axis_as_empty_not_as_logits():
    with pytest.raises(ValueError) as info:
        mha.softmax_jacobian(np.zeros((2, 0)))
    words = str(info.value)
    assert words == "probs is empty along axis -1 (shape (2, 0)); a softmax row needs an entry."
    assert "logits" not in words


def test_softmax_backward_keeps_its_own_empty_axis_message():
    with pytest.raises(ValueError, match=r"softmax_backward over an empty axis \(shape \(2, 0\)"):
        mha.softmax_backward(np.zeros((2, 0)), np.zeros((2, 0)))


def test_to_additive_asks_for_a_torch_dtype_for_a_tensor():
    with pytest.raises(DTypeError) as info:
        masks.to_additive(torch.tensor([[False, True]]), dtype=np.float32)
    assert str(info.value) == ("to_additive needs a torch dtype for a torch tensor (e.g. "
                               "torch.float32); got <class 'numpy.float32'>.")


def test_to_additive_asks_for_a_numpy_dtype_for_an_array():
    with pytest.raises(DTypeError) as info:
        masks.to_additive(np.array([[False, True]]), dtype=torch.float32)
    assert str(info.value) == ("to_additive needs a NumPy dtype for a NumPy array (e.g. "
                               "np.float32); got torch.float32.")


# -- F13: from_additive names the bad value and where it is, for tensors too -------


@pytest.mark.parametrize("bad", [-1e9, 0.5, np.nan])
def test_from_additive_names_the_bad_value_and_index_on_both_sides(bad):
    a = np.array([[0.0, -np.inf], [bad, 0.0]])
    expected = refusal(lambda: masks.from_additive(a))
    assert expected[0] is ValueError and expected[1].endswith(f"found {bad:g} at index (1, 0).")
    assert refusal(lambda: masks.from_additive(torch.from_numpy(a))) == expected


# -- F14: the mask module says which functions keep a tensor a tensor -------------


def test_the_masks_docstring_says_the_builders_return_numpy_arrays():
    words = " ".join(masks.__doc__.split())
    assert "The builders (:func:`causal_mask`, :func:`padding_mask`, " in words
    assert ":func:`mask_from_positions`) always return NumPy arrays" in words


def test_the_builders_return_numpy_arrays_from_tensors_as_documented():
    assert isinstance(masks.padding_mask(torch.tensor([2, 3]), 3), np.ndarray)
    assert isinstance(masks.mask_from_positions(torch.arange(2), torch.arange(3)), np.ndarray)


@pytest.mark.parametrize("convert", [masks.to_sdpa, masks.from_sdpa, masks.to_additive,
                                     masks.key_padding_to_4d, masks.combine])
def test_the_crossings_return_a_tensor_for_a_tensor_as_documented(convert):
    assert isinstance(convert(torch.tensor([[False, True]])), torch.Tensor)


def test_from_additive_returns_a_tensor_for_a_tensor_as_documented():
    assert isinstance(masks.from_additive(torch.tensor([0.0, -float("inf")])), torch.Tensor)
