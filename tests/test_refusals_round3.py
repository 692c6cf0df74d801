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

from mha import layers
from mha.torch_transfer import to_numpy

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
