"""From an array of parameter draws to predictions.

Every estimator ends its fit with draws of shape ``(n_draws, n_params)``.
Each draw defines a Gaussian predictive at new inputs; the estimators'
``predict``, ``sample_y`` and ``log_predictive_density`` are the equally
weighted mixture over draws. The mixture algebra lives in free functions so
that other per-draw posteriors (sparse, latent) plug into the same path.
"""

import numpy as np
from scipy.special import logsumexp

from ._warnings import warn_user
from .exceptions import NumericalWarning
from .linalg import (
    batched_cg,
    cho_solve,
    cholesky,
    kernel_operator,
    kernel_preconditioner,
    triangular_solve,
)

__all__ = [
    "row_chunks",
    "mixture_mean_var",
    "mixture_mean_cov",
    "mixture_log_density",
    "gaussian_joint_draws",
    "ExactGPDraws",
    "CGGPDraws",
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
    >>> from skgp_bayes._predictive import mixture_mean_var
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
    >>> from skgp_bayes._predictive import mixture_mean_cov
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
    >>> from skgp_bayes._predictive import mixture_log_density
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
    >>> from skgp_bayes._predictive import gaussian_joint_draws
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


def _clamp_variances(variances):
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
    >>> from skgp_bayes._predictive import row_chunks
    >>> list(row_chunks(5, 1, chunk_bytes=16))
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    """
    size = max(1, chunk_bytes // (8 * max(n_cols, 1)))
    for start in range(0, n_rows, size):
        yield slice(start, min(start + size, n_rows))


class ExactGPDraws:
    """Per-draw Gaussian posteriors of an exact GP with Gaussian noise.

    Holds ``alpha_j = (K_j + s2_j I)^-1 y`` for every draw; Cholesky
    factors are recomputed on first use of a variance and cached, but never
    pickled (they are ``n x n`` per draw).

    Parameters
    ----------
    adapter : KernelAdapter
    X : ndarray of shape (n, d)
        Training inputs.
    y : ndarray of shape (n,) or (n, t)
        Training targets on the model's (normalised) scale; the columns of a
        2-D ``y`` share each draw's hyperparameters, and so its factor and
        its predictive variance.
    kernel_thetas : ndarray of shape (J, n_kernel_params)
    noise_variances : ndarray of shape (J,)
        On the model's scale.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes._predictive import ExactGPDraws
    >>> X = np.linspace(0, 1, 4)[:, None]
    >>> draws = ExactGPDraws(KernelAdapter(RBF()), X, np.sin(X[:, 0]),
    ...                      np.zeros((2, 1)), np.array([0.1, 0.2]))
    >>> means, variances = draws.moments(X)
    >>> means.shape
    (2, 4)
    """

    def __init__(self, adapter, X, y, kernel_thetas, noise_variances):
        self.adapter = adapter
        self.X = X
        self.y = y
        self.kernel_thetas = np.asarray(kernel_thetas, dtype=np.float64)
        self.noise_variances = np.asarray(noise_variances, dtype=np.float64)
        self._factors = {}
        self.alphas = np.empty((self.n_draws, *np.shape(y)))
        for j in range(self.n_draws):
            self.alphas[j] = cho_solve(self.factor(j), y)

    @property
    def n_draws(self):
        """Number of draws in the mixture."""
        return self.kernel_thetas.shape[0]

    def factor(self, j):
        """Cholesky factor of draw ``j``'s training covariance (cached)."""
        if j not in self._factors:
            K = self.adapter.gram(self.kernel_thetas[j], self.X)
            K[np.diag_indices_from(K)] += self.noise_variances[j]
            self._factors[j] = cholesky(K, warn=False)[0]
        return self._factors[j]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_factors"] = {}
        return state

    def moments(self, X_query, *, full_cov=False, draws=None):
        """Per-draw predictive mean and variance (or covariance) of ``f``.

        Parameters
        ----------
        X_query : ndarray of shape (m, d)
        full_cov : bool, default=False
        draws : sequence of int, optional
            Subset of draws; all by default.

        Returns
        -------
        means : ndarray of shape (J, m), or (J, m, t) for a 2-D ``y``
        variances : ndarray of shape (J, m), or covariances (J, m, m)
        """
        draws = range(self.n_draws) if draws is None else draws
        m = X_query.shape[0]
        means = np.empty((len(draws), m, *self.alphas.shape[2:]))
        spread = np.empty((len(draws), m, m)) if full_cov else np.empty((len(draws), m))
        for out, j in enumerate(draws):
            theta = self.kernel_thetas[j]
            if full_cov:
                Ks = self.adapter.cross(theta, X_query, self.X)
                means[out] = Ks @ self.alphas[j]
                V = triangular_solve(self.factor(j), Ks.T)
                cov = self.adapter.gram(theta, X_query) - V.T @ V
                spread[out] = 0.5 * (cov + cov.T)
                continue
            for rows in row_chunks(m, self.X.shape[0]):
                Ks = self.adapter.cross(theta, X_query[rows], self.X)
                means[out, rows] = Ks @ self.alphas[j]
                V = triangular_solve(self.factor(j), Ks.T)
                prior_var = self.adapter.diag(theta, X_query[rows])
                spread[out, rows] = prior_var - np.einsum("ij,ij->j", V, V)
        if not full_cov:
            _clamp_variances(spread)
        return means, spread


# Query rows per CG block in CGGPDraws.moments: memory O(rows * n).
CG_QUERY_BLOCK = 128


class CGGPDraws:
    """Per-draw GP posteriors through CG solves, for data too large to factorise.

    Same interface as :class:`~skgp_bayes._predictive.ExactGPDraws`
    (``moments``, ``noise_variances``, ``n_draws``); solves run to ``tol``
    from a zero start, so predictions are deterministic. With
    ``preconditioner_rank > 0`` every solve is preconditioned by a pivoted
    Cholesky factor of that rank, rebuilt per draw when needed (storing one
    per draw would cost ``n_draws * n * rank`` floats).
    """

    def __init__(
        self,
        adapter,
        X,
        y,
        kernel_thetas,
        noise_variances,
        tol,
        storage,
        preconditioner_rank=0,
    ):
        self.adapter = adapter
        self.X = X
        self.y = y
        self.kernel_thetas = np.asarray(kernel_thetas, dtype=np.float64)
        self.noise_variances = np.asarray(noise_variances, dtype=np.float64)
        self.tol = tol
        self.storage = storage
        self.preconditioner_rank = preconditioner_rank
        self.alphas = np.empty((self.n_draws, X.shape[0]))
        for j in range(self.n_draws):
            self.alphas[j] = self.factor(j)(y)

    @property
    def n_draws(self):
        return self.kernel_thetas.shape[0]

    def factor(self, j):
        """A solver ``rhs -> (K_j + s2_j I)^-1 rhs`` by CG, in place of a factor.

        The pathwise sampler accepts a callable wherever it would solve with
        a Cholesky factor, so function samples need no factorisation here.
        """
        operator = self._operator(j)
        precond = kernel_preconditioner(
            self.adapter,
            self.kernel_thetas[j],
            self.X,
            self.noise_variances[j],
            self.preconditioner_rank,
        )
        return lambda rhs: (
            batched_cg(operator, rhs, tol=self.tol, precondition=precond).x
        )

    def _operator(self, j):
        op, _ = kernel_operator(
            self.adapter,
            self.kernel_thetas[j],
            self.X,
            self.noise_variances[j],
            storage=self.storage,
        )
        return op

    def moments(self, X_query, *, full_cov=False, draws=None):
        draws = range(self.n_draws) if draws is None else draws
        m = X_query.shape[0]
        means = np.empty((len(draws), m))
        spread = np.empty((len(draws), m, m)) if full_cov else np.empty((len(draws), m))
        for out, j in enumerate(draws):
            theta = self.kernel_thetas[j]
            solve = self.factor(j)
            if full_cov:
                Ks = self.adapter.cross(theta, X_query, self.X)
                means[out] = Ks @ self.alphas[j]
                V = solve(np.ascontiguousarray(Ks.T))
                cov = self.adapter.gram(theta, X_query) - Ks @ V
                spread[out] = 0.5 * (cov + cov.T)
                continue
            for start in range(0, m, CG_QUERY_BLOCK):
                rows = slice(start, min(m, start + CG_QUERY_BLOCK))
                Ks = self.adapter.cross(theta, X_query[rows], self.X)
                means[out, rows] = Ks @ self.alphas[j]
                V = solve(np.ascontiguousarray(Ks.T))
                prior = self.adapter.diag(theta, X_query[rows])
                spread[out, rows] = np.maximum(
                    prior - np.einsum("ij,ji->i", Ks, V), 0.0
                )
        return means, spread
