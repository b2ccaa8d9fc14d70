"""scikit-learn's estimator checks, with no expected failures."""

import pytest
from _estimators import ESTIMATOR_CLASSES
from sklearn.utils.estimator_checks import (
    check_dataframe_column_names_consistency,
    check_methods_sample_order_invariance,
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

# One short chain and a short Gaussian warm-up: the checks test the API,
# not the sampler, and each check fits up to a few times.
_VMCMC_SMALL = dict(
    n_inducing=4,
    n_chains=1,
    n_warmup=10,
    n_samples=6,
    max_samples=6,
    max_leapfrog=2,
    svgp_max_iter=15,
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
        # A rank-100 CG preconditioner and 16 probes (the defaults) would
        # make each gradient cost as much as a dense solve at check sizes.
        SGLDGPRegressor(
            n_iter=10,
            map_subset=30,
            n_probes=4,
            cg_preconditioner_rank=10,
            n_predict_draws=5,
            random_state=0,
        ),
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


DEFAULTS = ESTIMATOR_CLASSES


@pytest.mark.slow
@pytest.mark.parametrize("cls", DEFAULTS, ids=lambda c: c.__name__)
def test_default_configuration_passes_a_fitting_check(cls):
    # The checks above run short configurations; this one runs the defaults
    # (full-length chains, SVGD runs and warm-ups) once. The check fits once
    # on 20 points x 3 features, the smallest fitting check, and then asks
    # every prediction method (predict, predict_proba, decision_function,
    # predict_log_proba) for the same answers on reordered queries, so the
    # defaults' whole fit-and-predict path runs. Measured at 79 s for all
    # seven on 2 shared cores; the fit dominates (4 HMC chains of 1000
    # iterations for each variational MCMC estimator, about 30 s).
    check_methods_sample_order_invariance(cls.__name__, cls(random_state=0))
