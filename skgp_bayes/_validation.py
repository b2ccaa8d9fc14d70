"""Checks and conversions shared by every estimator."""

import numbers
from contextlib import contextmanager

import numpy as np
from scipy.special import logsumexp

from ._config import MAX_ABS_LOG_PARAM
from ._version import __version__
from ._warnings import warn_user

__all__ = [
    "variance_in_units",
    "check_n_samples",
    "safe_mean_std",
    "pooled_log_rate",
    "check_exposure",
    "check_input_magnitude",
    "copied_columns",
    "check_finite_theta",
    "log_noise_bounds",
    "noise_box",
    "check_bounds",
    "atomic_feature_state",
    "VersionedStateMixin",
    "check_single_target",
    "target_shape",
    "column_scales",
]

# Squared distances of inputs beyond this magnitude overflow float64.
_MAX_ABS_INPUT = 1e150
# The interquartile range of a normal distribution, in standard deviations.
_NORMAL_IQR = 1.3489795003921634


def safe_mean_std(values, bulk_multiple=None):
    """Mean and standard deviation that neither overflow nor divide by zero.

    Values are scaled by their largest magnitude before squaring, so inputs
    near 1e300 stay finite; a zero or negligible spread gives a scale of 1.

    Parameters
    ----------
    values : ndarray of shape (n,)
    bulk_multiple : float or None, default=None
        When given, the standard deviation is capped at this multiple of the
        spread of the middle half of the values (the interquartile range
        over 1.349, which equals the standard deviation of a normal
        distribution), where that spread is positive.

    Returns
    -------
    mean, std : float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import safe_mean_std
    >>> safe_mean_std(np.array([2.0, 2.0, 2.0]))
    (2.0, 1.0)
    >>> values = np.array([1.0, 2.0, 3.0, 4.0, 1000.0])
    >>> round(safe_mean_std(values)[1], 1), round(safe_mean_std(values, 2.0)[1], 2)
    (399.0, 2.97)
    """
    scale = float(np.max(np.abs(values))) if values.size else 0.0
    if scale == 0.0:
        return 0.0, 1.0
    unit = values / scale
    mean = float(np.mean(unit)) * scale
    std = float(np.std(unit)) * scale
    negligible = 10.0 * np.finfo(float).eps * max(abs(mean), np.finfo(float).tiny)
    if bulk_multiple is not None:
        lower, upper = np.percentile(unit, [25.0, 75.0])
        capped = bulk_multiple * (float(upper - lower) / _NORMAL_IQR) * scale
        # a bulk whose spread is lost in the rounding of its values is no scale
        if negligible < capped < std:
            std = capped
    if not np.isfinite(std) or std <= negligible:
        std = 1.0
    return mean, std


def check_exposure(exposure, n, likelihood_name):
    """Validated Poisson exposures: None, or positive and finite, shape ``(n,)``.

    Parameters
    ----------
    exposure : float, array-like of shape (n,) or None
        A scalar is repeated for every point.
    n : int
    likelihood_name : str
        Exposure is allowed only with ``"poisson"``.

    Returns
    -------
    ndarray of shape (n,) or None

    Examples
    --------
    >>> from skgp_bayes._validation import check_exposure
    >>> check_exposure(2.0, 3, "poisson")
    array([2., 2., 2.])
    """
    if exposure is None:
        return None
    if likelihood_name != "poisson":
        raise ValueError("exposure is only used with likelihood='poisson'.")
    exposure = np.asarray(exposure, dtype=np.float64)
    if exposure.ndim == 0:
        exposure = np.full(n, float(exposure))
    if exposure.shape != (n,):
        raise ValueError(f"exposure must have shape ({n},); got {exposure.shape}.")
    if not np.all(np.isfinite(exposure)) or np.any(exposure <= 0):
        raise ValueError("exposure must be positive and finite.")
    return exposure


