"""Every bad input against every estimator, from one table.

Rows are cases (RELIABILITY.md section 2: rows 1-7, 9, 10, 12, 13, 15, 19
and 20), columns are the estimators of ``ESTIMATORS``, and a cell is the
expected outcome: an exception type and the words its message must hold, a
warning, or a fit whose predictions are finite. A cell follows the case's
default for regressors or classifiers unless ``OVERRIDES`` names it. The
bad-parameter rows are generated from each estimator's
``_parameter_constraints``, so a new estimator is covered by adding one line
to ``ESTIMATORS``.

Every cell also checks that bad input never gives a NaN prediction, a
LAPACK-level error or a slow failure (each case must finish in
``_MAX_SECONDS``, Numba's compilation not counted).
"""

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
from _estimators import CHEAP
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.utils._param_validation import InvalidParameterError, make_constraint

from skgp_bayes._compile_time import compile_seconds
from skgp_bayes.exceptions import DegenerateFitWarning

# One line per estimator, in tests/_estimators.py.
ESTIMATORS = CHEAP

# A failing case must fail fast; a cheap fit takes well under a second.
_MAX_SECONDS = 10.0


pytestmark = pytest.mark.usefixtures("serial_blas")


# ------------------------------------------------------------ expectations
@dataclass(frozen=True)
class Raises:
    """The call raises ``exc`` and its message holds every word."""

    exc: type
    words: tuple = ()

    def __init__(self, exc, *words):
        object.__setattr__(self, "exc", exc)
        object.__setattr__(self, "words", words)


@dataclass(frozen=True)
class Warns:
    """The call succeeds with a ``category`` warning holding every word."""

    category: type
    words: tuple = ()

    def __init__(self, category, *words):
        object.__setattr__(self, "category", category)
        object.__setattr__(self, "words", words)


@dataclass(frozen=True)
class Fits:
    """The call succeeds."""


# ------------------------------------------------------------------- data
_RNG = np.random.RandomState(0)
_X = _RNG.randn(20, 3)
_Y_REG = _X[:, 0] + 0.1 * _RNG.randn(20)
_Y_CLF = (_X[:, 0] > 0).astype(int)


def _y(est):
    return _Y_CLF if is_classifier(est) else _Y_REG


def _with(X, index, value, dtype=None):
    X = np.array(X, dtype=dtype)
    X[index] = value
    return X


_FITTED = {}


def _fitted(name):
    """One cheap fit per estimator, shared by the predict-time cases."""
    if name not in _FITTED:
        est = ESTIMATORS[name]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _FITTED[name] = est.fit(_X, _y(est))
    return _FITTED[name]


def _predict(est, X):
    return est.predict_proba(X) if is_classifier(est) else est.predict(X)


# --------------------------------------------------------------- the cases
@dataclass(frozen=True)
class Case:
    """One row: ``run(estimator, name)`` does the call; ``expect`` is the
    outcome for every estimator, or a pair (regressor, classifier)."""

    id: str
    run: object
    expect: object


def _fit(X=None, y=None, y_clf=None):
    """A fit with ``X`` and ``y`` replaced where given."""

    def run(est, name):
        X_ = _X if X is None else X
        if is_classifier(est) and y_clf is not None:
            y_ = y_clf
        else:
            y_ = _y(est) if y is None else y
        return est.fit(X_, y_)

    return run


def _predict_with(X):
    def run(est, name):
        return _predict(_fitted(name), X)

    return run


def _per_kind(regressor, classifier):
    return (regressor, classifier)


_NAN = ("Input X contains NaN",)
_INF = ("Input X contains infinity or a value too large",)
_FEATURES = ("X has 4 features", "is expecting 3 features as input")
_SPARSE = ("Sparse data was passed", "dense data is required")
_ZERO_ROWS = ("0 sample(s)", "a minimum of 1 is required")

