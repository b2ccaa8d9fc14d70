"""The regressor's hyperparameters drawn from their Laplace approximation.

The selective bound point-estimates the kernel hyperparameters and the
noise variance. Where the rows are few for the hyperparameters (uscrime: 32
rows, 15 inputs, 17 hyperparameters) the estimate over-trusts itself: its
noise variance came out at a sd of 44 where the test errors were about 240,
and the test mean log density was 0.83 nats below scikit-learn's. A fully
Bayesian answer averages over the hyperparameters' posterior; the cheapest
faithful one for a point-estimating method is the Laplace approximation at
the fitted point in log coordinates (MacKay 1992; the "marginal GP" of
Garnett, Osborne and Hennig 2014), whose covariance is the inverse
curvature of the same bound the fit maximised. Each draw of the
hyperparameters then gets the optimal ``q(u)`` of the kept set, so the
predictive is a mixture of the sparse GP's Gaussians. Where the data pin
the hyperparameters down the draws crowd on the point and the mixture is
the point estimate's predictive; see doc/selective_svgp.rst for the
measured effect.
"""

from types import SimpleNamespace

import numpy as np

from ..exceptions import NotPSDError
from ..inference.laplace import (
    ON_BOUND,
    gaussian_draws,
    gaussian_factor,
    laplace_covariance,
    reflect_into_box,
)
from ..predictive.mixture import gaussian_joint_draws
from ..predictive.sparse import q_moments


def hyperparameter_draws(bound, hyper, bounds, kept, n_draws, rng):
    """Draws of ``[kernel theta, log noise]`` from the Laplace approximation.

    The curvature is that of ``bound`` (plus the log prior) with the kept
    inducing points, at the fitted ``hyper``; its standard deviations are
    capped at :data:`~skgp_bayes.inference.laplace.MAX_LAPLACE_STD` log
    units, and a coordinate piled on its bound spreads as its pile (see
    :func:`~skgp_bayes.inference.laplace.laplace_covariance`). Draws come
    in mirrored pairs and are reflected into the box; coordinates whose
    bounds fix them stay fixed.

    Parameters
    ----------
    bound : SubsetBound
    hyper : ndarray of shape (p,)
        The fitted point.
    bounds : ndarray of shape (p, 2)
    kept : ndarray of int
        Indices of the kept candidates.
    n_draws : int
        0 returns ``hyper`` as the one row.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (max(n_draws, 1), p)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.selective._hyperparameter_draws import hyperparameter_draws
    >>> from skgp_bayes.targets.selective import SubsetBound
    >>> X = np.linspace(0, 5, 30)[:, None]
    >>> bound = SubsetBound(KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::3])
    >>> box = np.array([[-5.0, 5.0], [-9.0, 2.0]])
    >>> draws = hyperparameter_draws(bound, np.array([0.0, -2.0]), box,
    ...                              np.arange(10), 8, np.random.default_rng(0))
    >>> draws.shape
    (8, 2)
    """
    if n_draws == 0:
        return np.array(hyper, dtype=np.float64)[None, :]
    free = np.flatnonzero(bounds[:, 1] - bounds[:, 0] > ON_BOUND)

    def logp_and_grad(sub):
        full = np.array(hyper, dtype=np.float64)
        full[free] = sub
        value, grad = bound.logp_and_grad(full, kept)
        return value, grad[free]

    target = SimpleNamespace(logp_and_grad=logp_and_grad)
    cov = laplace_covariance(target, hyper[free], bounds[free])
    draws = np.tile(np.asarray(hyper, dtype=np.float64), (n_draws, 1))
    factor = gaussian_factor(cov)
    spread = gaussian_draws(hyper[free], factor, n_draws, rng, mirrored=True)
    draws[:, free] = reflect_into_box(spread, bounds[free])
    return draws


