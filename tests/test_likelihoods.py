"""Likelihoods: derivatives against finite differences, expectations against
adaptive 1-D quadrature (scipy) and large Monte Carlo, numerical stability."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate, stats
from scipy.special import expit, log_ndtr, logsumexp, ndtr, softmax
from sklearn.base import clone

from skgp_bayes.likelihoods import (
    Bernoulli,
    Gaussian,
    Poisson,
    RobustMax,
    Softmax,
    gauss_hermite,
    sobol_normal_blocks,
    standard_normal_draws,
)

EXTREMES = np.array([-30.0, -20.0, -5.0, 0.0, 5.0, 20.0, 30.0])


def single_latent(n_quadrature=20):
    return [
        Gaussian(noise_variance=0.3),
        Bernoulli(link="logit", n_quadrature=n_quadrature),
        Bernoulli(link="probit", n_quadrature=n_quadrature),
        Poisson(n_quadrature=n_quadrature),
    ]


def labels_for(lik, n, rng):
    if isinstance(lik, Bernoulli):
        return rng.integers(0, 2, n).astype(float)
    if isinstance(lik, Poisson):
        return rng.integers(0, 12, n).astype(float)
    return rng.normal(0.0, 2.0, n)


def central_difference(fun, x, h):
    return (fun(x + h) - fun(x - h)) / (2.0 * h)


def expect_quad(fun, mu, var):
    """E[fun(f)], f ~ N(mu, var), by adaptive quadrature over +-12 sd."""
    sd = np.sqrt(var)
    value, _ = integrate.quad(
        lambda f: fun(f) * stats.norm.pdf(f, mu, sd),
        mu - 12 * sd,
        mu + 12 * sd,
        epsabs=0.0,
        epsrel=1e-12,
        limit=400,
    )
    return value


# ---------------------------------------------------------------- quadrature


def test_gauss_hermite_rule():
    x, w = gauss_hermite(10)
    assert_allclose(w.sum(), 1.0, rtol=0, atol=1e-15)
    # Exact up to degree 2 n - 1 = 19, relative to the size of the terms.
    for k in range(20):
        exact = 0.0 if k % 2 else float(np.prod(np.arange(k - 1, 0, -2)))
        scale = w @ np.abs(x) ** k
        assert abs(w @ x**k - exact) <= 1e-12 * scale
    assert gauss_hermite(10)[0] is x  # cached
    assert not x.flags.writeable and not w.flags.writeable
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError):
            gauss_hermite(bad)


def test_standard_normal_draws():
    eps = standard_normal_draws(200, 3, random_state=1)
    assert eps.shape == (200, 3)
    assert_allclose(eps[:100], -eps[100:])
    assert_allclose(eps, standard_normal_draws(200, 3, random_state=1))
    with pytest.raises(ValueError, match="even"):
        standard_normal_draws(3, 2)
    assert standard_normal_draws(3, 2, antithetic=False).shape == (3, 2)


# ------------------------------------------------------- pointwise derivatives


def test_sobol_normal_blocks_shape_seed_and_bad_input():
    nodes = sobol_normal_blocks(3, 8, 5, random_state=4)
    assert nodes.shape == (3, 8, 5) and np.all(np.isfinite(nodes))
    np.testing.assert_array_equal(nodes, sobol_normal_blocks(3, 8, 5, 4))
    assert not np.array_equal(nodes, sobol_normal_blocks(3, 8, 5, 5))
    # The blocks are consecutive runs of one sequence: two blocks of 8 are
    # the first 16 points of the same scrambled sequence in one block.
    np.testing.assert_array_equal(
        nodes[:2].reshape(16, 5), sobol_normal_blocks(1, 16, 5, 4)[0]
    )
    with pytest.raises(ValueError, match="must be positive"):
        sobol_normal_blocks(0, 8, 2)


# Upper bounds on the RMS error of one block of quasi-random nodes over that
# of as many independent normal draws, for the probit integrand below.
# Measured over seeds 0-11 (400 estimates each): 0.57-0.66 at 2 nodes,
# 0.28-0.37 at 16 and 0.125-0.143 at 128; each bound is at least five of
# the ratio's sds (0.027, 0.024, 0.006) above the mean ratio.
_SOBOL_RMS_RATIO_BOUNDS = {2: 0.8, 16: 0.45, 128: 0.2}


@pytest.mark.statistical
@pytest.mark.parametrize("block_size", sorted(_SOBOL_RMS_RATIO_BOUNDS))
def test_sobol_normal_blocks_are_unbiased_and_beat_random_nodes(stat_seed, block_size):
    # E[Phi(a' z + b)] = Phi(b / sqrt(1 + |a|^2)) under N(0, I_4): a smooth,
    # bounded integrand, like a class probability. Over 400 seeds the mean
    # of one block's estimate, and of the mean over 16 blocks, must lie
    # within 5 standard errors of it (a false failure at most 2 x 6e-7 per
    # run for an unbiased rule). Quasi-random nodes must also err less than
    # as many independent normal draws, by the bounds above.
    a, b = np.array([1.0, -0.6, 0.4, 0.8]), 0.3
    exact = ndtr(b / np.sqrt(1.0 + a @ a))
    rng = np.random.default_rng(700 + block_size + stat_seed)
    first, pooled, random_nodes = [], [], []
    for _ in range(400):
        values = ndtr(sobol_normal_blocks(16, block_size, 4, rng) @ a + b)
        first.append(values[0].mean())
        pooled.append(values.mean())
        random_nodes.append(ndtr(rng.standard_normal((block_size, 4)) @ a + b).mean())
    for estimates in (np.array(first), np.array(pooled)):
        se = estimates.std(ddof=1) / np.sqrt(estimates.size)
        assert abs(estimates.mean() - exact) <= 5.0 * se
    rms_sobol = np.sqrt(np.mean((np.array(first) - exact) ** 2))
    rms_random = np.sqrt(np.mean((np.array(random_nodes) - exact) ** 2))
    assert rms_sobol < _SOBOL_RMS_RATIO_BOUNDS[block_size] * rms_random


@pytest.mark.parametrize("lik", single_latent(), ids=repr)
def test_pointwise_derivatives_match_finite_differences(lik):
    rng = np.random.default_rng(0)
    f = np.concatenate([rng.normal(0.0, 3.0, 40), EXTREMES, EXTREMES])
    y = labels_for(lik, f.size, rng)
    if isinstance(lik, Bernoulli):
        y[-2 * EXTREMES.size :] = np.repeat([0.0, 1.0], EXTREMES.size)
    for values in (lik.log_prob(y, f), lik.grad_log_prob(y, f)):
        assert values.shape == f.shape and np.all(np.isfinite(values))
    h = 1e-5 * np.maximum(1.0, np.abs(f))
    fd_grad = central_difference(lambda t: lik.log_prob(y, t), f, h)
    assert_allclose(lik.grad_log_prob(y, f), fd_grad, rtol=1e-6, atol=1e-8)
    fd_hess = central_difference(lambda t: lik.grad_log_prob(y, t), f, h)
    hess = lik.hess_diag_log_prob(y, f)
    assert hess.shape == f.shape and np.all(np.isfinite(hess))
    assert_allclose(hess, fd_hess, rtol=1e-5, atol=1e-8)


def test_bernoulli_log_prob_tails():
    y = np.array([1.0, 0.0, 1.0, 0.0])
    f = np.array([-40.0, 40.0, 40.0, -40.0])
    assert_allclose(
        Bernoulli().log_prob(y, f),
        [-40, -40, -np.log1p(np.exp(-40))] * 1 + [-np.log1p(np.exp(-40))],
        rtol=1e-12,
    )
    probit = Bernoulli(link="probit")
    assert_allclose(probit.log_prob(y, f), log_ndtr([-40.0, -40.0, 40.0, 40.0]))
    # The inverse Mills ratio tends to -f in the lower tail, and the second
    # derivative of log Phi to -1.
    assert_allclose(probit.grad_log_prob(1.0, -1e3), 1e3, rtol=1e-5)
    assert_allclose(probit.hess_diag_log_prob(1.0, -1e3), -1.0, rtol=1e-5)


# --------------------------------------------------- expectation derivatives


@pytest.mark.parametrize("lik", single_latent(), ids=repr)
def test_expected_log_prob_gradients(lik):
    rng = np.random.default_rng(1)
    n = 30
    mu = np.concatenate([rng.normal(0.0, 2.0, n), [-30.0, 30.0, -30.0, 30.0]])
    var = np.concatenate([rng.uniform(0.01, 3.0, n), [0.05, 0.05, 2.0, 2.0]])
    y = labels_for(lik, mu.size, rng)
    if isinstance(lik, Bernoulli):
        y[-4:] = [1.0, 0.0, 1.0, 0.0]  # the badly classified extremes
    elp, d_mu, d_var = lik.expected_log_prob(y, mu, var, grad=True)
    for a in (elp, d_mu, d_var):
        assert a.shape == mu.shape and np.all(np.isfinite(a))
    assert_allclose(elp, lik.expected_log_prob(y, mu, var))
    h = 1e-5 * np.maximum(1.0, np.abs(mu))
    fd_mu = central_difference(lambda m: lik.expected_log_prob(y, m, var), mu, h)
    assert_allclose(d_mu, fd_mu, rtol=1e-6, atol=1e-7)
    h = 1e-4 * var
    fd_var = central_difference(lambda v: lik.expected_log_prob(y, mu, v), var, h)
    assert_allclose(d_var, fd_var, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("lik", single_latent(), ids=repr)
def test_variance_gradient_is_continuous_at_zero(lik):
    # Below var = 1e-10 the rule's limit E[d2 log p] / 2 takes over from the
    # derivative of the rule; the two must join up, and var = 0 is allowed.
    rng = np.random.default_rng(2)
    mu = np.array([-3.0, -0.5, 0.0, 1.0, 4.0])
    y = labels_for(lik, mu.size, rng)
    limit = 0.5 * lik.hess_diag_log_prob(y, mu)
    for var in (0.0, 1e-14, 1e-11, 1e-9):
        _, d_mu, d_var = lik.expected_log_prob(y, mu, np.full(mu.size, var), grad=True)
        assert_allclose(d_mu, lik.grad_log_prob(y, mu), rtol=1e-7, atol=1e-9)
        assert_allclose(d_var, limit, rtol=1e-6, atol=1e-8)


def test_gaussian_log_noise_gradient():
    rng = np.random.default_rng(3)
    y, mu = rng.normal(size=20), rng.normal(size=20)
    var = rng.uniform(0.0, 2.0, 20)
    log_s2, h = np.log(0.4), 1e-6

    def elp(t):
        return Gaussian(noise_variance=float(np.exp(t))).expected_log_prob(y, mu, var)

    fd = (elp(log_s2 + h) - elp(log_s2 - h)) / (2 * h)
    assert_allclose(Gaussian(0.4).grad_log_noise(y, mu, var), fd, rtol=1e-7, atol=1e-9)
    # With var = 0 it is the derivative of log_prob itself.
    fd0 = (
        Gaussian(float(np.exp(log_s2 + h))).log_prob(y, mu)
        - Gaussian(float(np.exp(log_s2 - h))).log_prob(y, mu)
    ) / (2 * h)
    assert_allclose(Gaussian(0.4).grad_log_noise(y, mu), fd0, rtol=1e-7, atol=1e-9)


# -------------------------------------------- expectations against quadrature


@pytest.mark.parametrize(
    "n_quadrature, var_max", [(20, 0.5), (64, 2.0)], ids=["default", "wide"]
)
@pytest.mark.parametrize("kind", ["gaussian", "logit", "probit", "poisson"])
def test_expectations_match_scipy_quad(kind, n_quadrature, var_max):
    names = ["gaussian", "logit", "probit", "poisson"]
    lik = single_latent(n_quadrature)[names.index(kind)]
    rng = np.random.default_rng(4)
    n = 8
    mu = rng.uniform(-3.0, 3.0, n)
    var = rng.uniform(0.01, var_max, n)
    y = labels_for(lik, n, rng)
    if kind == "poisson":
        y[:2] = [25.0, 40.0]  # likelihood far narrower than N(mu, var)
    elp = lik.expected_log_prob(y, mu, var)
    lpd = lik.log_predictive_density(y, mu, var)
    pred = lik.predictive(mu, var)
    for i in range(n):
        ref = expect_quad(lambda f, i=i: lik.log_prob(y[i], f), mu[i], var[i])
        assert_allclose(elp[i], ref, rtol=1e-8, atol=1e-8)
        ref = expect_quad(lambda f, i=i: np.exp(lik.log_prob(y[i], f)), mu[i], var[i])
        assert_allclose(lpd[i], np.log(ref), rtol=1e-8, atol=1e-8)
        if kind == "gaussian":
            continue
        mean_y = np.exp if kind == "poisson" else (expit if kind == "logit" else ndtr)
        ref = expect_quad(mean_y, mu[i], var[i])
        assert_allclose(pred[i], ref, rtol=1e-8, atol=1e-10)
    if kind == "gaussian":
        mean, variance = pred
        assert_allclose(mean, mu)
        assert_allclose(variance, var + lik.noise_variance)


@pytest.mark.parametrize("lik", single_latent(), ids=repr)
def test_expectations_stable_at_extremes(lik):
    mu = np.repeat(EXTREMES, 4)
    var = np.tile([0.0, 1e-12, 0.1, 10.0], EXTREMES.size)
    for y_value in (0.0, 1.0):
        y = np.full(mu.size, y_value)
        for out in lik.expected_log_prob(y, mu, var, grad=True):
            assert np.all(np.isfinite(out))
        assert np.all(np.isfinite(lik.log_predictive_density(y, mu, var)))
    pred = lik.predictive(mu, var)
    assert np.all(np.isfinite(pred))
    if isinstance(lik, Bernoulli):
        assert np.all((pred >= 0) & (pred <= 1))
        assert_allclose(pred[mu == 30.0], 1.0, atol=1e-6)


def test_zero_variance_reduces_to_log_prob():
    rng = np.random.default_rng(5)
    f = rng.normal(0, 2, 10)
    for lik in single_latent():
        y = labels_for(lik, 10, rng)
        zero = np.zeros(10)
        assert_allclose(
            lik.expected_log_prob(y, f, zero), lik.log_prob(y, f), rtol=1e-12
        )
        assert_allclose(
            lik.log_predictive_density(y, f, zero), lik.log_prob(y, f), rtol=1e-12
        )


def test_probit_closed_forms():
    lik = Bernoulli(link="probit")
    mu, var = np.array([-2.0, 0.3, 1.5]), np.array([0.5, 2.0, 9.0])
    assert_allclose(lik.predictive(mu, var), ndtr(mu / np.sqrt(1 + var)))
    y = np.array([0.0, 1.0, 0.0])
    lpd = lik.log_predictive_density(y, mu, var)
    assert_allclose(lpd, log_ndtr((2 * y - 1) * mu / np.sqrt(1 + var)))
    assert_allclose(np.exp(lpd[[0, 2]]) + lik.predictive(mu, var)[[0, 2]], 1.0)


def test_bernoulli_predictive_probabilities():
    rng = np.random.default_rng(6)
    mu = np.concatenate([rng.normal(0, 10, 50), EXTREMES])
    var = np.concatenate([rng.uniform(0, 300, 50), np.full(EXTREMES.size, 3.0)])
    for link in ("logit", "probit"):
        lik = Bernoulli(link=link)
        p = lik.predictive(mu, var)
        assert np.all((p >= 0) & (p <= 1))
        assert_allclose(lik.predictive(-mu, var), 1 - p, rtol=1e-6, atol=1e-12)
        p0 = np.exp(lik.log_predictive_density(np.zeros(mu.size), mu, var))
        assert_allclose(p0 + p, 1.0, rtol=1e-6)


def test_logit_predictive_accurate_for_wide_latents():
    # A Gauss-Hermite rule on f alone is off by up to 1e-1 here (var = 100).
    lik = Bernoulli()
    mu = np.array([-30.0, -12.0, -4.0, 0.5, 3.0, 9.0, 25.0])
    for var in (2.6, 4.0, 10.0, 30.0, 100.0, 1000.0):
        p = lik.predictive(mu, np.full(mu.size, var))
        ref = [expect_quad(expit, m, var) for m in mu]
        assert_allclose(p, ref, rtol=1e-6, atol=1e-14)
        lpd = lik.log_predictive_density(np.zeros(mu.size), mu, np.full(mu.size, var))
        ref = [expect_quad(lambda f: expit(-f), m, var) for m in mu]
        assert_allclose(lpd, np.log(ref), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_log_class_probabilities_match_quadrature(link):
    # Both columns against adaptive quadrature: the smaller probability to a
    # relative 1e-6 (the rules' stated accuracy is about 1e-7), the larger
    # through its log; narrow, moderate and wide marginals, means far in
    # either tail, and zero variance (the likelihood at the mean).
    lik = Bernoulli(link=link)
    mu = np.array([-35.0, -8.0, -1.5, -0.2, 0.0, 0.7, 4.0, 12.0, 30.0])
    link_fn = expit if link == "logit" else stats.norm.cdf
    for var in (0.0, 1e-6, 0.05, 1.0, 2.4, 3.0, 20.0, 300.0):
        lp = lik.log_class_probabilities(mu, np.full(mu.size, var))
        assert lp.shape == (mu.size, 2)
        assert_allclose(np.logaddexp(lp[:, 0], lp[:, 1]), 0.0, atol=1e-12)
        if var == 0.0 or link == "probit":
            # probit: E[Phi(f)] = Phi(mu / sqrt(1 + var)) exactly, where the
            # quadrature of a 1e-256 tail would be the less accurate side
            scaled = mu / np.sqrt(1.0 + var)
            ref1, ref0 = link_fn(scaled), link_fn(-scaled)
        else:
            ref1 = np.array([expect_quad(link_fn, m, var) for m in mu])
            ref0 = np.array([expect_quad(lambda f: link_fn(-f), m, var) for m in mu])
        small = np.where(mu <= 0, np.exp(lp[:, 1]), np.exp(lp[:, 0]))
        small_ref = np.where(mu <= 0, ref1, ref0)
        assert_allclose(small, small_ref, rtol=1e-6, atol=1e-300)
        assert_allclose(lp[:, 1], np.log(ref1), rtol=1e-6, atol=1e-9)


def test_log_class_probabilities_agree_with_log_predictive_density():
    rng = np.random.default_rng(3)
    mu = rng.uniform(-20.0, 20.0, 400)
    var = np.exp(rng.uniform(np.log(1e-8), np.log(200.0), 400))
    lik = Bernoulli()
    lp = lik.log_class_probabilities(mu, var)
    for label in (0, 1):
        direct = lik.log_predictive_density(np.full(mu.size, float(label)), mu, var)
        assert_allclose(lp[:, label], direct, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("threads", [2, 3, 500])
def test_log_class_probabilities_on_threads_are_the_same(threads):
    # contiguous shares of the points, one compiled call each (more threads
    # than points: one point each)
    rng = np.random.default_rng(4)
    mu = rng.uniform(-20.0, 20.0, 401)
    var = np.exp(rng.uniform(np.log(1e-8), np.log(200.0), 401))
    lik = Bernoulli()
    serial = lik.log_class_probabilities(mu, var)
    np.testing.assert_array_equal(
        lik.log_class_probabilities(mu, var, threads=threads), serial
    )


def test_poisson_closed_forms():
    lik = Poisson()
    mu, var, y = np.array([0.2, -1.0]), np.array([0.3, 1.1]), np.array([3.0, 0.0])
    assert_allclose(lik.predictive(mu, var), np.exp(mu + var / 2))
    exposure = np.array([2.0, 5.0])
    # Exposure enters as a log offset on the latent mean.
    assert_allclose(
        lik.predictive(mu + np.log(exposure), var), exposure * np.exp(mu + var / 2)
    )
    elp = lik.expected_log_prob(y, mu, var)
    assert_allclose(elp, y * mu - np.exp(mu + var / 2) - [np.log(6.0), 0.0])


# ------------------------------------------------------------------ softmax


def _softmax_case(rng, n=6, c=3):
    mu = rng.normal(0, 1.5, (n, c))
    var = rng.uniform(0.05, 1.5, (n, c))
    y = rng.integers(0, c, n)
    return y, mu, var


def test_softmax_pointwise():
    lik = Softmax(n_classes=3)
    rng = np.random.default_rng(7)
    F = np.vstack(
        [rng.normal(0, 3, (20, 3)), [[30, -30, 0], [-30, 30, 30], [1e3, 0, -1e3]]]
    )
    y = rng.integers(0, 3, F.shape[0])
    lp = lik.log_prob(y, F)
    assert lp.shape == (F.shape[0],) and np.all(np.isfinite(lp)) and np.all(lp <= 0)
    assert_allclose(lp, F[np.arange(F.shape[0]), y] - logsumexp(F, axis=1))
    g, hd = lik.grad_log_prob(y, F), lik.hess_diag_log_prob(y, F)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(hd))
    h = 1e-6
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        assert_allclose(
            g[:, k],
            (lik.log_prob(y, F + e) - lik.log_prob(y, F - e)) / (2 * h),
            atol=1e-8,
        )
        fd = (lik.grad_log_prob(y, F + e)[:, k] - lik.grad_log_prob(y, F - e)[:, k]) / (
            2 * h
        )
        assert_allclose(hd[:, k], fd, atol=1e-8)
    # Batched latent draws broadcast over the leading axis.
    assert lik.log_prob(y, np.stack([F, F])).shape == (2, F.shape[0])


@pytest.mark.parametrize("per_point", [False, True])
def test_softmax_expectation_gradients(per_point):
    rng = np.random.default_rng(8)
    y, mu, var = _softmax_case(rng)
    mu[-2:] = [[30.0, -30.0, 0.0], [-30.0, 30.0, 30.0]]  # saturated softmax
    lik = Softmax(n_classes=3, n_samples=40)
    draws = rng.standard_normal((30, mu.shape[0], 3)) if per_point else None
    elp, d_mu, d_var = lik.expected_log_prob(y, mu, var, grad=True, draws=draws)
    assert elp.shape == (6,) and d_mu.shape == d_var.shape == (6, 3)
    for a in (elp, d_mu, d_var):
        assert np.all(np.isfinite(a))
    h = 1e-6  # |elp| reaches 60 here: difference quotients carry ~1e-8 rounding
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        fd = (
            lik.expected_log_prob(y, mu + e, var, draws=draws)
            - lik.expected_log_prob(y, mu - e, var, draws=draws)
        ) / (2 * h)
        assert_allclose(d_mu[:, k], fd, rtol=1e-6, atol=1e-7)
        fd = (
            lik.expected_log_prob(y, mu, var + e, draws=draws)
            - lik.expected_log_prob(y, mu, var - e, draws=draws)
        ) / (2 * h)
        assert_allclose(d_var[:, k], fd, rtol=1e-6, atol=1e-7)


def test_softmax_shared_draws_match_per_point_draws():
    # draws shared by all rows take a class-major path; the same draws
    # given once per row take the general one: both compute one estimate
    rng = np.random.default_rng(10)
    y, mu, var = _softmax_case(rng)
    mu[-1] = [40.0, -40.0, 0.0]  # saturated softmax
    lik = Softmax(n_classes=3, n_samples=40)
    eps = lik.default_draws()
    per_point = np.repeat(eps[:, None, :], mu.shape[0], axis=1)
    shared = lik.expected_log_prob(y, mu, var, grad=True)
    general = lik.expected_log_prob(y, mu, var, grad=True, draws=per_point)
    for a, b in zip(shared, general, strict=True):
        assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_softmax_uses_the_given_draws():
    rng = np.random.default_rng(9)
    y, mu, var = _softmax_case(rng)
    lik = Softmax(n_classes=3)
    eps = rng.standard_normal((12, 3))
    F = mu + np.sqrt(var) * eps[:, None, :]
    direct = np.mean(F[:, np.arange(6), y] - logsumexp(F, axis=-1), axis=0)
    assert_allclose(lik.expected_log_prob(y, mu, var, draws=eps), direct)
    # Default draws are antithetic, fixed and read-only.
    d = lik.default_draws()
    assert d.shape == (100, 3) and not d.flags.writeable
    assert_allclose(d[:50], -d[50:])
    assert_allclose(Softmax(n_classes=3).default_draws(), d)
    assert_allclose(
        lik.expected_log_prob(y, mu, var), lik.expected_log_prob(y, mu, var, draws=d)
    )
    with pytest.raises(ValueError, match="draws"):
        lik.expected_log_prob(y, mu, var, draws=np.zeros((5, 4)))


def _product_gauss_hermite(fun, mu, var, n_nodes=40):
    """Brute-force E[fun(F)] over a full product rule; fun maps (..., C) -> (...)."""
    x, w = gauss_hermite(n_nodes)
    c = mu.shape[-1]
    grids = np.meshgrid(*([x] * c), indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=-1)  # (Q^C, C)
    weights = np.prod(np.meshgrid(*([w] * c), indexing="ij"), axis=0).ravel()
    F = mu[:, None, :] + np.sqrt(var)[:, None, :] * nodes
    return fun(F) @ weights


@pytest.mark.statistical
@pytest.mark.parametrize("c", [2, 3])
def test_softmax_expectations_within_monte_carlo_error(c, stat_seed):
    rng = np.random.default_rng(10 + stat_seed)
    y, mu, var = _softmax_case(rng, n=5, c=c)
    lik = Softmax(n_classes=c, n_samples=200, random_state=3 + stat_seed)
    # Reference by a product Gauss-Hermite rule (smooth integrand).
    ref_elp = _product_gauss_hermite(
        lambda F: (
            np.take_along_axis(F, y[:, None, None], -1)[..., 0] - logsumexp(F, -1)
        ),
        mu,
        var,
    )
    ref_p = np.stack(
        [
            _product_gauss_hermite(
                lambda F, k=k: np.exp(F[..., k] - logsumexp(F, -1)), mu, var
            )
            for k in range(c)
        ],
        axis=1,
    )
    if c == 2:  # the reference itself against the exact 1-D reduction
        d_mu = mu[np.arange(5), y] - mu[np.arange(5), 1 - y]
        for i in range(5):
            exact = expect_quad(lambda t: -np.logaddexp(0, -t), d_mu[i], var[i].sum())
            assert_allclose(ref_elp[i], exact, rtol=1e-10)
    # Standard errors of the antithetic estimator, from its 100 pair means
    # (independent); 5 of them on 5 (1 + c) entries, a t tail with 99
    # degrees of freedom of 2.5e-6 each: false failure below 5e-5.
    eps = lik.default_draws()
    F = mu + np.sqrt(var) * eps[:, None, :]
    lp = lik.log_prob(y, F)
    pairs = 0.5 * (lp[:100] + lp[100:])
    se = pairs.std(axis=0, ddof=1) / np.sqrt(100)
    elp = lik.expected_log_prob(y, mu, var)
    assert np.all(np.abs(elp - ref_elp) < 5 * se + 1e-12)
    p = lik.predictive(mu, var)
    probs = np.exp(F - logsumexp(F, -1, keepdims=True))
    pair_p = 0.5 * (probs[:100] + probs[100:])
    se_p = pair_p.std(axis=0, ddof=1) / np.sqrt(100)
    assert np.all(np.abs(p - ref_p) < 5 * se_p + 1e-12)
    lpd = lik.log_predictive_density(y, mu, var)
    assert_allclose(np.exp(lpd), p[np.arange(5), y], rtol=1e-10)


@pytest.mark.statistical
def test_softmax_against_large_monte_carlo(stat_seed):
    rng = np.random.default_rng(11 + stat_seed)
    c = 5
    y, mu, var = _softmax_case(rng, n=4, c=c)
    lik = Softmax(n_classes=c, n_samples=400, random_state=stat_seed)
    eps = rng.standard_normal((200_000, 1, c))
    lp = lik.log_prob(y, mu + np.sqrt(var) * eps)
    ref, ref_se = lp.mean(0), lp.std(0) / np.sqrt(lp.shape[0])
    est = lik.expected_log_prob(y, mu, var)
    own = lik.log_prob(y, mu + np.sqrt(var) * lik.default_draws()[:, None, :])
    own_se = (0.5 * (own[:200] + own[200:])).std(0, ddof=1) / np.sqrt(200)
    # Both estimates are independent means (200,000 draws; 200 antithetic
    # pairs): the difference has standard error hypot(ref_se, own_se); 5 of
    # them on 4 points: false failure below 4 x 1e-6 (t with 199 degrees of
    # freedom for the pairs).
    assert np.all(np.abs(est - ref) < 5 * np.hypot(ref_se, own_se))


def test_softmax_predictive_rows():
    rng = np.random.default_rng(12)
    mu = np.vstack([rng.normal(0, 5, (30, 4)), [[30, -30, 0, 0], [1e3, -1e3, 0, 0]]])
    var = rng.uniform(0.01, 20, mu.shape)
    p = Softmax(n_classes=4).predictive(mu, var)
    assert np.all((p >= 0) & (p <= 1))
    assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert np.all(
        np.isfinite(Softmax(4).log_predictive_density(np.zeros(32, int), mu, var))
    )


@pytest.mark.parametrize("per_point", [False, True])
def test_softmax_predictive_is_the_mean_softmax_of_the_given_draws(per_point):
    # the compiled loop against the NumPy form it replaced, saturated rows too
    rng = np.random.default_rng(13)
    mu = np.vstack([rng.normal(0, 3, (20, 3)), [[700.0, -700.0, 0.0]]])
    var = rng.uniform(0.01, 9, mu.shape)
    shape = (16, mu.shape[0], 3) if per_point else (16, 3)
    eps = rng.standard_normal(shape)
    F = mu + np.sqrt(var) * (eps if per_point else eps[:, None, :])
    expected = np.mean(softmax(F, axis=-1), axis=0)
    got = Softmax(n_classes=3).predictive(mu, var, draws=eps)
    assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


# ---------------------------------------------------------------- robust-max


def test_robustmax_pointwise():
    lik = RobustMax(n_classes=3, epsilon=0.06)
    F = np.array([[2.0, 1.0, 0.0], [0.0, 30.0, -30.0]])
    assert_allclose(np.exp(lik.log_prob(np.array([0, 0]), F)), [0.94, 0.03])
    assert np.all(lik.grad_log_prob([0, 0], F) == 0)
    assert np.all(lik.hess_diag_log_prob([0, 0], F) == 0)


def test_robustmax_probability_two_classes_closed_form():
    rng = np.random.default_rng(13)
    n = 20
    mu, var = rng.normal(0, 2, (n, 2)), rng.uniform(0.05, 2.0, (n, 2))
    y = rng.integers(0, 2, n)
    rows = np.arange(n)
    exact = ndtr((mu[rows, y] - mu[rows, 1 - y]) / np.sqrt(var.sum(1)))
    # The rule resolves the other CDFs on the scale of f_y's spread, so its
    # accuracy depends on the variance ratio (documented on the class).
    ratio = var[rows, y] / var[rows, 1 - y]
    p20 = RobustMax(n_classes=2).prob_is_max(y, mu, var)
    assert_allclose(p20[ratio < 1.5], exact[ratio < 1.5], rtol=1e-8, atol=1e-12)
    p60 = RobustMax(n_classes=2, n_quadrature=60).prob_is_max(y, mu, var)
    assert_allclose(p60[ratio < 4], exact[ratio < 4], rtol=1e-8, atol=1e-12)
    assert_allclose(p60, exact, rtol=1e-3)


def test_robustmax_probability_three_classes_against_quad():
    rng = np.random.default_rng(14)
    mu, var = rng.normal(0, 1, (4, 3)), rng.uniform(0.2, 1.5, (4, 3))
    y = np.array([0, 1, 2, 1])
    p = RobustMax(n_classes=3, n_quadrature=60).prob_is_max(y, mu, var)
    sd = np.sqrt(var)
    for i in range(4):
        others = [j for j in range(3) if j != y[i]]

        def integrand(f, i=i, others=others):
            dens = stats.norm.pdf(f, mu[i, y[i]], sd[i, y[i]])
            return dens * np.prod([ndtr((f - mu[i, j]) / sd[i, j]) for j in others])

        ref, _ = integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-12)
        assert_allclose(p[i], ref, rtol=1e-8, atol=1e-12)


@pytest.mark.statistical
def test_robustmax_against_monte_carlo(stat_seed):
    # Quadrature against the mean of N = 100,000 draws: standard error sd /
    # sqrt(N); 5 of them on 5 expected log-likelihoods and 20 probabilities
    # (bounded terms): false failure below 25 x 5.7e-7 ~ 1.5e-5. Each term
    # takes one of two values, by whether a class is the argmax; one that
    # is so in none (or all) of the draws has a sample sd of 0, yet its
    # frequency h need not be 0 (seeds 39 and 40 drew such classes). So the
    # tolerance also allows h = 15 / N times the two values' gap: no hit in
    # N draws at a frequency above that has probability below exp(-15).
    rng = np.random.default_rng(15 + stat_seed)
    c, n, N = 4, 5, 100_000
    mu, var = rng.normal(0, 1, (n, c)), rng.uniform(0.3, 1.0, (n, c))
    y = rng.integers(0, c, n)
    lik = RobustMax(n_classes=c, epsilon=0.05)
    F = mu + np.sqrt(var) * rng.standard_normal((N, n, c))
    rare = 15.0 / N
    lp = lik.log_prob(y, F)
    ref, se = lp.mean(0), lp.std(0) / np.sqrt(N)
    gap = np.log(0.95) - np.log(0.05 / (c - 1))
    assert np.all(np.abs(lik.expected_log_prob(y, mu, var) - ref) < 5 * se + rare * gap)
    hits = np.argmax(F, -1)[..., None] == np.arange(c)
    values = np.where(hits, 0.95, 0.05 / (c - 1))
    probs, se_p = values.mean(0), values.std(0) / np.sqrt(N)
    gap_p = 0.95 - 0.05 / (c - 1)
    assert np.all(np.abs(lik.predictive(mu, var) - probs) < 5 * se_p + rare * gap_p)


def test_robustmax_expectation_gradients():
    rng = np.random.default_rng(16)
    n, c = 6, 4
    mu = rng.normal(0, 1.5, (n, c))
    var = rng.uniform(0.05, 2.0, (n, c))
    mu[-1] = [30.0, -30.0, 0.0, 1.0]  # extreme gaps stay finite
    y = rng.integers(0, c, n)
    lik = RobustMax(n_classes=c, epsilon=0.01)
    elp, d_mu, d_var = lik.expected_log_prob(y, mu, var, grad=True)
    for a in (elp, d_mu, d_var):
        assert np.all(np.isfinite(a))
    assert_allclose(d_mu.sum(axis=1), 0.0, atol=1e-12)  # shift invariance
    for k in range(c):
        e = np.zeros(c)
        e[k] = 1e-6
        fd = (
            lik.expected_log_prob(y, mu + e, var)
            - lik.expected_log_prob(y, mu - e, var)
        ) / 2e-6
        assert_allclose(d_mu[:, k], fd, rtol=1e-6, atol=1e-9)
        e = np.zeros((n, c))
        e[:, k] = 1e-5 * var[:, k]
        fd = (
            lik.expected_log_prob(y, mu, var + e)
            - lik.expected_log_prob(y, mu, var - e)
        ) / (2 * e[:, k])
        assert_allclose(d_var[:, k], fd, rtol=1e-6, atol=1e-9)


def test_robustmax_predictive_rows():
    rng = np.random.default_rng(17)
    mu = np.vstack([rng.normal(0, 5, (30, 3)), [[30, -30, 0], [-30, 30, 30]]])
    var = rng.uniform(0.01, 10, mu.shape)
    lik = RobustMax(n_classes=3, epsilon=0.02)
    p = lik.predictive(mu, var)
    assert np.all((p >= 0.01 - 1e-15) & (p <= 1))
    assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    y = rng.integers(0, 3, mu.shape[0])
    assert_allclose(lik.log_predictive_density(y, mu, var), np.log(p[np.arange(32), y]))


def test_multiclass_results_do_not_depend_on_row_blocking(monkeypatch):
    from skgp_bayes.likelihoods import multiclass

    rng = np.random.default_rng(18)
    y, mu, var = _softmax_case(rng, n=11, c=3)
    per_point = rng.standard_normal((8, 11, 3))
    cases = [
        (Softmax(3, n_samples=8), {}),
        (Softmax(3), {"draws": per_point}),
        (RobustMax(3, n_quadrature=7), {}),
    ]

    def outputs():
        res = []
        for lik, kw in cases:
            res.extend(lik.expected_log_prob(y, mu, var, grad=True, **kw))
            res.append(lik.predictive(mu, var, **kw))
            res.append(lik.log_predictive_density(y, mu, var, **kw))
        return res

    whole = outputs()
    monkeypatch.setattr(multiclass, "_BLOCK_ELEMENTS", 40)  # a few rows each
    for a, b in zip(whole, outputs(), strict=True):
        assert_allclose(a, b, rtol=1e-14, atol=1e-15)


# -------------------------------------------------------- parameters, errors


def test_parameters_and_clone():
    for lik in single_latent() + [Softmax(3, n_samples=10), RobustMax(4, epsilon=0.1)]:
        twin = clone(lik)
        assert type(twin) is type(lik) and twin.get_params() == lik.get_params()
        assert repr(twin) == repr(lik)
    lik = Bernoulli().set_params(link="probit")
    assert lik.link == "probit"
    assert Softmax(3).n_latent == 3 and Gaussian().n_latent == 1
    with pytest.raises(ValueError, match="Invalid parameter"):
        Gaussian().set_params(scale=1.0)


@pytest.mark.parametrize(
    "factory",
    [
        lambda: Gaussian(noise_variance=0.0),
        lambda: Gaussian(noise_variance=np.inf),
        lambda: Bernoulli(link="cauchit"),
        lambda: Bernoulli(n_quadrature=0),
        lambda: Softmax(n_classes=1),
        lambda: Softmax(n_classes=3, n_samples=7),
        lambda: RobustMax(n_classes=3, epsilon=0.0),
        lambda: RobustMax(n_classes=3, epsilon=1.0),
    ],
)
def test_invalid_parameters(factory):
    with pytest.raises(ValueError):
        factory()


def test_invalid_inputs():
    mu, var = np.zeros((2, 3)), np.ones((2, 3))
    for lik in (Softmax(3), RobustMax(3)):
        with pytest.raises(ValueError, match="labels"):
            lik.expected_log_prob(np.array([0, 3]), mu, var)
        with pytest.raises(ValueError, match="strictly positive"):
            lik.expected_log_prob(np.array([0, 1]), mu, np.zeros((2, 3)))
        with pytest.raises(ValueError, match="shape"):
            lik.predictive(np.zeros((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="integer"):
        Softmax(3).log_prob(np.array([0.5]), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        Poisson().expected_log_prob(1.0, 0.0, -1.0)
