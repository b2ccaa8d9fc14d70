"""The leapfrog integrator, and HMC's delayed-rejection second stage.

A static HMC transition whose trajectory diverges (its energy error beyond
the limit, or a non-finite density on its path) has met a region stiffer
than the step allows: the neck of a funnel, a cliff in the log density.
Rejecting it leaves the chain where it is, and a chain that keeps meeting
such a region explores it badly. Delayed rejection (Tierney and Mira,
1999; for HMC, Modi, Barnett and Carpenter, 2023, "Delayed rejection
Hamiltonian Monte Carlo for sampling multiscale distributions", Bayesian
Analysis) tries again from the same position and momentum with a step
``factor`` times shorter over the same integration time, and corrects the
acceptance so that the chain keeps the target invariant.

Here the second stage is tried only after a first stage that failed:
rejected with an energy error above :data:`RETRY_ENERGY_ERROR`, or
divergent. With ``z0`` the start, ``z2`` the second stage's end (its
momentum flipped), ``a1`` the first stage's acceptance probability (0 for
a divergent trajectory) and ``w(z) = 1`` when the first stage from ``z``
fails, detailed balance of the two-stage kernel asks

``pi(z0) (1 - a1(z0)) w(z0) a2(z0) = pi(z2) (1 - a1(z2)) w(z2) a2(z2)``

(the second-stage map, a leapfrog flow followed by a momentum flip, is a
volume-preserving involution), which the largest ``a2`` meets with

``a2(z0) = min(1, pi(z2) (1 - a1(z2)) / (pi(z0) (1 - a1(z0))))`` if the
first stage from ``z2`` (the "ghost" trajectory, with the long step)
fails too, else 0.

The ghost costs one more first-stage trajectory, at most. Failed
trajectories are rare in the bulk of a target at the calibrated step, so
the second stage costs little in all, where the usual remedy, a shorter
step everywhere, costs on every transition.
"""

import math

import numpy as np
from numba import njit

from ._energy_numba import kinetic_energy

__all__ = [
    "RETRY_ENERGY_ERROR",
    "all_finite",
    "delayed_second_stage",
    "energy",
    "first_stage_acceptance",
    "is_divergent",
    "leapfrog",
    "log_uniform",
    "most_leapfrog_steps",
    "second_stage_log_acceptance",
]

# The first stage is retried when it is rejected with an energy error above
# this (an acceptance probability below exp(-5) = 0.7%): a trajectory that
# has failed, not one that drew a poor momentum. In the bulk of a target at
# the calibrated acceptance of 0.9 such errors are rare, so the retries are
# spent where the step is too long for the local curvature. A retry on
# divergence alone (an error above 1000) asks the same of the ghost, which
# the reverse of a trajectory through a stiff region reaches far less
# often: on the coal counts (Poisson, six seeds) two thirds of those second
# stages were rejected and two fits did not meet the run-length rule; with
# 5, a third were rejected and one fit missed the rule, as one had before
# the retry existed.
RETRY_ENERGY_ERROR = 5.0
# The scalar rules below (a transition's step bound, divergence, the first
# stage's acceptance, the second stage's) are compiled: the engine's
# interpreted steps and the compiled blocks of transitions (HMCBlock's
# densities) call the same code.


def all_finite(a):
    """Whether every entry of ``a`` is finite, in one reduction.

    A sum is finite exactly when every entry is (short of an overflow near
    1e308, itself divergent).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.leapfrog import all_finite
    >>> all_finite(np.array([1.0, 2.0])), all_finite(np.array([1.0, np.inf]))
    (True, False)
    """
    return math.isfinite(a.sum())


def log_uniform(rng):
    """The log of a uniform draw from ``rng``, by the C library's ``log``.

    What a Metropolis test compares, as compiled code takes it (NumPy's
    ``log`` differs from the C library's in the last bit for some
    arguments); ``-inf`` for the draw 0.0, where ``math.log`` would raise.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.leapfrog import log_uniform
    >>> bool(log_uniform(np.random.default_rng(0)) < 0.0)
    True
    """
    u = rng.random()
    return math.log(u) if u > 0.0 else -math.inf


