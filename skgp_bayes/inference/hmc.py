"""Hamiltonian Monte Carlo over flat parameter vectors.

The engine knows nothing about Gaussian processes: it samples any density
given as ``logp_and_grad(x) -> (log density, gradient)``.

* Leapfrog integration with a diagonal mass matrix ``M``; the momentum is
  ``p ~ N(0, M)`` and the kinetic energy ``1/2 p' M^-1 p``.
* The number of leapfrog steps of every transition is drawn uniformly from
  ``1..max_leapfrog``, which breaks the periodicities a fixed path length
  can lock into (Neal, 2011, section 3.2; the seed paper's scheme). With a
  ``trajectory_length`` the bound is set by the integration time instead,
  ``ceil(trajectory_length / step)`` (at most ``max_leapfrog``), so that a
  smaller adapted step buys more steps rather than a shorter path. In
  warm-up the bound uses the dual-averaging mean of the step rather than
  its current, exploratory iterate.
* Warm-up: the step size follows dual averaging (Hoffman and Gelman, 2014,
  algorithm 5) toward a target mean acceptance probability; the diagonal
  inverse mass matrix is re-estimated at the end of windows of doubling
  length (Stan's schedule: a fast initial buffer, slow windows, a fast
  terminal buffer), with dual averaging restarted after each.
* The mass estimate of a window is ``sqrt(Var(x) / Var(grad log p))`` per
  coordinate, the diagonal that minimises the Fisher divergence between the
  target and a Gaussian (nutpie's estimator; Seyboldt, Carlson and
  Carpenter). Stan's estimate, the variance of the draws alone, is only as
  good as the window's exploration: a chain that has crossed a fraction of
  the widest direction under-estimates it, and with one window per
  doubling the estimate cannot grow fast enough across eight decades (on a
  Gaussian with standard deviations 0.01 to 100, a quarter of 40 chains
  ended more than 20x off). The draw/gradient ratio needs no exploration:
  on a Gaussian with diagonal precision ``grad_i = -(x_i - mu_i) / s_i^2``
  draw by draw, so the ratio is ``s_i^2`` from any two distinct draws.
  Without a given ``inv_mass`` the chain starts from ``1 / |grad log p(x0)|``
  (nutpie's start), the same ratio from one point.
* A transition whose energy error exceeds ``max_energy_error``, or whose
  trajectory meets a non-finite log density or gradient, is divergent:
  it is rejected and counted.

All random numbers come from one NumPy ``Generator``; a seed gives the same
chain bit for bit.

One transition is :func:`hmc_step`, from an :class:`HMCState` built by
:func:`hmc_init`; :func:`run_hmc` is the loop around it, with the warm-up
adaptation (:class:`~skgp_bayes.inference.adaptation.WarmupAdaptation`) and
the records outside the step.
"""

import math
import time
from dataclasses import dataclass

import numpy as np
from joblib import Parallel

from .._subnormals import delayed_flushed
from ._chain_threads import run_on_threads
from ._hmc_state import HMCBlock, HMCResult, HMCState
from ._hmc_trace import ChainTrace
from .adaptation import (
    DualAveraging,
    WarmupAdaptation,
    gradient_scaled_inv_mass,
    mass_adaptation_windows,
)
from .leapfrog import (
    RETRY_ENERGY_ERROR,
    delayed_second_stage,
    energy,
    first_stage_acceptance,
    is_divergent,
    leapfrog,
    log_uniform,
    most_leapfrog_steps,
)
from .mode_jumps import mode_jump
from .nuts import nuts_step

__all__ = [
    "DualAveraging",
    "HMCInfo",
    "HMCResult",
    "HMCBlock",
    "HMCState",
    "hmc_init",
    "hmc_step",
    "mass_adaptation_windows",
    "run_hmc",
    "run_hmc_chains",
]

# Step-size search for the initial step (Hoffman and Gelman, algorithm 4).
_MAX_STEP_SEARCH = 100


def _finite(value, grad):
    return np.isfinite(value) and np.all(np.isfinite(grad))


def _evaluate(logp_and_grad, x):
    value, grad = logp_and_grad(x)
    value = float(value)
    if np.isnan(value):
        value = -np.inf
    return value, np.asarray(grad, dtype=np.float64)


