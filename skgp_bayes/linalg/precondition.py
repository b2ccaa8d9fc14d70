"""Low-rank-plus-diagonal preconditioners for kernel systems.

A partial pivoted Cholesky factor ``L`` (rank ``k``) of the kernel matrix,
taken greedily on the largest remaining diagonal entry, captures its leading
eigenvalues from ``k`` columns and ``O(n k^2)`` work. With the noise ``s2``,

    P = L L' + s2 I,  P^-1 = (I - L (s2 I + L' L)^-1 L') / s2,

is cheap to apply and clusters the spectrum of ``P^-1 K``: CG then converges
in a few tens of iterations where the plain iteration needs hundreds for a
smooth kernel with little noise. Putting the residual diagonal of the
factorisation into ``D`` as well (FITC-like) was tried and needed about 40%
more iterations on Concrete.
"""

import numpy as np
import scipy.linalg

from .._threads import blas_threads_for
from .cg import to_host

__all__ = ["pivoted_cholesky", "LowRankPreconditioner", "kernel_preconditioner"]

# Rows per block when extracting the cross kernel's diagonal.
_DIAG_BLOCK = 32

# Rows from which a device backend also builds the pivoted Cholesky factor on
# the device. A device step is launch-bound, about constant in n; a host step
# is one kernel column and one (n, k) product, linear in n. Measured on an
# H200 with a 16-core host, rank 100, d = 8 (benchmarks/RESULTS.md): the
# device factor took 0.047-0.054 s at every n from 2,000 to 22,784, the
# host's 0.034 s at 5,000 and 0.067 s at 10,000 rows; the lines cross near
# 7,200 rows.
DEVICE_PIVOTING_MIN_ROWS = 8_000


def pivoted_cholesky(diag, column, rank, *, rel_tol=1e-10, xp=np):
    """Partial pivoted Cholesky factor of a positive semi-definite matrix.

    Parameters
    ----------
    diag : ndarray of shape (n,)
        Diagonal of the matrix.
    column : callable
        ``column(i)`` returns column ``i`` of the matrix, shape (n,).
    rank : int
        Largest number of columns of the factor.
    rel_tol : float, default=1e-10
        Stop early when the remaining trace falls below ``rel_tol`` times the
        full trace (the factor is then exact to that precision).
    xp : module, default=numpy
        Array module in which the factor is built; ``column`` returns arrays
        of it. On a GPU the columns come from the device and each step is a
        few device passes, where the host would copy every column over.

    Returns
    -------
    L : array of shape (n, k), k <= rank, of module ``xp``
        ``L L'`` approximates the matrix; it is exact on the pivot rows and
        columns.
    residual_diag : array of shape (n,), of module ``xp``
        Diagonal of the matrix minus ``L L'`` (non-negative).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import pivoted_cholesky
    >>> rng = np.random.default_rng(0)
    >>> G = rng.normal(size=(6, 3))
    >>> A = G @ G.T  # rank 3
    >>> L, rest = pivoted_cholesky(np.diag(A), lambda i: A[:, i], 5)
    >>> L.shape[1], bool(np.allclose(L @ L.T, A)), bool(rest.max() < 1e-8)
    (3, True, True)
    """
    # Round-off can leave tiny negative entries; clipped, the remaining
    # trace is their sum.
    d = xp.maximum(xp.asarray(diag, dtype=xp.float64), 0.0)
    n = d.shape[0]
    rank = int(min(rank, n))
    L = xp.zeros((n, max(rank, 0)))
    stop = rel_tol * float(xp.sum(d))
    k = 0
    with blas_threads_for(n, max(rank, 1)):
        while k < rank:
            i, pivot, remaining = _next_pivot(d, xp)
            if not pivot > 0.0 or remaining <= stop:
                break
            li = (xp.asarray(column(i), dtype=xp.float64) - L[:, :k] @ L[i, :k]) / (
                np.sqrt(pivot)
            )
            L[:, k] = li
            d -= li * li
            d[i] = 0.0
            d = xp.maximum(d, 0.0)
            k += 1
    # A non-finite column stays in the factor (NaN also ends the loop through
    # its pivot), so one check at the end sees every such column: one device
    # synchronisation instead of one per column.
    L = L[:, :k]
    if not bool(xp.all(xp.isfinite(L))):
        raise FloatingPointError(
            "The kernel returned NaN or infinite values; check the "
            "hyperparameters and the inputs."
        )
    return L, d


