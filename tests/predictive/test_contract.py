"""The predictive contract: one meaning per call, on every estimator.

Every estimator is fitted once, cheaply (``tests/_estimators.py``), on data
in natural units: a regression target near 50 with unit 10, and string class
labels. The checks are exact identities between calls (to round-off or to
the stated accuracy of a quadrature), not statistical ones, so each holds
for any fit.
"""

import warnings

import numpy as np
import pytest
from _estimators import CHEAP
from scipy.integrate import trapezoid
from scipy.optimize import brentq
from scipy.special import ndtr

from skgp_bayes import VariationalMCMCRegressor
from skgp_bayes.predictive import _distributions
from skgp_bayes.predictive._distributions import (
    GaussianMixturePredictive,
    gaussian_mixture_quantiles,
)

REGRESSORS = [n for n in CHEAP if "Classifier" not in n]
CLASSIFIERS = [n for n in CHEAP if "Classifier" in n]
MULTICLASS = ["SteinGPClassifier", "VariationalMCMCClassifier"]
# Estimators whose predictions average over posterior draws.
WITH_DRAWS = [n for n in CHEAP if not n.startswith("Selective")]

_RNG = np.random.RandomState(0)
_X = _RNG.uniform(-3, 3, (40, 2))
_Y = 50.0 + 10.0 * np.sin(_X[:, 0]) + 2.0 * _RNG.randn(40)
_LABELS = np.where(_X[:, 0] > 0, "yes", "no")
_LABELS3 = np.array(["low", "mid", "high"])[np.digitize(_X[:, 0], [-1.0, 1.0])]
_XQ = _RNG.uniform(-3.5, 3.5, (7, 2))


