"""Predictives of whitened sparse models: moments and draws.

The Gaussian approximations' latent moments, and the per-draw moments,
joint draws and pathwise function samples of models whose draws are
``(theta, v)``.

``q(v) = N(q_mean, q_L q_L')`` over whitened inducing values ``v`` (with
``u = R v`` and ``R R' = K(Z, Z)``) gives at query inputs ``X`` the latent
``q(f)`` with mean ``A' q_mean`` and covariance
``K(X, X) - A' A + A' q_L q_L' A``, where ``A = R^-1 K(Z, X)``.
"""

import numpy as np

from .._threads import blas_threads_for, on_contiguous_shares
from ..exceptions import NotPSDError
from ..kernels import lower_kernel
from ..kernels.spectral import spectral_parameters
from ..sampling import (
    pathwise_functions,
    sparse_conditioner,
    with_prior_noise,
)
from ..targets._sparse_numba import LAPACK, draw_moments
from ..targets._sparse_shared import inducing_factor, project
from .mixture import gaussian_joint_draws

# The draws and samplers below stay internal until each carries an example
# (tests/test_docstrings.py).
__all__ = ["q_draw", "q_marginal_variances", "q_moments", "q_moments_per_latent"]

# Query rows per block, bounding memory at O(rows * m).
PREDICT_ROWS = 4096


def q_draw(q_mean, q_L, z):
    """One draw of the whitened inducing values from ``q(v) = N(m, L L')``.

    Parameters
    ----------
    q_mean : ndarray of shape (m, C)
    q_L : ndarray of shape (C, m, m)
        Lower factors of each latent's covariance.
    z : ndarray of shape (C, m)
        Standard normal draws.

    Returns
    -------
    ndarray of shape (m, C)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive.sparse import q_draw
    >>> q_draw(np.zeros((2, 1)), 2.0 * np.eye(2)[None], np.ones((1, 2)))
    array([[2.],
           [2.]])
    """
    return q_mean + np.einsum("cjk,ck->jc", q_L, z)


def q_marginal_variances(q_L):
    """Marginal variances of ``q(v)``, shape ``(m, C)``, from its factors.

    Parameters
    ----------
    q_L : ndarray of shape (C, m, m)

    Returns
    -------
    ndarray of shape (m, C)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive.sparse import q_marginal_variances
    >>> q_marginal_variances(np.array([[[1.0, 0.0], [1.0, 1.0]]]))
    array([[1.],
           [2.]])
    """
    return np.einsum("cjk,cjk->jc", q_L, q_L)


def q_moments(adapter, theta, Z, jitter, q_mean, q_L, X, full_cov=False):
    """Mean and variance (or covariance) of ``q(f)`` at ``X``, one latent.

    Parameters
    ----------
    adapter : KernelAdapter
    theta : ndarray of shape (p,)
        Kernel hyperparameters (log scale).
    Z : ndarray of shape (m, d)
    jitter : float
        Relative jitter of ``K(Z, Z)``.
    q_mean : ndarray of shape (m,)
    q_L : ndarray of shape (m, m)
    X : ndarray of shape (k, d)
    full_cov : bool, default=False

    Returns
    -------
    mean : ndarray of shape (k,)
    var : ndarray of shape (k,), or cov of shape (k, k) with ``full_cov``

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.predictive.sparse import q_moments
    >>> adapter = KernelAdapter(RBF(1.0))
    >>> Z = np.array([[0.0], [1.0]])
    >>> mean, var = q_moments(adapter, np.zeros(1), Z, 1e-6, np.zeros(2),
    ...                       np.eye(2), np.array([[0.5]]))
    >>> mean.shape, bool(np.allclose(var, 1.0))
    ((1,), True)
    """
    with blas_threads_for(min(X.shape[0], PREDICT_ROWS), Z.shape[0]):
        R = inducing_factor(adapter, theta, Z, jitter)
        if full_cov:
            A, _, _ = project(adapter, theta, Z, X, R)
            B = q_L.T @ A
            cov = adapter.gram(theta, X) - A.T @ A + B.T @ B
            return A.T @ q_mean, 0.5 * (cov + cov.T)
        mean = np.empty(X.shape[0])
        var = np.empty(X.shape[0])
        for i0 in range(0, X.shape[0], PREDICT_ROWS):
            rows = slice(i0, i0 + PREDICT_ROWS)
            A, gamma, _ = project(adapter, theta, Z, X[rows], R)
            B = q_L.T @ A
            mean[rows] = A.T @ q_mean
            var[rows] = gamma + np.einsum("ij,ij->j", B, B)
    return mean, np.maximum(var, 0.0)


