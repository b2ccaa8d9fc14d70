"""What several Stein models share: the regressor's kernels and noise, the
classifier's kernel block, prior and likelihood."""

from .._base import mean_kernel
from .._defaults import estimator_prior_set
from .._validation import check_bounds, check_finite_theta, variance_in_units
from ..kernels import KernelAdapter
from ..likelihoods import Bernoulli, Softmax

__all__ = ["kernel_prior", "latent_likelihood", "regressor_attributes"]


def regressor_attributes(kernel, kernel_thetas, noise, y, y_std):
    """A regressor's ``kernels_``, ``kernel_`` and ``noise_variance_``.

    Parameters
    ----------
    kernel : Kernel
        The kernel the fit started from.
    kernel_thetas : ndarray of shape (n_particles, n_kernel_params)
    noise : ndarray of shape (n_particles,)
        Noise variances on the model's (normalised) scale.
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
    y_std : float or ndarray of shape (n_targets,)

    Returns
    -------
    dict

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._stein_models.common import regressor_attributes
    >>> out = regressor_attributes(RBF(), np.zeros((2, 1)), np.ones(2),
    ...                            np.zeros(5), 2.0)
    >>> out["noise_variance_"]
    array([4., 4.])
    """
    return {
        "kernels_": [kernel.clone_with_theta(t) for t in kernel_thetas],
        "kernel_": mean_kernel(kernel, kernel_thetas),
        # y units; beyond ~1e154 the variance itself is not representable
        "noise_variance_": variance_in_units(
            noise if y.ndim == 1 else noise[:, None], y_std
        ),
    }


def kernel_prior(estimator, n_features):
    """Kernel, its adapter, bounds (log scale) and the prior of one block.

    Parameters
    ----------
    estimator : SteinGPClassifier
    n_features : int

    Returns
    -------
    kernel, adapter, bounds, prior_set

    Examples
    --------
    >>> from skgp_bayes import SteinGPClassifier
    >>> from skgp_bayes._stein_models.common import kernel_prior
    >>> est = SteinGPClassifier()
    >>> est.n_features_in_ = 2
    >>> kernel, adapter, bounds, prior_set = kernel_prior(est, 2)
    >>> bounds.shape
    (3, 2)
    """
    kernel = estimator._new_kernel(n_features)
    adapter = KernelAdapter(kernel)
    check_finite_theta(kernel.theta, adapter.param_names)
    block_bounds = adapter.bounds.copy()
    check_bounds(block_bounds, adapter.param_names)
    prior_set = estimator_prior_set(adapter, estimator.priors, n_features)
    return kernel, adapter, block_bounds, prior_set


def latent_likelihood(n_classes, link):
    """Likelihood and number of latent functions for ``n_classes``.

    Examples
    --------
    >>> from skgp_bayes._stein_models.common import latent_likelihood
    >>> latent_likelihood(3, "logit")[1]
    3
    """
    if n_classes == 2:
        return Bernoulli(link=link), 1
    return Softmax(n_classes=n_classes, random_state=0), n_classes
