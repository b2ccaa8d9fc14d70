"""Blocks of static HMC transitions that a density runs itself (``HMCBlock``).

:func:`run_hmc` hands its static transitions and their mode jumps to a
density's ``hmc_block`` where it has one, warm-up's with copies of the
adaptation's state, and records what it returns as if its own steps had
run. These tests need no compiled density:
a density whose block is :func:`hmc_step` in a loop must give the chain of
the engine's own steps to the bit (so the block's bookkeeping, thinning,
statistics and reports are the engine's), and a density that draws from
the generator and then hands a block back must leave the chain unchanged
(the engine restores the generator). The compiled blocks themselves are
tested against the engine's steps in
``tests/estimators/test_vmcmc_hmc_block.py``.
"""

import math

import numpy as np
import pytest

from skgp_bayes.inference import HMCBlock, HMCState, hmc_step, run_hmc
from skgp_bayes.inference._hmc_state import TRACE_FIELDS
from skgp_bayes.inference.mode_jumps import ModeJumps, mode_jump

_FIELDS = (*TRACE_FIELDS, "final_state")


def _logp(x):
    # a narrow and a wide direction: some transitions fail at the steps below
    scale = np.array([0.05, 1.0, 3.0])
    return -0.5 * np.sum((x / scale) ** 2), -x / scale**2


class _Plain:
    def __call__(self, x):
        return _logp(x)


def _adapt(dual, moments, accumulate, prob, state):
    """WarmupAdaptation.update on a block's copies of its state."""
    if dual.size:
        mu, target, gamma, t0, kappa = dual[:5]
        dual[5] += 1.0
        t = dual[5]
        w = 1.0 / (t + t0)
        dual[6] = (1.0 - w) * dual[6] + w * (target - prob)
        dual[7] = mu - np.sqrt(t) / gamma * dual[6]
        eta = t ** (-kappa)
        dual[8] = eta * dual[7] + (1.0 - eta) * dual[8]
    if accumulate:
        count, mean, m2 = moments
        count[0] += 1
        point = np.stack([state.x, state.grad])
        delta = point - mean
        mean += delta / count[0]
        m2 += delta * (point - mean)


def _most_steps(step, dual, path):
    if dual.size:
        step = math.exp(dual[8] if dual[5] else dual[7])
    most, length = path
    return most if length <= 0 else int(min(most, max(1, math.ceil(length / step))))


class _LoopBlock(_Plain):
    """A density whose block is the engine's own step in a loop."""

    def __init__(self):
        self.calls = []

    def hmc_block(self, x, logp, grad, rng, step, inv_mass, path, limit, retry, n,
                  adaptation, jumps=None):  # fmt: skip
        self.calls.append(n)
        dual, moments, accumulate = adaptation
        state = HMCState(x, logp, grad)
        rows = {k: [] for k in ("x", "logp", "p", "acc", "div", "ret", "n", "h", "s")}
        counts = [0, 0]
        for i in range(n):
            used = step
            state, info = hmc_step(
                state, self, rng, step_size=step, inv_mass=inv_mass,
                max_leapfrog=_most_steps(step, dual, path), max_energy_error=limit,
                delayed_rejection=retry or None,
            )  # fmt: skip
            if jumps is not None and (jumps[1] + i + 1) % jumps[0].every == 0:
                jumped, *moved = mode_jump(state.x, state.logp, self, rng, jumps[0])
                counts = [counts[0] + 1, counts[1] + jumped]
                state = HMCState(*moved) if jumped else state
            _adapt(dual, moments, accumulate, info.accept_prob, state)
            if dual.size:
                step = math.exp(dual[7])
            for key, value in zip(
                rows,
                (state.x, state.logp, info.accept_prob, info.accepted, info.divergent,
                 info.retried, info.n_leapfrog, info.energy, used),
                strict=True,
            ):  # fmt: skip
                rows[key].append(value)
        return HMCBlock(
            state.x, state.logp, state.grad, np.array(rows["x"]),
            *(np.array(rows[k]) for k in ("logp", "p", "acc", "div", "ret")),
            np.array(rows["n"], dtype=np.int64), np.array(rows["h"]),
            np.array(rows["s"]), *counts,
        )  # fmt: skip