def q_moments_per_latent(adapter, theta, Z, jitter, q_mean, q_L, X):
    """Means and variances of ``q(f)`` at ``X`` for ``C`` independent latents.

    Parameters
    ----------
    adapter : KernelAdapter
    theta : ndarray of shape (p,)
    Z : ndarray of shape (m, d)
    jitter : float
    q_mean : ndarray of shape (m, C)
    q_L : ndarray of shape (C, m, m)
    X : ndarray of shape (k, d)

    Returns
    -------
    means, variances : ndarray of shape (k, C)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.predictive.sparse import q_moments_per_latent
    >>> adapter = KernelAdapter(RBF(1.0))
    >>> Z = np.array([[0.0], [1.0]])
    >>> q_L = np.stack([np.eye(2), np.eye(2)])
    >>> means, variances = q_moments_per_latent(
    ...     adapter, np.zeros(1), Z, 1e-6, np.zeros((2, 2)), q_L, np.zeros((3, 1)))
    >>> means.shape, bool(np.allclose(variances, 1.0))
    ((3, 2), True)
    """
    R = inducing_factor(adapter, theta, Z, jitter)
    n_latent = q_L.shape[0]
    means = np.empty((X.shape[0], n_latent))
    variances = np.empty((X.shape[0], n_latent))
    for i0 in range(0, X.shape[0], PREDICT_ROWS):
        rows = slice(i0, i0 + PREDICT_ROWS)
        A, gamma, _ = project(adapter, theta, Z, X[rows], R)
        B = np.einsum("cji,jk->cik", q_L, A)
        means[rows] = A.T @ q_mean
        variances[rows] = gamma[:, None] + np.einsum("cik,cik->kc", B, B)
    return means, variances


def sparse_function_samples(
    adapter,
    Z,
    jitter,
    thetas,
    v,
    v_cov_factors,
    n_samples,
    rng,
    n_features,
    offset=0.0,
    scale=1.0,
):
    """Pathwise samples of a whitened sparse model, one set per latent.

    Parameters
    ----------
    adapter : KernelAdapter
    Z : ndarray of shape (m, d)
    jitter : float
        Relative jitter of ``K(Z, Z)``, as in ``inducing_factor``.
    thetas : ndarray of shape (S, p)
        Kernel hyperparameters of each draw.
    v : ndarray of shape (S, m, C)
        Whitened inducing values of each draw, or the mean of ``q(v)``.
    v_cov_factors : ndarray of shape (C, m, m) or (S, C, m, m), or None
        Lower factor of the covariance of ``q(v)`` per latent (then
        ``S == 1``), or per draw and latent (each draw its own Gaussian
        ``q(v)``); None for point draws of ``v`` (MCMC).
    n_samples, rng, n_features, offset, scale
        As in :func:`~skgp_bayes.sampling.pathwise_functions`.

    Returns
    -------
    functions : list of FunctionSamples
        One per latent, all on the same draws.
    white : ndarray of shape (S,)
        WhiteKernel noise of each draw (zero for draws not used).
    """
    spec = lower_kernel(adapter.kernel)
    S, m, C = v.shape
    d = Z.shape[1]
    which = rng.randint(S, size=n_samples)
    used = [int(j) for j in np.unique(which)]
    factors, white, extra = {}, np.zeros(S), np.zeros(S)
    with blas_threads_for(m, m):
        for j in used:
            factors[j] = inducing_factor(adapter, thetas[j], Z, jitter)
            s2, _, white[j] = spectral_parameters(spec, thetas[j], d)
            extra[j] = white[j] + jitter * (s2 + white[j])
    per_draw_cov = v_cov_factors
    if v_cov_factors is not None and v_cov_factors.ndim == 3:
        per_draw_cov = v_cov_factors[None]  # the one draw's (S == 1)
    functions = []
    for c in range(C):
        u = np.zeros((S, m))
        for j in used:
            # u = R v: the whitened draw mapped back to inducing values
            u[j] = factors[j] @ v[j, :, c]
        cov = None
        if per_draw_cov is not None:
            cov = {j: factors[j] @ per_draw_cov[j, c] for j in used}.__getitem__
        conditioner = with_prior_noise(
            sparse_conditioner(Z, factors.__getitem__, u, cov), extra
        )
        functions.append(
            pathwise_functions(
                spec,
                thetas,
                n_samples,
                conditioner,
                n_features=n_features,
                random_state=rng,
                offset=offset,
                scale=scale,
                draws=which,
            )
        )
    return functions, white


