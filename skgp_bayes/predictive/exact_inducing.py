"""Predictives of sparse draws whose inducing inputs are the training inputs.

With the training inputs as inducing inputs and a Gaussian likelihood, the
variational MCMC regressor's model is the exact GP: its chains sample the
exact marginal posterior of ``(theta, s2)``, and each draw's ``v | theta``
is exact. Predicting through ``v`` means conditioning the latent function
on ``u = R v`` with ``R R' = K(Z, Z) + jitter``, and the jitter (a relative
``1e-6`` of the signal variance, needed to factorise a smooth kernel's
``K(Z, Z)``) then acts as a second noise on ``u``: where the likelihood's
noise is far below it the predictive spread is the jitter's. On the vapour
pressure of mercury (13 rows, six decades of ``y``) the signal variance
sits near 200 ``Var(y)`` and the noise near ``3e-6 Var(y)``, so the jitter
(``2e-4 Var(y)``) was 60 times the noise, and the predictive standard
deviation at held-out temperatures 2.4-11 mm Hg where the exact GP's is
0.3-3.1.

So here each draw predicts by the exact GP's closed forms given ``(theta,
s2)``, ``v`` integrated out (Rao-Blackwellised): ``mean = k(x, X) (K + s2
I)^-1 y`` and ``cov = K(x, x') - k(x, X) (K + s2 I)^-1 k(X, x')``, the
factor of ``K + s2 I`` being the one the exact target itself factorises.
The mixture over the draws has the same distribution as the mixture over
``(theta, v)`` draws without the jitter, and less Monte Carlo error.
"""

import numpy as np

from .._threads import blas_threads_for, on_contiguous_shares
from ..kernels import lower_kernel
from ..kernels.spectral import spectral_parameters
from ..sampling import exact_conditioner, pathwise_functions
from ..targets._sparse_numba import LAPACK, MIN_VAR
from ._exact_inducing_numba import exact_draw_moments as _compiled_moments
from .exact import ExactGPDraws
from .mixture import gaussian_joint_draws
from .sparse import draw_kernel_parameters

__all__ = [
    "exact_draw_covariances",
    "exact_draw_moments",
    "exact_function_samples",
    "exact_joint_draws",
]


def _one_draw_gp(data, theta, noise):
    """Draw ``theta``'s exact GP, as the exact regressors hold it: its factor
    of ``K + noise I`` (jitter ladder included) kept only as long as it."""
    return ExactGPDraws(*data, np.asarray(theta)[None], np.array([noise]))


def _one_draw(data, theta, noise, X_query, full_cov):
    """Mean and variance (or covariance) of one draw's exact GP at ``X_query``;
    variances floored at the compiled loop's ``MIN_VAR``."""
    means, spread = _one_draw_gp(data, theta, noise).moments(X_query, full_cov=full_cov)
    if full_cov:
        return means[0], spread[0]
    return means[0], np.maximum(spread[0], MIN_VAR)


def exact_draw_moments(data, thetas, noises, X_query, *, threads=1):
    """Latent means and variances at ``X_query`` of each draw's exact GP.

    Parameters
    ----------
    data : tuple
        ``(adapter, X, y)``: the kernel adapter, the training inputs and
        targets on the model's scale.
    thetas : ndarray of shape (J, p)
        Kernel hyperparameters (log scale) of each draw.
    noises : ndarray of shape (J,)
        Noise variance of each draw, on the model's scale.
    X_query : ndarray of shape (k, d)
    threads : int, default=1
        Threads over the draws for fast-path kernels (each thread takes a
        contiguous share, BLAS on one thread; the same moments for any
        number).

    Returns
    -------
    means, variances : ndarray of shape (J, k)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process import GaussianProcessRegressor
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.predictive.exact_inducing import exact_draw_moments
    >>> X = np.linspace(0, 3, 8)[:, None]
    >>> y = np.sin(X[:, 0])
    >>> means, variances = exact_draw_moments(
    ...     (KernelAdapter(RBF()), X, y), np.zeros((1, 1)), np.array([0.01]),
    ...     np.array([[1.5]]))
    >>> gpr = GaussianProcessRegressor(RBF(), alpha=0.01, optimizer=None).fit(X, y)
    >>> mean, sd = gpr.predict(np.array([[1.5]]), return_std=True)
    >>> bool(np.allclose(means[0], mean) and np.allclose(variances[0], sd**2))
    True
    """
    adapter, X, y = data
    thetas = np.asarray(thetas, dtype=np.float64)
    noises = np.asarray(noises, dtype=np.float64)
    J, k = thetas.shape[0], X_query.shape[0]
    if not adapter.is_fast:
        means, spread = np.empty((J, k)), np.empty((J, k))
        with blas_threads_for(k, X.shape[0]):
            for j in range(J):
                means[j], spread[j] = _one_draw(
                    data, thetas[j], noises[j], X_query, False
                )
        return means, spread
    inv_ells, variances, whites = draw_kernel_parameters(
        adapter, thetas, X_query.shape[1]
    )
    query = np.ascontiguousarray(X_query, dtype=np.float64)
    train = np.ascontiguousarray(X, dtype=np.float64)
    targets = np.ascontiguousarray(y, dtype=np.float64)

    def share(rows):
        return _compiled_moments(
            query,
            train,
            targets,
            inv_ells[rows],
            variances[rows],
            whites[rows],
            noises[rows],
            adapter.spec.base,
            LAPACK,
        )

    parts = on_contiguous_shares(share, J, threads)
    ok, means, spread = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    # a draw whose K + s2 I needs the jitter ladder, as the exact target's did
    for j in np.flatnonzero(~ok):
        means[j], spread[j] = _one_draw(data, thetas[j], noises[j], X_query, False)
    return means, spread


