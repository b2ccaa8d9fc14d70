"""An exception from inside the target, mid-fit, leaves the estimator as it was.

For each engine, the target's value-and-gradient method is made to raise at
its k-th call during a refit, as a ``KeyboardInterrupt`` from Ctrl-C would
arrive. The exception must reach the caller unchanged, every attribute of
the previously fitted estimator must be exactly as it was (its predictions
bit-identical), and a following ``fit`` must equal an uninterrupted one bit
for bit. A first fit interrupted leaves the estimator unfitted.
"""

import copy

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skgp_bayes import (
    SelectiveSVGP,
    SelectiveSVGPClassifier,
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)
from skgp_bayes.targets.collapsed import CollapsedSparseTarget
from skgp_bayes.targets.exact import ExactMarginalTarget
from skgp_bayes.targets.selective import SharedSubsetBound, SubsetBound
from skgp_bayes.targets.sparse import SparseWhitenedTarget
from skgp_bayes.targets.stochastic import StochasticMarginalGradient
from skgp_bayes.targets.svgp import SVGPBound
from skgp_bayes.targets.whitened import WhitenedLatentTarget

# Short fits still diverge or stop early in places; only the state matters.
pytestmark = pytest.mark.filterwarnings("ignore")

# Wall-clock records differ between two otherwise identical fits.
_TIMING_KEYS = frozenset({"fit_time", "fit_time_", "init_time", "time"})


# ------------------------------------------------------------ deep equality
def differences(a, b, path="", ignore=frozenset(), seen=None):
    """Where ``a`` and ``b`` differ, as readable paths (empty when equal).

    Arrays compare by value, dtype and shape (NaN equal to NaN), floats
    bit for bit up to NaN, random generators by state, other objects by
    type and then attribute by attribute.
    """
    seen = set() if seen is None else seen
    if (id(a), id(b)) in seen:
        return []
    seen.add((id(a), id(b)))
    if type(a) is not type(b):
        return [f"{path}: {type(a).__name__} vs {type(b).__name__}"]
    if isinstance(a, np.ndarray):
        same = a.shape == b.shape and a.dtype == b.dtype
        nan_ok = a.dtype.kind in "fc"
        if same and a.dtype != object:
            same = np.array_equal(a, b, equal_nan=nan_ok)
        elif same:
            return _sequence_differences(a.ravel(), b.ravel(), path, ignore, seen)
        return [] if same else [f"{path}: arrays differ"]
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(map(str, a.keys() ^ b.keys()))}"]
        return [
            d
            for k in a
            if k not in ignore
            for d in differences(a[k], b[k], f"{path}[{k!r}]", ignore, seen)
        ]
    if isinstance(a, list | tuple):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} vs {len(b)}"]
        return _sequence_differences(a, b, path, ignore, seen)
    if isinstance(a, float | np.floating):
        same = (a == b and np.signbit(a) == np.signbit(b)) or (a != a and b != b)
        return [] if same else [f"{path}: {a!r} vs {b!r}"]
    if isinstance(a, np.random.Generator):
        return differences(
            a.bit_generator.state, b.bit_generator.state, path, ignore, seen
        )
    if isinstance(a, np.random.RandomState):
        return differences(a.get_state(), b.get_state(), path, ignore, seen)
    if hasattr(a, "__dict__") and not callable(a) or _is_plain_object(a):
        # The pickled state: caches that pickling drops are not state.
        return differences(_state(a), _state(b), f"{path}.", ignore, seen)
    try:
        same = bool(np.all(a == b))
    except Exception:  # noqa: BLE001 - objects that cannot be compared
        same = a is b
    return [] if same else [f"{path}: {a!r} vs {b!r}"]


def _state(obj):
    return obj.__getstate__() or {}


def _is_plain_object(a):
    # Callable instances of the package (targets, gradients) still compare
    # by state; functions and compiled kernels compare by identity.
    return hasattr(a, "__dict__") and type(a).__module__.startswith("skgp_bayes")


