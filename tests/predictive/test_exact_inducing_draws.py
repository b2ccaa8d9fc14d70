"""The exact GP's per-draw predictives of ``predictive.exact_inducing``."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Matern,
    WhiteKernel,
)

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.predictive.exact_inducing import (
    exact_draw_covariances,
    exact_draw_moments,
    exact_joint_draws,
)

KERNELS = {
    "rbf": ConstantKernel() * RBF([1.0, 1.0]),
    "matern_white": ConstantKernel() * Matern([1.0, 1.0], nu=2.5) + WhiteKernel(),
    "not_fast": ConstantKernel() * RBF() + DotProduct(),
}


def _problem(name):
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (40, 2))
    X[5] = X[6]  # a repeated input: the exact GP keeps both rows
    y = np.sin(2 * X[:, 0]) * X[:, 1] + 0.1 * rng.standard_normal(40)
    adapter = KernelAdapter(KERNELS[name])
    thetas = adapter.kernel.theta + 0.4 * rng.standard_normal((5, adapter.n_params))
    noises = np.exp(rng.uniform(-6, -1, 5))
    return adapter, X, y, thetas, noises, rng.uniform(-2.5, 2.5, (17, 2))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_draw_is_scikit_learns_gp_at_its_hyperparameters(name):
    adapter, X, y, thetas, noises, X_query = _problem(name)
    assert adapter.is_fast is (name != "not_fast")
    data = (adapter, X, y)
    means, variances = exact_draw_moments(data, thetas, noises, X_query)
    cov_means, covs = exact_draw_covariances(data, thetas, noises, X_query)
    for j, (theta, noise) in enumerate(zip(thetas, noises, strict=True)):
        kernel = adapter.kernel.clone_with_theta(theta)
        peer = GaussianProcessRegressor(kernel, alpha=noise, optimizer=None)
        mean, cov = peer.fit(X, y).predict(X_query, return_cov=True)
        # round-off of two factorisations of K + s2 I (condition below 1e8)
        np.testing.assert_allclose(means[j], mean, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(variances[j], np.diag(cov), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(cov_means[j], mean, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(covs[j], cov, rtol=1e-6, atol=1e-9)


def test_threads_give_the_same_moments():
    adapter, X, y, thetas, noises, X_query = _problem("rbf")
    one = exact_draw_moments((adapter, X, y), thetas, noises, X_query)
    two = exact_draw_moments((adapter, X, y), thetas, noises, X_query, threads=2)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)


def test_joint_draws_follow_the_picked_draws_gaussian():
    # One draw, 20,000 joint samples: the sample covariance's entries have
    # standard errors below sqrt(2 / 20,000) = 1% of the variances; 6% is
    # six of them (false failure below 1e-8 per entry).
    adapter, X, y, thetas, noises, X_query = _problem("rbf")
    data = (adapter, X, y)
    mean, cov = exact_draw_covariances(data, thetas[:1], noises[:1], X_query[:4])
    draws = exact_joint_draws(
        data, thetas[:1], noises[:1], X_query[:4], 20000, np.random.RandomState(0)
    )
    scale = np.sqrt(np.diag(cov[0]))
    assert np.all(np.abs(draws.mean(axis=1) - mean[0]) < 6 * scale / 141)
    np.testing.assert_allclose(
        np.cov(draws), cov[0], atol=0.06 * np.outer(scale, scale).max()
    )


def test_a_draw_whose_factor_needs_jitter_gets_the_exact_targets_ladder():
    # A repeated input and a noise variance of 1e-18 leave K + s2 I
    # singular to round-off: the compiled factorisation refuses some draws,
    # and each such draw is computed as the exact target factorises it, with
    # jitter.
    from skgp_bayes.predictive import exact_inducing
    from skgp_bayes.predictive._exact_inducing_numba import (
        exact_draw_moments as compiled,
    )
    from skgp_bayes.targets._sparse_numba import LAPACK

    adapter, X, y, thetas, _, X_query = _problem("rbf")
    noises = np.full(len(thetas), 1e-18)
    params = [adapter._fast_params(theta, 2) for theta in thetas]
    ok, _, _ = compiled(
        X_query,
        X,
        y,
        np.array([p[2] for p in params]),
        np.array([p[0] for p in params]),
        np.zeros(len(thetas)),
        noises,
        adapter.spec.base,
        LAPACK,
    )
    assert not ok.all()  # two of five here; round-off passes the others
    means, variances = exact_draw_moments((adapter, X, y), thetas, noises, X_query)
    for j in np.flatnonzero(~ok):
        mean, var = exact_inducing._one_draw(
            (adapter, X, y), thetas[j], noises[j], X_query, False
        )
        np.testing.assert_array_equal(means[j], mean)
        np.testing.assert_array_equal(variances[j], var)
    assert np.all(np.isfinite(means)) and np.all(variances > 0)
