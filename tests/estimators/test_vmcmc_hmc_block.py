"""The compiled blocks of static HMC transitions of variational MCMC's chains.

:meth:`TrajectoryTarget.hmc_block` runs blocks of static transitions
(warm-up's with its adaptation) in one compiled call
(:mod:`skgp_bayes.variational_mcmc._hmc_block_numba`), with their mode
jumps. Its chain must be the engine's own steps' chain to the bit, for
every target kind, with and without sinh maps, through failed first stages
and their second stages, and through accepted and rejected jumps: both
integrate each trajectory with the same compiled function, evaluate a
jump's proposal through the same layers and draw the same numbers from the
same generator, so any difference is a fault of the block, not rounding.
"""

import numpy as np
import pytest
from _vmcmc_trajectory_cases import CASES, case_ids, density_for, exact_needing_jitter

from skgp_bayes.inference import run_hmc
from skgp_bayes.inference._hmc_state import TRACE_FIELDS
from skgp_bayes.inference.mode_jumps import ModeJumps
from skgp_bayes.variational_mcmc._trajectory import TrajectoryTarget

_FIELDS = (*TRACE_FIELDS, "final_state")


class _StepByStep:
    """The same density and compiled trajectories, without blocks."""

    def __init__(self, density):
        self.density = density

    def __call__(self, w):
        return self.density(w)

    def leapfrog(self, *args):
        return self.density.leapfrog(*args)


def _assert_same_chain(blocked, plain):
    for field in _FIELDS:
        np.testing.assert_array_equal(
            getattr(blocked, field), getattr(plain, field), err_msg=field
        )
    assert (blocked.n_retried, blocked.n_retried_accepted) == (
        plain.n_retried,
        plain.n_retried_accepted,
    )


@pytest.mark.parametrize("kind,family,with_maps", CASES, ids=case_ids(CASES))
def test_compiled_blocks_give_the_engines_chain(kind, family, with_maps):
    rng = np.random.default_rng(7)
    density = density_for(kind, family, with_maps, rng)
    d = density.shift.size
    calls = []
    original = TrajectoryTarget.hmc_block

    def counting(self, *args):
        calls.append(args[-2])  # the block's transitions
        return original(self, *args)

    runs = (
        # adapted, then sampled in blocks
        dict(n_warmup=40, n_samples=80, thin=2),
        # a fixed step too long for the narrow directions: first stages
        # fail and second stages run
        dict(n_warmup=0, n_samples=60, step_size=0.6, inv_mass=np.ones(d)),
    )
    retried = 0
    for options in runs:
        kwargs = dict(
            trajectory_length=np.pi, delayed_rejection=4, random_state=3, **options
        )
        TrajectoryTarget.hmc_block = counting
        try:
            blocked = run_hmc(density, np.zeros(d), **kwargs)
        finally:
            TrajectoryTarget.hmc_block = original
        plain = run_hmc(_StepByStep(density), np.zeros(d), **kwargs)
        _assert_same_chain(blocked, plain)
        retried += plain.n_retried
    assert sum(calls) == 180  # every transition ran in a block, warm-up's too
    assert retried > 0


def _jumps_near(density, d):
    """A start in the chain's typical set and a two-component mixture where
    the chain goes, one component shifted (a move is exact whatever the
    mixture; this one is taken about half the time)."""
    pilot = run_hmc(_StepByStep(density), np.zeros(d), n_warmup=150, n_samples=300,
                    trajectory_length=np.pi, random_state=0)  # fmt: skip
    mean = pilot.samples.mean(axis=0)
    factor = np.linalg.cholesky(np.cov(pilot.samples.T) + 1e-9 * np.eye(d))
    means = np.stack([mean, mean + 0.2 * np.diag(factor)])
    factors = np.stack([factor, 1.5 * factor])
    jumps = ModeJumps(means, factors, np.log([2.0, 1.0]), every=2)
    return pilot.samples[-1], jumps


# With a prior on every hyperparameter: without one the chains drift to the
# bounds, where the mixture is never taken.
JUMP_CASES = [case for case in CASES if case[1] is not None]


@pytest.mark.parametrize("kind,family,with_maps", JUMP_CASES, ids=case_ids(JUMP_CASES))
def test_compiled_blocks_jump_as_the_engine_does(kind, family, with_maps):
    density = density_for(kind, family, with_maps, np.random.default_rng(7))
    start, jumps = _jumps_near(density, density.shift.size)
    calls = []
    original = TrajectoryTarget.hmc_block

    def counting(self, *args, **kwargs):
        calls.append(args[-2])
        return original(self, *args, **kwargs)

    kwargs = dict(n_warmup=40, n_samples=80, trajectory_length=np.pi,
                  delayed_rejection=4, random_state=3, jumps=jumps)  # fmt: skip
    TrajectoryTarget.hmc_block = counting
    try:
        blocked = run_hmc(density, start, **kwargs)
    finally:
        TrajectoryTarget.hmc_block = original
    plain = run_hmc(_StepByStep(density), start, **kwargs)
    _assert_same_chain(blocked, plain)
    assert (blocked.n_jumps, blocked.n_jumps_accepted) == (
        plain.n_jumps,
        plain.n_jumps_accepted,
    )
    assert sum(calls) == 120 and plain.n_jumps == 60
    assert 0 < plain.n_jumps_accepted < plain.n_jumps


def test_a_transition_needing_the_interpreted_target_hands_the_block_back():
    """A singular exact kernel matrix: the compiled factorisation fails in the
    block's first transition, and the engine's steps run the chain (through
    the interpreted target, which adds jitter) from the same generator."""
    density, target = exact_needing_jitter()
    d = density.shift.size
    w = np.zeros(d)
    _, grad = density(w)
    rng = np.random.default_rng(0)
    sampling = (np.zeros(0), (np.zeros(1, np.int64), np.zeros((2, d)),
                              np.zeros((2, d))), False)  # fmt: skip
    block = density.hmc_block(w, density(w)[0], grad, rng, 1e-3, np.ones(d), (2, 0.0),
                              1000.0, 4, 5, sampling)  # fmt: skip
    assert block is NotImplemented
    kwargs = dict(n_warmup=0, n_samples=6, step_size=1e-3, max_leapfrog=2,
                  inv_mass=np.ones(d), random_state=1)  # fmt: skip
    blocked = run_hmc(density, w, **kwargs)
    plain = run_hmc(_StepByStep(density), w, **kwargs)
    _assert_same_chain(blocked, plain)
    assert target.max_jitter > 0