def pooled_log_rate(counts, exposure=None):
    """Log of the pooled rate ``(sum(counts) + 1/2) / sum(exposure)``.

    The constant mean of a Poisson model's latent log rate: with it the
    default amplitude prior describes variation around the data's own
    level, and rescaling the exposure (years to days) only shifts it by the
    log of the factor. The half count keeps it finite when every count is
    zero. Sums are taken in logs, so exposures near the double range do not
    overflow.

    Parameters
    ----------
    counts : ndarray of shape (n,)
        Non-negative counts.
    exposure : ndarray of shape (n,) or None, default=None
        Positive exposures; None means one per count.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import pooled_log_rate
    >>> counts = np.array([2.0, 5.0, 0.0, 8.0])
    >>> round(float(np.exp(pooled_log_rate(counts))), 4)
    3.875
    >>> round(float(np.exp(pooled_log_rate(counts, np.full(4, 2.0)))), 4)
    1.9375
    """
    log_total = np.log(float(np.sum(counts)) + 0.5)
    if exposure is None:
        return float(log_total - np.log(counts.shape[0]))
    return float(log_total - logsumexp(np.log(exposure)))


def variance_in_units(variance, scale):
    """``variance * scale**2``: a model-scale variance in the units of ``y``.

    A variance in ``y``'s units squares its scale, which leaves the double
    range for targets of magnitude above about 1e154; it is then ``inf``
    (the predictions, computed in model units, are unaffected), without a
    floating-point warning.

    Examples
    --------
    >>> from skgp_bayes._validation import variance_in_units
    >>> float(variance_in_units(0.5, 10.0)), float(variance_in_units(0.5, 1e200))
    (50.0, inf)
    """
    with np.errstate(over="ignore"):
        return np.asarray(variance, dtype=np.float64) * np.float64(scale) * scale


def target_shape(y):
    """The shape of array-like ``y`` before validation.

    Examples
    --------
    >>> from skgp_bayes._validation import target_shape
    >>> target_shape([[1.0, 2.0]])
    (1, 2)
    """
    shape = getattr(y, "shape", None)
    if shape is None:  # lists, and array-likes that refuse numpy functions
        shape = np.asarray(y).shape
    return tuple(shape)


def check_single_target(y, name, reason):
    """ValueError, saying why, when ``y`` has more than one column.

    Called before ``validate_data`` by the regressors (or modes) that model
    one target, so that the message names the reason instead of only the
    expected shape. A single column passes (``validate_data`` then ravels
    it, with scikit-learn's ``DataConversionWarning``).

    Parameters
    ----------
    y : array-like
    name : str
        The estimator's name.
    reason : str
        Why this model takes one target.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import check_single_target
    >>> check_single_target(np.zeros(3), "Model", "one target only.")
    >>> try:
    ...     check_single_target(np.zeros((3, 2)), "Model", "one target only.")
    ... except ValueError as error:
    ...     print(str(error).split(":")[0])
    Model fits one target, but y has shape (3, 2)
    """
    shape = target_shape(y)
    if len(shape) == 2 and shape[1] > 1:
        raise ValueError(
            f"{name} fits one target, but y has shape {shape}: {reason} Fit one "
            "estimator per column instead, for example with "
            "sklearn.multioutput.MultiOutputRegressor (each target then gets "
            "its own hyperparameter posterior)."
        )


def column_scales(y, normalize_y):
    """:func:`target_scale` of ``y`` or, for a 2-D ``y``, of each column.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import column_scales
    >>> column_scales(np.array([[1.0, 0.0], [3.0, 4.0]]), True)
    (array([2., 2.]), array([1., 2.]))
    """
    if y.ndim == 1:
        return target_scale(y, normalize_y)
    pairs = [target_scale(y[:, c], normalize_y) for c in range(y.shape[1])]
    means, stds = zip(*pairs, strict=True)
    return np.array(means), np.array(stds)


def target_scale(y, normalize_y):
    """Mean and scale that bring ``y`` to the model's scale.

    Parameters
    ----------
    y : ndarray of shape (n,)
    normalize_y : bool
        Standardise (overflow-safe, see :func:`safe_mean_std`); otherwise the
        identity, refused for values whose squares overflow.

    Returns
    -------
    mean, std : float

    Raises
    ------
    ValueError
        ``normalize_y=False`` with values of magnitude above 1e150.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import target_scale
    >>> target_scale(np.array([1.0, 3.0]), True)
    (2.0, 1.0)
    >>> target_scale(np.array([1.0, 3.0]), False)
    (0.0, 1.0)
    """
    if normalize_y:
        return safe_mean_std(y)
    if y.size and float(np.max(np.abs(y))) > 1e150:
        raise ValueError(
            "y contains values of magnitude above 1e150, whose squares "
            "overflow; set normalize_y=True or rescale y."
        )
    return 0.0, 1.0