def _transition(
    logp_and_grad, x, logp, grad, step, inv_mass, n_steps, rng, limit, retry=None
):  # fmt: skip
    """One HMC transition; returns the new state and its statistics.

    The statistics end with the Hamiltonian of the state kept (the proposal's
    if accepted, else the start with its fresh momentum), the ``energy`` of
    Stan and ArviZ's energy plot, then the leapfrog steps taken and whether
    a failed first stage (rejected with an energy error above
    ``RETRY_ENERGY_ERROR``, or divergent) was retried (``retry``: the
    second stage's step factor, see :mod:`skgp_bayes.inference.leapfrog`).
    The acceptance probability reported is the first stage's, which the
    warm-up's step adaptation follows.
    """
    p = rng.standard_normal(x.size) / np.sqrt(inv_mass)
    # the C library's log and exp, as a compiled block's (HMCBlock): the same
    # test and the same acceptance probability, to the bit
    log_u = log_uniform(rng)
    h0 = energy(logp, p, inv_mass)
    end = leapfrog(logp_and_grad, x, p, grad, step, inv_mass, n_steps)
    error, accept_prob = math.inf, 0.0
    if end is not None:
        xn, pn, ln, gn = end
        h1 = energy(ln, pn, inv_mass)
        error = h1 - h0
        accept_prob = first_stage_acceptance(error, limit)
        if not is_divergent(error, limit) and log_u < -error:
            return xn, ln, gn, accept_prob, True, False, h1, n_steps, False
    divergent = is_divergent(error, limit)
    if retry is None or not error > RETRY_ENERGY_ERROR:
        return x, logp, grad, accept_prob, False, divergent, h0, n_steps, False
    accepted, divergent, proposal, extra = delayed_second_stage(
        logp_and_grad, x, p, grad, h0, error, step, inv_mass, n_steps, retry, rng,
        limit,
    )  # fmt: skip
    if accepted:
        xn, ln, gn, h2 = proposal
        return xn, ln, gn, accept_prob, True, False, h2, n_steps + extra, True
    return x, logp, grad, accept_prob, False, divergent, h0, n_steps + extra, True


def _initial_step_size(logp_and_grad, x, logp, grad, inv_mass, rng, limit):
    """Heuristic first step size: double or halve until acceptance crosses 1/2."""
    step = 1.0

    def accept(step):
        _, _, _, a, _, div, *_ = _transition(
            logp_and_grad, x, logp, grad, step, inv_mass, 1, rng, limit
        )
        return 0.0 if div else a

    a = accept(step)
    direction = 1.0 if a > 0.5 else -1.0
    for _ in range(_MAX_STEP_SEARCH):
        if (direction > 0 and a <= 0.5) or (direction < 0 and a > 0.5):
            break
        step *= 2.0**direction
        a = accept(step)
    return step


@dataclass
class HMCInfo:
    """Statistics of one :func:`hmc_step` transition.

    Attributes
    ----------
    accept_prob : float
        Metropolis acceptance probability; 0 for a divergent transition.
    accepted : bool
    divergent : bool
    n_leapfrog : int
        Leapfrog steps taken: the number drawn uniformly from
        ``1..max_leapfrog``, plus those of a delayed-rejection second stage.
    energy : float
        Hamiltonian of the state kept, as Stan reports it.
    retried : bool
        The first stage failed (rejected with an energy error above
        ``RETRY_ENERGY_ERROR``, or divergent) and a second stage was tried
        (``delayed_rejection``); ``divergent`` then says whether the second
        diverged.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import hmc_init, hmc_step
    >>> def logp(x):
    ...     return -0.5 * x @ x, -x
    >>> state = hmc_init(logp, np.zeros(1))
    >>> _, info = hmc_step(state, logp, np.random.default_rng(0), step_size=0.1,
    ...                    inv_mass=np.ones(1), max_leapfrog=5)
    >>> 1 <= info.n_leapfrog <= 5, info.divergent
    (True, False)
    """

    accept_prob: float
    accepted: bool
    divergent: bool
    n_leapfrog: int
    energy: float
    retried: bool = False


def hmc_init(logp_and_grad, x0):
    """The state an HMC chain starts from.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)`` over flat arrays.
    x0 : array-like of shape (n_params,)
        Starting point; its log density and gradient must be finite.

    Returns
    -------
    HMCState

    Raises
    ------
    ValueError
        When the log density or its gradient is not finite at ``x0``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import hmc_init
    >>> hmc_init(lambda x: (-0.5 * x @ x, -x), [1.0, 2.0]).grad
    array([-1., -2.])
    """
    x = np.array(x0, dtype=np.float64).reshape(-1)
    logp, grad = _evaluate(logp_and_grad, x)
    if not _finite(logp, grad):
        raise ValueError("The log density or its gradient is not finite at x0.")
    return HMCState(x, logp, grad)


