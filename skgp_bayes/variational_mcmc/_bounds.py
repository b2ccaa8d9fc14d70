"""The chains' coordinates near bounds: log distances from a bound.

A hyperparameter whose optimum lies on a bound, or whose bound the chains
can reach from the optimum, is sampled as the log of its distance from the
bound (Stan's transform of a bounded parameter, with its Jacobian): the same
posterior, without a wall in the chains' way.
"""

import numpy as np

from ..inference.laplace import ON_BOUND, PILED_RATE, find_map, piled_on_bounds
from ..inference.mode_jumps import laplace_mixture

__all__ = [
    "RIDGE_LOOK",
    "WALL_REACH",
    "BoundCoordinates",
    "bound_coordinates",
    "jumps_in_bound_coordinates",
    "reachable_walls",
]

# A bound the chains can reach from an interior optimum: the log density on
# it, along its coordinate, within this many nats of the optimum's, which
# is five standard deviations of a normal marginal (a chain's draws pass
# three to four). Nearly exact data put the noise variance's floor within
# reach: 13 rows of an Antoine vapour-pressure curve, optimum 3.4 log units
# above the floor and 1.5 nats higher, gave 74 divergent transitions.
WALL_REACH = 12.5
# A wall further down than WALL_REACH along its own coordinate can still be
# within reach along a ridge, where the other hyperparameters move with it:
# the signal variance with a length scale (a long, large function looks
# like a short, small one). On the vapour pressure of mercury (split 2 of
# the fresh splits) the signal variance's upper bound lay 18.5 nats down
# along its coordinate and 4.3 along the ridge (splits 0 and 1: 26.1 and
# 22.6 against 6.2 and 5.7), and the chains diverged against it. Where the
# drop along the coordinate is below RIDGE_LOOK, the highest density on the
# wall (the others climbed by L-BFGS-B from the point on the wall) decides;
# a climb costs a MAP search, so walls further down are left alone, but
# for the noise variance's floor (bound_coordinates' ``ridges``), the wall
# that nearly exact data reach: less noise trades against a shorter length
# scale or a larger signal, so the coordinate's own fall says nothing of
# the ridge's. On yearly airline costs (63 rows, split 2 of the eighth
# group) the floor lay 88 nats down along its coordinate and 3.8 along the
# ridge; the chains found a second mode on the way and diverged 2-13 times
# against the floor after their two step back-offs.
RIDGE_LOOK = 4 * WALL_REACH

# On a wall every HMC trajectory that reaches it diverges, whatever the
# step: noise-free data pile the noise variance there, and the default fit
# of 200 points of sin(6x) ran for over fifteen minutes where the
# transformed one takes seconds.


