"""The exact marginal posterior evaluated where the arrays live (a GPU).

:class:`~skgp_bayes.targets.ExactMarginalTarget` runs on the host. With
``backend="cupy"``, ``SGLDGPRegressor``'s exact gradients
(``solver="cholesky"``, the default up to 5,000 points) ran there too, so a
GPU did nothing for the size at which the exact chain is chosen: on an
H200's 16-core host one LAPACK ``dpotrf`` took 0.39 s at 5,000 points
against 7 ms for ``cupy.linalg.cholesky`` on the card
(benchmarks/RESULTS.md, "The CuPy backend on a GPU").

Here the same value and gradient are computed with an array module:

- ``K`` built on the device (:func:`~skgp_bayes.kernels._array_forms.array_gram`),
  factorised by ``xp.linalg.cholesky`` with the host's jitter ladder;
- ``a = K^-1 y`` by two triangular solves, ``K^-1 = L^-T L^-1`` from one
  triangular solve of the identity and one product (``dpotri`` has no
  CuPy counterpart; the two cost ``3 n^3`` flops against its ``2 n^3 / 3``,
  matrix products the GPU runs near its peak);
- ``W = a a' - K^-1`` contracted against the kernel derivatives in blocks
  of rows (:func:`~skgp_bayes.kernels._array_forms.array_grad_contract`).

The results equal the host target's to rounding (the array kernels' entries
differ from the compiled ones' by a few ulps, and the inverse is formed
differently), which ``tests/test_device_path.py`` bounds.
"""

import numpy as np

from .._backend import linalg_errors_raised, solve_triangular_in
from ..exceptions import NotPSDError
from ..kernels._array_forms import array_grad_contract, array_gram
from ..linalg.cholesky import jitter_exhausted, jitter_ladder
from ._exact_numba import HALF_LOG_2PI
from .exact import ExactMarginalTarget

__all__ = ["ArrayExactMarginalTarget"]


class ArrayExactMarginalTarget(ExactMarginalTarget):
    """:class:`~skgp_bayes.targets.ExactMarginalTarget` computed in ``xp``.

    Parameters
    ----------
    adapter : KernelAdapter
        A recognised kernel (``adapter.is_fast``).
    X : ndarray of shape (n, d)
        Training inputs, on the host.
    y : ndarray of shape (n,)
        Training targets (one column), on the host.
    prior_set : PriorSet or None
    log_noise_variance : float or None
        As in :class:`~skgp_bayes.targets.ExactMarginalTarget`.
    xp : module, default=numpy
        The array module (``cupy`` on a GPU).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> from skgp_bayes.targets.exact_array import ArrayExactMarginalTarget
    >>> X = np.linspace(0, 1, 8)[:, None]
    >>> args = (KernelAdapter(RBF()), X, np.sin(3 * X[:, 0]), None)
    >>> params = np.log([0.5, 0.1])
    >>> a = ArrayExactMarginalTarget(*args, xp=np).logp_and_grad(params)
    >>> b = ExactMarginalTarget(*args).logp_and_grad(params)
    >>> bool(np.isclose(a[0], b[0])), bool(np.allclose(a[1], b[1]))
    (True, True)
    """

    def __init__(self, adapter, X, y, prior_set, log_noise_variance=None, xp=np):
        if not adapter.is_fast or np.ndim(y) != 1:
            raise ValueError(
                "ArrayExactMarginalTarget needs a recognised kernel "
                "(adapter.is_fast) and one target column."
            )
        super().__init__(adapter, X, y, prior_set, log_noise_variance)
        self.xp = xp
        self._y = xp.asarray(np.asarray(y, dtype=np.float64))

    def __getstate__(self):
        # Device arrays stay behind; a loaded target rebuilds them.
        state = self.__dict__.copy()
        state.pop("_y", None)
        state["xp"] = None
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self.xp = np
        self._y = np.asarray(self.y, dtype=np.float64)

    def log_likelihood(self, params, eval_gradient=True):
        """Log marginal likelihood and (optionally) its gradient, in ``xp``.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        eval_gradient : bool, default=True

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,), on the host, only if
            ``eval_gradient``

        Raises
        ------
        NotPSDError
            When ``K`` is not positive definite even with jitter.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets.exact_array import ArrayExactMarginalTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = ArrayExactMarginalTarget(KernelAdapter(RBF()), X, X[:, 0], None)
        >>> value, grad = t.log_likelihood(np.log([1.0, 0.1]))
        >>> grad.shape
        (2,)
        """
        xp = self.xp
        solve = solve_triangular_in(xp)
        theta, log_noise = self.split(params)
        noise = float(np.exp(log_noise))
        L = self._factor(array_gram(self.adapter, theta, self.X, xp), noise, params)
        n = self.X.shape[0]
        alpha = solve(L.T, solve(L, self._y, lower=True), lower=False)
        diagonal = xp.arange(n)
        value = (
            -0.5 * float(xp.sum(self._y * alpha))
            - float(xp.sum(xp.log(L[diagonal, diagonal])))
            - n * HALF_LOG_2PI
        )
        if not eval_gradient:
            return value
        L_inv = solve(L, xp.eye(n), lower=True)
        W = alpha[:, None] * alpha[None, :] - L_inv.T @ L_inv
        grad = np.empty(self.n_params)
        grad[: self.n_kernel_params] = 0.5 * array_grad_contract(
            self.adapter, theta, self.X, W, xp
        )
        if self.log_noise_variance is None:
            grad[-1] = 0.5 * noise * float(xp.sum(W[diagonal, diagonal]))
        return value, grad

    def _factor(self, K, noise, params):
        """``L`` of ``K + noise I`` (plus jitter where needed), in ``xp``."""
        xp = self.xp
        diagonal = xp.arange(K.shape[0])
        base = K[diagonal, diagonal] + noise
        mean_abs = float(xp.sum(xp.abs(base))) / K.shape[0]
        if not np.isfinite(mean_abs):
            raise NotPSDError(
                f"Matrix has non-finite diagonal entries ({self._context(params)})."
            )
        scale, jitters = jitter_ladder(mean_abs)
        for jitter in [0.0, *jitters]:
            K[diagonal, diagonal] = base + jitter
            try:
                with linalg_errors_raised(xp):
                    L = xp.linalg.cholesky(K)
            except np.linalg.LinAlgError:
                continue
            # A factor is used only with a positive diagonal (NaN fails
            # too): the check copies one scalar and guards any module whose
            # failed factorisation is not reported.
            if bool(xp.all(L[diagonal, diagonal] > 0.0)):
                self.max_jitter = max(self.max_jitter, jitter)
                return L
        raise jitter_exhausted(scale, jitters, f" ({self._context(params)})")
