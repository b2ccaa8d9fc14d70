"""Calibration metrics: exact references, calibration under the true model."""

import sys

import numpy as np
import pytest
from scipy import integrate, stats
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.model_selection import cross_validate

from skgp_bayes import SteinGPRegressor, metrics
from skgp_bayes.likelihoods import Poisson
from skgp_bayes.predictive._distributions import (
    GaussianMixturePredictive,
    PoissonMixturePredictive,
)

pytest.importorskip("scoringrules")

# A calibrated predictive gives uniform PIT values and binomial coverage
# counts; every statistical check below fails with probability about 1e-4 or
# less when the code is right (stated per test), and the seeds are fixed.


class _Fixed:
    """A fitted 'estimator' whose predictive at any X is the given one."""

    def __init__(self, predictive):
        self.predictive = predictive

    def _validate_query(self, X):
        return X

    def _observation_predictive(self, X):
        return self.predictive


class _GaussianPoint:
    """A scikit-learn-style regressor with a known Gaussian predictive."""

    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def predict(self, X, return_std=False):
        return (self.mean, self.std) if return_std else self.mean


def _mixture_crps_by_quadrature(y, means, sds, weights):
    def cdf(x):
        return np.sum(weights * stats.norm.cdf(x, means, sds))

    lo = min(y, means.min() - 12 * sds.max())
    hi = max(y, means.max() + 12 * sds.max())
    below, _ = integrate.quad(lambda x: cdf(x) ** 2, lo, y, limit=200)
    above, _ = integrate.quad(lambda x: (1 - cdf(x)) ** 2, y, hi, limit=200)
    return below + above


def test_mixture_crps_matches_quadrature_of_its_definition():
    rng = np.random.RandomState(0)
    means = rng.randn(3, 4)
    sds = rng.uniform(0.2, 2.0, (3, 4))
    weights = np.array([0.2, 0.5, 0.3])
    y = rng.randn(4) * 2
    got = metrics.crps_gaussian_mixture(y, means, sds, weights)
    want = [
        _mixture_crps_by_quadrature(y[i], means[:, i], sds[:, i], weights)
        for i in range(4)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_mixture_crps_of_one_gaussian_is_the_closed_form():
    y = np.array([-1.0, 0.0, 2.5])
    mu, sd = 0.3, 1.7
    z = (y - mu) / sd
    want = sd * (
        z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi)
    )
    got = metrics.crps_gaussian_mixture(y, np.full((1, 3), mu), np.full((1, 3), sd))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_mixture_crps_blocks_give_the_same_answer(monkeypatch):
    rng = np.random.RandomState(1)
    means, sds, y = rng.randn(5, 7), rng.uniform(0.5, 1, (5, 7)), rng.randn(7)
    whole = metrics.crps_gaussian_mixture(y, means, sds)
    monkeypatch.setattr(metrics, "_CRPS_PAIR_BUDGET", 50)  # two rows a block
    np.testing.assert_allclose(metrics.crps_gaussian_mixture(y, means, sds), whole)


def test_crps_follows_the_units_of_y():
    rng = np.random.RandomState(2)
    means, variances = rng.randn(4, 6), rng.uniform(0.1, 1, (4, 6))
    y_model = rng.randn(6)
    unit = metrics.crps(_Fixed(GaussianMixturePredictive(means, variances)), 0, y_model)
    scaled = GaussianMixturePredictive(means, variances, offset=3.0, scale=2.0)
    np.testing.assert_allclose(
        metrics.crps(_Fixed(scaled), 0, 3.0 + 2.0 * y_model), 2.0 * unit, rtol=1e-12
    )


def test_count_crps_is_the_ranked_probability_score_of_the_poisson():
    rate = np.array([0.5, 3.0, 20.0])
    predictive = PoissonMixturePredictive(
        np.log(rate)[None, :], np.zeros((1, 3)), Poisson()
    )
    y = np.array([0.0, 5.0, 17.0])
    k = np.arange(400)[:, None]
    want = np.sum((stats.poisson.cdf(k, rate) - (k >= y)) ** 2, axis=0)
    np.testing.assert_allclose(metrics.crps(_Fixed(predictive), 0, y), want, rtol=1e-8)


def test_pit_of_a_calibrated_gaussian_is_uniform():
    rng = np.random.RandomState(3)
    mean, std = rng.randn(2000), rng.uniform(0.5, 2, 2000)
    y = mean + std * rng.randn(2000)
    u = metrics.pit_values(_GaussianPoint(mean, std), None, y)
    # Kolmogorov-Smirnov at level 1e-4: fails once in 10,000 seeds if right.
    assert stats.kstest(u, "uniform").pvalue > 1e-4
    # A predictive twice too narrow is caught (p far below 1e-10 at m = 2000).
    narrow = metrics.pit_values(_GaussianPoint(mean, std / 2), None, y)
    assert stats.kstest(narrow, "uniform").pvalue < 1e-10