def sparse_joint_draws(adapter, Z, jitter, thetas, v, v_cov_factor, X, n, rng):
    """Exact joint draws of latent 0 at ``X``: shape (len(X), n).

    Each draw picks ``j`` uniformly and samples ``N(A'v_j, K(X, X) - A'A
    [+ A'SA])`` with ``A = R_j^-1 K(Z, X)``; ``v_cov_factor`` is the factor
    of the covariance of ``q(v)`` (then ``len(thetas) == 1``) or None.
    """
    which = rng.randint(thetas.shape[0], size=n)
    out = np.empty((X.shape[0], n))
    with blas_threads_for(X.shape[0], Z.shape[0]):
        for j in np.unique(which):
            cols = np.flatnonzero(which == j)
            R = inducing_factor(adapter, thetas[j], Z, jitter)
            A, _, _ = project(adapter, thetas[j], Z, X, R)
            cov = adapter.gram(thetas[j], X) - A.T @ A
            if v_cov_factor is not None:
                B = v_cov_factor.T @ A
                cov += B.T @ B
            cov = 0.5 * (cov + cov.T)
            out[:, cols] = gaussian_joint_draws(A.T @ v[j, :, 0], cov, cols.size, rng)
    return out


def sparse_draw_moments(adapter, Z, jitter, thetas, v, X, *, full_cov=False, threads=1):
    """Latent moments of each draw ``(theta_j, v_j)`` of a whitened sparse GP.

    Given ``v``, ``f(X) ~ N(A'v, K(X, X) - A'A)`` with ``A = R^-1 K(Z, X)``.
    Returns means ``(J, k, C)`` and variances ``(J, k)`` (or covariances
    ``(J, k, k)`` with ``full_cov``), the latter shared by every latent.
    Fast-path kernels without ``full_cov`` split the draws over ``threads``
    threads (see :func:`_compiled_draw_moments`); the others ignore it.
    """
    J, k = thetas.shape[0], X.shape[0]
    if adapter.is_fast and not full_cov:
        return _compiled_draw_moments(adapter, Z, jitter, thetas, v, X, threads)
    means = np.empty((J, k, v.shape[2]))
    spread = np.empty((J, k, k) if full_cov else (J, k))
    for j in range(J):
        R = inducing_factor(adapter, thetas[j], Z, jitter)
        for i0 in range(0, k, PREDICT_ROWS):
            rows = slice(i0, i0 + PREDICT_ROWS)
            A, gamma, _ = project(adapter, thetas[j], Z, X[rows], R)
            means[j, rows] = A.T @ v[j]
            if not full_cov:
                spread[j, rows] = gamma
        if full_cov:
            A, _, _ = project(adapter, thetas[j], Z, X, R)
            cov = adapter.gram(thetas[j], X) - A.T @ A
            spread[j] = 0.5 * (cov + cov.T)
    return means, spread


def draw_kernel_parameters(adapter, thetas, d):
    """Each draw's inverse length scales ``(J, d)``, signal and WhiteKernel
    variances ``(J,)``: the arguments of the compiled per-draw loops, for a
    fast-path kernel on ``d`` inputs."""
    params = [adapter._fast_params(theta, d) for theta in thetas]
    inv_ells = np.array([p[2] for p in params]).reshape(len(params), d)
    variances = np.array([p[0] for p in params], dtype=np.float64)
    whites = np.array([p[1] for p in params], dtype=np.float64)
    return inv_ells, variances, whites


def _compiled_draw_moments(adapter, Z, jitter, thetas, v, X, threads=1):
    """:func:`sparse_draw_moments` for fast-path kernels, in compiled loops.

    The draws are independent and the compiled loop releases the GIL, so
    with ``threads`` above 1 each thread takes a contiguous share of them,
    BLAS on one thread; a caller that also holds BLAS to one thread gets
    the same result for any ``threads``. A variational MCMC regressor's
    1,568 draws of the exact target on concrete (295 inducing inputs, 309
    query rows, 2 cores): 3.3 s on one thread, 3.8 s with BLAS's own two
    threads, 1.6 s on two threads, the same moments to the bit.
    """
    inv_ells, variances, noises = draw_kernel_parameters(adapter, thetas, X.shape[1])
    X = np.ascontiguousarray(X, dtype=np.float64)
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    v = np.ascontiguousarray(v, dtype=np.float64)

    def share(rows):
        return draw_moments(
            X,
            Z,
            inv_ells[rows],
            variances[rows],
            noises[rows],
            adapter.spec.base,
            float(jitter),
            v[rows],
            LAPACK,
        )

    parts = on_contiguous_shares(share, len(thetas), threads)
    if not all(part[0] for part in parts):
        raise NotPSDError(
            "The jittered K(Z, Z) of a posterior draw is not positive definite."
        )
    if len(parts) == 1:
        return parts[0][1], parts[0][2]
    return (
        np.concatenate([part[1] for part in parts]),
        np.concatenate([part[2] for part in parts]),
    )


