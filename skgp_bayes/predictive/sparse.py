"""Latent moments of whitened sparse Gaussian approximations.

``q(v) = N(q_mean, q_L q_L')`` over whitened inducing values ``v`` (with
``u = R v`` and ``R R' = K(Z, Z)``) gives at query inputs ``X`` the latent
``q(f)`` with mean ``A' q_mean`` and covariance
``K(X, X) - A' A + A' q_L q_L' A``, where ``A = R^-1 K(Z, X)``.
"""

import numpy as np

from .._threads import blas_threads_for
from ..targets.sparse import inducing_factor, project

__all__ = ["q_moments", "q_moments_per_latent"]

# Query rows per block, bounding memory at O(rows * m).
PREDICT_ROWS = 4096


def q_moments(adapter, theta, Z, jitter, q_mean, q_L, X, full_cov=False):
    """Mean and variance (or covariance) of ``q(f)`` at ``X``, one latent.

    Parameters
    ----------
    adapter : KernelAdapter
    theta : ndarray of shape (p,)
        Kernel hyperparameters (log scale).
    Z : ndarray of shape (m, d)
    jitter : float
        Relative jitter of ``K(Z, Z)``.
    q_mean : ndarray of shape (m,)
    q_L : ndarray of shape (m, m)
    X : ndarray of shape (k, d)
    full_cov : bool, default=False

    Returns
    -------
    mean : ndarray of shape (k,)
    var : ndarray of shape (k,), or cov of shape (k, k) with ``full_cov``

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.predictive.sparse import q_moments
    >>> adapter = KernelAdapter(RBF(1.0))
    >>> Z = np.array([[0.0], [1.0]])
    >>> mean, var = q_moments(adapter, np.zeros(1), Z, 1e-6, np.zeros(2),
    ...                       np.eye(2), np.array([[0.5]]))
    >>> mean.shape, bool(np.allclose(var, 1.0))
    ((1,), True)
    """
    with blas_threads_for(min(X.shape[0], PREDICT_ROWS), Z.shape[0]):
        R = inducing_factor(adapter, theta, Z, jitter)
        if full_cov:
            A, _, _ = project(adapter, theta, Z, X, R)
            B = q_L.T @ A
            cov = adapter.gram(theta, X) - A.T @ A + B.T @ B
            return A.T @ q_mean, 0.5 * (cov + cov.T)
        mean = np.empty(X.shape[0])
        var = np.empty(X.shape[0])
        for i0 in range(0, X.shape[0], PREDICT_ROWS):
            rows = slice(i0, i0 + PREDICT_ROWS)
            A, gamma, _ = project(adapter, theta, Z, X[rows], R)
            B = q_L.T @ A
            mean[rows] = A.T @ q_mean
            var[rows] = gamma + np.einsum("ij,ij->j", B, B)
    return mean, np.maximum(var, 0.0)


def q_moments_per_latent(adapter, theta, Z, jitter, q_mean, q_L, X):
    """Means and variances of ``q(f)`` at ``X`` for ``C`` independent latents.

    Parameters
    ----------
    adapter : KernelAdapter
    theta : ndarray of shape (p,)
    Z : ndarray of shape (m, d)
    jitter : float
    q_mean : ndarray of shape (m, C)
    q_L : ndarray of shape (C, m, m)
    X : ndarray of shape (k, d)

    Returns
    -------
    means, variances : ndarray of shape (k, C)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.predictive.sparse import q_moments_per_latent
    >>> adapter = KernelAdapter(RBF(1.0))
    >>> Z = np.array([[0.0], [1.0]])
    >>> q_L = np.stack([np.eye(2), np.eye(2)])
    >>> means, variances = q_moments_per_latent(
    ...     adapter, np.zeros(1), Z, 1e-6, np.zeros((2, 2)), q_L, np.zeros((3, 1)))
    >>> means.shape, bool(np.allclose(variances, 1.0))
    ((3, 2), True)
    """
    R = inducing_factor(adapter, theta, Z, jitter)
    n_latent = q_L.shape[0]
    means = np.empty((X.shape[0], n_latent))
    variances = np.empty((X.shape[0], n_latent))
    for i0 in range(0, X.shape[0], PREDICT_ROWS):
        rows = slice(i0, i0 + PREDICT_ROWS)
        A, gamma, _ = project(adapter, theta, Z, X[rows], R)
        B = np.einsum("cji,jk->cik", q_L, A)
        means[rows] = A.T @ q_mean
        variances[rows] = gamma[:, None] + np.einsum("cik,cik->kc", B, B)
    return means, variances
