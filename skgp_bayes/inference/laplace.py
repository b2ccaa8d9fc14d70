"""Laplace approximations of a target's modes, and draws around them.

A target here is anything with ``logp_and_grad(params) -> (value, grad)``
over a flat vector within box bounds. The approximations start samplers
and particle methods (spread of the initial points, preconditioners); they
are not posteriors in their own right.
"""

import numpy as np

from ..exceptions import NotPSDError
from .optimize import maximize

__all__ = [
    "MAX_LAPLACE_STD",
    "SAME_MODE",
    "distinct_optima",
    "find_map",
    "gaussian_draws",
    "gaussian_factor",
    "laplace_component",
    "laplace_covariance",
    "laplace_modes",
    "same_mode",
    "ON_BOUND",
    "PILED_RATE",
    "piled_on_bounds",
    "reflect_into_box",
]

# Cap on a Laplace standard deviation, in the units of the parameters (log
# units for positive hyperparameters): beyond it the quadratic
# approximation is meaningless.
MAX_LAPLACE_STD = 1.0
# Step of the central differences of the gradient.
_LAPLACE_STEP = 1e-4
# Two optima closer than this in every coordinate are one mode.
SAME_MODE = 0.3
# A coordinate whose centre lies on one of its bounds, the log density
# falling away from the bound at least this fast (per unit), is piled on
# the bound: its posterior there is close to an exponential with mean
# distance 1 / rate, not a Gaussian. Noise-free data pile a noise
# variance's log on its lower bound so (94 per log unit on 200 points of
# sin(6x), 9.5 on 30). Below a rate of 1 the posterior spreads over more
# than a unit and the bound matters little.
PILED_RATE = 1.0
# How near an optimum counts as on its bound (L-BFGS-B returns the bound
# itself), and how near two bounds make a fixed coordinate.
ON_BOUND = 1e-6


def piled_on_bounds(centre, grad, bounds, min_rate=PILED_RATE):
    """Coordinates piled on their lower and upper bounds (see ``PILED_RATE``).

    Parameters
    ----------
    centre, grad : ndarray of shape (p,)
        A point and the log density's gradient there.
    bounds : ndarray of shape (p, 2)
    min_rate : float, default=PILED_RATE
        The least rate, per unit, at which the log density must fall away
        from the bound; 0 counts every coordinate on a bound whose
        gradient does not point away from it.

    Returns
    -------
    lower, upper : ndarray of bool, shape (p,)
        Equal bounds (a fixed coordinate) are neither.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import piled_on_bounds
    >>> bounds = np.array([[0.0, 5.0], [0.0, 5.0], [0.0, 5.0]])
    >>> piled_on_bounds(np.array([0.0, 0.0, 2.0]), np.array([-50.0, 0.1, -50.0]),
    ...                 bounds)
    (array([ True, False, False]), array([False, False, False]))
    >>> piled_on_bounds(np.array([0.0, 0.0, 2.0]), np.array([-0.1, 0.1, -50.0]),
    ...                 bounds, min_rate=0.0)
    (array([ True, False, False]), array([False, False, False]))
    """
    low, high = bounds[:, 0], bounds[:, 1]
    free = high - low > ON_BOUND
    lower = free & (centre - low <= ON_BOUND) & (grad <= -min_rate)
    upper = free & (high - centre <= ON_BOUND) & (grad >= min_rate)
    return lower, upper


def find_map(target, start, bounds, n=None):
    """Maximum a posteriori point of ``target`` by L-BFGS-B from ``start``.

    Parameters
    ----------
    target : object
        With ``logp_and_grad(params) -> (value, grad)``.
    start : ndarray of shape (p,)
    bounds : ndarray of shape (p, 2)
    n : int, optional
        The number of terms the log density sums (data rows); L-BFGS-B
        sees the value divided by it. None takes ``target.n``, or 1 where
        the target has none.

    Returns
    -------
    MaximizeResult
        ``params`` is the mode; ``n_iter`` the L-BFGS-B iterations.

    Notes
    -----
    Every hyperparameter is bounded, and where every coordinate is,
    L-BFGS-B's first trial point is the whole projected gradient step
    ``start + grad``. A log marginal likelihood's gradient grows with the
    rows it sums, so unscaled that step lands on a corner of the box
    (breast cancer's 398 rows: a variance of ``e^11.5`` with a length scale
    of ``e^-11.5``), and the Newton iterations of a Laplace surrogate, or a
    line search back from the corner, then cost more than the first few
    iterations of the search that it skipped. Divided by the rows, the
    gradient is a mean over them and the step is a length-scale's order.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import find_map
    >>> class Quadratic:
    ...     def logp_and_grad(self, x):
    ...         return -0.5 * np.sum((x - 2.0) ** 2), -(x - 2.0)
    >>> bounds = np.array([[-5.0, 5.0]])
    >>> np.round(find_map(Quadratic(), np.zeros(1), bounds).params, 6)
    array([2.])
    """
    if n is None:
        n = getattr(target, "n", 1)
    return maximize(lambda params, _: target.logp_and_grad(params), start, bounds, n=n)


