"""The one default policy: scale-free fits, data-scaled priors, quiet defaults.

Scale equivariance. With ``normalize_X=True`` and ``normalize_y=True`` the
model sees standardised inputs and targets, so rescaling an input column by
any factor, shifting it, or mapping ``y -> a y + b`` changes what the model
sees only by floating-point rounding (relative 1e-15). A fit is
deterministic given ``random_state``, so the predictions can differ only by
that rounding carried through the fit; the fit's discrete decisions (an HMC
accept, an L-BFGS line-search step, the stopping rule, the best restart)
flip only if a compared quantity lies within rounding of its threshold,
which happens with probability of order 1e-10 per decision. The tolerance
is a tenth of the estimator's own Monte Carlo error on the predictive mean
(the spread of the mean over its draws or particles divided by the square
root of their number): failing it means the model saw different data, not
that sampling noise moved. False-failure rate: below 1e-8 per test.
"""

import math
import warnings

import numpy as np
import pytest
from _estimators import CHEAP
from sklearn.base import clone, is_classifier
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning

from skgp_bayes import (
    SelectiveSVGP,
    SelectiveSVGPClassifier,
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)
from skgp_bayes._defaults import (
    BULK_MULTIPLE,
    InputScaling,
    default_kernel,
    default_priors,
    merged_priors,
)
from skgp_bayes._validation import safe_mean_std
from skgp_bayes.datasets import load_concrete, load_mcycle
from skgp_bayes.exceptions import DegenerateFitWarning
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.priors import HalfCauchyVariance, HalfNormal, PriorSet

REGRESSORS = [
    "SteinGPRegressor",
    "SGLDGPRegressor",
    "VariationalMCMCRegressor",
    "SelectiveSVGP",
]
CLASSIFIERS = [
    "SteinGPClassifier",
    "VariationalMCMCClassifier",
    "SelectiveSVGPClassifier",
]

# Per-column factors spanning 1e-6 to 1e6, with shifts far from zero.
_FACTORS = np.array([1e-6, 3e-3, 1.0, 40.0, 1e6])
_SHIFTS = np.array([5e-6, -7.0, 0.0, 1e4, -3e7])
# y -> a y + b. A negative ``a`` is equivariant only in distribution for
# samplers of the latent values (their momenta and noise are not mirrored),
# so the exact check uses a positive one.
_Y_MAP = (250.0, -4e3)


def _regression_data():
    X, y = load_diabetes(return_X_y=True, scaled=False)
    return X[:40, [0, 2, 3, 4, 8]], y[:40]


def _classification_data():
    X, y = load_breast_cancer(return_X_y=True)
    rows = np.r_[0:20, 19:39]  # both classes
    return X[rows][:, [0, 1, 4, 7, 20]], y[rows]


