"""SelectiveSVGP's predictions averaged over Laplace draws of its hyperparameters."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes import SelectiveSVGP
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.selective._hyperparameter_draws import (
    hyperparameter_draws,
    optimal_q_per_draw,
)
from skgp_bayes.targets.selective import SubsetBound


def _log_noise_curvature(K, y, log_noise):
    """d^2/ds^2 of the exact log marginal likelihood in s = log noise.

    With C = K + e^s I and alpha = C^-1 y: dL/ds = e^s (alpha'alpha -
    tr C^-1) / 2, and differentiating again (dC/ds = e^s I),
    d2L/ds2 = dL/ds + e^2s (tr C^-2 - 2 alpha'C^-1 alpha) / 2.
    """
    noise = np.exp(log_noise)
    C_inv = np.linalg.inv(K + noise * np.eye(K.shape[0]))
    alpha = C_inv @ y
    first = 0.5 * noise * (alpha @ alpha - np.trace(C_inv))
    return first + 0.5 * noise**2 * (
        np.trace(C_inv @ C_inv) - 2.0 * alpha @ C_inv @ alpha
    )


def test_draws_spread_as_the_inverse_curvature_of_the_exact_marginal():
    # Every point an inducing point, no jitter: the collapsed bound is the
    # exact log marginal likelihood, whose curvature in the log noise is
    # known in closed form. Kernel fixed, no prior: the draws' variance is
    # -1 / L'' (0.44 here, under the cap of one log unit's sd). 10,000
    # mirrored pairs give 10,000 independent squared offsets, so the
    # sample variance has a relative sd of sqrt(2 / 10,000) = 1.4%; the 6%
    # tolerance is 4.2 sd (false failures ~3e-5).
    rng = np.random.default_rng(0)
    X = np.linspace(0, 39, 40)[:, None]  # a unit apart: K(Z, Z) factorises
    y = np.sin(X[:, 0]) + 0.3 * rng.standard_normal(40)
    kernel = ConstantKernel(1.0, "fixed") * RBF(1.0, "fixed")
    bound = SubsetBound(KernelAdapter(kernel), X, y, X, jitter=0.0)
    log_noise = np.log(0.09)
    box = np.array([[-20.0, 5.0]])
    draws = hyperparameter_draws(
        bound, np.array([log_noise]), box, np.arange(40), 20_000, rng
    )
    variance = -1.0 / _log_noise_curvature(kernel(X), y, log_noise)
    offsets = draws[::2, 0] - log_noise
    assert np.mean(offsets**2) == pytest.approx(variance, rel=0.06)
    # mirrored pairs: the draws' mean is the point itself
    assert np.mean(draws[:, 0]) == pytest.approx(log_noise, abs=1e-12)


def test_fixed_coordinates_stay_and_draws_stay_in_the_box():
    rng = np.random.default_rng(1)
    X = np.linspace(0, 5, 20)[:, None]
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(20)
    bound = SubsetBound(KernelAdapter(ConstantKernel() * RBF()), X, y, X[::2])
    hyper = np.array([0.0, 0.0, np.log(0.01)])
    # the amplitude fixed by its bounds; the noise's box tight about it
    box = np.array([[0.0, 0.0], [-3.0, 3.0], [np.log(0.01), np.log(0.02)]])
    draws = hyperparameter_draws(bound, hyper, box, np.arange(10), 64, rng)
    assert np.all(draws[:, 0] == 0.0)
    assert np.all((draws >= box[:, 0]) & (draws <= box[:, 1]))
    assert np.ptp(draws[:, 1]) > 0 and np.ptp(draws[:, 2]) > 0


def _all_kept_fit(n_draws):
    rng = np.random.default_rng(3)
    X = np.linspace(0, 6, 13)[:, None]
    y = 5.0 + 3.0 * np.sin(X[:, 0]) + 0.6 * rng.standard_normal(13)
    return (
        SelectiveSVGP(
            ConstantKernel(1.2) * RBF(0.8),
            candidates=X,
            n_select_iter=0,
            keep="threshold",  # every probability is still at its start, 0.9
            normalize_X=False,
            jitter=0.0,
            n_hyperparameter_draws=n_draws,
            random_state=0,
        ).fit(X, y),
        X,
        y,
    )


def test_predictions_are_the_mixture_of_exact_gps_over_the_draws():
    # With every point kept the sparse posterior of each draw is the exact
    # GP at that draw's hyperparameters (scikit-learn's, in the standardised
    # units the regressor fits in); the predictive of y is their equal-
    # weight mixture.
    reg, X, y = _all_kept_fit(16)
    assert reg.n_inducing_ == 13 and reg.draws_.shape == (16, 3)
    assert len(reg.kernels_) == 16
    Xq = np.linspace(-1, 7, 9)[:, None]
    yq = 5.0 + 3.0 * np.sin(Xq[:, 0])
    means, variances = [], []
    for kernel, log_noise in zip(reg.kernels_, reg.draws_[:, -1], strict=True):
        gpr = GaussianProcessRegressor(
            kernel, alpha=np.exp(log_noise), normalize_y=True, optimizer=None
        ).fit(X, y)
        mean, std = gpr.predict(Xq, return_std=True)
        means.append(mean)
        variances.append(std**2 + np.exp(log_noise) * reg.y_std_**2)
    means, variances = np.array(means), np.array(variances)
    log_densities = norm.logpdf(yq, means, np.sqrt(variances))
    expected = logsumexp(log_densities, axis=0) - np.log(16)
    np.testing.assert_allclose(reg.log_predictive_density(Xq, yq), expected, atol=1e-7)
    mean, std = reg.predict(Xq, return_std=True, noise=True)
    np.testing.assert_allclose(mean, means.mean(axis=0), atol=1e-7)
    mixture_var = variances.mean(axis=0) + means.var(axis=0)
    np.testing.assert_allclose(std**2, mixture_var, rtol=1e-6)


def test_no_draws_is_the_point_estimate():
    reg, X, y = _all_kept_fit(0)
    assert reg.draws_.shape == (1, 3)
    np.testing.assert_allclose(reg.draws_[0, :-1], reg.kernel_.theta, rtol=1e-14)
    assert np.exp(reg.draws_[0, -1]) * reg.y_std_**2 == pytest.approx(
        reg.noise_variance_, rel=1e-12
    )


def test_draws_are_reproducible_and_widen_the_few_rows_intervals():
    # 30 rows, 8 inputs of which one matters: the point estimate's noise
    # is fitted to the training rows; averaging over the hyperparameters'
    # spread gives wider intervals at held-out rows, never narrower on the
    # whole (the mixture's variance holds the draws' mean variance and the
    # spread of their means).
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 8))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(30)
    Xq = rng.standard_normal((200, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fits = [SelectiveSVGP(random_state=0).fit(X, y) for _ in range(2)]
        point = SelectiveSVGP(n_hyperparameter_draws=0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(fits[0].draws_, fits[1].draws_)
    np.testing.assert_array_equal(fits[0].predict(Xq), fits[1].predict(Xq))
    # the draws change the predictions, not the fit they are drawn around
    np.testing.assert_array_equal(fits[0].kernel_.theta, point.kernel_.theta)
    assert fits[0].noise_variance_ == point.noise_variance_
    _, wide = fits[0].predict(Xq, return_std=True, noise=True)
    _, narrow = point.predict(Xq, return_std=True, noise=True)
    assert np.mean(wide) > np.mean(narrow)


def test_a_curvature_that_cannot_be_evaluated_leaves_the_point():
    # A gradient that is NaN beside the point (a fault injected into the
    # bound) makes the Laplace covariance NaN, and NumPy's inverse and
    # Cholesky pass NaN through without an error: the draws would be NaN
    # and so would every prediction. They fall back to the point instead.
    rng = np.random.default_rng(2)
    X = np.linspace(0, 5, 20)[:, None]
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(20)
    bound = SubsetBound(KernelAdapter(ConstantKernel() * RBF()), X, y, X[::2])
    hyper = np.array([0.0, 0.0, np.log(0.01)])
    box = np.array([[-5.0, 5.0], [-5.0, 5.0], [-9.0, 2.0]])
    kept = np.arange(10)

    def faulty(h, idx):
        value, grad = SubsetBound.logp_and_grad(bound, h, idx)
        return value, np.full_like(grad, np.nan) if h[0] != 0.0 else grad

    bound.logp_and_grad = faulty
    draws = hyperparameter_draws(bound, hyper, box, kept, 8, rng)
    means, factors, n_replaced = optimal_q_per_draw(bound, draws, kept, hyper)
    assert n_replaced == 8
    np.testing.assert_array_equal(draws, np.tile(hyper, (8, 1)))
    assert np.all(np.isfinite(means)) and np.all(np.isfinite(factors))
