"""Closed-form leave-one-out densities against conditioning on the other rows."""

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.targets.loo import collapsed_loo_densities, exact_loo_densities
from skgp_bayes.targets.sparse import JITTER


def _problem(seed=0, n=25):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(n)
    adapter = KernelAdapter(ConstantKernel(1.3) * RBF([0.7, 2.0]))
    hyper = np.append(adapter.kernel.theta, np.log(0.05))
    return adapter, X, y, hyper


def _conditioned(covariance, y, held_out_variance):
    """Every row's density given the others, by conditioning directly.

    ``covariance`` holds the rows' covariances with each other;
    ``held_out_variance[i]`` is row ``i``'s own variance when it is the one
    predicted (noise included).
    """
    out = []
    for i in range(y.size):
        rest = np.delete(np.arange(y.size), i)
        weights = np.linalg.solve(covariance[np.ix_(rest, rest)], covariance[i, rest])
        mean = weights @ y[rest]
        variance = held_out_variance[i] - covariance[i, rest] @ weights
        out.append(norm.logpdf(y[i], mean, np.sqrt(variance)))
    return np.array(out)


def test_exact_densities_are_those_of_conditioning_on_the_other_rows():
    adapter, X, y, hyper = _problem()
    C = adapter.gram(hyper[:-1], X) + np.exp(hyper[-1]) * np.eye(y.size)
    expected = _conditioned(C, y, np.diag(C))
    np.testing.assert_allclose(
        exact_loo_densities(adapter, X, y, hyper), expected, rtol=1e-8, atol=1e-10
    )


@pytest.mark.parametrize("m", [3, 8, 25])
def test_collapsed_densities_are_the_dtc_predictive_given_the_other_rows(m):
    # DTC: the rows are N(0, Q + s2 I), and a held-out row's latent value
    # has its prior variance K_ii (Q_ii for the rows it is conditioned on)
    adapter, X, y, hyper = _problem()
    Z = X[:: max(1, 25 // m)][:m]
    theta, noise = hyper[:-1], np.exp(hyper[-1])
    Kuu = adapter.gram(theta, Z)
    Kuu[np.diag_indices_from(Kuu)] += JITTER * np.mean(np.diag(Kuu))
    Kuf = adapter.cross(theta, Z, X)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    C = Q + noise * np.eye(y.size)
    expected = _conditioned(C, y, adapter.diag(theta, X) + noise)
    np.testing.assert_allclose(
        collapsed_loo_densities(adapter, X, y, Z, hyper),
        expected,
        rtol=1e-6,
        atol=1e-8,
    )


def test_inducing_inputs_at_every_row_give_the_exact_densities():
    adapter, X, y, hyper = _problem(seed=1)
    np.testing.assert_allclose(
        collapsed_loo_densities(adapter, X, y, X, hyper, jitter=1e-12),
        exact_loo_densities(adapter, X, y, hyper),
        atol=1e-4,
    )


def test_a_matrix_that_cannot_be_factorised_scores_minus_infinity():
    adapter, X, y, hyper = _problem()
    bad = hyper.copy()
    bad[-1] = np.nan
    assert np.all(exact_loo_densities(adapter, X, y, bad) == -np.inf)
