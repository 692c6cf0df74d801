"""Specification of ``is_causal=`` and ``scale=`` on every attention path, and of
``average_attn_weights`` on the torch module.

``is_causal`` means the queries are the *last* Tq positions of the keys (aligned
lower-right, the KV cache's meaning, as ``torch.nn.attention.bias.causal_lower_right``);
for Tq == Tk that is the usual causal mask. It is never SDPA's upper-left alignment.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

import mha
from mha import masks
from mha.layers import MultiHeadAttention, causal_mask_torch
from mha.torch_transfer import sdpa_attention, to_nn_multihead, to_numpy

B, H, C = 2, 2, 8
TIGHT = {"rtol": 1e-12, "atol": 1e-12}


def make(seed=0, **kw):
    torch.manual_seed(seed)
    kw.setdefault("dtype", torch.float64)
    return MultiHeadAttention(C, H, **kw).eval()


def tokens(t, seed=1, b=B, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, t, C, generator=g, dtype=torch.float64, requires_grad=requires_grad)


def qkv(tq, tk, seed=3, dh=4, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, t, dh, generator=g, dtype=dtype) for t in (tq, tk, tk))


def lower_right_allowed(tq, tk):
    """torch's own lower-right causal mask, True = allowed (SDPA's convention)."""
    return causal_lower_right(tq, tk)._materialize()


# -- the mask itself ----------------------------------------------------------------


def test_causal_mask_with_t_k_is_torchs_causal_lower_right():
    for tq, tk in [(1, 1), (2, 5), (3, 3), (1, 7), (4, 6)]:
        assert np.array_equal(~mha.causal_mask(tq, t_k=tk), lower_right_allowed(tq, tk).numpy())


def test_causal_mask_without_t_k_is_unchanged_square_mask():
    assert np.array_equal(mha.causal_mask(4, t_k=4), mha.causal_mask(4))


def test_causal_mask_torch_is_the_numpy_causal_mask():
    for tq, tk in [(3, 3), (2, 5)]:
        assert np.array_equal(causal_mask_torch(tq, tk).numpy(), mha.causal_mask(tq, t_k=tk))


def test_causal_mask_refuses_more_queries_than_keys():
    with pytest.raises(ValueError, match=r"causal_mask\(t=5, t_k=3\) with Tq=5 queries and Tk=3"):
        mha.causal_mask(5, t_k=3)


# -- NumPy mha.attention -------------------------------------------------------------


def test_numpy_is_causal_two_queries_over_five_keys_read_25_and_30():
    values = np.array([[10.0], [20.0], [30.0], [40.0], [50.0]])  # (Tk, dv)
    out, _ = mha.attention(np.zeros((2, 1)), np.zeros((5, 1)), values, is_causal=True)
    # Query 0 is position 3 (mean of 10..40), query 1 position 4 (mean of 10..50).
    assert np.allclose(out.ravel(), [25.0, 30.0])


def test_numpy_is_causal_square_equals_the_causal_mask():
    q, k, v = (t.numpy() for t in qkv(4, 4))
    out, w = mha.attention(q, k, v, is_causal=True)
    out_m, w_m = mha.attention(q, k, v, mask=mha.causal_mask(4))
    assert np.array_equal(out, out_m) and np.array_equal(w, w_m)


def test_numpy_is_causal_matches_sdpa_with_causal_lower_right():
    q, k, v = qkv(2, 5)
    out, _ = mha.attention(q.numpy(), k.numpy(), v.numpy(), is_causal=True)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(2, 5))
    np.testing.assert_allclose(out, expected.numpy(), **TIGHT)


def test_numpy_is_causal_blocks_a_key_if_either_it_or_the_mask_blocks_it():
    q, k, v = (t.numpy() for t in qkv(2, 5))
    padded = np.array([True, False, False, False, False])  # key 0 blocked for every query
    _, w = mha.attention(q, k, v, mask=padded, is_causal=True)
    assert np.all(w[..., 0] == 0) and np.all(w[..., 0, 4] == 0) and np.all(w[..., 1, 4] > 0)


def test_numpy_is_causal_refuses_more_queries_than_keys():
    q, k, v = (t.numpy() for t in qkv(3, 2))
    with pytest.raises(ValueError, match=r"is_causal=True with Tq=3 queries and Tk=2 keys.*"
                                         r"lower-right.*first 1 queries would see no key"):
        mha.attention(q, k, v, is_causal=True)


def test_numpy_is_causal_refuses_a_row_blocked_only_by_mask_and_causal_together():
    q, k, v = (t.numpy() for t in qkv(2, 5))
    mask = np.zeros((2, 5), dtype=bool)
    mask[0, :4] = True  # query 0 sees keys 0-3 causally: the mask closes all of them
    with pytest.raises(ValueError, match="fully masked row: the mask combined with is_causal"):
        mha.attention(q, k, v, mask=mask, is_causal=True)


def test_numpy_is_causal_still_refuses_a_non_boolean_mask():
    q, k, v = (t.numpy() for t in qkv(2, 5))
    with pytest.raises(TypeError, match="mask must be boolean"):
        mha.attention(q, k, v, mask=np.zeros((2, 5)), is_causal=True)


def test_numpy_scale_matches_sdpa_scale():
    q, k, v = qkv(3, 5)
    out, _ = mha.attention(q.numpy(), k.numpy(), v.numpy(), scale=0.3)
    np.testing.assert_allclose(out, F.scaled_dot_product_attention(q, k, v, scale=0.3).numpy(),
                               **TIGHT)


def test_numpy_multihead_class_is_causal_and_scale_match_the_torch_module():
    module = make()
    x = tokens(4)
    out, w = to_numpy(module)(x.numpy(), is_causal=True, scale=0.2)
    out_t, w_t = module(x, is_causal=True, scale=0.2, need_weights=True)
    np.testing.assert_allclose(out, out_t.detach().numpy(), **TIGHT)
    np.testing.assert_allclose(w, w_t.detach().numpy(), **TIGHT)


# -- the torch module -----------------------------------------------------------------


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_module_is_causal_matches_nn_multihead_forward_and_gradients(impl):
    module = make(impl=impl)
    reference = to_nn_multihead(module)
    x = tokens(5, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)
    out, _ = module(x, is_causal=True)
    causal = torch.from_numpy(mha.causal_mask(5))
    out_ref, _ = reference(x_ref, x_ref, x_ref, attn_mask=causal, is_causal=True,
                           need_weights=False)
    torch.testing.assert_close(out, out_ref, **TIGHT)
    out.square().sum().backward()
    out_ref.square().sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, **TIGHT)
    torch.testing.assert_close(module.out_proj.weight.grad, reference.out_proj.weight.grad,
                               **TIGHT)
    (wq, _), _, _ = module.in_projections()
    torch.testing.assert_close(module.q_proj.weight.grad, reference.in_proj_weight.grad[:C],
                               **TIGHT)
    assert wq.shape == (C, C)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_module_is_causal_with_fewer_queries_aligns_lower_right(impl):
    module = make(impl=impl)
    query, context = tokens(2, seed=1), tokens(5, seed=2)
    out, _ = module(query, context, is_causal=True)
    explicit, _ = module(query, context, mask=torch.from_numpy(mha.causal_mask(2, t_k=5)))
    torch.testing.assert_close(out, explicit, **TIGHT)
    upper_left, _ = module(query, context, mask=torch.ones(2, 5, dtype=torch.bool).triu(1))
    assert not torch.allclose(out, upper_left)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_module_is_causal_combines_with_key_padding_mask(impl):
    module = make(impl=impl)
    x = tokens(4)
    padded = torch.tensor([[False] * 4, [False, False, False, True]])
    out, _ = module(x, key_padding_mask=padded, is_causal=True)
    both = masks.combine(torch.from_numpy(mha.causal_mask(4)), masks.key_padding_to_4d(padded))
    explicit, _ = module(x, mask=both)
    torch.testing.assert_close(out, explicit, **TIGHT)


@pytest.fixture
def sdpa_calls(monkeypatch):
    """The keyword arguments of every call to F.scaled_dot_product_attention, in order."""
    seen = []
    real = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    return seen


def test_module_sdpa_square_causal_calls_sdpa_is_causal_without_a_mask(sdpa_calls):
    make(impl="sdpa")(tokens(4), is_causal=True)
    seen = sdpa_calls
    assert seen[0]["is_causal"] is True and seen[0]["attn_mask"] is None


def test_module_sdpa_rectangular_causal_passes_an_explicit_mask_not_sdpas_flag(sdpa_calls):
    make(impl="sdpa")(tokens(2), tokens(5), is_causal=True)
    seen = sdpa_calls
    assert seen[0]["is_causal"] is False
    assert torch.equal(seen[0]["attn_mask"], lower_right_allowed(2, 5))


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_module_refuses_is_causal_with_more_queries_than_keys(impl):
    with pytest.raises(ValueError, match="is_causal=True with Tq=5 queries and Tk=2 keys"):
        make(impl=impl)(tokens(5), tokens(2), is_causal=True)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_module_refuses_a_row_blocked_only_by_padding_and_causal_together(impl):
    padded = torch.tensor([[False] * 4, [True, False, False, False]])  # query 0 sees key 0 only
    with pytest.raises(ValueError, match="fully masked row: the key_padding_mask combined with "
                                         "is_causal blocks every key for query 0"):
        make(impl=impl)(tokens(4), key_padding_mask=padded, is_causal=True)


@pytest.mark.parametrize("impl", ["manual", "sdpa"])
def test_module_scale_matches_the_numpy_class_and_sdpa(impl):
    module = make(impl=impl)
    x = tokens(3)
    out, _ = module(x, scale=0.7)
    out_np, _ = to_numpy(module)(x.numpy(), scale=0.7)
    np.testing.assert_allclose(out.detach().numpy(), out_np, **TIGHT)
    default, _ = module(x)
    assert not torch.allclose(out, default)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_module_refuses_a_scale_that_is_not_a_finite_number_at_least_zero(bad):
    with pytest.raises(ValueError, match="scale must be a finite number >= 0"):
        make()(tokens(3), scale=bad)


def test_module_refuses_a_tensor_scale_whose_gradient_would_be_lost():
    with pytest.raises(ValueError, match="scale must be a Python number, not a tensor"):
        make()(tokens(3), scale=torch.tensor(0.5, requires_grad=True))


# -- average_attn_weights ----------------------------------------------------------------


def test_need_weights_default_stays_per_head():
    _, w = make()(tokens(3), need_weights=True)
    assert w.shape == (B, H, 3, 3)


@pytest.mark.parametrize("average", [True, False])
def test_average_attn_weights_matches_nn_multihead(average):
    module = make()
    query, context = tokens(3, seed=1), tokens(5, seed=2)
    _, w = module(query, context, need_weights=True, average_attn_weights=average)
    _, w_ref = to_nn_multihead(module)(query, context, context, need_weights=True,
                                       average_attn_weights=average)
    assert w.shape == ((B, 3, 5) if average else (B, H, 3, 5))
    torch.testing.assert_close(w, w_ref, **TIGHT)


def test_averaged_weights_are_the_mean_of_the_per_head_maps():
    module = make()
    x = tokens(4)
    _, w = module(x, need_weights=True)
    _, w_avg = module(x, need_weights=True, average_attn_weights=True)
    torch.testing.assert_close(w_avg, w.mean(dim=1), **TIGHT)


# -- the SDPA wrapper ---------------------------------------------------------------------


def test_sdpa_attention_square_causal_is_sdpas_is_causal():
    q, k, v = qkv(4, 4)
    torch.testing.assert_close(sdpa_attention(q, k, v, is_causal=True),
                               F.scaled_dot_product_attention(q, k, v, is_causal=True), **TIGHT)


def test_sdpa_attention_rectangular_causal_is_causal_lower_right_not_upper_left():
    q, k, v = qkv(2, 5)
    out = sdpa_attention(q, k, v, is_causal=True)
    lower = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(2, 5))
    upper = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out, lower, **TIGHT)
    assert not torch.allclose(out, upper)


def test_sdpa_attention_causal_gradients_match_causal_lower_right():
    q, k, v = (t.requires_grad_(True) for t in qkv(2, 5))
    grads = torch.autograd.grad(sdpa_attention(q, k, v, is_causal=True).sum(), (q, k, v))
    lower = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(2, 5))
    for got, want in zip(grads, torch.autograd.grad(lower.sum(), (q, k, v)), strict=True):
        torch.testing.assert_close(got, want, **TIGHT)


def test_sdpa_attention_causal_with_mask_agrees_with_numpy():
    q, k, v = qkv(3, 5)
    mask = np.zeros((3, 5), dtype=bool)
    mask[:, 1] = True
    out = sdpa_attention(q, k, v, mask=torch.from_numpy(mask), is_causal=True)
    out_np, _ = mha.attention(q.numpy(), k.numpy(), v.numpy(), mask=mask, is_causal=True)
    np.testing.assert_allclose(out.numpy(), out_np, **TIGHT)


def test_sdpa_attention_scale_agrees_with_numpy():
    q, k, v = qkv(3, 5)
    out_np, _ = mha.attention(q.numpy(), k.numpy(), v.numpy(), scale=2.0, is_causal=True)
    np.testing.assert_allclose(sdpa_attention(q, k, v, scale=2.0, is_causal=True).numpy(),
                               out_np, **TIGHT)


def test_sdpa_attention_refuses_is_causal_with_more_queries_than_keys():
    with pytest.raises(ValueError, match="is_causal=True with Tq=4 queries and Tk=3 keys"):
        sdpa_attention(*qkv(4, 3), is_causal=True)


def test_sdpa_attention_refuses_a_negative_scale():
    with pytest.raises(ValueError, match="scale must be a finite number >= 0"):
        sdpa_attention(*qkv(2, 2), scale=-0.5)


def test_every_path_refuses_an_is_causal_that_is_not_true_or_false():
    q, k, v = qkv(2, 2)
    calls = [lambda: mha.attention(q.numpy(), k.numpy(), v.numpy(), is_causal="no"),
             lambda: sdpa_attention(q, k, v, is_causal="no"),
             lambda: make()(tokens(2), is_causal="no")]
    for call in calls:
        with pytest.raises(TypeError, match="is_causal must be True or False; got 'no'"):
            call()


# -- gradients across paths ---------------------------------------------------------------


def module_grads(module, query, context, **kw):
    query = query.detach().clone().requires_grad_(True)
    context = context.detach().clone().requires_grad_(True)
    module.zero_grad()
    out, _ = module(query, context, **kw)
    out.square().sum().backward()
    return [query.grad, context.grad] + [p.grad for p in module.parameters()]


@pytest.mark.parametrize("kw", [{"is_causal": True}, {"scale": 0.3},
                                {"is_causal": True, "scale": 2.0}])
def test_manual_and_sdpa_gradients_agree_for_lower_right_causal_and_scale(kw):
    query, context = tokens(2, seed=1), tokens(5, seed=2)
    manual = module_grads(make(impl="manual"), query, context, **kw)
    fused = module_grads(make(impl="sdpa"), query, context, **kw)
    for got, want in zip(fused, manual, strict=True):
        torch.testing.assert_close(got, want, **TIGHT)


def test_numpy_backward_with_is_causal_and_scale_matches_autograd_through_sdpa_attention():
    q, k, v = (t.requires_grad_(True) for t in qkv(2, 5))
    d_out = torch.randn(B, H, 2, 4, generator=torch.Generator().manual_seed(9),
                        dtype=torch.float64)
    out = sdpa_attention(q, k, v, is_causal=True, scale=0.4)
    want = torch.autograd.grad(out, (q, k, v), d_out)
    got = mha.attention_backward(q.detach().numpy(), k.detach().numpy(), v.detach().numpy(),
                                 d_out.numpy(), scale=0.4, is_causal=True)
    for g, w in zip((got.dq, got.dk, got.dv), want, strict=True):
        np.testing.assert_allclose(g, w.numpy(), **TIGHT)