def _next_pivot(d, xp):
    """(index of the largest entry of ``d``, that entry, ``sum(d)``) on the host.

    On a device the three come back in one copy: measured on an H200, a
    step of the rank-100 factor took about 1 ms with four synchronisations
    (this one as three, and a finiteness test per column) and 0.5 ms with
    one, whatever the number of rows.
    """
    if xp is np:
        i = int(np.argmax(d))
        return i, float(d[i]), float(d.sum())
    at = xp.argmax(d)
    i, pivot, remaining = to_host(xp.stack((at.astype(xp.float64), d[at], xp.sum(d))))
    return int(i), float(pivot), float(remaining)


class LowRankPreconditioner:
    """``P = L L' + D`` with ``D`` diagonal and positive, applied by Woodbury.

    Parameters
    ----------
    L : array of shape (n, k)
        On the host, or already in ``xp`` (a factor built on the device).
    D : ndarray of shape (n,)
        Positive diagonal.
    xp : module, default=numpy
        Array module in which :meth:`solve` works.

    Attributes
    ----------
    rank : int

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import LowRankPreconditioner
    >>> rng = np.random.default_rng(0)
    >>> L, D = rng.normal(size=(5, 2)), np.full(5, 0.5)
    >>> P = LowRankPreconditioner(L, D)
    >>> V = rng.normal(size=(5, 3))
    >>> bool(np.allclose(P.solve(V), np.linalg.solve(L @ L.T + np.diag(D), V)))
    True
    """

    def __init__(self, L, D, xp=np):
        L = xp.asarray(L, dtype=xp.float64)
        D = np.asarray(D, dtype=np.float64)
        if not (np.all(D > 0) and np.all(np.isfinite(D))):
            raise ValueError("The diagonal of the preconditioner must be positive.")
        self.rank = L.shape[1]
        self.xp = xp
        # Products of n x k by k x k or n x few: threaded BLAS was measured
        # 15 times slower on them than one thread.
        self._shape = (L.shape[0], max(self.rank, 1))
        inv_d = 1.0 / D
        self._inv_d_dev = xp.asarray(inv_d)
        Ld = L * self._inv_d_dev[:, None]
        with blas_threads_for(*self._shape):
            # only the k x k inner matrix comes back to the host
            inner = np.eye(self.rank) + to_host(L.T @ Ld)
            chol = scipy.linalg.cholesky(inner, lower=True)
            inv_inner = scipy.linalg.cho_solve((chol, True), np.eye(self.rank))
        self._Ld_dev = Ld
        self._inv_inner_dev = xp.asarray(inv_inner)

    @classmethod
    def from_kernel(cls, diag, column, noise, rank, xp=np):
        """Pivoted Cholesky of rank ``rank`` plus the noise on the diagonal.

        Parameters
        ----------
        diag : ndarray of shape (n,)
            Diagonal of the kernel matrix (without ``noise``).
        column : callable
            ``column(i)``: column ``i`` of the kernel matrix (without ``noise``).
        noise : float
            Added to the diagonal of the system.
        rank : int
        xp : module, default=numpy

        Returns
        -------
        LowRankPreconditioner

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.linalg import LowRankPreconditioner
        >>> X = np.linspace(0, 1, 30)[:, None]
        >>> K = np.exp(-0.5 * (X - X.T) ** 2 / 0.3**2)
        >>> P = LowRankPreconditioner.from_kernel(np.diag(K), lambda i: K[:, i],
        ...                                       0.01, 10)
        >>> A = K + 0.01 * np.eye(30)
        >>> bool(np.linalg.cond(P.solve(A)) < 0.01 * np.linalg.cond(A))
        True
        """
        L, _ = pivoted_cholesky(diag, column, rank)
        return cls(L, np.full(L.shape[0], float(noise)), xp=xp)

    def solve(self, V):
        """``P^-1 V`` in the array module of the preconditioner.

        Parameters
        ----------
        V : array of shape (n, j) or (n,)

        Returns
        -------
        array of the shape of ``V``

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.linalg import LowRankPreconditioner
        >>> P = LowRankPreconditioner(np.ones((3, 1)), np.full(3, 2.0))
        >>> bool(np.allclose(P.solve(np.ones(3)) * 5.0, np.ones(3)))  # (J + 2I) 1 = 5
        True
        """
        if V.ndim == 1:
            return self.solve(V[:, None])[:, 0]
        scaled = V * self._inv_d_dev[:, None]
        if self.rank == 0:
            return scaled
        with blas_threads_for(*self._shape):
            inner = self._inv_inner_dev @ (self._Ld_dev.T @ V)
            return scaled - self._Ld_dev @ inner

    __call__ = solve


