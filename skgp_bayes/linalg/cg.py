"""Batched conjugate gradients for symmetric positive definite systems.

One run solves ``A X = B`` for several right-hand sides at once (the targets
and the trace probes of a stochastic gradient): every iteration costs one
product ``A @ P`` with a block ``P`` of columns, which a kernel matrix-vector
routine computes in a single pass over ``A``. Each column keeps its own step
lengths, so the result equals running CG on every column alone.

The code uses only operations common to NumPy and CuPy, through an array
module ``xp``; no ``fastmath`` and no reduced precision are involved.
"""

import numpy as np

from .. import _config
from .._warnings import warn_user
from ..exceptions import SolverConvergenceWarning

__all__ = ["CGResult", "CGIteration", "batched_cg", "kernel_operator"]


class CGIteration:
    """State of batched CG, advanced one iteration at a time.

    Used directly by solvers that need every increment (ULISSE); most callers
    want :func:`batched_cg`.

    Parameters
    ----------
    matvec : callable
        ``matvec(V)`` returns ``A @ V`` for a block ``V`` of shape (n, j).
    B : array of shape (n, k)
        Right-hand sides.
    x0 : array of shape (n, k), optional
        Starting point (warm start); zeros by default.
    xp : module, default=numpy
        Array module of ``B``.
    precondition : callable, optional
        ``precondition(R)`` returns ``P^-1 R`` for a symmetric positive
        definite ``P`` close to ``A`` (preconditioned CG). The iterates still
        converge to ``A^-1 B`` and ``residual_norm`` is still that of
        ``B - A x``.

    Attributes
    ----------
    x : array of shape (n, k)
        Current iterate.
    residual_norm : ndarray of shape (k,)
        Norm of ``B - A x`` per column (recursively updated), on the host.
    n_iter : int
        Iterations taken.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg.cg import CGIteration
    >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> state = CGIteration(lambda V: A @ V, np.eye(2))
    >>> for _ in range(2):
    ...     _ = state.step()
    >>> np.allclose(state.x, np.linalg.inv(A))
    True
    """

    def __init__(self, matvec, B, x0=None, xp=np, precondition=None):
        self.matvec = matvec
        self.xp = xp
        self.precondition = precondition
        self.x = xp.zeros_like(B) if x0 is None else xp.array(x0, dtype=B.dtype)
        self.r = B - self._apply(self.x) if x0 is not None else B.copy()
        self.rr = to_host(xp.sum(self.r * self.r, axis=0))
        if precondition is None:
            self.p = self.r.copy()
            self.rz = self.rr
        else:
            self.p = precondition(self.r)
            self.rz = to_host(xp.sum(self.r * self.p, axis=0))
        self.n_iter = 0

    @property
    def residual_norm(self):
        """Norm of the (recursively updated) residual of every column.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.linalg.cg import CGIteration
        >>> CGIteration(lambda V: V, np.full((4, 1), 0.5)).residual_norm
        array([1.])
        """
        return np.sqrt(np.maximum(self.rr, 0.0))

    def _apply(self, V):
        out = self.matvec(V)
        if not bool(self.xp.all(self.xp.isfinite(out))):
            raise FloatingPointError(
                "The matrix-vector product returned NaN or infinite values; "
                "check the kernel hyperparameters and the inputs."
            )
        return out

    def step(self, active=None):
        """One CG iteration on the ``active`` columns (all by default).

        Parameters
        ----------
        active : ndarray of bool of shape (k,), optional
            Columns to advance; the others keep their iterate.

        Returns
        -------
        delta : array of shape (n, k)
            The change of the iterate; zero in inactive columns.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.linalg.cg import CGIteration
        >>> state = CGIteration(lambda V: 2.0 * V, np.ones((3, 2)))
        >>> state.step(np.array([True, False]))[:, 1]  # second column waits
        array([0., 0., 0.])
        """
        xp = self.xp
        k = self.rr.shape[0]
        active = np.ones(k, dtype=bool) if active is None else np.asarray(active)
        # A column whose residual is exactly zero is solved; stepping it
        # would divide 0 by 0.
        active = active & (self.rr > 0.0)
        delta = xp.zeros_like(self.x)
        if not active.any():
            return delta
        idx = np.flatnonzero(active)
        full = idx.size == k
        P = self.p if full else self.p[:, xp.asarray(idx)]
        AP = self._apply(P)
        pap = to_host(xp.sum(P * AP, axis=0))
        if np.any(pap <= 0.0):
            raise np.linalg.LinAlgError(
                "Conjugate gradients met a direction of non-positive curvature: "
                "the matrix is not positive definite to working precision."
            )
        rz = self.rz[idx]
        alpha = rz / pap
        step = P * xp.asarray(alpha)
        R = (self.r if full else self.r[:, xp.asarray(idx)]) - AP * xp.asarray(alpha)
        rr_new = to_host(xp.sum(R * R, axis=0))
        if self.precondition is None:
            Z, rz_new = R, rr_new
        else:
            Z = self.precondition(R)
            rz_new = to_host(xp.sum(R * Z, axis=0))
        beta = rz_new / rz
        P_new = Z + P * xp.asarray(beta)
        if full:
            delta = step
            self.r, self.p = R, P_new
        else:
            cols = xp.asarray(idx)
            delta[:, cols] = step
            self.r[:, cols] = R
            self.p[:, cols] = P_new
        self.x = self.x + delta
        self.rr = self.rr.copy()
        self.rr[idx] = rr_new
        if self.precondition is not None:
            self.rz = self.rz.copy()
            self.rz[idx] = rz_new
        else:
            self.rz = self.rr
        self.n_iter += 1
        return delta


