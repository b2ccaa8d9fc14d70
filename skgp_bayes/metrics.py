"""Calibration metrics for probabilistic regressors.

scikit-learn scores a regressor by its point prediction; a Bayesian
regressor also promises a predictive distribution, and these functions check
that promise on held-out data:

- :func:`coverage_curve`: the fraction of targets inside the central
  predictive interval, at several nominal levels (a calibrated model lies on
  the diagonal);
- :func:`pit_values`: the probability integral transform ``F_i(y_i)``, which
  is uniform on ``[0, 1]`` for a calibrated model (randomised for counts,
  Czado, Gneiting and Held 2009);
- :func:`crps`: the continuous ranked probability score of the predictive
  mixture, a proper score in the units of ``y`` (Gneiting and Raftery 2007);
- :func:`neg_mean_crps`, :func:`mean_log_predictive_density` and
  :func:`interval_coverage_scorer`: scorers for ``cross_validate`` and
  ``GridSearchCV``.

Every function takes a fitted estimator of this package, whose predictive is
the mixture over its posterior draws with the observation noise included, or
any scikit-learn regressor whose ``predict(X, return_std=True)`` gives the
predictive standard deviation of a noisy target (for
``GaussianProcessRegressor`` that means a ``WhiteKernel`` in its kernel). For
classifiers, scikit-learn already has what is needed:
:func:`sklearn.metrics.log_loss`, :func:`sklearn.metrics.brier_score_loss`
and :func:`sklearn.calibration.calibration_curve`.

The mixture CRPS uses ``scoringrules`` (the ``metrics`` extra:
``pip install skgp_bayes[metrics]``).
"""

import numpy as np
from sklearn.utils import check_random_state

from ._predictive_contract import (
    check_coverage,
    check_targets,
)
from .predictive._distributions import (
    GaussianMixturePredictive,
    PoissonMixturePredictive,
)

__all__ = [
    "DEFAULT_LEVELS",
    "coverage_curve",
    "crps",
    "crps_gaussian_mixture",
    "interval_coverage",
    "interval_coverage_scorer",
    "mean_log_predictive_density",
    "neg_mean_crps",
    "pit_values",
]

DEFAULT_LEVELS = (0.5, 0.8, 0.9, 0.95)
# Pairs of mixture components held in memory at once by the closed-form
# mixture CRPS (its cost is quadratic in the number of draws): 2**22 doubles
# is 32 MiB.
_CRPS_PAIR_BUDGET = 2**22
# The count CRPS sums (F(k) - 1{k >= y})^2 over k up to this upper quantile;
# the mass left above it adds at most its own size to the score.
_COUNT_TAIL = 1e-10


def _observation_predictive(estimator, X):
    """The predictive of a noisy target at ``X``, from any fitted regressor."""
    if hasattr(estimator, "_observation_predictive"):
        predictive = estimator._observation_predictive(estimator._validate_query(X))
        if getattr(predictive, "n_targets", None) is not None:
            raise ValueError(
                f"{type(estimator).__name__} was fitted on {predictive.n_targets} "
                "targets; these metrics score one target. Fit one estimator per "
                "target to score each, or use log_predictive_density for the "
                "joint density of every target."
            )
        return predictive
    try:
        mean, std = estimator.predict(X, return_std=True)
    except TypeError as exc:
        raise TypeError(
            f"{type(estimator).__name__} gives no predictive distribution: it "
            "is neither a regressor of skgp_bayes nor one whose "
            "predict(X, return_std=True) returns a standard deviation."
        ) from exc
    mean = np.asarray(mean, dtype=np.float64)
    std = np.asarray(std, dtype=np.float64)
    if mean.ndim != 1 or std.shape != mean.shape:
        raise ValueError(
            "predict(X, return_std=True) must give one mean and one standard "
            f"deviation per row; got shapes {mean.shape} and {std.shape}."
        )
    return GaussianMixturePredictive(mean[None, :], np.square(std)[None, :])


def _predictive_at(estimator, X, y):
    """The predictive at ``X`` and ``y`` checked against its rows."""
    predictive = _observation_predictive(estimator, X)
    return predictive, check_targets(y, predictive.means.shape[1])


def _model_units_to_y(predictive):
    """Means and sds ``(S, m)`` of a Gaussian mixture, in the units of y."""
    scale = abs(predictive.scale)
    means = predictive.offset + predictive.scale * predictive.means
    return means, scale * np.sqrt(predictive.variances)


# ---------------------------------------------------------------- coverage
def interval_coverage(y_true, lower, upper):
    """Fraction of targets inside their intervals ``[lower, upper]``.

    Parameters
    ----------
    y_true, lower, upper : array-like of shape (n_samples,)

    Returns
    -------
    float

    Examples
    --------
    >>> from skgp_bayes.metrics import interval_coverage
    >>> interval_coverage([0.0, 1.0, 5.0], [-1, -1, -1], [1, 1, 1])
    0.6666666666666666
    """
    y_true = check_targets(y_true, np.shape(y_true)[0])
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    if lower.shape != y_true.shape or upper.shape != y_true.shape:
        raise ValueError(
            f"y_true, lower and upper must have one shape; got {y_true.shape}, "
            f"{lower.shape} and {upper.shape}."
        )
    return float(np.mean((lower <= y_true) & (y_true <= upper)))


