import warnings

import numpy as np
import pytest
from scipy import stats

from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.exceptions import SamplerWarning
from skgp_bayes.inference import run_sgld, sgld_schedule


def _standard_normal(x):
    return 0.0, -x


# Two-sided normal tail beyond 5 standard errors: the false-failure rate of
# one entry checked at 5 SE.
P5 = 5.7e-7


def _variance_bias(h, seed, n_dim=4000, n_iter=3000, burn=500):
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


def _ar1_square_se(variance, rho, n_draws):
    """Standard error of the mean of x^2 over a stationary Gaussian AR(1).

    ``x^2`` has variance ``2 v^2`` and autocorrelation ``rho^(2k)``, so an
    integrated autocorrelation time ``(1 + rho^2) / (1 - rho^2)``.
    """
    tau = (1 + rho**2) / (1 - rho**2)
    return np.sqrt(2 * variance**2 * tau / n_draws)


@pytest.mark.statistical
def test_bias_shrinks_in_proportion_to_step_size(stat_seed):
    # Unadjusted Langevin x' = (1 - h/2) x + sqrt(h) e on N(0, 1) is an AR(1)
    # with rho = 1 - h/2 and stationary variance 1 / (1 - h/4) exactly: a
    # bias of h / (4 - h), 0.111 at h = 0.4 and 0.0256 at h = 0.1. The
    # burn-in leaves rho^1000 < 1e-22 of the start. Standard error of each
    # estimate: _ar1_square_se over 4000 independent chains of 2500 draws
    # (0.0011 and 0.0020); 5 of them: false failure 2 * P5 ~ 1e-6.
    for h, seed in ((0.4, 0), (0.1, 1)):
        bias = _variance_bias(h, seed=2 * stat_seed + seed)
        variance = 1 / (1 - h / 4)
        se = _ar1_square_se(variance, 1 - h / 2, 4000 * 2500)
        assert abs(bias - h / (4 - h)) < 5 * se, (h, bias, se)


def _preconditioned_gaussian_run(cov, a, n_iter, seed):
    """Exactly preconditioned SGLD (M = cov) on N(0, cov).

    With ``M grad log p(x) = -x`` the chain is ``x' = (1 - a/2) x + sqrt(a)
    M^1/2 e``: every direction is an AR(1) with ``rho = 1 - a/2`` and the
    stationary covariance is ``cov / (1 - a/4)``.
    """
    prec = np.linalg.inv(cov)
    res = run_sgld(
        lambda x: (0.0, -prec @ x),
        np.zeros(cov.shape[0]),
        n_iter=n_iter,
        a=a,
        gamma=0.0,
        preconditioner=cov,
        rng=np.random.default_rng(seed),
    )
    return res.samples


@pytest.mark.statistical
def test_preconditioned_chain_recovers_correlated_gaussian(stat_seed):
    cov = np.array([[4.0, 0.8], [0.8, 0.25]])
    a, n_iter, burn = 0.05, 40000, 1000  # rho^burn = 1e-11
    draws = _preconditioned_gaussian_run(cov, a, n_iter, 1 + stat_seed)[burn:]
    stationary = cov / (1 - a / 4)
    rho = 1 - a / 2
    n = draws.shape[0]
    # Standard errors: a mean has integrated autocorrelation time
    # (1 + rho) / (1 - rho), so sd * sqrt(tau / n); a covariance entry (a
    # mean of products, autocorrelation rho^(2k)) has
    # sqrt((S_aa S_bb + S_ab^2) tau2 / n) with tau2 = (1 + rho^2) / (1 -
    # rho^2). 5 of them over 2 means and 3 entries: false failure 5 * P5.
    tau = (1 + rho) / (1 - rho)
    tau2 = (1 + rho**2) / (1 - rho**2)
    sd = np.sqrt(np.diag(stationary))
    np.testing.assert_array_less(np.abs(draws.mean(axis=0)), 5 * sd * np.sqrt(tau / n))
    se_cov = np.sqrt((np.outer(sd**2, sd**2) + stationary**2) * tau2 / n)
    np.testing.assert_array_less(np.abs(np.cov(draws.T) - stationary), 5 * se_cov)


