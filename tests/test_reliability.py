"""One test per row of the fault catalogue (RELIABILITY.md), named by the row.

``test_row_NN_*`` checks row NN's promise, parametrised over the estimators
the row concerns (the cheap ones of ``tests/_estimators.py``); where
another file checks a row thoroughly, the row test re-runs scikit-learn's
check for it over every estimator or re-checks the promise directly.
``test_every_row_has_a_test`` fails if a row has neither a test nor a
reason in ``ROWS_WITHOUT_ESTIMATOR``. A promise the library does not keep
is marked ``xfail(strict=True)`` with the gap as its reason, so that the
mark fails once the gap is closed.
"""

import pickle
import re
import sys
import warnings
from inspect import signature
from pathlib import Path

import joblib
import numpy as np
import pytest
from _estimators import CHEAP as ESTIMATORS
from sklearn.base import is_classifier
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import (
    check_classifiers_classes,
    check_classifiers_one_label,
    check_classifiers_regression_target,
    check_complex_data,
    check_dataframe_column_names_consistency,
    check_do_not_raise_errors_in_init_or_set_params,
    check_dtype_object,
    check_estimator_sparse_array,
    check_estimator_sparse_matrix,
    check_estimators_dtypes,
    check_estimators_empty_data_messages,
    check_estimators_nan_inf,
    check_estimators_pickle,
    check_fit1d,
    check_fit2d_1sample,
    check_fit2d_predict1d,
    check_methods_sample_order_invariance,
    check_methods_subset_invariance,
    check_n_features_in_after_fitting,
    check_readonly_memmap_input,
    check_supervised_y_no_nan,
)

import skgp_bayes
from skgp_bayes import _backend, _config, linalg
from skgp_bayes.diagnostics import split_rhat
from skgp_bayes.exceptions import (
    BackendUnavailableError,
    DegenerateFitWarning,
    NotPSDError,
    NumericalWarning,
    SamplerWarning,
)
from skgp_bayes.inference import run_hmc, run_sgld, run_svgd
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.linalg import batched_cg, kernel_operator

ROWS = range(1, 41)
# Rows of the catalogue that concern no built estimator, with the reason.
ROWS_WITHOUT_ESTIMATOR = {}

ALL = list(ESTIMATORS)
CLASSIFIERS = [n for n in ALL if is_classifier(ESTIMATORS[n]())]
REGRESSORS = [n for n in ALL if n not in CLASSIFIERS]
# Regressors with an exact (full kernel matrix) model and noise bounds.
EXACT = [
    n for n in REGRESSORS if "noise_variance_bounds" in ESTIMATORS[n]().get_params()
]
# Regressors whose predict has return_cov.
WITH_COV = [
    n
    for n in REGRESSORS
    if "return_cov" in signature(ESTIMATORS[n]().predict).parameters
]

_RNG = np.random.RandomState(0)
_X = _RNG.uniform(-2, 2, (24, 2))
_Y_REG = np.sin(2 * _X[:, 0]) + 0.1 * _RNG.randn(24)
_Y_CLF = (_X[:, 0] + 0.3 * _RNG.randn(24) > 0).astype(int)


pytestmark = pytest.mark.usefixtures("serial_blas")


def _make(name, **params):
    return ESTIMATORS[name]().set_params(**params)


def _y(name):
    return _Y_CLF if name in CLASSIFIERS else _Y_REG


def _quiet_fit(est, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, **kw)


def _output(est, X):
    return est.predict_proba(X) if is_classifier(est) else est.predict(X)


