"""Exact per-draw GP predictives: Cholesky and conjugate-gradient draws.

Each draw of kernel hyperparameters and noise variance conditions a GP on
the training data; the estimators average these predictives with
:mod:`skgp_bayes.predictive.mixture`.
"""

import numpy as np

from .._backend import get_array_module, to_numpy
from ..exceptions import BackendUnavailableError
from ..linalg import (
    batched_cg,
    cho_solve,
    cholesky,
    kernel_operator,
    kernel_preconditioner,
    triangular_solve,
)
from ..linalg.diagonal import add_to_diagonal
from .mixture import clamp_variances, row_chunks

# Internal until every method carries an example (tests/test_docstrings.py).
__all__ = []


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
    >>> from skgp_bayes.predictive.exact import ExactGPDraws
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
            add_to_diagonal(K, self.noise_variances[j])
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
            clamp_variances(spread)
        return means, spread


# Query rows per CG block in CGGPDraws.moments: memory O(rows * n).
CG_QUERY_BLOCK = 128


class CGGPDraws:
    """Per-draw GP posteriors through CG solves, for data too large to factorise.

    Same interface as :class:`~skgp_bayes.predictive.exact.ExactGPDraws`
    (``moments``, ``noise_variances``, ``n_draws``); solves run to ``tol``
    from a zero start, so predictions are deterministic. With
    ``preconditioner_rank > 0`` every solve is preconditioned by a pivoted
    Cholesky factor of that rank, rebuilt per draw when needed (storing one
    per draw would cost ``n_draws * n * rank`` floats). ``backend="cupy"``
    solves on the GPU (``K`` built and stored there); where CuPy or a GPU is
    missing, as for a model fitted on a GPU and loaded elsewhere, the solves
    run on the host to the same tolerance.
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
        backend="numpy",
    ):
        self.adapter = adapter
        self.backend = backend
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
        xp = self._array_module()
        operator = self._operator(j, xp)
        precond = kernel_preconditioner(
            self.adapter,
            self.kernel_thetas[j],
            self.X,
            self.noise_variances[j],
            self.preconditioner_rank,
            xp=xp,
        )

        def solve(rhs):
            result = batched_cg(
                operator, xp.asarray(rhs), tol=self.tol, xp=xp, precondition=precond
            )
            return to_numpy(result.x)

        return solve

    def _array_module(self):
        backend = getattr(self, "backend", "numpy")  # pickles from before it
        if backend == "numpy":
            return np
        try:
            return get_array_module(backend)
        except BackendUnavailableError:
            return np

    def _operator(self, j, xp):
        op, _ = kernel_operator(
            self.adapter,
            self.kernel_thetas[j],
            self.X,
            self.noise_variances[j],
            storage=self.storage,
            xp=xp,
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
