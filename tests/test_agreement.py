"""Four paths, one function: the NumPy reference, the from-scratch torch module,
``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention`` agree.

The same weights (copied by mha.torch_transfer) and the same package-convention
mask go through each path; the masks reach the other libraries only through the
named conversions. Shapes, bias, dtype and mask shape are drawn by hypothesis.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.func import functional_call

from mha.layers import MultiHeadAttention
from mha.torch_transfer import to_nn_multihead, to_nn_multihead_masks, to_numpy

# About 10 float32 roundings apart at most; float64 leaves room for the same ~1e-16 steps.
TOL = {torch.float32: {"rtol": 1e-5, "atol": 1e-6},
       torch.float64: {"rtol": 1e-12, "atol": 1e-12}}

# Fixed examples so `make test` is reproducible; HYPOTHESIS_EXPLORE=1 searches afresh.
SETTINGS = settings(max_examples=50, deadline=None, database=None,
                    derandomize=not os.environ.get("HYPOTHESIS_EXPLORE"))


@dataclass
class Case:
    b: int
    h: int
    tq: int
    tk: int
    dh: int
    self_attention: bool
    bias: bool
    dtype: torch.dtype
    mask_shape: tuple | None
    seed: int

    def build(self):
        """(module in eval mode, query (B, Tq, C), context (B, Tk, C) or None, mask or None)."""
        torch.manual_seed(self.seed)
        module = MultiHeadAttention(self.h * self.dh, self.h, bias=self.bias,
                                    dtype=self.dtype).eval()
        g = torch.Generator().manual_seed(self.seed)
        c = self.h * self.dh
        query = torch.randn(self.b, self.tq, c, generator=g, dtype=self.dtype)
        context = None
        if not self.self_attention:
            context = torch.randn(self.b, self.tk, c, generator=g, dtype=self.dtype)
        mask = None
        if self.mask_shape is not None:
            # Random blocks, then one random key per row unblocked: no fully masked row.
            mask = torch.rand(self.mask_shape, generator=g) < 0.5
            keep = torch.randint(self.tk, self.mask_shape[:-1], generator=g)
            mask.scatter_(-1, keep[..., None], False)
        return module, query, context, mask


@st.composite
def cases(draw):
    b, h, dh = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 8))
    self_attention = draw(st.booleans())
    tq = draw(st.integers(1, 6))
    tk = tq if self_attention else draw(st.integers(1, 6))
    mask_shape = draw(st.sampled_from(
        [None, (tq, tk), (b, 1, 1, tk), (b, 1, tq, tk), (b, h, tq, tk)]))
    return Case(b, h, tq, tk, dh, self_attention, draw(st.booleans()),
                draw(st.sampled_from([torch.float32, torch.float64])), mask_shape,
                draw(st.integers(0, 2**16)))


def run_ours(module, impl, query, context, mask, need_weights=False):
    module.impl = impl
    return module(query, context, mask=mask, need_weights=need_weights)


def run_nn(nn_module, case, query, context, mask, need_weights):
    kv = query if context is None else context
    attn_mask, padding = (None, None)
    if mask is not None:
        attn_mask, padding = to_nn_multihead_masks(mask, case.h, batch_size=case.b,
                                                   tgt_len=case.tq)
    return nn_module(query, kv, kv, attn_mask=attn_mask, key_padding_mask=padding,
                     need_weights=need_weights, average_attn_weights=False)


def assert_close(actual, expected, dtype):
    torch.testing.assert_close(torch.as_tensor(actual), expected.detach(), **TOL[dtype])


@SETTINGS
@given(cases())
def test_forward_outputs_and_weights_agree_across_the_four_paths(case):
    module, query, context, mask = case.build()
    with torch.no_grad():
        out, weights = run_ours(module, "manual", query, context, mask, need_weights=True)
        out_sdpa, _ = run_ours(module, "sdpa", query, context, mask)
        nn_module = to_nn_multihead(module)
        out_nn, weights_nn = run_nn(nn_module, case, query, context, mask, need_weights=True)
        out_nn_fused, _ = run_nn(nn_module, case, query, context, mask, need_weights=False)
    out_np, weights_np = to_numpy(module)(
        query.numpy(), None if context is None else context.numpy(),
        mask=None if mask is None else mask.numpy())

    for other in (out_sdpa, out_nn, out_nn_fused, torch.from_numpy(out_np)):
        assert_close(other, out, case.dtype)
    for other in (weights_nn, torch.from_numpy(weights_np)):
        assert_close(other, weights, case.dtype)


@SETTINGS
@given(cases())
def test_gradients_agree_between_manual_sdpa_and_nn_multihead(case):
    module, query, context, mask = case.build()
    nn_module = to_nn_multihead(module)
    upstream = torch.randn(case.b, case.tq, query.shape[-1], dtype=case.dtype,
                           generator=torch.Generator().manual_seed(case.seed + 1))
    leaves = [query] if context is None else [query, context]

    def input_and_param_grads(run, owner):
        """Gradients of sum(out * upstream) w.r.t. the inputs and owner's named parameters."""
        xs = [x.detach().clone().requires_grad_() for x in leaves]
        out, _ = run(xs[0], xs[1] if len(xs) > 1 else None)
        names, params = zip(*owner.named_parameters(), strict=True)
        grads = torch.autograd.grad((out * upstream).sum(), [*xs, *params])
        return grads[:len(xs)], dict(zip(names, grads[len(xs):], strict=True))

    manual_x, manual_p = input_and_param_grads(
        lambda q, c: run_ours(module, "manual", q, c, mask), module)
    sdpa_x, sdpa_p = input_and_param_grads(
        lambda q, c: run_ours(module, "sdpa", q, c, mask), module)
    nn_x, nn_p = input_and_param_grads(
        lambda q, c: run_nn(nn_module, case, q, c, mask, need_weights=False), nn_module)

    for a, b_, c_ in zip(manual_x, sdpa_x, nn_x, strict=True):
        assert_close(b_, a, case.dtype)
        assert_close(c_, a, case.dtype)
    for name, grad in manual_p.items():
        assert_close(sdpa_p[name], grad, case.dtype)
    stacked = torch.cat([manual_p[f"{p}_proj.weight"] for p in "qkv"])
    assert_close(nn_p["in_proj_weight"], stacked, case.dtype)
    assert_close(nn_p["out_proj.weight"], manual_p["out_proj.weight"], case.dtype)
    if case.bias:
        stacked_bias = torch.cat([manual_p[f"{p}_proj.bias"] for p in "qkv"])
        assert_close(nn_p["in_proj_bias"], stacked_bias, case.dtype)
        assert_close(nn_p["out_proj.bias"], manual_p["out_proj.bias"], case.dtype)