def _sequence_differences(a, b, path, ignore, seen):
    return [
        d
        for i, (x, y) in enumerate(zip(a, b, strict=True))
        for d in differences(x, y, f"{path}[{i}]", ignore, seen)
    ]


def test_differences_sees_what_it_must():
    base = {"a": np.array([1.0, np.nan]), "b": [1, (2.0, "x")], "time": 1.0}
    assert differences(base, copy.deepcopy(base)) == []
    changed = copy.deepcopy(base)
    changed["a"][0] = np.nextafter(1.0, 2.0)
    assert differences(base, changed)
    changed = copy.deepcopy(base)
    changed["b"][1] = (2.0, "y")
    assert differences(base, changed)
    changed = copy.deepcopy(base)
    changed["time"] = 2.0
    assert differences(base, changed)
    assert differences(base, changed, ignore=_TIMING_KEYS) == []
    assert differences({"a": 1}, {"a": 1, "b_": 2})
    assert differences(0.0, -0.0)


# ----------------------------------------------------------- the injection
class Injected:
    """Wrap ``cls.method`` to count calls and raise ``error`` at call ``at``."""

    def __init__(self, monkeypatch, cls, method, at=None, error=None):
        self.calls, self.at, self.error = 0, at, error
        original = getattr(cls, method)

        def wrapper(target, *args, **kwargs):
            self.calls += 1
            if self.calls == self.at:
                raise self.error
            return original(target, *args, **kwargs)

        monkeypatch.setattr(cls, method, wrapper)


def _errors():
    interrupt = KeyboardInterrupt()
    try:
        raise SystemError("returned a result with an exception set") from interrupt
    except SystemError as wrapped:
        system_error = wrapped
    # (raised, expected at the caller): the last is the form a signal takes
    # when it lands in a compiled function's return; the caller sees the
    # KeyboardInterrupt itself.
    return [
        (interrupt, interrupt),
        (RuntimeError("injected"), None),
        (system_error, interrupt),
    ]


def _data(classify):
    rng = np.random.RandomState(0)
    X = rng.randn(40, 2)
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(40)
    return X, (X[:, 0] > 0).astype(int) if classify else y


def _predictions(est, X):
    if hasattr(est, "predict_proba"):
        return est.predict_proba(X)
    return np.column_stack(est.predict(X, return_std=True))


_VMCMC = dict(
    n_inducing=5,
    n_chains=2,
    n_warmup=20,
    n_samples=10,
    max_samples=10,
    max_leapfrog=3,
    svgp_max_iter=30,
    random_state=0,
)
_STEIN_SPARSE = dict(inducing_points=8, batch_size=16, random_state=0)

# (id, estimator, classification, target class, method, how the fit updates)
# "fit": a fresh refit; "warm": fit continues the previous one; "partial":
# partial_fit continues it.
# Each selective estimator is interrupted in two phases: selection and SVGP.
_SELECTIVE = SelectiveSVGP(
    n_candidates=8, n_pre_iter=10, n_select_iter=10, n_post_iter=10, random_state=0
)
_SELECTIVE_CLASSIFIER = SelectiveSVGPClassifier(
    n_candidates=8, n_pre_iter=20, n_select_iter=10, n_post_iter=20, random_state=0
)

