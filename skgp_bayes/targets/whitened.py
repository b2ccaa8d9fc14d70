"""Whitened latent posterior of a GP with a non-Gaussian likelihood.

The latent function at the training inputs is written ``f = L_theta nu``
with ``L_theta L_theta' = K_theta(X, X) + delta(theta) I`` and
``nu ~ N(0, I)``, so the joint posterior over hyperparameters and whitened
latents is

``log p(theta, nu | y) = sum_i log p(y_i | f_i) - 1/2 nu'nu + log p(theta) + c``.

Whitening decouples ``nu`` from ``theta`` in the prior, which is what lets a
particle method move both at once (Murray and Adams, 2010; Pinder et al.,
2020). With several latent functions (one per class) each has its own
``nu_c``; they share one kernel or each has its own hyperparameter block.

Gradient
--------
With ``g = d log p(y | f) / df``, the gradient in ``nu`` is ``L' g - nu``.
The gradient in ``theta`` goes through the Cholesky factor: the reverse-mode
Cholesky rule (Murray, 2016) with ``Lbar = tril(g nu')`` gives
``Kbar = sym(L^-T Phi(L' Lbar) L^-1)``, ``Phi`` keeping the lower triangle
and halving the diagonal, and ``d/dtheta_j = sum_ab Kbar_ab dK_ab/dtheta_j``.
Because ``Lbar`` is the lower triangle of an outer product,
``Phi(L' Lbar) = Phi(tril(u nu'))`` with ``u = L' g``, a vector the ``nu``
gradient needs anyway: the pass then costs one ``n x k x n`` product and
one congruence (:func:`~skgp_bayes.linalg.inverse_congruence`).

Jitter
------
``delta(theta) = JITTER * mean(diag K_theta)``: a fixed fraction of the
kernel's own scale, never escalated, so the target stays a smooth function
of ``theta`` (a jitter ladder would make it jump between particles). The
jitter's dependence on ``theta`` is part of the exact gradient: with
``dK_total = dK + JITTER/n tr(dK) I``, the contraction weight becomes
``Kbar + JITTER/n tr(Kbar) I``.

Kernel work at BLAS speed
-------------------------
For ``[c *] RBF`` (isotropic or ARD, optionally ``+ WhiteKernel``) on
inputs scaled by the length scales, ``Xs = X / ell``, the Gram matrix is
``c exp(-(s_a + s_b - 2 Xs Xs') / 2)`` with ``s`` the rows' squared norms: one
GEMM and one ``exp`` over ``n^2`` entries. The gradient contraction reuses
that matrix: with ``M = Kbar o K`` (entrywise) and ``r = M 1``,

``sum_ab Kbar_ab dK_ab / dlog ell_c = sum_ab M_ab (xs_ac - xs_bc)^2
= 2 (sum_a xs_ac^2 r_a - sum_a xs_ac (M Xs)_ac)``

for symmetric ``M``: one more GEMM for all input dimensions at once, and no
kernel re-evaluation. Other kernels use the adapter's compiled loops.
"""

import numpy as np

from ..kernels._lowering import BASE_RBF
from ..linalg import cholesky, inverse_congruence
from ..linalg._numba_ops import flush_tiny
from ..linalg.diagonal import add_to_diagonal
from ._sparse_shared import add_jitter_weight
from ._whitened_compiled import whitened_plan, whitened_workspace
from ._whitened_numba import OK, WHITENED_ROUTINES, whitened_value_and_grad

__all__ = ["WhitenedLatentTarget", "JITTER"]

# Relative diagonal jitter: small enough to leave the model unchanged for
# any practical purpose, large enough that an RBF Gram matrix with duplicate
# inputs or a very long length scale still factorises.
JITTER = 1e-6


