"""A block of static HMC transitions in one compiled call.

On the problems where the chains run at their cheapest (tens of rows, a
few inducing inputs) the compiled trajectory of :mod:`._trajectory_numba`
is most of a transition but not all of it: the engine's transition around
it (:func:`skgp_bayes.inference.hmc_step`: the momentum, the energies,
the test, the records, warm-up's adaptation) is interpreted, 25-40 us
against 50-75 us of compiled trajectory on 32-48 rows, and holds the
interpreter lock, so that chains on threads could not run side by side.
Here a block of static transitions runs in one loop around the same
trajectory, without the lock, adapting as warm-up does where asked
(:meth:`~skgp_bayes.inference.adaptation.WarmupAdaptation.block_plan`:
dual averaging of the step after every transition, the mass window's
moments), and with the mode jumps of
:func:`~skgp_bayes.inference.mode_jumps.mode_jump` between transitions
where the run makes them (:mod:`skgp_bayes._mode_jump_numba`). Chains
with jumps ran their transitions and jumps interpreted before: on uscrime
(32 rows, two modes, a jump after every transition) 0.17 s of a 0.56 s
sampling stage was the interpreted jumps and 0.07 s the transitions
around the compiled trajectories, and the chains held the lock.

The random numbers are drawn from the chain's own
:class:`numpy.random.Generator`, which compiled code advances as the
interpreter does, in ``hmc_step``'s order: the number of steps, the
momentum, the test's uniform, and a second stage's uniform where it gets
that far; then ``mode_jump``'s, where a jump follows. The arithmetic is
the engine's, line for line, with the C library's ``exp`` and ``log``
(which the engine's scalar steps take too), so the chain is the
interpreted one to the bit.

A status :data:`~skgp_bayes._chain_density_numba.GENERAL` stops the block
at the transition that needs the interpreted target; the caller replays
the block from its start with the generator's state saved before it.
"""

import math

import numpy as np
from numba import njit

from .._chain_density_numba import (
    GENERAL,
    KIND_COLLAPSED,
    KIND_EXACT,
    KIND_LOGIT,
    KIND_SOFTMAX,
    OK,
)
from .._mode_jump_numba import jump_proposal, jump_taken, jump_test
from ..inference._adaptation_numba import add_moments, dual_update
from ..inference._energy_numba import kinetic_energy
from ..inference.leapfrog import (
    RETRY_ENERGY_ERROR,
    first_stage_acceptance,
    is_divergent,
    most_leapfrog_steps,
    second_stage_log_acceptance,
)
from ..linalg._numba_ops import copy_vector
from ._trajectory_numba import leapfrog_trajectory

__all__ = ["HMC_BLOCKS"]

# The stages of one transition (see inference.leapfrog): the first
# trajectory, a failed one's second at a shorter step, and the ghost, the
# first stage from the second's end.
_FIRST, _SECOND, _GHOST = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def _most_steps(step, dual, max_leapfrog, trajectory_length):
    """``run_hmc``'s bound on a transition's leapfrog steps: from the
    averaged step while the step adapts (``WarmupAdaptation.bound_step``)."""
    if dual.size:
        step = math.exp(dual[8] if dual[5] > 0.0 else dual[7])
    return most_leapfrog_steps(max_leapfrog, trajectory_length, step)


@njit(cache=True, nogil=True, inline="always")
def _mode_jump(kind, rng, x, logp, jumps, chain, n_hyper, arguments, prior,
               grad_new):  # fmt: skip
    """``mode_jump``'s move from ``x``: ``(status, accepted, proposal, value)``.

    Its draws from ``rng`` in its order: the component's uniform, the
    normals, the test's uniform (whose log is ``log_uniform``'s).
    """
    u = rng.random()
    z = rng.standard_normal(x.size)
    proposal = jump_proposal(jumps, u, z)
    u = rng.random()
    log_u = math.log(u) if u > 0.0 else -math.inf
    status, accepted, value = jump_test(
        kind, x, logp, proposal, log_u, jumps, chain, n_hyper, arguments, prior,
        grad_new,
    )  # fmt: skip
    return status, accepted, proposal, value


