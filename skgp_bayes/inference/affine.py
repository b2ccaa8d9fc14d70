"""Affine preconditioning of a density from its curvature at one point.

HMC with a dense mass matrix ``M`` is HMC with a unit mass matrix on
``w = M^(1/2) x`` (Neal, 2011, section 4.1): a fixed linear change of
variables. :func:`curvature_preconditioner` builds that change of variables
from the negative Hessian ``H`` of the log density at a point ``x0``,
``x = x0 + T w`` with ``T' H T = I``, so that a density that is close to
Gaussian around ``x0`` becomes close to a standard normal in ``w``, whatever
the correlations and scales of ``x``. The engine's own diagonal adaptation
then corrects what the point curvature gets wrong, direction by direction.

The Hessian comes from central differences of the analytic gradient
(``2 d`` gradient evaluations; no autodiff). Away from a mode, or where the
density is not log-concave, ``H`` may have small or negative eigenvalues;
they are raised to ``min_precision`` (a standard deviation of
``min_precision ** -0.5`` along that direction), which the adaptation then
shrinks if the direction is narrower.

Like the samplers, nothing here knows about Gaussian processes.
"""

import numpy as np

__all__ = [
    "AffineTarget",
    "coordinates_in",
    "curvature_preconditioner",
    "diagonal_inverse_mass",
    "refine_from_draws",
]

# Central-difference step of the gradient: parameters are expected on unit
# scales (logs, whitened values), and the step balances truncation error,
# O(h^2), against rounding, O(eps / h), near h = eps^(1/3) ~ 1e-5.
_FD_STEP = 1e-5


class AffineTarget:
    """The density of ``x = shift + T w`` as a function of ``w``.

    ``log p(w) = log p_x(shift + T w)`` (the Jacobian is constant) and
    ``grad_w = T' grad_x``. Picklable when the wrapped density is.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``.
    shift : ndarray of shape (d,)
    transform : ndarray of shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.affine import AffineTarget
    >>> target = AffineTarget(lambda x: (-0.5 * x @ x, -x), np.ones(2), 2 * np.eye(2))
    >>> value, grad = target(np.zeros(2))  # x = (1, 1)
    >>> float(value), grad
    (-1.0, array([-2., -2.]))
    """

    def __init__(self, logp_and_grad, shift, transform):
        self.logp_and_grad = logp_and_grad
        self.shift = np.asarray(shift, dtype=np.float64)
        self.transform = np.asarray(transform, dtype=np.float64)
        # T' in C order: the product with a vector is then one contiguous pass.
        self._transform_t = np.ascontiguousarray(self.transform.T)

    def to_x(self, w):
        """Map ``w`` (shape ``(..., d)``) to ``x``.

        Parameters
        ----------
        w : ndarray of shape (..., d)

        Returns
        -------
        ndarray of shape (..., d)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.affine import AffineTarget
        >>> AffineTarget(None, np.ones(2), 2 * np.eye(2)).to_x(np.ones((3, 2)))[0]
        array([3., 3.])
        """
        return self.shift + np.asarray(w) @ self.transform.T

    def __call__(self, w):
        value, grad = self.logp_and_grad(self.shift + self.transform @ w)
        # A non-finite entry of grad stays non-finite through T' (T is
        # invertible, so every row of T has a non-zero entry): no check here.
        return value, self._transform_t @ np.asarray(grad, dtype=np.float64)


def curvature_preconditioner(logp_and_grad, x0, *, min_precision=1e-2):
    """``T`` with ``T' H T = I`` for the negative Hessian ``H`` at ``x0``.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``; finite around ``x0``.
    x0 : ndarray of shape (d,)
    min_precision : float, default=1e-2
        Floor of the eigenvalues of ``H``.

    Returns
    -------
    transform : ndarray of shape (d, d) or None
        ``V diag(lambda^-1/2)`` from the eigendecomposition ``H = V diag
        (lambda) V'``; None when a gradient near ``x0`` was not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.affine import curvature_preconditioner
    >>> cov = np.array([[4.0, 1.9], [1.9, 1.0]])
    >>> prec = np.linalg.inv(cov)
    >>> T = curvature_preconditioner(lambda x: (-0.5 * x @ prec @ x, -prec @ x),
    ...                              np.zeros(2))
    >>> bool(np.allclose(T @ T.T, cov))
    True
    """
    x0 = np.asarray(x0, dtype=np.float64)
    d = x0.size
    hessian = np.empty((d, d))
    for j in range(d):
        step = np.zeros(d)
        step[j] = _FD_STEP
        _, g_plus = logp_and_grad(x0 + step)
        _, g_minus = logp_and_grad(x0 - step)
        hessian[j] = (np.asarray(g_plus) - np.asarray(g_minus)) / (2 * _FD_STEP)
    if not np.all(np.isfinite(hessian)):
        return None
    precision = -0.5 * (hessian + hessian.T)
    lam, vectors = np.linalg.eigh(precision)
    lam = np.maximum(lam, min_precision)
    return vectors / np.sqrt(lam)


