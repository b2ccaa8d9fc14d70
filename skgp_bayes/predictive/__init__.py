"""Predictives: how parameter draws become predictions.

:mod:`~skgp_bayes.predictive.mixture` holds the algebra of equally weighted
Gaussian mixtures over draws; :mod:`~skgp_bayes.predictive.exact` the exact
(Cholesky and CG) per-draw GP predictives; :mod:`~skgp_bayes.predictive.sparse`
the moments, joint draws and pathwise samples of whitened sparse models; and
:mod:`~skgp_bayes.predictive.latent` the per-draw Gaussian latent predictives
of the whitened classification models.
"""
