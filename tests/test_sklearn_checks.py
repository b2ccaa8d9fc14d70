"""scikit-learn's estimator checks, with no expected failures."""

import pytest
from sklearn.utils.estimator_checks import (
    check_dataframe_column_names_consistency,
    parametrize_with_checks,
)

from skgp_bayes import SteinGPRegressor


def _instances():
    # small settings keep each check under a second; determinism is promised
    return [SteinGPRegressor(n_particles=3, max_iter=25, random_state=0)]


@parametrize_with_checks(_instances(), expected_failed_checks=lambda est: {})
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", _instances(), ids=lambda e: type(e).__name__)
def test_dataframe_column_names_consistency(estimator):
    pytest.importorskip("pandas")
    check_dataframe_column_names_consistency(type(estimator).__name__, estimator)