CASES = [
    # SVGD
    (
        "stein-exact",
        SteinGPRegressor(n_particles=3, max_iter=25, random_state=0),
        False,
        ExactMarginalTarget,
        "logp_and_grad",
        "fit",
    ),
    (
        "stein-exact-warm",
        SteinGPRegressor(n_particles=3, max_iter=25, warm_start=True, random_state=0),
        False,
        ExactMarginalTarget,
        "logp_and_grad",
        "warm",
    ),
    (
        "stein-cg-warm",
        SteinGPRegressor(
            n_particles=3, max_iter=15, solver="cg", warm_start=True, random_state=0
        ),
        False,
        StochasticMarginalGradient,
        "__call__",
        "warm",
    ),
    (
        "stein-sparse",
        SteinGPRegressor(n_particles=3, max_iter=20, **_STEIN_SPARSE),
        False,
        SparseWhitenedTarget,
        "logp_and_grad",
        "fit",
    ),
    (
        "stein-sparse-partial",
        SteinGPRegressor(n_particles=3, max_iter=20, **_STEIN_SPARSE),
        False,
        SparseWhitenedTarget,
        "logp_and_grad",
        "partial",
    ),
    (
        "stein-sparse-warmup",
        SteinGPRegressor(n_particles=3, max_iter=5, **_STEIN_SPARSE),
        False,
        SVGPBound,
        "logp_and_grad",
        "fit",
    ),
    (
        "stein-classifier-exact",
        SteinGPClassifier(n_particles=3, max_iter=20, random_state=0),
        True,
        WhitenedLatentTarget,
        "logp_and_grad",
        "fit",
    ),
    (
        "stein-classifier-sparse-partial",
        SteinGPClassifier(n_particles=3, max_iter=10, **_STEIN_SPARSE),
        True,
        SparseWhitenedTarget,
        "logp_and_grad",
        "partial",
    ),
    # HMC, and the SVGP warm-up by L-BFGS and by Adam
    (
        "vmcmc-classifier",
        VariationalMCMCClassifier(**_VMCMC),
        True,
        SparseWhitenedTarget,
        "logp_and_grad",
        "fit",
    ),
    (
        "vmcmc-regressor",
        VariationalMCMCRegressor(**_VMCMC),
        False,
        CollapsedSparseTarget,
        "logp_and_grad",
        "fit",
    ),
    (
        "vmcmc-warmup-lbfgs",
        VariationalMCMCRegressor(**_VMCMC),
        False,
        CollapsedSparseTarget,
        "logp_and_grad",
        "fit",
    ),
    (
        "vmcmc-classifier-warmup-lbfgs",
        VariationalMCMCClassifier(**_VMCMC),
        True,
        SVGPBound,
        "logp_and_grad",
        "fit",
    ),
    (
        "vmcmc-warmup-adam",
        VariationalMCMCClassifier(**_VMCMC, batch_size=16),
        True,
        SVGPBound,
        "logp_and_grad",
        "fit",
    ),
    # SGLD with ULISSE, and its MAP start (with the exact solver, which
    # "auto" takes on these data, the same target also drives the chains)
    (
        "sgld",
        SGLDGPRegressor(
            n_iter=20,
            map_subset=30,
            n_predict_draws=5,
            solver="ulisse",
            random_state=0,
        ),
        False,
        StochasticMarginalGradient,
        "__call__",
        "fit",
    ),
    (
        "sgld-map",
        SGLDGPRegressor(n_iter=10, map_subset=30, n_predict_draws=5, random_state=0),
        False,
        ExactMarginalTarget,
        "logp_and_grad",
        "fit",
    ),
    (
        "sgld-warm",
        SGLDGPRegressor(
            n_iter=20,
            map_subset=30,
            n_predict_draws=5,
            solver="ulisse",
            warm_start=True,
            random_state=0,
        ),
        False,
        StochasticMarginalGradient,
        "__call__",
        "warm",
    ),
    # Adam with score-function gradients, and the SVGP phases
    (
        "selective",
        _SELECTIVE,
        False,
        SubsetBound,
        "logp_and_grad",
        "fit",
    ),
    (
        "selective-svgp-phase",
        _SELECTIVE,
        False,
        SubsetBound,
        "values_and_mean_grad",
        "fit",
    ),
    (
        "selective-classifier",
        _SELECTIVE_CLASSIFIER,
        True,
        SharedSubsetBound,
        "logp_and_grad",
        "fit",
    ),
    (
        "selective-classifier-svgp-phase",
        _SELECTIVE_CLASSIFIER,
        True,
        SVGPBound,
        "logp_and_grad",
        "fit",
    ),
]