def _sklearn_check(check, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(name, ESTIMATORS[name]())


# ----------------------------------------------------------- rows 1 to 6
@pytest.mark.parametrize("name", ALL)
def test_row_01_nan_in_X_at_fit_and_predict(name):
    _sklearn_check(check_estimators_nan_inf, name)
    est = _quiet_fit(ESTIMATORS[name](), _X, _y(name))
    X = _X[:3].copy()
    X[1, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        _output(est, X)


@pytest.mark.parametrize("name", ALL)
def test_row_02_inf_in_X(name):
    est = ESTIMATORS[name]()
    X = _X.copy()
    X[2, 1] = -np.inf
    with pytest.raises(ValueError, match="infinity or a value too large"):
        est.fit(X, _y(name))


@pytest.mark.parametrize("name", ALL)
def test_row_03_nan_or_inf_in_y(name):
    _sklearn_check(check_supervised_y_no_nan, name)


@pytest.mark.parametrize("name", ALL)
def test_row_04_object_and_string_X(name):
    _sklearn_check(check_dtype_object, name)


@pytest.mark.parametrize("name", ALL)
def test_row_05_complex_data(name):
    _sklearn_check(check_complex_data, name)


@pytest.mark.parametrize("name", ALL)
def test_row_06_empty_data(name):
    _sklearn_check(check_estimators_empty_data_messages, name)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        ESTIMATORS[name]().fit(_X, [])


# ---------------------------------------------------------- rows 7 to 11
@pytest.mark.parametrize("name", ALL)
def test_row_07_one_sample_sklearn_check(name):
    _sklearn_check(check_fit2d_1sample, name)


@pytest.mark.parametrize("name", REGRESSORS)
def test_row_07_one_sample_regressor_fits_prior_and_warns(name):
    est = ESTIMATORS[name]()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(_X[:1], [3.0])
    assert any(
        issubclass(w.category, DegenerateFitWarning)
        and "fitted on 1 sample" in str(w.message)
        for w in caught
    )
    mean, std = est.predict(_X[:5], return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
    # y scale 1: the prior's spread, not one inflated or shrunk by y
    assert np.all(std > 0.05) and np.all(std < 20)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_row_07_one_sample_classifier_refuses(name):
    with pytest.raises(ValueError, match="got 1 class"):
        ESTIMATORS[name]().fit(_X[:1], [1])


@pytest.mark.parametrize("name", REGRESSORS)
def test_row_08_constant_y(name):
    est = _quiet_fit(ESTIMATORS[name](), _X, np.full(_X.shape[0], 2.0))
    mean, std = est.predict(_X[:6], return_std=True)
    assert np.all(np.isfinite(std)) and np.all(std >= 0)
    # Exact models predict 2 to rounding; a sampled model averages posterior
    # draws of f, each within the predictive spread of an observation of 2
    # (noise included): beyond 4 sds is a draw outside the posterior
    # (probability < 1e-4 per point).
    _, std_y = est.predict(_X[:6], return_std=True, noise=True)
    assert np.all(np.abs(mean - 2.0) <= 1e-6 + 4 * std_y)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_row_09_single_class(name):
    _sklearn_check(check_classifiers_one_label, name)
    with pytest.raises(ValueError, match="requires 2 classes; got 1 class"):
        ESTIMATORS[name]().fit(_X, np.zeros(_X.shape[0], dtype=int))


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_row_10_continuous_y_to_classifier(name):
    _sklearn_check(check_classifiers_regression_target, name)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_row_11_label_types(name):
    _sklearn_check(check_classifiers_classes, name)
    for labels in (np.where(_Y_CLF, "b", "a"), np.where(_Y_CLF, 1, -1)):
        # object arrays of strings are labels; of ints scikit-learn refuses
        kinds = (None, object) if labels.dtype.kind == "U" else (None,)
        for kind in kinds:
            y = np.asarray(labels, dtype=kind)
            est = _quiet_fit(ESTIMATORS[name](), _X, y)
            np.testing.assert_array_equal(est.classes_, np.unique(y))
            assert set(est.predict(_X)) <= set(np.unique(y))


# --------------------------------------------------------- rows 12 to 16
@pytest.mark.parametrize("name", ALL)
def test_row_12_1d_or_3d_X(name):
    _sklearn_check(check_fit1d, name)
    _sklearn_check(check_fit2d_predict1d, name)
    with pytest.raises(ValueError, match="Found array with dim 3"):
        ESTIMATORS[name]().fit(_X[:, :, None], _y(name))


@pytest.mark.parametrize("name", ALL)
def test_row_13_sparse_X(name):
    _sklearn_check(check_estimator_sparse_matrix, name)
    _sklearn_check(check_estimator_sparse_array, name)
    assert ESTIMATORS[name]().__sklearn_tags__().input_tags.sparse is False


@pytest.mark.parametrize("name", ALL)
def test_row_14_dataframe_feature_names(name):
    pytest.importorskip("pandas")
    _sklearn_check(check_dataframe_column_names_consistency, name)


@pytest.mark.parametrize("name", ALL)
def test_row_15_length_mismatch_and_n_features(name):
    _sklearn_check(check_n_features_in_after_fitting, name)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        ESTIMATORS[name]().fit(_X, _y(name)[:-2])


@pytest.mark.parametrize("name", ALL)
def test_row_16_dtypes_and_readonly_inputs(name):
    _sklearn_check(check_estimators_dtypes, name)
    _sklearn_check(check_readonly_memmap_input, name)
    X = np.asfortranarray(_X.astype(np.float32))
    X.flags.writeable = False
    y = _y(name).copy()
    y.flags.writeable = False
    est = _quiet_fit(ESTIMATORS[name](), X, y)
    assert not X.flags.writeable and not y.flags.writeable
    reference = _quiet_fit(ESTIMATORS[name](), _X.astype(np.float32), _y(name))
    np.testing.assert_array_equal(_output(est, _X), _output(reference, _X))


# --------------------------------------------------------- rows 17 to 21
@pytest.mark.parametrize("name", REGRESSORS)
def test_row_17_unscaled_X_centred_at_100(name):
    # inputs are standardised internally or the kernel scales with them: a
    # shift of the inputs moves no prediction beyond float rounding
    shift = 100.0
    est = _quiet_fit(ESTIMATORS[name](), _X, _Y_REG)
    moved = _quiet_fit(ESTIMATORS[name](), _X + shift, _Y_REG)
    np.testing.assert_allclose(
        moved.predict(_X + shift), est.predict(_X), rtol=1e-3, atol=1e-3
    )


# Inputs are standardised overflow-safely before any squared distance.
@pytest.mark.parametrize("name", REGRESSORS)
def test_row_17_huge_X_predicts_like_rescaled(name):
    est = _quiet_fit(ESTIMATORS[name](), _X, _Y_REG)
    huge = _quiet_fit(ESTIMATORS[name](), _X * 1e300, _Y_REG)
    np.testing.assert_allclose(huge.predict(_X * 1e300), est.predict(_X), atol=1e-3)


# Targets near the double range: a variance in y's units (their square)
# leaves it, the predictions (model units, then scaled) do not.
@pytest.mark.parametrize("name", REGRESSORS)
def test_row_17_huge_y_predicts_like_rescaled_without_numpy_warnings(name):
    est = _quiet_fit(ESTIMATORS[name](), _X, _Y_REG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        huge = ESTIMATORS[name]().fit(_X, 1e200 * _Y_REG)
        mean, sd = huge.predict(_X, return_std=True, noise=True)
        lower, upper = huge.predict_interval(_X)
        density = huge.log_predictive_density(_X, 1e200 * _Y_REG)
    numeric = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not numeric, [str(w.message) for w in numeric]
    for values in (mean, sd, lower, upper, density):
        assert np.all(np.isfinite(values))
    np.testing.assert_allclose(mean / 1e200, est.predict(_X), atol=1e-3)
    assert np.all(np.isposinf(np.ravel(huge.noise_variance_)))


@pytest.mark.parametrize("name", REGRESSORS)
def test_row_18_duplicate_rows(name):
    # an exact duplicate must behave like a near-duplicate (the noise lower
    # bound keeps K + noise I positive definite)
    X_dup = np.vstack([_X, _X[:1]])
    X_near = np.vstack([_X, _X[:1] + 1e-15])
    y = np.append(_Y_REG, _Y_REG[0])
    dup = _quiet_fit(ESTIMATORS[name](), X_dup, y)
    near = _quiet_fit(ESTIMATORS[name](), X_near, y)
    np.testing.assert_allclose(dup.predict(_X), near.predict(_X), rtol=1e-6, atol=1e-8)
    assert np.all(np.isfinite(dup.predict(_X)))


_ZERO_OR_NEGATIVE = {
    "n_particles": 0,
    "n_iter": 0,
    "n_chains": 0,
    "n_samples": 0,
    "n_candidates": 0,
    "learning_rate": 0.0,
    "noise_variance": -1.0,
    "step_size_start": 0.0,
    "alpha": -1.0,
}


@pytest.mark.parametrize("name", ALL)
def test_row_19_zero_or_negative_hyperparameters(name):
    _sklearn_check(check_do_not_raise_errors_in_init_or_set_params, name)
    params = ESTIMATORS[name]().get_params()
    bad = {k: v for k, v in _ZERO_OR_NEGATIVE.items() if k in params}
    assert bad
    for param, value in bad.items():
        est = ESTIMATORS[name]().set_params(**{param: value})  # no error here
        with pytest.raises(InvalidParameterError, match=f"'{param}' parameter"):
            est.fit(_X, _y(name))


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(
    "bounds, words", [((1e-5, np.inf), "must be finite"), ((10.0, 0.1), "inverted")]
)
def test_row_20_infinite_or_inverted_bounds(name, bounds, words):
    kernel = ConstantKernel(1.0) * RBF(1.0, length_scale_bounds=bounds)
    with pytest.raises(ValueError, match=f"'k2__length_scale'.*{words}"):
        ESTIMATORS[name]().set_params(kernel=kernel).fit(_X, _y(name))


@pytest.mark.parametrize("name", EXACT)
def test_row_20_infinite_or_inverted_noise_bounds(name):
    for bounds in [(1e-6, np.inf), (1.0, 0.1)]:
        est = ESTIMATORS[name]().set_params(noise_variance_bounds=bounds)
        with pytest.raises(ValueError, match="noise_variance_bounds"):
            est.fit(_X, _Y_REG)


@pytest.mark.parametrize("name", ALL)
def test_row_21_optimum_at_a_bound_warns(name):
    # a straight line with the length scale boxed below 0.5: every estimator
    # pushes it to its upper bound
    rng = np.random.RandomState(1)
    X = rng.uniform(0, 4, (40, 1))
    f = X[:, 0] - 2.0
    noisy = f + 0.3 * rng.randn(40)
    y = (noisy > 0).astype(int) if name in CLASSIFIERS else f + 0.05 * rng.randn(40)
    kernel = ConstantKernel(1.0) * RBF(0.5, length_scale_bounds=(0.01, 0.5))
    est = ESTIMATORS[name]().set_params(kernel=kernel)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    messages = [
        str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)
    ]
    assert any("k2__length_scale" in m and "upper bound" in m for m in messages), (
        messages
    )


# --------------------------------------------------------- rows 22 to 27
def test_row_22_non_pd_kernel_matrix_jitter_then_error():
    # scikit-learn's DotProduct on arange(12) with alpha=0: K has rank 1
    X = np.arange(12.0)[:, None]
    K = DotProduct(sigma_0=0.0)(X)
    with pytest.warns(NumericalWarning, match="jitter"):
        L, jitter = linalg.cholesky(K)
    assert 0 < jitter <= 1e-8 * np.mean(np.diag(K)) * 10**4
    assert np.all(np.isfinite(L))
    with pytest.raises(NotPSDError):
        linalg.cholesky(-np.eye(3))


@pytest.mark.parametrize("name", EXACT)
def test_row_22_non_pd_kernel_in_estimators(name):
    X = np.arange(12.0)[:, None]
    kernel = DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")
    est = ESTIMATORS[name]().set_params(
        kernel=kernel, noise_variance=1e-11, noise_variance_bounds=(1e-12, 1e-10)
    )
    est = _quiet_fit(est, X, X[:, 0])
    assert np.all(np.isfinite(est.predict(X)))


@pytest.mark.parametrize("name", REGRESSORS)
def test_row_23_predictive_variance_non_negative(name):
    est = _quiet_fit(ESTIMATORS[name](), _X, _Y_REG)
    # the training inputs, where the latent variance is smallest
    mean, std = est.predict(_X, return_std=True)
    assert np.all(np.isfinite(std)) and np.all(std >= 0)
    if name in WITH_COV:
        _, cov = est.predict(_X, return_cov=True)
        np.testing.assert_allclose(
            std, np.sqrt(np.clip(np.diag(cov), 0, None)), rtol=1e-5
        )


@pytest.mark.parametrize("name", ALL)
def test_row_24_exploding_initial_hyperparameters_stay_finite(name):
    kernel = ConstantKernel(1e4, (1e-5, 1e5)) * RBF(1e4, (1e-5, 1e5))
    est = _quiet_fit(ESTIMATORS[name]().set_params(kernel=kernel), _X, _y(name))
    assert np.all(np.isfinite(_output(est, _X)))


def _nan_at(call, gradient):
    """``gradient`` with a NaN value and gradient at its ``call``-th call."""
    count = {"n": 0}

    def wrapped(x):
        count["n"] += 1
        value, grad = gradient(x)
        if count["n"] == call:
            return value * np.nan, grad * np.nan
        return value, grad

    return wrapped


def _normal(x):
    return -0.5 * np.sum(x**2, axis=-1), -x


def _nan_after(calls, gradient):
    """``gradient`` that returns NaN from its ``calls + 1``-th call on."""
    count = {"n": 0}

    def wrapped(x):
        count["n"] += 1
        value, grad = gradient(x)
        if count["n"] > calls:
            return value * np.nan, grad * np.nan
        return value, grad

    return wrapped


def test_row_25_nan_gradient_svgd_rejects_halves_warns_and_aborts():
    x0 = np.linspace(-1, 1, 6)[:, None]
    with pytest.warns(SamplerWarning, match="rejected"):
        result = run_svgd(_nan_at(3, _normal), x0, max_iter=20, learning_rate=0.1)
    assert np.all(np.isfinite(result.particles)) and result.n_iter == 20
    # the rejected step halved the learning rate of every later step
    rates = result.history["learning_rate"]
    assert rates[0] == 0.1 and rates[-1] == 0.05
    with pytest.raises(FloatingPointError, match="consecutive"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)
            run_svgd(_nan_after(1, _normal), x0, max_iter=50, learning_rate=0.1)


def test_row_25_nan_gradient_hmc_counts_divergence():
    # NaN at every call from the 60th: the sampling phase diverges throughout
    result = run_hmc(
        _nan_after(60, _normal), np.zeros(2), n_warmup=5, n_samples=20, random_state=0
    )
    assert result.n_divergent >= 1
    assert np.all(np.isfinite(result.samples))


def test_row_25_nan_gradient_sgld_rejects_warns_and_aborts():
    with pytest.warns(SamplerWarning, match="rejected"):
        result = run_sgld(
            _nan_at(3, _normal),
            np.zeros(2),
            n_iter=10,
            a=0.01,
            rng=np.random.default_rng(0),
        )
    assert result.n_rejected == 1 and np.all(np.isfinite(result.samples))
    with pytest.raises(FloatingPointError, match="consecutive"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)
            run_sgld(
                _nan_after(3, _normal),
                np.zeros(2),
                n_iter=50,
                a=0.01,
                rng=np.random.default_rng(0),
            )


def test_row_26_cg_residual_reported_and_failures_raise():
    A = np.diag(np.logspace(0, 8, 30))
    result = batched_cg(lambda V: A @ V, np.ones(30), max_iter=3, warn=False)
    assert result.residual > 1e-8 and not result.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zero = batched_cg(lambda V: A @ V, np.zeros(30))
    np.testing.assert_array_equal(zero.x, 0.0)
    with pytest.raises(FloatingPointError):
        batched_cg(lambda V: V * np.nan, np.ones(30))
    est = _quiet_fit(
        ESTIMATORS["SteinGPRegressor"]().set_params(solver="cg"), _X, _Y_REG
    )
    assert np.isfinite(est.diagnostics_["cg_max_residual"])


def test_row_26_cg_nonconvergence_warns_numerical_warning():
    # SolverConvergenceWarning is both: a NumericalWarning as the row asks,
    # and the ConvergenceWarning that scikit-learn users filter on
    A = np.diag(np.logspace(0, 8, 30))
    for category in (NumericalWarning, ConvergenceWarning):
        with pytest.warns(category, match="relative residual"):
            batched_cg(lambda V: A @ V, np.ones(30), max_iter=3)


@pytest.mark.parametrize("name", ["SteinGPRegressor", "SGLDGPRegressor"])
def test_row_27_stochastic_objective_same_seed_same_trace(name):
    # the stochastic (CG and probe) gradients draw from the fit's seed
    params = {"solver": "cg"}
    first = _quiet_fit(_make(name, **params), _X, _Y_REG)
    second = _quiet_fit(_make(name, **params), _X, _Y_REG)
    trace = "history_" if name == "SteinGPRegressor" else "chains_"
    a, b = getattr(first, trace), getattr(second, trace)
    if isinstance(a, dict):
        a, b = a["log_density"] + a["max_move"], b["log_density"] + b["max_move"]
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# --------------------------------------------------------- rows 28 to 31
STEIN = ["SteinGPRegressor", "SteinGPClassifier"]


@pytest.mark.parametrize("name", STEIN)
def test_row_28_particle_collapse(name):
    one = _quiet_fit(_make(name, n_particles=1), _X, _y(name))
    assert np.all(np.isfinite(_output(one, _X)))
    # identical particles: the bandwidth floor keeps the updates finite
    x0 = np.zeros((5, 2))
    result = run_svgd(_normal, x0, max_iter=5, learning_rate=0.1)
    assert np.all(np.isfinite(result.particles))
    with pytest.warns(SamplerWarning, match="collapsed"):
        run_svgd(
            lambda x: (np.zeros(len(x)), np.zeros_like(x)),
            x0,
            max_iter=3,
            learning_rate=0.1,
        )


@pytest.mark.parametrize("name", STEIN)
def test_row_29_svgd_divergence_warns(name):
    est = _make(name, learning_rate=1e3, max_iter=15, tol=0.0)
    with pytest.warns(SamplerWarning, match="learning rate"):
        est.fit(_X, _y(name))
    assert np.all(np.isfinite(_output(est, _X)))
    assert est.n_iter_ > 0


HMC = ["VariationalMCMCRegressor", "VariationalMCMCClassifier"]


@pytest.mark.parametrize("name", HMC)
def test_row_30_hmc_divergences_are_counted_and_reported(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = _make(name, target_accept=0.999, n_warmup=0).fit(_X, _y(name))
    messages = [str(w.message) for w in caught if w.category is SamplerWarning]
    if est.n_divergences_:
        assert any(
            f"{est.n_divergences_} divergent" in m and "target_accept" in m
            for m in messages
        )
    # statistical section 7: a step of 10 without adaptation always diverges
    # (on a target of sd 0.1 even one leapfrog step of 10 explodes)
    result = run_hmc(
        lambda x: (-50.0 * np.sum(x**2), -100.0 * x),
        np.full(2, 0.05),
        n_warmup=0,
        n_samples=30,
        step_size=10.0,
        adapt_step_size=False,
        random_state=0,
    )
    assert np.all(result.divergent)


@pytest.mark.parametrize("name", HMC)
def test_row_31_poor_mixing_warns(name):
    # 5 draws per chain have an effective sample size far below 100 a chain
    with pytest.warns(SamplerWarning, match="[Ee]ffective sample size"):
        _make(name, n_chains=2).fit(_X, _y(name))


def test_row_31_few_draws_skip_the_diagnostics_with_a_notice():
    est = _quiet_fit(_make("SGLDGPRegressor", n_chains=2), _X, _Y_REG)
    assert np.all(np.isnan(est.rhat_))
    assert any("not computed" in note for note in est.diagnostics_["notes"])


def test_row_31_bimodal_chains_have_large_rhat():
    rng = np.random.default_rng(0)
    chains = np.stack([rng.normal(-3, 1, 400), rng.normal(3, 1, 400)])[:, :, None]
    assert split_rhat(chains) > 1.01


# --------------------------------------------------------- rows 32 to 35
def test_row_32_dense_memory_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 1000)
    with pytest.raises(MemoryError, match="sparse"):
        ESTIMATORS["SteinGPRegressor"]().fit(_X, _Y_REG)
    # SGLD's solves fall back to a matrix-free kernel product, O(n) memory
    adapter = KernelAdapter(RBF())
    _, stored = kernel_operator(adapter, np.zeros(1), _X, 0.1, max_bytes=1000)
    assert not stored
    # ...unless the user insists on storing K: then refused before allocating
    with pytest.raises(MemoryError, match="storage='matrix_free'"):
        ESTIMATORS["SGLDGPRegressor"]().set_params(storage="dense").fit(_X, _Y_REG)


@pytest.mark.parametrize("name", WITH_COV)
def test_row_33_return_std_and_return_cov_together_raise(name):
    est = _quiet_fit(ESTIMATORS[name](), _X, _Y_REG)
    with pytest.raises(RuntimeError, match="return_std or return_cov"):
        est.predict(_X, return_std=True, return_cov=True)


# The loop each estimator's fit runs, interrupted at its first call.
_ENGINE = {
    "SteinGPRegressor": "skgp_bayes._stein_base.run_svgd",
    "SteinGPClassifier": "skgp_bayes._stein_base.run_svgd",
    "SGLDGPRegressor": "skgp_bayes._sgld_chains._run_chain",
    "VariationalMCMCRegressor": "skgp_bayes.variational_mcmc._base.run_hmc_chains",
    "VariationalMCMCClassifier": "skgp_bayes.variational_mcmc._base.run_hmc_chains",
    "SelectiveSVGP": "skgp_bayes.selective._phases.maximise_bound",
    "SelectiveSVGPClassifier": "skgp_bayes.selective.classifier.fit_shared_phases",
}


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("name", ALL)
def test_row_34_keyboard_interrupt_leaves_earlier_state(name, monkeypatch):
    est = _quiet_fit(ESTIMATORS[name](), _X, _y(name))
    before = _output(est, _X)
    monkeypatch.setattr(_ENGINE[name], _interrupt)
    with pytest.raises(KeyboardInterrupt):
        est.fit(_X[:, :1], _y(name))
    np.testing.assert_array_equal(_output(est, _X), before)
    assert est.n_features_in_ == 2
    fresh = ESTIMATORS[name]()
    with pytest.raises(KeyboardInterrupt):
        fresh.fit(_X, _y(name))
    with pytest.raises(NotFittedError):
        _output(fresh, _X)


WARM = [n for n in ALL if "warm_start" in ESTIMATORS[n]().get_params()]


@pytest.mark.parametrize("name", WARM)
def test_row_35_warm_start_continues_and_checks_shape(name):
    budget = "n_iter" if "n_iter" in ESTIMATORS[name]().get_params() else "max_iter"
    params = {budget: 10}
    if budget == "max_iter":
        params["tol"] = 0.0
    else:
        # SGLD's decaying step spans n_iter, and its MALA warm-up (exact
        # gradients) is min(200, n_iter // 2) unless burn_in is given: with
        # a constant step and a given warm-up the chain is the same however
        # the iterations are split
        params.update(step_size_start=0.05, step_size_end=0.05, burn_in=5)
    whole = _quiet_fit(_make(name, **{**params, budget: 20}), _X, _y(name))
    est = _quiet_fit(_make(name, **params), _X, _y(name))
    est = _quiet_fit(est.set_params(warm_start=True, **{budget: 10}), _X, _y(name))
    if budget == "n_iter":
        np.testing.assert_array_equal(est.chains_, whole.chains_)
    else:
        np.testing.assert_array_equal(est.particles_, whole.particles_)
    with pytest.raises(ValueError):
        est.fit(_X[:, :1], _y(name))


# --------------------------------------------------------- rows 36 to 40
@pytest.mark.parametrize("name", ALL)
def test_row_36_pickle_joblib_memmap_round_trip(name, tmp_path):
    _sklearn_check(
        lambda n, e: check_estimators_pickle(n, e, readonly_memmap=True), name
    )
    est = _quiet_fit(ESTIMATORS[name](), _X, _y(name))
    before = _output(est, _X)
    np.testing.assert_array_equal(_output(pickle.loads(pickle.dumps(est)), _X), before)
    path = tmp_path / "est.joblib"
    joblib.dump(est, path)
    np.testing.assert_array_equal(_output(joblib.load(path, mmap_mode="r"), _X), before)
    state = est.__getstate__()
    assert state["_skgp_version"] == skgp_bayes.__version__
    state["_skgp_version"] = "0.0.0"
    with pytest.warns(UserWarning, match="0.0.0"):
        type(est).__new__(type(est)).__setstate__(state)


JOBS = [n for n in ALL if "n_jobs" in ESTIMATORS[n]().get_params()]


@pytest.mark.parametrize("name", ALL)
def test_row_37_determinism_across_runs_and_n_jobs(name):
    first = _quiet_fit(ESTIMATORS[name](), _X, _y(name))
    second = _quiet_fit(ESTIMATORS[name](), _X, _y(name))
    np.testing.assert_array_equal(_output(first, _X), _output(second, _X))
    if name in JOBS:
        params = {"n_chains": 2} if "n_chains" in first.get_params() else {}
        one = _quiet_fit(_make(name, n_jobs=1, **params), _X, _y(name))
        # joblib's default backend, as a user gets it. (SGLD's chains on the
        # threading backend hung once in a full run under Prescott, waiting
        # on a worker thread, and did not again in 300 fits: unexplained, so
        # this row is checked on the path users take by default.)
        two = _quiet_fit(_make(name, n_jobs=2, **params), _X, _y(name))
        np.testing.assert_array_equal(_output(one, _X), _output(two, _X))


@pytest.mark.parametrize("name", ALL)
def test_row_38_predictions_deterministic_given_the_fit(name):
    _sklearn_check(check_methods_sample_order_invariance, name)
    _sklearn_check(check_methods_subset_invariance, name)
    est = _quiet_fit(ESTIMATORS[name](), _X, _y(name))
    np.testing.assert_array_equal(_output(est, _X), _output(est, _X))
    if hasattr(est, "sample_y"):
        np.testing.assert_array_equal(est.sample_y(_X[:4], 3), est.sample_y(_X[:4], 3))


@pytest.mark.parametrize("name", CLASSIFIERS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_row_39_predict_proba_consistency(name, seed):
    est = _quiet_fit(_make(name, random_state=seed), _X, _Y_CLF)
    proba = est.predict_proba(_X)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(
        est.predict(_X), est.classes_[np.argmax(proba, axis=1)]
    )


BACKENDS = [n for n in ALL if "backend" in ESTIMATORS[n]().get_params()]


@pytest.mark.parametrize("name", BACKENDS)
def test_row_40_missing_cupy_gives_backend_error(name, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    est = _make(name, backend="cupy")
    with pytest.raises(BackendUnavailableError, match="CuPy"):
        est.fit(_X, _Y_REG)
    assert _backend.get_array_module("numpy") is np


# ------------------------------------------------------------- the index
def test_every_row_has_a_test():
    tested = {
        int(m.group(1))
        for key in globals()
        if (m := re.match(r"test_row_(\d\d)_", key))
    }
    missing = [r for r in ROWS if r not in tested and r not in ROWS_WITHOUT_ESTIMATOR]
    assert not missing, f"RELIABILITY rows without a test_row_NN_* test: {missing}"
    both = sorted(tested & set(ROWS_WITHOUT_ESTIMATOR))
    assert not both, f"rows both tested and listed as concerning no estimator: {both}"


def _catalogue():
    """RELIABILITY.md in a ``shared`` folder beside or above the checkout."""
    root = Path(skgp_bayes.__file__).resolve().parents[1]
    for folder in root.parents:
        if (folder / "shared" / "RELIABILITY.md").is_file():
            return folder / "shared" / "RELIABILITY.md"
    return None


def test_row_index_reads_the_catalogue():
    # the catalogue still has rows 1..40 (a new row needs a test here)
    path = _catalogue()
    if path is None:
        pytest.skip("no shared/RELIABILITY.md above this checkout")
    rows = {int(n) for n in re.findall(r"^\| (\d+) \|", path.read_text(), flags=re.M)}
    assert rows == set(ROWS)
