"""Mixtures over parameter draws: from per-draw Gaussians to predictions.

Every estimator ends its fit with draws of shape ``(n_draws, n_params)``.
Each draw defines a Gaussian predictive at new inputs; the estimators'
``predict``, ``sample_y`` and ``log_predictive_density`` are the equally
weighted mixture over draws. The mixture algebra lives in free functions so
that other per-draw posteriors (sparse, latent) plug into the same path.
"""

import numpy as np
from scipy.special import logsumexp

from .._warnings import warn_user
from ..exceptions import NumericalWarning
from ..linalg import cholesky

__all__ = [
    "row_chunks",
    "mixture_mean_var",
    "mixture_mean_cov",
    "mixture_log_density",
    "gaussian_joint_draws",
]

_LOG_2PI = np.log(2.0 * np.pi)
# Rows of the query set handled at once, so that memory stays O(rows * n).
_CHUNK_BYTES = 64 * 1024**2


def mixture_mean_var(means, variances):
    """Mean and variance of an equally weighted mixture of Gaussians.

    Law of total variance: ``var = E_j[v_j + m_j^2] - mean^2``.

    Parameters
    ----------
    means, variances : ndarray of shape (J, m)

    Returns
    -------
    mean, var : ndarray of shape (m,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive.mixture import mixture_mean_var
    >>> mixture_mean_var(np.array([[-1.0], [1.0]]), np.array([[1.0], [1.0]]))
    (array([0.]), array([2.]))
    """
    mean = means.mean(axis=0)
    centred = means - mean
    var = variances.mean(axis=0) + np.mean(centred**2, axis=0)
    return mean, np.maximum(var, 0.0)


def mixture_mean_cov(means, covs):
    """Mean and covariance of an equally weighted Gaussian mixture.

    Parameters
    ----------
    means : ndarray of shape (J, m)
    covs : ndarray of shape (J, m, m)

    Returns
    -------
    mean : ndarray of shape (m,)
    cov : ndarray of shape (m, m)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive.mixture import mixture_mean_cov
    >>> m, c = mixture_mean_cov(np.array([[-1.0], [1.0]]), np.ones((2, 1, 1)))
    >>> c
    array([[2.]])
    """
    mean = means.mean(axis=0)
    centred = means - mean
    cov = covs.mean(axis=0) + centred.T @ centred / means.shape[0]
    return mean, cov


def mixture_log_density(y, means, variances):
    """Log density at ``y`` of an equally weighted mixture of Gaussians.

    Parameters
    ----------
    y : ndarray of shape (m,)
    means, variances : ndarray of shape (J, m)

    Returns
    -------
    ndarray of shape (m,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive.mixture import mixture_log_density
    >>> float(mixture_log_density(np.zeros(1), np.zeros((3, 1)), np.ones((3, 1)))[0])
    -0.9189385332046727
    """
    log_comp = -0.5 * (_LOG_2PI + np.log(variances) + (y - means) ** 2 / variances)
    return logsumexp(log_comp, axis=0) - np.log(means.shape[0])


def gaussian_joint_draws(mean, cov, n_samples, rng):
    """Joint draws from ``N(mean, cov)`` for a possibly singular ``cov``.

    A Cholesky factor with the jitter ladder is tried first; a covariance
    that is singular beyond it is handled by a symmetric eigendecomposition
    with negative eigenvalues set to zero.

    Parameters
    ----------
    mean : ndarray of shape (m,)
    cov : ndarray of shape (m, m)
    n_samples : int
    rng : numpy.random.RandomState

    Returns
    -------
    ndarray of shape (m, n_samples)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive.mixture import gaussian_joint_draws
    >>> rng = np.random.RandomState(0)
    >>> draws = gaussian_joint_draws(np.zeros(2), np.eye(2), 3, rng)
    >>> draws.shape
    (2, 3)
    """
    z = rng.standard_normal((mean.shape[0], n_samples))
    try:
        factor, _ = cholesky(cov, warn=False)
        return mean[:, None] + factor @ z
    except np.linalg.LinAlgError:
        eigval, eigvec = np.linalg.eigh(cov)
        root = eigvec * np.sqrt(np.maximum(eigval, 0.0))
        return mean[:, None] + root @ z


def clamp_variances(variances):
    """Set negative variances to zero, warning when they are not round-off."""
    lowest = float(np.min(variances)) if variances.size else 0.0
    if lowest < 0.0:
        scale = max(float(np.max(np.abs(variances))), np.finfo(float).tiny)
        if lowest < -1e-6 * scale:
            warn_user(
                f"Predictive variances as low as {lowest:.3g} were computed "
                "(loss of precision in an ill-conditioned kernel matrix); "
                "they were set to 0.",
                NumericalWarning,
                worst=-lowest,
            )
        np.maximum(variances, 0.0, out=variances)


def row_chunks(n_rows, n_cols, chunk_bytes=_CHUNK_BYTES):
    """Slices of at most ``chunk_bytes`` of float64 rows of ``n_cols``.

    Examples
    --------
    >>> from skgp_bayes.predictive.mixture import row_chunks
    >>> list(row_chunks(5, 1, chunk_bytes=16))
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    """
    size = max(1, chunk_bytes // (8 * max(n_cols, 1)))
    for start in range(0, n_rows, size):
        yield slice(start, min(start + size, n_rows))
