"""The engines as a state and a one-step function, with the loop outside.

A loop written by hand over ``hmc_step``, ``svgd_step``, ``sgld_step`` and
``mala_step`` must repeat the ``run_*`` drivers bit for bit: the drivers
add adaptation, records and stopping, never numerics of their own.
"""

import numpy as np
import pytest

from skgp_bayes.inference import (
    LangevinMetric,
    hmc_init,
    hmc_step,
    mala_step,
    run_hmc,
    run_sgld,
    run_svgd,
    sgld_init,
    sgld_step,
    svgd_init,
    svgd_step,
)
from skgp_bayes.inference.adaptation import WarmupAdaptation

SD = np.array([0.1, 1.0, 5.0])
CORR = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, -0.3], [0.0, -0.3, 1.0]])
PREC = np.linalg.inv(CORR * np.outer(SD, SD))


def logp(x):
    """A correlated, badly scaled Gaussian; rows of ``x`` are points."""
    g = -np.asarray(x) @ PREC
    return 0.5 * np.sum(x * g, axis=-1), g


def _start(seed, shape):
    return SD * np.random.default_rng(seed).normal(size=shape)


# ----------------------------------------------------------------- HMC
def test_hmc_steps_with_fixed_settings_repeat_run_hmc():
    rng = np.random.default_rng(3)
    inv_mass = SD**2
    state = hmc_init(logp, _start(0, 3))
    draws = []
    for _ in range(50):
        state, _ = hmc_step(
            state, logp, rng, step_size=0.3, inv_mass=inv_mass, max_leapfrog=7
        )
        draws.append(state.x)
    res = run_hmc(
        logp,
        _start(0, 3),
        n_warmup=0,
        n_samples=50,
        step_size=0.3,
        inv_mass=inv_mass,
        max_leapfrog=7,
        random_state=np.random.default_rng(3),
    )
    np.testing.assert_array_equal(np.array(draws), res.samples)


def test_hmc_steps_with_warmup_adaptation_repeat_run_hmc():
    n_warmup, n_samples = 120, 40
    rng = np.random.default_rng(5)
    state = hmc_init(logp, _start(1, 3))
    warmup = WarmupAdaptation(0.05, np.ones(3), n_warmup)
    draws, accept = [], []
    for it in range(n_warmup + n_samples):
        bound_step = warmup.bound_step(it)
        state, info = hmc_step(
            state,
            logp,
            rng,
            step_size=warmup.step,
            inv_mass=warmup.inv_mass,
            max_leapfrog=min(10, int(np.ceil(np.pi / bound_step))),
        )
        accept.append(info.accept_prob)
        if it < n_warmup:
            warmup.update(it, state, info.accept_prob)
        else:
            draws.append(state.x)
    res = run_hmc(
        logp,
        _start(1, 3),
        n_warmup=n_warmup,
        n_samples=n_samples,
        step_size=0.05,
        inv_mass=np.ones(3),
        max_leapfrog=10,
        trajectory_length=np.pi,
        random_state=np.random.default_rng(5),
    )
    np.testing.assert_array_equal(np.array(draws), res.samples)
    np.testing.assert_array_equal(np.array(accept), res.accept_prob)
    np.testing.assert_array_equal(warmup.inv_mass, res.inv_mass)
    assert warmup.step == res.step_size


def test_hmc_step_rejects_a_divergent_path_and_keeps_the_state():
    def walled(x):
        return (-np.inf, x) if x[0] > 0.5 else (-0.5 * x @ x, -x)

    state = hmc_init(walled, np.zeros(1))
    new, info = hmc_step(
        state,
        walled,
        np.random.default_rng(0),
        step_size=50.0,
        inv_mass=np.ones(1),
        max_leapfrog=1,
    )
    assert new is state
    assert info.divergent and not info.accepted and info.accept_prob == 0.0


def test_hmc_init_refuses_a_start_outside_the_support():
    with pytest.raises(ValueError, match="not finite at x0"):
        hmc_init(lambda x: (-np.inf, x), np.zeros(2))


# ---------------------------------------------------------------- SVGD
def _svgd_by_hand(x0, max_iter, init_kw, step_kw):
    state = svgd_init(logp, x0, **init_kw)
    n_iter, converged = 0, False
    while n_iter < max_iter:
        state, info = svgd_step(state, logp, **step_kw)
        if info.converged:
            converged = True
            break
        n_iter += info.accepted
    return state, n_iter, converged


@pytest.mark.parametrize(
    "init_kw",
    [
        {"learning_rate": 0.05},
        {"learning_rate": 0.5, "preconditioner": np.diag(SD)},
        {
            "learning_rate": 0.5,
            "preconditioner": np.diag(SD),
            "kernel": "coordinatewise",
            "step_control": "per_coordinate",
        },
    ],
    ids=["adam", "whitened", "coordinatewise"],
)
def test_svgd_steps_repeat_run_svgd(init_kw):
    x0 = _start(2, (6, 3)) + SD
    step_kw = {"tol": 1e-3, "max_step": 0.5}
    state, n_iter, converged = _svgd_by_hand(x0, 150, init_kw, step_kw)
    kwargs = {k: v for k, v in init_kw.items()}
    res = run_svgd(logp, x0, max_iter=150, **kwargs, **step_kw)
    np.testing.assert_array_equal(state.particles, res.particles)
    assert (n_iter, converged) == (res.n_iter, res.converged)
    assert state.learning_rate == res.state["learning_rate"]