def optimal_q_per_draw(bound, draws, kept, point):
    """The kept set's optimal whitened ``q(v)`` at each row of ``draws``.

    A draw that is not finite (a curvature that could not be evaluated) or
    whose ``K(Z, Z)`` cannot be factorised even with the jitter ladder (a
    length scale drawn far longer than the points' spacing, with
    ``jitter=0``) is replaced in ``draws``, in place, by the fitted
    ``point``, whose factor the fit has already taken: the mixture loses
    that draw's spread rather than the fit failing.

    Returns
    -------
    means : ndarray of shape (S, m)
    factors : ndarray of shape (S, m, m)
        Lower factors of the covariances.
    n_replaced : int
        Draws replaced by ``point``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.selective._hyperparameter_draws import optimal_q_per_draw
    >>> from skgp_bayes.targets.selective import SubsetBound
    >>> X = np.linspace(0, 5, 30)[:, None]
    >>> bound = SubsetBound(KernelAdapter(RBF()), X, np.sin(X[:, 0]), X[::3])
    >>> means, factors, n_replaced = optimal_q_per_draw(
    ...     bound, np.zeros((2, 2)), [0, 4, 9], np.zeros(2))
    >>> means.shape, factors.shape, n_replaced
    ((2, 3), (2, 3, 3), 0)
    """
    means, factors, n_replaced = [], [], 0
    for s, hyper in enumerate(draws):
        q = _optimal_q_or_none(bound, hyper, kept)
        if q is None:
            draws[s] = point
            q = bound.optimal_q(point, kept)
            n_replaced += 1
        means.append(q[0])
        factors.append(q[1])
    return np.array(means), np.array(factors), n_replaced


def _optimal_q_or_none(bound, hyper, kept):
    if not np.all(np.isfinite(hyper)):
        return None
    try:
        return bound.optimal_q(hyper, kept)
    except NotPSDError:
        return None


def latent_per_draw(adapter, thetas, Z, jitter, q_means, q_factors, X, full_cov=False):
    """Latent means ``(S, k)`` and variances ``(S, k)`` (covariances
    ``(S, k, k)`` with ``full_cov``) of each draw's ``q(f)`` at ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.selective._hyperparameter_draws import latent_per_draw
    >>> Z = np.array([[0.0], [1.0]])
    >>> means, var = latent_per_draw(KernelAdapter(RBF()), np.zeros((3, 1)), Z,
    ...     1e-6, np.zeros((3, 2)), np.tile(0.5 * np.eye(2), (3, 1, 1)), Z)
    >>> means.shape, var.shape
    ((3, 2), (3, 2))
    """
    moments = [
        q_moments(adapter, theta, Z, jitter, mean, factor, X, full_cov)
        for theta, mean, factor in zip(thetas, q_means, q_factors, strict=True)
    ]
    return np.array([m for m, _ in moments]), np.array([s for _, s in moments])


def mixture_joint_draws(adapter, thetas, Z, jitter, q_means, q_factors, X, n, rng):
    """Joint draws ``(len(X), n)`` of the latent function from the mixture.

    Each sample picks a draw uniformly, then draws from that draw's
    ``q(f)`` jointly at ``X``; a single draw (the point estimate) picks
    nothing, so its random stream is that of one Gaussian.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.selective._hyperparameter_draws import mixture_joint_draws
    >>> Z = np.array([[0.0], [1.0]])
    >>> mixture_joint_draws(KernelAdapter(RBF()), np.zeros((3, 1)), Z, 1e-6,
    ...     np.zeros((3, 2)), np.tile(0.5 * np.eye(2), (3, 1, 1)), Z, 4,
    ...     np.random.RandomState(0)).shape
    (2, 4)
    """
    n_draws = thetas.shape[0]
    which = np.zeros(n, dtype=np.intp) if n_draws == 1 else rng.randint(n_draws, size=n)
    out = np.empty((X.shape[0], n))
    for j in np.unique(which):
        cols = np.flatnonzero(which == j)
        mean, cov = q_moments(
            adapter, thetas[j], Z, jitter, q_means[j], q_factors[j], X, True
        )
        out[:, cols] = gaussian_joint_draws(mean, cov, cols.size, rng)
    return out