def leapfrog(logp_and_grad, x, p, grad, step, inv_mass, n_steps):
    """``n_steps`` leapfrog steps from ``(x, p)``; None where the path fails.

    Written for small targets, where each NumPy call costs as much as the
    arithmetic: the two half kicks between positions are fused into one
    full kick, and finiteness is one reduction. A density that integrates
    its own trajectories (a compiled one, say) offers a method
    ``leapfrog(x, p, grad, step, inv_mass, n_steps)`` with this function's
    contract; it is used instead of the loop here unless it returns
    ``NotImplemented``.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``, optionally with a ``leapfrog``
        method (above).
    x, p, grad : ndarray of shape (n_params,)
        Position, momentum and the gradient at ``x``.
    step : float
    inv_mass : ndarray of shape (n_params,)
        Diagonal inverse mass matrix.
    n_steps : int
        At least 1.

    Returns
    -------
    (x, p, logp, grad) or None
        The end of the path; None where a position, log density or gradient
        on it was not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.leapfrog import leapfrog
    >>> def logp(x):
    ...     return -0.5 * x @ x, -x
    >>> x, p, value, grad = leapfrog(logp, np.ones(1), np.zeros(1), -np.ones(1),
    ...                              0.1, np.ones(1), 10)
    >>> bool(abs(0.5 * (x @ x + p @ p) - 0.5) < 1e-3)
    True
    """
    own = getattr(logp_and_grad, "leapfrog", None)
    if own is not None:
        end = own(x, p, grad, step, inv_mass, n_steps)
        if end is not NotImplemented:
            return end
    half = 0.5 * step
    drift = step * inv_mass
    pn, gn, xn = p + half * grad, grad, x
    value = math.nan
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(n_steps):
            if k:
                pn = pn + step * gn
            xn = xn + drift * pn
            if not all_finite(xn):
                return None
            value, gn = logp_and_grad(xn)
            value = float(value)
            if not (math.isfinite(value) and all_finite(gn)):
                return None
        pn = pn + half * gn
    return xn, pn, value, np.asarray(gn, dtype=np.float64)


def energy(logp, p, inv_mass):
    """The Hamiltonian ``-log p(x) + p' M^-1 p / 2`` (diagonal ``M^-1``).

    A diverging path's momentum may overflow: the result is then ``inf``,
    without a warning.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.leapfrog import energy
    >>> energy(-1.0, np.array([2.0]), np.array([0.5]))
    2.0
    """
    return -logp + kinetic_energy(p, inv_mass)


@njit(cache=True, nogil=True)
def most_leapfrog_steps(max_leapfrog, trajectory_length, step):
    """Most leapfrog steps of a transition at ``step``.

    ``max_leapfrog``, or where a ``trajectory_length`` is set (positive;
    0 for none) ``ceil(trajectory_length / step)`` within ``1..max_leapfrog``.

    Examples
    --------
    >>> from skgp_bayes.inference.leapfrog import most_leapfrog_steps
    >>> most_leapfrog_steps(10, 0.0, 0.1), most_leapfrog_steps(10, 0.35, 0.1)
    (10, 4)
    """
    if trajectory_length <= 0.0:
        return max_leapfrog + 0  # a new integer: returning an argument breaks Ctrl-C
    return int(min(max_leapfrog, max(1, math.ceil(trajectory_length / step))))


@njit(cache=True, nogil=True)
def is_divergent(error, limit):
    """Whether an energy error marks a divergent trajectory.

    Beyond ``limit``, or not finite (NaN included).

    Examples
    --------
    >>> import math
    >>> from skgp_bayes.inference.leapfrog import is_divergent
    >>> is_divergent(3.0, 1000.0), is_divergent(math.nan, 1000.0)
    (False, True)
    """
    return not math.isfinite(error) or error > limit


@njit(cache=True, nogil=True)
def first_stage_acceptance(error, limit):
    """``a1``: the first stage's acceptance probability given its energy error.

    ``min(1, exp(-error))``, and 0 beyond ``limit`` or for a non-finite
    error (a divergent trajectory, rejected outright).

    Examples
    --------
    >>> from skgp_bayes.inference.leapfrog import first_stage_acceptance
    >>> first_stage_acceptance(-1.0, 1000.0), first_stage_acceptance(2000.0, 1000.0)
    (1.0, 0.0)
    """
    if is_divergent(error, limit):
        return 0.0
    return math.exp(-error) if error > 0 else 1.0


