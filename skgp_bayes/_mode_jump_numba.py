"""A mode jump of a chain's compiled transitions.

:func:`~skgp_bayes.inference.mode_jumps.mode_jump` in compiled code, for
the blocks of :mod:`skgp_bayes._mala_numba` (Langevin) and
:mod:`skgp_bayes.variational_mcmc._hmc_block_numba` (HMC): the
proposal from the mixture of :class:`~skgp_bayes.inference.mode_jumps.
ModeJumps` (its :meth:`~skgp_bayes.inference.mode_jumps.ModeJumps.
as_arrays`), and the Metropolis-Hastings test on the chains' density
:func:`~skgp_bayes._chain_density_numba.chain_density`. Each block draws
the move's random numbers in its own way (a stream of normals, a
generator), so the draws come in as arguments. The arithmetic is that of
``ModeJumps.propose``, ``ModeJumps.log_q`` and ``mode_jump``, in the same
order and through the same ordered sums, so that a block's chain is the
interpreted one to the bit.
"""

import math

import numpy as np
from numba import njit

from ._chain_density_numba import GENERAL, OK, chain_density
from .inference._ordered_numba import mixture_log_density, ordered_matvec
from .linalg._numba_ops import copy_vector

__all__ = ["all_finite", "jump_proposal", "jump_taken", "jump_test"]


@njit(cache=True, nogil=True, inline="always")
def all_finite(v):
    """Whether every entry of ``v`` is finite."""
    for j in range(v.size):
        if not math.isfinite(v[j]):
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _log_q(x, jumps):
    """Log density of the mixture at ``x`` (``ModeJumps.log_q``)."""
    stacked_inverse, stacked_shift, log_const = jumps[3], jumps[4], jumps[5]
    return mixture_log_density(x, stacked_inverse, stacked_shift, log_const)


@njit(cache=True, nogil=True, inline="always")
def jump_proposal(jumps, u, z):
    """``ModeJumps.propose``'s draw from its uniform ``u`` and normals ``z``."""
    means, factors, cumulative = jumps[0], jumps[1], jumps[2]
    pick = u * cumulative[-1]
    # the last component where u times the total rounds to the total
    c = min(np.searchsorted(cumulative, pick, side="right"), means.shape[0] - 1)
    return means[c] + ordered_matvec(factors[c], z)


@njit(cache=True, nogil=True, inline="always")
def jump_test(kind, x, logp, proposal, log_u, jumps, chain, n_hyper, arguments,
              prior, grad_new):  # fmt: skip
    """``mode_jump``'s test of ``proposal``: ``(status, accepted, value)``.

    ``log_u`` is the log of the test's uniform. With ``status``
    :data:`~skgp_bayes._chain_density_numba.GENERAL` the density needs the
    interpreted layers. Where the move is accepted the proposal's log
    density is ``value`` and its gradient is in ``grad_new``; a proposal
    outside the bounds or of a density that is not finite is rejected.
    """
    status, value = chain_density(
        proposal, chain, kind, n_hyper, arguments, prior, grad_new
    )
    if status == GENERAL:
        return GENERAL, False, -math.inf
    if status != OK or not (math.isfinite(value) and all_finite(grad_new)):
        return OK, False, -math.inf
    log_ratio = value - logp + _log_q(x, jumps) - _log_q(proposal, jumps)
    return OK, log_u < log_ratio, value


@njit(cache=True, nogil=True, inline="always")
def jump_taken(jumped, counts, at, x, grad, proposal, grad_new):
    """Count a jump tried in ``counts[at]`` and, where ``jumped``, accepted
    in ``counts[at + 1]``, moving ``x`` and ``grad`` to the proposal's."""
    counts[at] += 1
    if jumped:
        counts[at + 1] += 1
        copy_vector(x, proposal)
        copy_vector(grad, grad_new)
