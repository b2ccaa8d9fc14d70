"""The estimators inside the tools they are combined with.

Conformal intervals (MAPIE), probability calibration, stacking, target
transforms, permutation importance, cross-validation with probabilistic
scorers, and a pandas frame through a ``ColumnTransformer``.
"""

import warnings

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.ensemble import StackingClassifier, StackingRegressor
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skgp_bayes import SteinGPClassifier, SteinGPRegressor


def _regression(n, seed=0, noise_features=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 1 + noise_features))
    y = np.sin(X[:, 0]) + 0.2 * rng.randn(n)
    return X, y


def _classification(n, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    # Bayes-optimal accuracy about 0.9.
    p = 1 / (1 + np.exp(-6 * (X[:, 0] + 0.5 * X[:, 1])))
    return X, (rng.uniform(size=n) < p).astype(int)


def _small_regressor():
    return SteinGPRegressor(n_particles=4, random_state=0)


def _small_classifier():
    return SteinGPClassifier(n_particles=4, random_state=0)


# ------------------------------------------------------------------ MAPIE
@pytest.mark.parametrize("score", ["absolute", "std"])
def test_split_conformal_intervals_reach_their_level(score):
    mapie = pytest.importorskip("mapie")
    from mapie.regression import SplitConformalRegressor

    X, y = _regression(700, seed=1)
    model = _small_regressor().fit(X[:100], y[:100])
    if score == "std":
        from mapie.conformity_scores import StdConformityScore

        # The predictive sd of a noisy y, not of the latent function.
        conformity, predict_params = StdConformityScore(), {"noise": True}
    else:
        conformity, predict_params = "absolute", {}
    rest_X, rest_y = X[100:], y[100:]
    rng = np.random.RandomState(0)
    coverage, widths = [], []
    for _ in range(10):
        order = rng.permutation(600)
        cal, test = order[:300], order[300:]
        conformal = SplitConformalRegressor(
            model, confidence_level=0.9, conformity_score=conformity, prefit=True
        )
        conformal.conformalize(rest_X[cal], rest_y[cal], predict_params=predict_params)
        _, bounds = conformal.predict_interval(rest_X[test])
        lower, upper = bounds[:, 0, 0], bounds[:, 1, 0]
        coverage.append(np.mean((lower <= rest_y[test]) & (rest_y[test] <= upper)))
        widths.append(upper - lower)
    # Split conformal guarantees E[coverage] >= 0.9 over calibration sets.
    # One split's coverage has sd sqrt(.09/300 + .09/301) = 0.0245; the mean
    # of ten overlapping splits has at most that sd, so 3.2 sds below 0.9
    # fails with probability under 1e-3 when the intervals are right.
    assert np.mean(coverage) >= 0.9 - 3.2 * 0.0245
    assert np.mean(coverage) <= 0.9 + 3.2 * 0.0245  # not trivially wide
    width = widths[-1]
    if score == "std":
        # Each interval is the mean plus or minus one calibrated multiple of
        # the predictive sd of a noisy y (MAPIE passes noise=True through).
        _, sd = model.predict(rest_X[test], return_std=True, noise=True)
        ratio = width / sd
    else:
        ratio = width
    assert np.ptp(ratio) < 1e-8 * np.mean(ratio)
    assert mapie.__version__


# -------------------------------------------------------- probabilities
def test_calibrated_classifier_cv_wraps_the_stein_classifier():
    X, y = _classification(190)
    calibrated = CalibratedClassifierCV(_small_classifier(), cv=3, method="sigmoid")
    proba = calibrated.fit(X[:90], y[:90]).predict_proba(X[90:])
    assert proba.shape == (100, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(calibrated.predict(X[90:]) == y[90:]) > 0.75  # 5 sds


def test_cross_validate_with_probabilistic_scorers():
    X, y = _classification(90, seed=2)
    scores = cross_validate(
        _small_classifier(),
        X,
        y,
        cv=3,
        scoring=["neg_log_loss", "neg_brier_score", "roc_auc"],
        error_score="raise",
    )
    assert np.all(scores["test_neg_log_loss"] > -0.69)  # better than a coin
    assert np.all(scores["test_roc_auc"] > 0.75)


# -------------------------------------------------------------- stacking
def test_stacking_regressor_uses_the_gp_as_a_base_learner():
    X, y = _regression(120, seed=3)
    stack = StackingRegressor(
        [("gp", _small_regressor()), ("ridge", Ridge())], final_estimator=Ridge(), cv=3
    )
    stack.fit(X[:80], y[:80])
    # A straight line cannot follow sin(x); the stack must lean on the GP.
    gp_weight, ridge_weight = stack.final_estimator_.coef_
    assert gp_weight > 2 * abs(ridge_weight)
    assert stack.score(X[80:], y[80:]) > 0.5


def test_stacking_classifier_with_string_labels():
    X, y = _classification(190, seed=4)
    labels = np.array(["no", "yes"])[y]
    stack = StackingClassifier(
        [("gp", _small_classifier()), ("logit", LogisticRegression())], cv=3
    )
    stack.fit(X[:90], labels[:90])
    assert set(stack.predict(X[90:])) <= {"no", "yes"}
    # Accuracy near 0.9 on 100 points has sd 0.03: 0.75 is 5 sds below.
    assert stack.score(X[90:], labels[90:]) > 0.75


# ---------------------------------------------------- transforms, inspection
def test_transformed_target_regressor_on_positive_targets():
    X, y = _regression(100, seed=5)
    positive = np.exp(y)
    model = TransformedTargetRegressor(
        regressor=_small_regressor(), func=np.log, inverse_func=np.exp
    )
    model.fit(X[:70], positive[:70])
    prediction = model.predict(X[70:])
    assert np.all(prediction > 0)
    # On the log scale the model is the plain GP fit to log y = y.
    direct = _small_regressor().fit(X[:70], y[:70]).predict(X[70:])
    np.testing.assert_allclose(np.log(prediction), direct, rtol=1e-10)


def test_permutation_importance_finds_the_relevant_input():
    X, y = _regression(120, seed=6, noise_features=1)
    model = _small_regressor().fit(X[:80], y[:80])
    result = permutation_importance(model, X[80:], y[80:], n_repeats=5, random_state=0)
    relevant, irrelevant = result.importances_mean
    assert relevant > 0.3 and relevant > 10 * abs(irrelevant)


# ----------------------------------------------------------------- pandas
def test_column_transformer_over_a_pandas_frame_with_categories():
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(7)
    n = 120
    frame = pd.DataFrame(
        {
            "dose": rng.uniform(0, 10, n),
            "site": rng.choice(["north", "south", "east"], n),
        }
    )
    offsets = frame["site"].map({"north": 0.0, "south": 2.0, "east": -2.0})
    target = np.sin(frame["dose"]) + offsets + 0.1 * rng.randn(n)
    prepare = ColumnTransformer(
        [
            ("numeric", StandardScaler(), ["dose"]),
            ("site", OneHotEncoder(sparse_output=False), ["site"]),
        ]
    )
    regressor = make_pipeline(prepare, _small_regressor())
    regressor.fit(frame[:90], target[:90])
    assert regressor.score(frame[90:], target[90:]) > 0.8

    label = np.where(target > offsets, "high", "low")
    classifier = make_pipeline(prepare, _small_classifier())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a default pipeline fit is quiet
        classifier.fit(frame[:90], label[:90])
    assert set(classifier.predict(frame[90:])) <= {"high", "low"}
    assert classifier.predict_proba(frame[90:]).shape == (30, 2)
