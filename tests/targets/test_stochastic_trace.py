"""The stochastic-trace target: exact value, unbiased gradient.

Monte Carlo tolerances are 5 standard errors per entry (a two-sided normal
tail of 5.7e-7 each), the standard error being the sample sd over the
square root of the number of independent draws (fresh probes every call).
"""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgp_bayes.kernels import KernelAdapter, force_generic
from skgp_bayes.priors import Gamma, PriorSet
from skgp_bayes.targets import ExactMarginalTarget, StochasticTraceTarget


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (30, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30)
    adapter = KernelAdapter(ConstantKernel(1.0) * RBF([0.8, 1.5]))
    priors = PriorSet({"a": slice(0, 4)}, {"a": Gamma(2.0, 1.0)})
    params = np.append(adapter.kernel.theta, np.log(0.1))
    return adapter, X, y, priors, params


def _draws(target, params, n_draws):
    pairs = [target.logp_and_grad(params) for _ in range(n_draws)]
    return np.array([v for v, _ in pairs]), np.array([g for _, g in pairs])


@pytest.mark.statistical
@pytest.mark.parametrize("fixed_noise", [False, True])
def test_value_exact_and_gradient_unbiased(problem, fixed_noise, stat_seed):
    adapter, X, y, priors, params = problem
    log_noise = params[-1] if fixed_noise else None
    point = params[:-1] if fixed_noise else params
    prior = None if fixed_noise else priors
    exact = ExactMarginalTarget(adapter, X, y, prior, log_noise)
    value, g_exact = exact.logp_and_grad(point)
    target = StochasticTraceTarget(
        adapter,
        X,
        y,
        prior,
        log_noise,
        rng=np.random.default_rng(11 + stat_seed),
        n_probes=2,
    )
    values, grads = _draws(target, point, 2000)
    np.testing.assert_allclose(values, value, rtol=1e-10)
    mean = grads.mean(axis=0)
    se = grads.std(axis=0, ddof=1) / np.sqrt(grads.shape[0])
    # 5 SE on at most 4 entries: false failure 4 x 5.7e-7 per case.
    assert np.all(np.abs(mean - g_exact) <= 5 * se)
    assert np.all(se > 1e-6)  # the trace term really is estimated


@pytest.mark.statistical
def test_variance_falls_as_one_over_the_probes(problem, stat_seed):
    # The trace estimate averages S independent probe terms: its variance is
    # 1/S times one probe's, and the exact data term adds none. The log of a
    # sample variance over N draws has sd sqrt((kurtosis - 1) / N), the
    # kurtosis taken from the sample; 5 such sds on the difference of two
    # logs, 4 entries: false failure 4 x 5.7e-7.
    adapter, X, y, priors, params = problem
    log_var, sd2 = {}, {}
    for n_probes in (1, 8):
        target = StochasticTraceTarget(
            adapter,
            X,
            y,
            priors,
            rng=np.random.default_rng(12 + stat_seed),
            n_probes=n_probes,
        )
        grads = _draws(target, params, 2000)[1]
        centred = grads - grads.mean(axis=0)
        var = np.mean(centred**2, axis=0)
        kurtosis = np.mean(centred**4, axis=0) / var**2
        log_var[n_probes] = np.log(var)
        sd2[n_probes] = (kurtosis - 1) / grads.shape[0]
    gap = log_var[8] - log_var[1] + np.log(8.0)
    assert np.all(np.abs(gap) <= 5 * np.sqrt(sd2[1] + sd2[8]))


def test_split_and_jitter_follow_the_exact_target(problem):
    adapter, X, y, priors, params = problem
    target = StochasticTraceTarget(adapter, X, y, priors, rng=np.random.default_rng(0))
    theta, log_noise = target.split(params)
    np.testing.assert_array_equal(theta, params[:-1])
    assert log_noise == params[-1]
    assert target.n_params == params.size
    target.logp_and_grad(params)
    assert target.max_jitter == 0.0


@pytest.mark.parametrize(
    "kernel",
    [
        ConstantKernel(1.3) * RBF([0.8, 1.5]),
        ConstantKernel(0.7) * RBF(1.1) + WhiteKernel(0.05),
        RBF([0.6, 2.0]) + WhiteKernel(0.2),
    ],
    ids=["ard", "isotropic_white", "ard_white"],
)
@pytest.mark.parametrize("fixed_noise", [False, True])
def test_rbf_path_matches_the_generic_contraction(problem, kernel, fixed_noise):
    # Same probes (same seed), two routes to the same contraction: the RBF
    # path's GEMMs against the generic kernel-derivative contraction.
    _, X, y, _, _ = problem
    log_noise = np.log(0.1) if fixed_noise else None
    results, routes = [], []
    for adapter in (KernelAdapter(kernel), force_generic(kernel)):
        params = adapter.kernel.theta + 0.1
        if not fixed_noise:
            params = np.append(params, np.log(0.1))
        target = StochasticTraceTarget(
            adapter, X, y, None, log_noise, rng=np.random.default_rng(3), n_probes=3
        )
        results.append(target.logp_and_grad(params))
        routes.append(target._exact._rbf)
    assert routes == [True, False]
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("n", [5, 21, 257])
def test_compiled_rbf_path_matches_the_generic_contraction_at_every_size(n):
    # The compiled call (factor, dpotrs, K_f mirrored above the factor and
    # one dsymm) against the generic contraction with the same probes.
    rng = np.random.default_rng(n)
    X = rng.uniform(-2, 2, (n, 3))
    y = np.cos(X.sum(axis=1)) + 0.1 * rng.normal(size=n)
    kernel = ConstantKernel(0.8) * RBF([0.7, 1.2, 2.0])
    results = []
    for adapter in (KernelAdapter(kernel), force_generic(kernel)):
        params = np.append(adapter.kernel.theta, np.log(0.05))
        target = StochasticTraceTarget(
            adapter, X, y, None, rng=np.random.default_rng(5), n_probes=4
        )
        results.append(target.logp_and_grad(params))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-11)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-8, atol=1e-9)


def test_a_kernel_matrix_that_needs_jitter_takes_the_general_path():
    # Repeated inputs and no noise: the compiled factorisation fails and the
    # exact target's jittered factor serves, as for ExactMarginalTarget.
    X = np.repeat(np.linspace(0, 1, 12)[:, None], 3, axis=0)
    y = np.sin(3 * X[:, 0])
    adapter = KernelAdapter(ConstantKernel(1.0) * RBF(0.5))
    params = np.append(adapter.kernel.theta, -40.0)
    target = StochasticTraceTarget(adapter, X, y, None, rng=np.random.default_rng(0))
    value, grad = target.logp_and_grad(params)
    exact = ExactMarginalTarget(adapter, X, y, None)
    assert value == pytest.approx(exact.logp_and_grad(params)[0], rel=1e-10)
    assert target.max_jitter > 0.0
    assert np.all(np.isfinite(grad))