class SparseDrawsBase:
    """Per-particle sparse GP posteriors given ``(theta_j, v_j)``.

    ``v`` has shape ``(J, m, C)``: the whitened inducing values of ``C``
    latent functions, which share one kernel and so one conditional
    (co)variance at any input. Nothing here depends on the training data.
    """

    def __init__(self, adapter, Z, jitter, kernel_thetas, v):
        self.adapter = adapter
        self.Z = Z
        self.jitter = jitter
        self.kernel_thetas = np.asarray(kernel_thetas, dtype=np.float64)
        self.v = np.asarray(v, dtype=np.float64)

    @property
    def n_draws(self):
        """Number of draws (particles).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> from skgp_bayes.predictive.sparse import SparseDrawsBase
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> Z = np.linspace(-2, 2, 4)[:, None]
        >>> thetas, v = np.zeros((3, 2)), np.ones((3, 4, 1))  # 3 draws, 1 latent
        >>> draws = SparseDrawsBase(
        ...     KernelAdapter(ConstantKernel() * RBF()), Z, 1e-6, thetas, v)
        >>> draws.n_draws
        3
        """
        return self.kernel_thetas.shape[0]

    def latent_moments(self, X_query, *, full_cov=False, draws=None):
        """Means ``(J, k, C)`` and the shared variances ``(J, k)`` or
        covariances ``(J, k, k)``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        >>> from skgp_bayes.predictive.sparse import SparseDrawsBase
        >>> from skgp_bayes.kernels import KernelAdapter
        >>> Z = np.linspace(-2, 2, 4)[:, None]
        >>> thetas, v = np.zeros((3, 2)), np.ones((3, 4, 1))  # 3 draws, 1 latent
        >>> draws = SparseDrawsBase(
        ...     KernelAdapter(ConstantKernel() * RBF()), Z, 1e-6, thetas, v)
        >>> means, variances = draws.latent_moments(np.array([[0.0], [1.0]]))
        >>> means.shape, variances.shape
        ((3, 2, 1), (3, 2))
        """
        draws = np.arange(self.n_draws) if draws is None else np.asarray(draws)
        with blas_threads_for(min(X_query.shape[0], PREDICT_ROWS), self.Z.shape[0]):
            return sparse_draw_moments(
                self.adapter,
                self.Z,
                self.jitter,
                self.kernel_thetas[draws],
                self.v[draws],
                X_query,
                full_cov=full_cov,
            )


class SparseGPDraws(SparseDrawsBase):
    """Per-particle sparse GP posteriors ``f | theta_j, v_j`` for regression.

    The interface of :class:`~skgp_bayes.predictive.exact.ExactGPDraws` that the
    exact-GP regressors' ``predict`` and ``sample_y`` use (``adapter``,
    ``n_draws``, ``noise_variances``, ``moments``), for draws that carry
    whitened inducing values instead of an exact posterior.
    """

    def __init__(self, adapter, Z, jitter, kernel_thetas, v, noise_variances):
        J = np.shape(kernel_thetas)[0]
        v = np.asarray(v, dtype=np.float64).reshape(J, Z.shape[0], 1)
        super().__init__(adapter, Z, jitter, kernel_thetas, v)
        self.noise_variances = np.asarray(noise_variances, dtype=np.float64)

    def moments(self, X_query, *, full_cov=False, draws=None):
        """Means ``(J, k)`` and variances ``(J, k)`` or covariances ``(J, k, k)``."""
        means, spread = self.latent_moments(X_query, full_cov=full_cov, draws=draws)
        return means[:, :, 0], spread

    def function_samples(self, n_samples, rng, n_features, offset, scale):
        """Pathwise samples ``(FunctionSamples, white noise per draw)``."""
        functions, white = sparse_function_samples(
            self.adapter,
            self.Z,
            self.jitter,
            self.kernel_thetas,
            self.v,
            None,
            n_samples,
            rng,
            n_features,
            offset=offset,
            scale=scale,
        )
        return functions[0], white
