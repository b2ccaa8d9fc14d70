"""MALA transitions in compiled blocks, for :func:`~skgp_bayes.inference.run_sgld`.

A chain's density may offer a ``mala_block`` method: a loop of
:func:`~skgp_bayes.inference.langevin.mala_step`'s transitions (and of
:func:`~skgp_bayes.inference.mode_jumps.mode_jump`'s moves) in compiled
code. :func:`compiled_stretch` runs the chain's iterations through it and
keeps the chain's records as the interpreted loop does; the contract, the
stream of random numbers the block reads, and the hand-back of a
transition the block cannot take are in its notes. The engine knows
nothing about Gaussian processes: the block is the density's.
"""

import math

import numpy as np

from .langevin import mala_step, moved_state
from .mode_jumps import mode_jump

__all__ = [
    "StreamReplay",
    "chain_jump",
    "compiled_stretch",
    "mala_stream_length",
    "replayed_step",
]


def compiled_stretch(logp_and_grad, chain, jumps, adaptation):
    """MALA transitions in compiled blocks, or None.

    Where the density offers ``mala_block(state, step_size, dual, root,
    bounds, stream, t, jumps, out) -> (status, n_done, used, counts, x,
    logp, grad)`` (``mala_step``'s transitions from iteration ``t``, each
    followed by ``mode_jump``'s move where one is due, with the step fixed
    or adapted by dual averaging, in a loop in compiled code; see
    :mod:`skgp_bayes._mala_numba`), the transitions go through it.
    ``stretch(t, end)`` takes those from ``t`` up to the next end of a
    metric window or of the adaptation, progress line or ``end`` (at most
    ``mala_block_steps`` a call), records all but the last, whose record
    the loop keeps, and returns the last one's index; None where the step
    follows a schedule. The block reads its random numbers from a stream of
    standard normals in the order in which ``mala_step`` and ``mode_jump``
    draw them, each uniform as the normal probability of one normal
    (:func:`mala_stream_length`). Normals drawn in sequence are the same
    however the run is cut, so where blocks end (progress lines, verbosity)
    changes no draw; a transition or jump the block hands back (a density
    that needs the interpreted layers) is taken by ``mala_step`` or
    ``mode_jump`` from its own part of the stream.
    """
    block = getattr(logp_and_grad, "mala_block", None)
    if block is None:
        return None
    most = int(getattr(logp_and_grad, "mala_block_steps", 256))
    every = 0 if jumps is None else jumps.every

    def stretch(t, end):
        dual = chain.s.dual
        if dual is None and chain.s.frozen_eps is None:
            return None
        stop = min(end, t + most)
        if dual is not None:
            stop = min(stop, adaptation.next_stop(t))
        if chain.verbose:
            i = t - chain.t0
            stop = min(stop, chain.t0 + i + chain.report - i % chain.report)
        d = chain.s.x.shape[0]
        stream = chain.rng.standard_normal(mala_stream_length(stop - t, d, t, every))
        rows = slice(t - chain.t0, stop - chain.t0)
        moments = np.empty((2, stop - t, d))
        out = (
            chain.samples[rows], chain.accepted[rows], chain.steps[rows],
            moments[0], moments[1],
        )  # fmt: skip
        done = used = 0
        while done < stop - t:
            fields = _dual_fields(chain.s.dual)
            frozen = chain.s.frozen_eps
            status, n, n_used, counts, x, logp, grad = block(
                chain.s, math.nan if frozen is None else frozen, fields,
                chain.metric.root,
                chain.bounds, stream[used:], t + done, jumps,
                tuple(a[done:] for a in out),
            )  # fmt: skip
            _set_dual_fields(chain.s.dual, fields)
            chain.s = moved_state(chain.s, x, logp, grad)
            chain.s.n_accepted += int(out[1][done : done + n].sum())
            chain.s.n_rejected += int(counts[0])
            chain.n_jumps += int(counts[1])
            chain.n_jumps_accepted += int(counts[2])
            adaptation.collect(chain.s, t + done, moments[:, done : done + n])
            done, used = done + n, used + n_used
            if status:  # the interpreter goes on from the stream where it stopped
                replay = StreamReplay(stream[used:])
                if status == _AT_TRANSITION:
                    replayed_step(chain, logp_and_grad, replay, t + done, adaptation)
                else:  # the block took the transition, not its jump
                    chain.s.n_accepted += int(out[1][done])
                    adaptation.collect(chain.s, t + done, moments[:, done : done + 1])
                if jumps is not None and (t + done + 1) % every == 0:
                    chain_jump(chain, logp_and_grad, jumps, replay)
                out[0][done] = chain.s.x
                done, used = done + 1, used + replay.used
        chain.eps = float(out[2][-1])
        adaptation.conclude(chain, stop - 1, chain.eps)
        return stop - 1

    return stretch


