import numpy as np
import pytest

from skgp_bayes.exceptions import SamplerWarning
from skgp_bayes.inference import run_sgld, sgld_schedule


def _standard_normal(x):
    return 0.0, -x


def _variance_bias(h, n_dim=4000, n_iter=3000, burn=500, seed=0):
    """Bias of E[x^2] under constant-step SGLD on N(0, I): every coordinate
    is an independent chain, so one run gives n_dim chains at once."""
    res = run_sgld(
        _standard_normal,
        np.zeros(n_dim),
        n_iter=n_iter,
        a=h,
        gamma=0.0,
        rng=np.random.default_rng(seed),
    )
    return float(np.mean(res.samples[burn:] ** 2)) - 1.0


def test_bias_shrinks_in_proportion_to_step_size():
    # Unadjusted Langevin on N(0, 1) has stationary variance
    # 1 / (1 - h / 4), a bias of h / 4 + O(h^2): 0.111 at h = 0.4 and 0.0256
    # at h = 0.1 (ratio 4.3). With 4000 x 2500 correlated draws the Monte
    # Carlo sd of the estimate is about 0.0015 at h = 0.1, so the ratio is
    # known to +-15%.
    big = _variance_bias(0.4)
    small = _variance_bias(0.1)
    assert 0.09 < big < 0.13
    assert 0.015 < small < 0.035
    assert 3.0 < big / small < 6.0


def test_preconditioned_chain_recovers_correlated_gaussian():
    cov = np.array([[4.0, 0.8], [0.8, 0.25]])
    prec = np.linalg.inv(cov)
    res = run_sgld(
        lambda x: (0.0, -prec @ x),
        np.zeros(2),
        n_iter=20000,
        a=0.05,
        gamma=0.0,
        preconditioner=cov,
        rng=np.random.default_rng(1),
    )
    draws = res.samples[1000:]
    # ESS about 19000 / 40; the sd of a variance estimate is about 7%
    np.testing.assert_allclose(np.cov(draws.T), cov, rtol=0.25, atol=0.05)
    np.testing.assert_allclose(draws.mean(axis=0), 0.0, atol=0.3)


def test_diagonal_preconditioner_scales_noise():
    res = run_sgld(
        lambda x: (0.0, -x / np.array([9.0, 0.01])),
        np.zeros(2),
        n_iter=8000,
        a=0.05,
        gamma=0.0,
        preconditioner=np.array([9.0, 0.01]),
        rng=np.random.default_rng(2),
    )
    np.testing.assert_allclose(res.samples[500:].std(axis=0), [3.0, 0.1], rtol=0.2)


def test_schedule_endpoints_and_decay():
    a, b = sgld_schedule(0.1, 1e-4, 500, gamma=0.7)
    t = np.array([0, 499])
    np.testing.assert_allclose(a * (b + t) ** -0.7, [0.1, 1e-4])
    assert sgld_schedule(0.3, 0.3, 10) == (0.3, 1.0)
    with pytest.raises(ValueError, match="end <= start"):
        sgld_schedule(1e-3, 1e-1, 10)
    res = run_sgld(
        _standard_normal,
        np.zeros(1),
        n_iter=500,
        a=a,
        b=b,
        gamma=0.7,
        rng=np.random.default_rng(0),
    )
    np.testing.assert_allclose(res.step_sizes[[0, -1]], [0.1, 1e-4])
    assert np.all(np.diff(res.step_sizes) < 0)


def test_freezing_rule():
    # Gradient noise of variance s^2 = 400 per coordinate: the ratio
    # eps / 4 * lambda_max(V) is about 100 eps, below 0.05 once eps < 5e-4.
    rng_noise = np.random.default_rng(5)

    def noisy(x):
        return 0.0, -x + 20.0 * rng_noise.standard_normal(x.shape)

    a, b = sgld_schedule(1e-2, 1e-5, 3000)
    res = run_sgld(
        noisy,
        np.zeros(2),
        n_iter=3000,
        a=a,
        b=b,
        freeze_threshold=0.05,
        freeze_window=100,
        rng=np.random.default_rng(3),
    )
    assert res.frozen_at is not None
    t, ratio = res.freeze_ratios[-1]
    assert t == res.frozen_at and ratio < 0.05
    eps = res.step_sizes[res.frozen_at]
    assert np.all(res.step_sizes[res.frozen_at :] == eps)
    # the ratio tracks its definition: lambda_max(V) is about 400
    np.testing.assert_allclose(ratio, eps / 4.0 * 400.0, rtol=0.5)
    assert all(r >= 0.05 for _, r in res.freeze_ratios[:-1])
    never = run_sgld(
        noisy,
        np.zeros(2),
        n_iter=300,
        a=1e-2,
        gamma=0.0,
        freeze_threshold=1e-9,
        rng=np.random.default_rng(3),
    )
    assert never.frozen_at is None and len(never.freeze_ratios) == 3