def kernel_preconditioner(adapter, theta, X, noise_variance, rank, xp=np):
    """Preconditioner for ``K_theta(X, X) + noise_variance I``, or None.

    Parameters
    ----------
    adapter : KernelAdapter
    theta : ndarray
        Log-scale kernel hyperparameters.
    X : ndarray of shape (n, d)
    noise_variance : float
    rank : int
        Columns of the pivoted Cholesky factor; 0 gives None (plain CG).
    xp : module, default=numpy
        Module in which the preconditioner is applied. From
        ``DEVICE_PIVOTING_MIN_ROWS`` rows a device module builds the factor
        too; below, the host builds it and the factors are copied once.

    Returns
    -------
    LowRankPreconditioner or None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.linalg import batched_cg, kernel_preconditioner
    >>> adapter = KernelAdapter(RBF(0.5))
    >>> X = np.linspace(0, 5, 200)[:, None]
    >>> A = adapter.gram(np.log([0.5]), X) + 1e-3 * np.eye(200)
    >>> P = kernel_preconditioner(adapter, np.log([0.5]), X, 1e-3, 30)
    >>> b = np.sin(X[:, 0])
    >>> plain = batched_cg(lambda V: A @ V, b, max_iter=400)
    >>> fast = batched_cg(lambda V: A @ V, b, precondition=P)
    >>> bool(fast.n_iter < plain.n_iter / 5), bool(fast.converged[0])
    (True, True)
    """
    if rank <= 0:
        return None
    n = X.shape[0]
    # A WhiteKernel inside the kernel is part of the Gram's diagonal but not of
    # the cross kernel: it goes into the preconditioner's diagonal with the
    # noise, and the factor approximates the rest (a low-rank factor cannot
    # represent a multiple of the identity).
    full_diag = adapter.diag(theta, X)
    if getattr(adapter, "is_fast", False):
        # the recognised kernels are stationary: k(x, x) is one number
        smooth_diag = np.full(n, adapter.cross(theta, X[:1], X[:1])[0, 0])
    else:
        smooth_diag = np.concatenate(
            [
                np.diag(
                    adapter.cross(theta, X[i : i + _DIAG_BLOCK], X[i : i + _DIAG_BLOCK])
                )
                for i in range(0, n, _DIAG_BLOCK)
            ]
        )
    white = np.maximum(full_diag - smooth_diag, 0.0)
    build = xp if n >= DEVICE_PIVOTING_MIN_ROWS else np
    L, _ = pivoted_cholesky(
        smooth_diag, adapter.kernel_columns_in(theta, X, build), rank, xp=build
    )
    return LowRankPreconditioner(L, white + noise_variance, xp=xp)
