"""Predictives: how parameter draws become predictions.

:mod:`~skgp_bayes.predictive.latent` holds the per-draw Gaussian latent
predictives of the whitened classification models.
"""