def coverage_curve(estimator, X, y, levels=DEFAULT_LEVELS):
    """Observed coverage of the central predictive intervals at several levels.

    Parameters
    ----------
    estimator : fitted regressor
        A regressor of this package, or one whose ``predict(X,
        return_std=True)`` gives the predictive standard deviation (then the
        intervals are Gaussian).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    levels : sequence of float, default=(0.5, 0.8, 0.9, 0.95)
        Nominal coverages, strictly between 0 and 1.

    Returns
    -------
    ndarray of shape (n_levels,)
        Fraction of ``y`` inside each central interval. With ``m`` test
        points a calibrated model's value at level ``p`` has standard error
        ``sqrt(p (1 - p) / m)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes.metrics import coverage_curve
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> y = np.sin(X[:, 0]) + 0.2 * rng.randn(60)
    >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X[:40], y[:40])
    >>> coverage_curve(reg, X[40:], y[40:], levels=[0.5, 0.9]).shape
    (2,)
    """
    bounds = [check_coverage(level) for level in np.atleast_1d(levels)]
    predictive, y = _predictive_at(estimator, X, y)
    quantiles = predictive.quantiles(np.concatenate(bounds))
    lower, upper = quantiles[:, 0::2], quantiles[:, 1::2]
    inside = (lower <= y[:, None]) & (y[:, None] <= upper)
    return inside.mean(axis=0)


# --------------------------------------------------------------------- PIT
def pit_values(estimator, X, y, random_state=None):
    """Probability integral transform ``F_i(y_i)`` of each target.

    Uniform on ``[0, 1]`` when the predictive is calibrated: a U-shaped
    histogram means intervals too narrow, a hump too wide, a slope a biased
    mean. For a count likelihood the predictive is discrete, and the value is
    randomised, ``F(y - 1) + V (F(y) - F(y - 1))`` with ``V`` uniform, which
    is again uniform under calibration (Czado, Gneiting and Held 2009).

    Parameters
    ----------
    estimator : fitted regressor
        As in :func:`coverage_curve`.
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    random_state : int, RandomState or None, default=None
        Draws ``V`` for count predictives; unused otherwise.

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes.metrics import pit_values
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> y = np.sin(X[:, 0]) + 0.2 * rng.randn(60)
    >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X[:40], y[:40])
    >>> u = pit_values(reg, X[40:], y[40:])
    >>> u.shape, bool(np.all((u >= 0) & (u <= 1)))
    ((20,), True)
    """
    predictive, y = _predictive_at(estimator, X, y)
    if not isinstance(predictive, PoissonMixturePredictive):
        return predictive.cdf(y)
    upper = predictive.cdf(y)
    lower = predictive.cdf(y - 1.0)
    v = check_random_state(random_state).uniform(size=y.shape[0])
    return lower + v * (upper - lower)


# -------------------------------------------------------------------- CRPS
def _import_scoringrules():
    try:
        import scoringrules
    except ImportError as exc:
        raise ImportError(
            "The mixture CRPS needs the optional package 'scoringrules': "
            "pip install skgp_bayes[metrics] (or pip install scoringrules)."
        ) from exc
    return scoringrules