class _RBFGram:
    """Gram matrices and gradient contractions of ``[c *] RBF [+ White]`` by GEMM.

    See the module notes. ``gram`` keeps the noiseless matrix of the last
    ``theta`` it built, which ``contract`` then reuses.
    """

    def __init__(self, adapter, X):
        self.adapter = adapter
        self.X = X
        self._theta = None
        self._K = None

    @staticmethod
    def applies(adapter):
        spec = getattr(adapter, "spec", None)
        return bool(getattr(adapter, "is_fast", False)) and spec.base == BASE_RBF

    def _noiseless(self, theta):
        if self._theta is not None and np.array_equal(theta, self._theta):
            return self._K
        variance, _, inv_ell, _ = self.adapter._fast_params(theta, self.X.shape[1])
        Xs = self.X * inv_ell
        sq = np.einsum("ij,ij->i", Xs, Xs)
        K = Xs @ Xs.T
        K *= 2.0
        K -= sq[:, None]
        K -= sq[None, :]
        # Rounding in s_a + s_b - 2 xs_a.xs_b can leave a tiny positive
        # exponent for coincident points; the kernel never exceeds c.
        np.minimum(K, 0.0, out=K)
        K *= 0.5
        np.exp(K, out=K)
        K *= variance
        np.fill_diagonal(K, variance)
        self._theta, self._K = np.array(theta, dtype=np.float64), K
        return K

    def gram(self, theta):
        """``K(X, X)`` with the WhiteKernel's noise on the diagonal (a new array)."""
        noise = self.adapter._fast_params(theta, self.X.shape[1])[1]
        K = self._noiseless(theta).copy()
        add_to_diagonal(K, noise)
        return K

    def contract(self, theta, W):
        """``sum_ab W_ab dK_ab / dtheta_j`` for symmetric ``W``."""
        variance, noise, inv_ell, ard = self.adapter._fast_params(
            theta, self.X.shape[1]
        )
        K = self._noiseless(theta)
        Xs = self.X * inv_ell
        M = W * K
        r = M.sum(axis=1)
        MX = M @ Xs
        per_dim = 2.0 * (r @ (Xs * Xs) - np.einsum("ij,ij->j", Xs, MX))
        lengths = per_dim if ard else np.array([per_dim.sum()])
        g_phi = np.concatenate([[M.sum()], lengths, [noise * np.trace(W)]])
        return self.adapter._to_theta(g_phi)


def _reverse_whitened(L, U, N):
    """``Kbar`` for ``F = sum_c g_c' L nu_c`` given ``U = L' G``.

    Parameters
    ----------
    L : ndarray of shape (n, n)
        Lower Cholesky factor.
    U : ndarray of shape (n, k)
        ``L' g_c`` for each of ``k`` latents sharing ``L``.
    N : ndarray of shape (n, k)
        The whitened latents ``nu_c`` as columns.

    Returns
    -------
    Kbar : ndarray of shape (n, n)
        Symmetric; ``dF = sum(Kbar * dK)``.
    """
    # Phi(L' tril(G N')) = Phi(tril(U N')): below the diagonal, row a of
    # L' tril(g nu') only meets entries g_k with k >= a >= b. sym(Phi(X))
    # has the lower triangle X / 2, and sym(L^-T P L^-1) = L^-T sym(P) L^-1
    # is one congruence (n^3 flops), against n^3 / 3 + n^3 for an explicit
    # inverse and a triangular product (3.5 ms against 2.8 at n = 398).
    return inverse_congruence(L, 0.5 * (U @ N.T), overwrite=True)


