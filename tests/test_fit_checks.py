"""Degenerate fits say so: one sample, no signal kept, one inducing point, a
posterior pinned to a bound; and ordinary fits stay quiet."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skgp_bayes import (
    SelectiveSVGP,
    SelectiveSVGPClassifier,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCRegressor,
)
from skgp_bayes._fit_checks import (
    NO_SIGNAL_RATIO,
    prior_only,
    signal_ratio,
    warn_at_bounds,
    warn_degenerate_fit,
)
from skgp_bayes.datasets import load_mcycle
from skgp_bayes.exceptions import DegenerateFitWarning


@pytest.fixture(autouse=True, scope="module")
def _serial_blas():
    # small matrices: BLAS threads only contend for the cores
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _degenerate(fit):
    """Messages of the DegenerateFitWarnings that ``fit()`` issues."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught if w.category is DegenerateFitWarning]


def _diabetes(rows=None):
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:rows], y[:rows]
    return StandardScaler().fit_transform(X), y


# ------------------------------------------------------------- the checks
def test_signal_ratio_of_regressors_and_classifiers():
    rng = np.random.RandomState(0)
    X = rng.randn(50, 2)
    y = X[:, 0] + 0.1 * rng.randn(50)
    assert signal_ratio(DummyRegressor().fit(X, y), X, y) < 1e-12
    assert signal_ratio(LinearRegression().fit(X, y), X, y) > 0.9
    labels = (y > 0).astype(int)
    assert signal_ratio(DummyClassifier().fit(X, labels), X, labels) < 1e-12
    assert signal_ratio(LogisticRegression().fit(X, labels), X, labels) > 0.3
    # a constant target has nothing to explain
    assert np.isnan(signal_ratio(DummyRegressor().fit(X, 0 * y), X, 0 * y))


def test_no_signal_warning_and_its_threshold():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 2)
    y = rng.randn(40)
    messages = _degenerate(
        lambda: warn_degenerate_fit(DummyRegressor().fit(X, y), X, y)
    )
    assert len(messages) == 1 and "kept no signal" in messages[0]
    # a fitted function just above the threshold is a (weak) signal
    weak = LinearRegression().fit(X, y)
    ratio = signal_ratio(weak, X, y)
    assert ratio > NO_SIGNAL_RATIO
    assert _degenerate(lambda: warn_degenerate_fit(weak, X, y)) == []


def test_warn_at_bounds_counts_pinned_rows():
    bounds = np.log([[1e-2, 1e2], [1e-5, 1e5]])
    names = ["length_scale", "constant_value"]
    pinned = np.log([[1e2, 1.0], [1e2, 2.0], [1.0, 1e-5], [1e2 * 0.99, 1e-5]])

    def check(values, tol=1e-6):
        return _degenerate(lambda: warn_at_bounds(values, bounds, names, "draws", tol))

    messages = check(pinned)
    # 2 of 4 exactly on the upper bound (half counts), 2 of 4 on the lower
    assert len(messages) == 2
    assert "length_scale is at its upper bound 100 for 2 of 4 draws" in messages[0]
    assert "constant_value is at its lower bound 1e-05" in messages[1]
    assert "no signal" in messages[1]
    # within 5% (log units) of the bound counts for a sampler's draws
    assert "3 of 4" in check(pinned, tol=0.05)[0]
    assert check(np.log([[1.0, 1.0]])) == []
    noise = _degenerate(
        lambda: warn_at_bounds(
            np.log([[1e-6]]), np.log([[1e-6, 1e3]]), ["noise_variance"], "fits"
        )
    )
    assert "noise_variance_bounds='fixed'" in noise[0]
    # extra unbounded columns are ignored
    assert len(check(np.hstack([pinned, np.zeros((4, 3))]))) == 2


def test_a_collapsed_noise_over_tied_targets_says_so():
    # A fifth or more of y at one value: the fit reproduces those rows
    # exactly and the shared noise collapses; the advice names the ties.
    def noise_message(y):
        return _degenerate(
            lambda: warn_at_bounds(
                np.log([[1e-6]]),
                np.log([[1e-6, 1e3]]),
                ["noise_variance"],
                "fits",
                y=y,
            )
        )[0]

    rng = np.random.default_rng(0)
    zero_inflated = np.where(rng.uniform(size=100) < 0.55, 0.0, rng.poisson(9, 100))
    tied = noise_message(zero_inflated)
    share = np.mean(zero_inflated == np.bincount(zero_inflated.astype(int)).argmax())
    assert f"{share:.0%} of the training targets share one value" in tied
    assert "likelihood='poisson'" in tied and "='fixed'" not in tied
    assert "Lower that bound" not in tied  # a lower floor would not help
    # distinct targets keep the exact-data advice
    assert "noise_variance_bounds='fixed'" in noise_message(rng.normal(size=100))
    # the share is exact: 19 of 100 stay below it, 20 reach it
    nineteen = np.r_[np.zeros(19), np.arange(1.0, 82.0)]
    assert "share one value" not in noise_message(nineteen)
    assert "20% of" in noise_message(np.r_[np.zeros(20), np.arange(1.0, 81.0)])


def test_prior_only_sets_every_iteration_count_to_zero():
    est = SelectiveSVGP(n_pre_iter=7)
    prior = prior_only(est, 1)
    assert prior is not est and est.n_pre_iter == 7
    assert (prior.n_pre_iter, prior.n_select_iter, prior.n_post_iter) == (0, 0, 0)
    assert prior_only(est, 2) is est


