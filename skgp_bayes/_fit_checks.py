"""Checks run at the end of ``fit`` that tell the user when a fit is degenerate.

A degenerate fit finishes without an error but has learned (almost)
nothing: it saw one sample, its fitted function is constant over the
training inputs, it kept a single inducing point, or its hyperparameter
particles or draws sit on a bound of the kernel. Each check warns with a
:class:`~skgp_bayes.exceptions.DegenerateFitWarning` that says what happened
and what to change; the estimator modules call :func:`warn_degenerate_fit`
(and :func:`warn_at_bounds` where they hold particles or draws) in one line.
"""

import warnings

import numpy as np
from sklearn.base import clone

from ._warnings import warn_user
from .exceptions import DegenerateFitWarning

__all__ = [
    "warn_degenerate_fit",
    "warn_at_bounds",
    "signal_ratio",
    "prior_only",
    "NEAR_BOUND",
]

# A fitted function whose spread over the training inputs is below this
# fraction of the target's spread explains under 1e-4 of its variance
# (training R^2 < 1e-4): the predictions are a constant.
NO_SIGNAL_RATIO = 0.01
# The spread is estimated on at most this many evenly spaced training rows,
# so that the check costs one small prediction whatever the data size.
_CHECK_ROWS = 200
# Distance (log units) from a bound within which draws of a sampler that
# reflects at the bound (SGLD) or rejects beyond it (HMC) count as on it:
# such draws never reach the bound exactly, and a posterior with half its
# draws within 5% of the bound is pressed against it.
NEAR_BOUND = 0.05
# Fraction of particles or draws on a bound that counts as collapsed there.
_PINNED_FRACTION = 0.5
# Share of the training targets at one value from which a collapsed noise
# variance is blamed on those ties. Noisy continuous targets hold no ties;
# a fifth of them at one value is a point mass (zero counts, a censoring
# limit), which a flexible fit interpolates exactly, and a noise shared by
# every row then collapses: visits to Lake Somerville (Ecdat, 659 homes),
# 0 for the 55% who never rated the lake, pinned it in three estimators.
_TIED_SHARE = 0.2
# A length scale this many times its input's spread (inputs are standardised
# by default) makes the input irrelevant: a point estimate of an ARD kernel
# sends an irrelevant input's length scale to its upper bound, and a bound
# still further out would change no prediction. Such a bound is no warning;
# a user's tighter bound (the fitted function wants to be smoother than it
# allows) still is.
_IRRELEVANT_LENGTH_SCALE = 1e4


def _check_rows(n_samples):
    return np.unique(
        np.linspace(0, n_samples - 1, min(n_samples, _CHECK_ROWS)).astype(int)
    )


def _outputs_and_targets(estimator, X, y):
    """Fitted outputs and the targets they should follow, column by column.

    Classifiers compare class probabilities with the one-hot labels, so
    that both kinds of estimator are judged on one scale.
    """
    if hasattr(estimator, "classes_"):
        outputs = estimator.predict_proba(X)
        targets = (y[:, None] == estimator.classes_[None, :]).astype(np.float64)
        return outputs, targets
    outputs = estimator.predict(X).reshape(X.shape[0], -1)  # (n, t) for t targets
    return outputs, y.reshape(X.shape[0], -1).astype(np.float64)


