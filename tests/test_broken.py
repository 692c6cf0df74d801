"""mha.broken: each classic mistake is silent, named, and caught by the check it names."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mha import broken  # noqa: E402
from mha.checkup import CHECKS, checkup  # noqa: E402
from mha.layers import MultiHeadAttention  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

C, H = 8, 2
BROKEN = [pytest.param(cls, id=cls.__name__) for cls in broken.BROKEN]


def _module(cls, seed=0, **kw):
    torch.manual_seed(seed)
    return cls(C, H, **kw)


@pytest.mark.parametrize("cls", BROKEN)
def test_every_broken_class_is_caught_by_the_check_it_names(cls):
    report = checkup(_module(cls))
    assert cls.caught_by in CHECKS
    assert report[cls.caught_by].passed is False, str(report)


@pytest.mark.parametrize("cls", BROKEN)
def test_every_broken_class_is_named_broken_and_says_symptom_and_check(cls):
    assert cls.__name__.startswith("Broken")
    doc = " ".join(cls.__doc__.split())
    assert "Symptom" in doc and "Caught by" in doc


@pytest.mark.parametrize("cls", BROKEN)
def test_every_broken_class_runs_silently_with_the_right_shape(cls):
    x = torch.randn(5, 5, C)
    pad = torch.arange(5) >= torch.tensor([5, 4, 3, 5, 2])[:, None]
    out, _ = _module(cls).eval()(x, key_padding_mask=pad, is_causal=True)
    assert out.shape == (5, 5, C)


def test_the_stepwise_base_passes_every_check():
    assert checkup(_module(broken.StepwiseAttention)).passed


def test_the_stepwise_base_equals_the_package_module_with_the_same_weights():
    ours, theirs = _module(broken.StepwiseAttention), _module(MultiHeadAttention)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(2, 4, C)
    pad = torch.tensor([[False] * 4, [False, False, True, True]])
    torch.testing.assert_close(ours(x, pad, is_causal=True)[0],
                               theirs(x, key_padding_mask=pad, is_causal=True)[0])


def test_dropout_on_scores_gives_nan_in_training_only():
    m = _module(broken.BrokenDropoutOnScores)
    x = torch.randn(2, 6, C)
    assert torch.isfinite(m.eval()(x, is_causal=True)[0]).all()
    assert torch.isnan(m.train()(x, is_causal=True)[0]).any()


def test_unused_projection_leaves_its_grad_none_after_backward():
    m = _module(broken.BrokenUnusedProjection)
    m(torch.randn(2, 3, C))[0].sum().backward()
    assert m.k_proj.weight.grad is None and m.q_proj.weight.grad is not None


def test_padding_broadcast_raises_when_batch_differs_from_length():
    m = _module(broken.BrokenPaddingBroadcast)
    with pytest.raises(RuntimeError):
        m(torch.randn(3, 5, C), key_padding_mask=torch.zeros(3, 5, dtype=torch.bool))


def test_repeat_mask_is_right_without_a_mask():
    ours, right = _module(broken.BrokenRepeatMask), _module(broken.StepwiseAttention)
    x = torch.randn(3, 4, C)
    torch.testing.assert_close(ours(x)[0], right(x)[0])


def test_dropout_at_inference_differs_between_two_eval_calls():
    m = _module(broken.BrokenDropoutAtInference).eval()
    x = torch.randn(2, 4, C)
    assert not torch.equal(m(x)[0], m(x)[0])


def test_large_init_saturates_softmax_where_the_default_init_does_not():
    x = torch.randn(4, 6, C)
    with torch.no_grad():
        large = _module(broken.BrokenLargeInit, seed=1)(x, need_weights=True)[1]
        usual = _module(broken.StepwiseAttention, seed=1)(x, need_weights=True)[1]
    assert large.amax(dim=-1).mean() > 0.8 > 0.4 > usual.amax(dim=-1).mean()


def test_the_stepwise_base_refuses_a_query_that_is_not_b_t_c_by_name():
    import torch

    from mha.broken import StepwiseAttention

    with pytest.raises(ValueError, match=r"query must be \(B, T, C=8\); got shape \(2, 3\)"):
        StepwiseAttention(8, 2)(torch.zeros(2, 3))