class BoundCoordinates:
    """The guarded target in the coordinates the chains move.

    A fixed coordinate (equal bounds) is held; one whose optimum is piled
    on a bound, or whose bound is within the chains' reach, becomes ``u =
    log |x - bound|``, with the Jacobian ``u`` added to the log density;
    the others are unchanged. Picklable, for joblib workers.

    Parameters
    ----------
    guarded : GuardedTarget
    x0 : ndarray of shape (d,)
        The optimum.
    fixed, lower, upper : ndarray of bool, shape (d,)
        The held coordinates, and those moved from their lower or upper bound.
    distance : ndarray of shape (d,)
        The starting distance from the bound of each moved coordinate.
    """

    def __init__(self, guarded, x0, masks, distance):
        fixed, lower, upper = (np.asarray(m, dtype=bool) for m in masks)
        self.guarded = guarded
        # the rows the log density sums, by which the MAP searches on it
        # scale it (find_map), as they do the target's own
        self.n = getattr(guarded.target, "n", 1)
        self.x0 = np.array(x0, dtype=np.float64)
        self.fixed, self.free = fixed, ~fixed
        # on the free coordinates: the bound each piled one is measured from
        # and the direction away from it (0 where not piled)
        self._sign = (lower.astype(float) - upper.astype(float))[self.free]
        self._wall = np.where(lower, guarded.lower, guarded.upper)[self.free]
        self._piled = self._sign != 0
        start = self.x0[self.free].copy()
        start[self._piled] = np.log(distance[self.free][self._piled])
        self.start = start
        # a log distance runs up to the far bound's (for clipping starts and
        # searches; the guarded target rejects beyond it), a hair inside:
        # exp(log(9)) is 9 + 2e-15, beyond a far bound at 9
        span = (guarded.upper - guarded.lower)[self.free]
        far = np.log(np.maximum(span, np.finfo(float).tiny)) + np.log1p(-1e-9)
        self.lower = np.where(self._piled, -np.inf, guarded.lower[self.free])
        self.upper = np.where(self._piled, far, guarded.upper[self.free])

    def piled_coordinates(self):
        """Which free coordinates are log distances from a bound."""
        return self._piled.copy()

    def compiled_layer(self):
        """``(held, free, wall, sign)`` of this layer in the compiled chain
        density (:func:`skgp_bayes._chain_density_numba.chain_density`):
        the held point, the free coordinates' indices, and each free
        coordinate's bound and direction away from it (0 where it is
        not a log distance)."""
        wall = np.where(self._piled, self._wall, 0.0)
        return (
            np.ascontiguousarray(self.x0, dtype=np.float64),
            np.flatnonzero(self.free).astype(np.int64),
            np.ascontiguousarray(wall, dtype=np.float64),
            np.ascontiguousarray(self._sign, dtype=np.float64),
        )

    def expand(self, z):
        """Chain coordinates ``(..., n_free)`` as hyperparameters ``(..., d)``."""
        z = np.asarray(z, dtype=np.float64)
        free = np.where(self._piled, self._wall + self._sign * np.exp(z), z)
        out = np.broadcast_to(self.x0, z.shape[:-1] + self.x0.shape).copy()
        out[..., self.free] = free
        return out

    def to_chain(self, x):
        """Hyperparameters ``(..., d)`` as chain coordinates ``(..., n_free)``:
        :meth:`expand`'s inverse (``-inf`` for a point on a wall)."""
        free = np.asarray(x, dtype=np.float64)[..., self.free].copy()
        with np.errstate(divide="ignore", invalid="ignore"):
            piled = self._piled
            distance = self._sign[piled] * (free[..., piled] - self._wall[piled])
            free[..., piled] = np.log(distance)
        return free

    def bounds(self):
        """The chain coordinates' bounds, ``(n_free, 2)``."""
        return np.column_stack([self.lower, self.upper])

    def __call__(self, z):
        value, grad = self.guarded(self.expand(z))
        if not np.isfinite(value):
            return value, np.full(z.size, np.nan)
        dist = np.exp(z[self._piled])
        grad = grad[self.free]
        grad[self._piled] = grad[self._piled] * self._sign[self._piled] * dist + 1.0
        return value + float(np.sum(z[self._piled])), grad

    # the interface of the searches and Laplace approximations
    # (skgp_bayes.inference.laplace), which climb and measure this density
    # when the chains jump between modes in these coordinates
    logp_and_grad = __call__