GRADCHECK_CASES = [
    Case(2, 2, 3, 3, 2, True, True, torch.float64, (3, 3), 0),
    Case(2, 2, 2, 4, 2, False, True, torch.float64, (2, 2, 2, 4), 1),
    Case(1, 1, 3, 2, 3, False, False, torch.float64, (1, 1, 1, 2), 2),
]


@pytest.mark.parametrize("case", GRADCHECK_CASES, ids=["causal_self", "per_head_cross",
                                                       "padding_no_bias"])
def test_gradcheck_manual_module_wrt_inputs(case):
    module, query, context, mask = case.build()
    kv = query if context is None else context
    xs = (query.clone().requires_grad_(), kv.clone().requires_grad_(), kv.clone().requires_grad_())
    assert torch.autograd.gradcheck(lambda q, k, v: module(q, k, v, mask=mask)[0], xs)


@pytest.mark.parametrize("case", GRADCHECK_CASES, ids=["causal_self", "per_head_cross",
                                                       "padding_no_bias"])
def test_gradcheck_manual_module_wrt_parameters(case):
    module, query, context, mask = case.build()
    names = [n for n, _ in module.named_parameters()]
    values = tuple(p.detach().clone().requires_grad_() for p in module.parameters())

    def forward(*ps):
        return functional_call(module, dict(zip(names, ps, strict=True)), (query, context),
                               {"mask": mask})[0]

    assert torch.autograd.gradcheck(forward, values)


def test_numpy_reference_agrees_with_torch_on_a_fixed_causal_padded_example():
    case = Case(2, 4, 5, 5, 4, True, True, torch.float64, (2, 1, 5, 5), 7)
    module, query, _, _ = case.build()
    causal = np.triu(np.ones((5, 5), dtype=bool), k=1)
    padded = np.arange(5)[None, :] >= np.array([5, 3])[:, None]
    mask = causal[None, None] | padded[:, None, None, :]
    out_np, _ = to_numpy(module)(query.numpy(), mask=mask)
    with torch.no_grad():
        out, _ = module(query, mask=torch.from_numpy(mask))
    assert_close(torch.from_numpy(out_np), out, torch.float64)
