"""Per-draw Gaussian latent predictives of the whitened classification models.

Each parameter draw (an SVGD particle) fixes the kernel hyperparameters and
the whitened latent values; given them every latent function is Gaussian at
any query input. These classes give those per-draw means and (co)variances;
mixing them over draws and through the likelihood is the estimator's work.
"""

import numpy as np
from scipy.linalg import solve_triangular

from .._threads import blas_threads_for
from .mixture import row_chunks
from .sparse import SparseDrawsBase

__all__ = ["LatentDraws", "SparseLatentDraws", "example_draws"]

# Query rows handled at once, so that predict's memory stays O(rows * n).
_CHUNK_BYTES = 32 * 1024**2


def example_draws():
    """Three whitened-latent draws of a six-point binary problem, for examples.

    Examples
    --------
    >>> from skgp_bayes.predictive.latent import example_draws
    >>> example_draws().n_draws
    3
    """
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    from ..kernels import KernelAdapter
    from ..likelihoods import Bernoulli
    from ..targets.whitened import WhitenedLatentTarget

    X = np.linspace(-2, 2, 6)[:, None]
    y = (X[:, 0] > 0).astype(float)
    target = WhitenedLatentTarget(
        KernelAdapter(ConstantKernel() * RBF()), X, y, Bernoulli(), None
    )
    particles = np.random.default_rng(0).standard_normal((3, target.n_params))
    return LatentDraws(target, particles)


class LatentDraws:
    """Per-particle Gaussian latent predictives of the whitened model.

    For particle ``j`` and latent ``c``: mean ``K(x, X) L^-T nu_c`` and
    variance ``k(x, x) - |L^-1 K(X, x)|^2``. The ``L^-T nu`` vectors are
    kept; Cholesky factors are recomputed on first use and never pickled.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.predictive.latent import LatentDraws
    >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> target = WhitenedLatentTarget(
    ...     KernelAdapter(ConstantKernel() * RBF()), X, y, Bernoulli(), None)
    >>> particles = np.random.default_rng(0).standard_normal((3, target.n_params))
    >>> draws = LatentDraws(target, particles)
    >>> means, variances = draws.moments(np.array([[0.0], [1.0]]))
    >>> means.shape, variances.shape
    ((3, 1, 2), (3, 1, 2))
    """

    def __init__(self, target, particles, factors=None):
        self.target = target
        self.particles = np.asarray(particles, dtype=np.float64)
        self._factors = {} if factors is None else dict(factors)
        J = self.particles.shape[0]
        self.alphas = np.empty((J, target.n_latent, target.n))
        for j in range(J):
            _, nu = target.split(self.particles[j])
            for c in range(target.n_latent):
                L = self.factor(j, target.block_of_latent(c))
                self.alphas[j, c] = solve_triangular(
                    L, nu[c], lower=True, trans=1, check_finite=False
                )

    @property
    def n_draws(self):
        """Number of draws (particles).

        Examples
        --------
        >>> from skgp_bayes.predictive.latent import example_draws
        >>> draws = example_draws()
        >>> draws.n_draws
        3
        """
        return self.particles.shape[0]

    @property
    def n_latent(self):
        """Number of latent functions (1 for two classes, else one per class).

        Examples
        --------
        >>> from skgp_bayes.predictive.latent import example_draws
        >>> draws = example_draws()
        >>> draws.n_latent
        1
        """
        return self.target.n_latent

    @property
    def likelihood(self):
        """The target's likelihood, which turns latent values into classes.

        Examples
        --------
        >>> from skgp_bayes.predictive.latent import example_draws
        >>> draws = example_draws()
        >>> type(draws.likelihood).__name__
        'Bernoulli'
        """
        return self.target.likelihood

    def theta(self, j, block):
        """Kernel hyperparameters (log scale) of draw ``j`` in block ``block``.

        Examples
        --------
        >>> from skgp_bayes.predictive.latent import example_draws
        >>> draws = example_draws()
        >>> draws.theta(0, 0).shape
        (2,)
        """
        thetas, _ = self.target.split(self.particles[j])
        return thetas[block]

    def factor(self, j, block):
        """Cholesky factor of the Gram matrix of draw ``j``, block ``block``, cached.

        Examples
        --------
        >>> from skgp_bayes.predictive.latent import example_draws
        >>> draws = example_draws()
        >>> draws.factor(0, 0).shape
        (6, 6)
        """
        key = (j, block)
        if key not in self._factors:
            self._factors[key] = self.target.factor(self.theta(j, block))
        return self._factors[key]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_factors"] = {}
        return state

    def moments(self, Xq, *, full_cov=False, draws=None):
        """Means (J, C, m) and variances (J, C, m) or covariances (J, C, m, m).

        Examples
        --------
        >>> from skgp_bayes.predictive.latent import example_draws
        >>> draws = example_draws()
        >>> means, cov = draws.moments(np.array([[0.0], [1.0]]), full_cov=True)
        >>> means.shape, cov.shape
        ((3, 1, 2), (3, 1, 2, 2))
        """
        with blas_threads_for(self.target.n):
            return self._moments(Xq, full_cov, draws)

    def _moments(self, Xq, full_cov, draws):
        target = self.target
        draws = range(self.n_draws) if draws is None else draws
        C, m = target.n_latent, Xq.shape[0]
        means = np.empty((len(draws), C, m))
        spread = np.empty((len(draws), C, m, m) if full_cov else (len(draws), C, m))
        adapter, X = target.adapter, target.X
        for out, j in enumerate(draws):
            for block in range(target.n_blocks):
                theta = self.theta(j, block)
                L = self.factor(j, block)
                latents = range(C) if target.n_blocks == 1 else [block]
                cols = list(latents)
                if full_cov:
                    Ks = adapter.cross(theta, Xq, X)
                    V = solve_triangular(L, Ks.T, lower=True, check_finite=False)
                    cov = adapter.gram(theta, Xq) - V.T @ V
                    cov = 0.5 * (cov + cov.T)
                    means[out, cols] = (Ks @ self.alphas[j, cols].T).T
                    spread[out, cols] = cov
                    continue
                for rows in row_chunks(m, X.shape[0], _CHUNK_BYTES):
                    Ks = adapter.cross(theta, Xq[rows], X)
                    means[out, cols, rows] = (Ks @ self.alphas[j, cols].T).T
                    V = solve_triangular(L, Ks.T, lower=True, check_finite=False)
                    var = adapter.diag(theta, Xq[rows]) - np.einsum("ij,ij->j", V, V)
                    spread[out, cols, rows] = var
        if not full_cov:
            np.maximum(spread, 0.0, out=spread)
        return means, spread