def check_n_samples(n_samples):
    """Raise a ValueError unless ``n_samples`` is a positive integer (not bool).

    Parameters
    ----------
    n_samples : object
        The number of samples a caller asked for.

    Examples
    --------
    >>> from skgp_bayes._validation import check_n_samples
    >>> check_n_samples(3)
    >>> try:
    ...     check_n_samples(0)
    ... except ValueError as err:
    ...     print(err)
    n_samples must be a positive integer, got 0.
    """
    if (
        isinstance(n_samples, bool)
        or not isinstance(n_samples, numbers.Integral)
        or n_samples < 1
    ):
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")


def check_input_magnitude(X):
    """Refuse inputs whose squared distances would overflow.

    Parameters
    ----------
    X : ndarray of shape (n, d)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import check_input_magnitude
    >>> check_input_magnitude(np.ones((2, 2)))
    """
    if X.size and float(np.max(np.abs(X))) > _MAX_ABS_INPUT:
        raise ValueError(
            f"X contains values of magnitude above {_MAX_ABS_INPUT:.0e}; squared "
            "distances between such inputs overflow. Rescale X (for example "
            "with sklearn.preprocessing.StandardScaler)."
        )


# Columns whose correlation is this close to +-1 are copies of each other:
# a column and its affine image (a temperature in C and in F) differ after
# centring and scaling by rounding, about 1e-16 relative.
_COPY_CORRELATION = 1.0 - 1e-9
# Rows screened for copies; a pair found there is confirmed on every row.
_COPY_SCREEN_ROWS = 1000