def to_host(values):
    get = getattr(values, "get", None)
    if callable(get) and not isinstance(values, np.ndarray):
        values = get()
    return np.asarray(values, dtype=np.float64)


class CGResult:
    """Outcome of :func:`batched_cg`.

    Attributes
    ----------
    x : array of shape (n, k) or (n,)
        Solutions, in the shape of the right-hand side.
    n_iter : int
        Iterations run.
    residual : ndarray of shape (k,)
        Final relative residual ``|b - A x| / |b|`` per column (0 for a zero
        right-hand side).
    converged : ndarray of bool of shape (k,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import batched_cg
    >>> batched_cg(lambda V: 2.0 * V, np.ones(3)).converged
    array([ True])
    """

    def __init__(self, x, n_iter, residual, converged):
        self.x = x
        self.n_iter = n_iter
        self.residual = residual
        self.converged = converged

    def __repr__(self):
        return (
            f"CGResult(n_iter={self.n_iter}, "
            f"max_residual={float(np.max(self.residual, initial=0.0)):.3g})"
        )


def batched_cg(
    matvec, B, x0=None, *, tol=1e-8, max_iter=None, xp=np, warn=True, precondition=None
):
    """Solve ``A X = B`` by conjugate gradients, all columns at once.

    Parameters
    ----------
    matvec : callable
        ``matvec(V)`` returns ``A @ V`` for ``V`` of shape (n, j); ``A`` must
        be symmetric positive definite.
    B : array of shape (n,) or (n, k)
        Right-hand sides.
    x0 : array of the shape of ``B``, optional
        Warm start (for example the solutions at nearby hyperparameters).
    tol : float, default=1e-8
        Stop a column when ``|b - A x| <= tol * |b|``.
    max_iter : int, optional
        Iteration budget; ``n`` by default.
    xp : module, default=numpy
        Array module (``numpy`` or ``cupy``) of ``B`` and of ``matvec``'s
        output.
    warn : bool, default=True
        Issue a :class:`~skgp_bayes.exceptions.SolverConvergenceWarning`
        when a column misses ``tol``.
    precondition : callable, optional
        ``precondition(R) = P^-1 R`` (preconditioned CG); see
        :class:`~skgp_bayes.linalg.LowRankPreconditioner`.

    Returns
    -------
    CGResult

    Raises
    ------
    FloatingPointError
        When ``matvec`` returns NaN or infinity.
    numpy.linalg.LinAlgError
        When ``A`` shows non-positive curvature.

    Warns
    -----
    SolverConvergenceWarning
        When the budget runs out; the message gives the relative residual
        reached.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import batched_cg
    >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> res = batched_cg(lambda V: A @ V, np.array([[1.0, 0.0], [2.0, 0.0]]))
    >>> np.allclose(A @ res.x, [[1.0, 0.0], [2.0, 0.0]]), res.converged
    (True, array([ True,  True]))
    """
    vector = B.ndim == 1
    B2 = B[:, None] if vector else B
    n, k = B2.shape
    max_iter = n if max_iter is None else int(max_iter)
    b_norm = np.sqrt(to_host(xp.sum(B2 * B2, axis=0)))
    zero = b_norm == 0.0
    x0 = _checked_start(x0, B, zero, xp)
    state = CGIteration(matvec, B2, x0, xp, precondition)
    threshold = tol * b_norm
    while state.n_iter < max_iter:
        active = state.residual_norm > threshold
        if not active.any():
            break
        state.step(active)
    with np.errstate(divide="ignore", invalid="ignore"):
        residual = np.where(zero, 0.0, state.residual_norm / b_norm)
    converged = state.residual_norm <= threshold
    if warn and not converged.all():
        _warn_unconverged(residual, converged, tol, state.n_iter)
    x = state.x[:, 0] if vector else state.x
    return CGResult(x, state.n_iter, residual, converged)