def signal_ratio(estimator, X, y):
    """Largest ratio of the fitted outputs' spread to the targets' spread.

    Parameters
    ----------
    estimator : fitted estimator
        A regressor (``predict``) or a classifier (``predict_proba`` and
        ``classes_``).
    X : ndarray of shape (n_samples, n_features)
        Validated training inputs.
    y : ndarray of shape (n_samples,)
        Validated training targets or labels.

    Returns
    -------
    float
        ``max_k std(output_k) / std(target_k)`` over the output columns with
        a non-zero target spread, on at most 200 evenly spaced training
        rows; NaN when no target varies (nothing to explain).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyRegressor
    >>> from skgp_bayes._fit_checks import signal_ratio
    >>> X = np.arange(6.0)[:, None]
    >>> y = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    >>> float(signal_ratio(DummyRegressor().fit(X, y), X, y))
    0.0
    """
    rows = _check_rows(X.shape[0])
    # The training inputs are validated already: the prediction's own input
    # notices (feature names, numerical safeguards) would repeat fit's.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outputs, targets = _outputs_and_targets(estimator, X[rows], y[rows])
    # Spreads of targets near the double range (1e200) overflow when
    # squared; the ratio is scale-free, so both sides are divided first.
    scale = np.max(np.abs(targets), axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    target_spread = np.std(targets / scale, axis=0)
    varies = target_spread > 0
    if not np.any(varies):
        return np.nan
    spreads = np.std(outputs[:, varies] / scale[varies], axis=0)
    return float(np.max(spreads / target_spread[varies]))


def prior_only(estimator, n_samples):
    """The estimator to fit ``n_samples`` with: with one, a prior-only copy.

    One sample carries no information about the kernel's hyperparameters
    (its target is 0 once scaled), so optimising them on it only drives the
    signal variance to its lower bound. With one sample this returns a copy
    of ``estimator`` that runs no optimisation iteration (every parameter
    named ``n_*_iter`` set to 0): the hyperparameters keep their initial,
    prior values. Otherwise it returns ``estimator`` itself.

    Parameters
    ----------
    estimator : estimator
    n_samples : int

    Returns
    -------
    estimator

    Examples
    --------
    >>> from skgp_bayes import SelectiveSVGP
    >>> from skgp_bayes._fit_checks import prior_only
    >>> prior_only(SelectiveSVGP(), 1).n_pre_iter
    0
    >>> est = SelectiveSVGP()
    >>> prior_only(est, 10) is est
    True
    """
    if n_samples != 1:
        return estimator
    iterations = [
        p
        for p in estimator.get_params(deep=False)
        if p.startswith("n_") and p.endswith("_iter")
    ]
    return clone(estimator).set_params(**dict.fromkeys(iterations, 0))


def _warn_one_sample(name):
    warn_user(
        f"{name} was fitted on 1 sample: the target's scale is taken as 1, the "
        "hyperparameters keep their prior and the predictions are the prior's "
        "around that one value. Fit on more samples for a posterior that has "
        "learned from the data.",
        DegenerateFitWarning,
    )


def _warn_no_signal(estimator, ratio, n_samples, n_features):
    wide = (
        f" With {n_features} features and {n_samples} samples, a kernel "
        "over all the features sees mostly noise: keep the relevant features "
        "(or reduce them, for example with PCA) and fit again."
        if n_features >= n_samples
        else ""
    )
    # the count penalty can prune the inducing points until the signal
    # variance collapses with them (seen on 150 rows of sklearn's diabetes)
    pruned = (
        " The penalty on the number of inducing points (alpha) can prune "
        "them until nothing is left to fit: lower alpha (alpha=0 removes the "
        "penalty) and fit again."
        if "alpha" in estimator.get_params(deep=False)
        else ""
    )
    warn_user(
        f"{type(estimator).__name__} kept no signal: its fitted function "
        f"varies by {ratio:.2g} of the target's spread over the training "
        f"inputs (training R^2 about {ratio**2:.1g}), so every prediction is "
        "close to the mean. Either X does not predict y, or the fit missed "
        f"it.{pruned} Standardise X (for example with "
        "sklearn.preprocessing.StandardScaler) and check that the kernel's "
        f"length-scale and signal-variance bounds allow the variation you "
        f"expect.{wide}",
        DegenerateFitWarning,
    )


def _warn_single_inducing(name, n_candidates, expected):
    warn_user(
        f"{name} kept 1 of {n_candidates} candidate inducing points (expected "
        f"number {expected:.1f}): the fitted function is one kernel bump around "
        "that point and the prior elsewhere. Lower alpha (the penalty on the "
        "number of inducing points; alpha=0 removes it) and fit again.",
        DegenerateFitWarning,
    )


def warn_degenerate_fit(estimator, X, y):
    """Warn if a fit just completed is degenerate.

    Call at the very end of ``fit``, once the fitted attributes are set.
    One training sample gives one warning and no further check; otherwise a
    fit that keeps no signal (see :func:`signal_ratio`) and a selective fit
    that kept a single inducing point each warn.

    Parameters
    ----------
    estimator : fitted estimator
    X : ndarray of shape (n_samples, n_features)
        The validated training inputs.
    y : ndarray of shape (n_samples,)
        The validated training targets or labels.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn.dummy import DummyRegressor
    >>> from skgp_bayes._fit_checks import warn_degenerate_fit
    >>> X, y = np.arange(6.0)[:, None], np.arange(6.0)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_degenerate_fit(DummyRegressor().fit(X, y), X, y)
    >>> "kept no signal" in str(caught[0].message)
    True
    """
    name = type(estimator).__name__
    # partial_fit chunks of one sample continue a fit on more
    if getattr(estimator, "n_samples_seen_", X.shape[0]) == 1:
        _warn_one_sample(name)
        return
    ratio = signal_ratio(estimator, X, y)
    if ratio < NO_SIGNAL_RATIO:
        _warn_no_signal(estimator, ratio, *X.shape)
    candidates = getattr(estimator, "candidates_", None)
    if getattr(estimator, "n_inducing_", None) == 1 and candidates.shape[0] > 1:
        _warn_single_inducing(name, candidates.shape[0], estimator.expected_n_inducing_)


def warn_at_bounds(values, bounds, names, what, tol=1e-6, y=None):
    """Warn for each parameter that most particles or draws pin to a bound.

    Parameters
    ----------
    values : ndarray of shape (n_draws, n_columns)
        Log-scale parameter values (particles, draws, or one fitted point);
        the first ``n_params`` columns are checked, so that unbounded
        coordinates may follow.
    bounds : ndarray of shape (n_params, 2)
        Log-scale bounds.
    names : sequence of str
        At least ``n_params`` names, one per column.
    what : str
        What the rows are, for the message ("HMC draws", "fits").
    tol : float or "spread", default=1e-6
        Distance (log units) within which a value counts as on the bound.
        Samplers that reflect at a bound or reject beyond it never reach it
        exactly and pass ``"spread"``: twice the draws' own standard
        deviation in that parameter, between ``NEAR_BOUND`` and 0.5. Most
        draws are then that close to a bound exactly when the posterior's
        mode is at (or within about two standard deviations of) it: for a
        posterior piled against the bound (a truncated exponential or
        half-normal shape) 77-86% of draws are, for a Gaussian posterior
        centred three standard deviations away 16%.
    y : ndarray of shape (n_samples,), optional
        The training targets: a noise variance on its lower bound where a
        fifth or more of them share one value says so.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skgp_bayes._fit_checks import warn_at_bounds
    >>> bounds = np.log([[1e-5, 1e5]])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_at_bounds(np.log([[1e-5], [1e-5]]), bounds, ["k1__constant_value"],
    ...                    "draws")
    >>> "lower bound" in str(caught[0].message)
    True
    """
    values = np.atleast_2d(values)
    if values.shape[0] == 0:
        return
    for j, name in enumerate(names[: bounds.shape[0]]):
        if bounds[j, 0] == bounds[j, 1]:  # fixed by the user
            continue
        near = tol
        if tol == "spread":
            near = float(np.clip(2.0 * np.std(values[:, j]), NEAR_BOUND, 0.5))
        for side, label in ((0, "lower"), (1, "upper")):
            if side == 1 and _irrelevant_input_bound(name, bounds[j, side]):
                continue
            pinned = np.abs(values[:, j] - bounds[j, side]) <= near
            if np.mean(pinned) >= _PINNED_FRACTION:
                _warn_pinned(name, label, np.exp(bounds[j, side]), pinned, what, y)


def _irrelevant_input_bound(name, log_bound):
    return "length_scale" in name and log_bound >= np.log(_IRRELEVANT_LENGTH_SCALE)


def _bound_setting(name):
    """The setting that holds the bound of parameter ``name``."""
    if name == "noise_variance":
        return "noise_variance_bounds"
    # "latent1__k2__length_scale[3]" is bounded by k2__length_scale_bounds
    base = name.split("[")[0]
    if base.startswith("latent") and "__" in base:
        base = base.split("__", 1)[1]
    return f"the kernel's {base}_bounds"


def _largest_tie(y):
    """The share of ``y`` at its most frequent value (0 without ``y``)."""
    if y is None or np.size(y) == 0:
        return 0.0
    _, counts = np.unique(np.asarray(y).ravel(), return_counts=True)
    return counts.max() / np.size(y)


def _warn_pinned(name, label, bound, pinned, what, y=None):
    hint, tied = "", 0.0
    if label == "lower" and "constant_value" in name:
        hint = (
            " A signal variance at its lower bound means the fit found no signal in X."
        )
    elif label == "lower" and name == "noise_variance":
        # the bound exists to keep K + noise I well conditioned
        hint = (
            " Data without noise at this scale pin it there: if y is exact, "
            "set noise_variance to a small value with "
            "noise_variance_bounds='fixed'."
        )
        tied = _largest_tie(y)
        if tied >= _TIED_SHARE:
            hint = (
                f" {tied:.0%} of the training targets share one value, which "
                "the fit reproduces exactly, and a noise variance shared by "
                "every row then collapses: intervals for y hold almost no "
                "noise where y varies. A likelihood for such data fits them "
                "better (counts: VariationalMCMCRegressor(likelihood="
                "'poisson')); or raise the lower bound of "
                "noise_variance_bounds to the noise you expect."
            )
    verb = "Lower" if label == "lower" else "Raise"
    advice = (
        f" {verb} that bound ({_bound_setting(name)}) and fit again if such "
        "values are plausible."
    )
    if tied >= _TIED_SHARE:  # lowering the floor would not help
        advice = ""
    warn_user(
        f"The parameter {name} is at its {label} bound {bound:.3g} for "
        f"{int(pinned.sum())} of {pinned.size} {what}: the data pull it "
        f"beyond the bound.{advice}{hint}",
        DegenerateFitWarning,
    )
