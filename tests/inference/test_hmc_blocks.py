"""Blocks of static HMC transitions that a density runs itself (``HMCBlock``).

:func:`run_hmc` hands the sampling phase's static transitions without mode
jumps to a density's ``hmc_block`` where it has one, and records what it
returns as if its own steps had run. These tests need no compiled density:
a density whose block is :func:`hmc_step` in a loop must give the chain of
the engine's own steps to the bit (so the block's bookkeeping, thinning,
statistics and reports are the engine's), and a density that draws from
the generator and then hands a block back must leave the chain unchanged
(the engine restores the generator). The compiled blocks themselves are
tested against the engine's steps in
``tests/estimators/test_vmcmc_hmc_block.py``.
"""

import numpy as np
import pytest

from skgp_bayes.inference import HMCBlock, HMCState, hmc_step, run_hmc

_FIELDS = (
    "samples",
    "log_density",
    "accepted",
    "divergent",
    "n_leapfrog",
    "energy",
    "step_sizes",
    "final_state",
)


def _logp(x):
    # a narrow and a wide direction: some transitions fail at the steps below
    scale = np.array([0.05, 1.0, 3.0])
    return -0.5 * np.sum((x / scale) ** 2), -x / scale**2


class _Plain:
    def __call__(self, x):
        return _logp(x)


class _LoopBlock(_Plain):
    """A density whose block is the engine's own step in a loop."""

    def __init__(self):
        self.calls = []

    def hmc_block(self, x, logp, grad, rng, step, inv_mass, bound, limit, retry, n):
        self.calls.append(n)
        state = HMCState(x, logp, grad)
        rows = {k: [] for k in ("x", "logp", "error", "acc", "div", "ret", "n", "h")}
        for _ in range(n):
            state, info = hmc_step(
                state, self, rng, step_size=step, inv_mass=inv_mass,
                max_leapfrog=bound, max_energy_error=limit,
                delayed_rejection=retry or None,
            )  # fmt: skip
            # the first stage's error back from its acceptance probability,
            # as the engine will turn it into one again
            error = -np.log(info.accept_prob) if info.accept_prob > 0 else np.inf
            for key, value in zip(
                rows,
                (state.x, state.logp, error, info.accepted, info.divergent,
                 info.retried, info.n_leapfrog, info.energy),
                strict=True,
            ):  # fmt: skip
                rows[key].append(value)
        return HMCBlock(
            state.x, state.logp, state.grad, np.array(rows["x"]),
            np.array(rows["logp"]), np.array(rows["error"]), np.array(rows["acc"]),
            np.array(rows["div"]), np.array(rows["ret"]),
            np.array(rows["n"], dtype=np.int64), np.array(rows["h"]),
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


@pytest.mark.parametrize("options", RUNS)
def test_a_block_of_the_engines_steps_gives_the_engines_chain(options):
    kwargs = dict(trajectory_length=np.pi, random_state=11, **options)
    density = _LoopBlock()
    blocked = run_hmc(density, np.full(3, 0.1), **kwargs)
    plain = run_hmc(_Plain(), np.full(3, 0.1), **kwargs)
    # the sampling phase went through blocks, ten or so of them
    assert sum(density.calls) == options["n_samples"] and len(density.calls) >= 5
    for field in _FIELDS:
        np.testing.assert_array_equal(
            getattr(blocked, field), getattr(plain, field), err_msg=field
        )
    # this block can give the engine only -log of each acceptance
    # probability, which exp does not take back to the last bit
    np.testing.assert_allclose(blocked.accept_prob, plain.accept_prob, rtol=1e-14)
    assert blocked.n_retried == plain.n_retried
    assert blocked.n_retried_accepted == plain.n_retried_accepted


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
    np.testing.assert_allclose(handed.accept_prob, plain.accept_prob, rtol=1e-14)


def test_no_blocks_for_nuts_or_with_mode_jumps():
    density = _LoopBlock()
    run_hmc(density, np.zeros(3), n_warmup=10, n_samples=20, algorithm="nuts",
            random_state=0)  # fmt: skip
    assert density.calls == []


def test_progress_is_reported_at_the_end_of_each_block():
    seen = []
    density = _LoopBlock()
    run_hmc(density, np.zeros(3), n_warmup=10, n_samples=90, random_state=0,
            progress=lambda done, total, stats: seen.append(done))  # fmt: skip
    # every warm-up transition, then the end of each block: ten reports
    # a run, as the engine's own lines come
    assert seen[:10] == list(range(1, 11))
    assert seen[10:] == list(np.cumsum(density.calls) + 10)
    assert seen[-1] == 100