def exact_draw_covariances(data, thetas, noises, X_query):
    """Latent means ``(J, k)`` and covariances ``(J, k, k)`` of each draw.

    Arguments as in :func:`exact_draw_moments`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.predictive.exact_inducing import exact_draw_covariances
    >>> X = np.linspace(0, 3, 8)[:, None]
    >>> means, covs = exact_draw_covariances(
    ...     (KernelAdapter(RBF()), X, np.sin(X[:, 0])), np.zeros((2, 1)),
    ...     np.array([0.01, 0.1]), X[:3])
    >>> means.shape, covs.shape
    ((2, 3), (2, 3, 3))
    """
    J, k = np.shape(thetas)[0], X_query.shape[0]
    means, covs = np.empty((J, k)), np.empty((J, k, k))
    for j in range(J):
        means[j], covs[j] = _one_draw(data, thetas[j], noises[j], X_query, True)
    return means, covs


def exact_joint_draws(data, thetas, noises, X_query, n, rng):
    """Joint draws of the latent function at ``X_query``: shape ``(k, n)``.

    Each draw picks ``j`` uniformly at random and samples draw ``j``'s
    exact GP posterior jointly over ``X_query``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.predictive.exact_inducing import exact_joint_draws
    >>> X = np.linspace(0, 3, 8)[:, None]
    >>> exact_joint_draws((KernelAdapter(RBF()), X, np.sin(X[:, 0])),
    ...                   np.zeros((2, 1)), np.array([0.01, 0.1]), X[:3], 5,
    ...                   np.random.RandomState(0)).shape
    (3, 5)
    """
    which = rng.randint(np.shape(thetas)[0], size=n)
    out = np.empty((X_query.shape[0], n))
    with blas_threads_for(X_query.shape[0], data[1].shape[0]):
        for j in np.unique(which):
            cols = np.flatnonzero(which == j)
            mean, cov = _one_draw(data, thetas[j], noises[j], X_query, True)
            out[:, cols] = gaussian_joint_draws(mean, cov, cols.size, rng)
    return out


def exact_function_samples(
    data, thetas, noises, n_samples, rng, n_features, offset=0.0, scale=1.0
):
    """Pathwise samples of the draws' exact GPs (Matheron's rule on the data).

    Each sample picks a draw uniformly at random; a random-Fourier-feature
    prior draw is updated by ``k(x, X) (K + s2 I)^-1 (y - f_prior(X) -
    eps)`` with ``eps ~ N(0, s2 + white)``, the factor computed only for
    the draws picked.

    Parameters
    ----------
    data, thetas, noises
        As in :func:`exact_draw_moments`.
    n_samples : int
    rng : RandomState
    n_features : int or None
        Fourier features per draw; None uses 1024.
    offset, scale : float
        The functions are ``offset + scale * f``.

    Returns
    -------
    functions : FunctionSamples
    white : ndarray of shape (J,)
        WhiteKernel variance of each draw (zero for draws not used).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.predictive.exact_inducing import exact_function_samples
    >>> X = np.linspace(0, 3, 8)[:, None]
    >>> functions, white = exact_function_samples(
    ...     (KernelAdapter(RBF()), X, np.sin(X[:, 0])), np.zeros((2, 1)),
    ...     np.array([0.01, 0.1]), 4, np.random.RandomState(0), 256)
    >>> functions(X[:3]).shape, white.tolist()
    ((3, 4), [0.0, 0.0])
    """
    adapter, X, y = data
    spec = lower_kernel(adapter.kernel)
    J = np.shape(thetas)[0]
    which = rng.randint(J, size=n_samples)
    factors, white = {}, np.zeros(J)
    with blas_threads_for(X.shape[0], X.shape[0]):
        for j in (int(j) for j in np.unique(which)):
            factors[j] = _one_draw_gp(data, thetas[j], noises[j]).factor(0)
            white[j] = spectral_parameters(spec, thetas[j], X.shape[1])[2]
    conditioner = exact_conditioner(
        X, y, factors.__getitem__, np.asarray(noises, dtype=np.float64) + white
    )
    functions = pathwise_functions(
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
    return functions, white
