"""The No-U-Turn sampler: HMC whose trajectories choose their own length.

One transition of :func:`nuts_step` builds a trajectory by doubling, each
doubling in a random direction, until the trajectory turns back on itself
or ``2^max_tree_depth - 1`` leapfrog steps are spent (Hoffman and Gelman,
2014). The state kept is drawn from the whole trajectory in proportion to
``exp(-H)`` (multinomial sampling, Betancourt 2017, appendix A), with the
biased progressive sampling between doublings that favours the newer half
and so moves further. A trajectory has turned when the sum ``rho`` of its
momenta points against the velocity ``M^-1 p`` at either end (the
generalised criterion, Betancourt 2017, section 4.2), checked on every
subtree and, across every merge, on the two spans that join the first
subtree to the first state of the second and the last state of the first
to the second subtree (Stan's checks since 2.26: without them, on a
standard normal with a fixed step a tree can grow past a full turn
unseen).

Why NUTS rather than static HMC: static HMC draws its path length from one
integration time for the whole chain, while the posterior of a length
scale is skewed, wide on one side and narrow on the other; a fixed time
that suits its narrow side crosses the wide one in a random walk. NUTS
stops each trajectory where the path turns, wherever the chain is.

The warm-up of :func:`~skgp_bayes.inference.run_hmc` is the same for both
samplers: dual averaging of the step toward a target mean acceptance
statistic, which for NUTS is the mean Metropolis acceptance probability of
the leapfrog states of the trajectory against its start (Stan's).

All random numbers come from the ``Generator`` given: the momentum, then
per doubling a direction and a uniform, and within a subtree one uniform
per merge.
"""

import math
from dataclasses import dataclass

import numpy as np

from ._hmc_state import HMCState
from .leapfrog import energy

__all__ = ["NUTSInfo", "nuts_step"]


@dataclass
class NUTSInfo:
    """Statistics of one :func:`nuts_step` transition.

    Attributes
    ----------
    accept_prob : float
        Mean Metropolis acceptance probability of the trajectory's leapfrog
        states against its start (0 for a divergent leapfrog state), the
        statistic step-size adaptation targets.
    accepted : bool
        Whether the state kept differs from the start.
    divergent : bool
        Whether the trajectory met an energy error beyond
        ``max_energy_error`` or a non-finite log density or gradient.
    n_leapfrog : int
        Leapfrog steps (gradient evaluations) of the transition.
    energy : float
        Hamiltonian of the state kept with its momentum, as Stan reports it.
    tree_depth : int
        Doublings of the trajectory.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import hmc_init, nuts_step
    >>> def logp(x):
    ...     return -0.5 * x @ x, -x
    >>> state = hmc_init(logp, np.zeros(2))
    >>> _, info = nuts_step(state, logp, np.random.default_rng(0), step_size=0.5,
    ...                     inv_mass=np.ones(2))
    >>> info.n_leapfrog < 2**info.tree_depth
    True
    """

    accept_prob: float
    accepted: bool
    divergent: bool
    n_leapfrog: int
    energy: float
    tree_depth: int


class _Point:
    """One leapfrog state: position, momentum, log density and gradient."""

    __slots__ = ("x", "p", "logp", "grad", "velocity")

    def __init__(self, x, p, logp, grad, inv_mass):
        self.x, self.p, self.logp, self.grad = x, p, logp, grad
        self.velocity = inv_mass * p


class _Tree:
    """A trajectory segment: its two ends, its draw, weight and momentum sum.

    ``left`` is the end reached by integrating backwards in time, ``right``
    forwards, whatever direction the segment was built in. ``log_weight``
    is ``log sum exp(-H)`` over its states, relative to the start's ``H``.
    """

    __slots__ = (
        "left",
        "right",
        "draw",
        "draw_energy",
        "log_weight",
        "rho",
        "n_leapfrog",
        "sum_accept",
        "stop",
        "divergent",
    )


def _log_uniform(rng):
    u = rng.random()
    return math.log(u) if u > 0.0 else -math.inf


def _turned(velocity_a, velocity_b, rho):
    """The generalised no-U-turn criterion of a span with momentum sum ``rho``."""
    return float(velocity_a @ rho) <= 0.0 or float(velocity_b @ rho) <= 0.0


