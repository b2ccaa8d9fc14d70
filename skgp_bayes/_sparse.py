"""Shared machinery of the sparse (inducing-point) estimators.

Choosing inducing inputs, fitting the SVGP Gaussian approximation that
initialises the samplers, per-draw latent moments, and joint or pathwise
posterior samples of whitened sparse models whose draws are ``(theta, v)``.
"""

import warnings

import numpy as np
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.exceptions import ConvergenceWarning

from ._predictive import gaussian_joint_draws
from ._threads import blas_threads_for
from .inference.optimize import epoch_batches, maximize, settled
from .kernels import lower_kernel
from .kernels.spectral import spectral_parameters
from .sampling import (
    DEFAULT_N_FEATURES,
    pathwise_functions,
    sparse_conditioner,
    with_prior_noise,
)
from .targets.sparse import inducing_factor, project

__all__ = []

# k-means on more points than this uses MiniBatchKMeans.
MINIBATCH_KMEANS_N = 10000
# Query rows per block in prediction, bounding memory at O(rows * m).
_PREDICT_ROWS = 4096
# Iterations over which the SVGP stopping rule measures the bound's gain.
SVGP_WINDOW = 10


def initial_inducing(X, n_inducing, seed):
    """k-means centres (or the distinct inputs when there are few)."""
    unique = np.unique(X, axis=0)
    m = min(int(n_inducing), unique.shape[0])
    if m == unique.shape[0]:
        return unique.copy()
    if X.shape[0] > MINIBATCH_KMEANS_N:
        km = MiniBatchKMeans(n_clusters=m, random_state=seed, n_init=3)
    else:
        km = KMeans(n_clusters=m, random_state=seed, n_init=1)
    with warnings.catch_warnings():
        # Duplicated inputs can leave k-means with fewer distinct clusters;
        # the jitter on K(Z, Z) copes with coincident inducing inputs.
        warnings.simplefilter("ignore", ConvergenceWarning)
        km.fit(X)
    return np.ascontiguousarray(km.cluster_centers_, dtype=np.float64)


def fit_svgp_lbfgs(bound, start, bounds, max_iter, tol=None, report=None):
    """L-BFGS-B on the bound; returns ``(params, trace, converged, n_iter)``.

    ``tol`` (nats per data point) adds a stopping rule: the optimiser stops
    once the bound has risen by less than ``tol * n`` nats over the last
    ``SVGP_WINDOW`` iterations. A gain in nats is a log likelihood ratio,
    so the rule does not depend on the units of ``X`` or ``y`` (unlike a
    tolerance on the gradient, whose entries carry the units of the
    parameters, or scipy's ``ftol``, relative to the bound's value and so
    to the offset a change of units adds to it). ``report(n_iter, elbo)``
    is called after every iteration, for progress lines.
    """
    n = bound.n
    scale = 1.0 / n

    def per_point(params, _):
        # Multiplying by 1/n, not dividing by n: the rounding the fitted
        # models have always had.
        value, grad = bound.logp_and_grad(params)
        return value * scale, grad * scale

    trace = []

    def stop(per_point_trace):
        trace.append(per_point_trace[-1] * n)
        if report is not None:
            report(len(trace), trace[-1])
        return (
            tol is not None
            and len(trace) > SVGP_WINDOW
            and trace[-1] - trace[-1 - SVGP_WINDOW] < tol * n
        )

    out = maximize(per_point, start, bounds, max_iter=max_iter, stop=stop)
    return out.params, trace, out.converged, out.n_iter