class WhitenedLatentTarget:
    """Joint log posterior of hyperparameters and whitened latents.

    The parameter vector is ``[theta block(s), nu]``: one block of
    ``kernel.theta`` (log scale) when the kernel is shared, else one block
    per latent function in latent order; then ``nu`` of shape
    ``(n_latent, n)`` flattened in C order (latent ``c`` occupies entries
    ``n_theta + c * n`` to ``n_theta + (c + 1) * n``).

    Parameters
    ----------
    adapter : KernelAdapter
        The kernel.
    X : ndarray of shape (n, d)
        Training inputs (float64, C order).
    y_encoded : ndarray of shape (n,)
        Labels in the likelihood's encoding: ``{0, 1}`` for a Bernoulli
        likelihood, ``0..C-1`` for a multiclass one.
    likelihood : Likelihood
        Pointwise ``log_prob`` and ``grad_log_prob`` are used; latent
        arrays have shape ``(n,)`` when ``n_latent == 1`` and ``(n, C)``
        otherwise.
    prior_set : PriorSet or None
        Prior over one block of ``kernel.theta``; applied to every block.
        ``None`` leaves the hyperparameters with a flat prior.
    n_latent : int, default=1
        Number of latent functions; must match ``likelihood.n_latent``.
    shared_kernel : bool, default=True
        One hyperparameter block for all latents, or one per latent.

    Attributes
    ----------
    n_params : int
        Length of the parameter vector.
    n_theta : int
        Number of hyperparameter entries (all blocks).
    n_blocks : int
        Number of hyperparameter blocks (1, or ``n_latent``).
    jitter : float
        The relative jitter, :data:`JITTER`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> target = WhitenedLatentTarget(
    ...     KernelAdapter(ConstantKernel() * RBF()), X, y, Bernoulli(), None)
    >>> value, grad = target.logp_and_grad(np.zeros(target.n_params))
    >>> target.n_params, grad.shape
    (8, (8,))
    """

    def __init__(
        self,
        adapter,
        X,
        y_encoded,
        likelihood,
        prior_set,
        n_latent=1,
        shared_kernel=True,
    ):
        n_latent = int(n_latent)
        if n_latent < 1:
            raise ValueError(f"n_latent must be at least 1; got {n_latent}.")
        lik_latent = int(getattr(likelihood, "n_latent", 1))
        if lik_latent != n_latent:
            raise ValueError(
                f"The likelihood has {lik_latent} latent functions per point; "
                f"n_latent is {n_latent}."
            )
        X = np.ascontiguousarray(X, dtype=np.float64)
        y_encoded = np.asarray(y_encoded)
        if y_encoded.shape != (X.shape[0],):
            raise ValueError(
                f"y_encoded must have shape ({X.shape[0]},); got {y_encoded.shape}."
            )
        self.adapter = adapter
        self.X = X
        self.y = y_encoded
        self.likelihood = likelihood
        self.prior_set = prior_set
        self.n_latent = n_latent
        self.shared_kernel = bool(shared_kernel)
        self.n = X.shape[0]
        self.n_kernel_params = adapter.n_params
        self.n_blocks = 1 if (self.shared_kernel or n_latent == 1) else n_latent
        self.n_theta = self.n_kernel_params * self.n_blocks
        self.n_params = self.n_theta + self.n * n_latent
        self.jitter = JITTER
        self._rbf = _RBFGram(adapter, X) if _RBFGram.applies(adapter) else None
        # whitened_plan's arguments of the compiled evaluation, read at first use
        self._plan, self._planned = None, False

    # ------------------------------------------------------------ plumbing
    def block_of_latent(self, c):
        """Index of the hyperparameter block that latent ``c`` uses.

        Parameters
        ----------
        c : int
            Latent index, in ``0..n_latent-1``.

        Returns
        -------
        int
            0 when the kernel is shared, else ``c``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Softmax
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = np.array([0, 1, 2, 0, 1, 2])
        >>> shared = WhitenedLatentTarget(
        ...     KernelAdapter(RBF()), X, y, Softmax(n_classes=3), None, n_latent=3)
        >>> [shared.block_of_latent(c) for c in range(3)]
        [0, 0, 0]
        >>> own = WhitenedLatentTarget(
        ...     KernelAdapter(RBF()), X, y, Softmax(n_classes=3), None, n_latent=3,
        ...     shared_kernel=False)
        >>> [own.block_of_latent(c) for c in range(3)]
        [0, 1, 2]
        """
        return 0 if self.n_blocks == 1 else c

    def split(self, params):
        """Hyperparameter blocks and whitened latents of a parameter vector.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
            Hyperparameter block(s) (log scale), then the whitened latents.

        Returns
        -------
        thetas : ndarray of shape (n_blocks, n_kernel_params)
            The hyperparameter blocks, one per row.
        nu : ndarray of shape (n_latent, n)
            The whitened latents, one row per latent function.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
        >>> thetas, nu = target.split(np.arange(target.n_params, dtype=float))
        >>> thetas
        array([[0.]])
        >>> nu
        array([[1., 2., 3., 4., 5., 6.]])
        """
        params = np.asarray(params, dtype=np.float64)
        if params.shape != (self.n_params,):
            raise ValueError(
                f"params must have shape ({self.n_params},); got {params.shape}."
            )
        thetas = params[: self.n_theta].reshape(self.n_blocks, self.n_kernel_params)
        nu = params[self.n_theta :].reshape(self.n_latent, self.n)
        return thetas, nu

    def join(self, thetas, nu):
        """Inverse of :meth:`split`.

        Parameters
        ----------
        thetas : array-like of shape (n_blocks, n_kernel_params)
            Hyperparameter blocks (log scale); any shape with
            ``n_theta`` entries in block order.
        nu : array-like of shape (n_latent, n)
            Whitened latents; any shape with ``n_latent * n`` entries.

        Returns
        -------
        params : ndarray of shape (n_params,)
            The flat parameter vector ``[theta block(s), nu]``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
        >>> params = np.random.default_rng(0).normal(size=target.n_params)
        >>> np.array_equal(target.join(*target.split(params)), params)
        True
        """
        thetas = np.asarray(thetas, dtype=np.float64).reshape(-1)
        nu = np.asarray(nu, dtype=np.float64).reshape(-1)
        if thetas.size != self.n_theta or nu.size != self.n * self.n_latent:
            raise ValueError("thetas or nu have the wrong number of entries.")
        return np.concatenate([thetas, nu])

    def describe(self, theta):
        """``name=value`` list of one block's natural-scale hyperparameters.

        Parameters
        ----------
        theta : array-like of shape (n_kernel_params,)
            One hyperparameter block (log scale).

        Returns
        -------
        str
            Comma-separated ``name=value`` pairs, values as ``exp(theta)``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(
        ...     KernelAdapter(ConstantKernel() * RBF()), X, y, Bernoulli(), None)
        >>> target.describe(np.log([2.0, 0.5]))
        'k1__constant_value=2, k2__length_scale=0.5'
        """
        theta = np.asarray(theta, dtype=np.float64)
        return ", ".join(
            f"{n}={v:.4g}"
            for n, v in zip(self.adapter.param_names, np.exp(theta), strict=True)
        )

    def gram(self, theta):
        """``K_theta(X, X) + delta I`` with the fixed relative jitter.

        Parameters
        ----------
        theta : ndarray of shape (n_kernel_params,)
            One hyperparameter block (log scale).

        Returns
        -------
        K : ndarray of shape (n, n)
            The jittered Gram matrix.
        delta : float
            The jitter added to the diagonal.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
        >>> K, delta = target.gram(np.zeros(1))
        >>> K.shape
        (6, 6)
        >>> bool(delta == target.jitter)  # RBF has unit diagonal
        True
        >>> bool(np.allclose(np.diag(K), 1.0 + delta))
        True
        """
        if self._rbf is not None:
            K = self._rbf.gram(theta)
        else:
            K = self.adapter.gram(theta, self.X)
        # Subnormal entries (distances far beyond the length scale) slow
        # LAPACK down a hundredfold and are zero for every practical purpose.
        flush_tiny(K)
        delta = self.jitter * float(np.mean(np.diagonal(K))) if self.n else 0.0
        add_to_diagonal(K, delta)
        return K, delta

    def factor(self, theta):
        """Lower Cholesky factor of :meth:`gram`.

        Parameters
        ----------
        theta : ndarray of shape (n_kernel_params,)
            One hyperparameter block (log scale).

        Returns
        -------
        L : ndarray of shape (n, n)
            Lower triangular, ``L L' = K_theta(X, X) + delta I``.

        Raises
        ------
        NotPSDError
            When the jittered matrix is not positive definite; no further
            jitter is tried, so the target stays a fixed smooth function.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
        >>> L = target.factor(np.zeros(1))
        >>> K, _ = target.gram(np.zeros(1))
        >>> bool(np.allclose(L @ L.T, K)), bool(np.allclose(L, np.tril(L)))
        (True, True)
        """
        K, _ = self.gram(theta)
        L, _ = cholesky(
            K,
            max_tries=0,
            warn=False,
            context="hyperparameters " + self.describe(theta),
        )
        return L

    def factors(self, thetas):
        """One Cholesky factor per hyperparameter block.

        Parameters
        ----------
        thetas : ndarray of shape (n_blocks, n_kernel_params)
            Hyperparameter blocks, as returned by :meth:`split`.

        Returns
        -------
        list of ndarray of shape (n, n)
            :meth:`factor` of each block, in block order.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Softmax
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> target = WhitenedLatentTarget(
        ...     KernelAdapter(RBF()), X, np.array([0, 1, 2, 0, 1, 2]),
        ...     Softmax(n_classes=3), None, n_latent=3, shared_kernel=False)
        >>> thetas = np.log([[0.5], [1.0], [2.0]])  # one length scale per class
        >>> factors = target.factors(thetas)
        >>> len(factors), factors[0].shape
        (3, (6, 6))
        >>> bool(np.allclose(factors[2], target.factor(thetas[2])))
        True
        """
        return [self.factor(t) for t in thetas]

    def latent(self, params, factors=None):
        """Latent values ``f_c = L_c nu_c`` at the training inputs.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
        factors : list of ndarray, optional
            Output of :meth:`factors` for these hyperparameters; computed
            when omitted.

        Returns
        -------
        F : ndarray of shape (n, n_latent)
            Column ``c`` is latent function ``c`` at the training inputs.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
        >>> params = np.random.default_rng(0).normal(size=target.n_params)
        >>> F = target.latent(params)
        >>> F.shape
        (6, 1)
        >>> thetas, nu = target.split(params)
        >>> bool(np.allclose(F[:, 0], target.factor(thetas[0]) @ nu[0]))
        True
        """
        thetas, nu = self.split(params)
        if factors is None:
            factors = self.factors(thetas)
        F = np.empty((self.n, self.n_latent))
        if self.n_blocks == 1:
            F[:] = factors[0] @ nu.T
        else:
            for c in range(self.n_latent):
                F[:, c] = factors[c] @ nu[c]
        return F

    def _lik_args(self, F):
        return F[:, 0] if self.n_latent == 1 else F

    def log_likelihood(self, F):
        """Log likelihood of the training labels at given latent values.

        Parameters
        ----------
        F : ndarray of shape (n, n_latent)
            Latent values at the training inputs, as from :meth:`latent`.

        Returns
        -------
        float
            ``sum_i log p(y_i | F_i)``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
        >>> ll = target.log_likelihood(np.zeros((6, 1)))  # p(y_i | 0) = 1/2
        >>> bool(np.isclose(ll, 6 * np.log(0.5)))
        True
        """
        return float(np.sum(self.likelihood.log_prob(self.y, self._lik_args(F))))

    def _log_prior(self, thetas):
        if self.prior_set is None:
            return 0.0, np.zeros_like(thetas)
        value = 0.0
        grad = np.empty_like(thetas)
        for b, theta in enumerate(thetas):
            v, g = self.prior_set.log_prob(theta)
            value += v
            grad[b] = g
        return value, grad

    # ------------------------------------------------------------- target
    def log_prob(self, params):
        """Log posterior (up to a constant), without the gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
            Hyperparameter block(s) (log scale), then the whitened latents.

        Returns
        -------
        float
            ``log p(y | f) - 1/2 nu'nu + log p(theta)``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
        >>> # nu = 0 gives f = 0, p(y_i | 0) = 1/2, and the prior here is flat
        >>> value = target.log_prob(np.zeros(target.n_params))
        >>> bool(np.isclose(value, 6 * np.log(0.5)))
        True
        """
        thetas, nu = self.split(params)
        F = self.latent(params)
        prior, _ = self._log_prior(thetas)
        return self.log_likelihood(F) - 0.5 * float(np.vdot(nu, nu)) + prior

    def logp_and_grad(self, params):
        """Log posterior (up to a constant) and its exact gradient.

        Parameters
        ----------
        params : ndarray of shape (n_params,)
            Hyperparameter block(s) (log scale), then the whitened latents.

        Returns
        -------
        value : float
            The same value as :meth:`log_prob`; ``-inf`` where it is not
            finite.
        grad : ndarray of shape (n_params,)
            Gradient in the parameter vector, laid out as ``params``.

        Raises
        ------
        NotPSDError
            When a jittered kernel matrix is not positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> target = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
        >>> params = np.random.default_rng(0).normal(size=target.n_params)
        >>> value, grad = target.logp_and_grad(params)
        >>> bool(np.isclose(value, target.log_prob(params)))
        True
        >>> h = 1e-6 * np.eye(target.n_params)[0]  # d/d log length_scale
        >>> fd = (target.log_prob(params + h) - target.log_prob(params - h)) / 2e-6
        >>> bool(np.isclose(fd, grad[0], rtol=1e-5, atol=1e-8))
        True
        """
        done = self._compiled_logp_and_grad(params)
        if done is not None:
            return done
        thetas, nu = self.split(params)
        factors = self.factors(thetas)
        F = self.latent(params, factors)
        lik_F = self._lik_args(F)
        value = float(np.sum(self.likelihood.log_prob(self.y, lik_F)))
        G = np.asarray(self.likelihood.grad_log_prob(self.y, lik_F), dtype=np.float64)
        G = G.reshape(self.n, self.n_latent)
        prior_value, prior_grad = self._log_prior(thetas)
        value += prior_value - 0.5 * float(np.vdot(nu, nu))

        grad_theta = prior_grad
        grad_nu = np.empty_like(nu)
        if self.n_blocks == 1:
            L = factors[0]
            U = L.T @ G  # u_c = L' g_c, shared with the theta pass
            grad_nu[:] = U.T - nu
            if self.n_kernel_params:
                grad_theta[0] += self._theta_grad(thetas[0], L, U, nu.T)
        else:
            for c in range(self.n_latent):
                L = factors[c]
                u = L.T @ G[:, c]
                grad_nu[c] = u - nu[c]
                if self.n_kernel_params:
                    grad_theta[c] += self._theta_grad(
                        thetas[c], L, u[:, None], nu[c][:, None]
                    )
        grad = np.concatenate([grad_theta.reshape(-1), grad_nu.reshape(-1)])
        if not np.isfinite(value):
            # -inf stays -inf for the engine to reject; NaN never escapes.
            value = -np.inf
        return value, grad

    @property
    def compiled(self):
        """Whether value and gradient come from one compiled call (without the GIL).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X, y = np.zeros((3, 1)), np.array([0.0, 1.0, 1.0])
        >>> for link in ("logit", "probit"):  # the probit has no compiled form
        ...     target = WhitenedLatentTarget(
        ...         KernelAdapter(RBF()), X, y, Bernoulli(link=link), None)
        ...     print(target.compiled)
        True
        False
        """
        if not self._planned:
            self._plan, self._planned = whitened_plan(self), True
        return self._plan is not None

    def _compiled_logp_and_grad(self, params):
        """``(value, grad)`` in one compiled call, or None (module
        :mod:`._whitened_compiled` says which targets have one; a Gram
        matrix without a factor goes back to the interpreted path, which
        raises)."""
        params = np.asarray(params, dtype=np.float64)
        if not self.compiled or params.shape != (self.n_params,):
            return None
        status, value, grad = whitened_value_and_grad(
            np.ascontiguousarray(params),
            *self._plan,
            WHITENED_ROUTINES,
            whitened_workspace(self.n),
        )
        return (value, grad) if status == OK else None

    def _theta_grad(self, theta, L, U, N):
        Kbar = _reverse_whitened(L, U, N)
        # The jitter scales with mean(diag K): its derivative adds
        # JITTER / n * tr(Kbar) to every diagonal weight.
        add_jitter_weight(Kbar, self.jitter)
        return self.grad_contract(theta, Kbar)

    def grad_contract(self, theta, W):
        """``sum_ab W_ab dK(X, X)_ab / dtheta_j`` for one hyperparameter block.

        Parameters
        ----------
        theta : ndarray of shape (n_kernel_params,)
            One hyperparameter block (log scale).
        W : ndarray of shape (n, n)
            Symmetric weights.

        Returns
        -------
        g : ndarray of shape (n_kernel_params,)
            The contraction with the kernel's gradient (without the jitter).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> from skgp_bayes.likelihoods import Bernoulli
        >>> from skgp_bayes.targets.whitened import WhitenedLatentTarget
        >>> X = np.linspace(-2, 2, 6)[:, None]
        >>> y = (X[:, 0] > 0).astype(float)
        >>> adapter = KernelAdapter(ConstantKernel() * RBF())
        >>> target = WhitenedLatentTarget(adapter, X, y, Bernoulli(), None)
        >>> theta, W = np.log([2.0, 0.7]), np.ones((6, 6))
        >>> bool(np.allclose(target.grad_contract(theta, W),
        ...                  adapter.grad_contract(theta, X, W)))
        True
        """
        if self._rbf is not None:
            return self._rbf.contract(theta, W)
        return self.adapter.grad_contract(theta, self.X, W)

    def __repr__(self):
        return (
            f"WhitenedLatentTarget(n={self.n}, n_latent={self.n_latent}, "
            f"n_blocks={self.n_blocks}, n_params={self.n_params})"
        )