def delayed_second_stage(
    logp_and_grad, x, p, grad, h0, first_error, step, inv_mass, n_steps, factor, rng,
    limit,
):  # fmt: skip
    """The second stage after a rejected first one that failed (module notes).

    Parameters
    ----------
    logp_and_grad : callable
    x, p, grad : ndarray of shape (n_params,)
        The transition's start: position, the momentum the first stage
        used, and the gradient at ``x``.
    h0 : float
        The start's Hamiltonian.
    first_error : float
        The first stage's energy error, above :data:`RETRY_ENERGY_ERROR`
        (``inf`` for a path that met a non-finite value).
    step : float
        The first stage's step; the second takes ``step / factor``.
    inv_mass : ndarray of shape (n_params,)
    n_steps : int
        The first stage's leapfrog steps; the second takes ``factor``
        times as many (the same integration time).
    factor : int
        At least 2.
    rng : numpy.random.Generator
        Draws the second stage's uniform (only when its proposal is not
        rejected outright).
    limit : float
        Energy error beyond which a trajectory diverges.

    Returns
    -------
    accepted : bool
    divergent : bool
        The second stage diverged too.
    end : (x, logp, grad, energy) or None
        The proposal when ``accepted``.
    n_leapfrog : int
        Leapfrog steps taken, the ghost's included.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.leapfrog import delayed_second_stage
    >>> def logp(x):
    ...     return -0.5 * x @ x, -x
    >>> x, p = np.zeros(1), np.ones(1)
    >>> accepted, divergent, end, n = delayed_second_stage(
    ...     logp, x, p, -x, 0.5, np.inf, 1.0, np.ones(1), 3, 4,
    ...     np.random.default_rng(0), 1000.0)
    >>> divergent, n
    (False, 15)
    """
    n_leapfrog = factor * n_steps
    fine = leapfrog(logp_and_grad, x, p, grad, step / factor, inv_mass, n_leapfrog)
    if fine is None:
        return False, True, None, n_leapfrog
    x2, p2, logp2, grad2 = fine
    h2 = energy(logp2, p2, inv_mass)
    if is_divergent(h2 - h0, limit):
        return False, True, None, n_leapfrog
    # The reverse move from z2 reaches its second stage only if its own
    # first stage (the ghost) fails as well.
    ghost = leapfrog(logp_and_grad, x2, -p2, grad2, step, inv_mass, n_steps)
    n_leapfrog += n_steps
    ghost_error = math.inf
    if ghost is not None:
        ghost_error = energy(ghost[2], ghost[1], inv_mass) - h2
    log_accept = second_stage_log_acceptance(h0, h2, first_error, ghost_error, limit)
    if log_accept > -math.inf and log_uniform(rng) < log_accept:
        return True, False, (x2, logp2, grad2, h2), n_leapfrog
    return False, False, None, n_leapfrog


@njit(cache=True, nogil=True)
def second_stage_log_acceptance(h0, h2, first_error, ghost_error, limit):
    """Log of the second stage's acceptance probability (module notes).

    ``min(0, h0 - h2 + log(1 - a1(ghost)) - log(1 - a1(first)))`` with
    :func:`first_stage_acceptance`'s ``a1``; ``-inf`` where the ghost's
    error is not above :data:`RETRY_ENERGY_ERROR` (the reverse move would
    not reach a second stage).

    Parameters
    ----------
    h0, h2 : float
        Hamiltonians of the start and of the second stage's end.
    first_error, ghost_error : float
        Energy errors of the first stage from the start and from the end.
    limit : float
        Energy error beyond which a trajectory diverges.

    Returns
    -------
    float

    Examples
    --------
    >>> import math
    >>> from skgp_bayes.inference.leapfrog import second_stage_log_acceptance
    >>> second_stage_log_acceptance(3.0, 1.0, math.inf, math.inf, 1000.0)
    0.0
    >>> second_stage_log_acceptance(3.0, 1.0, math.inf, 2.0, 1000.0)
    -inf
    """
    if not ghost_error > RETRY_ENERGY_ERROR:  # NaN included
        return -math.inf
    ratio = (1.0 - first_stage_acceptance(ghost_error, limit)) / (
        1.0 - first_stage_acceptance(first_error, limit)
    )
    return min(0.0, h0 - h2 + math.log(ratio))
