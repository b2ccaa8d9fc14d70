"""The RBF's cross kernel and its gradient contraction by products (GEMM).

From ``GEMM_MIN_COLUMNS`` input columns ``KernelAdapter.cross`` and
``cross_grad_contract`` take the squared distances from ``|x|^2 + |z|^2 -
2 x.z`` on inputs centred at the mean training row. The references here
use the exact coordinate differences. The expansion cancels about ``eps``
times the centred inputs' squared norms, so the tolerances are a few
times ``eps * max(|x|^2 + |z|^2)`` (in length-scale units), relative to
the kernel values and to ``sum |W o K|`` for the contraction. Inputs far
from the origin add their own rounding, in the reference's differences
and in any scaling by the length scales, of about ``eps`` times their
squared scaled norms: the bound counts both. A bound from the arithmetic,
not from one run.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.kernels._numba import GEMM_MIN_COLUMNS

EPS = np.finfo(float).eps


def _problem(d, offset, spread, seed=0):
    rng = np.random.default_rng(seed)
    X = offset + spread * rng.normal(size=(60, d))
    # inducing inputs on training inputs and off them
    Z = np.vstack([X[:4], offset + spread * rng.normal(size=(7, d))])
    W = rng.normal(size=(60, 11))
    return X, Z, W


def _reference(X, Z, W, variance, ell):
    diff = (X[:, None, :] - Z[None, :, :]) / ell
    K = variance * np.exp(-0.5 * np.sum(diff**2, axis=2))
    per_column = np.einsum("ab,abc->c", W * K, diff**2)
    return K, np.sum(W * K), per_column


def _cancellation_scale(X, Z, ell):
    scaled = np.vstack([X, Z]) / ell
    centred = scaled - X.mean(axis=0) / ell
    return np.max(np.sum(centred**2, axis=1)) + np.max(np.sum(scaled**2, axis=1))


@pytest.mark.parametrize("d", [GEMM_MIN_COLUMNS, 12, 30])
@pytest.mark.parametrize("ard", [False, True])
@pytest.mark.parametrize("offset, spread", [(0.0, 1.0), (1900.0, 30.0), (-5e5, 2e4)])
def test_rbf_products_match_the_exact_differences(d, ard, offset, spread):
    X, Z, W = _problem(d, offset, spread)
    rng = np.random.default_rng(d)
    ell = spread * (rng.uniform(0.3, 3.0, size=d) if ard else 1.2)
    adapter = KernelAdapter(ConstantKernel(1.7) * RBF(ell))
    assert adapter.is_fast
    theta = adapter.kernel.theta
    K_ref, total, per_column = _reference(X, Z, W, 1.7, ell)
    scale = _cancellation_scale(X, Z, ell)

    K = adapter.cross(theta, X, Z)
    assert_allclose(K, K_ref, rtol=8 * EPS * scale, atol=1e-300)
    # an inducing input on a training input: the variance, to rounding
    assert_allclose(np.diag(K[:4, :4]), 1.7, rtol=8 * EPS * scale)

    g = adapter.cross_grad_contract(theta, X, Z, W)
    expected = np.concatenate([[total], per_column if ard else [per_column.sum()]])
    weight = np.sum(np.abs(W * K_ref))
    assert_allclose(g, expected, rtol=1e-12, atol=64 * EPS * scale * weight)


def test_products_agree_with_finite_differences():
    X, Z, W = _problem(8, 3.0, 2.0, seed=1)
    adapter = KernelAdapter(ConstantKernel(0.8) * RBF(np.linspace(1.0, 4.0, 8)))
    theta = adapter.kernel.theta
    g = adapter.cross_grad_contract(theta, X, Z, W)
    step = 1e-6
    fd = []
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = step
        up = np.vdot(W, adapter.cross(theta + e, X, Z))
        down = np.vdot(W, adapter.cross(theta - e, X, Z))
        fd.append((up - down) / (2 * step))
    assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_matern_keeps_the_differences():
    # r = sqrt(r^2): an r^2 of rounding size at a coincident pair would
    # put sqrt(eps) into Matern 1/2's exp(-r), so only the RBF expands.
    X, Z, _ = _problem(8, 1900.0, 30.0)
    adapter = KernelAdapter(Matern(length_scale=40.0, nu=0.5))
    K = adapter.cross(adapter.kernel.theta, X, Z)
    assert np.all(np.diag(K[:4, :4]) == 1.0)
    assert_allclose(K, adapter.kernel(X, Z), rtol=1e-13)
