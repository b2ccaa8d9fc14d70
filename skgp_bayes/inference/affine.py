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
density is not log-concave, ``H`` may have small or negative eigenvalues,
and the point curvature then says nothing about the width of the density
along that direction. Such a direction takes its precision from the density
itself, at its own scale: the symmetric second difference ``D(s) = log p(x0)
- (log p(x0 + s u) + log p(x0 - s u)) / 2`` on a ladder of distances ``s``
until it reaches half a nat, and the precision of the Gaussian with the
same drop, ``2 D(s) / s^2`` (a linear trend cancels in ``D``, so ``x0``
need not be the direction's mode). On a classification GP's posterior
(breast cancer, 31 hyperparameters) one direction, two length scales
moving against each other, had curvature -0.12 at the approximation's
point but a flat-topped well of half-width about 1 with steep walls: raised
to the old floor of ``1e-2`` it was scaled ten times too wide, the chains'
step sizes collapsed against its walls again and again in the first
warm-up, and that warm-up took a quarter of the fit's gradients. Only
where no drop of half a nat comes within ``min_precision ** -0.5`` is the
precision ``min_precision``.

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
# Directions whose point curvature is below this (a standard deviation above
# 2 in coordinates expected on unit scales) are measured by their profile.
_PROFILE_BELOW = 0.25
# The profile's ladder of distances: factors of sqrt(2) from a quarter, and
# the drop (in nats) at which a Gaussian is one standard deviation out.
_PROFILE_START = 0.25
_PROFILE_DROP = 0.5


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

    Eigen-directions of ``H`` with a precision below 0.25 take theirs from
    the density's profile along them (see the module notes).

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``; finite around ``x0``.
    x0 : ndarray of shape (d,)
    min_precision : float, default=1e-2
        Floor of the precisions; the profile looks as far as
        ``min_precision ** -0.5`` along a direction.

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

    A flat-topped well, ``-x^4``, has no curvature at its centre; its
    profile gives it a width of order one rather than the floor's ten:

    >>> T = curvature_preconditioner(lambda x: (-x[0] ** 4, -4 * x ** 3),
    ...                              np.zeros(1))
    >>> 0.5 < float(T[0, 0]) < 1.0
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
    low = np.flatnonzero(lam < _PROFILE_BELOW)
    if low.size:
        logp0 = float(logp_and_grad(x0)[0])
        for j in low:
            profiled = _profile_precision(
                logp_and_grad, x0, vectors[:, j], logp0, min_precision
            )
            lam[j] = max(lam[j], profiled)
    lam = np.maximum(lam, min_precision)
    return vectors / np.sqrt(lam)


def _profile_precision(logp_and_grad, x0, direction, logp0, min_precision):
    """Precision along a unit ``direction`` at the density's own scale.

    The first distance ``s`` of the ladder where the symmetric drop ``D(s)``
    reaches half a nat gives ``2 D(s) / s^2``; a non-finite density there
    (a bound) counts as a wall at ``s``, precision ``1 / s^2``. Returns
    ``min_precision`` when the drop stays below half a nat up to
    ``min_precision ** -0.5``.
    """
    farthest = min_precision**-0.5
    s = _PROFILE_START
    while s <= farthest:
        ends = [float(logp_and_grad(x0 + sign * s * direction)[0]) for sign in (1, -1)]
        if not np.all(np.isfinite(ends)):
            return 1.0 / s**2
        drop = logp0 - 0.5 * (ends[0] + ends[1])
        if drop >= _PROFILE_DROP:
            return 2.0 * drop / s**2
        s *= np.sqrt(2.0)
    return min_precision


def refine_from_draws(chains, *, prior_weight=5.0, modes=None):
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
    modes : ModeJumps, optional
        The modes the chains jump between, in the same coordinates. Each
        draw is then centred on the mean of its chain's draws nearest the
        same mode (the component of highest weighted density), so that ``S``
        is the spread within a mode: the moves between modes are the jumps',
        and the spread between them, counted in ``S``, shortened the steps
        HMC takes within each (monthly orders, two modes: the four chains
        adapted steps of 0.05 to 0.24 from the spread of all draws, 0.20 to
        0.86 from the spread within the modes).

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
    if modes is None:
        centered = (chains - chains.mean(axis=1, keepdims=True)).reshape(-1, d)
        n_groups = n_chains
    else:
        centered, n_groups = _centred_within_modes(chains, modes)
    n = centered.shape[0]
    cov = centered.T @ centered / max(n - n_groups, 1)
    shrunk = (n * cov + prior_weight * np.eye(d)) / (n + prior_weight)
    lam, vectors = np.linalg.eigh(0.5 * (shrunk + shrunk.T))
    return chains.reshape(-1, d).mean(axis=0), vectors * np.sqrt(lam)


def _centred_within_modes(chains, modes):
    """Every draw minus the mean of its chain's draws nearest the same mode,
    flattened to ``(n_chains * n_draws, d)``, and the number of such groups."""
    n_chains, n_draws, d = chains.shape
    flat = chains.reshape(-1, d)
    chain_of = np.repeat(np.arange(n_chains), n_draws)
    keys = chain_of * modes.means.shape[0] + modes.nearest(flat)
    groups, group_of = np.unique(keys, return_inverse=True)
    sums = np.zeros((groups.size, d))
    np.add.at(sums, group_of, flat)
    means = sums / np.bincount(group_of, minlength=groups.size)[:, None]
    return flat - means[group_of], groups.size


def coordinates_in(center, factor, points):
    """Points ``w`` expressed in refined coordinates ``u``, ``w = c + R u``.

    Parameters
    ----------
    center : ndarray of shape (d,)
    factor : ndarray of shape (d, d)
        ``R``, as returned by :func:`refine_from_draws`.
    points : ndarray of shape (..., d)

    Returns
    -------
    ndarray of shape (..., d)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.affine import coordinates_in
    >>> coordinates_in(np.ones(2), np.diag([2.0, 4.0]), np.array([[3.0, 5.0]]))
    array([[1., 1.]])
    """
    centred = np.asarray(points) - center
    flat = centred.reshape(-1, centred.shape[-1])
    return np.linalg.solve(factor, flat.T).T.reshape(centred.shape)


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