def bound_coordinates(guarded, x0, walls=False, modes=(), ridges=None):
    """A :class:`BoundCoordinates` for ``x0``, or None where none is needed.

    A coordinate is held when its bounds are equal (a fixed one); it is
    sampled as its log distance from a bound when piled on it
    (:func:`~skgp_bayes.inference.laplace.piled_on_bounds`: ``x0`` on the
    bound, the log density not rising away from it), starting at distance
    ``1 / max(r, PILED_RATE)`` for a log density falling away at rate ``r``
    (the mode of an exponential pile in those coordinates, and at most a
    unit from the bound where the pile is shallow). With ``walls``, a
    coordinate whose optimum lies inside its bounds but whose bound the
    chains can reach (:func:`reachable_walls`) is sampled as its log
    distance from that bound too, starting at ``x0``; the bounds reachable
    from any of ``modes`` (points inside the bounds, the other modes the
    chains jump to) count too. ``ridges`` marks the coordinates whose lower
    bound :func:`reachable_walls` always looks for along a ridge.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.variational_mcmc._bounds import bound_coordinates
    >>> from skgp_bayes.variational_mcmc._sampling import GuardedTarget
    >>> class Piled:  # an exponential pile against x[1]'s lower bound 0
    ...     def logp_and_grad(self, x):
    ...         return -0.5 * x[0] ** 2 - 50.0 * x[1], np.array([-x[0], -50.0])
    >>> guarded = GuardedTarget(Piled(), np.array([-5.0, 0.0]), np.array([5.0, 5.0]))
    >>> coords = bound_coordinates(guarded, np.array([0.3, 0.0]))
    >>> coords.start  # x[1] at distance 1 / 50
    array([ 0.3       , -3.91202301])
    >>> coords.expand(coords.start)
    array([0.3 , 0.02])
    """
    x0 = np.asarray(x0, dtype=np.float64)
    n = guarded.lower.size
    value, grad = guarded(x0)
    if x0.size > n or not np.isfinite(value) or not np.all(np.isfinite(grad)):
        return None
    fixed = guarded.upper - guarded.lower <= ON_BOUND
    bounds = np.column_stack([guarded.lower, guarded.upper])
    # Any optimum on a bound is a wall for HMC, however slowly the density
    # falls away from it: the Laplace approximations ignore a pile
    # shallower than PILED_RATE, but a trajectory that reaches the wall
    # diverges whatever the step. The vapour pressure of mercury (13 exact
    # rows) piles the noise variance on its floor at a rate of 0.09, nearly
    # flat over eight log units: with the wall the chains diverged 1,550
    # times, their step fell to 5e-4 and the fit took three minutes.
    lower, upper = piled_on_bounds(x0, grad, bounds, min_rate=0.0)
    distance = 1.0 / np.maximum(np.abs(grad), PILED_RATE)
    if walls:
        inside = ~(fixed | lower | upper)
        near_lower, near_upper = reachable_walls(guarded, x0, value, inside, ridges)
        for mode in modes:
            if np.array_equal(mode, x0):
                continue
            mode_value = guarded(mode)[0]
            if np.isfinite(mode_value):
                more = reachable_walls(guarded, mode, mode_value, inside, ridges)
                near_lower, near_upper = near_lower | more[0], near_upper | more[1]
        # a log distance is measured from one bound: the lower where the
        # modes reach both
        near_upper &= ~near_lower
        lower, upper = lower | near_lower, upper | near_upper
        distance = np.where(near_lower, x0 - guarded.lower, distance)
        distance = np.where(near_upper, guarded.upper - x0, distance)
    if fixed.all() or not (fixed | lower | upper).any():
        return None
    return BoundCoordinates(guarded, x0, (fixed, lower, upper), distance)


def reachable_walls(guarded, x0, value, candidates, ridges=None):
    """The bounds that chains started at the optimum ``x0`` can reach.

    A bound is reachable when the log density on it, moving only that
    coordinate from ``x0`` or, where that falls less than
    :data:`RIDGE_LOOK`, the highest on it with the other coordinates free,
    lies less than :data:`WALL_REACH` below the optimum's ``value``; of a
    coordinate's two bounds, the one with the higher density counts. The
    lower bounds of the coordinates ``ridges`` marks are looked for along
    the ridge however far the coordinate alone falls (see
    :data:`RIDGE_LOOK`).

    Parameters
    ----------
    guarded : GuardedTarget
    x0 : ndarray of shape (d,)
    value : float
        The log density at ``x0``.
    candidates : ndarray of bool, shape (d,)
        The coordinates to look at.
    ridges : ndarray of bool, shape (d,), optional
        Coordinates whose lower bound is always looked for along the ridge.

    Returns
    -------
    lower, upper : ndarray of bool, shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.variational_mcmc._bounds import reachable_walls
    >>> from skgp_bayes.variational_mcmc._sampling import GuardedTarget
    >>> class Wide:  # x[0] has sd 3 and a bound 2 from the optimum; x[1] sd 0.1
    ...     def logp_and_grad(self, x):
    ...         value = -x[0] ** 2 / 18 - 50 * x[1] ** 2
    ...         return value, np.array([-x[0] / 9, -100 * x[1]])
    >>> guarded = GuardedTarget(Wide(), np.array([-2.0, -2.0]), np.array([9.0, 9.0]))
    >>> reachable_walls(guarded, np.zeros(2), 0.0, np.array([True, True]))
    (array([ True, False]), array([False, False]))
    """
    lower = np.zeros(x0.size, dtype=bool)
    upper = np.zeros(x0.size, dtype=bool)
    ridges = np.zeros(x0.size, dtype=bool) if ridges is None else ridges
    for i in np.flatnonzero(candidates):
        drops = []
        for side, wall in enumerate((guarded.lower[i], guarded.upper[i])):
            on_wall = x0.copy()
            on_wall[i] = wall
            drop = value - _finite_or_minus_inf(guarded(on_wall)[0])
            look = drop < RIDGE_LOOK or (ridges[i] and side == 0)
            if WALL_REACH <= drop and look:
                drop = min(drop, value - _ridge_value(guarded, on_wall, i))
            drops.append(drop)
        if min(drops) < WALL_REACH:
            (lower if drops[0] <= drops[1] else upper)[i] = True
    return lower, upper


