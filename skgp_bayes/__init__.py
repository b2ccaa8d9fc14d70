"""Fully Bayesian Gaussian-process estimators for scikit-learn."""

from ._version import __version__
from .selective import SelectiveSVGP, SelectiveSVGPClassifier
from .sgld import SGLDGPRegressor
from .stein import SteinGPRegressor
from .stein_classifier import SteinGPClassifier
from .variational_mcmc import (
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
