"""One fitted-attribute contract over every estimator.

The table in ``doc/architecture.rst`` states it; each test below checks one
row of it on every estimator it names, fitted once in its cheapest
configuration (``tests/_estimators.py``). The checks are identities between
attributes (shapes, equal arrays, a mean), not statistical ones, so each
holds for any fit.
"""

import warnings

import numpy as np
import pytest
from _estimators import CHEAP
from sklearn.gaussian_process.kernels import Kernel

from skgp_bayes import SteinGPClassifier, VariationalMCMCRegressor
from skgp_bayes.diagnostics import split_rhat

CLASSIFIERS = [n for n in CHEAP if "Classifier" in n]
# Estimators whose predictions average over several posterior draws.
WITH_DRAWS = [n for n in CHEAP if not n.startswith("Selective")]
STEIN = ["SteinGPRegressor", "SteinGPClassifier"]
SAMPLERS = ["SGLDGPRegressor", "VariationalMCMCRegressor", "VariationalMCMCClassifier"]
VMCMC = ["VariationalMCMCRegressor", "VariationalMCMCClassifier"]

_RNG = np.random.RandomState(0)
_X = _RNG.uniform(-3, 3, (30, 2))
_Y = np.sin(_X[:, 0]) + 0.2 * _RNG.randn(30)
_LABELS = (_X[:, 0] > 0).astype(int)


def _fit(est, y=None):
    y = _Y if y is None else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cheap fits do not converge
        return est.fit(_X, y)


@pytest.fixture(scope="module")
def fitted():
    """Every estimator fitted once, regressors on _Y, classifiers on _LABELS."""
    return {
        n: _fit(make(), _LABELS if n in CLASSIFIERS else _Y)
        for n, make in CHEAP.items()
    }


