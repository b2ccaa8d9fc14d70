"""Gradients through ``dF/dK(Z, Z)`` where it is one ``dsygst`` call.

From ``NOGIL_MIN_ROWS`` inducing inputs, the reverse pass through the
Cholesky factor of ``K(Z, Z)`` is one congruence
(:func:`~skgp_bayes.linalg.inverse_congruence`) instead of two triangular
solves, in the compiled targets and the NumPy ones. The other tests use a
handful of inducing inputs, so they never reach it; here each target's
kernel-parameter gradient is checked against central differences with
enough inducing inputs to take the new path.

The inducing inputs are a jittered 12 x 12 grid on [0, 10]^2 with length
scales near the grid's spacing, so ``K(Z, Z)`` is well conditioned (its
condition number, checked below, is under 1e4) and central differences
with ``h = 1e-5`` on values of order 1e3 carry an error of about
``1e-16 x 1e3 x 1e4 / h`` = 1e-4 at worst from round-off and ``O(h^2)``
from truncation; ``atol = 1e-4`` plus ``rtol = 1e-5`` of the gradient is
above both, while a wrong triangle or sign in the congruence moves the
gradient by its own size.
"""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Gaussian
from skgp_bayes.linalg._nogil_lapack import NOGIL_MIN_ROWS
from skgp_bayes.targets.collapsed import CollapsedSparseTarget
from skgp_bayes.targets.sparse import SparseWhitenedTarget
from skgp_bayes.targets.svgp import SVGPBound

KERNELS = {
    "rbf": ConstantKernel(1.3) * RBF([0.7, 0.9]),
    "matern": ConstantKernel(0.8) * Matern([1.1, 0.8], nu=2.5),
}


def _problem(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, size=(n, 2))
    y = np.sin(X[:, 0]) + np.cos(0.5 * X[:, 1]) + 0.2 * rng.normal(size=n)
    grid = np.linspace(0.4, 9.6, 12)
    Z = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2)
    Z += 0.05 * rng.normal(size=Z.shape)
    assert Z.shape[0] >= NOGIL_MIN_ROWS
    return X, y, Z, rng


def _central(func, params, indices, h=1e-5):
    out = []
    for j in indices:
        e = np.zeros_like(params)
        e[j] = h
        out.append((func(params + e) - func(params - e)) / (2 * h))
    return np.array(out)


def test_the_grid_keeps_k_zz_well_conditioned():
    _, _, Z, _ = _problem()
    for kernel in KERNELS.values():
        assert np.linalg.cond(kernel(Z)) < 1e4


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("likelihood", ["gaussian", "bernoulli"])
def test_whitened_target(likelihood, kernel, compiled):
    X, y, Z, rng = _problem()
    adapter = KernelAdapter(KERNELS[kernel])
    lik = Gaussian(0.1) if likelihood == "gaussian" else Bernoulli()
    labels = y if likelihood == "gaussian" else (y > 0).astype(float)
    target = SparseWhitenedTarget(adapter, X, labels, Z, lik)
    target._compiled = target._compiled and compiled
    assert target._compiled == compiled
    n_hyper = target.n_hyper
    noise = [np.log(0.1)] if target.learn_noise else []
    params = np.concatenate(
        [adapter.kernel.theta, noise, 0.5 * rng.normal(size=Z.shape[0])]
    )
    _, grad = target.logp_and_grad(params)
    fd = _central(target.log_prob, params, range(n_hyper))
    np.testing.assert_allclose(grad[:n_hyper], fd, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_collapsed_target(kernel, compiled):
    X, y, Z, _ = _problem()
    adapter = KernelAdapter(KERNELS[kernel])
    target = CollapsedSparseTarget(adapter, X, y, Z)
    params = np.append(adapter.kernel.theta, np.log(0.05))
    func = target.logp_and_grad if compiled else target._value_and_grad
    _, grad = func(params)
    fd = _central(target.log_prob, params, range(params.size))
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_svgp_bound(kernel):
    X, y, Z, rng = _problem()
    adapter = KernelAdapter(KERNELS[kernel])
    bound = SVGPBound(adapter, X, y, Z, Gaussian(0.1), learn_inducing=False)
    params = bound.initial_params()
    params[bound.blocks["m"]] = 0.3 * rng.normal(size=Z.shape[0])
    _, grad = bound.elbo_and_grad(params)
    theta = bound.blocks["theta"]
    fd = _central(bound.elbo, params, range(theta.start, theta.stop))
    np.testing.assert_allclose(grad[theta], fd, rtol=1e-5, atol=1e-4)
