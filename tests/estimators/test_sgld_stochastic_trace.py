"""SGLDGPRegressor(solver="stochastic_trace"): one Cholesky factorisation per
iteration, the gradient's data term exact and its trace term estimated by
probes (the target's unbiasedness is tested in
tests/targets/test_stochastic_trace.py); here the chains it drives."""

import pickle

import numpy as np
import pytest
from _sgld_grid import one_input_data

from skgp_bayes import SGLDGPRegressor, _config
from skgp_bayes.exceptions import NotPSDError, SamplerWarning
from skgp_bayes.targets import StochasticTraceTarget

TRACE = dict(solver="stochastic_trace", n_chains=2, random_state=0)


@pytest.fixture(scope="module")
def data():
    return one_input_data()


@pytest.mark.statistical
def test_posterior_agrees_with_exact_gradients(data, stat_seed):
    # Exact gradients with MALA (no bias) against the stochastic trace with
    # unadjusted Langevin at the default step 0.1, on the same model.
    exact = SGLDGPRegressor(solver="cholesky", random_state=stat_seed).fit(*data)
    noisy = SGLDGPRegressor(
        solver="stochastic_trace", n_iter=4000, burn_in=200, random_state=stat_seed
    ).fit(*data)
    assert noisy.solver_ == "stochastic_trace"
    # The chains must move at all: a stuck chain has an ESS of a few (seeds
    # 0-4 gave bulk ESS 88-272 for 2 x 3800 kept draws).
    assert np.all(noisy.ess_ > 30)
    a, b = exact.samples_.reshape(-1, 3), noisy.samples_.reshape(-1, 3)
    sd = a.std(axis=0)
    # Both runs' Monte Carlo errors from their own bulk ESS: a mean's
    # standard error is sd / sqrt(ESS), an sd's relative one sqrt(1 / (2 ESS))
    # (the Gaussian var * sqrt(2 / ESS), halved for the square root); the
    # runs are independent, so their variances add.
    se_mean = np.sqrt(1.0 / exact.ess_ + 1.0 / noisy.ess_)
    se_sd = np.sqrt(1.0 / (2 * exact.ess_) + 1.0 / (2 * noisy.ess_))
    # Unadjusted Langevin inflates a variance by about eps / 4 = 2.5% for a
    # preconditioner near the posterior covariance, and the trace term's
    # noise adds eps / 4 lambda_max(M^1/2 V M^1/2), at most 0.6% here (16
    # probes: lambda_max 0.04-0.22 over posterior draws): about 1.6% on an
    # sd, so 0.02 is added to the sd ratio's bound. 5 standard errors on 3
    # means and 3 sds: 3e-6 false failures for Gaussian errors, below 1e-4
    # with a 10% error in the estimated ESS. Seeds 0-4: every error within
    # 2.2 standard errors (before the 0.02).
    np.testing.assert_array_less(
        np.abs(b.mean(axis=0) - a.mean(axis=0)) / sd, 5 * se_mean
    )
    np.testing.assert_array_less(np.abs(b.std(axis=0) / sd - 1.0), 5 * se_sd + 0.02)


def test_fit_is_reproducible(data):
    X, y = data
    one = SGLDGPRegressor(**TRACE, n_iter=60, n_jobs=1).fit(X, y)
    two = SGLDGPRegressor(**TRACE, n_iter=60, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.chains_, two.chains_)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    other = SGLDGPRegressor(**{**TRACE, "random_state": 1}, n_iter=60).fit(X, y)
    assert not np.array_equal(one.chains_, other.chains_)
    assert one.solver_ == "stochastic_trace"
    # No CG, and no Metropolis step: nothing rejected, nothing to accept.
    assert one.diagnostics_["cg_iterations_mean"] == 0.0
    assert np.isnan(one.diagnostics_["acceptance_rate"])
    assert np.all(one.step_sizes_ == 0.1)


def test_warm_start_equals_one_long_fit(data):
    # Constant step and a given burn-in: the chain is the same however its
    # iterations are split, the probes' generator included.
    X, y = data
    kw = dict(**TRACE, burn_in=10)
    whole = SGLDGPRegressor(n_iter=70, **kw).fit(X, y)
    reg = SGLDGPRegressor(n_iter=45, warm_start=True, **kw).fit(X, y)
    reg = pickle.loads(pickle.dumps(reg))  # the chain states survive pickling
    reg.set_params(n_iter=25).fit(X, y)
    np.testing.assert_array_equal(reg.chains_, whole.chains_)
    np.testing.assert_array_equal(reg.predict(X), whole.predict(X))
    with pytest.raises(ValueError, match="solver: 'stochastic_trace' -> 'cholesky'"):
        reg.set_params(solver="cholesky").fit(X, y)


def test_a_failed_factorisation_is_a_rejected_update(data, monkeypatch):
    original = StochasticTraceTarget.logp_and_grad
    calls = {"n": 0}

    def flaky(self, params):
        calls["n"] += 1
        if calls["n"] == 5:
            raise NotPSDError("not positive definite")
        return original(self, params)

    monkeypatch.setattr(StochasticTraceTarget, "logp_and_grad", flaky)
    with pytest.warns(SamplerWarning, match="rejected"):
        reg = SGLDGPRegressor(**{**TRACE, "n_chains": 1}, n_iter=30).fit(*data)
    assert reg.diagnostics_["n_rejected"] == 1
    assert np.all(np.isfinite(reg.chains_))


def test_dense_memory_limit_refuses_before_allocating(data, monkeypatch):
    # K and its factor: two dense n x n matrices, as for solver="cholesky".
    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 2 * 8 * 40 * 40 - 1)
    with pytest.raises(MemoryError, match="solver='stochastic_trace'"):
        SGLDGPRegressor(**TRACE, n_iter=10).fit(*data)
