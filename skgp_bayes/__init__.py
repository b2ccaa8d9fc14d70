"""Fully Bayesian Gaussian-process estimators for scikit-learn."""

__version__ = "0.1.0"

from .selective import SelectiveSVGP, SelectiveSVGPClassifier  # noqa: E402
from .sgld import SGLDGPRegressor  # noqa: E402
from .stein import SteinGPRegressor  # noqa: E402
from .stein_classifier import SteinGPClassifier  # noqa: E402
from .variational_mcmc import (  # noqa: E402
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)

__all__ = [
    "SelectiveSVGP",
    "SelectiveSVGPClassifier",
    "SGLDGPRegressor",
    "SteinGPClassifier",
    "SteinGPRegressor",
    "VariationalMCMCClassifier",
    "VariationalMCMCRegressor",
    "__version__",
]