def hmc_step(
    state,
    logp_and_grad,
    rng,
    *,
    step_size,
    inv_mass,
    max_leapfrog,
    max_energy_error=1000.0,
    delayed_rejection=None,
):
    """One HMC transition with a random number of leapfrog steps.

    The number of steps is drawn from ``U{1..max_leapfrog}``, then a momentum
    ``p ~ N(0, M)`` and the Metropolis uniform, in that order: a loop of
    these steps with the adaptation of :func:`run_hmc` outside it repeats
    that chain bit for bit.

    Parameters
    ----------
    state : HMCState
    logp_and_grad : callable
        ``x -> (log density, gradient)``; a non-finite value or gradient on
        the path makes the transition divergent.
    rng : numpy.random.Generator
    step_size : float
    inv_mass : ndarray of shape (n_params,)
        Diagonal inverse mass matrix.
    max_leapfrog : int
        Largest number of leapfrog steps.
    max_energy_error : float, default=1000
        Energy error beyond which the transition is divergent.
    delayed_rejection : int, optional
        When the trajectory fails (it is rejected with an energy error
        above ``RETRY_ENERGY_ERROR``, or diverges), try again from the same
        position and momentum with the step divided by this factor (at
        least 2) over the same integration time, with the delayed-rejection
        acceptance that keeps the target invariant
        (:mod:`skgp_bayes.inference.leapfrog`). None: a failed transition
        is rejected.

    Returns
    -------
    state : HMCState
        The proposal if accepted, else ``state`` itself.
    info : HMCInfo

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import hmc_init, hmc_step
    >>> def logp(x):
    ...     return -0.5 * x @ x, -x
    >>> rng = np.random.default_rng(0)
    >>> state = hmc_init(logp, np.zeros(2))
    >>> for _ in range(100):
    ...     state, info = hmc_step(state, logp, rng, step_size=0.5,
    ...                            inv_mass=np.ones(2), max_leapfrog=10)
    >>> state.x.shape
    (2,)
    """
    n_steps = int(rng.integers(1, max_leapfrog + 1))
    x, logp, grad, accept_prob, accepted, divergent, energy, n_leapfrog, retried = (
        _transition(
            logp_and_grad,
            state.x,
            state.logp,
            state.grad,
            step_size,
            inv_mass,
            n_steps,
            rng,
            float(max_energy_error),
            _retry_factor(delayed_rejection),
        )
    )
    info = HMCInfo(accept_prob, accepted, divergent, n_leapfrog, energy, retried)
    return (HMCState(x, logp, grad) if accepted else state), info


def _retry_factor(delayed_rejection):
    if delayed_rejection is None:
        return None
    return _check_counts("delayed_rejection", delayed_rejection, 2)


def _check_counts(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}.")
    if value < low:
        raise ValueError(f"{name} must be at least {low}; got {value}.")
    return int(value)


def _check_options(trajectory_length, target_accept):
    if trajectory_length is not None:
        trajectory_length = float(trajectory_length)
        if not (np.isfinite(trajectory_length) and trajectory_length > 0):
            raise ValueError(
                f"trajectory_length must be positive; got {trajectory_length}."
            )
    if not 0.0 < float(target_accept) < 1.0:
        raise ValueError(f"target_accept must lie in (0, 1); got {target_accept}.")
    return trajectory_length


def _check_inv_mass(inv_mass, d):
    if inv_mass is None:
        return None
    inv_mass = np.array(inv_mass, dtype=np.float64).reshape(-1)
    if (
        inv_mass.shape != (d,)
        or not np.all(inv_mass > 0)
        or not np.all(np.isfinite(inv_mass))
    ):
        raise ValueError("inv_mass must hold one positive finite entry per parameter.")
    return inv_mass


def _first_step(logp_and_grad, state, step_size, inv_mass, rng, limit):
    if step_size is None:
        return _initial_step_size(
            logp_and_grad, state.x, state.logp, state.grad, inv_mass, rng, limit
        )
    step = float(step_size)
    if not np.isfinite(step) or step <= 0:
        raise ValueError(f"step_size must be positive; got {step_size}.")
    return step