def laplace_covariance(
    target, centre, bounds, max_std=MAX_LAPLACE_STD, return_log_volume=False
):
    """Inverse negative Hessian at ``centre``, by central differences.

    Differences of the exact gradient; a diagonal stands in where the
    inverse is not positive definite. The standard deviations of the
    result are capped at ``max_std``.

    A coordinate piled on its bound (:func:`piled_on_bounds`, rate ``r``)
    gets the variance ``1 / r^2`` of its exponential pile and no covariance
    with the others, whose block is then their Laplace approximation given
    it on the bound. Its curvature there says nothing of its spread, and
    a cross-covariance would let its outward gradient, which the bound
    answers, move the other coordinates in a sampler or SVGD preconditioned
    by the result: with it, SVGD on noise-free data came to rest 5
    posterior sds from the posterior, about 25 nats below it.

    Parameters
    ----------
    target : object
        With ``logp_and_grad(params) -> (value, grad)``.
    centre : ndarray of shape (p,)
    bounds : ndarray of shape (p, 2)
        Difference steps are clipped to them.
    max_std : float, default=MAX_LAPLACE_STD
    return_log_volume : bool, default=False
        Also return half the log-determinant of the uncapped covariance,
        the Laplace estimate of the log volume of the mode.

    Returns
    -------
    cov : ndarray of shape (p, p)
    log_volume : float
        Only with ``return_log_volume``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import laplace_covariance
    >>> class Gaussian:
    ...     def logp_and_grad(self, x):
    ...         return -0.5 * np.sum(x**2 / [0.25, 4.0]), -x / [0.25, 4.0]
    >>> bounds = np.array([[-5.0, 5.0], [-5.0, 5.0]])
    >>> np.round(np.diag(laplace_covariance(Gaussian(), np.zeros(2), bounds)), 6)
    array([0.25, 1.  ])
    """
    n = centre.shape[0]
    hess = np.empty((n, n))
    for i in range(n):
        step = np.zeros(n)
        step[i] = _LAPLACE_STEP
        up = np.clip(centre + step, bounds[:, 0], bounds[:, 1])
        down = np.clip(centre - step, bounds[:, 0], bounds[:, 1])
        width = up[i] - down[i]
        if width <= 0:
            hess[i] = 0.0
            continue
        hess[i] = (target.logp_and_grad(up)[1] - target.logp_and_grad(down)[1]) / width
    precision = -0.5 * (hess + hess.T)
    grad = target.logp_and_grad(centre)[1]
    lower, upper = piled_on_bounds(centre, grad, bounds)
    piled = lower | upper
    if piled.any():
        rate = np.abs(grad[piled])
        precision[piled, :] = 0.0
        precision[:, piled] = 0.0
        precision[piled, piled] = rate**2
    try:
        cov = np.linalg.inv(precision)
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        cov = np.diag(1.0 / np.maximum(np.abs(np.diag(precision)), 1.0))
    std = np.sqrt(np.diag(cov))
    shrink = np.minimum(1.0, max_std / np.maximum(std, 1e-300))
    capped = cov * np.outer(shrink, shrink)
    if return_log_volume:
        return capped, 0.5 * float(np.linalg.slogdet(cov)[1])
    return capped


def laplace_modes(target, starts, bounds, max_std=MAX_LAPLACE_STD, map_fn=map):
    """Distinct local maxima of ``target`` found by L-BFGS-B from ``starts``.

    Optima closer than ``SAME_MODE`` in every coordinate are one mode.

    Parameters
    ----------
    target : object
        With ``logp_and_grad(params) -> (value, grad)``.
    starts : ndarray of shape (k, p)
    bounds : ndarray of shape (p, 2)
    max_std : float, default=MAX_LAPLACE_STD
        Cap of the modes' covariances, as in :func:`laplace_covariance`.
    map_fn : callable, default=map
        ``map_fn(function, items)``, in order, for the searches from the
        starts and the modes' covariances, which are independent
        (:func:`~skgp_bayes.inference._chain_threads.mapped_on_threads`
        spreads them over threads).

    Returns
    -------
    list of tuple
        ``(mode, capped_cov, log_mass)`` by decreasing ``log_mass``, the
        Laplace estimate ``log p(mode) + log volume``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import laplace_modes
    >>> class Quadratic:
    ...     def logp_and_grad(self, x):
    ...         return -0.5 * np.sum((x - 2.0) ** 2), -(x - 2.0)
    >>> starts = np.array([[0.0], [4.0]])
    >>> modes = laplace_modes(Quadratic(), starts, np.array([[-5.0, 5.0]]))
    >>> len(modes), np.round(modes[0][0], 4)
    (1, array([2.]))
    """
    optima = distinct_optima(
        map_fn(lambda start: find_map(target, start, bounds).params, starts)
    )
    components = map_fn(
        lambda mode: laplace_component(target, mode, bounds, max_std), optima
    )
    modes = [
        (mode, *component)
        for mode, component in zip(optima, components, strict=True)
        if component is not None
    ]
    modes.sort(key=lambda entry: -entry[2])
    return modes


