"""Compiled Monte Carlo ``E[softmax(F_i)]`` with ``F_i = mu_i + s_i * eps``.

The NumPy form builds the latent draws, their softmax and its mean as
``S x n x C`` temporaries: for a three-class predictive over ten particles
at 105 inputs with 256 draws, 800,000-element arrays made and read four
times, 50 ms of a 57 ms ``predict_proba``. One loop over points and draws
holds ``C`` numbers at a time.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True)
def softmax_expectation(mu, scale, eps):
    """``mean_s softmax(mu_i + scale_i * eps[s, i])`` for every point ``i``.

    Parameters
    ----------
    mu, scale : ndarray of shape (n, C)
        Latent means and standard deviations.
    eps : ndarray of shape (S, 1, C) or (S, n, C)
        Standard-normal draws, shared by every point or one set per point.

    Returns
    -------
    ndarray of shape (n, C)
        The average of the ``S`` softmax vectors of each point.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.likelihoods._softmax_numba import softmax_expectation
    >>> p = softmax_expectation(np.zeros((1, 2)), np.ones((1, 2)), np.zeros((4, 1, 2)))
    >>> p
    array([[0.5, 0.5]])
    """
    n, n_classes = mu.shape
    n_draws = eps.shape[0]
    shared = eps.shape[1] == 1
    out = np.zeros((n, n_classes))
    f = np.empty(n_classes)
    for i in range(n):
        row = 0 if shared else i
        for s in range(n_draws):
            top = -np.inf
            for c in range(n_classes):
                f[c] = mu[i, c] + scale[i, c] * eps[s, row, c]
                top = max(top, f[c])
            total = 0.0
            for c in range(n_classes):
                f[c] = math.exp(f[c] - top)
                total += f[c]
            for c in range(n_classes):
                out[i, c] += f[c] / total
        for c in range(n_classes):
            out[i, c] /= n_draws
    return out
