"""Specification of mha.numerical: central finite differences, float64 only."""

from __future__ import annotations

import numpy as np
import pytest

from mha import numerical


def test_gradient_of_a_cubic_is_three_x_squared():
    x = np.array([[-1.5, 0.0], [0.5, 2.0]])
    grad = numerical.numerical_gradient(lambda z: np.sum(z**3), x)
    np.testing.assert_allclose(grad, 3 * x**2, rtol=0, atol=1e-8)


def test_gradient_has_the_shape_of_x():
    x = np.zeros((2, 3, 4))
    assert numerical.numerical_gradient(lambda z: np.sum(z), x).shape == (2, 3, 4)


def test_jacobian_of_a_linear_map_is_its_matrix():
    w = np.arange(6.0).reshape(2, 3)
    jac = numerical.numerical_jacobian(lambda z: w @ z, np.array([0.3, -1.0, 2.0]))
    np.testing.assert_allclose(jac, w, rtol=0, atol=1e-8)


def test_jacobian_shape_is_output_shape_then_input_shape():
    jac = numerical.numerical_jacobian(lambda z: np.outer(z, z), np.ones((3,)))
    assert jac.shape == (3, 3, 3)


def test_central_difference_error_is_second_order():
    # f = sin: truncation is eps**2 / 6 * |f'''| <= 1.7e-13 at eps = 1e-6, rounding about
    # 1e-16 / 1e-6 = 1e-10; a one-sided difference would be off by up to eps / 2 = 5e-7.
    x = np.linspace(-2, 2, 9)
    grad = numerical.numerical_gradient(lambda z: np.sum(np.sin(z)), x)
    np.testing.assert_allclose(grad, np.cos(x), rtol=0, atol=1e-9)


def test_x_is_not_modified():
    x = np.array([1.0, 2.0, 3.0])
    numerical.numerical_gradient(lambda z: np.sum(z**2), x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_f_receives_a_copy_it_may_modify():
    def destructive(z):
        total = float(np.sum(z**2))
        z[...] = 1e9  # must not leak into the next evaluation
        return total

    grad = numerical.numerical_gradient(destructive, np.array([1.0, -2.0]))
    np.testing.assert_allclose(grad, [2.0, -4.0], atol=1e-8)


def test_tells_a_wrong_gradient_from_a_right_one():
    # Softmax with L = p_0 at (0, 0): the right gradient is (0.25, -0.25); the
    # diagonal-only mistake gives (0.25, 0).
    def first_weight(s):
        e = np.exp(s - s.max())
        return e[0] / e.sum()

    grad = numerical.numerical_gradient(first_weight, np.zeros(2))
    np.testing.assert_allclose(grad, [0.25, -0.25], atol=1e-9)
    assert np.abs(grad - [0.25, 0.0]).max() > 0.2


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_refuses_low_precision_input_and_says_why(dtype):
    with pytest.raises(TypeError, match=r"float64.*rounding error"):
        numerical.numerical_gradient(lambda z: np.sum(z), np.ones(3, dtype=dtype))


def test_refuses_integer_input():
    with pytest.raises(TypeError, match="float64"):
        numerical.numerical_jacobian(lambda z: z, np.arange(3))


def test_refuses_a_non_scalar_loss():
    with pytest.raises(ValueError, match="scalar"):
        numerical.numerical_gradient(lambda z: z * 2, np.ones(3))


@pytest.mark.parametrize("eps", [0.0, -1e-6, float("nan"), float("inf"), True, "1e-6"])
def test_refuses_a_bad_eps(eps):
    with pytest.raises(ValueError, match="eps"):
        numerical.numerical_gradient(lambda z: np.sum(z), np.ones(2), eps=eps)


def test_accepts_a_numpy_scalar_eps():
    grad = numerical.numerical_gradient(lambda z: np.sum(z), np.ones(2), eps=np.float64(1e-5))
    np.testing.assert_allclose(grad, [1.0, 1.0], atol=1e-9)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_refuses_a_non_finite_point(bad):
    with pytest.raises(ValueError, match="finite"):
        numerical.numerical_gradient(lambda z: np.sum(z), np.array([1.0, bad]))


def test_refuses_an_empty_point():
    with pytest.raises(ValueError, match="empty"):
        numerical.numerical_gradient(lambda z: 0.0, np.zeros((0,)))


def test_refuses_an_f_that_computes_in_float32():
    with pytest.raises(TypeError, match="float32"):
        numerical.numerical_gradient(lambda z: np.sum(z.astype(np.float32)), np.ones(2))


def test_refuses_an_f_that_returns_nan():
    with pytest.raises(ValueError, match="NaN or inf"):
        # the nudge below 0 turns the value into NaN
        numerical.numerical_gradient(lambda z: np.sum(np.where(z > 0, z, np.nan)),
                                     np.array([1e-7, 1.0]))


def test_refuses_an_f_whose_output_changes_shape():
    with pytest.raises(ValueError, match="output shape"):
        numerical.numerical_jacobian(lambda z: z[z > 0], np.array([0.0, 1.0]))


def test_refuses_a_non_callable_f():
    with pytest.raises(TypeError, match="function"):
        numerical.numerical_gradient(np.ones(2), np.ones(2))