def crps_gaussian_mixture(y, means, sds, weights=None):
    """CRPS of equally weighted (or weighted) Gaussian mixtures, per point.

    ``CRPS(F, y) = integral (F(x) - 1{x >= y})^2 dx``, in the units of ``y``,
    in the closed form of Grimit et al. (2006), through ``scoringrules``.
    The cost is quadratic in the number of components; rows are processed in
    blocks that keep the memory bounded.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
    means, sds : array-like of shape (n_components, n_samples)
        One column per point, one row per mixture component.
    weights : array-like of shape (n_components,), default=None
        Non-negative component weights (normalised here); equal if None.

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.metrics import crps_gaussian_mixture
    >>> # a standard normal at its mean: (sqrt(2) - 1) / sqrt(pi)
    >>> np.round(crps_gaussian_mixture([0.0], [[0.0]], [[1.0]]), 6)
    array([0.233695])
    """
    sr = _import_scoringrules()
    y = check_targets(y, np.size(y))
    means = np.atleast_2d(np.asarray(means, dtype=np.float64))
    sds = np.atleast_2d(np.asarray(sds, dtype=np.float64))
    if means.shape != sds.shape or means.shape[1] != y.shape[0]:
        raise ValueError(
            "means and sds must both have shape (n_components, n_samples) = "
            f"(., {y.shape[0]}); got {means.shape} and {sds.shape}."
        )
    if not np.all(np.isfinite(sds)) or np.any(sds <= 0):
        raise ValueError("sds must be finite and positive.")
    n_components = means.shape[0]
    if weights is None:
        weights = np.full(n_components, 1.0 / n_components)
    else:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (n_components,) or np.any(weights < 0):
            raise ValueError(
                f"weights must be {n_components} non-negative numbers; "
                f"got shape {weights.shape}."
            )
        weights = weights / weights.sum()
    block = max(1, _CRPS_PAIR_BUDGET // n_components**2)
    scores = np.empty(y.shape[0])
    for start in range(0, y.shape[0], block):
        rows = slice(start, start + block)
        scores[rows] = sr.crps_mixnorm(
            y[rows],
            means[:, rows].T,
            sds[:, rows].T,
            np.broadcast_to(weights, (scores[rows].size, n_components)),
            backend="numpy",
        )
    return scores


def _count_crps(predictive, y):
    """``sum_k (F(k) - 1{k >= y})^2`` over the counts, per point."""
    top = predictive.quantiles(np.array([1.0 - _COUNT_TAIL]))[:, 0]
    top = np.maximum(top, y)
    scores = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        single = PoissonMixturePredictive(
            predictive.means[:, i : i + 1],
            predictive.variances[:, i : i + 1],
            predictive.likelihood,
        )
        k = np.arange(top[i] + 1.0)
        cdf = single.cdf(k[None, :])[0]
        scores[i] = np.sum(np.square(cdf - (k >= y[i])))
    return scores


def crps(estimator, X, y):
    """Continuous ranked probability score of each target, in its units.

    The CRPS of the whole predictive (the mixture over posterior draws,
    observation noise included): lower is better, and it rewards sharpness
    only as far as calibration allows. For a count likelihood it is the
    ranked probability score summed over all counts.

    Parameters
    ----------
    estimator : fitted regressor
        As in :func:`coverage_curve`.
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes.metrics import crps
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> y = np.sin(X[:, 0]) + 0.2 * rng.randn(60)
    >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X[:40], y[:40])
    >>> bool(crps(reg, X[40:], y[40:]).mean() < 0.2)  # the noise sd is 0.2
    True
    """
    predictive, y = _predictive_at(estimator, X, y)
    if isinstance(predictive, PoissonMixturePredictive):
        return _count_crps(predictive, y)
    means, sds = _model_units_to_y(predictive)
    return crps_gaussian_mixture(y, means, sds)


# ----------------------------------------------------------------- scorers
def neg_mean_crps(estimator, X, y):
    """Scorer: minus the mean CRPS (greater is better).

    A callable ``(estimator, X, y) -> float`` for the ``scoring`` argument of
    ``cross_validate``, ``GridSearchCV`` and friends.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import cross_validate
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes.metrics import neg_mean_crps
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (45, 1))
    >>> y = np.sin(X[:, 0]) + 0.2 * rng.randn(45)
    >>> scores = cross_validate(SteinGPRegressor(n_particles=4, random_state=0),
    ...                         X, y, cv=3, scoring=neg_mean_crps)
    >>> scores["test_score"].shape
    (3,)
    """
    return -float(np.mean(crps(estimator, X, y)))


def mean_log_predictive_density(estimator, X, y):
    """Scorer: the test mean log predictive density (greater is better).

    Uses the estimator's ``log_predictive_density`` where it has one, else
    the Gaussian of ``predict(X, return_std=True)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes.metrics import mean_log_predictive_density
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> y = np.sin(X[:, 0]) + 0.2 * rng.randn(60)
    >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X[:40], y[:40])
    >>> bool(mean_log_predictive_density(reg, X[40:], y[40:]) > -1.0)
    True
    """
    predictive, y = _predictive_at(estimator, X, y)
    return float(np.mean(predictive.logpdf(y)))


def interval_coverage_scorer(coverage=0.9):
    """Scorer: minus the distance of the observed coverage from its level.

    ``-|observed - coverage|`` of the central ``coverage`` interval, so that
    greater is better and 0 is perfect; use it to compare models' calibration
    in ``cross_validate``.

    Parameters
    ----------
    coverage : float, default=0.9

    Returns
    -------
    callable ``(estimator, X, y) -> float``

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes.metrics import interval_coverage_scorer
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> y = np.sin(X[:, 0]) + 0.2 * rng.randn(60)
    >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X[:40], y[:40])
    >>> score = interval_coverage_scorer(0.9)(reg, X[40:], y[40:])
    >>> bool(-0.5 <= score <= 0.0)
    True
    """
    check_coverage(coverage)

    def score(estimator, X, y):
        observed = coverage_curve(estimator, X, y, levels=[coverage])[0]
        return -abs(float(observed) - coverage)

    score.__name__ = f"interval_coverage_{coverage:g}"
    return score
