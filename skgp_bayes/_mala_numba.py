"""A block of Metropolis-adjusted Langevin transitions in one compiled call.

:func:`skgp_bayes.inference.langevin.mala_step` is one transition in the
interpreter: on small data most of its time is the interpreter's, not the
target's (cpunish, 11 rows: 33 us a transition of which the compiled
target takes 4). Here a chain's transitions at a fixed step and metric run
in a loop around the compiled density of
:func:`skgp_bayes._chain_density_numba.chain_density`, with the same
arithmetic as ``mala_step`` (MALTA's capped drift, the reverse density
from ``a + a'``, bounds where the target is zero), and without the
interpreter lock, so that chains on threads run side by side.

The random numbers come in as a stream of standard normals, read in the
order in which ``mala_step`` and
:func:`~skgp_bayes.inference.mode_jumps.mode_jump` draw theirs, each
uniform as the normal probability ``Phi(w)`` of one normal. Normals drawn
in sequence from one generator are the same however the run is cut into
blocks, so a chain's draws do not depend on where its blocks end, and a
transition handed back to the interpreter replays its own part of the
stream.
"""

import math

import numpy as np
from numba import njit

from ._chain_density_numba import (
    GENERAL,
    KIND_COLLAPSED,
    KIND_EXACT,
    KIND_LOGIT,
    KIND_SOFTMAX,
    OK,
    chain_density,
)
from ._mode_jump_numba import all_finite, jump_proposal, jump_taken, jump_test
from .inference._adaptation_numba import dual_update
from .inference._ordered_numba import ordered_dot, ordered_matvec
from .linalg._numba_ops import copy_vector

__all__ = [
    "AT_JUMP",
    "AT_TRANSITION",
    "MALA_BLOCKS",
    "ROOT_DENSE",
    "ROOT_DIAGONAL",
    "ROOT_IDENTITY",
]

# How the metric's root R (M = R R') is given: none, a vector, a matrix.
ROOT_IDENTITY, ROOT_DIAGONAL, ROOT_DENSE = 0, 1, 2
# Where a block stopped for the interpreted layers (OK: it did not).
AT_TRANSITION, AT_JUMP = 1, 2
_SQRT_HALF = 0.7071067811865476


@njit(cache=True, nogil=True, inline="always")
def _times_root(root_kind, root, v):
    """``R v``."""
    if root_kind == ROOT_IDENTITY:
        return v.copy()
    if root_kind == ROOT_DIAGONAL:
        return root[0] * v
    return ordered_matvec(root, v)


@njit(cache=True, nogil=True, inline="always")
def _capped_drift(root_kind, root, grad):
    """MALTA's drift ``t(R' g)``: the whitened gradient, its norm capped.

    The cap is ``mala_step``'s, ``10 (sqrt(d) + 1)``.
    """
    if root_kind == ROOT_IDENTITY:
        drift = grad.copy()
    elif root_kind == ROOT_DIAGONAL:
        drift = root[0] * grad
    else:
        drift = ordered_matvec(root.T, grad)
    norm = math.sqrt(ordered_dot(drift, drift))
    cap = 10.0 * (math.sqrt(drift.size) + 1.0)
    if norm > cap:
        drift = drift * (cap / norm)
    return drift


@njit(cache=True, nogil=True, inline="always")
def _inside(x, lower, upper):
    if not all_finite(x):
        return False
    for j in range(lower.size):
        if x[j] < lower[j] or x[j] > upper[j]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _uniform(w):
    """``Phi(w)``: a uniform from a standard normal."""
    return 0.5 * math.erfc(-w * _SQRT_HALF)


@njit(cache=True, nogil=True, inline="always")
def _mode_jump(kind, x, logp, draws, lower, upper, jumps, chain, n_hyper, arguments,
               prior, grad_new):  # fmt: skip
    """``mode_jump``'s move from ``x``: ``(status, accepted, proposal, value)``.

    ``draws`` are its ``d + 2`` normals. Where the move is accepted the
    proposal's log density is ``value`` and its gradient is in
    ``grad_new``.
    """
    d = x.size
    proposal = jump_proposal(jumps, _uniform(draws[0]), draws[1 : 1 + d])
    log_u = math.log(_uniform(draws[1 + d]))
    if not _inside(proposal, lower, upper):
        return OK, False, proposal, -math.inf
    status, accepted, value = jump_test(
        kind, x, logp, proposal, log_u, jumps, chain, n_hyper, arguments, prior,
        grad_new,
    )  # fmt: skip
    return status, accepted, proposal, value