class SparseLatentDraws(SparseDrawsBase):
    """Per-particle Gaussian latent predictives of the sparse model.

    Particle ``j`` holds ``(theta_j, v_j)``; given them every latent ``c``
    is ``N(A' v_jc, gamma)`` at any input, with ``A = R^-1 K(Z, x)`` and
    ``gamma = k(x, x) - |A|^2`` shared by the latents. The interface is the
    one of :class:`LatentDraws` (``moments`` with means ``(J, C, m)``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.predictive.latent import SparseLatentDraws
    >>> Z = np.linspace(-2, 2, 4)[:, None]
    >>> thetas, v = np.zeros((3, 2)), np.ones((3, 4, 1))  # 3 draws, 1 latent
    >>> draws = SparseLatentDraws(
    ...     KernelAdapter(ConstantKernel() * RBF()), Z, 1e-6, thetas, v,
    ...     Bernoulli())
    >>> means, variances = draws.moments(np.array([[0.0], [1.0]]))
    >>> means.shape, variances.shape
    ((3, 1, 2), (3, 1, 2))
    """

    def __init__(self, adapter, Z, jitter, kernel_thetas, v, likelihood):
        super().__init__(adapter, Z, jitter, kernel_thetas, v)  # v: (J, m, C)
        self.likelihood = likelihood

    @property
    def n_latent(self):
        """Number of latent functions (1 for two classes, else one per class).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.predictive.latent import SparseLatentDraws
        >>> Z = np.linspace(-2, 2, 4)[:, None]
        >>> thetas, v = np.zeros((3, 2)), np.ones((3, 4, 1))  # 3 draws, 1 latent
        >>> draws = SparseLatentDraws(
        ...     KernelAdapter(ConstantKernel() * RBF()), Z, 1e-6, thetas, v,
        ...     Bernoulli())
        >>> draws.n_latent
        1
        """
        return self.v.shape[2]

    def moments(self, Xq, *, full_cov=False, draws=None):
        """Means (J, C, m) and variances (J, C, m) or covariances (J, C, m, m).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.predictive.latent import SparseLatentDraws
        >>> Z = np.linspace(-2, 2, 4)[:, None]
        >>> thetas, v = np.zeros((3, 2)), np.ones((3, 4, 1))  # 3 draws, 1 latent
        >>> draws = SparseLatentDraws(
        ...     KernelAdapter(ConstantKernel() * RBF()), Z, 1e-6, thetas, v,
        ...     Bernoulli())
        >>> means, cov = draws.moments(np.array([[0.0], [1.0]]), full_cov=True)
        >>> means.shape, cov.shape
        ((3, 1, 2), (3, 1, 2, 2))
        """
        means, spread = self.latent_moments(Xq, full_cov=full_cov, draws=draws)
        means = np.ascontiguousarray(means.transpose(0, 2, 1))
        if not full_cov:
            np.maximum(spread, 0.0, out=spread)
        # The latents share one conditional (co)variance; each gets a copy,
        # which callers may factorise in place.
        return means, np.repeat(spread[:, None], self.n_latent, axis=1)