def _first_read(est, name):
    """``getattr(est, name)`` with the FutureWarning of a first read silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return getattr(est, name)


@pytest.mark.parametrize("name", list(CHEAP))
def test_param_names_are_distinct_strings(fitted, name):
    names = fitted[name].param_names_
    assert isinstance(names, list) and names
    assert all(isinstance(n, str) for n in names)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("name", list(CHEAP))
def test_kernel_is_one_fitted_kernel(fitted, name):
    est = fitted[name]
    assert isinstance(est.kernel_, Kernel)
    assert est.kernel_.theta.size and np.all(np.isfinite(est.kernel_.theta))


@pytest.mark.parametrize("name", WITH_DRAWS)
def test_kernels_go_with_the_draws(fitted, name):
    est = fitted[name]
    assert len(est.kernels_) == est.draws_.shape[0]
    n_theta = est.kernels_[0].theta.size
    # the draws start with the kernel's log hyperparameters
    np.testing.assert_allclose(
        [k.theta for k in est.kernels_], est.draws_[:, :n_theta], rtol=1e-12
    )


@pytest.mark.parametrize("name", STEIN + ["SGLDGPRegressor"])
def test_kernel_is_the_mean_of_the_draws_in_log_coordinates(fitted, name):
    est = fitted[name]
    n_theta = est.kernel_.theta.size
    # SGLD predicts from a subset of its kept samples; the summary uses all
    draws = (
        est.samples_.reshape(-1, len(est.param_names_))
        if "SGLD" in name
        else (est.particles_)
    )
    np.testing.assert_allclose(
        est.kernel_.theta, draws[:, :n_theta].mean(axis=0), rtol=1e-12
    )


@pytest.mark.parametrize("name", STEIN)
def test_sparse_stein_kernel_is_the_mean_of_the_particles(name):
    est = CHEAP[name]().set_params(inducing_points=_X[:5])
    est = _fit(est, _LABELS if name in CLASSIFIERS else _Y)
    n_theta = est.kernel_.theta.size
    np.testing.assert_allclose(
        est.kernel_.theta, est.particles_[:, :n_theta].mean(axis=0), rtol=1e-12
    )
    assert est.particles_.shape == (est.n_particles, len(est.param_names_))


def test_per_class_kernels_give_one_summary_kernel_per_class():
    labels = np.digitize(_X[:, 0], [-1.0, 1.0])
    est = CHEAP["SteinGPClassifier"]().set_params(shared_kernel=False)
    est = _fit(est, labels)
    assert isinstance(est, SteinGPClassifier) and len(est.kernel_) == 3
    for c, summary in enumerate(est.kernel_):
        thetas = [per_class[c].theta for per_class in est.kernels_]
        np.testing.assert_allclose(summary.theta, np.mean(thetas, axis=0))


@pytest.mark.parametrize("name", list(CHEAP))
def test_diagnostics_hold_the_fit_time(fitted, name):
    est = fitted[name]
    seconds = est.diagnostics_["fit_time"]
    assert isinstance(seconds, float) and seconds > 0.0
    assert est.fit_time_["total"] == seconds


@pytest.mark.parametrize("name", STEIN)
def test_particles_are_one_row_per_particle(fitted, name):
    est = fitted[name]
    assert est.particles_.shape == (est.n_particles, len(est.param_names_))
    assert est.draws_ is est.particles_


@pytest.mark.parametrize("name", SAMPLERS)
def test_samples_are_chains_by_draws_by_params(fitted, name):
    est = fitted[name]
    samples = _first_read(est, "samples_")
    assert samples.ndim == 3
    assert samples.shape[0] == est.n_chains
    assert samples.shape[2] == len(est.param_names_)
    assert est.rhat_.shape == est.ess_.shape == (len(est.param_names_),)


@pytest.mark.parametrize("name", list(CHEAP))
def test_contract_attributes_are_absent_before_fit(name):
    est = CHEAP[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unfitted read must not warn
        for attr in ("param_names_", "kernel_", "kernels_", "diagnostics_"):
            assert not hasattr(est, attr)
        for attr in ("particles_", "samples_", "fit_time_"):
            assert not hasattr(est, attr)


@pytest.fixture(scope="module")
def two_chains():
    """A variational MCMC fit whose two chains are told apart by R-hat."""
    est = CHEAP["VariationalMCMCRegressor"]().set_params(
        n_chains=2, n_samples=8, max_samples=8
    )
    return _fit(est)


def test_vmcmc_samples_split_the_pooled_draws_by_chain(two_chains):
    est = two_chains
    samples = _first_read(est, "samples_")
    n_kept = est.draws_.shape[0] // 2
    assert samples.shape == (2, n_kept, len(est.param_names_))
    np.testing.assert_array_equal(samples[0], est.draws_[:n_kept])
    np.testing.assert_array_equal(samples[1], est.draws_[n_kept:])
    # rhat_ was computed from the chains: samples_ must be that layout
    # (a transposed split would give other values)
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = split_rhat(samples, rank_normalized=True)
    np.testing.assert_allclose(rhat, est.rhat_, rtol=1e-12, equal_nan=True)


def test_vmcmc_samples_announce_the_new_shape_once(two_chains):
    est = VariationalMCMCRegressor(**two_chains.get_params())
    est = _fit(est)
    with pytest.warns(FutureWarning, match=r"\(n_chains, n_kept, n_params\).*draws_"):
        first = est.samples_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = est.samples_  # once per estimator
        pooled = est.draws_  # the pooled name never warns
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first.reshape(pooled.shape), pooled)


@pytest.mark.parametrize("name", VMCMC)
def test_vmcmc_ordinary_use_does_not_read_samples(name):
    y = _LABELS if name in CLASSIFIERS else _Y
    est = type(CHEAP[name]())(random_state=0)  # default configuration
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ordinary data: no warning at all
        est.fit(_X, y)
        est.predict(_X)
        est.to_inference_data()
        dict(est.diagnostics_)
    assert "_samples_shape_announced" not in vars(est)