# ---------------------------------------------------------- one sample
@pytest.mark.parametrize(
    "est",
    [
        VariationalMCMCRegressor(
            n_inducing=4,
            n_chains=1,
            n_warmup=10,
            n_samples=5,
            max_samples=5,
            random_state=0,
        ),
        SelectiveSVGP(n_candidates=4, n_select_iter=5, random_state=0),
    ],
    ids=lambda e: type(e).__name__,
)
def test_one_sample_fits_the_prior_and_warns(est):
    messages = _degenerate(lambda: est.fit([[0.3, -1.0]], [5.0]))
    assert any("fitted on 1 sample" in m for m in messages)
    mean, std = est.predict(np.array([[0.3, -1.0], [3.0, 3.0]]), return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
    # y scale 1 and the prior's signal variance of 1: far from the sample
    # the predictive sd is the prior's, of order 1 (not collapsed to 0)
    assert 0.3 < std[1] < 3.0


def test_one_sample_selective_keeps_the_initial_kernel():
    kernel = ConstantKernel(2.0) * RBF(0.7)
    est = SelectiveSVGP(kernel, n_candidates=4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateFitWarning)
        est.fit([[0.0]], [1.0])
    np.testing.assert_allclose(est.kernel_.theta, kernel.theta)


# ------------------------------------------------ the reproducers
@pytest.mark.slow
def test_selective_on_30_points_with_50_features_warns_no_signal():
    # 30 random points with 50 features and a target X does not predict,
    # with the signal variance fixed near zero: the fit is a constant,
    # whatever points are kept (the expected number of them). Under the
    # default priors the fitted signal variance no longer falls to its
    # bound on such data by itself (the prior of log variance vanishes
    # there; with ML-II it did): the default fit explains 8% of the
    # training variance, as uninformative away from the inputs.
    rng = np.random.RandomState(0)
    X, y = rng.randn(30, 50), rng.randn(30)
    kernel = ConstantKernel(1e-5, "fixed") * RBF(np.sqrt(50.0))
    est = SelectiveSVGP(kernel=kernel, hyperparameters_from="kept", random_state=0)
    messages = _degenerate(lambda: est.fit(X, y))
    assert est.score(X, y) < 1e-4
    assert any("kept no signal" in m and "50 features" in m for m in messages)
    assert est.n_inducing_ == max(1, round(est.expected_n_inducing_))


@pytest.mark.slow
def test_selective_on_diabetes_subset_keeps_the_expected_size():
    # the first 150 rows of sklearn's diabetes, standardised: every
    # inclusion probability settles below one half, so the mode of the
    # point process (keep="threshold") keeps one of 80 candidates and
    # predicts a constant; the default keeps the expected number instead
    X, y = _diabetes(150)
    est = SelectiveSVGP(random_state=0)
    assert _degenerate(lambda: est.fit(X, y)) == []
    assert est.n_inducing_ == round(est.expected_n_inducing_) > 1
    assert est.score(X, y) > 0.3
    # hyperparameters fitted to the one kept point, as the issue measured
    # (the point estimate's predictions; the Laplace draws around it spread
    # the mean to 1.5% of the targets' spread, past the no-signal line):
    # the default keeps those of all candidates, with some signal left
    mode = SelectiveSVGP(
        keep="threshold",
        hyperparameters_from="kept",
        n_hyperparameter_draws=0,
        random_state=0,
    )
    messages = _degenerate(lambda: mode.fit(X, y))
    assert mode.n_inducing_ == 1
    assert any("keep='threshold' kept 1 of 80" in m for m in messages)
    assert any("kept 1 of 80 candidate inducing points" in m for m in messages)
    assert any("kept no signal" in m and "lower alpha" in m for m in messages)
    # what the warnings advise works: alpha=0 keeps points and the signal
    fixed = SelectiveSVGP(alpha=0.0, keep="threshold", random_state=0)
    assert _degenerate(lambda: fixed.fit(X, y)) == []
    assert fixed.n_inducing_ > 1 and fixed.score(X, y) > 0.3


def test_classifier_with_uninformative_inputs_warns_no_signal():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 2)
    y = rng.randint(0, 2, 60)
    est = SelectiveSVGPClassifier(
        ConstantKernel(1e-5, "fixed") * RBF(1.0),
        n_candidates=6,
        n_select_iter=10,
        random_state=0,
    )
    messages = _degenerate(lambda: est.fit(X, y))
    assert any("SelectiveSVGPClassifier kept no signal" in m for m in messages)


# --------------------------------------------------- ordinary fits are quiet
@pytest.mark.slow
@pytest.mark.parametrize(
    "est",
    [SelectiveSVGP(random_state=0), SteinGPRegressor(random_state=0)],
    ids=lambda e: type(e).__name__,
)
def test_default_fit_on_mcycle_is_not_degenerate(est):
    X, y = load_mcycle(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    assert _degenerate(lambda: est.fit(X, y)) == []
    assert est.score(X, y) > 0.7


@pytest.mark.parametrize(
    "est",
    [
        SteinGPClassifier(random_state=0),
        pytest.param(SelectiveSVGPClassifier(random_state=0), marks=pytest.mark.slow),
    ],
    ids=lambda e: type(e).__name__,
)
def test_default_fit_on_breast_cancer_is_not_degenerate(est):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:150, :5]
    assert _degenerate(lambda: est.fit(X, y[:150])) == []
    assert est.score(X, y[:150]) > 0.9


@pytest.mark.slow
def test_fit_on_diabetes_with_the_advised_alpha_is_not_degenerate():
    X, y = _diabetes()
    est = SelectiveSVGP(alpha=0.0, n_select_iter=100, random_state=0)
    assert _degenerate(lambda: est.fit(X, y)) == []
