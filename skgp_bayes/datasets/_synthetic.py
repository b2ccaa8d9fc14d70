"""Synthetic data generators."""

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_neal_multimodal"]


def _neal_mean(x):
    """Noise-free regression function of Neal (1997)."""
    return 0.3 + 0.3 * x + 0.5 * np.sin(2.7 * x) + 1.1 / (1.0 + x**2)


def _check_nonnegative(value, name):
    if not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}.")
    return float(value)


def make_neal_multimodal(
    n_samples=200,
    *,
    outlier_prob=0.05,
    noise_std=0.1,
    outlier_std=1.0,
    random_state=None,
):
    """Generate Neal's 1-D regression data with outliers.

    The data of Neal (1997), used for the multimodal hyperparameter posterior
    of the Stein variational GP paper (Pinder et al., section 5.2)::

        x ~ N(0, 1)
        y = 0.3 + 0.3 x + 0.5 sin(2.7 x) + 1.1 / (1 + x^2) + eps
        eps ~ N(0, sigma^2), sigma = outlier_std with probability outlier_prob,
                             sigma = noise_std otherwise.

    The paper simulates 200 points and uses the first 100 for fitting and the
    other 100 for evaluation.

    Parameters
    ----------
    n_samples : int, default=200
        Number of points.
    outlier_prob : float, default=0.05
        Probability that a point gets the larger noise ``outlier_std``.
    noise_std : float, default=0.1
        Noise standard deviation of ordinary points.
    outlier_std : float, default=1.0
        Noise standard deviation of outliers.
    random_state : int, RandomState instance or None, default=None
        Seed or generator, as in :func:`sklearn.utils.check_random_state`.

    Returns
    -------
    X : ndarray of shape (n_samples, 1)
        Inputs.
    y : ndarray of shape (n_samples,)
        Noisy targets.

    References
    ----------
    Neal, R. M. (1997). Monte Carlo implementation of Gaussian process models
    for Bayesian regression and classification. arXiv:physics/9701026.

    Examples
    --------
    >>> from skgp_bayes.datasets import make_neal_multimodal
    >>> X, y = make_neal_multimodal(200, random_state=0)
    >>> X.shape, y.shape
    ((200, 1), (200,))
    >>> X_train, y_train, X_test, y_test = X[:100], y[:100], X[100:], y[100:]
    """
    if (
        isinstance(n_samples, bool)
        or not isinstance(n_samples, numbers.Integral)
        or n_samples < 1
    ):
        raise ValueError(f"n_samples must be an int >= 1; got {n_samples!r}.")
    outlier_prob = _check_nonnegative(outlier_prob, "outlier_prob")
    if outlier_prob > 1:
        raise ValueError(f"outlier_prob must lie in [0, 1]; got {outlier_prob!r}.")
    noise_std = _check_nonnegative(noise_std, "noise_std")
    outlier_std = _check_nonnegative(outlier_std, "outlier_std")

    rng = check_random_state(random_state)
    # Draw in a fixed order (inputs, outlier flags, noise) so that a seed
    # gives the same inputs whatever the noise settings are.
    x = rng.standard_normal(n_samples)
    is_outlier = rng.uniform(size=n_samples) < outlier_prob
    sigma = np.where(is_outlier, outlier_std, noise_std)
    y = _neal_mean(x) + sigma * rng.standard_normal(n_samples)
    return x[:, None], y