def test_randomised_pit_of_a_calibrated_count_is_uniform():
    rng = np.random.RandomState(4)
    rate = rng.uniform(0.2, 6.0, 2000)
    y = rng.poisson(rate).astype(float)
    predictive = PoissonMixturePredictive(
        np.log(rate)[None, :], np.zeros((1, 2000)), Poisson()
    )
    u = metrics.pit_values(_Fixed(predictive), None, y, random_state=0)
    assert stats.kstest(u, "uniform").pvalue > 1e-4  # false failure 1e-4
    again = metrics.pit_values(_Fixed(predictive), None, y, random_state=0)
    np.testing.assert_array_equal(u, again)


def test_coverage_of_a_calibrated_gaussian_is_its_level():
    rng = np.random.RandomState(5)
    m = 4000
    mean, std = rng.randn(m), rng.uniform(0.5, 2, m)
    y = mean + std * rng.randn(m)
    levels = np.array([0.5, 0.8, 0.9, 0.95])
    observed = metrics.coverage_curve(_GaussianPoint(mean, std), None, y, levels)
    # Binomial(m, p) / m; 4.4 standard errors: about 1e-5 per level.
    assert np.all(np.abs(observed - levels) < 4.4 * np.sqrt(levels * (1 - levels) / m))


def test_interval_coverage_counts_the_closed_interval():
    assert metrics.interval_coverage([0, 1, 2, 3], [0, 0, 0, 0], [1, 1, 1, 1]) == 0.5
    with pytest.raises(ValueError, match="one shape"):
        metrics.interval_coverage([0, 1], [0], [1, 1])


def test_scikit_learn_regressor_is_scored_through_its_predictive_sd():
    rng = np.random.RandomState(6)
    X = rng.uniform(-3, 3, (50, 1))
    y = np.sin(X[:, 0]) + 0.2 * rng.randn(50)
    gpr = GaussianProcessRegressor(RBF() + WhiteKernel(), random_state=0)
    gpr.fit(X[:30], y[:30])
    mu, sd = gpr.predict(X[30:], return_std=True)
    np.testing.assert_allclose(
        metrics.mean_log_predictive_density(gpr, X[30:], y[30:]),
        stats.norm.logpdf(y[30:], mu, sd).mean(),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        metrics.pit_values(gpr, X[30:], y[30:]), stats.norm.cdf(y[30:], mu, sd)
    )


def test_own_regressor_metrics_agree_with_its_contract():
    rng = np.random.RandomState(7)
    X = rng.uniform(-3, 3, (60, 1))
    y = np.sin(X[:, 0]) + 0.2 * rng.randn(60)
    reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X[:40], y[:40])
    lower, upper = reg.predict_interval(X[40:], coverage=0.8)
    assert metrics.coverage_curve(reg, X[40:], y[40:], levels=[0.8])[
        0
    ] == metrics.interval_coverage(y[40:], lower, upper)
    np.testing.assert_allclose(
        metrics.mean_log_predictive_density(reg, X[40:], y[40:]),
        reg.log_predictive_density(X[40:], y[40:]).mean(),
    )
    scores = cross_validate(
        reg,
        X,
        y,
        cv=3,
        scoring={
            "crps": metrics.neg_mean_crps,
            "lpd": metrics.mean_log_predictive_density,
            "cov90": metrics.interval_coverage_scorer(0.9),
        },
        error_score="raise",
    )
    assert np.all(np.isfinite(scores["test_crps"])) and np.all(scores["test_crps"] < 0)
    assert np.all(scores["test_cov90"] <= 0)


def test_bad_calls_say_what_is_wrong(monkeypatch):
    class NoStd:
        def predict(self, X):
            return np.zeros(3)

    with pytest.raises(TypeError, match="no predictive distribution"):
        metrics.crps(NoStd(), None, np.zeros(3))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        metrics.crps(_GaussianPoint(np.zeros(3), np.ones(3)), None, np.zeros(4))
    with pytest.raises(ValueError, match="coverage"):
        metrics.coverage_curve(
            _GaussianPoint(np.zeros(3), np.ones(3)), None, np.zeros(3), levels=[1.5]
        )
    with pytest.raises(ValueError, match="positive"):
        metrics.crps_gaussian_mixture([0.0], [[0.0]], [[0.0]])
    monkeypatch.setitem(sys.modules, "scoringrules", None)
    with pytest.raises(ImportError, match=r"skgp_bayes\[metrics\]"):
        metrics.crps_gaussian_mixture([0.0], [[0.0]], [[1.0]])
