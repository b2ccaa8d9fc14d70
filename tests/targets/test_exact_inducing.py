"""Draws of v | theta with the distinct training inputs as inducing inputs."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.targets._sparse_shared import jittered_gram
from skgp_bayes.targets.collapsed import CollapsedSparseTarget
from skgp_bayes.targets.exact_inducing import ExactInducingConditional


def _problem(duplicates):
    rng = np.random.default_rng(3)
    X = rng.uniform(-2.0, 2.0, (36, 2))
    if duplicates:  # a third of the rows repeat another's input
        X[::3] = X[1::3]
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.2 * rng.standard_normal(36)
    adapter = KernelAdapter(ConstantKernel(1.3) * RBF([0.8, 1.4]))
    params = np.append(adapter.kernel.theta, np.log(0.04))
    return adapter, X, y, np.unique(X, axis=0), params


def _moments(draws, params):
    """Mean and covariance of the draw, which is linear in (z1, z2)."""
    m, n = draws.n_inducing, draws.index.size
    mean = draws.draw(params, np.zeros(m), np.zeros(n))
    M1 = np.stack([draws.draw(params, e, np.zeros(n)) - mean for e in np.eye(m)], 1)
    M2 = np.stack([draws.draw(params, np.zeros(m), e) - mean for e in np.eye(n)], 1)
    return mean, M1 @ M1.T + M2 @ M2.T


@pytest.mark.parametrize("duplicates", [False, True])
def test_draws_give_the_exact_gp_posterior_of_the_inducing_values(duplicates):
    # u = R v is f at the distinct inputs; its posterior given y is the
    # exact GP's. The draws' prior on u has covariance K + jitter (relative
    # 1e-6 of the variance 1.69), so the moments agree to that jitter over
    # the noise variance 0.04, a few 1e-5, not to round-off.
    adapter, X, y, Z, params = _problem(duplicates)
    draws = ExactInducingConditional(adapter, X, y, Z)
    mean_v, cov_v = _moments(draws, params)
    theta, s2 = params[:-1], np.exp(params[-1])
    K = jittered_gram(adapter.gram(theta, Z), draws.jitter)
    R = np.linalg.cholesky(K)
    Kzz = adapter.gram(theta, Z)
    Kzx = adapter.cross(theta, Z, X)
    C = adapter.gram(theta, X) + s2 * np.eye(X.shape[0])
    exact_mean = Kzx @ np.linalg.solve(C, y)
    exact_cov = Kzz - Kzx @ np.linalg.solve(C, Kzx.T)
    np.testing.assert_allclose(R @ mean_v, exact_mean, atol=1e-4)
    np.testing.assert_allclose(R @ cov_v @ R.T, exact_cov, atol=1e-4)
    # and the sparse target's conditional with the same inducing inputs,
    # compared where predictions use it (u = R v): the same to the jitter
    sparse_mean, factor = CollapsedSparseTarget(adapter, X, y, Z).conditional(params)
    np.testing.assert_allclose(R @ sparse_mean, R @ mean_v, atol=1e-3)
    np.testing.assert_allclose(R @ factor @ factor.T @ R.T, R @ cov_v @ R.T, atol=1e-3)


@pytest.mark.statistical
def test_sampled_draws_have_the_moments(stat_seed):
    adapter, X, y, Z, params = _problem(True)
    draws = ExactInducingConditional(adapter, X, y, Z)
    mean, cov = _moments(draws, params)
    n_draws = 4000
    v = draws.sample_v(np.tile(params, (n_draws, 1)), np.random.default_rng(stat_seed))
    sd = np.sqrt(np.diag(cov))
    # independent draws: each of the 24 means has standard error
    # sd / sqrt(4000); at 5 of them, 24 * 5.7e-7 = 1.4e-5 false failures,
    # and as many for the variances (standard error var sqrt(2 / N))
    np.testing.assert_array_less(np.abs(v.mean(0) - mean), 5 * sd / np.sqrt(n_draws))
    np.testing.assert_array_less(
        np.abs(v.var(0) - sd**2), 5 * sd**2 * np.sqrt(2 / n_draws)
    )


def test_inducing_inputs_must_be_the_distinct_training_inputs():
    adapter, X, y, Z, _ = _problem(False)
    with pytest.raises(ValueError, match="distinct rows of X"):
        ExactInducingConditional(adapter, X, y, Z[::2])


def test_draws_are_seeded():
    adapter, X, y, Z, params = _problem(False)
    draws = ExactInducingConditional(adapter, X, y, Z)
    hyper = np.tile(params, (3, 1))
    a = draws.sample_v(hyper, np.random.default_rng(5))
    b = draws.sample_v(hyper, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)


def _reference_draws(draws, hyper, rng):
    """draw() row by row, with the normals sample_v takes from ``rng``."""
    m, n = draws.n_inducing, draws.index.size
    normals = rng.standard_normal((hyper.shape[0], m + n))
    pairs = zip(hyper, normals, strict=True)
    return np.array([draws.draw(h, z[:m], z[m:]) for h, z in pairs])


@pytest.mark.parametrize("duplicates", [False, True])
@pytest.mark.parametrize("rows", [36, 132])
def test_compiled_draws_are_the_interpreted_ones(duplicates, rows):
    # 132 rows (88 or 132 distinct): LAPACK factorises there, the loops
    # at 36; the interpreted draw() is LAPACK's throughout. The two differ
    # by rounding in two factorisations and solves of condition number up
    # to 1 + variance / s2 ~ 40, after the relative jitter 1e-6 of the
    # variance: 1e-8 relative is thousands of times the round-off and far
    # below a wrong term (the noise, the jitter or a count: 1e-3 or more).
    rng = np.random.default_rng(8)
    X = rng.uniform(-2.0, 2.0, (rows, 2))
    if duplicates:
        X[::3] = X[1::3]
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.2 * rng.standard_normal(rows)
    adapter = KernelAdapter(ConstantKernel(1.3) * RBF([0.8, 1.4]))
    draws = ExactInducingConditional(adapter, X, y, np.unique(X, axis=0))
    assert draws._compiled
    base = np.append(adapter.kernel.theta, np.log(0.04))
    hyper = base + 0.3 * rng.standard_normal((5, base.size))
    got = draws.sample_v(hyper, np.random.default_rng(1))
    want = _reference_draws(draws, hyper, np.random.default_rng(1))
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8)


def test_a_kernel_without_a_compiled_form_draws_the_same_way():
    from sklearn.gaussian_process.kernels import DotProduct

    adapter, X, y, Z, _ = _problem(False)
    adapter = KernelAdapter(ConstantKernel(1.3) * RBF([0.8, 1.4]) + DotProduct())
    draws = ExactInducingConditional(adapter, X, y, Z)
    assert not draws._compiled
    hyper = np.tile(np.append(adapter.kernel.theta, np.log(0.04)), (2, 1))
    got = draws.sample_v(hyper, np.random.default_rng(2))
    want = _reference_draws(draws, hyper, np.random.default_rng(2))
    np.testing.assert_array_equal(got, want)


def test_a_kernel_matrix_that_cannot_be_factorised_is_named():
    from skgp_bayes.exceptions import NotPSDError

    adapter, X, y, Z, params = _problem(False)
    draws = ExactInducingConditional(adapter, X, y, Z)
    bad = params.copy()
    bad[0] = np.nan  # a log variance that is not a number
    message = "K\\(Z, Z\\) is not positive definite at draw 1"
    with pytest.raises(NotPSDError, match=message):
        draws.sample_v(np.stack([params, bad]), np.random.default_rng(0))