_DUAL_FIELDS = ("mu", "target_accept", "gamma", "t0", "kappa", "t", "h_bar")


def _dual_fields(dual):
    """A dual averaging's state as the compiled block's array (empty: None)."""
    if dual is None:
        return np.zeros(0)
    values = [getattr(dual, name) for name in _DUAL_FIELDS]
    return np.array([*values, dual.log_step, dual.log_step_bar], dtype=np.float64)


def _set_dual_fields(dual, fields):
    """Write the block's array back into the dual averaging."""
    if dual is None:
        return
    dual.t = int(fields[5])
    dual.h_bar, dual.log_step, dual.log_step_bar = (float(v) for v in fields[6:])


# The block's statuses (skgp_bayes._mala_numba): the interpreter takes the
# transition at which it stopped, or only the jump after it.
_AT_TRANSITION, _AT_JUMP = 1, 2


def mala_stream_length(n, d, t, every):
    """Standard normals that ``n`` MALA transitions from iteration ``t`` draw.

    ``d + 1`` a transition (the proposal's normals, the test's uniform) and
    ``d + 2`` a mode jump (the component's uniform, the normals, the test's
    uniform), one after each iteration ``s`` with ``(s + 1) % every == 0``
    (none where ``every`` is 0).

    Parameters
    ----------
    n, d, t, every : int

    Returns
    -------
    int

    Examples
    --------
    >>> from skgp_bayes.inference._mala_stretch import mala_stream_length
    >>> mala_stream_length(4, 3, 0, 2)  # jumps after iterations 1 and 3
    26
    """
    n_jumps = 0 if not every else (t + n) // every - t // every
    return n * (d + 1) + n_jumps * (d + 2)


class StreamReplay:
    """A random generator that reads its draws from a stream of normals,
    each uniform as the normal probability of one normal.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference._mala_stretch import StreamReplay
    >>> replay = StreamReplay(np.array([0.5, -1.0, 0.0]))
    >>> replay.standard_normal(2).tolist(), replay.random(), replay.used
    ([0.5, -1.0], 0.5, 3)
    """

    def __init__(self, stream):
        self.stream = stream
        self.used = 0

    def standard_normal(self, d):
        self.used += d
        return self.stream[self.used - d : self.used].copy()

    def random(self):
        self.used += 1
        return 0.5 * math.erfc(-self.stream[self.used - 1] * math.sqrt(0.5))


def replayed_step(chain, logp_and_grad, replay, t, adaptation):
    """One interpreted transition of a compiled stretch, its draws replayed."""
    s = chain.s
    eps = s.frozen_eps if s.dual is None else math.exp(s.dual.log_step)
    s, info = mala_step(
        s,
        logp_and_grad,
        replay,
        step_size=eps,
        metric=chain.metric,
        bounds=chain.bounds,
    )
    chain.s = s
    s.n_rejected += info.failed
    s.n_accepted += info.accepted
    chain.accepted[t - chain.t0], chain.steps[t - chain.t0] = info.accepted, eps
    if s.dual is not None:
        s.dual.update(info.accept_prob)
        adaptation.collect(s, t, ([s.x], [s.grad]))


def chain_jump(chain, logp_and_grad, jumps, rng=None):
    """One mode-jumping move of the chain's state, counted in the chain."""
    s = chain.s
    accepted, x, logp, grad = mode_jump(
        s.x, s.logp, logp_and_grad, chain.rng if rng is None else rng, jumps,
        chain.bounds,
    )  # fmt: skip
    chain.n_jumps += 1
    chain.n_jumps_accepted += accepted
    if accepted:
        chain.s = moved_state(s, x, logp, grad)