def test_svgd_state_checkpoint_continues_a_run():
    x0 = _start(3, (5, 3))
    first = run_svgd(logp, x0, max_iter=20, learning_rate=0.05, tol=0)
    state = svgd_init(logp, first.particles, learning_rate=1.0, resume=first.state)
    for _ in range(20):
        state, _ = svgd_step(state, logp, tol=0)
    whole = run_svgd(logp, x0, max_iter=40, learning_rate=0.05, tol=0)
    np.testing.assert_array_equal(state.particles, whole.particles)
    assert state.iterations == 40


def test_svgd_step_rejection_keeps_particles_and_halves_the_rate():
    x0 = _start(6, (4, 3))

    def cliff(x):  # finite at the start only: every move is rejected
        values, grads = logp(x)
        return (values if np.array_equal(x, x0) else values - np.inf), grads

    state = svgd_init(cliff, x0, learning_rate=1.0)
    new, info = svgd_step(state, cliff, max_step=10.0)
    assert not info.accepted and not info.converged
    np.testing.assert_array_equal(new.particles, state.particles)
    assert new.learning_rate == 0.5 and new.iterations == 0


# --------------------------------------------------------- SGLD and MALA
def test_sgld_steps_repeat_run_sgld():
    a, b, gamma = 0.01, 10.0, 0.55
    rng = np.random.default_rng(7)
    metric = LangevinMetric(SD**2, 3)
    state, draws = sgld_init(_start(4, 3)), []
    for t in range(200):
        state, info = sgld_step(
            state, logp, rng, step_size=a * (b + t) ** (-gamma), metric=metric
        )
        assert info.accepted
        draws.append(state.x)
    res = run_sgld(
        logp,
        _start(4, 3),
        n_iter=200,
        a=a,
        b=b,
        gamma=gamma,
        preconditioner=SD**2,
        rng=np.random.default_rng(7),
    )
    np.testing.assert_array_equal(np.array(draws), res.samples)


def test_mala_steps_repeat_run_sgld_with_metropolis():
    rng = np.random.default_rng(8)
    bounds = np.tile([-3.0, 3.0], (3, 1)) * SD[:, None]
    dense = np.linalg.inv(PREC)
    metric = LangevinMetric(dense, 3)
    state = sgld_init(_start(5, 3), logp)
    draws, accepted = [], []
    for _ in range(150):
        state, info = mala_step(
            state, logp, rng, step_size=0.8, metric=metric, bounds=bounds
        )
        draws.append(state.x)
        accepted.append(info.accepted)
    res = run_sgld(
        logp,
        _start(5, 3),
        n_iter=150,
        a=0.8,
        gamma=0.0,
        preconditioner=dense,
        bounds=bounds,
        metropolis=True,
        rng=np.random.default_rng(8),
    )
    np.testing.assert_array_equal(np.array(draws), res.samples)
    np.testing.assert_array_equal(np.array(accepted), res.accepted)
    assert 0 < np.mean(accepted) < 1  # both branches of the test ran


def test_mala_reuses_an_accepted_drift_only_for_its_gradient_and_metric():
    # An accepted proposal's reverse drift is the next step's forward drift;
    # the reuse must give the chain that recomputing it would, also where
    # the metric changes between steps (every 40 steps here) and where the
    # gradient is replaced (a state from copy_state).
    from skgp_bayes.inference.sgld import copy_state

    metrics = [LangevinMetric(np.linalg.inv(PREC), 3), LangevinMetric(SD**2, 3)]

    def chain(forget):
        rng = np.random.default_rng(3)
        state = sgld_init(_start(2, 3), logp)
        draws, reused = [], 0
        for t in range(200):
            if forget:
                state.drift_of = None
            reused += getattr(state, "drift_of", None) is state.grad
            if t == 100:
                state = copy_state(state)
            metric = metrics[(t // 40) % 2]
            state, _ = mala_step(state, logp, rng, step_size=0.6, metric=metric)
            draws.append(state.x)
        return np.array(draws), reused

    reusing, n_reused = chain(False)
    recomputing, _ = chain(True)
    np.testing.assert_array_equal(reusing, recomputing)
    assert 50 < n_reused < 200  # the reuse happened, and not at every step


def test_sgld_step_with_a_non_finite_gradient_fails_and_stays():
    state = sgld_init(np.ones(2))
    new, info = sgld_step(
        state,
        lambda x: (0.0, np.full(2, np.nan)),
        np.random.default_rng(0),
        step_size=0.1,
        metric=LangevinMetric(None, 2),
    )
    assert new is state and info.failed and not info.accepted


def test_sgld_init_with_a_density_refuses_a_non_finite_start():
    with pytest.raises(ValueError, match="not finite at the start"):
        sgld_init(np.zeros(2), lambda x: (np.nan, x))
