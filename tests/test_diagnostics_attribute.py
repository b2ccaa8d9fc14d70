"""Every estimator keeps its fit's diagnostics in one ``diagnostics_`` dict."""

import warnings

import numpy as np
import pytest

from skgp_bayes import (
    SelectiveSVGP,
    SelectiveSVGPClassifier,
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)

FAST = {
    SteinGPRegressor: dict(n_particles=3, max_iter=10),
    SteinGPClassifier: dict(n_particles=3, max_iter=10),
    SGLDGPRegressor: dict(n_iter=60, n_chains=1),
    VariationalMCMCClassifier: dict(
        n_inducing=5,
        n_chains=1,
        n_warmup=20,
        n_samples=20,
        max_samples=20,
        max_leapfrog=5,
    ),
    VariationalMCMCRegressor: dict(
        n_inducing=5,
        n_chains=1,
        n_warmup=20,
        n_samples=20,
        max_samples=20,
        max_leapfrog=5,
    ),
    SelectiveSVGP: dict(n_candidates=10, n_pre_iter=5, n_select_iter=5, n_post_iter=5),
    SelectiveSVGPClassifier: dict(
        n_candidates=10, n_pre_iter=5, n_select_iter=5, n_post_iter=5
    ),
}


@pytest.mark.parametrize("cls", list(FAST), ids=lambda c: c.__name__)
def test_diagnostics_are_a_finite_dict(cls):
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (30, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
    if "Classifier" in cls.__name__:
        y = (y > 0).astype(int)
    est = cls(random_state=0, **FAST[cls])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs warn about convergence
        est.fit(X, y)
    assert isinstance(est.diagnostics_, dict) and est.diagnostics_
    numbers = [v for v in est.diagnostics_.values() if isinstance(v, float | int)]
    assert numbers, est.diagnostics_
    assert all(np.isfinite(v) or np.isnan(v) for v in numbers)
