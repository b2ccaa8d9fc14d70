"""scikit-learn's estimator checks, with no expected failures."""

import pytest
from sklearn.utils.estimator_checks import (
    check_dataframe_column_names_consistency,
    parametrize_with_checks,
)

from skgp_bayes import (
    SelectiveSVGP,
    SelectiveSVGPClassifier,
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)

_VMCMC_SMALL = dict(
    n_inducing=5,
    n_chains=2,
    n_warmup=20,
    n_samples=10,
    max_leapfrog=3,
    svgp_max_iter=30,
    random_state=0,
)


def _instances():
    # small settings keep each check under a second; determinism is promised
    return [
        SteinGPRegressor(n_particles=3, max_iter=25, random_state=0),
        SteinGPRegressor(n_particles=3, max_iter=25, solver="cg", random_state=0),
        SteinGPRegressor(
            n_particles=3,
            max_iter=30,
            inducing_points=10,
            batch_size=32,
            random_state=0,
        ),
        SGLDGPRegressor(n_iter=20, map_subset=50, n_predict_draws=5, random_state=0),
        SteinGPClassifier(n_particles=3, max_iter=25, random_state=0),
        SteinGPClassifier(
            n_particles=3,
            max_iter=15,
            inducing_points=6,
            batch_size=16,
            random_state=0,
        ),
        VariationalMCMCClassifier(**_VMCMC_SMALL),
        VariationalMCMCRegressor(**_VMCMC_SMALL),
        SelectiveSVGP(
            n_candidates=8,
            n_pre_iter=10,
            n_select_iter=10,
            n_post_iter=10,
            random_state=0,
        ),
        SelectiveSVGPClassifier(
            n_candidates=8,
            n_pre_iter=20,
            n_select_iter=10,
            n_post_iter=20,
            random_state=0,
        ),
    ]


@parametrize_with_checks(_instances(), expected_failed_checks=lambda est: {})
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", _instances(), ids=lambda e: type(e).__name__)
def test_dataframe_column_names_consistency(estimator):
    pytest.importorskip("pandas")
    check_dataframe_column_names_consistency(type(estimator).__name__, estimator)