def _fit_quietly(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cheap fits are short on purpose
        return estimator.fit(X, y)


def _monte_carlo_error(estimator, X):
    """Standard error of the predictive mean from the draws (or particles)."""
    draws = estimator.sample_y(X, n_samples=64, random_state=0)
    return np.std(draws, axis=1) / math.sqrt(draws.shape[1])


def _rescale(X):
    return X * _FACTORS + _SHIFTS


def _mean_log_density(estimator, X, y):
    return float(np.mean(estimator.log_predictive_density(X, y)))


@pytest.mark.parametrize("name", REGRESSORS)
def test_regressor_is_scale_equivariant(name):
    X, y = _regression_data()
    a, b = _Y_MAP
    base = _fit_quietly(CHEAP[name](), X, y)
    moved = _fit_quietly(CHEAP[name](), _rescale(X), a * y + b)
    query = X[::3]
    mean, std = base.predict(query, return_std=True)
    mean_m, std_m = moved.predict(_rescale(query), return_std=True)
    tol = 0.1 * _monte_carlo_error(base, query)
    np.testing.assert_array_less(np.abs(mean_m - (a * mean + b)), abs(a) * tol + 1e-9)
    np.testing.assert_array_less(np.abs(std_m - abs(a) * std), abs(a) * tol + 1e-9)
    if hasattr(base, "log_predictive_density"):
        shift = _mean_log_density(moved, _rescale(query), a * y[::3] + b)
        assert shift == pytest.approx(
            _mean_log_density(base, query, y[::3]) - math.log(abs(a)), abs=1e-6
        )


def test_poisson_regressor_does_not_depend_on_the_unit_of_exposure():
    # Exposure in days rather than years, or in thousands of person-years:
    # the pooled log rate absorbs log(factor) and the model sees the same
    # latent problem to rounding (see the module docstring for the
    # tolerance). Before, the zero-mean latent function had to carry
    # log(365), and the no-signal check, comparing rates with counts, warned.
    from skgp_bayes.datasets import bin_coal_counts

    X, counts, width = bin_coal_counts(n_bins=40)
    X, exposure = X * 1e3 + 5.0, np.full(40, width)
    base = CHEAP["VariationalMCMCRegressor"]().set_params(likelihood="poisson")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # short on purpose
        base.fit(X, counts, exposure=exposure)
    tol = 0.1 * _monte_carlo_error_counts(base, X, exposure)
    for factor in (365.0, 1e-3):
        moved = clone(base)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # short fit
            warnings.simplefilter("error", DegenerateFitWarning)
            moved.fit(X, counts, exposure=factor * exposure)
        assert moved.y_mean_ == pytest.approx(base.y_mean_ - math.log(factor))
        np.testing.assert_array_less(
            np.abs(
                moved.predict(X, exposure=factor * exposure)
                - base.predict(X, exposure=exposure)
            ),
            tol + 1e-9,
        )
        assert np.mean(
            moved.log_predictive_density(X, counts, exposure=factor * exposure)
        ) == pytest.approx(
            np.mean(base.log_predictive_density(X, counts, exposure=exposure)),
            abs=1e-6,
        )


def _monte_carlo_error_counts(estimator, X, exposure):
    draws = estimator.sample_y(X, n_samples=64, random_state=0, exposure=exposure)
    return np.std(draws, axis=1) / math.sqrt(draws.shape[1])


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_is_scale_invariant(name):
    X, y = _classification_data()
    base = _fit_quietly(CHEAP[name](), X, y)
    moved = _fit_quietly(CHEAP[name](), _rescale(X), y)
    proba = base.predict_proba(X[::3])
    # Probabilities average over at most a few hundred draws; rounding moves
    # them by far less than 1e-6 (see the module docstring).
    np.testing.assert_allclose(moved.predict_proba(_rescale(X[::3])), proba, atol=1e-6)


def test_inducing_points_given_in_natural_units_follow_the_scaling():
    X, y = _regression_data()
    Z = X[:6]
    base = _fit_quietly(
        SteinGPRegressor(inducing_points=Z, n_particles=2, max_iter=5, random_state=0),
        X,
        y,
    )
    moved = _fit_quietly(
        SteinGPRegressor(
            inducing_points=_rescale(Z), n_particles=2, max_iter=5, random_state=0
        ),
        _rescale(X),
        y,
    )
    np.testing.assert_allclose(
        moved.predict(_rescale(X[:5])), base.predict(X[:5]), rtol=1e-6
    )
    np.testing.assert_allclose(
        base.input_scaling_.inverse_transform(base.inducing_points_), Z, rtol=1e-12
    )


def test_candidates_given_in_natural_units_follow_the_scaling():
    X, y = _regression_data()
    options = dict(n_pre_iter=5, n_select_iter=5, n_post_iter=5, random_state=0)
    base = _fit_quietly(SelectiveSVGP(candidates=X[:6], **options), X, y)
    moved = _fit_quietly(
        SelectiveSVGP(candidates=_rescale(X[:6]), **options), _rescale(X), y
    )
    np.testing.assert_allclose(
        moved.predict(_rescale(X[:5])), base.predict(X[:5]), rtol=1e-6
    )


@pytest.mark.parametrize("name", list(CHEAP))
def test_normalize_X_false_leaves_inputs_alone(name):
    X, y = (_classification_data if name in CLASSIFIERS else _regression_data)()
    X = X / X.std(axis=0)  # unit spread, so the raw-unit fit is sensible
    estimator = _fit_quietly(CHEAP[name]().set_params(normalize_X=False), X, y)
    np.testing.assert_array_equal(estimator.input_scaling_.transform(X), X)
    scaled = _fit_quietly(CHEAP[name](), X, y)
    assert np.any(scaled.input_scaling_.mean != 0.0)


def test_input_scaling_handles_extreme_and_constant_columns():
    X = np.array([[1e300, 5.0, -1e-300], [-1e300, 5.0, 1e-300], [0.0, 5.0, 0.0]])
    scaling = InputScaling.fit(X)
    Z = scaling.transform(X)
    assert np.all(np.isfinite(Z))
    np.testing.assert_allclose(Z[:, 1], 0.0)  # a constant column is centred
    np.testing.assert_allclose(np.std(Z[:, [0, 2]], axis=0), 1.0)
    np.testing.assert_allclose(scaling.inverse_transform(Z), X, rtol=1e-12)


def _bulk_spread(column):
    lower, upper = np.percentile(column, [25.0, 75.0])
    return (upper - lower) / 1.3489795003921634


def test_input_scale_is_the_std_below_the_cap():
    # Normal, uniform and exponential columns sit well below twice their
    # bulk's spread (ratios 1.0, 0.8, 1.2): their scale is the standard
    # deviation itself, to the bit, as it was before the cap.
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [rng.normal(size=300), rng.uniform(size=300), rng.exponential(size=300)]
    )
    uncapped = [safe_mean_std(column)[1] for column in X.T]
    np.testing.assert_array_equal(InputScaling.fit(X).scale, uncapped)


