"""Exact marginal posterior of GP hyperparameters under Gaussian noise.

The parameter vector is ``[kernel.theta..., log noise_variance]`` (the noise
entry is absent when the noise variance is fixed). The latent function is
integrated out, so the target is

``log p(y | theta) + log p(theta)`` with
``log p(y | theta) = -1/2 y' K^-1 y - 1/2 log|K| - n/2 log(2 pi)``,
``K = K_theta(X, X) + noise_variance * I``.

Its gradient is ``1/2 sum_ab W_ab dK_ab/dtheta_j`` with ``W = a a' - K^-1``,
``a = K^-1 y``; the kernel adapter contracts ``W`` against the kernel
derivatives without building the ``(n, n, n_params)`` tensor.

Several targets ``Y = [y_1 ... y_t]`` that share the hyperparameters and are
independent given them (scikit-learn's multi-output regression) add their
log likelihoods: one factorisation serves every column, the data term is
``-1/2 sum_c y_c' K^-1 y_c``, the determinant counts ``t`` times, and
``W = A A' - t K^-1`` with ``A = K^-1 Y``.

For the RBF kernel (with or without a constant and a white-noise term, the
default kernel) the whole evaluation runs at the cost of its LAPACK calls.
Every derivative is the kernel times a polynomial in the scaled inputs
``xs = x / ell``: ``dK_ab / dlog ell_d = K_ab (xs_ad - xs_bd)^2``. With
``V = W o K`` (elementwise),

``sum_ab V_ab (xs_ad - xs_bd)^2 = 2 sum_a xs_ad^2 (V 1)_a - 2 xs_d' V xs_d``,

so all ``d`` length-scale gradients come from one product ``V [Xs, 1]``
(``n^2 (d + 1)`` flops in BLAS) instead of a second pass of ``n^2 / 2``
kernel evaluations with ``d`` squared differences each. ``K`` itself is
built from the Gram product ``Xs Xs'`` and one vectorised ``exp``, and
one buffer carries it through ``dpotrf`` and ``dpotri``, which touch only
its lower triangle: ``K`` survives in the upper one until ``V`` is formed.
What is left is the factorisation (``n^3 / 3`` flops) and the inverse
(``2 n^3 / 3``), the floor of an exact gradient. The inputs are centred
once, which leaves every distance unchanged and keeps the two terms of the
identity small.
"""

import numpy as np
from scipy.linalg import lapack

from ..exceptions import NotPSDError
from ..kernels import KernelAdapter
from ..kernels._lowering import BASE_RBF
from ..linalg import cho_solve, cholesky
from ..linalg._numba_ops import (
    mirror_lower,
    residual_weight_from_lower_inverse,
    trace,
)
from ._exact_numba import rbf_log_fill, rbf_residual_products

__all__ = ["ExactMarginalTarget"]

_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def _n_columns(y):
    return 1 if y.ndim == 1 else y.shape[1]


class ExactMarginalTarget:
    """Log posterior of the hyperparameters of an exact GP regression model.

    Parameters
    ----------
    adapter : KernelAdapter
        The kernel.
    X : ndarray of shape (n, d)
        Training inputs (float64, C order).
    y : ndarray of shape (n,) or (n, t)
        Training targets (already normalised if the caller normalises); the
        columns of a 2-D ``y`` share the hyperparameters (module notes).
    prior_set : PriorSet or None
        Priors over the whole parameter vector; ``None`` gives the marginal
        likelihood alone.
    log_noise_variance : float or None
        Fixed log noise variance; ``None`` makes it the last free parameter.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(0, 1, 5)[:, None]
    >>> target = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
    >>> value, grad = target.logp_and_grad(np.array([0.0, np.log(0.1)]))
    >>> grad.shape
    (2,)
    """

    def __init__(self, adapter, X, y, prior_set, log_noise_variance=None):
        self.adapter = adapter
        self.X = X
        self.y = y
        self.prior_set = prior_set
        self.log_noise_variance = log_noise_variance
        self.n_kernel_params = adapter.n_params
        self.n_params = adapter.n_params + (log_noise_variance is None)
        self.max_jitter = 0.0
        # Exact type: a subclass may override gram, which the RBF path
        # does not call.
        self._rbf = (
            type(adapter) is KernelAdapter
            and adapter.is_fast
            and adapter.spec.base == BASE_RBF
        )
        if self._rbf:
            X = np.asarray(X, dtype=np.float64)
            self._X_centred = X - X.mean(axis=0)

    @property
    def param_names(self):
        """Names of the parameter vector's entries.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import ExactMarginalTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
        >>> t.param_names
        ['length_scale', 'noise_variance']
        """
        names = list(self.adapter.param_names)
        if self.log_noise_variance is None:
            names.append("noise_variance")
        return names

    def split(self, params):
        """Kernel theta and log noise variance from a parameter vector.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import ExactMarginalTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
        >>> theta, log_noise = t.split(np.array([0.5, -2.0]))
        >>> theta.tolist(), log_noise
        ([0.5], -2.0)
        """
        params = np.asarray(params, dtype=np.float64)
        theta = params[: self.n_kernel_params]
        if self.log_noise_variance is None:
            return theta, float(params[self.n_kernel_params])
        return theta, float(self.log_noise_variance)

    def describe(self, params):
        """Human-readable ``name=value`` list of natural-scale parameters.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import ExactMarginalTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
        >>> t.describe(np.log([2.0, 0.1]))
        'length_scale=2, noise_variance=0.1'
        """
        params = np.asarray(params, dtype=np.float64)
        if self.log_noise_variance is not None:
            params = np.append(params, self.log_noise_variance)
        names = list(self.adapter.param_names) + ["noise_variance"]
        return ", ".join(
            f"{n}={v:.4g}" for n, v in zip(names, np.exp(params), strict=True)
        )

    def factor(self, params):
        """Cholesky factor of ``K + noise * I`` and ``a = (K + noise I)^-1 y``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import ExactMarginalTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
        >>> L, alpha = t.factor(np.log([1.0, 0.1]))
        >>> L.shape, alpha.shape
        ((5, 5), (5,))
        """
        theta, log_noise = self.split(params)
        K = self.adapter.gram(theta, self.X)
        K[np.diag_indices_from(K)] += np.exp(log_noise)
        L, jitter = cholesky(K, warn=False, context=self._context(params))
        self.max_jitter = max(self.max_jitter, jitter)
        return L, cho_solve(L, self.y)

    def _context(self, params):
        return "hyperparameters " + self.describe(params)

    def log_likelihood(self, params, eval_gradient=True):
        """Log marginal likelihood and (optionally) its gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        eval_gradient : bool, default=True

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,), only if ``eval_gradient``

        Raises
        ------
        NotPSDError
            When the kernel matrix is not positive definite even with
            jitter; the message names the hyperparameters.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import ExactMarginalTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
        >>> value, grad = t.log_likelihood(np.log([1.0, 0.1]))
        >>> bool(np.isfinite(value)), grad.shape
        (True, (2,))
        """
        if self._rbf and eval_gradient and self.y.ndim == 1:
            result = self._rbf_value_and_grad(params)
            if result is not None:
                return result
        L, alpha = self.factor(params)
        n, t = self.y.shape[0], _n_columns(self.y)
        value = (
            -0.5 * float(np.sum(self.y * alpha))
            - t * float(np.sum(np.log(np.diag(L))))
            - t * n * _HALF_LOG_2PI
        )
        if not eval_gradient:
            return value
        inverse, info = lapack.dpotri(L, lower=1, overwrite_c=1)
        if info != 0:
            raise NotPSDError(f"dpotri failed ({self._context(params)}).")
        if alpha.ndim == 1:
            residual_weight_from_lower_inverse(inverse, alpha)
        else:  # A A' - t K^-1, full (dpotri left only the lower triangle)
            mirror_lower(inverse)
            inverse = alpha @ alpha.T - t * inverse
        W = inverse
        if not self.adapter.is_fast:  # the generic contraction reads all of W
            mirror_lower(W)
        theta, log_noise = self.split(params)
        grad = np.empty(self.n_params)
        grad[: self.n_kernel_params] = 0.5 * self.adapter.grad_contract(
            theta, self.X, W
        )
        if self.log_noise_variance is None:
            grad[-1] = 0.5 * np.exp(log_noise) * trace(W)
        return value, grad

    def _rbf_value_and_grad(self, params):
        """Value and gradient for the RBF kernel in one buffer (module notes).

        Returns None when ``K`` needs jitter: the general path then adds
        it and says so.
        """
        theta, log_noise = self.split(params)
        adapter = self.adapter
        X = self._X_centred
        n, d = X.shape
        variance, white, inv_ell, ard = adapter._fast_params(theta, d)
        noise = np.exp(log_noise)
        Xs = X * inv_ell
        sq = np.einsum("ij,ij->i", Xs, Xs)
        gram = Xs @ Xs.T
        rbf_log_fill(gram, sq, np.log(variance))
        np.exp(gram, out=gram)
        B = gram.T  # symmetric: the same matrix, in Fortran order for LAPACK
        B[np.diag_indices(n)] = variance + white + noise
        B, info = lapack.dpotrf(B, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            return None
        alpha, info = lapack.dpotrs(B, self.y, lower=1)
        if info != 0:
            return None
        value = (
            -0.5 * float(self.y @ alpha)
            - float(np.sum(np.log(np.diagonal(B))))
            - n * _HALF_LOG_2PI
        )
        B, info = lapack.dpotri(B, lower=1, overwrite_c=1)
        if info != 0:
            return None
        total, trace_w = rbf_residual_products(B, alpha, variance)
        ones = np.ones((n, 1))
        P = B @ np.hstack([Xs, ones])
        per_dim = 2.0 * ((Xs * Xs).T @ P[:, d] - np.einsum("ij,ij->j", Xs, P[:, :d]))
        g_phi = np.empty(adapter.spec.n_length_scales + 2)
        g_phi[0] = total
        g_phi[1:-1] = per_dim if ard else per_dim.sum()
        g_phi[-1] = white * trace_w
        grad = np.empty(self.n_params)
        grad[: self.n_kernel_params] = 0.5 * adapter._to_theta(g_phi)
        if self.log_noise_variance is None:
            grad[-1] = 0.5 * noise * trace_w
        return value, grad

    def logp_and_grad(self, params):
        """Log posterior (up to a constant) and its gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import ExactMarginalTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
        >>> value, grad = t.logp_and_grad(np.log([1.0, 0.1]))
        >>> grad.shape
        (2,)
        """
        value, grad = self.log_likelihood(params, eval_gradient=True)
        if self.prior_set is not None:
            prior_value, prior_grad = self.prior_set.log_prob(params)
            value += prior_value
            grad = grad + prior_grad
        return value, grad