def same_mode(a, b):
    """Whether two optima are one mode: closer than ``SAME_MODE`` in every
    coordinate.

    Parameters
    ----------
    a, b : ndarray of shape (p,)

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import same_mode
    >>> same_mode(np.zeros(2), np.full(2, 0.1)), same_mode(np.zeros(2), np.ones(2))
    (True, False)
    """
    difference = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return bool(np.max(np.abs(difference)) < SAME_MODE)


def distinct_optima(optima):
    """``optima`` without repeats: closer than ``SAME_MODE`` in every
    coordinate is one mode, the first one given stands for it.

    Parameters
    ----------
    optima : iterable of ndarray of shape (p,)

    Returns
    -------
    list of ndarray of shape (p,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import distinct_optima
    >>> distinct_optima([np.zeros(2), np.full(2, 0.1), np.ones(2)])
    [array([0., 0.]), array([1., 1.])]
    """
    distinct = []
    for optimum in optima:
        optimum = np.asarray(optimum, dtype=np.float64)
        if not any(same_mode(optimum, m) for m in distinct):
            distinct.append(optimum)
    return distinct


def laplace_component(target, mode, bounds, max_std=MAX_LAPLACE_STD):
    """``(capped_cov, log_mass)`` of the Laplace approximation at ``mode``.

    ``log_mass`` is ``log p(mode) + log volume``, the volume ``sqrt(det
    cov)`` without the constants every mode shares; None where the density
    cannot be evaluated there (a kernel matrix that is not positive
    definite).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import laplace_component
    >>> class Normal:
    ...     def logp_and_grad(self, x):
    ...         return -0.5 * float(x @ x), -x
    >>> bounds = np.array([[-9.0, 9.0]])
    >>> cov, log_mass = laplace_component(Normal(), np.zeros(1), bounds)
    >>> np.round(cov, 6), round(log_mass, 4)  # log p(0) + log sqrt(det cov)
    (array([[1.]]), 0.0)
    """
    try:
        value = float(target.logp_and_grad(mode)[0])
    except NotPSDError:
        return None
    cov, log_volume = laplace_covariance(
        target, mode, bounds, max_std, return_log_volume=True
    )
    return cov, value + log_volume


def gaussian_factor(cov):
    """Lower Cholesky factor of a covariance: it spreads draws and
    preconditions samplers.

    Parameters
    ----------
    cov : ndarray of shape (p, p)

    Returns
    -------
    ndarray of shape (p, p)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import gaussian_factor
    >>> gaussian_factor(np.array([[4.0, 0.0], [0.0, 1.0]]))
    array([[2., 0.],
           [0., 1.]])
    """
    return np.linalg.cholesky(cov)


def gaussian_draws(centre, factor, n_draws, rng, mirrored=False):
    """``n_draws`` draws of ``N(centre, factor factor')``.

    Parameters
    ----------
    centre : ndarray of shape (p,)
    factor : ndarray of shape (p, p)
    n_draws : int
    rng : numpy.random.RandomState or numpy.random.Generator
    mirrored : bool, default=False
        Draw in mirrored pairs: each ``centre + e`` comes with ``centre -
        e`` (an odd count drops the last mirror). Any odd function of the
        offset then averages to zero over each pair, so a mixture over the
        draws has the Monte Carlo error of its even part only (antithetic
        variates), and with an even count their mean is ``centre``.

    Returns
    -------
    ndarray of shape (n_draws, p)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import gaussian_draws
    >>> draws = gaussian_draws(np.ones(2), np.eye(2), 3, np.random.default_rng(0))
    >>> draws.shape
    (3, 2)
    >>> pairs = gaussian_draws(np.ones(2), np.eye(2), 4, np.random.default_rng(0),
    ...                        mirrored=True)
    >>> bool(np.allclose(pairs.mean(axis=0), 1.0))
    True
    """
    if mirrored:
        offsets = gaussian_draws(np.zeros_like(centre), factor, (n_draws + 1) // 2, rng)
        return centre + np.concatenate([offsets, -offsets])[:n_draws]
    noise = rng.standard_normal((n_draws, centre.shape[0]))
    return centre + noise @ factor.T


def reflect_into_box(x, bounds):
    """``x`` reflected back into the box ``bounds`` at the face it crossed.

    One reflection per face, then a clip for what lies beyond twice the
    box's width. Draws of a density piled on a bound (a half-Gaussian
    there) stay half-Gaussian, where clipping would heap them on the bound.

    Parameters
    ----------
    x : ndarray of shape (..., p)
    bounds : ndarray of shape (p, 2)

    Returns
    -------
    ndarray of the shape of ``x``

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.laplace import reflect_into_box
    >>> reflect_into_box(np.array([-0.5, 1.25]), np.array([[0.0, 1.0], [0.0, 1.0]]))
    array([0.5 , 0.75])
    """
    lo, hi = bounds[:, 0], bounds[:, 1]
    x = np.where(x < lo, 2 * lo - x, x)
    x = np.where(x > hi, 2 * hi - x, x)
    return np.clip(x, lo, hi)