def _finite_or_minus_inf(value):
    return value if np.isfinite(value) else -np.inf


def _ridge_value(guarded, on_wall, i):
    """The highest log density on coordinate ``i``'s wall, the others free
    within their bounds, climbed from ``on_wall``."""
    bounds = np.column_stack([guarded.lower, guarded.upper])
    bounds[i] = on_wall[i]
    top = find_map(guarded.target, on_wall, bounds).params
    return _finite_or_minus_inf(guarded(top)[0])


def jumps_in_bound_coordinates(coords, jumps):
    """The mode jumps ``jumps`` over hyperparameters, in ``coords``' chain
    coordinates, or None.

    Each mode is mapped by :meth:`BoundCoordinates.to_chain` and climbed
    again there (the log distance's Jacobian moves a mode a little), and
    the mixture is the Laplace approximations at the climbed modes
    (:func:`~skgp_bayes.inference.mode_jumps.laplace_mixture`). None where
    a mode lies on a wall, or where fewer than two modes remain: the
    chains then keep the hyperparameters' own coordinates.

    A mode's proposals are Gaussian in the coordinates the chains move in,
    whichever those are; the Metropolis test of a jump uses the density in
    the same coordinates, its Jacobian included, so the chains sample the
    same posterior.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.mode_jumps import ModeJumps
    >>> from skgp_bayes.variational_mcmc._bounds import (
    ...     BoundCoordinates, jumps_in_bound_coordinates)
    >>> from skgp_bayes.variational_mcmc._sampling import GuardedTarget
    >>> class TwoBumps:  # modes at x = 1 and x = 4, a wall at 0
    ...     def logp_and_grad(self, x):
    ...         a, b = np.exp(-2 * (x - 1) ** 2), np.exp(-2 * (x - 4) ** 2)
    ...         grad = (-4 * (x - 1) * a - 4 * (x - 4) * b) / (a + b)
    ...         return float(np.log(a + b)[0]), grad
    >>> guarded = GuardedTarget(TwoBumps(), np.array([0.0]), np.array([9.0]))
    >>> coords = BoundCoordinates(guarded, np.array([1.0]),
    ...     (np.array([False]), np.array([True]), np.array([False])), np.ones(1))
    >>> jumps = ModeJumps(np.array([[1.0], [4.0]]), np.full((2, 1, 1), 0.5),
    ...                   np.zeros(2))
    >>> mapped = jumps_in_bound_coordinates(coords, jumps)
    >>> # the modes of the density of log x, where x^2 - x = 1/4 and x^2 - 4x = 1/4
    >>> np.round(coords.expand(mapped.means), 2).ravel()
    array([1.21, 4.06])
    """
    bounds = coords.bounds()
    starts = coords.to_chain(jumps.means)
    if not np.all(np.isfinite(starts)):
        return None
    optima = [find_map(coords, start, bounds).params for start in starts]
    return laplace_mixture(coords, optima, bounds, every=jumps.every)