def copied_columns(X):
    """Pairs of input columns that are affine copies of each other.

    With one ARD length scale per column, two copies enter the kernel only
    through ``1/l_i^2 + 1/l_j^2``: the likelihood is flat along a curved
    ridge of the two length scales, which samplers and SVGD cross slowly,
    while the predictions do not depend on where along it they are.
    Constant columns are not copies of anything.

    Parameters
    ----------
    X : ndarray of shape (n, d)

    Returns
    -------
    list of (int, int)
        Column pairs ``(i, j)``, ``i < j``, whose correlation is +-1 to
        rounding.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import copied_columns
    >>> X = np.random.default_rng(0).normal(size=(20, 3))
    >>> copied_columns(np.c_[X, 32 + 1.8 * X[:, 1]])
    [(1, 3)]
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if d < 2 or n < 3:
        return []
    step = max(1, n // _COPY_SCREEN_ROWS)

    def correlations(rows, columns):
        Z = X[rows][:, columns]
        Z = Z - Z.mean(axis=0)
        norms = np.linalg.norm(Z, axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            Z = Z / norms
        return np.abs(Z.T @ Z), norms > 0

    C, live = correlations(slice(None, None, step), slice(None))
    pairs = []
    for i, j in zip(*np.nonzero(np.triu(C, 1) > _COPY_CORRELATION), strict=True):
        if live[i] and live[j]:
            full, ok = correlations(slice(None), [i, j])
            if ok.all() and full[0, 1] > _COPY_CORRELATION:
                pairs.append((int(i), int(j)))
    return pairs


def check_finite_theta(theta, names):
    """ValueError naming any hyperparameter that is not finite and positive.

    Parameters
    ----------
    theta : ndarray
        Log-scale values.
    names : list of str
        One name per entry.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import check_finite_theta
    >>> check_finite_theta(np.zeros(2), ["a", "b"])
    """
    bad = [n for n, t in zip(names, theta, strict=True) if not np.isfinite(t)]
    big = [
        n
        for n, t in zip(names, theta, strict=True)
        if np.isfinite(t) and abs(t) > MAX_ABS_LOG_PARAM
    ]
    if bad or big:
        raise ValueError(
            "Kernel hyperparameters must be finite and positive; got "
            f"non-finite or non-positive values for {bad + big}."
        )


def noise_box(noise_variance, bounds):
    """Log bounds of a noise variance and its clipped log start.

    ``"fixed"`` gives equal bounds at ``noise_variance``, which an optimiser
    or a sampler then holds.

    Parameters
    ----------
    noise_variance : float
        Initial noise variance (validated positive).
    bounds : "fixed" or pair of float

    Returns
    -------
    log_bounds : ndarray of shape (2,)
    log_start : float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import noise_box
    >>> box, start = noise_box(10.0, (1e-2, 1.0))
    >>> np.exp(box).round(6).tolist(), float(np.exp(start))
    ([0.01, 1.0], 1.0)
    >>> np.exp(noise_box(0.5, "fixed")[0]).tolist()
    [0.5, 0.5]
    """
    log_start = float(np.log(noise_variance))
    log_bounds = log_noise_bounds(bounds, noise_variance)
    if log_bounds is None:
        return np.array([log_start, log_start]), log_start
    return log_bounds, float(np.clip(log_start, *log_bounds))


def log_noise_bounds(bounds, initial):
    """Log-scale bounds of the noise variance, or ``None`` when fixed.

    Parameters
    ----------
    bounds : "fixed" or pair of float
    initial : float
        Initial noise variance (already validated positive).

    Returns
    -------
    ndarray of shape (2,) or None

    Examples
    --------
    >>> from skgp_bayes._validation import log_noise_bounds
    >>> log_noise_bounds("fixed", 1.0) is None
    True
    """
    if isinstance(bounds, str):
        if bounds != "fixed":
            raise ValueError(
                f"noise_variance_bounds must be 'fixed' or a pair (low, high), "
                f"got {bounds!r}."
            )
        return None
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(
            "noise_variance_bounds must be 'fixed' or a pair (low, high), got "
            f"{bounds!r}."
        ) from None
    if not (np.isfinite(low) and np.isfinite(high) and 0 < low <= high):
        raise ValueError(
            f"noise_variance_bounds must satisfy 0 < low <= high < inf, got {bounds!r}."
        )
    return np.log([low, high])


def check_bounds(bounds, names):
    """ValueError naming any parameter whose bounds are infinite or inverted.

    Parameters
    ----------
    bounds : ndarray of shape (P, 2)
    names : list of str

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._validation import check_bounds
    >>> check_bounds(np.array([[0.0, 1.0]]), ["a"])
    """
    for name, (low, high) in zip(names, bounds, strict=True):
        if not (np.isfinite(low) and np.isfinite(high)):
            raise ValueError(
                f"The bounds of {name!r} must be finite, got "
                f"({np.exp(low)}, {np.exp(high)})."
            )
        if low > high:
            raise ValueError(
                f"The bounds of {name!r} are inverted: ({np.exp(low)}, {np.exp(high)})."
            )


@contextmanager
def atomic_feature_state(estimator):
    """Restore ``n_features_in_`` / ``feature_names_in_`` if ``fit`` fails.

    ``validate_data`` records the input's features on the estimator before
    the fit has succeeded; an interrupted or failed fit must leave the
    estimator exactly as it was (unfitted, or with its earlier fit).

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from skgp_bayes._validation import atomic_feature_state
    >>> est = BaseEstimator()
    >>> try:
    ...     with atomic_feature_state(est):
    ...         est.n_features_in_ = 3
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> hasattr(est, "n_features_in_")
    False
    """
    keys = ("n_features_in_", "feature_names_in_")
    saved = {k: getattr(estimator, k) for k in keys if hasattr(estimator, k)}
    try:
        yield
    except BaseException:
        for k in keys:
            if k in saved:
                setattr(estimator, k, saved[k])
            elif hasattr(estimator, k):
                delattr(estimator, k)
        raise


def positive_finite(name, value):
    """ValueError unless ``value`` is a finite positive real number.

    Examples
    --------
    >>> from skgp_bayes._validation import positive_finite
    >>> positive_finite("noise_variance", 0.5)
    0.5
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not np.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite positive number, got {value!r}.")
    return float(value)


class VersionedStateMixin:
    """Pickle support: record the library version and warn on a mismatch.

    Examples
    --------
    >>> from skgp_bayes._validation import VersionedStateMixin
    >>> VersionedStateMixin().__getstate__()["_skgp_version"] == __import__(
    ...     "skgp_bayes").__version__
    True
    """

    def __getstate__(self):
        getstate = getattr(super(), "__getstate__", None)
        state = getstate() if getstate is not None else self.__dict__.copy()
        # object.__getstate__ returns None for an instance with an empty dict
        state = dict(state or {})
        state["_skgp_version"] = __version__
        return state

    def __setstate__(self, state):
        version = state.get("_skgp_version", __version__)
        if version != __version__:
            warn_user(
                f"Trying to unpickle {type(self).__name__} from skgp_bayes "
                f"{version} with skgp_bayes {__version__}; results may differ.",
                UserWarning,
            )
        setstate = getattr(super(), "__setstate__", None)
        if setstate is not None:
            setstate(state)
        else:
            self.__dict__.update(state)
