"""Plumbing shared by every estimator, each piece defined once.

The query check, the progress lines, the kernel a fit starts from, the
wrapper around ``fit`` (parameter validation, Ctrl-C, warnings), the
fit-time clock and the installation of fitted attributes. The policy
behind the defaults lives in :mod:`skgp_bayes._defaults`; this module only
applies it.
"""

import time

from sklearn.base import _fit_context, clone

from ._defaults import default_kernel, query_inputs
from ._interrupt import keyboard_interrupt_passes
from ._progress import CallbackMixin, fit_callbacks
from ._warnings import fit_warnings

__all__ = ["EstimatorBase", "Printer", "fit_method", "seconds_since"]


class Printer:
    """A progress printer that writes ``[name] message`` lines.

    A class rather than a closure so that it pickles into worker processes.

    Parameters
    ----------
    name : str
        The prefix in brackets, usually the estimator's class name.

    Examples
    --------
    >>> from skgp_bayes._base import Printer
    >>> Printer("SGLDGPRegressor chain 0")("burn-in done")
    [SGLDGPRegressor chain 0] burn-in done
    """

    def __init__(self, name):
        self.name = name

    def __call__(self, msg):
        print(f"[{self.name}] {msg}")


def fit_method(method):
    """Wrap an estimator's ``fit`` or ``partial_fit``.

    scikit-learn's parameter validation, its fit callbacks where the
    installed version has them (:func:`~skgp_bayes._progress.fit_callbacks`),
    a ``KeyboardInterrupt`` that passes through compiled code, and the fit's
    warnings issued once each at the user's line: every fit needs the four,
    in this order.

    Parameters
    ----------
    method : callable
        ``fit(self, X, y, ...)`` or ``partial_fit(self, X, y, ...)``.

    Returns
    -------
    callable
        The wrapped method.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from skgp_bayes._base import fit_method
    >>> class Mean(BaseEstimator):
    ...     _parameter_constraints = {}
    ...     @fit_method
    ...     def fit(self, X, y):
    ...         self.mean_ = sum(y) / len(y)
    ...         return self
    >>> Mean().fit([[0], [1]], [1.0, 3.0]).mean_
    2.0
    """
    guarded = keyboard_interrupt_passes(fit_warnings()(method))
    return _fit_context(prefer_skip_nested_validation=True)(fit_callbacks(guarded))


def seconds_since(start):
    """Seconds on the fit clock since ``start``, a ``time.perf_counter()``.

    Parameters
    ----------
    start : float
        A reading of :func:`time.perf_counter`.

    Returns
    -------
    float

    Examples
    --------
    >>> import time
    >>> from skgp_bayes._base import seconds_since
    >>> seconds_since(time.perf_counter()) >= 0.0
    True
    """
    return time.perf_counter() - start


class EstimatorBase(CallbackMixin):
    """Mixin of the plumbing every estimator shares.

    It expects the estimator's ``kernel`` and ``verbose`` parameters and,
    once fitted, the attributes that :func:`~skgp_bayes._defaults.query_inputs`
    reads.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from skgp_bayes._base import EstimatorBase
    >>> class Tiny(EstimatorBase, BaseEstimator):
    ...     def __init__(self, kernel=None, verbose=0):
    ...         self.kernel, self.verbose = kernel, verbose
    >>> Tiny()._new_kernel(2)
    1**2 * RBF(length_scale=[1.41, 1.41])
    >>> Tiny()._log("started")
    [Tiny] started
    """

    def _log(self, msg):
        print(f"[{type(self).__name__}] {msg}")

    def _validate_query(self, X):
        return query_inputs(self, X)

    def _new_kernel(self, n_features):
        """The kernel a fresh fit starts from: the user's, cloned, or the
        default of :func:`~skgp_bayes._defaults.default_kernel`."""
        if self.kernel is None:
            return default_kernel(n_features)
        return clone(self.kernel)

    def _set_fitted(self, fitted, model_specific=()):
        """Install a fit's attributes, all at once.

        Attributes in ``model_specific`` that this fit did not set belong
        to another model of the same estimator (exact or sparse) and must
        not outlive the refit.
        """
        for key in model_specific:
            if key not in fitted:
                self.__dict__.pop(key, None)
        self.__dict__.update(fitted)