def test_input_scale_of_a_heavy_tailed_column_is_twice_its_bulk_spread():
    # Log-normal with log-sd 2.5: the standard deviation is set by a few
    # rows, tens of times the spread of the middle half.
    rng = np.random.default_rng(1)
    weights = np.exp(rng.normal(0.0, 2.5, size=200))
    X = np.column_stack([weights, rng.normal(size=200)])
    scale = InputScaling.fit(X).scale
    assert weights.std() > 10 * _bulk_spread(weights)
    np.testing.assert_allclose(scale[0], BULK_MULTIPLE * _bulk_spread(weights))
    assert scale[1] == safe_mean_std(X[:, 1])[1]
    # scale-free: the cap follows a rescaling and a shift of the column
    moved = InputScaling.fit(np.column_stack([-3e5 * weights + 7.0, X[:, 1]]))
    np.testing.assert_allclose(moved.scale[0], 3e5 * scale[0], rtol=1e-12)


def test_input_scale_ignores_a_bulk_of_identical_values():
    # Over three quarters of the rows equal (a 0/1 indicator, a count that
    # is mostly zero): the middle half has no spread, and the standard
    # deviation is the only scale there is.
    column = np.r_[np.zeros(32), np.arange(1.0, 9.0)]
    assert InputScaling.fit(column[:, None]).scale[0] == safe_mean_std(column)[1]
    # nor is a bulk whose spread is lost in the rounding of its magnitude
    column = np.r_[1e10 + 1e-8 * np.arange(30.0), 2e10]
    assert InputScaling.fit(column[:, None]).scale[0] == safe_mean_std(column)[1]


# ------------------------------------------------------------- the priors
def test_default_kernel_is_ard_with_sqrt_d_start():
    kernel = default_kernel(9)
    assert kernel.k2.length_scale.shape == (9,)
    np.testing.assert_allclose(kernel.k2.length_scale, 3.0)


def test_user_priors_take_precedence_over_the_defaults():
    names = ["k1__constant_value", "k2__length_scale"]
    user = {"k2__length_scale": HalfNormal(2.0)}
    assert merged_priors(user, names, 4)["k2__length_scale"] is user["k2__length_scale"]
    entry = {"k2__length_scale[1]": HalfNormal(2.0)}
    merged = merged_priors(entry, names, 4)
    assert set(merged) == {"k2__length_scale", "k2__length_scale[1]"}


def _standardised(X):
    return InputScaling.fit(X).transform(X)


_REAL_INPUTS = {
    "mcycle (d=1)": lambda: load_mcycle(return_X_y=True)[0],
    "concrete (d=8)": lambda: load_concrete(return_X_y=True)[0][:400],
    "diabetes (d=10)": lambda: load_diabetes(return_X_y=True, scaled=False)[0],
    "breast cancer (d=30)": lambda: load_breast_cancer(return_X_y=True)[0],
}


@pytest.mark.statistical
@pytest.mark.parametrize("data", list(_REAL_INPUTS))
def test_prior_predictive_correlation_neither_collapses_nor_freezes(data, stat_seed):
    """Prior correlation of ``f`` between random pairs of training inputs.

    With 4,000 (draw, pair) samples, the sample median of the correlation has
    a standard error below 0.02 and the fraction below 0.01 one below 0.006;
    the bounds sit more than 5 standard errors from the values the default
    prior gives (medians 0.5-0.96, fractions under 5%), so a false failure
    has probability below 1e-6. The bounds say what the prior must do on
    real inputs: keep pairs correlated (median above 0.3; an exponential
    length-scale prior with the same scaling gives 0.01 at d=10) without
    making every function constant (median below 0.99), and leave few pairs
    nearly independent.
    """
    rng = np.random.default_rng(100 + stat_seed)
    X = _standardised(_REAL_INPUTS[data]())
    d = X.shape[1]
    adapter = KernelAdapter(default_kernel(d))
    slices = dict(adapter.hyperparameter_slices)
    prior = PriorSet(slices, merged_priors(None, slices, d))
    theta = prior.sample(rng, 4000)
    length_scales = np.exp(theta[:, slices["k2__length_scale"]])
    i, j = rng.integers(0, X.shape[0], (2, 4000))
    keep = i != j
    r2 = np.sum(((X[i] - X[j]) / length_scales) ** 2, axis=1)[keep]
    correlation = np.exp(-0.5 * r2)
    assert 0.3 < np.median(correlation) < 0.99
    assert np.mean(correlation < 0.01) < 0.08