def _density_block(logp_and_grad, state, rng, settings, it, n_most, jumps):
    """Static transitions from ``it`` run by the density itself, or None.

    ``settings`` is ``(warmup, path, max_energy_error, delayed_rejection)``
    with ``path`` the ``(max_leapfrog, trajectory_length)`` of the
    transitions, ``jumps`` the run's ``ModeJumps`` or None; a warm-up block
    adapts on copies of ``warmup``'s state,
    which it takes back after. Returns ``(n, block)`` (:class:`HMCBlock`),
    or None where the density hands the block back; ``rng`` is then where
    it was.
    """
    warmup, path, limit, delayed_rejection = settings
    if it < warmup.n_warmup:
        n, dual, moments, accumulate = warmup.block_plan(it, n_most)
    else:
        n, dual, accumulate = n_most, np.zeros(0), False
        moments = (np.zeros(1, dtype=np.int64), np.zeros((2, 0)), np.zeros((2, 0)))
    saved = rng.bit_generator.state
    # the protocol's jumps only where there are some
    jumping = {} if jumps is None else {"jumps": (jumps, it)}
    block = logp_and_grad.hmc_block(
        state.x, state.logp, state.grad, rng, warmup.step, warmup.inv_mass, path,
        limit, _retry_factor(delayed_rejection) or 0, n, (dual, moments, accumulate),
        **jumping,
    )  # fmt: skip
    if block is NotImplemented:
        rng.bit_generator.state = saved
        return None
    if it < warmup.n_warmup:
        warmup.absorb_block(it, n, dual, moments, accumulate)
    return n, block