@pytest.mark.statistical
def test_diagonal_preconditioner_scales_noise(stat_seed):
    var = np.array([9.0, 0.01])
    a, burn = 0.05, 1000
    res = run_sgld(
        lambda x: (0.0, -x / var),
        np.zeros(2),
        n_iter=16000,
        a=a,
        gamma=0.0,
        preconditioner=var,
        rng=np.random.default_rng(2 + stat_seed),
    )
    draws = res.samples[burn:]
    # As above, each coordinate is an AR(1) with rho = 1 - a/2 and variance
    # var / (1 - a/4). The relative standard error of a variance estimate is
    # sqrt(2 tau2 / n) (about 0.07 here); 5 of them, two coordinates: false
    # failure 2 * P5.
    rho = 1 - a / 2
    tau2 = (1 + rho**2) / (1 - rho**2)
    rel_se = np.sqrt(2 * tau2 / draws.shape[0])
    rel_error = draws.var(axis=0) / (var / (1 - a / 4)) - 1
    np.testing.assert_array_less(np.abs(rel_error), 5 * rel_se)


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


@pytest.mark.statistical
def test_freezing_rule(stat_seed):
    # Gradient noise of variance s^2 = 400 per coordinate: the ratio
    # eps / 4 * lambda_max(V) is about 100 eps, below 0.05 once eps < 5e-4.
    rng_noise = np.random.default_rng(5 + stat_seed)
    seen = []

    def noisy(x):
        grad = -x + 20.0 * rng_noise.standard_normal(x.shape)
        seen.append(grad)
        return 0.0, grad

    a, b = sgld_schedule(1e-2, 1e-5, 3000)
    res = run_sgld(
        noisy,
        np.zeros(2),
        n_iter=3000,
        a=a,
        b=b,
        freeze_threshold=0.05,
        freeze_window=100,
        rng=np.random.default_rng(3 + stat_seed),
    )
    assert res.frozen_at is not None
    t, ratio = res.freeze_ratios[-1]
    assert t == res.frozen_at and ratio < 0.05
    eps = res.step_sizes[res.frozen_at]
    assert np.all(res.step_sizes[res.frozen_at :] == eps)
    assert all(r >= 0.05 for _, r in res.freeze_ratios[:-1])
    # The ratio is its definition on the window's own gradients (no
    # sampling error: the same 100 gradients, round-off only).
    window = np.array(seen[t - 99 : t + 1])
    V = np.cov(window, rowvar=False)
    np.testing.assert_allclose(ratio, eps / 4 * np.linalg.eigvalsh(V)[-1], rtol=1e-10)
    # and the window's covariance estimates V = (400 + Var x) I, Var x < 2
    # here: 99 trace(V) / 400 is chi-square with 198 degrees of freedom (up
    # to the 0.5% of Var x), checked between its 5.7e-7 quantiles each side.
    stat = 99 * np.trace(V) / 400
    assert stats.chi2.ppf(P5 / 2, 198) < stat < 1.005 * stats.chi2.ppf(1 - P5 / 2, 198)
    never = run_sgld(
        noisy,
        np.zeros(2),
        n_iter=300,
        a=1e-2,
        gamma=0.0,
        freeze_threshold=1e-9,
        rng=np.random.default_rng(3 + stat_seed),
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


@pytest.mark.statistical
def test_bounds_reflect(stat_seed):
    res = run_sgld(
        lambda x: (0.0, np.zeros_like(x)),
        np.zeros(1),
        n_iter=2000,
        a=0.5,
        gamma=0.0,
        bounds=np.array([[-1.0, 1.0]]),
        rng=np.random.default_rng(stat_seed),
    )
    assert res.samples.min() >= -1.0 and res.samples.max() <= 1.0
    # Reflection keeps the flat density flat: half the draws each side. The
    # indicator's standard error is 0.5 / sqrt(ESS), its ESS estimated from
    # the chain itself (about 1000 of the 2000 draws); 5 of them: false
    # failure P5.
    above = (res.samples[:, 0] > 0).astype(float)
    ess = effective_sample_size(above[None, :])
    assert abs(above.mean() - 0.5) < 5 * 0.5 / np.sqrt(ess)


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


# ---------------------------------------------------------------- MALA
def _gaussian(cov):
    prec = np.linalg.inv(cov)
    return lambda x: (-0.5 * float(x @ prec @ x), -prec @ x)


@pytest.mark.statistical
def test_mala_is_exact_where_unadjusted_langevin_is_biased(stat_seed):
    # At h = 1 with M = cov, unadjusted Langevin has stationary covariance
    # cov / (1 - h / 4): every variance 33% too large. The Metropolis
    # adjustment makes the chain exact. The standard error of each variance
    # is sd(x^2 - var) / sqrt(ESS), the ESS of the squared deviations
    # estimated from the chain (about 5000 of 20000 draws, a relative
    # standard error near 2%, so the 33% bias is 16 of them); 5 standard
    # errors on 2 variances: false failure 2 * P5 ~ 1e-6.
    cov = np.array([[4.0, 0.8], [0.8, 0.25]])
    res = run_sgld(
        _gaussian(cov),
        np.zeros(2),
        n_iter=20000,
        a=1.0,
        gamma=0.0,
        preconditioner=cov,
        metropolis=True,
        rng=np.random.default_rng(11 + stat_seed),
    )
    draws = res.samples[500:]
    assert 0.3 < res.accepted.mean() < 1.0  # proposals are really rejected
    squares = draws**2
    ess = effective_sample_size(squares[None])
    se = squares.std(axis=0) / np.sqrt(ess)
    np.testing.assert_array_less(np.abs(squares.mean(axis=0) - np.diag(cov)), 5 * se)


def test_mala_adaptation_freezes_the_averaged_step():
    res = run_sgld(
        _gaussian(np.eye(3)),
        np.zeros(3),
        n_iter=400,
        a=0.1,
        gamma=0.0,
        metropolis=True,
        adapt_steps=150,
        rng=np.random.default_rng(0),
    )
    assert res.frozen_at == 149
    assert np.all(res.step_sizes[150:] == res.step_sizes[150])
    assert len(np.unique(res.step_sizes[:150])) > 100  # adapted at every step
    assert res.state.dual is None and res.state.n_accepted == res.accepted.sum()


@pytest.mark.parametrize("split", [60, 150, 300])  # inside, at, after warm-up
def test_mala_resume_equals_one_run(split):
    kw = dict(a=0.3, gamma=0.0, metropolis=True, adapt_steps=150)
    target = _gaussian(np.array([[1.0, 0.5], [0.5, 2.0]]))
    whole = run_sgld(target, np.ones(2), n_iter=400, rng=np.random.default_rng(4), **kw)
    rng = np.random.default_rng(4)
    first = run_sgld(target, np.ones(2), n_iter=split, rng=rng, **kw)
    second = run_sgld(
        target, None, n_iter=400 - split, rng=rng, resume=first.state, **kw
    )
    for name in ("samples", "step_sizes", "accepted"):
        np.testing.assert_array_equal(
            np.concatenate([getattr(first, name), getattr(second, name)]),
            getattr(whole, name),
        )
    assert second.frozen_at == whole.frozen_at == 149


@pytest.mark.statistical
def test_mala_rejects_proposals_outside_the_box(stat_seed):
    # A flat density on [-1, 1]: proposals outside are rejected (the target
    # is zero there), so the chain stays inside and uniform. Indicator
    # standard error 0.5 / sqrt(ESS) from the chain; 5 of them: false
    # failure P5.
    res = run_sgld(
        lambda x: (0.0, np.zeros_like(x)),
        np.zeros(1),
        n_iter=4000,
        a=0.5,
        gamma=0.0,
        bounds=np.array([[-1.0, 1.0]]),
        metropolis=True,
        rng=np.random.default_rng(stat_seed),
    )
    assert res.samples.min() >= -1.0 and res.samples.max() <= 1.0
    above = (res.samples[:, 0] > 0).astype(float)
    ess = effective_sample_size(above[None, :])
    assert abs(above.mean() - 0.5) < 5 * 0.5 / np.sqrt(ess)


def test_mala_non_finite_proposals_are_rejected_quietly():
    def target(x):
        if x[0] > 0.5:
            return float("nan"), np.full_like(x, np.nan)
        return -0.5 * float(x @ x), -x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = run_sgld(
            target,
            np.zeros(1),
            n_iter=300,
            a=1.0,
            gamma=0.0,
            metropolis=True,
            rng=np.random.default_rng(0),
        )
    assert res.n_rejected > 0 and np.all(res.samples <= 0.5)
    with pytest.raises(ValueError, match="not finite at the start"):
        run_sgld(
            target,
            np.ones(1),
            n_iter=3,
            a=1.0,
            metropolis=True,
            rng=np.random.default_rng(0),
        )


@pytest.mark.parametrize("split", [40, 75, 150, 300])  # in, at end of a window, after
def test_mala_resume_with_metric_windows_equals_one_run(split):
    kw = dict(
        a=0.3,
        gamma=0.0,
        metropolis=True,
        adapt_steps=150,
        metric_windows=((15, 75), (75, 135)),
    )
    target = _gaussian(np.array([[1.0, 0.5], [0.5, 2.0]]))
    whole = run_sgld(target, np.ones(2), n_iter=400, rng=np.random.default_rng(4), **kw)
    rng = np.random.default_rng(4)
    first = run_sgld(target, np.ones(2), n_iter=split, rng=rng, **kw)
    second = run_sgld(
        target, None, n_iter=400 - split, rng=rng, resume=first.state, **kw
    )
    for name in ("samples", "step_sizes", "accepted"):
        np.testing.assert_array_equal(
            np.concatenate([getattr(first, name), getattr(second, name)]),
            getattr(whole, name),
        )
    np.testing.assert_array_equal(second.state.metric, whole.state.metric)


def test_metric_windows_find_a_badly_scaled_covariance():
    # Variances 100 and 0.01 at correlation 0.9, started with M = I: the
    # chain crosses a fraction of the wide direction in the first window,
    # but for a Gaussian Cov(grad) = S^-1 Cov(x) S^-1 over any draws, so the
    # estimate does not need the crossing. Only the five pseudo-draws of
    # each covariance's diagonal pull it off S (by a few percent at 120
    # draws). Without adaptation the metric stays I, whose whitened
    # spectrum spans 1e4; a bound of 2 each way fails for any estimate
    # that has not found both scales and the correlation.
    sd = np.array([10.0, 0.1])
    cov = np.outer(sd, sd) * np.array([[1.0, 0.9], [0.9, 1.0]])
    res = run_sgld(
        _gaussian(cov),
        np.zeros(2),
        n_iter=300,
        a=0.1,
        gamma=0.0,
        metropolis=True,
        adapt_steps=300,
        metric_windows=((30, 150), (150, 270)),
        rng=np.random.default_rng(0),
    )
    root = np.linalg.cholesky(cov)
    whitened = np.linalg.solve(root, np.linalg.solve(root, res.state.metric).T)
    lam = np.linalg.eigvalsh(whitened)
    assert 0.5 < lam[0] and lam[-1] < 2.0


def test_fisher_metric_finds_a_gaussian_from_a_corner():
    # Draws from a small region of N(0, S): their covariance is 1e-3 of S,
    # the geometric mean with the gradients' inverse covariance is S up to
    # the shrinkage of 5 pseudo-draws in 2005 (eps = 0.25%) toward the
    # diagonals. It moves Cov(grad), whose correlation matrix (that of
    # S^-2) has condition number 35, by at most 35 eps = 9% in its whitened
    # coordinates, and the geometric mean halves that: 5% bounds it.
    from skgp_bayes.inference.sgld import fisher_metric

    S = np.array([[4.0, -1.5, 0.3], [-1.5, 2.0, 0.2], [0.3, 0.2, 0.5]])
    xs = np.random.default_rng(1).normal(size=(2000, 3)) * 0.05 + 1.0
    grads = -xs @ np.linalg.inv(S)
    root = np.linalg.cholesky(S)
    metric = fisher_metric(xs, grads)
    lam = np.linalg.eigvalsh(np.linalg.solve(root, np.linalg.solve(root, metric).T))
    assert 0.95 < lam[0] and lam[-1] < 1.05
    assert fisher_metric(np.ones((10, 3)), grads[:10]) is None  # never moved


def test_fisher_metric_gives_a_coordinate_piled_on_its_bound_its_own_spread():
    # log p = -(x0 - a x1)^2 / (2 s^2) - r x1 on x1 >= 0: x1 is an
    # exponential pile of rate r on its bound (mean gradient -r), x0 given
    # x1 is N(a x1, s^2). The Gaussian closest in Fisher divergence takes
    # x1's nearly constant gradient for a wide direction; the piled x1 keeps
    # its draws' variance 1 / r^2 (relative sd of a sample variance of
    # 5,000 exponential draws: sqrt(8 / 5000) = 4%, so 20% is five of them)
    # and no covariance with x0, whose own estimate uses x0's draws and
    # gradients alone: s sqrt(s^2 + a^2 / r^2) (the geometric mean of
    # Var x0 and 1 / Var grad0 = s^2), to the same 20%.
    from skgp_bayes.inference.sgld import fisher_metric

    a, s, r = 3.0, 0.5, 40.0
    rng = np.random.default_rng(0)
    x1 = rng.exponential(1 / r, 5000)
    x0 = a * x1 + s * rng.standard_normal(5000)
    xs = np.column_stack([x0, x1])
    resid = x0 - a * x1
    grads = np.column_stack([-resid / s**2, a * resid / s**2 - r])
    bounds = np.array([[-10.0, 10.0], [0.0, 10.0]])
    metric = fisher_metric(xs, grads, bounds)
    assert metric[0, 1] == metric[1, 0] == 0.0
    np.testing.assert_allclose(metric[1, 1], 1 / r**2, rtol=0.2)
    np.testing.assert_allclose(metric[0, 0], s * np.sqrt(s**2 + a**2 / r**2), rtol=0.2)
    # Without the bounds, or far from the bound (a chain still drifting
    # towards its mode has gradients that do not average to zero either),
    # the Fisher estimate is kept.
    far = xs + np.array([0.0, 5.0])
    for metric in (fisher_metric(xs, grads), fisher_metric(far, grads, bounds)):
        assert metric is None or metric[0, 1] != 0.0


def _quartic(x):
    # p(x) ~ exp(-x^4 / 4): a light tail, where MALA's drift overshoots.
    return -0.25 * float(np.sum(x**4)), -(x**3)


def test_truncated_drift_moves_a_chain_out_of_a_light_tail():
    # From x = 8 the gradient is -512: MALA's proposal 8 - 0.25 * 512 lands
    # near -120 and is rejected every time (Roberts and Tweedie 1996); with
    # the drift capped at 10 (sqrt(d) + 1) = 20 the chain moves by about 5
    # and reaches the bulk.
    from skgp_bayes.inference import LangevinMetric, mala_step, sgld_init

    rng = np.random.default_rng(0)
    metric = LangevinMetric(None, 1)
    state = sgld_init(np.array([8.0]), _quartic)
    for _ in range(200):
        state, _ = mala_step(state, _quartic, rng, step_size=0.5, metric=metric)
    assert abs(state.x[0]) < 3.0


@pytest.mark.statistical
def test_truncated_drift_keeps_the_target_exact(stat_seed):
    # N(0, 0.01^2) with the identity metric: the gradient -x / 1e-4 has a
    # norm near 100 at a typical draw, five times the cap of 20, so the
    # drift is truncated almost everywhere. Three transitions from exact
    # draws must leave exact draws; a reverse density that forgot the
    # truncation failed this at KS p-values far below 1e-8. KS test at
    # level 1e-4.
    from skgp_bayes.inference import LangevinMetric, mala_step, sgld_init

    sd = 0.01

    def narrow(x):
        return -0.5 * float(x @ x) / sd**2, -x / sd**2

    rng = np.random.default_rng([stat_seed, 7])
    metric = LangevinMetric(None, 1)
    after = []
    for x in sd * rng.standard_normal(4000):
        state = sgld_init(np.array([x]), narrow)
        for _ in range(3):
            state, _ = mala_step(state, narrow, rng, step_size=1e-4, metric=metric)
        after.append(state.x[0])
    assert stats.kstest(np.array(after) / sd, "norm").pvalue > 1e-4