# The transition of hmc_step and delayed_second_stage, its three trajectories
# through one call site (each call site inlines the whole density).
# Long because it is a transition with its delayed-rejection stages in full.
@njit(cache=True, nogil=True, inline="always")
def _hmc_block(
    kind, rng, x, grad, logp, step, inv_mass, path, retry, limit, adaptation, chain,
    n_hyper, arguments, prior, out, jumping, jumps, counts,
):  # fmt: skip
    """Static HMC transitions from ``(x, logp, grad)``, one per row of ``out``.

    ``out = (positions, log_densities, accept_prob, accepted, divergent,
    retried, n_leapfrog, energies, step_sizes)``: row ``i`` holds the chain
    after transition ``i`` and the statistics of :class:`~skgp_bayes.
    inference.hmc.HMCInfo` and of the engine's trace. ``path`` is
    ``(max_leapfrog, trajectory_length)`` (0: no length), ``retry`` the
    second stage's step factor (0: none), ``adaptation`` ``(dual, count,
    mean, m2, accumulate)``: the dual averaging's fields (empty: the step
    stays) and the window's moments, updated in place. ``x`` and ``grad``
    are updated in place. ``jumping`` is ``(every, first)``: where ``every``
    is positive, transition ``i`` is followed by a mode jump from the
    mixture ``jumps`` (``ModeJumps.as_arrays``) when ``(first + i + 1) %
    every == 0``, as ``run_hmc`` does after its iteration ``first + i``;
    ``counts`` adds the jumps tried and accepted. Row ``i`` holds the chain
    after the transition and its jump, and warm-up's moments take that
    state, as ``run_hmc``'s do.

    Returns ``(status, n_done, logp)``: ``OK`` with every row done, else
    ``GENERAL`` at transition ``n_done``.
    """
    positions, log_densities, accept_prob, accepted, divergent, retried = out[:6]
    n_leapfrog, energies, step_sizes = out[6:]
    max_leapfrog, trajectory_length = path
    dual, count, mean, m2, accumulate = adaptation
    every, first = jumping
    d = x.size
    logp_now = logp + 0.0  # a new float: returning an argument breaks Ctrl-C
    root = np.sqrt(inv_mass)
    w_end, p_end, g_end = np.empty(d), np.empty(d), np.empty(d)
    x2, g2, g_jump = np.empty(d), np.empty(d), np.empty(d)
    for i in range(positions.shape[0]):
        bound = _most_steps(step, dual, max_leapfrog, trajectory_length)
        n_steps = rng.integers(1, bound + 1)
        p = rng.standard_normal(d) / root
        log_u = math.log(rng.random())
        h0 = -logp_now + kinetic_energy(p, inv_mass)
        stage, start_x, start_p, start_g = _FIRST, x, p, grad
        stage_step, stage_steps = step, n_steps
        error, value2, h2, h_kept, prob = math.inf, 0.0, 0.0, h0, 0.0
        taken, took, diverged, second = n_steps, False, False, False
        while True:
            status, value = leapfrog_trajectory(
                start_x, start_p, start_g, stage_step, inv_mass, stage_steps, chain,
                kind, n_hyper, arguments, prior, w_end, p_end, g_end,
            )  # fmt: skip
            if status == GENERAL:
                return GENERAL, i, logp_now
            if stage == _FIRST:
                if status == OK:
                    h1 = -value + kinetic_energy(p_end, inv_mass)
                    error = h1 - h0
                    prob = first_stage_acceptance(error, limit)
                    if not is_divergent(error, limit) and log_u < -error:
                        copy_vector(x, w_end)
                        copy_vector(grad, g_end)
                        logp_now, h_kept, took = value, h1, True
                        break
                diverged = is_divergent(error, limit)
                if retry == 0 or not error > RETRY_ENERGY_ERROR:
                    break
                second = True
                stage, stage_step, stage_steps = _SECOND, step / retry, retry * n_steps
                taken += stage_steps
            elif stage == _SECOND:
                if status != OK:
                    diverged = True
                    break
                h2 = -value + kinetic_energy(p_end, inv_mass)
                if is_divergent(h2 - h0, limit):
                    diverged = True
                    break
                copy_vector(x2, w_end)
                copy_vector(g2, g_end)
                value2 = value
                stage, start_x, start_p, start_g = _GHOST, x2, -p_end, g2
                stage_step, stage_steps = step, n_steps
                taken += n_steps
            else:
                ghost_error = math.inf
                if status == OK:
                    ghost_error = -value + kinetic_energy(p_end, inv_mass) - h2
                log_accept = second_stage_log_acceptance(
                    h0, h2, error, ghost_error, limit
                )
                diverged = False
                if log_accept > -math.inf and math.log(rng.random()) < log_accept:
                    copy_vector(x, x2)
                    copy_vector(grad, g2)
                    logp_now, h_kept, took = value2, h2, True
                break
        if every and (first + i + 1) % every == 0:
            status, jumped, proposal, value = _mode_jump(
                kind, rng, x, logp_now, jumps, chain, n_hyper, arguments, prior,
                g_jump,
            )  # fmt: skip
            if status == GENERAL:
                return GENERAL, i, logp_now
            jump_taken(jumped, counts, 0, x, grad, proposal, g_jump)
            if jumped:
                logp_now = value
        copy_vector(positions[i], x)
        log_densities[i], accept_prob[i], energies[i] = logp_now, prob, h_kept
        accepted[i], divergent[i], retried[i] = took, diverged and not took, second
        n_leapfrog[i], step_sizes[i] = taken, step
        # WarmupAdaptation.update's order: the step, then the window
        if dual.size:
            dual_update(dual, prob)
            step = math.exp(dual[7])
        if accumulate:
            add_moments(count, mean, m2, x, grad)
    return OK, positions.shape[0], logp_now


def _entry_point(kind):
    """The compiled block of one target kind, ``kind`` a constant in it."""

    @njit(cache=True, nogil=True)
    def hmc_block(
        rng, x, grad, logp, step, inv_mass, path, retry, limit, adaptation, chain,
        n_hyper, arguments, prior, out, jumping, jumps, counts,
    ):  # fmt: skip
        return _hmc_block(
            kind, rng, x, grad, logp, step, inv_mass, path, retry, limit,
            adaptation, chain, n_hyper, arguments, prior, out, jumping, jumps,
            counts,
        )  # fmt: skip

    return hmc_block


# Indexed by kind (KIND_LOGIT, ... of _chain_density_numba). Each is ``(rng,
# x, grad, logp, step, inv_mass, path, retry, limit, adaptation, chain,
# n_hyper, arguments, prior, out, jumping, jumps, counts) -> (status,
# n_done, logp)``; see ``_hmc_block``.
# Only the kinds a caller uses compile.
HMC_BLOCKS = tuple(
    _entry_point(kind)
    for kind in (KIND_LOGIT, KIND_SOFTMAX, KIND_COLLAPSED, KIND_EXACT)
)