def fit_svgp_adam(
    bound,
    start,
    bounds,
    max_iter,
    batch_size,
    learning_rate,
    rng,
    settle_window=None,
    report=None,
):
    """Adam on minibatch estimates of the SVGP bound.

    With ``settle_window`` the run stops once the mean of the last
    ``settle_window`` minibatch bounds exceeds the mean of the window before
    it by less than twice the standard error of that difference: the bound
    no longer rises by more than its own minibatch noise shows. Returns
    ``(params, trace, converged, n_iter)``. ``report(n_iter, elbo)`` is
    called after every step, with that step's minibatch estimate.
    """
    settle = None if settle_window is None else settled(settle_window)
    stop = settle
    if report is not None:

        def stop(trace):
            report(len(trace), trace[-1])
            return settle is not None and settle(trace)

    out = maximize(
        bound.logp_and_grad,
        start,
        bounds,
        max_iter=max_iter,
        # The bound is a sum over n points: dividing by n keeps Adam's
        # effective step independent of the data size.
        n=bound.n,
        stop=stop,
        batches=epoch_batches(rng, bound.n, batch_size),
        learning_rate=learning_rate,
    )
    # Without a settling rule the budget is the plan: the run converged.
    converged = out.converged or settle is None
    return out.params, out.trace, converged, out.n_iter


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
    v_cov_factors : ndarray of shape (C, m, m) or None
        Lower factor of the covariance of ``q(v)`` per latent (then
        ``S == 1``); None for point draws of ``v`` (MCMC).
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
    functions = []
    for c in range(C):
        u = np.zeros((S, m))
        for j in used:
            # u = R v: the whitened draw mapped back to inducing values
            u[j] = factors[j] @ v[j, :, c]
        cov = None if v_cov_factors is None else [factors[0] @ v_cov_factors[c]]
        conditioner = with_prior_noise(
            sparse_conditioner(Z, factors.__getitem__, u, cov), extra
        )
        functions.append(
            pathwise_functions(
                spec,
                thetas,
                n_samples,
                conditioner,
                n_features=DEFAULT_N_FEATURES if n_features is None else n_features,
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


def resolve_inducing(inducing_points, X, seed, scaling=None):
    """Inducing inputs from an estimator's ``inducing_points`` argument.

    An int picks that many by k-means on ``X`` (all distinct inputs when
    there are fewer); an array, in the user's units, is checked and brought
    to the model's units by ``scaling`` (the estimator's input scaling).
    """
    if isinstance(inducing_points, (int, np.integer)):
        if inducing_points < 1:
            raise ValueError(
                f"inducing_points must be a positive count; got {inducing_points}."
            )
        return initial_inducing(X, int(inducing_points), seed)
    Z = np.asarray(inducing_points, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] < 1:
        raise ValueError(
            "inducing_points must be an int or a 2-D array with at least one "
            f"row; got an array of shape {Z.shape}."
        )
    if Z.shape[1] != X.shape[1]:
        raise ValueError(
            f"inducing_points has {Z.shape[1]} features but X has {X.shape[1]}."
        )
    if not np.all(np.isfinite(Z)):
        raise ValueError("inducing_points contains NaN or infinity.")
    if scaling is not None:
        Z = scaling.transform(Z)
    return np.ascontiguousarray(Z)


def sparse_draw_moments(adapter, Z, jitter, thetas, v, X, *, full_cov=False):
    """Latent moments of each draw ``(theta_j, v_j)`` of a whitened sparse GP.

    Given ``v``, ``f(X) ~ N(A'v, K(X, X) - A'A)`` with ``A = R^-1 K(Z, X)``.
    Returns means ``(J, k, C)`` and variances ``(J, k)`` (or covariances
    ``(J, k, k)`` with ``full_cov``), the latter shared by every latent.
    """
    J, k = thetas.shape[0], X.shape[0]
    means = np.empty((J, k, v.shape[2]))
    spread = np.empty((J, k, k) if full_cov else (J, k))
    for j in range(J):
        R = inducing_factor(adapter, thetas[j], Z, jitter)
        for i0 in range(0, k, _PREDICT_ROWS):
            rows = slice(i0, i0 + _PREDICT_ROWS)
            A, gamma, _ = project(adapter, thetas[j], Z, X[rows], R)
            means[j, rows] = A.T @ v[j]
            if not full_cov:
                spread[j, rows] = gamma
        if full_cov:
            A, _, _ = project(adapter, thetas[j], Z, X, R)
            cov = adapter.gram(thetas[j], X) - A.T @ A
            spread[j] = 0.5 * (cov + cov.T)
    return means, spread


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
        >>> from skgp_bayes._sparse import SparseDrawsBase
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
        >>> from skgp_bayes._sparse import SparseDrawsBase
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
        with blas_threads_for(min(X_query.shape[0], _PREDICT_ROWS), self.Z.shape[0]):
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

    The interface of :class:`~skgp_bayes._predictive.ExactGPDraws` that the
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
