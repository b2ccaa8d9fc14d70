"""Errors and warnings raised by skgp_bayes.

Every class here subclasses the standard library or scikit-learn type that a
user would already catch, so ``except np.linalg.LinAlgError`` or
``warnings.simplefilter("ignore", ConvergenceWarning)`` keep working.
"""

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "NotPSDError",
    "NumericalWarning",
    "SamplerWarning",
    "SolverConvergenceWarning",
    "DegenerateFitWarning",
    "BackendUnavailableError",
    "ConvergenceWarning",
]


class NotPSDError(np.linalg.LinAlgError):
    """A kernel matrix stayed non-positive-definite after the jitter ladder.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.exceptions import NotPSDError
    >>> from skgp_bayes.linalg import cholesky
    >>> try:
    ...     cholesky(-np.eye(2))
    ... except NotPSDError as err:
    ...     print("not positive definite")
    not positive definite
    """


class NumericalWarning(RuntimeWarning):
    """A numerical safeguard changed the computation (jitter, clipping).

    Examples
    --------
    >>> import warnings
    >>> from skgp_bayes.exceptions import NumericalWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", NumericalWarning)
    """


class SamplerWarning(ConvergenceWarning):
    """A sampler or particle method did not behave as it should.

    Raised for divergent or collapsing particles, poor acceptance rates and
    poor mixing diagnostics.

    Examples
    --------
    >>> from sklearn.exceptions import ConvergenceWarning
    >>> from skgp_bayes.exceptions import SamplerWarning
    >>> issubclass(SamplerWarning, ConvergenceWarning)
    True
    """


class SolverConvergenceWarning(NumericalWarning, ConvergenceWarning):
    """An iterative linear solver (conjugate gradients) missed its tolerance.

    Both a :class:`NumericalWarning` (the arithmetic is less exact than
    asked) and a :class:`~sklearn.exceptions.ConvergenceWarning` (an
    iteration budget ran out), so a filter on either catches it.

    Examples
    --------
    >>> from sklearn.exceptions import ConvergenceWarning
    >>> from skgp_bayes.exceptions import NumericalWarning, SolverConvergenceWarning
    >>> issubclass(SolverConvergenceWarning, NumericalWarning)
    True
    >>> issubclass(SolverConvergenceWarning, ConvergenceWarning)
    True
    """


class DegenerateFitWarning(ConvergenceWarning):
    """A fit finished but learned (almost) nothing from the data.

    Raised for a fit on one sample, a fitted function that is constant over
    the training inputs, a single kept inducing point, and hyperparameters
    that most particles or draws pin to a bound.

    Examples
    --------
    >>> from sklearn.exceptions import ConvergenceWarning
    >>> from skgp_bayes.exceptions import DegenerateFitWarning
    >>> issubclass(DegenerateFitWarning, ConvergenceWarning)
    True
    """


class BackendUnavailableError(ImportError):
    """An array backend (for example CuPy) was requested but cannot be used.

    Examples
    --------
    >>> from skgp_bayes.exceptions import BackendUnavailableError
    >>> issubclass(BackendUnavailableError, ImportError)
    True
    """