def test_nan_gradient_is_rejected_and_halves_the_step():
    calls = []

    def flaky(x):
        calls.append(1)
        if len(calls) == 10:
            return 0.0, np.full_like(x, np.nan)
        return 0.0, -x

    with pytest.warns(SamplerWarning, match="rejected"):
        res = run_sgld(
            flaky,
            np.zeros(3),
            n_iter=30,
            a=0.1,
            gamma=0.0,
            rng=np.random.default_rng(0),
        )
    assert res.n_rejected == 1 and res.step_scale == 0.5
    np.testing.assert_array_equal(res.samples[9], res.samples[8])
    np.testing.assert_allclose(res.step_sizes[:9], 0.1)
    np.testing.assert_allclose(res.step_sizes[10:], 0.05)
    assert np.all(np.isfinite(res.samples))


def test_persistent_nan_aborts():
    with pytest.warns(SamplerWarning):
        with pytest.raises(FloatingPointError, match="3 consecutive"):
            run_sgld(
                lambda x: (0.0, np.full_like(x, np.nan)),
                np.zeros(2),
                n_iter=50,
                a=0.1,
                max_failures=3,
                rng=np.random.default_rng(0),
            )


def test_bounds_reflect():
    res = run_sgld(
        lambda x: (0.0, np.zeros_like(x)),
        np.zeros(1),
        n_iter=2000,
        a=0.5,
        gamma=0.0,
        bounds=np.array([[-1.0, 1.0]]),
        rng=np.random.default_rng(0),
    )
    assert res.samples.min() >= -1.0 and res.samples.max() <= 1.0
    # reflection keeps the flat density flat: about half the draws each side
    assert 0.4 < np.mean(res.samples > 0) < 0.6


def test_bad_preconditioner():
    for M in (np.array([1.0, -1.0]), np.eye(3), np.array([[1.0, 2.0], [2.0, 1.0]])):
        with pytest.raises(ValueError, match="preconditioner"):
            run_sgld(
                _standard_normal,
                np.zeros(2),
                n_iter=2,
                a=0.1,
                preconditioner=M,
                rng=np.random.default_rng(0),
            )


def test_same_seed_same_chain():
    kw = dict(n_iter=50, a=0.1, rng=None)
    first = run_sgld(
        _standard_normal, np.ones(2), **{**kw, "rng": np.random.default_rng(7)}
    )
    again = run_sgld(
        _standard_normal, np.ones(2), **{**kw, "rng": np.random.default_rng(7)}
    )
    np.testing.assert_array_equal(first.samples, again.samples)


@pytest.mark.parametrize("split", [100, 140, 420])  # before, at, after freezing
def test_resume_equals_one_run(split):
    # A noisy gradient, a decaying schedule, freezing, a NaN gradient (a
    # rejection halves the step) and bounds: everything the state carries.
    # The split points fall inside freezing windows.
    def make_gradient():
        rng = np.random.default_rng(5)
        calls = {"n": 0}

        def gradient(x):
            calls["n"] += 1
            if calls["n"] == 60:
                return 0.0, np.full(2, np.nan)
            return 0.0, -x + 20.0 * rng.standard_normal(x.shape)

        return gradient

    a, b = sgld_schedule(1e-3, 1e-5, 600)
    kw = dict(
        a=a,
        b=b,
        freeze_threshold=0.003,
        freeze_window=70,
        bounds=np.array([[-3.0, 3.0], [-3.0, 3.0]]),
    )
    with pytest.warns(SamplerWarning):
        whole = run_sgld(
            make_gradient(), np.zeros(2), n_iter=600, rng=np.random.default_rng(3), **kw
        )
    assert 100 < whole.frozen_at < 420 and whole.n_rejected == 1
    gradient, rng = make_gradient(), np.random.default_rng(3)
    with pytest.warns(SamplerWarning):
        first = run_sgld(gradient, np.zeros(2), n_iter=split, rng=rng, **kw)
    second = run_sgld(
        gradient, None, n_iter=600 - split, rng=rng, resume=first.state, **kw
    )
    np.testing.assert_array_equal(
        np.concatenate([first.samples, second.samples]), whole.samples
    )
    np.testing.assert_array_equal(
        np.concatenate([first.step_sizes, second.step_sizes]), whole.step_sizes
    )
    assert second.frozen_at == whole.frozen_at
    assert second.freeze_ratios == whole.freeze_ratios
    assert second.n_rejected == 1 and second.state.t == 600
    # the state is not mutated by the run that continued from it
    assert first.state.t == split