CASES = [
    # rows 1-2: NaN and inf in X, at fit and at predict
    Case("nan_X_fit", _fit(X=_with(_X, (0, 0), np.nan)), Raises(ValueError, *_NAN)),
    Case("inf_X_fit", _fit(X=_with(_X, (3, 1), np.inf)), Raises(ValueError, *_INF)),
    Case(
        "neg_inf_X_fit", _fit(X=_with(_X, (5, 2), -np.inf)), Raises(ValueError, *_INF)
    ),
    Case("all_nan_X_fit", _fit(X=np.full_like(_X, np.nan)), Raises(ValueError, *_NAN)),
    Case(
        "nan_X_predict",
        _predict_with(_with(_X[:4], (1, 1), np.nan)),
        Raises(ValueError, *_NAN),
    ),
    Case(
        "inf_X_predict",
        _predict_with(_with(_X[:4], (2, 0), np.inf)),
        Raises(ValueError, *_INF),
    ),
    # row 3: NaN and inf in y (labels too)
    Case(
        "nan_y",
        _fit(y=_with(_Y_REG, 0, np.nan), y_clf=_with(_Y_CLF, 0, np.nan, float)),
        Raises(ValueError, "Input y contains NaN"),
    ),
    Case(
        "inf_y",
        _fit(y=_with(_Y_REG, 2, np.inf), y_clf=_with(_Y_CLF, 2, np.inf, float)),
        Raises(ValueError, "Input y contains infinity"),
    ),
    # row 4: object and string X
    Case("object_numeric_X", _fit(X=_X.astype(object)), Fits()),
    Case(
        "string_X",
        _fit(X=np.array([["a", "b", "c"]] * 20)),
        Raises(ValueError, "could not convert string to float"),
    ),
    Case(
        "dict_cell_X",
        _fit(X=_with(_X, (0, 0), {"a": 1}, object)),
        Raises(TypeError, "must be a string or a real number", "dict"),
    ),
    Case(
        "dict_X",
        _fit(X={"a": [1.0, 2.0]}, y=_Y_REG[:2], y_clf=_Y_CLF[:2]),
        Raises(TypeError, "must be a string or a real number", "dict"),
    ),
    Case(
        "string_X_predict",
        _predict_with(np.array([["a", "b", "c"]])),
        Raises(ValueError, "could not convert string to float"),
    ),
    # row 5: complex data
    Case(
        "complex_X",
        _fit(X=_X + 1j),
        Raises(ValueError, "Complex data not supported"),
    ),
    Case(
        "complex_y",
        _fit(y=_Y_REG + 1j, y_clf=_Y_CLF + 1j),
        Raises(ValueError, "Complex data not supported"),
    ),
    Case(
        "complex_X_predict",
        _predict_with(_X[:3] + 1j),
        Raises(ValueError, "Complex data not supported"),
    ),
    # row 6: empty data
    Case(
        "zero_rows",
        _fit(X=_X[:0], y=_Y_REG[:0], y_clf=_Y_CLF[:0]),
        Raises(ValueError, *_ZERO_ROWS),
    ),
    Case(
        "zero_columns",
        _fit(X=_X[:, :0]),
        Raises(ValueError, "0 feature(s)", "a minimum of 1 is required"),
    ),
    Case(
        "empty_y",
        _fit(y=np.array([]), y_clf=np.array([])),
        Raises(ValueError, "inconsistent numbers of samples", "[20, 0]"),
    ),
    Case("zero_rows_predict", _predict_with(_X[:0]), Raises(ValueError, *_ZERO_ROWS)),
    # row 7: one sample
    Case(
        "one_sample",
        _fit(X=_X[:1], y=_Y_REG[:1], y_clf=_Y_CLF[:1]),
        _per_kind(
            Warns(DegenerateFitWarning, "fitted on 1 sample"),
            Raises(ValueError, "requires 2 classes", "got 1 class"),
        ),
    ),
    # row 8: constant y (a regressor fits; a classifier sees one class)
    Case(
        "constant_y",
        _fit(y=np.full(20, 2.0), y_clf=np.full(20, 1)),
        _per_kind(Fits(), Raises(ValueError, "requires 2 classes", "got 1 class")),
    ),
    # row 10: continuous y
    Case(
        "continuous_y",
        _fit(y=_Y_REG, y_clf=_Y_REG),
        _per_kind(Fits(), Raises(ValueError, "Unknown label type", "continuous")),
    ),
    # row 11: string labels
    Case(
        "string_labels",
        _fit(y_clf=np.where(_Y_CLF == 1, "yes", "no")),
        Fits(),
    ),
    # rows 12: 1-D and 3-D X
    Case(
        "1d_X_fit",
        _fit(X=_X[:, 0]),
        Raises(ValueError, "Expected 2D array, got 1D array"),
    ),
    Case(
        "3d_X_fit",
        _fit(X=_X[:, :, None]),
        Raises(ValueError, "Found array with dim 3"),
    ),
    Case(
        "1d_X_predict",
        _predict_with(_X[0]),
        Raises(ValueError, "Expected 2D array, got 1D array"),
    ),
    Case(
        "3d_X_predict",
        _predict_with(_X[:2, :, None]),
        Raises(ValueError, "Found array with dim 3"),
    ),
    Case(
        "scalar_X_fit",
        _fit(X=np.float64(1.0), y=_Y_REG[:1], y_clf=_Y_CLF[:1]),
        Raises(ValueError, "Expected 2D array, got scalar array"),
    ),
    Case(
        "2d_y",
        _fit(y=np.c_[_Y_REG, _Y_REG], y_clf=np.c_[_Y_CLF, _Y_CLF]),
        # a regressor that models one target says why (doc/ecosystem.rst)
        (
            Raises(ValueError, "fits one target", "(20, 2)", "MultiOutputRegressor"),
            Raises(ValueError, "y should be a 1d array", "(20, 2)"),
        ),
    ),
    # row 13: sparse X
    Case("sparse_X_fit", _fit(X=sp.csr_matrix(_X)), Raises(TypeError, *_SPARSE)),
    Case(
        "sparse_X_predict",
        _predict_with(sp.csr_matrix(_X[:3])),
        Raises(TypeError, *_SPARSE),
    ),
    # row 15: length mismatch, wrong number of features
    Case(
        "length_mismatch",
        _fit(y=_Y_REG[:-1], y_clf=_Y_CLF[:-1]),
        Raises(ValueError, "inconsistent numbers of samples", "[20, 19]"),
    ),
    Case(
        "wrong_n_features_predict",
        _predict_with(np.ones((2, 4))),
        Raises(ValueError, *_FEATURES),
    ),
    Case(
        "predict_before_fit",
        lambda est, name: _predict(est, _X),
        Raises(NotFittedError, "is not fitted yet"),
    ),
    # row 20: infinite, inverted or non-finite kernel hyperparameters
    Case(
        "kernel_infinite_bounds",
        lambda est, name: est.set_params(
            kernel=ConstantKernel(1.0) * RBF(1.0, length_scale_bounds=(1e-5, np.inf))
        ).fit(_X, _y(est)),
        Raises(ValueError, "'k2__length_scale'", "must be finite"),
    ),
    Case(
        "kernel_inverted_bounds",
        lambda est, name: est.set_params(
            kernel=ConstantKernel(1.0) * RBF(1.0, length_scale_bounds=(10.0, 1e-2))
        ).fit(_X, _y(est)),
        Raises(ValueError, "'k2__length_scale'", "inverted"),
    ),
    Case(
        "kernel_nan_value",
        lambda est, name: est.set_params(kernel=ConstantKernel(1.0) * RBF(np.nan)).fit(
            _X, _y(est)
        ),
        Raises(ValueError, "must be finite and positive", "k2__length_scale"),
    ),
]

