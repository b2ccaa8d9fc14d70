"""Old home of the exact draws, kept so that estimators pickled before
:mod:`skgp_bayes.predictive` held them still unpickle."""

from .predictive.exact import CGGPDraws, ExactGPDraws

__all__ = ["CGGPDraws", "ExactGPDraws"]
