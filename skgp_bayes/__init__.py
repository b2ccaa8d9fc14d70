"""Fully Bayesian Gaussian-process estimators for scikit-learn."""

__version__ = "0.1.0"

from .stein import SteinGPRegressor  # noqa: E402

__all__ = ["SteinGPRegressor", "__version__"]
