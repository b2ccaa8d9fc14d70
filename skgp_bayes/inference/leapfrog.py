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

Here the second stage is tried only after a divergent first stage. With
``z0`` the start, ``z2`` the second stage's end (its momentum flipped) and
``w(z) = 1`` when the first stage from ``z`` diverges, detailed balance of
the two-stage kernel asks

``pi(z0) (1 - a1(z0)) w(z0) a2(z0) = pi(z2) (1 - a1(z2)) w(z2) a2(z2)``

(the second-stage map, a leapfrog flow followed by a momentum flip, is a
volume-preserving involution). A divergent first stage has ``a1 = 0``, so

``a2(z0) = min(1, pi(z2) / pi(z0))`` if the first stage from ``z2`` (the
"ghost" trajectory, with the long step) diverges too, else 0.

The ghost costs one more first-stage trajectory, at most; divergences are
rare after warm-up, so the second stage costs little in all, where the
usual remedy for them, a shorter step everywhere, costs on every
transition.
"""

import math

import numpy as np

__all__ = ["all_finite", "delayed_second_stage", "leapfrog"]


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


def leapfrog(logp_and_grad, x, p, grad, step, inv_mass, n_steps):
    """``n_steps`` leapfrog steps from ``(x, p)``; None where the path fails.

    Written for small targets, where each NumPy call costs as much as the
    arithmetic: the two half kicks between positions are fused into one
    full kick, and finiteness is one reduction.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``.
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


def _energy(logp, p, inv_mass):
    return -logp + 0.5 * float(np.sum(inv_mass * p * p))


def _diverges(start_energy, end_energy, limit):
    error = end_energy - start_energy
    return not math.isfinite(error) or error > limit


def delayed_second_stage(
    logp_and_grad, x, p, grad, h0, step, inv_mass, n_steps, factor, rng, limit
):  # fmt: skip
    """The second stage after a divergent first one (module notes).

    Parameters
    ----------
    logp_and_grad : callable
    x, p, grad : ndarray of shape (n_params,)
        The transition's start: position, the momentum the first stage
        used, and the gradient at ``x``.
    h0 : float
        The start's Hamiltonian.
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
    ...     logp, x, p, -x, 0.5, 1.0, np.ones(1), 3, 4,
    ...     np.random.default_rng(0), 0.1)
    >>> divergent, n
    (False, 15)
    """
    n_leapfrog = factor * n_steps
    fine = leapfrog(logp_and_grad, x, p, grad, step / factor, inv_mass, n_leapfrog)
    if fine is None:
        return False, True, None, n_leapfrog
    x2, p2, logp2, grad2 = fine
    h2 = _energy(logp2, p2, inv_mass)
    if _diverges(h0, h2, limit):
        return False, True, None, n_leapfrog
    # The reverse move from z2 reaches its second stage only if its own
    # first stage (the ghost) diverges.
    ghost = leapfrog(logp_and_grad, x2, -p2, grad2, step, inv_mass, n_steps)
    n_leapfrog += n_steps
    if ghost is not None:
        ghost_energy = _energy(ghost[2], ghost[1], inv_mass)
        if not _diverges(h2, ghost_energy, limit):
            return False, False, None, n_leapfrog
    if math.log(rng.random()) < h0 - h2:
        return True, False, (x2, logp2, grad2, h2), n_leapfrog
    return False, False, None, n_leapfrog