@pytest.mark.statistical
def test_prior_predictive_spread_is_on_the_scale_of_the_data(stat_seed):
    """The prior predictive sd of a standardised target, ``sqrt(s_f^2 + s_n^2)``.

    Under a regressor's defaults (``s_f^2 ~ HalfCauchyVariance(1)``, ``s_n^2
    ~ Gamma(1, 2)``) its median is 1.89 and, by quadrature over the two
    laws, the probability that it exceeds 10 (ten times the data's spread)
    is 0.064, the half-Cauchy's tail that lets a smooth curve's amplitude
    grow with its length scale; below 0.1 it is 2.1e-4. With 20,000 draws
    the sample median's standard error is under 0.02 and the fractions'
    0.0017 and 1e-4: each bound lies more than 7 standard errors from its
    value, so a false failure has probability below 1e-11. A classifier's
    latent signal variance keeps ``Gamma(1, 2)``, whose sd above 10 has
    probability ``exp(-50)``.
    """
    rng = np.random.default_rng(200 + stat_seed)
    adapter = KernelAdapter(default_kernel(3))
    slices = dict(adapter.hyperparameter_slices)
    slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    prior = PriorSet(slices, merged_priors(None, slices, 3, regression=True))
    theta = prior.sample(rng, 20000)
    sd = np.sqrt(
        np.exp(theta[:, slices["k1__constant_value"]][:, 0])
        + np.exp(theta[:, slices["noise_variance"]][:, 0])
    )
    assert 1.5 < np.median(sd) < 2.3
    assert 0.05 < np.mean(sd > 10.0) < 0.08
    assert np.mean(sd < 0.1) < 1e-3
    latent = PriorSet(slices, merged_priors(None, slices, 3))
    signal_sd = np.sqrt(
        np.exp(latent.sample(rng, 20000)[:, slices["k1__constant_value"]])
    )
    assert np.mean(signal_sd > 10.0) == 0.0


def test_default_priors_name_length_scales_and_a_regressors_signal_variance():
    names = ["k1__k1__constant_value", "k1__k2__length_scale", "noise_variance"]
    assert list(default_priors(names, 3)) == ["k1__k2__length_scale"]
    regression = default_priors(names, 3, regression=True)
    assert regression["k1__k1__constant_value"] == HalfCauchyVariance(1.0)
    assert sorted(regression) == ["k1__k1__constant_value", "k1__k2__length_scale"]


# ------------------------------------------------------- quiet by default
def _breast_cancer_strings():
    data = load_breast_cancer()
    return data.data[::4, :6], data.target_names[data.target[::4]]


_DEFAULT_FIT_DATA = {
    "regression": lambda: load_mcycle(return_X_y=True),
    "classification": _breast_cancer_strings,
}
_DEFAULT_ESTIMATORS = [
    SteinGPRegressor,
    SGLDGPRegressor,
    VariationalMCMCRegressor,
    SelectiveSVGP,
    SteinGPClassifier,
    VariationalMCMCClassifier,
    SelectiveSVGPClassifier,
]


# Estimators whose default fit here is known to warn (strict xfail, so a
# fix shows up). VariationalMCMCClassifier left it when its leapfrog bound
# became an integration time: its ARD length scales had mixed too slowly
# for split R-hat 1.01 within max_samples.
_NOT_YET_QUIET = {}


@pytest.mark.parametrize(
    "cls",
    [
        pytest.param(
            cls,
            marks=[pytest.mark.xfail(strict=True, reason=_NOT_YET_QUIET[cls])]
            if cls in _NOT_YET_QUIET
            else [],
        )
        for cls in _DEFAULT_ESTIMATORS
    ],
    ids=lambda c: c.__name__,
)
def test_default_fit_on_real_data_in_natural_units_is_quiet(cls):
    """mcycle (ms, g) for regressors; 143 breast-cancer rows, string labels."""
    estimator = cls(random_state=0)
    kind = "classification" if is_classifier(estimator) else "regression"
    X, y = _DEFAULT_FIT_DATA[kind]()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clone(estimator).fit(X, y)
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == []
