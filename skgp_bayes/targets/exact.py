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
kernel evaluations with ``d`` squared differences each. ``K`` itself comes
from the lower triangle of the Gram product ``Xs Xs'`` (``dsyrk``) and one
vectorised ``exp`` over its strict lower triangle, packed into a vector
that keeps ``K`` while one buffer goes through ``dpotrf`` and the inverse.
What is left is the factorisation (``n^3 / 3`` flops) and the inverse
(``2 n^3 / 3``), the floor of an exact gradient. The inputs are centred
once, which leaves every distance unchanged and keeps the two terms of the
identity small.

The inverse is ``dpotri``'s: ``L^-1`` (``dtrtri``), then ``L^-T L^-1``
(``dlauum``). On the OpenBLAS this was tuned on (0.3.30, Haswell kernels,
one thread), ``dtrtri`` runs at 0.4-0.5 of ``dpotrf``'s speed at n = 200-500
(289 us against 122 us at n = 200, the same flop count), so ``dpotri`` alone
cost 2.9-3.2 x ``dpotrf`` there. Taking ``L^-1`` by halves,
``[[L11, 0], [L21, L22]]^-1 = [[L11^-1, 0], [-L22^-1 L21 L11^-1, L22^-1]]``,
with ``dtrtri`` only on blocks of at most 64 rows and the rest in two
``dtrmm`` per level, brings the inverse to 1.8-1.9 x ``dpotrf`` at n = 200
and 1.7-1.8 x at 300-1000 (best of many, one thread). ``dtrsm`` of the
identity followed by ``dsyrk`` (``n^3`` flops each) cost 4.7 x, ``dtrtri``
followed by ``dsyrk`` 4.0 x, ``dpotrs`` of the identity 6.2 x. With BLAS
threaded (two threads, loaded machine) the halves still won at n = 1500
(1.50 against 2.34 x) and timed like ``dpotri`` from 2000 (1.88 against
1.87 x at 2000, 2.35 against 2.37 x at 4000);
``INVERSE_BY_HALVES_MAX_N`` keeps ``dpotri`` there.

All of it is one compiled call
(:func:`~skgp_bayes.targets._exact_numba.rbf_value_and_grad`), which
reaches BLAS and LAPACK through ``scipy.linalg.cython_blas`` and
``cython_lapack``: without the interpreter between the dozen calls (about
20 us a call, a third of the evaluation at 64 rows) and without the GIL,
so that threads evaluate side by side. Up to ``SMALL_N`` rows it runs
unblocked loops instead, quicker than LAPACK's calls there.
"""

import threading

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
from ..linalg.diagonal import add_to_diagonal
from ._exact_numba import (
    HALF_LOG_2PI,
    RBF_ROUTINES,
    SMALL_N,
    rbf_value_and_grad_lapack,
    rbf_value_and_grad_small,
    rbf_value_lapack,
)

_JITTER_LOCK = threading.Lock()

__all__ = ["ExactMarginalTarget"]


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
        self.n = X.shape[0]
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
            self._rbf_setup(X)

    def __setstate__(self, state):
        # A target pickled before the RBF path's index maps existed (inside
        # a fitted SteinGPRegressor) rebuilds them on load.
        self.__dict__.update(state)
        if self._rbf and "_param_index" not in state:
            self._rbf_setup(self.X)

    @property
    def compiled(self):
        """Whether value and gradient come from one compiled call.

        The RBF family's path, which releases the GIL (it falls back to the
        general path only where ``K`` needs jitter).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, Matern
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import ExactMarginalTarget
        >>> X, y = np.linspace(0, 1, 5)[:, None], np.zeros(5)
        >>> ExactMarginalTarget(KernelAdapter(RBF()), X, y, None).compiled
        True
        >>> ExactMarginalTarget(KernelAdapter(Matern()), X, y, None).compiled
        False
        """
        return bool(self._rbf and self.y.ndim == 1)

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
        add_to_diagonal(K, np.exp(log_noise))
        L, jitter = cholesky(K, warn=False, context=self._context(params))
        if jitter:
            # searches from several starts share a target across threads
            with _JITTER_LOCK:
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
        if self._rbf and self.y.ndim == 1:
            result = self._rbf_evaluation(params, eval_gradient)
            if result is not None:
                return result
        L, alpha = self.factor(params)
        n, t = self.y.shape[0], _n_columns(self.y)
        value = (
            -0.5 * float(np.sum(self.y * alpha))
            - t * float(np.sum(np.log(np.diag(L))))
            - t * n * HALF_LOG_2PI
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

    def _rbf_evaluation(self, params, eval_gradient):
        """Value (and gradient) for the RBF kernel in one compiled call.

        Returns None when ``K`` needs jitter: the general path then adds
        it and says so. Without the gradient, from ``SMALL_N`` rows, the
        factor and one triangular solve only.
        """
        small = self._X_centred.shape[0] <= SMALL_N
        if not eval_gradient:
            if small:
                return None  # the general path is as quick at this size
            ok, value = rbf_value_lapack(*self._rbf_arguments(params))
            return value if ok else None
        # The size decides here rather than in compiled code, so that a fit
        # compiles the one path its size takes: a compiled branch compiles
        # both (4.4 s of a first fit's 20 s for the small path alone).
        arguments = self._rbf_arguments(params)
        if small:  # the last argument, the LAPACK routines, it has no use for
            ok, value, grad = rbf_value_and_grad_small(*arguments[:-1])
        else:
            ok, value, grad = rbf_value_and_grad_lapack(*arguments)
        return (value, grad) if ok else None

    def _rbf_arguments(self, params):
        """The compiled RBF functions' arguments at ``params``."""
        params = np.asarray(params, dtype=np.float64)
        if params.shape != (self.n_params,):  # the compiled calls index it
            raise ValueError(
                f"params must have shape ({self.n_params},); got {params.shape}."
            )
        return (
            params,
            self._phi_defaults,
            self._param_index,
            self._X_centred,
            np.ascontiguousarray(self.y, dtype=np.float64),  # a view's strides
            RBF_ROUTINES,
        )

    def _rbf_setup(self, X):
        """Inputs and index maps that every RBF-path call shares.

        The path works on ``phi = [log variance, log length scales...,
        log white noise, log noise variance]``; ``_param_index`` places the
        parameter vector into it and takes the gradient back out inside the
        compiled helpers, so no call pays for a dozen small NumPy ones.
        """
        X = np.asarray(X, dtype=np.float64)
        self._X_centred = X - X.mean(axis=0)
        spec = self.adapter.spec
        n_ls = spec.n_length_scales
        if n_ls > 1 and n_ls != X.shape[1]:
            raise ValueError(
                f"The kernel has {n_ls} length scales but X has {X.shape[1]} features."
            )
        self._phi_defaults = np.append(
            spec.defaults,
            -np.inf if self.log_noise_variance is None else self.log_noise_variance,
        )
        index = list(spec.theta_index)
        if self.log_noise_variance is None:
            index.append(n_ls + 2)
        self._param_index = np.asarray(index, dtype=np.intp)

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

    def log_prob(self, params):
        """Log posterior (up to a constant), without the gradient.

        One Cholesky factor and a solve: none of the gradient's inverse.

        Parameters
        ----------
        params : ndarray of shape (n_params,)

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.targets import ExactMarginalTarget
        >>> X = np.linspace(0, 1, 5)[:, None]
        >>> t = ExactMarginalTarget(KernelAdapter(RBF()), X, np.sin(X[:, 0]), None)
        >>> p = np.log([1.0, 0.1])
        >>> bool(np.isclose(t.log_prob(p), t.logp_and_grad(p)[0]))
        True
        """
        value = self.log_likelihood(params, eval_gradient=False)
        if self.prior_set is not None:
            value += self.prior_set.log_prob(params)[0]
        return value