# The loop repeats mala_step, run_sgld's adaptation and mode_jump line for line.
# Long because it is a transition, its step's adaptation and a mode jump in full.
@njit(cache=True, nogil=True, inline="always")
def _mala_block(
    kind, x, logp, grad, step, dual, root_kind, root, lower, upper, stream, t,
    every, jumps, chain, n_hyper, arguments, prior, out, counts,
):  # fmt: skip
    """Transitions from ``(x, logp, grad)`` at iterations ``t, t + 1, ...``.

    One transition per row of the outputs ``out = (positions, accepted,
    steps, moment_x, moment_grad)``, each followed by a mode jump from
    ``jumps`` where ``every > 0`` and the iteration's ``(t + 1) % every ==
    0``. The step is ``step``, or where ``dual`` is not empty the step of
    its dual averaging, fed every transition's acceptance probability
    (``dual`` is updated in place; see ``dual_update``). The random
    numbers are read from ``stream`` in the order in which ``mala_step``
    and ``mode_jump`` draw them: ``d`` normals and the test's uniform for a
    transition, the component's uniform, ``d`` normals and the test's
    uniform for a jump (each uniform ``Phi`` of a normal). ``x`` and
    ``grad`` are updated in place; row ``i`` holds the chain after
    transition ``i`` and its jump (``positions``), its acceptance and step,
    and the state and gradient before the jump (the metric's moments).

    Returns ``(status, n_done, used, logp)``: ``OK`` when every row is
    done, else :data:`AT_TRANSITION` or :data:`AT_JUMP` where transition
    ``n_done`` or its jump needs the interpreted density
    (:data:`~skgp_bayes._chain_density_numba.GENERAL`) and is to be taken
    from ``stream[used:]`` by the interpreter. ``counts`` adds proposals
    inside the bounds whose density was not finite, jumps tried and jumps
    accepted.
    """
    positions, accepted, steps, moment_x, moment_grad = out
    d = x.size
    logp_now = logp + 0.0  # a new float: returning an argument breaks Ctrl-C
    drift = _capped_drift(root_kind, root, grad)
    grad_new = np.empty(d)
    used = 0
    for i in range(positions.shape[0]):
        if dual.size:
            step = math.exp(dual[7])
        root_step = math.sqrt(step)
        z = stream[used : used + d]
        u = _uniform(stream[used + d])
        proposal = x + _times_root(root_kind, root, 0.5 * step * drift + root_step * z)
        prob = 0.0
        drift_back, value = drift, logp_now
        if _inside(proposal, lower, upper):
            status, value = chain_density(
                proposal, chain, kind, n_hyper, arguments, prior, grad_new
            )
            if status == GENERAL:
                return AT_TRANSITION, i, used, logp_now
            if status == OK and math.isfinite(value) and all_finite(grad_new):
                drift_back = _capped_drift(root_kind, root, grad_new)
                back = z + 0.5 * root_step * (drift + drift_back)
                squares = ordered_dot(z, z) - ordered_dot(back, back)
                log_ratio = value - logp_now + 0.5 * squares
                prob = math.exp(min(0.0, log_ratio))
            else:
                counts[0] += 1
        used += d + 1
        accepted[i], steps[i] = u < prob, step
        if accepted[i]:
            copy_vector(x, proposal)
            copy_vector(grad, grad_new)
            logp_now = value
            drift = drift_back
        if dual.size:
            dual_update(dual, prob)
        copy_vector(moment_x[i], x)
        copy_vector(moment_grad[i], grad)
        if every and (t + i + 1) % every == 0:
            status, jumped, proposal, value = _mode_jump(
                kind, x, logp_now, stream[used : used + d + 2], lower, upper, jumps,
                chain, n_hyper, arguments, prior, grad_new,
            )  # fmt: skip
            if status == GENERAL:
                return AT_JUMP, i, used, logp_now
            jump_taken(jumped, counts, 1, x, grad, proposal, grad_new)
            if jumped:
                logp_now = value
                drift = _capped_drift(root_kind, root, grad)
            used += d + 2
        copy_vector(positions[i], x)
    return OK, positions.shape[0], used, logp_now


def _entry_point(kind):
    """The compiled block of one target kind, ``kind`` a constant in it."""

    @njit(cache=True, nogil=True)
    def mala_block(
        x, logp, grad, step, dual, root_kind, root, lower, upper, stream, t,
        every, jumps, chain, n_hyper, arguments, prior, out, counts,
    ):  # fmt: skip
        return _mala_block(
            kind, x, logp, grad, step, dual, root_kind, root, lower, upper,
            stream, t, every, jumps, chain, n_hyper, arguments, prior, out,
            counts,
        )  # fmt: skip

    return mala_block


# Indexed by kind (KIND_LOGIT, ... of _chain_density_numba). Each is
# ``(x, logp, grad, step, dual, root_kind, root, lower, upper, stream, t,
# every, jumps, chain, n_hyper, arguments, prior, out, counts) -> (status,
# n_done, used, logp)``; see ``_mala_block``. Only the kinds a caller uses
# compile.
MALA_BLOCKS = tuple(
    _entry_point(kind)
    for kind in (KIND_LOGIT, KIND_SOFTMAX, KIND_COLLAPSED, KIND_EXACT)
)