class _Integrator:
    """The fixed parts of one transition: target, step, mass, start energy."""

    def __init__(self, logp_and_grad, step_size, inv_mass, h0, limit, rng):
        self.logp_and_grad = logp_and_grad
        self.step = step_size
        self.inv_mass = inv_mass
        self.h0 = h0
        self.limit = limit
        self.rng = rng

    def leaf(self, edge, direction):
        """One leapfrog step from ``edge``; a one-state tree."""
        eps = direction * self.step
        tree = _Tree()
        tree.n_leapfrog = 1
        with np.errstate(over="ignore", invalid="ignore"):
            p_half = edge.p + (0.5 * eps) * edge.grad
            x = edge.x + eps * (self.inv_mass * p_half)
            value, grad = self.logp_and_grad(x)
            logp = float(value)
            grad = np.asarray(grad, dtype=np.float64)
            p = p_half + (0.5 * eps) * grad
            h = energy(logp, p, self.inv_mass)
        error = h - self.h0
        if not (math.isfinite(error) and math.isfinite(grad.sum())):
            error = math.inf
        tree.divergent = error > self.limit
        tree.stop = tree.divergent
        tree.sum_accept = 0.0 if tree.divergent else min(1.0, math.exp(-error))
        if tree.divergent:
            return tree
        point = _Point(x, p, logp, grad, self.inv_mass)
        tree.left = tree.right = tree.draw = point
        tree.draw_energy = h
        tree.log_weight = -error
        tree.rho = p
        return tree

    def build(self, edge, direction, depth):
        """A subtree of ``2^depth`` states beyond ``edge`` in ``direction``.

        Returns a tree with ``stop`` set when it diverged or turned
        somewhere inside; such a tree's draw must not be used.
        """
        if depth == 0:
            return self.leaf(edge, direction)
        first = self.build(edge, direction, depth - 1)
        if first.stop:
            return first
        outer = first.right if direction > 0 else first.left
        second = self.build(outer, direction, depth - 1)
        if second.stop:
            first.n_leapfrog += second.n_leapfrog
            first.sum_accept += second.sum_accept
            first.stop, first.divergent = True, second.divergent
            return first
        log_weight = np.logaddexp(first.log_weight, second.log_weight)
        # Within a subtree the draw is multinomial over its states.
        if _log_uniform(self.rng) < second.log_weight - log_weight:
            first.draw, first.draw_energy = second.draw, second.draw_energy
        return self.merge(first, second, direction, log_weight)

    def merge(self, old, new, direction, log_weight):
        """``old`` and the adjacent ``new`` as one tree; checks its U-turns."""
        left, right = (old, new) if direction > 0 else (new, old)
        rho = old.rho + new.rho
        stop = (
            _turned(left.left.velocity, right.right.velocity, rho)
            or _turned(left.left.velocity, right.left.velocity, left.rho + right.left.p)
            or _turned(
                left.right.velocity, right.right.velocity, right.rho + left.right.p
            )
        )
        old.left, old.right = left.left, right.right
        old.rho = rho
        old.log_weight = log_weight
        old.n_leapfrog += new.n_leapfrog
        old.sum_accept += new.sum_accept
        old.stop = stop
        return old


def _grow(start, h0, integrator, rng, max_tree_depth):
    """Double the trajectory from ``start`` until it turns, diverges or is full.

    Returns the whole tree and the number of doublings.
    """
    tree = _Tree()
    tree.left = tree.right = tree.draw = start
    tree.draw_energy, tree.log_weight, tree.rho = h0, 0.0, start.p
    tree.n_leapfrog, tree.sum_accept, tree.stop, tree.divergent = 0, 0.0, False, False
    depth = 0
    while depth < max_tree_depth:
        direction = 1 if rng.random() < 0.5 else -1
        edge = tree.right if direction > 0 else tree.left
        new = integrator.build(edge, direction, depth)
        depth += 1
        if new.stop:
            tree.n_leapfrog += new.n_leapfrog
            tree.sum_accept += new.sum_accept
            tree.divergent = new.divergent
            break
        # Between doublings the draw favours the new half (biased
        # progressive sampling): it moves the chain further per transition.
        if _log_uniform(rng) < new.log_weight - tree.log_weight:
            tree.draw, tree.draw_energy = new.draw, new.draw_energy
        log_weight = np.logaddexp(tree.log_weight, new.log_weight)
        tree = integrator.merge(tree, new, direction, log_weight)
        if tree.stop:
            break
    return tree, depth


def nuts_step(
    state,
    logp_and_grad,
    rng,
    *,
    step_size,
    inv_mass,
    max_tree_depth=10,
    max_energy_error=1000.0,
):
    """One No-U-Turn transition (multinomial, generalised criterion).

    Parameters
    ----------
    state : HMCState
    logp_and_grad : callable
        ``x -> (log density, gradient)``; a non-finite value or gradient on
        the path ends the trajectory as divergent.
    rng : numpy.random.Generator
    step_size : float
    inv_mass : ndarray of shape (n_params,)
        Diagonal inverse mass matrix.
    max_tree_depth : int, default=10
        Most doublings: a transition takes at most ``2^max_tree_depth - 1``
        leapfrog steps.
    max_energy_error : float, default=1000
        Energy error beyond which a leapfrog state is divergent.

    Returns
    -------
    state : HMCState
        The state drawn from the trajectory (possibly the start).
    info : NUTSInfo

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import hmc_init, nuts_step
    >>> def logp(x):
    ...     return -0.5 * x @ x, -x
    >>> rng = np.random.default_rng(0)
    >>> state = hmc_init(logp, np.zeros(3))
    >>> draws = []
    >>> for _ in range(2000):
    ...     state, info = nuts_step(state, logp, rng, step_size=0.8,
    ...                             inv_mass=np.ones(3))
    ...     draws.append(state.x)
    >>> bool(abs(np.var(draws) - 1.0) < 0.15)
    True
    """
    inv_mass = np.asarray(inv_mass, dtype=np.float64)
    p0 = rng.standard_normal(state.x.size) / np.sqrt(inv_mass)
    h0 = energy(state.logp, p0, inv_mass)
    integrator = _Integrator(
        logp_and_grad, float(step_size), inv_mass, h0, float(max_energy_error), rng
    )
    start = _Point(state.x, p0, state.logp, state.grad, inv_mass)
    tree, depth = _grow(start, h0, integrator, rng, max_tree_depth)
    draw = tree.draw
    info = NUTSInfo(
        accept_prob=tree.sum_accept / max(tree.n_leapfrog, 1),
        accepted=draw is not start,
        divergent=bool(tree.divergent),
        n_leapfrog=int(tree.n_leapfrog),
        energy=float(tree.draw_energy),
        tree_depth=depth,
    )
    if draw is start:
        return state, info
    return HMCState(draw.x, draw.logp, draw.grad), info
