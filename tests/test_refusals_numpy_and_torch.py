"""One rule and one wording on both sides: the NumPy class ``mha.MultiHeadAttention``
and the torch module ``mha.layers.MultiHeadAttention`` accept and refuse the same
constructor arguments and sequence lengths, with the same message, word for word.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mha
from mha import layers
from mha._checks import DTypeError


def numpy_class(d_model, n_heads, **kw):
    return mha.MultiHeadAttention(d_model, n_heads, **kw)


def torch_class(d_model, n_heads, **kw):
    return layers.MultiHeadAttention(d_model, n_heads, dtype=torch.float64, **kw)


def refusal(build, *args, **kw):
    """(exception type, message) of what ``build(*args, **kw)`` raises."""
    with pytest.raises(ValueError) as info:  # DTypeError is a ValueError too
        build(*args, **kw)
    return type(info.value), str(info.value)


def same_refusal(*args, **kw):
    kind, words = refusal(numpy_class, *args, **kw)
    assert (kind, words) == refusal(torch_class, *args, **kw)
    return kind, words


def test_both_accept_a_numpy_integer_d_model_and_n_heads():
    for build in (numpy_class, torch_class):
        module = build(np.int64(8), np.int32(2))
        assert (module.d_model, module.n_heads, module.d_head) == (8, 2, 4)
        assert type(module.d_model) is int


@pytest.mark.parametrize("bad", [8.0, "8", True, None])
def test_both_refuse_a_d_model_that_is_not_an_int_with_one_message(bad):
    kind, words = same_refusal(bad, 2)
    assert kind is DTypeError and words == f"d_model must be a positive int; got {bad!r}."


@pytest.mark.parametrize("bad", [0, -4])
def test_both_refuse_a_d_model_below_one_with_one_message(bad):
    assert same_refusal(bad, 1) == (ValueError, f"d_model must be a positive int; got {bad}.")


def test_both_refuse_n_heads_that_is_not_an_int_with_one_message():
    assert same_refusal(8, 2.0)[1] == "n_heads must be a positive int; got 2.0."


def test_both_refuse_d_model_not_divisible_by_n_heads_with_one_message():
    assert same_refusal(10, 4)[1] == ("d_model=10 is not divisible by n_heads=4: each head needs "
                                      "the same width dh = d_model // n_heads.")


@pytest.mark.parametrize("bad", ["no", 1, None])
def test_both_refuse_a_bias_that_is_not_true_or_false(bad):
    assert same_refusal(8, 2, bias=bad) == (DTypeError, f"bias must be True or False; got {bad!r}.")


def test_torch_refuses_a_packed_qkv_that_is_not_true_or_false():
    kind, words = refusal(torch_class, 8, 2, packed_qkv="no")
    assert kind is DTypeError and words == "packed_qkv must be True or False; got 'no'."


def test_torch_refuses_a_dropout_string_instead_of_comparing_it():
    kind, words = refusal(torch_class, 8, 2, dropout="0.1")
    assert kind is DTypeError and words == "dropout must be a number in [0, 1); got '0.1'."


@pytest.mark.parametrize("bad", [-0.5, 1.0, float("nan")])
def test_torch_refuses_a_dropout_outside_zero_one(bad):
    assert refusal(torch_class, 8, 2, dropout=bad) == (
        ValueError, f"dropout must be in [0, 1); got {bad}.")


def test_torch_accepts_a_numpy_float_dropout():
    assert torch_class(8, 2, dropout=np.float32(0.25)).dropout == 0.25


def test_both_refuse_self_attention_over_zero_positions_with_one_message():
    x = np.zeros((2, 0, 8))
    with pytest.raises(ValueError) as np_info:
        numpy_class(8, 2)(x)
    with pytest.raises(ValueError) as torch_info:
        torch_class(8, 2)(torch.from_numpy(x))
    assert str(np_info.value).split(" has ")[1] == str(torch_info.value).split(" has ")[1]
    assert "no positions (Tk=0, shape (2, 0, 8)); every query needs at least one key." in str(
        torch_info.value)


def test_both_refuse_a_context_of_zero_positions_with_one_message():
    x, context = np.zeros((2, 3, 8)), np.zeros((2, 0, 8))
    with pytest.raises(ValueError) as np_info:
        numpy_class(8, 2)(x, context)
    with pytest.raises(ValueError) as torch_info:
        torch_class(8, 2)(torch.from_numpy(x), torch.from_numpy(context))
    tail = "has no positions (Tk=0, shape (2, 0, 8)); every query needs at least one key."
    assert str(np_info.value) == f"context {tail}" and str(torch_info.value) == f"key {tail}"


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_both_accept_zero_queries_and_return_zero_rows(impl):
    x, context = np.zeros((2, 0, 8)), np.ones((2, 3, 8))
    out_np, _ = numpy_class(8, 2)(x, context)
    out_t, _ = torch_class(8, 2, impl=impl).eval()(torch.from_numpy(x), torch.from_numpy(context))
    assert out_np.shape == tuple(out_t.shape) == (2, 0, 8)