class _HandsBack(_LoopBlock):
    """A density that runs ``after`` blocks, then draws from the generator
    and hands the next block back."""

    def __init__(self, after):
        super().__init__()
        self.after, self.asked = after, 0

    def hmc_block(self, x, logp, grad, rng, *args):
        self.asked += 1
        if self.asked > self.after:
            rng.standard_normal(7)
            rng.random()
            return NotImplemented
        return super().hmc_block(x, logp, grad, rng, *args)


RUNS = [
    dict(n_warmup=40, n_samples=95, thin=1, delayed_rejection=None),
    dict(
        n_warmup=0,
        n_samples=60,
        thin=3,
        delayed_rejection=4,
        step_size=0.105,
        inv_mass=np.ones(3),
    ),
    dict(n_warmup=25, n_samples=50, thin=2, delayed_rejection=4),
]


# two modes of the narrow density's mixture, one far from where it is
_JUMPS = ModeJumps(
    np.array([[0.0, 0.0, 0.0], [0.1, 1.0, 2.0]]),
    np.stack([np.diag([0.06, 1.2, 3.5]), np.diag([0.05, 1.0, 3.0])]),
    np.log([2.0, 1.0]),
    every=3,
)


@pytest.mark.parametrize("options", [*RUNS, dict(RUNS[0], jumps=_JUMPS)])
def test_a_block_of_the_engines_steps_gives_the_engines_chain(options):
    kwargs = dict(trajectory_length=np.pi, random_state=11, **options)
    density = _LoopBlock()
    blocked = run_hmc(density, np.full(3, 0.1), **kwargs)
    plain = run_hmc(_Plain(), np.full(3, 0.1), **kwargs)
    # every transition went through blocks, warm-up's too
    total = options["n_warmup"] + options["n_samples"]
    assert sum(density.calls) == total and len(density.calls) >= 5
    for field in _FIELDS:
        np.testing.assert_array_equal(
            getattr(blocked, field), getattr(plain, field), err_msg=field
        )
    assert blocked.n_retried == plain.n_retried
    assert blocked.n_retried_accepted == plain.n_retried_accepted
    assert (blocked.n_jumps, blocked.n_jumps_accepted) == (
        plain.n_jumps,
        plain.n_jumps_accepted,
    )
    if "jumps" in options:  # the jumps' schedule runs across blocks
        assert plain.n_jumps == total // 3 and plain.n_jumps_accepted > 0


def test_second_stages_were_exercised():
    # the fixed long step above makes some first stages fail
    result = run_hmc(_LoopBlock(), np.full(3, 0.1), **RUNS[1], random_state=11)
    assert result.n_retried > 0


@pytest.mark.parametrize("after", [0, 2])
def test_a_block_handed_back_leaves_the_chain_unchanged(after):
    kwargs = dict(n_warmup=20, n_samples=80, delayed_rejection=4, random_state=5)
    density = _HandsBack(after)
    handed = run_hmc(density, np.full(3, 0.1), **kwargs)
    plain = run_hmc(_Plain(), np.full(3, 0.1), **kwargs)
    # asked once more after the blocks it ran, then never again
    assert density.asked == after + 1
    for field in _FIELDS:
        np.testing.assert_array_equal(getattr(handed, field), getattr(plain, field))


def test_no_blocks_for_nuts():
    density = _LoopBlock()
    run_hmc(density, np.zeros(3), n_warmup=10, n_samples=20, algorithm="nuts",
            random_state=0)  # fmt: skip
    assert density.calls == []


def test_progress_is_reported_at_the_end_of_each_block():
    seen = []
    density = _LoopBlock()
    run_hmc(density, np.zeros(3), n_warmup=10, n_samples=90, random_state=0,
            progress=lambda done, total, stats: seen.append(done))  # fmt: skip
    # at the end of each block; the blocks end at the engine's report lines
    # (every tenth of the run) and at warm-up's windows
    assert seen == list(np.cumsum(density.calls))
    assert seen[-1] == 100 and {10 * k for k in range(1, 11)} <= set(seen)