# Long because the docstring documents 20 parameters; the body is a thin loop.
def run_hmc(
    logp_and_grad,
    x0,
    *,
    n_warmup=500,
    n_samples=500,
    thin=1,
    step_size=None,
    max_leapfrog=20,
    trajectory_length=None,
    algorithm="static",
    max_tree_depth=10,
    target_accept=0.8,
    adapt_step_size=True,
    adapt_mass=True,
    inv_mass=None,
    max_energy_error=1000.0,
    delayed_rejection=None,
    random_state=None,
    verbose=0,
    print_fn=print,
    progress=None,
    jumps=None,
):
    """Sample a density by HMC with warm-up adaptation.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)`` over flat arrays. A non-finite
        value or gradient makes the transition divergent.
    x0 : array-like of shape (n_params,)
        Starting point; its log density must be finite.
    n_warmup : int, default=500
        Adaptation iterations, discarded.
    n_samples : int, default=500
        Sampling iterations after warm-up. With 0 the run is warm-up only:
        the result's ``final_state``, ``step_size`` and ``inv_mass`` start a
        continuation with ``n_warmup=0`` and adaptation off (its
        ``acceptance_rate`` is then NaN: there was no sampling).
    thin : int, default=1
        Keep every ``thin``-th sampling iteration.
    step_size : float, optional
        Initial step size; by default found by doubling/halving until the
        one-step acceptance crosses 1/2.
    max_leapfrog : int, default=20
        Each transition takes ``U{1..max_leapfrog}`` leapfrog steps.
    trajectory_length : float, optional
        Longest integration time: each transition takes ``U{1..N}`` steps,
        ``N = min(max_leapfrog, max(1, ceil(trajectory_length / step)))``
        for the current step size. The mean time is then about half of it
        whatever step the adaptation picks. For a density close to a
        standard normal in the mass-scaled coordinates the dynamics rotate
        with period ``2 pi``, and a time of ``pi / 2`` (a quarter turn)
        turns the position into the independent momentum, so ``pi`` is the
        natural choice there.
    algorithm : {"static", "nuts"}, default="static"
        ``"static"``: :func:`hmc_step`, a jittered number of leapfrog steps
        bounded by ``max_leapfrog`` and ``trajectory_length``. ``"nuts"``:
        :func:`~skgp_bayes.inference.nuts_step`, trajectories that stop
        where they turn, at most ``2^max_tree_depth - 1`` steps
        (``max_leapfrog`` and ``trajectory_length`` are then unused).
    max_tree_depth : int, default=10
        Most doublings of a No-U-Turn trajectory.
    target_accept : float, default=0.8
        Target of dual averaging (for NUTS, of the mean acceptance
        statistic of a trajectory's states).
    adapt_step_size, adapt_mass : bool, default=True
        Adapt the step size and the diagonal mass matrix in warm-up.
    inv_mass : array-like of shape (n_params,), optional
        Initial diagonal inverse mass matrix (variance scale). By default
        ``1 / |grad log p(x0)|`` (1 where a gradient entry is 0). A good
        guess, such as the variances of a Gaussian approximation, shortens
        warm-up.
    max_energy_error : float, default=1000
        Energy error beyond which a transition is divergent.
    delayed_rejection : int, optional
        Static HMC only: a failed trajectory is tried again with the step
        divided by this factor (see :func:`hmc_step`); ``n_retried`` and
        ``n_retried_accepted`` count the second stages. The warm-up's step
        adaptation sees the first stage's acceptance probability, as
        without.
    random_state : int, SeedSequence or numpy.random.Generator, optional
        Source of all random numbers.
    verbose : int, default=0
        Print progress about ten times when positive.
    print_fn : callable, default=print
    progress : callable, optional
        ``progress(iteration, n_warmup + n_samples, stats)`` after every
        iteration, warm-up included, with the mean acceptance probability
        so far and the divergences.
    jumps : ModeJumps, optional
        After every ``jumps.every`` transitions, warm-up included, an
        independence Metropolis-Hastings move from ``jumps``' mixture of
        Gaussians (:func:`~skgp_bayes.inference.mode_jumps.mode_jump`), so
        that a chain crosses between known modes; the moves keep the target
        invariant. ``n_jumps`` and ``n_jumps_accepted`` count them.

    Returns
    -------
    HMCResult

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_hmc
    >>> def logp(x):
    ...     return -0.5 * x @ x, -x
    >>> res = run_hmc(logp, np.zeros(2), n_warmup=100, n_samples=200,
    ...               random_state=0)
    >>> res.samples.shape, res.n_divergent
    ((200, 2), 0)
    """
    t_start = time.perf_counter()
    n_warmup = _check_counts("n_warmup", n_warmup, 0)
    n_samples = _check_counts("n_samples", n_samples, 0)
    thin = _check_counts("thin", thin, 1)
    max_leapfrog = _check_counts("max_leapfrog", max_leapfrog, 1)
    max_tree_depth = _check_counts("max_tree_depth", max_tree_depth, 1)
    trajectory_length = _check_options(trajectory_length, target_accept)
    if algorithm not in ("static", "nuts"):
        raise ValueError(f"algorithm must be 'static' or 'nuts'; got {algorithm!r}.")
    _retry_factor(delayed_rejection)
    rng = (
        random_state
        if isinstance(random_state, np.random.Generator)
        else np.random.default_rng(random_state)
    )
    d = np.size(x0)
    inv_mass = _check_inv_mass(inv_mass, d)
    state = hmc_init(logp_and_grad, x0)
    if inv_mass is None:
        inv_mass = gradient_scaled_inv_mass(state.grad)
    limit = float(max_energy_error)
    step = _first_step(logp_and_grad, state, step_size, inv_mass, rng, limit)
    warmup = WarmupAdaptation(
        step,
        inv_mass,
        n_warmup,
        adapt_step_size=adapt_step_size,
        adapt_mass=adapt_mass,
        target_accept=target_accept,
    )
    trace = ChainTrace(n_warmup, n_samples, thin, state.x.size)
    jump_counts = [0, 0]
    # Static transitions (and their mode jumps) in blocks the density runs
    # itself, where it can (HMCBlock): the same chain.
    blocks = algorithm == "static" and hasattr(logp_and_grad, "hmc_block")
    path = (max_leapfrog, 0.0 if trajectory_length is None else trajectory_length)
    settings = (warmup, path, limit, delayed_rejection)
    it = 0
    while it < trace.total:
        # Also switches to the averaged step when warm-up ends.
        bound_step = warmup.bound_step(it)
        if blocks:
            done = _density_block(
                logp_and_grad, state, rng, settings, it, trace.until_report(it), jumps
            )
            if done is not None:
                n, block = done
                state = HMCState(block.x, block.logp, block.grad)
                jump_counts[0] += block.n_jumps
                jump_counts[1] += block.n_jumps_accepted
                trace.record_block(it, block)
                it += n
                trace.report(it - 1, warmup.step, progress, verbose, print_fn)
                continue
            blocks = False  # the interpreted density's turn, for the rest
        if algorithm == "nuts":
            state, info = nuts_step(
                state,
                logp_and_grad,
                rng,
                step_size=warmup.step,
                inv_mass=warmup.inv_mass,
                max_tree_depth=max_tree_depth,
                max_energy_error=limit,
            )
        else:
            bound = most_leapfrog_steps(*path, bound_step)
            state, info = hmc_step(
                state,
                logp_and_grad,
                rng,
                step_size=warmup.step,
                inv_mass=warmup.inv_mass,
                max_leapfrog=bound,
                max_energy_error=limit,
                delayed_rejection=delayed_rejection,
            )
        if jumps is not None and (it + 1) % jumps.every == 0:
            accepted, x, logp, grad = mode_jump(
                state.x, state.logp, logp_and_grad, rng, jumps
            )
            jump_counts[0] += 1
            if accepted:
                jump_counts[1] += 1
                state = HMCState(x, logp, grad)
        trace.record(it, info, warmup.step, state)
        if it < n_warmup:
            warmup.update(it, state, info.accept_prob)
        trace.report(it, warmup.step, progress, verbose, print_fn)
        it += 1
    # A warm-up-only run ends on the averaged step, as a longer one would
    # have switched to it at its first sampling iteration.
    warmup.bound_step(trace.total)
    return trace.result(
        state, warmup, time.perf_counter() - t_start, tuple(jump_counts)
    )


