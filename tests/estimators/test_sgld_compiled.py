"""The exact Langevin chains' transitions in compiled blocks.

The reference for a compiled block is the interpreter on the same stream
of random numbers: a density whose ``mala_block`` hands every transition
back makes ``run_sgld`` take each one with ``mala_step`` (and each jump
with ``mode_jump``) from its own part of the stream, adapting the step
and the metric as the interpreted loop does. The compiled blocks must give
those chains bit for bit: the same arithmetic in the same order.
"""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgp_bayes import SGLDGPRegressor, _sgld_chains
from skgp_bayes._sgld_compiled import (
    CompiledLangevinDensity,
    InterpretedLangevinDensity,
    compiled_langevin,
)
from skgp_bayes._sgld_solvers import CholeskySolver
from skgp_bayes.inference import _mala_stretch, run_sgld
from skgp_bayes.inference.marginal_maps import MarginalMapTarget, SinhMaps
from skgp_bayes.inference.mode_jumps import ModeJumps
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.priors import Gamma, PriorSet
from skgp_bayes.targets import ExactMarginalTarget


class HandBack:
    """A density whose blocks take no transition: the interpreter takes all."""

    mala_block_steps = 97  # other cuts than the compiled blocks'

    def __init__(self, density):
        self.density = density

    def __call__(self, x):
        return self.density(x)

    def mala_block(self, state, step_size, dual, root, bounds, stream, t, jumps, out):
        return 1, 0, 0, np.zeros(3, dtype=np.int64), state.x, state.logp, state.grad


def _prior(p, family=Gamma):
    return PriorSet({"theta": slice(0, p)}, {"theta": family(2.0, 1.0)})