# Cells where an estimator legitimately differs from its kind's default.
OVERRIDES = {
    # the exact Stein model shares its hyperparameters across targets
    ("2d_y", "SteinGPRegressor"): Fits(),
}


# ---------------------------------------------------- bad parameter values
# Candidate bad values, in order of preference; a parameter is tested with
# the first three that break every one of its constraints: negative and
# zero counts, NaN, bad strings and wrong types.
_BAD_CANDIDATES = (-1, 0, np.nan, "bogus", 1.5, [1.0], {"a": 1}, -np.inf)
_PER_PARAM = 3


def _violates(constraints, value):
    return not any(make_constraint(c).is_satisfied_by(value) for c in constraints)


def _param_cases(name):
    """Bad values for every constrained parameter of one estimator."""
    est = ESTIMATORS[name]()
    cases = []
    for param, constraints in est._parameter_constraints.items():
        bad = [v for v in _BAD_CANDIDATES if _violates(constraints, v)]
        for value in bad[:_PER_PARAM]:
            cases.append(
                Case(
                    f"param_{param}={value!r}",
                    _set_and_fit(param, value),
                    Raises(
                        InvalidParameterError,
                        f"The '{param}' parameter of {name} must be",
                    ),
                )
            )
    return cases


def _set_and_fit(param, value):
    def run(est, name):
        return est.set_params(**{param: value}).fit(_X, _y(est))

    return run