def _fit(name, y, **kw):
    est = CHEAP[name]().set_params(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cheap fits do not converge
        return est.fit(_X, y)


@pytest.fixture(scope="module")
def fitted():
    """Every estimator fitted once: regressors on _Y, classifiers on _LABELS."""
    return {n: _fit(n, _LABELS if n in CLASSIFIERS else _Y) for n in CHEAP}


# ------------------------------------------------------------ regressors
@pytest.mark.parametrize("name", REGRESSORS)
def test_predict_shapes_and_std_is_the_diagonal_of_cov(fitted, name):
    est = fitted[name]
    n = _XQ.shape[0]
    mean = est.predict(_XQ)
    for noise in (False, True):
        mean_s, std = est.predict(_XQ, return_std=True, noise=noise)
        mean_c, cov = est.predict(_XQ, return_cov=True, noise=noise)
        assert mean.shape == std.shape == (n,) and cov.shape == (n, n)
        np.testing.assert_allclose(mean_s, mean, rtol=1e-12)
        np.testing.assert_allclose(mean_c, mean, rtol=1e-12)
        # the same mixture, once marginally and once jointly: equal to
        # round-off relative to the variance
        np.testing.assert_allclose(std**2, np.diag(cov), rtol=1e-8)


@pytest.mark.parametrize("name", REGRESSORS)
def test_noise_adds_the_mean_noise_variance(fitted, name):
    # Each draw adds its noise variance; the mixture's variance then grows
    # by their mean: the latent spread is the default, the noisy one opt-in.
    est = fitted[name]
    _, latent = est.predict(_XQ, return_std=True)
    _, noisy = est.predict(_XQ, return_std=True, noise=True)
    expected = np.mean(_noise_per_draw(est))
    np.testing.assert_allclose(noisy**2 - latent**2, expected, rtol=1e-8)


def _noise_per_draw(est):
    if hasattr(est, "inclusion_probabilities_"):
        # SelectiveSVGP's noise_variance_ is its point estimate; the draws
        # its predictions average over carry their own (standardised units)
        return np.exp(est.draws_[:, -1]) * est.y_std_**2
    return est.noise_variance_


@pytest.mark.parametrize("name", REGRESSORS)
def test_quantiles_are_monotone_and_the_interval_is_their_pair(fitted, name):
    est = fitted[name]
    levels = [0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99]
    q = est.predict_quantiles(_XQ, quantiles=levels)
    assert q.shape == (_XQ.shape[0], len(levels))
    assert np.all(np.diff(q, axis=1) > 0)
    assert est.predict_quantiles(_XQ).shape == (_XQ.shape[0], 3)
    lower, upper = est.predict_interval(_XQ, coverage=0.9)
    # other levels in the same solve may take it a step further: 1e-13
    np.testing.assert_allclose(lower, q[:, 1], rtol=1e-12)
    np.testing.assert_allclose(upper, q[:, 5], rtol=1e-12)


@pytest.mark.parametrize("name", REGRESSORS)
def test_quantiles_agree_with_the_log_predictive_density(fitted, name):
    # The density integrated from far in the lower tail up to each quantile
    # gives its level. The two calls share no code beyond the per-draw
    # moments: the quantiles solve the mixture's CDF (ndtr), the density is
    # a logsumexp of normal log densities. The trapezoid rule on 20,001
    # points has error below 1e-7 here; 1e-6 of tail mass lies below the
    # start of the grid.
    est = fitted[name]
    levels = np.array([0.05, 0.3, 0.5, 0.9])
    start = est.predict_quantiles(_XQ, quantiles=1e-6)[:, 0]
    q = est.predict_quantiles(_XQ, quantiles=levels)
    for i in range(_XQ.shape[0]):
        for j, level in enumerate(levels):
            grid = np.linspace(start[i], q[i, j], 20001)
            rows = np.repeat(_XQ[i : i + 1], grid.size, axis=0)
            density = np.exp(est.log_predictive_density(rows, grid))
            mass = 1e-6 + trapezoid(density, grid)
            assert mass == pytest.approx(level, abs=1e-6)


@pytest.mark.parametrize("name", REGRESSORS)
def test_log_predictive_density_is_per_point(fitted, name):
    est = fitted[name]
    lpd = est.log_predictive_density(_X, _Y)
    assert lpd.shape == (_X.shape[0],) and np.all(np.isfinite(lpd))
    # point i's value does not depend on the other points
    np.testing.assert_allclose(
        est.log_predictive_density(_X[3:4], _Y[3:4]), lpd[3:4], rtol=1e-12
    )
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        est.log_predictive_density(_X, _Y[:-1])


def test_median_of_a_single_gaussian_is_the_mean(fitted):
    # SelectiveSVGP without hyperparameter draws is a point estimate: its
    # predictive of y is one Gaussian, N(mean, latent var + noise var), so
    # its quantiles are closed-form.
    est = _fit("SelectiveSVGP", _Y, n_hyperparameter_draws=0)
    mean, sd = est.predict(_XQ, return_std=True, noise=True)
    q = est.predict_quantiles(_XQ, quantiles=[0.5, 0.975])
    np.testing.assert_allclose(q[:, 0], mean, rtol=1e-12)
    np.testing.assert_allclose(q[:, 1], mean + 1.959963984540054 * sd, rtol=1e-10)


@pytest.mark.parametrize("name", REGRESSORS)
def test_sample_y_has_scikit_learn_shape(fitted, name):
    est = fitted[name]
    assert est.sample_y(_XQ).shape == (_XQ.shape[0], 1)
    assert est.sample_y(_XQ, n_samples=4, random_state=0).shape == (_XQ.shape[0], 4)


@pytest.mark.parametrize(
    "bad", [0.0, 1.0, -0.1, [0.5, 1.5], [[0.5]]], ids=lambda b: repr(b)
)
def test_quantile_levels_are_checked(fitted, bad):
    with pytest.raises(ValueError, match="quantiles"):
        fitted["SelectiveSVGP"].predict_quantiles(_XQ, quantiles=bad)


def test_poisson_quantiles_are_counts_consistent_with_the_probabilities():
    # For counts, the q-quantile is the smallest k with P(y <= k) >= q; the
    # probabilities summed from log_predictive_density (adaptive quadrature,
    # relative error far below 1e-6) must cross each level exactly there.
    counts = np.random.RandomState(1).poisson(np.exp(1.0 + np.sin(_X[:, 0])))
    est = CHEAP["VariationalMCMCRegressor"]().set_params(likelihood="poisson")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(_X, counts, exposure=2.0)
    levels = np.array([0.05, 0.5, 0.95])
    q = est.predict_quantiles(_XQ, quantiles=levels, exposure=2.0)
    assert np.all(q == np.round(q)) and np.all(np.diff(q, axis=1) >= 0)
    for i in range(_XQ.shape[0]):
        k = np.arange(q[i, -1] + 1)
        rows = np.repeat(_XQ[i : i + 1], k.size, axis=0)
        cdf = np.cumsum(np.exp(est.log_predictive_density(rows, k, exposure=2.0)))
        for j, level in enumerate(levels):
            at = int(q[i, j])
            assert cdf[at] >= level - 1e-6
            assert at == 0 or cdf[at - 1] < level + 1e-6
    assert isinstance(est, VariationalMCMCRegressor)
    _, std = est.predict(_XQ, exposure=2.0, return_std=True)
    _, std_y = est.predict(_XQ, exposure=2.0, return_std=True, noise=True)
    assert np.all(std_y > std)


# ------------------------------------------------------- mixture solver
def test_mixture_quantiles_solve_the_cdf_to_round_off():
    # Random mixtures with components far apart and of very different
    # widths, against a bracketing root finder run to machine precision.
    rng = np.random.RandomState(3)
    means = rng.normal(0.0, 30.0, (25, 6))
    sds = np.exp(rng.normal(0.0, 2.0, (25, 6)))
    levels = np.array([1e-6, 0.05, 0.5, 0.95, 1 - 1e-6])
    q = gaussian_mixture_quantiles(levels, means, sds)
    for i in range(means.shape[1]):
        for j, level in enumerate(levels):

            def gap(x, i=i, level=level):
                return ndtr((x - means[:, i]) / sds[:, i]).mean() - level

            ref = brentq(gap, -1e4, 1e4, xtol=1e-14, rtol=4 * np.finfo(float).eps)
            assert q[i, j] == pytest.approx(ref, rel=1e-10, abs=1e-10)


def test_mixture_quantiles_keep_newton_steps_that_converged(monkeypatch):
    # Newton converges in a few steps from the components' mean quantile;
    # a converged step that lands on an end of the bracket once made the
    # solver bisect instead, about 40 more passes over the draws for some
    # columns (49 passes here, against 6).
    rng = np.random.default_rng(0)
    means = rng.normal(size=(400, 60))
    sds = np.exp(0.3 * rng.normal(size=(400, 60)))
    passes = []
    cdf = _distributions._cdf_minus_levels

    def counted(*args):
        passes.append(1)
        return cdf(*args)

    monkeypatch.setattr(_distributions, "_cdf_minus_levels", counted)
    levels = np.array([0.05, 0.5, 0.95])
    q = gaussian_mixture_quantiles(levels, means, sds)
    assert len(passes) <= 10
    F = ndtr((q[None] - means[..., None]) / sds[..., None]).mean(axis=0)
    np.testing.assert_allclose(F, np.broadcast_to(levels, F.shape), rtol=0, atol=1e-13)


def test_mixture_of_one_component_is_exact():
    mix = GaussianMixturePredictive(
        np.array([[0.3, -2.0]]), np.array([[4.0, 0.25]]), 100.0, 10.0
    )
    q = mix.quantiles(np.array([0.5, 0.8413447460685429]))
    np.testing.assert_allclose(q[:, 0], [103.0, 80.0], rtol=1e-15)
    np.testing.assert_allclose(q[:, 1], [123.0, 85.0], rtol=1e-12)


# ------------------------------------------------------------ classifiers
@pytest.mark.parametrize("name", CLASSIFIERS)
def test_log_proba_is_the_log_of_proba(fitted, name):
    est = fitted[name]
    proba = est.predict_proba(_XQ)
    log_proba = est.predict_log_proba(_XQ)
    assert proba.shape == log_proba.shape == (_XQ.shape[0], 2)
    np.testing.assert_allclose(np.exp(log_proba), proba, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_string_labels_round_trip(fitted, name):
    est = fitted[name]
    np.testing.assert_array_equal(est.classes_, ["no", "yes"])
    pred = est.predict(_X)
    assert pred.dtype.kind == "U" and set(pred) <= {"no", "yes"}
    np.testing.assert_array_equal(
        pred, est.classes_[np.argmax(est.predict_proba(_X), axis=1)]
    )


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_decision_function_is_the_log_odds(fitted, name):
    est = fitted[name]
    scores = est.decision_function(_XQ)
    log_proba = est.predict_log_proba(_XQ)
    assert scores.shape == (_XQ.shape[0],)
    np.testing.assert_allclose(
        scores, log_proba[:, 1] - log_proba[:, 0], rtol=1e-9, atol=1e-12
    )
    np.testing.assert_array_equal(
        est.predict(_XQ), est.classes_[(scores > 0).astype(int)]
    )


@pytest.mark.parametrize("name", MULTICLASS)
def test_multiclass_log_proba_and_no_decision_function(name):
    est = _fit(name, _LABELS3)
    np.testing.assert_array_equal(est.classes_, ["high", "low", "mid"])
    proba = est.predict_proba(_XQ)
    log_proba = est.predict_log_proba(_XQ)
    assert log_proba.shape == (_XQ.shape[0], 3)
    np.testing.assert_allclose(np.exp(log_proba), proba, rtol=1e-12)
    # the log odds have no single meaning for three classes
    assert not hasattr(est, "decision_function")
    assert set(est.predict(_XQ)) <= {"high", "low", "mid"}


# ------------------------------------------------------------ attributes
@pytest.mark.parametrize("name", list(CHEAP))
def test_fit_time_is_a_dict_with_a_total(fitted, name):
    times = fitted[name].fit_time_
    assert isinstance(times, dict) and times["total"] >= 0.0
    assert all(v <= times["total"] for v in times.values())


@pytest.mark.parametrize("name", WITH_DRAWS)
def test_draws_and_per_draw_attributes_align(fitted, name):
    est = fitted[name]
    assert est.draws_.ndim == 2
    assert est.draws_.shape[1] == len(est.param_names_)
    assert len(est.kernels_) == est.draws_.shape[0]
    if name in REGRESSORS:
        assert est.noise_variance_.shape == (est.draws_.shape[0],)