def run_hmc_chains(
    logp_and_grad, inits, *, random_state=None, n_jobs=None, threads=1, **kwargs
):
    """Several independent :func:`run_hmc` chains, optionally in parallel.

    One child seed per chain is spawned up front from ``random_state``, so
    the chains are the same whatever ``n_jobs`` and ``threads`` are.

    Parameters
    ----------
    logp_and_grad : callable
        As in :func:`run_hmc`; picklable for ``n_jobs`` other than 1, safe
        on several threads at once for ``threads`` above 1.
    inits : array-like of shape (n_chains, n_params)
        One starting point per chain.
    random_state : int or None
        Seed of the :class:`numpy.random.SeedSequence` the chain seeds are
        spawned from.
    n_jobs : int or None
        joblib's ``n_jobs``, where ``threads`` is 1.
    threads : int, default=1
        Above 1: that many threads of this process instead, for a
        ``logp_and_grad`` that releases the GIL (see
        :func:`~skgp_bayes.inference._chain_threads.run_on_threads`).
    **kwargs
        Passed to :func:`run_hmc` (the same for every chain, except
        ``inv_mass``, which may be an array of shape ``(n_chains,
        n_params)``, and ``step_size``, which may be an array of shape
        ``(n_chains,)``: a continuation passes each chain's own).

    Returns
    -------
    list of HMCResult

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_hmc_chains
    >>> def logp(x):
    ...     return -0.5 * x @ x, -x
    >>> results = run_hmc_chains(logp, np.zeros((2, 3)), random_state=0,
    ...                          n_warmup=50, n_samples=50)
    >>> [r.samples.shape for r in results]
    [(50, 3), (50, 3)]
    """
    inits = np.atleast_2d(np.asarray(inits, dtype=np.float64))
    n_chains = inits.shape[0]
    seeds = np.random.SeedSequence(random_state).spawn(n_chains)
    inv_mass = kwargs.pop("inv_mass", None)  # np.ndim(None) is 0
    two_d = np.ndim(inv_mass) == 2
    masses = list(np.asarray(inv_mass, float)) if two_d else [inv_mass] * n_chains
    step = kwargs.pop("step_size", None)
    if step is not None and np.ndim(step) == 1:
        steps = [float(s) for s in step]
    else:
        steps = [step] * n_chains

    per_chain = [
        dict(
            random_state=np.random.default_rng(seeds[c]),
            inv_mass=masses[c],
            step_size=steps[c],
        )
        for c in range(n_chains)
    ]
    if threads > 1 and n_chains > 1:
        shared = kwargs.pop("progress", None)
        return run_on_threads(
            lambda c, p: run_hmc(
                logp_and_grad, inits[c], progress=p, **per_chain[c], **kwargs
            ),
            n_chains,
            threads,
            shared,
        )
    jobs = (
        delayed_flushed(run_hmc)(logp_and_grad, inits[c], **per_chain[c], **kwargs)
        for c in range(n_chains)
    )
    return Parallel(n_jobs=n_jobs)(jobs)