def _checked_start(x0, B, zero, xp):
    """``x0`` as a matrix, with the columns of zero right-hand sides at 0."""
    if x0 is None:
        return None
    x0 = x0[:, None] if x0.ndim == 1 else x0
    if x0.shape != (B[:, None] if B.ndim == 1 else B).shape:
        raise ValueError(f"x0 must have shape {B.shape}, got {x0.shape}.")
    if zero.any():
        # The solution of a zero right-hand side is exactly 0 whatever the start.
        x0 = x0.copy()
        x0[:, xp.asarray(np.flatnonzero(zero))] = 0.0
    return x0


def _warn_unconverged(residual, converged, tol, n_iter):
    worst = float(np.max(residual))
    warn_user(
        f"Conjugate gradients reached a relative residual of "
        f"{worst:.3g} (tolerance {tol:.3g}) after "
        f"{n_iter} iterations for {int((~converged).sum())} of {converged.size} "
        "right-hand sides; increase max_iter, or the noise variance if the "
        "kernel matrix is ill-conditioned.",
        SolverConvergenceWarning,
        worst=worst,
    )


def kernel_operator(
    adapter, theta, X, noise_variance, *, storage="auto", xp=np, max_bytes=None
):
    """``V -> (K_theta(X, X) + noise_variance I) @ V`` for CG.

    Parameters
    ----------
    adapter : KernelAdapter
        The kernel.
    theta : ndarray
        Log-scale kernel hyperparameters.
    X : ndarray of shape (n, d)
        Inputs.
    noise_variance : float
        Added to the diagonal.
    storage : {"auto", "dense", "matrix_free"}, default="auto"
        ``"dense"`` builds ``K`` once and multiplies by it (fast when it fits
        in memory); ``"matrix_free"`` regenerates ``K`` tile by tile in every
        product through ``adapter.matvec`` (``O(n)`` memory); ``"auto"``
        stores ``K`` when ``8 n^2`` bytes fit in ``max_bytes``. The CuPy
        backend always stores ``K`` on the device.
    xp : module, default=numpy
        Array module for the products.
    max_bytes : int, optional
        Memory allowed for a stored ``K``; ``_config.MAX_DENSE_BYTES / 4`` by
        default.

    Returns
    -------
    matvec : callable
        Takes and returns arrays of module ``xp``.
    stored : bool
        Whether ``K`` was stored.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.linalg import kernel_operator
    >>> adapter = KernelAdapter(RBF())
    >>> X = np.linspace(0, 1, 4)[:, None]
    >>> op, stored = kernel_operator(adapter, np.zeros(1), X, 0.1, storage="dense")
    >>> K = adapter.gram(np.zeros(1), X) + 0.1 * np.eye(4)
    >>> np.allclose(op(np.eye(4)), K), stored
    (True, True)
    """
    if storage not in ("auto", "dense", "matrix_free"):
        raise ValueError(
            f"storage must be 'auto', 'dense' or 'matrix_free', got {storage!r}."
        )
    n = X.shape[0]
    max_bytes = _config.MAX_DENSE_BYTES // 4 if max_bytes is None else max_bytes
    dense = storage == "dense" or xp is not np
    if storage == "auto":
        dense = dense or 8 * n * n <= max_bytes
    if dense:
        _config.check_dense_bytes(
            8 * n * n,
            f"A stored {n} x {n} kernel matrix",
            "Use storage='matrix_free' (O(n) memory) on the NumPy backend, or "
            "a sparse (inducing-point) model.",
        )
        K = adapter.gram_in(theta, X, xp)
        diagonal = xp.arange(n)
        K[diagonal, diagonal] += noise_variance
        # K is symmetric, so K V = (V' K)'; with K in row-major order the
        # second form streams K's rows and ran 1.2-1.5 times faster for the
        # few columns CG multiplies (n = 1,000 to 8,000): the product is bound
        # by reading K from memory.
        return (lambda V: (V.T @ K).T), True

    def matvec(V):
        return adapter.matvec(theta, X, V) + noise_variance * V

    return matvec, False