def _problem(n, d, degenerate=False, prior=None, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    if degenerate:  # duplicated rows, no noise: K needs jitter near the bound
        X = np.vstack([X[: n // 2], X[: n // 2]])
        y = np.sin(X[:, 0])
    kernel = ConstantKernel() * RBF(np.ones(d)) + WhiteKernel(0.1)
    adapter = KernelAdapter(kernel)
    target = ExactMarginalTarget(adapter, X, y, None)
    if prior is not None:
        target = ExactMarginalTarget(adapter, X, y, _prior(target.n_params, prior))
    guarded = CholeskySolver().guarded(target)
    low = -60.0 if degenerate else -6.0
    bounds = np.column_stack(
        [np.full(target.n_params, low), np.full(target.n_params, 6.0)]
    )
    return target, guarded, bounds


def _near_jumps(guarded, x0, bounds):
    """A two-component mixture where the chain goes (an exact move anyway)."""
    pilot = run_sgld(
        guarded,
        x0,
        n_iter=800,
        a=0.1,
        gamma=0.0,
        metropolis=True,
        adapt_steps=300,
        bounds=bounds,
        rng=np.random.default_rng(0),
    )
    draws = pilot.samples[300:]
    factor = np.linalg.cholesky(np.cov(draws.T) + 1e-9 * np.eye(draws.shape[1]))
    means = np.stack([draws.mean(0), draws.mean(0) + 0.3])
    return ModeJumps(means, np.stack([factor, 1.5 * factor]), np.log([1, 1]), every=2)


def _run(density, x0, bounds, jumps=None, preconditioner=None, **options):
    settings = dict(
        n_iter=1500,
        a=0.3,
        gamma=0.0,
        metropolis=True,
        adapt_steps=400,
        metric_windows=[(100, 200), (200, 350)],
    )
    settings.update(options)
    return run_sgld(
        density,
        x0,
        bounds=bounds,
        jumps=jumps,
        rng=np.random.default_rng(5),
        preconditioner=preconditioner,
        **settings,
    )


def _assert_same_chains(a, b):
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(a.step_sizes, b.step_sizes)
    np.testing.assert_array_equal(a.accepted, b.accepted)
    assert a.state.n_accepted == b.state.n_accepted
    assert a.state.n_rejected == b.state.n_rejected
    assert (a.n_jumps, a.n_jumps_accepted) == (b.n_jumps, b.n_jumps_accepted)
    assert a.state.frozen_eps == b.state.frozen_eps
    np.testing.assert_array_equal(a.state.metric, b.state.metric)


@pytest.mark.parametrize(
    "case",
    ["identity", "diagonal", "dense", "prior", "jumps", "maps", "jumps_and_jitter"],
)
def test_compiled_blocks_repeat_the_interpreted_chain(case):
    target, guarded, bounds = _problem(
        12 if case == "jumps_and_jitter" else 11,
        2 if case == "jumps_and_jitter" else 3,
        degenerate=case == "jumps_and_jitter",
        prior=Gamma if case == "prior" else None,
    )
    p = target.n_params
    x0 = np.zeros(p)
    x0[-1] = -30.0 if case == "jumps_and_jitter" else -2.0
    preconditioner, windows, jumps, maps = None, [(100, 200), (200, 350)], None, None
    if case == "diagonal":
        preconditioner, windows = np.linspace(0.5, 2.0, p), []
    elif case == "dense":
        A = np.eye(p) + 0.1 * np.random.default_rng(2).normal(size=(p, p))
        preconditioner = A @ A.T
    elif case in ("jumps", "jumps_and_jitter"):
        jumps = _near_jumps(guarded, x0, bounds)
    density = guarded
    if case == "maps":
        maps = SinhMaps(
            np.zeros(p), np.ones(p), np.linspace(-0.5, 0.5, p), np.full(p, 0.8)
        )
        density = MarginalMapTarget(guarded, maps)
        bounds = np.column_stack([maps.to_s(bounds[:, 0]), maps.to_s(bounds[:, 1])])
        x0 = maps.to_s(x0)
    compiled = compiled_langevin(density, target, maps)
    assert isinstance(compiled, CompiledLangevinDensity)
    reference = _run(
        HandBack(density), x0, bounds, jumps, preconditioner, metric_windows=windows
    )
    blocks = _run(compiled, x0, bounds, jumps, preconditioner, metric_windows=windows)
    _assert_same_chains(reference, blocks)
    assert reference.state.n_accepted > 0
    if jumps is not None:
        assert reference.n_jumps_accepted > 0


def test_a_block_hands_back_where_the_kernel_matrix_needs_jitter(monkeypatch):
    # Duplicated rows without noise near a noise bound of e^-60: the compiled
    # density cannot factorise K and the interpreter (which adds jitter)
    # takes those transitions and jumps from their part of the stream.
    taken = {"transitions": 0, "jumps": 0}
    step, jump = _mala_stretch.replayed_step, _mala_stretch.chain_jump

    def counted_step(*args):
        taken["transitions"] += 1
        return step(*args)

    def counted_jump(chain, logp_and_grad, jumps, rng=None):
        taken["jumps"] += rng is not None
        return jump(chain, logp_and_grad, jumps, rng)

    monkeypatch.setattr(_mala_stretch, "replayed_step", counted_step)
    monkeypatch.setattr(_mala_stretch, "chain_jump", counted_jump)
    target, guarded, bounds = _problem(12, 2, degenerate=True)
    x0 = np.zeros(target.n_params)
    x0[-1] = -30.0
    jumps = _near_jumps(guarded, x0, bounds)
    compiled = compiled_langevin(guarded, target)
    blocks = _run(compiled, x0, bounds, jumps, a=0.1)
    assert taken["transitions"] > 0 and taken["jumps"] > 0
    _assert_same_chains(_run(HandBack(guarded), x0, bounds, jumps, a=0.1), blocks)


def test_where_blocks_end_changes_no_draw(capsys):
    target, guarded, bounds = _problem(11, 2)
    x0 = np.zeros(target.n_params)
    jumps = _near_jumps(guarded, x0, bounds)
    runs = []
    for most, verbose in ((1024, 0), (7, 0), (1024, 1)):
        compiled = compiled_langevin(guarded, target)
        compiled.mala_block_steps = most
        runs.append(_run(compiled, x0, bounds, jumps, verbose=verbose))
    assert "iteration 150/1500" in capsys.readouterr().out
    for other in runs[1:]:
        _assert_same_chains(runs[0], other)


def test_without_a_compiled_form_the_chain_draws_the_same():
    # A prior of a family the compiled targets do not know: the density's
    # transitions are interpreted, on the stream the compiled blocks read,
    # so the chain is the compiled one's to the rounding of the two priors'
    # arithmetic.
    target, guarded, bounds = _problem(11, 2, prior=_UncompiledPrior)
    interpreted = compiled_langevin(guarded, target)
    assert isinstance(interpreted, InterpretedLangevinDensity)
    target, compiled_guarded, _ = _problem(11, 2, prior=Gamma)
    compiled = compiled_langevin(compiled_guarded, target)
    assert isinstance(compiled, CompiledLangevinDensity)
    x0 = np.zeros(target.n_params)
    jumps = _near_jumps(guarded, x0, bounds)
    a = _run(interpreted, x0, bounds, jumps)
    b = _run(compiled, x0, bounds, jumps)
    np.testing.assert_array_equal(a.accepted, b.accepted)
    np.testing.assert_allclose(a.samples, b.samples, rtol=0, atol=1e-9)
    assert a.n_jumps_accepted == b.n_jumps_accepted > 0


class _UncompiledPrior(Gamma):
    """A prior of a family the compiled targets do not know."""


def test_default_fit_equals_the_interpreted_chains(monkeypatch):
    # The estimator's whole run (warm-up, metric windows, blocks of the
    # run-length rule, threads) through compiled blocks against every
    # transition handed back: the same draws and predictions.
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(30, 2))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=30)
    compiled = SGLDGPRegressor(random_state=0).fit(X, y)
    monkeypatch.setattr(
        _sgld_chains,
        "compiled_langevin",
        lambda density, target, maps=None: HandBack(density),
    )
    handed_back = SGLDGPRegressor(random_state=0).fit(X, y)
    np.testing.assert_array_equal(compiled.chains_, handed_back.chains_)
    np.testing.assert_array_equal(compiled.predict(X), handed_back.predict(X))