def _update(est, X, y, how):
    if how == "partial":
        # Two chunks, so that the second call continues the first.
        half = X.shape[0] // 2
        first = {"classes": np.unique(y)} if is_classifier(est) else {}
        est.partial_fit(X[:half], y[:half], **first)
        return est.partial_fit(X[half:], y[half:])
    return est.fit(X, y)


def _refit(est, X, y, how):
    """The update that is interrupted: a new fit, or the next continuation."""
    if how == "partial":
        return est.partial_fit(X, y)
    return est.fit(X, y)


@pytest.mark.parametrize(
    "estimator, classify, target_cls, method, how",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_fault_mid_refit_leaves_the_fitted_state(
    monkeypatch, estimator, classify, target_cls, method, how
):
    X, y = _data(classify)
    X_query = X[:9] + 0.05
    est = _update(clone(estimator), X, y, how)
    # How many target calls one update makes, to inject faults inside it.
    with monkeypatch.context() as patch:
        counter = Injected(patch, target_cls, method)
        reference = _refit(copy.deepcopy(est), X, y, how)
    n_calls = counter.calls
    assert n_calls >= 4, f"{target_cls.__name__}.{method} is barely called"
    reference_predictions = _predictions(reference, X_query)

    before = _predictions(est, X_query)
    snapshot = copy.deepcopy(_state(est))
    # Faults at a quarter, half and three quarters of the update's calls.
    for (raised, expected), at in zip(
        _errors(), (n_calls // 4 + 1, n_calls // 2, 3 * n_calls // 4), strict=True
    ):
        with monkeypatch.context() as patch:
            Injected(patch, target_cls, method, at=at, error=raised)
            with pytest.raises(BaseException) as caught:
                _refit(est, X, y, how)
        assert caught.value is (expected or raised), repr(caught.value)
        assert differences(snapshot, _state(est)) == [], f"fault at call {at}"
        np.testing.assert_array_equal(_predictions(est, X_query), before)

    # The next update works, and equals the uninterrupted one.
    _refit(est, X, y, how)
    np.testing.assert_array_equal(_predictions(est, X_query), reference_predictions)
    assert differences(_state(reference), _state(est), ignore=_TIMING_KEYS) == []


@pytest.mark.parametrize(
    "estimator, classify, target_cls, method, how",
    [c[1:] for c in CASES if c[5] == "fit"],
    ids=[c[0] for c in CASES if c[5] == "fit"],
)
def test_fault_in_first_fit_leaves_the_estimator_unfitted(
    monkeypatch, estimator, classify, target_cls, method, how
):
    X, y = _data(classify)
    est = clone(estimator)
    unfitted = copy.deepcopy(_state(est))
    with monkeypatch.context() as patch:
        counter = Injected(patch, target_cls, method)
        clone(estimator).fit(X, y)
    raised = KeyboardInterrupt()
    with monkeypatch.context() as patch:
        Injected(patch, target_cls, method, at=counter.calls // 2, error=raised)
        with pytest.raises(KeyboardInterrupt) as caught:
            est.fit(X, y)
    assert caught.value is raised
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    assert differences(unfitted, _state(est)) == []


def test_cases_cover_every_estimator_and_engine():
    covered = {type(c[1]) for c in CASES}
    assert covered == {
        SelectiveSVGP,
        SelectiveSVGPClassifier,
        SGLDGPRegressor,
        SteinGPClassifier,
        SteinGPRegressor,
        VariationalMCMCClassifier,
        VariationalMCMCRegressor,
    }
    assert len({c[0] for c in CASES}) == len(CASES)
    assert {c[3] for c in CASES} >= {SVGPBound, SparseWhitenedTarget}