# Values the constraint declarations admit but ``fit`` must refuse, for the
# estimators that have the parameter: non-finite or inverted bounds, pairs
# of the wrong length, inconsistent settings.
_SEMANTIC = [
    ("noise_variance", np.inf, "noise_variance", ()),
    (
        "noise_variance_bounds",
        (1.0, 0.1),
        "noise_variance_bounds",
        ("0 < low <= high",),
    ),
    (
        "noise_variance_bounds",
        (0.0, 1.0),
        "noise_variance_bounds",
        ("0 < low <= high",),
    ),
    ("noise_variance_bounds", (1e-6, np.inf), "noise_variance_bounds", ("< inf",)),
    ("noise_variance_bounds", (np.nan, 1.0), "noise_variance_bounds", ()),
    ("noise_variance_bounds", (1.0, 2.0, 3.0), "noise_variance_bounds", ("pair",)),
    ("noise_variance_bounds", ("a", "b"), "noise_variance_bounds", ("pair",)),
    ("inducing_points", np.ones((3, 5)), "inducing_points", ()),
    ("inducing_points", np.full((3, 3), np.nan), "inducing_points", ()),
    ("candidates", np.ones((3, 5)), "candidates", ()),
    ("candidates", np.full((3, 3), np.nan), "candidates", ()),
    ("candidates", np.ones((0, 3)), "candidates", ()),
    # thinning past the kept draws (estimators with n_samples draws only)
    ("thin", 50, "thin", ("n_samples",)),
    ("learning_rate", np.inf, "learning_rate", ()),
    ("priors", {"no_such_parameter": None}, "no_such_parameter", ()),
]


def _semantic_cases(name):
    params = ESTIMATORS[name]().get_params()
    return [
        Case(
            f"value_{param}={value!r}",
            _set_and_fit(param, value),
            Raises(ValueError, named, *words),
        )
        for param, value, named, words in _SEMANTIC
        if param in params and (param != "thin" or "n_samples" in params)
    ]


# ------------------------------------------------------------------ table
def _expected(case, name):
    if (case.id, name) in OVERRIDES:
        return OVERRIDES[(case.id, name)]
    if isinstance(case.expect, tuple):
        regressor, classifier = case.expect
        return classifier if is_classifier(ESTIMATORS[name]()) else regressor
    return case.expect


def _table():
    for name in ESTIMATORS:
        for case in CASES + _param_cases(name) + _semantic_cases(name):
            yield pytest.param(name, case, id=f"{name}-{case.id}")


def _check_outcome(result, expected, est):
    """A successful call left finite predictions behind."""
    fitted = result if hasattr(result, "fit") else est
    if isinstance(result, np.ndarray):
        assert np.all(np.isfinite(result))
    elif hasattr(fitted, "n_features_in_"):
        query = np.zeros((2, fitted.n_features_in_))
        assert np.all(np.isfinite(_predict(fitted, query)))


@pytest.mark.parametrize("name, case", list(_table()))
def test_bad_input(name, case):
    est = ESTIMATORS[name]()
    expected = _expected(case, name)
    start = time.perf_counter()
    # A worker whose first fit this is compiles the kernels inside the case
    # (tens of seconds with a cold cache): that is not a slow failure.
    with compile_seconds() as compiling, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if isinstance(expected, Raises):
            with pytest.raises(Exception) as info:
                case.run(est, name)
            # never a LAPACK-level error standing in for a validation message
            assert not isinstance(info.value, np.linalg.LinAlgError), info.value
            assert isinstance(info.value, expected.exc), repr(info.value)
            for word in expected.words:
                assert word in str(info.value), (word, str(info.value))
        else:
            result = case.run(est, name)
            _check_outcome(result, expected, est)
    assert time.perf_counter() - start - compiling[0] < _MAX_SECONDS
    if isinstance(expected, Warns):
        messages = [
            str(w.message) for w in caught if issubclass(w.category, expected.category)
        ]
        assert any(all(word in m for word in expected.words) for m in messages), [
            str(w.message) for w in caught
        ]


def test_every_estimator_has_every_case():
    # the table is complete: no estimator skips a shared case
    ids = {p.id for p in _table()}
    for name in ESTIMATORS:
        for case in CASES:
            assert f"{name}-{case.id}" in ids
        assert len([i for i in ids if i.startswith(f"{name}-")]) >= 49


def test_new_estimator_is_one_line(monkeypatch):
    # a clone of an existing factory under a new name gets every case
    monkeypatch.setitem(ESTIMATORS, "Another", lambda: clone(CHEAP["SelectiveSVGP"]()))
    names = {p.values[0] for p in _table()}
    assert "Another" in names