def refine_from_draws(chains, *, prior_weight=5.0):
    """Principal axes and scales of draws, shrunk towards the identity.

    For draws made in coordinates ``w`` that were meant to be standard
    normal (``x = x0 + T w`` from :func:`curvature_preconditioner`), the
    within-chain covariance ``S`` of the draws says how far the point
    curvature was off: a posterior skewed away from ``x0``, or wider than
    its curvature there, shows as eigenvalues of ``S`` well above 1 (on a
    length scale of a classification GP, 14: a direction four times wider
    than the step and path length were made for). The refined coordinates
    ``w = c + R u``, ``R = V diag(lambda)^(1/2)`` from ``(N S + k I) / (N +
    k) = V diag(lambda) V'``, make the draws' covariance the identity in
    ``u`` along its principal axes. ``k = prior_weight`` shrinks towards the
    identity (the curvature's own answer) as Stan does its dense metric
    towards a multiple of the identity, weight ``k / (N + k)`` for ``N``
    draws; the engine's diagonal adaptation then corrects the scale along
    each principal axis, which a noisy estimate gets wrong first.

    Parameters
    ----------
    chains : ndarray of shape (n_chains, n_draws, d)
        Draws in the current coordinates.
    prior_weight : float, default=5.0

    Returns
    -------
    center : ndarray of shape (d,)
        Mean of all draws.
    factor : ndarray of shape (d, d)
        ``R`` above.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.affine import refine_from_draws
    >>> rng = np.random.default_rng(0)
    >>> draws = rng.normal(size=(4, 2000, 2)) * [3.0, 1.0] + [1.0, 0.0]
    >>> center, factor = refine_from_draws(draws)
    >>> np.round(center, 1)
    array([1., 0.])
    >>> bool(np.allclose(factor @ factor.T, np.diag([9.0, 1.0]), atol=0.3))
    True
    """
    chains = np.asarray(chains, dtype=np.float64)
    n_chains, n_draws, d = chains.shape
    centered = (chains - chains.mean(axis=1, keepdims=True)).reshape(-1, d)
    n = centered.shape[0]
    cov = centered.T @ centered / max(n - n_chains, 1)
    shrunk = (n * cov + prior_weight * np.eye(d)) / (n + prior_weight)
    lam, vectors = np.linalg.eigh(0.5 * (shrunk + shrunk.T))
    return chains.reshape(-1, d).mean(axis=0), vectors * np.sqrt(lam)


def coordinates_in(center, factor, points):
    """Points ``w`` expressed in refined coordinates ``u``, ``w = c + R u``.

    Parameters
    ----------
    center : ndarray of shape (d,)
    factor : ndarray of shape (d, d)
        ``R``, as returned by :func:`refine_from_draws`.
    points : ndarray of shape (k, d)

    Returns
    -------
    ndarray of shape (k, d)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.affine import coordinates_in
    >>> coordinates_in(np.ones(2), np.diag([2.0, 4.0]), np.array([[3.0, 5.0]]))
    array([[1., 1.]])
    """
    return np.linalg.solve(factor, (np.asarray(points) - center).T).T


def diagonal_inverse_mass(transform, inv_mass):
    """Diagonal of ``T diag(inv_mass) T'``: a diagonal inverse mass in ``w``
    seen in the original coordinates ``x = x0 + T w``.

    Parameters
    ----------
    transform : ndarray of shape (d, d)
    inv_mass : ndarray of shape (d,)

    Returns
    -------
    ndarray of shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.affine import diagonal_inverse_mass
    >>> diagonal_inverse_mass(np.array([[1.0, 1.0], [0.0, 2.0]]), np.ones(2))
    array([2., 4.])
    """
    return np.einsum("ij,j,ij->i", transform, inv_mass, transform)
