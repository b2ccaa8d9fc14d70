"""Variational MCMC regressors: Poisson and Gaussian likelihoods, and the
exact target where the inducing set reaches the training inputs."""

import warnings

import numpy as np
import pytest
from _variational_mcmc_fits import SHORT_CHAINS, quiet_fit, seeded
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes import VariationalMCMCRegressor
from skgp_bayes._defaults import NOISE_VARIANCE_BOUNDS
from skgp_bayes.datasets import bin_coal_counts
from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.exceptions import DegenerateFitWarning
from skgp_bayes.priors import Gamma


@pytest.mark.statistical
def test_poisson_regressor_on_binned_coal_counts(stat_seed):
    X, counts, width = bin_coal_counts(n_bins=40)
    reg = VariationalMCMCRegressor(
        ConstantKernel(1.0) * RBF(15.0),
        likelihood="poisson",
        inducing_points=np.linspace(X.min(), X.max(), 10)[:, None],
        **seeded(stat_seed),
    )
    quiet_fit(reg, X, counts, exposure=width)
    mean = reg.predict(X, exposure=width)
    # The fitted rate integrates to about the number of events N = 191. The
    # posterior of the total rate has sd 6.4-8.3% of N (over seeds 0-7), so
    # the mean of 120 draws (ESS at least 30) carries a Monte Carlo error of
    # at most 1.5%: 5 of them are 7.5%. The GP prior's pull of the log rate
    # towards zero biases the total down by 0.9-3.1% over those seeds. 0.1
    # covers both; ignoring the exposure would miss by a factor of 2.
    assert abs(mean.sum() - counts.sum()) < 0.1 * counts.sum()
    # exposure scales the expected count and nothing else
    np.testing.assert_allclose(reg.predict(X, exposure=2 * width), 2 * mean)
    # disasters were more frequent before 1890 than after 1900 (the fitted
    # ratio was 2.53-2.78 over seeds 0-7, sd 0.08: 2 is 6 sds below)
    early = reg.predict([[1860.0]], exposure=1.0)[0]
    late = reg.predict([[1930.0]], exposure=1.0)[0]
    assert early > 2 * late
    lpd = reg.log_predictive_density(X, counts, exposure=width)
    lpd_g = reg.log_predictive_density(X, counts, exposure=width, method="gaussian")
    assert lpd.shape == lpd_g.shape == (40,)
    assert np.all(lpd <= 0) and np.all(np.isfinite(lpd_g))
    draws = reg.sample_latent(X)
    assert draws.shape == (reg.draws_.shape[0], 40)
    assert reg.sample_latent(X, method="gaussian", n_samples=7).shape == (7, 40)


@pytest.mark.statistical
def test_gaussian_regressor_predicts_with_uncertainty(stat_seed):
    rng = np.random.default_rng(2 + stat_seed)
    X = rng.uniform(-3, 3, (40, 1))
    y = 10.0 + 5.0 * np.sin(X[:, 0]) + 0.5 * rng.normal(size=40)
    reg = quiet_fit(VariationalMCMCRegressor(n_inducing=10, **seeded(stat_seed)), X, y)
    mean, std = reg.predict(X, return_std=True, noise=True)
    # Noise sd 0.5 against a signal sd of 3.5: the ideal R^2 is 0.98, the
    # predictive sd at least the noise sd and the log density about -0.75 per
    # point. The bounds are far outside the spread below and fail for a fit
    # that ignored the data (R^2 0) or lost its
    # noise (sd near 0). Over seeds 0-7: R^2 0.982-0.990, predictive sd
    # 0.42-0.75, mean log density -0.43 to -0.78.
    assert reg.score(X, y) > 0.9
    assert np.all(std > 0.2) and np.all(std < 3.0)
    assert "noise_variance" in reg.param_names_
    lpd = reg.log_predictive_density(X, y)
    assert np.mean(lpd) > -2.0


def _short_periodic(seed=0):
    # a period of 4 over a range of 60: a length scale near 2% of the range
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 60, (260, 1))
    y = 3 * np.sin(2 * np.pi * X[:, 0] / 4.0) + 10 + 0.3 * rng.standard_normal(260)
    return X[:160], y[:160], X[160:], y[160:]


def _assert_the_exact_gp(reg, X, y, X_test, y_test):
    """``reg`` sampled the exact target on the distinct rows of ``X``, and
    its test log density is scikit-learn's exact GP's to 0.1; returns the
    latter. The peer's MAP predictive and the posterior average differ by
    the hyperparameter uncertainty (about 0.01 on these well-identified
    problems) and the Monte Carlo error of 200 draws (below 0.01)."""
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import WhiteKernel

    assert reg.diagnostics_["exact_marginal"]
    # inducing_points_ are in the model's (standardised) input units
    natural = reg.input_scaling_.inverse_transform(reg.inducing_points_)
    np.testing.assert_allclose(natural, np.unique(X, axis=0), atol=1e-10)
    peer = GaussianProcessRegressor(
        ConstantKernel() * RBF() + WhiteKernel(), normalize_y=True, random_state=0
    ).fit(X, y)
    mean, sd = peer.predict(X_test, return_std=True)
    peer_lpd = np.mean(norm.logpdf(y_test, mean, sd))
    assert abs(np.mean(reg.log_predictive_density(X_test, y_test)) - peer_lpd) < 0.1
    return peer_lpd


def test_inducing_set_short_of_the_exact_mode_becomes_the_training_inputs(
    monkeypatch,
):
    # With at most 8 inducing inputs the collapsed bound cannot hold a
    # period of 4 over 60 and stays far below the exact marginal posterior's
    # mode; the inducing inputs must then become the training inputs, where
    # the bound is exact, and the chains sample the exact target. The test
    # log density must then be the full GP's: scikit-learn's at its MAP
    # (-0.40 here) differs from the posterior average by the hyperparameter
    # uncertainty (0.01 on this well-identified problem) and the Monte Carlo
    # error of 200 draws (below 0.01); 8 inducing inputs give -2.2.
    from skgp_bayes.variational_mcmc import _approximation

    monkeypatch.setattr(_approximation, "_MAX_COLLAPSED_INDUCING", 8)
    X, y, X_test, y_test = _short_periodic()
    reg = VariationalMCMCRegressor(random_state=0, **SHORT_CHAINS)
    quiet_fit(reg, X, y)
    peer_lpd = _assert_the_exact_gp(reg, X, y, X_test, y_test)
    # the same fit with its inducing set fixed at 8 (no growth, no check)
    fixed = VariationalMCMCRegressor(n_inducing=8, random_state=0, **SHORT_CHAINS)
    quiet_fit(fixed, X, y)
    assert not fixed.diagnostics_["exact_marginal"]
    assert np.mean(fixed.log_predictive_density(X_test, y_test)) < peer_lpd - 1.0


def test_a_bound_at_a_mode_the_exact_posterior_gives_no_mass_grows(monkeypatch):
    # The value rule switched off (a gap allowance of 1,000 nats per point):
    # only the modal rule can send these data to the exact target. The
    # exact reference, the period-4 mode, holds nearly all the exact
    # posterior's Laplace mass and the bound's optimum at 8 inducing inputs
    # lies in another mode; a search on the bound from the reference falls
    # back into it. Measured before the rule counted a reference that holds
    # nearly all the mass (it asked both modes to hold some): the fit kept
    # its 8 inducing inputs and did not sample the exact target.
    from skgp_bayes.variational_mcmc import _approximation

    monkeypatch.setattr(_approximation, "_MAX_COLLAPSED_INDUCING", 8)
    monkeypatch.setattr(_approximation, "_GAP_TOL", 1e3)
    X, y, X_test, y_test = _short_periodic()
    reg = VariationalMCMCRegressor(random_state=0, **SHORT_CHAINS)
    quiet_fit(reg, X, y)
    _assert_the_exact_gp(reg, X, y, X_test, y_test)


def test_beyond_the_exact_check_the_set_grows_to_the_larger_cap(monkeypatch):
    # Scaled down: the exact reference only up to 100 rows, a cap of 13
    # inducing inputs there (the default start at 160 rows) and of 26
    # beyond. A period of 12 over 60 with 13 inducing inputs leaves a gap
    # to Titsias' upper bound of 0.48 nats per point, and doubling them
    # raises the bound by 0.16 nats per point (gap 0.03), so beyond the
    # check the growth must go on to 26, and with the larger cap at 13 it
    # must stay at 13.
    from skgp_bayes.variational_mcmc import _approximation

    monkeypatch.setattr(_approximation, "_EXACT_REFERENCE_MAX_N", 100)
    monkeypatch.setattr(_approximation, "_MAX_COLLAPSED_INDUCING", 13)
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 60, (160, 1))
    y = 3 * np.sin(2 * np.pi * X[:, 0] / 12) + 10 + 0.3 * rng.standard_normal(160)
    sizes = {}
    for larger_cap in (26, 13):
        monkeypatch.setattr(_approximation, "_MAX_LARGE_N_INDUCING", larger_cap)
        reg = VariationalMCMCRegressor(random_state=0, **SHORT_CHAINS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # short chains need not converge
            reg.fit(X, y)
        assert not reg.diagnostics_["exact_marginal"]
        sizes[larger_cap] = reg.inducing_points_.shape[0]
    assert sizes == {26: 26, 13: 13}


def test_a_step_the_cap_cuts_short_is_held_to_its_share_of_a_doubling():
    from skgp_bayes.variational_mcmc._approximation import _doublings

    assert _doublings(36, 18) == 1.0
    assert _doublings(64, 38) == pytest.approx(np.log2(64 / 38))
    assert _doublings(64, 60) < 0.1


def test_few_training_rows_make_the_inducing_inputs_from_the_start():
    # With at most 64 training rows (the default set's growth cap) the
    # distinct inputs are the inducing inputs at once, the chains sample the
    # exact target from its mode, and the predictive is the full GP's. 60
    # rows on 20 distinct inputs (three replicates each) check that the
    # inducing inputs are the distinct rows.
    rng = np.random.default_rng(3)
    X = np.repeat(rng.uniform(0, 10, (20, 1)), 3, axis=0)
    y = np.sin(X[:, 0]) + 5 + 0.3 * rng.standard_normal(60)
    X_test = rng.uniform(0, 10, (200, 1))
    y_test = np.sin(X_test[:, 0]) + 5 + 0.3 * rng.standard_normal(200)
    reg = VariationalMCMCRegressor(random_state=0, **SHORT_CHAINS)
    quiet_fit(reg, X, y)
    _assert_the_exact_gp(reg, X, y, X_test, y_test)
    # a set the user sizes is kept as given
    fixed = VariationalMCMCRegressor(n_inducing=5, random_state=0, **SHORT_CHAINS)
    quiet_fit(fixed, X, y)
    assert not fixed.diagnostics_["exact_marginal"]
    assert fixed.inducing_points_.shape[0] == 5


def test_a_grown_set_of_nearly_half_the_rows_gives_way_to_the_exact_target():
    # 90 rows of a sine of period 1.3 over 10: the doubling from 40 to 64
    # inducing inputs adds under 0.05 nats per point, so the growth keeps
    # 40, 0.44 of the rows, at which the bound's gradient costs about the
    # exact one (_EXACT_AFTER_GROWTH_FRACTION): the chains sample the exact
    # target on the distinct rows instead, and predict as the full GP.
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, (90, 1))
    y = np.sin(5 * X[:, 0]) + 0.2 * rng.standard_normal(90)
    X_test = rng.uniform(0, 10, (200, 1))
    y_test = np.sin(5 * X_test[:, 0]) + 0.2 * rng.standard_normal(200)
    reg = VariationalMCMCRegressor(random_state=0, **SHORT_CHAINS)
    quiet_fit(reg, X, y)
    assert reg.diagnostics_["exact_marginal"]
    natural = reg.input_scaling_.inverse_transform(reg.inducing_points_)
    np.testing.assert_allclose(natural, np.unique(X, axis=0), atol=1e-10)
    # scikit-learn's exact GP, with restarts (from its default start alone it
    # ends at the no-signal edge here, -1.10): 0.088, ours 0.094; the
    # tolerance as in _assert_the_exact_gp
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import WhiteKernel

    peer = GaussianProcessRegressor(
        ConstantKernel() * RBF() + WhiteKernel(),
        normalize_y=True,
        n_restarts_optimizer=5,
        random_state=0,
    ).fit(X, y)
    mean, sd = peer.predict(X_test, return_std=True)
    peer_lpd = np.mean(norm.logpdf(y_test, mean, sd))
    assert abs(np.mean(reg.log_predictive_density(X_test, y_test)) - peer_lpd) < 0.1
    # a set the user sizes is kept as given
    fixed = VariationalMCMCRegressor(n_inducing=40, random_state=0, **SHORT_CHAINS)
    quiet_fit(fixed, X, y)
    assert not fixed.diagnostics_["exact_marginal"]


def test_mode_searches_start_at_shorter_and_longer_length_scales(monkeypatch):
    # Besides the length-scale screen's points, the mode searches start at
    # the optimum with every length scale divided and multiplied by
    # MODE_SEARCH_FACTOR (clipped into the bounds): the wiggly and the
    # smooth reading of the data, a marginal likelihood's usual two modes.
    from skgp_bayes.kernels import KernelAdapter
    from skgp_bayes.targets import ExactMarginalTarget
    from skgp_bayes.variational_mcmc import _pipelines

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (30, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30)
    adapter = KernelAdapter(ConstantKernel() * RBF([1.0, 1.0]))
    target = ExactMarginalTarget(adapter, X, (y - y.mean()) / y.std(), None)
    bounds = np.array([[-5.0, 5.0], [-5.0, 5.0], [-5.0, 1.5], [-8.0, 3.0]])
    hyper = np.array([0.2, -0.5, 1.0, -2.0])
    searched = []
    find_map = _pipelines.find_map

    def spy(sampled, start, box):
        searched.append(np.array(start))
        return find_map(sampled, start, box)

    monkeypatch.setattr(_pipelines, "find_map", spy)
    problem = (adapter, X, target.y, None)
    _pipelines.collapsed_mode_jumps(target, (np.zeros(4), hyper), bounds, problem)
    step = np.log(_pipelines.MODE_SEARCH_FACTOR)
    shorter = hyper - np.array([0.0, step, step, 0.0])
    longer = np.clip(
        hyper + np.array([0.0, step, step, 0.0]), bounds[:, 0], bounds[:, 1]
    )
    assert longer[2] == 1.5  # the second length scale clipped at its bound
    for point in (shorter, longer):
        assert any(np.allclose(s, point) for s in searched), point


def test_draws_of_v_completed_on_threads_are_the_same(monkeypatch):
    # The chains' v | theta draws (two factorisations each on the exact
    # target) are completed on the chains' threads, each chain from its own
    # stream: the draws must be those of n_jobs=1, where they are not.
    import numba

    from skgp_bayes.variational_mcmc import _chains, _sampling

    rng = np.random.default_rng(5)
    X = rng.uniform(0, 10, (40, 1))
    y = np.sin(X[:, 0]) + 0.2 * rng.standard_normal(40)
    params = dict(random_state=0, **SHORT_CHAINS)
    one = quiet_fit(VariationalMCMCRegressor(n_jobs=1, **params), X, y)
    monkeypatch.setattr(_chains, "THREADED_TRANSITION_SECONDS", 0.0)
    asked = []
    to_x = _sampling.CollapsedSampler.to_x

    def spy(self, w, threads=1):
        asked.append(threads)
        return to_x(self, w, threads)

    monkeypatch.setattr(_sampling.CollapsedSampler, "to_x", spy)
    threaded = quiet_fit(VariationalMCMCRegressor(**params), X, y)
    assert one.diagnostics_["exact_marginal"]
    np.testing.assert_array_equal(one.draws_, threaded.draws_)
    if numba.get_num_threads() >= 2:
        assert asked and all(t == 2 for t in asked)


def test_searches_of_the_inducing_sets_on_threads_are_the_same(monkeypatch):
    # Each inducing-set size searches the collapsed bound from the last
    # optimum and from the screen's or the exact mode's point, and the exact
    # reference from its starts; on threads they must keep what n_jobs=1
    # keeps, so that the draws are the same.
    import numba

    from skgp_bayes.inference import particles
    from skgp_bayes.variational_mcmc import _approximation

    rng = np.random.default_rng(6)
    X = rng.uniform(0, 10, (90, 2))
    y = np.sin(X[:, 0]) * np.cos(0.5 * X[:, 1]) + 0.1 * rng.standard_normal(90)
    params = dict(random_state=0, **SHORT_CHAINS)
    one = quiet_fit(VariationalMCMCRegressor(n_jobs=1, **params), X, y)
    monkeypatch.setattr(particles, "THREADED_PARTICLE_SECONDS", 0.0)
    asked = []
    best_of = _approximation.best_of_searches

    def spy(search, value, start, screened, threads=1):
        asked.append(threads)
        return best_of(search, value, start, screened, threads)

    monkeypatch.setattr(_approximation, "best_of_searches", spy)
    threaded = quiet_fit(VariationalMCMCRegressor(**params), X, y)
    np.testing.assert_array_equal(one.draws_, threaded.draws_)
    np.testing.assert_array_equal(one.inducing_points_, threaded.inducing_points_)
    if numba.get_num_threads() >= 2:
        assert 2 in asked


@pytest.mark.statistical
def test_chains_refitted_mid_run_sample_the_same_posterior(stat_seed, monkeypatch):
    # The refit (HMCStage._remapped) is forced after the first sampling
    # block, with strong sinh maps of every hyperparameter fitted anew over
    # the warm-up's: the chains then go on from where they were, in new
    # coordinates, after a new warm-up. A map changes how fast the chains
    # mix, not what they sample, so the hyperparameters' posterior means
    # must agree with an ordinary fit's, and so must their sds, within 4.5
    # standard errors of each difference (from each fit's own bulk ESS): a
    # false failure has probability about 7e-6 per comparison (six here).
    # The maps are strong (2 sds above the centre maps to 13) so that draws
    # reported in the wrong coordinates show: the former Sampler.refined,
    # which stacked the new maps on the warm-up's and mapped the draws back
    # through the new ones alone, fails this test at seeds 0-3.
    from skgp_bayes.inference.marginal_maps import SinhMaps
    from skgp_bayes.variational_mcmc import _chains, _sampling

    rng = np.random.default_rng(3 + stat_seed)
    X = rng.uniform(-3, 3, (30, 1))
    y = 10.0 + 5.0 * np.sin(X[:, 0]) + 0.5 * rng.normal(size=30)
    options = dict(n_chains=4, n_samples=1000, max_samples=3000, random_state=stat_seed)
    plain = quiet_fit(VariationalMCMCRegressor(**options), X, y)
    assert not plain.diagnostics_["maps_refitted"]

    def strong_maps(draws, ess=None):
        mean, sd = draws.mean(axis=(0, 1)), draws.std(axis=(0, 1))
        k = draws.shape[-1]
        return SinhMaps(mean, sd, np.full(k, 1.0), np.full(k, 1.6))

    def refit_always(sampler, chains, states, span, cost):
        assert sampler.mode_jumps is None and sampler.transform is not None
        return sampler.refined(chains, states)

    checks = []
    MissedOnce = _missed_once(checks)

    monkeypatch.setattr(_sampling, "fit_marginal_maps", strong_maps)
    monkeypatch.setattr(_chains, "remapped_sampler", refit_always)
    monkeypatch.setattr(_chains, "RunLengthRule", MissedOnce)
    refitted = quiet_fit(VariationalMCMCRegressor(**options), X, y)
    assert refitted.diagnostics_["maps_refitted"]
    assert refitted.diagnostics_["skew_maps"] == 3
    assert checks[0] == 1000 and len(checks) >= 2

    _assert_same_hyperparameter_posterior(plain, refitted)


def _missed_once(checks):
    """A run-length rule whose first check fails whatever the draws; every
    check's sampling iterations per chain go to ``checks``."""
    from skgp_bayes.variational_mcmc import _sampling

    class MissedOnce(_sampling.RunLengthRule):
        def met(self, chains, every=False):
            checks.append(chains.shape[1])
            met, rhat, ess = super().met(chains, every)
            return (False if len(checks) == 1 else met), rhat, ess

    return MissedOnce


def _sd_and_error(fit, n_hyper):
    """Each parameter's posterior sd and its Monte Carlo standard error.

    The error is that of the mean of the squared deviations ``z = (x -
    mean)^2``, ``sd(z) / sqrt(ESS(z))`` with the ESS of ``z``'s own chains,
    taken to the sd by the delta method (``/ (2 sd)``). The normal-theory
    error ``sd / sqrt(2 ESS)`` with the draws' bulk ESS ignores the
    marginals' kurtosis and the squares' slower mixing: over 200 seeds of
    the mode-jump test below its standardised differences had a root mean
    square of 1.4-1.7 (seven of them beyond 4.5) where this error's had
    0.9-1.05 (largest 2.7).
    """
    # draws_ is chain after chain (samples_ is its per-chain view)
    chains = fit.draws_.reshape(fit.n_chains, -1, fit.draws_.shape[1])[:, :, :n_hyper]
    pooled = chains.reshape(-1, n_hyper)
    squares = (chains - pooled.mean(axis=0)) ** 2
    flat = squares.reshape(-1, n_hyper)
    sd = np.sqrt(flat.mean(axis=0))
    variance_error = flat.std(axis=0) / np.sqrt(effective_sample_size(squares))
    return sd, variance_error / (2.0 * sd)


def _assert_same_hyperparameter_posterior(plain, other, n_hyper=3):
    """Means and sds of the first ``n_hyper`` parameters agree within 4.5
    standard errors of each difference (a false failure of about 7e-6 per
    comparison for a normal error): a mean's from each fit's own bulk ESS,
    an sd's from the ESS of the squared deviations (``_sd_and_error``)."""
    means, sds, sd_errors, mean_errors = [], [], [], []
    for fit in (plain, other):
        draws = fit.draws_[:, :n_hyper]
        means.append(draws.mean(axis=0))
        sd, error = _sd_and_error(fit, n_hyper)
        sds.append(sd)
        sd_errors.append(error)
        mean_errors.append(sd / np.sqrt(np.asarray(fit.ess_[:n_hyper])))
    mean_error = np.hypot(*mean_errors)
    sd_error = np.hypot(*sd_errors)
    np.testing.assert_array_less(np.abs(means[0] - means[1]), 4.5 * mean_error)
    np.testing.assert_array_less(np.abs(sds[0] - sds[1]), 4.5 * sd_error)


def _sine_30(seed):
    rng = np.random.default_rng(3 + seed)
    X = rng.uniform(-3, 3, (30, 1))
    return X, 10.0 + 5.0 * np.sin(X[:, 0]) + 0.5 * rng.normal(size=30)


def _searches_from_the_draws(monkeypatch, search, due_once=False):
    """The sampler's searches from the draws replaced by ``search(kept)``;
    every check may search by the rate rule (``due_once``: the first check
    searches and no other). Returns the sampling iterations per chain of
    each search."""
    from skgp_bayes.variational_mcmc import _chains, _pipelines

    asked = []

    class Replaced(_pipelines.DrawModeSearch):
        def __call__(self, kept, ends, rhat, ess, jumps):
            asked.append(kept.shape[1])
            return search(kept)

    monkeypatch.setattr(_pipelines, "DrawModeSearch", Replaced)
    if due_once:
        due = _chains.DrawSearches.due
        monkeypatch.setattr(
            _chains.DrawSearches,
            "due",
            lambda self, *a: self.last is None and due(self, *a),
        )
    monkeypatch.setattr(_chains, "iterations_still_needed", lambda *a: 1e9)
    return asked


@pytest.mark.statistical
def test_chains_with_modes_found_mid_run_sample_the_same_posterior(
    stat_seed, monkeypatch
):
    # A search from the draws after the first sampling block returns a
    # mixture of the draws' Laplace-like Gaussian and a decoy mode 3 sds
    # away; the chains go on from where they were, in new coordinates,
    # jumping between the two, after a new warm-up. The jumps are
    # Metropolis-Hastings moves, whatever the mixture: the hyperparameters'
    # posterior means and sds must agree with an ordinary fit's within 4.5
    # standard errors of each difference (from each fit's own bulk ESS),
    # a false failure of about 7e-6 per comparison (six here).
    from skgp_bayes.inference.mode_jumps import ModeJumps
    from skgp_bayes.variational_mcmc import _chains

    X, y = _sine_30(stat_seed)
    options = dict(n_chains=4, n_samples=1000, max_samples=3000, random_state=stat_seed)
    plain = quiet_fit(VariationalMCMCRegressor(**options), X, y)
    assert plain.diagnostics_["mode_jumps"]["modes"] == 0

    def decoy(kept):
        pooled = kept.reshape(-1, kept.shape[-1])
        d = pooled.shape[1]
        cov = np.cov(pooled.T) + 1e-6 * np.eye(d)
        means = np.stack([pooled.mean(axis=0), pooled.mean(axis=0) + 3.0])
        factors = np.linalg.cholesky(np.stack([cov, cov]))
        return ModeJumps(means, factors, np.log([0.9, 0.1]), every=1)

    checks = []
    MissedOnce = _missed_once(checks)

    asked = _searches_from_the_draws(monkeypatch, decoy, due_once=True)
    monkeypatch.setattr(_chains, "RunLengthRule", MissedOnce)
    jumping = quiet_fit(VariationalMCMCRegressor(**options), X, y)
    assert asked == [1000] and checks[0] == 1000 and len(checks) >= 2
    jumps = jumping.diagnostics_["mode_jumps"]
    assert jumps["modes"] == 2 and jumps["tried"] > 0

    # log variance, log length scale, log noise variance
    _assert_same_hyperparameter_posterior(plain, jumping)


def test_searches_from_the_draws_wait_for_twice_the_iterations_and_move_nothing(
    monkeypatch,
):
    # Every check misses the rule and the searches find nothing new: they
    # come at the first check, then at the first with twice the sampling
    # iterations of the last, and the chains are those of a fit that never
    # searched, to the bit (the searches draw no random numbers).
    from skgp_bayes.variational_mcmc import _chains, _sampling

    class NeverMet(_sampling.RunLengthRule):
        def met(self, chains, every=False):
            return (False, *super().met(chains, every)[1:])

    X, y = _sine_30(0)
    options = dict(n_chains=2, n_samples=250, max_samples=2000, random_state=0)
    monkeypatch.setattr(_chains, "RunLengthRule", NeverMet)
    asked = _searches_from_the_draws(monkeypatch, lambda kept: None)
    searched = quiet_fit(VariationalMCMCRegressor(**options), X, y)
    # blocks of 250, then a quarter more each up to 250: checks at 250,
    # 313, 392, 490, 613, 767, 959, 1199, 1449, ...; at 1449 the budget
    # still holds a new warm-up (150 iterations) and a first block, at
    # 2,898 (twice 1449) it is spent
    assert asked == [250, 613, 1449]
    monkeypatch.setattr(_chains.DrawSearches, "due", lambda self, *a: False)
    unsearched = quiet_fit(VariationalMCMCRegressor(**options), X, y)
    np.testing.assert_array_equal(searched.draws_, unsearched.draws_)
    assert searched.diagnostics_["mode_jumps"]["modes"] == 0


def test_a_kept_set_that_predicts_held_out_rows_worse_gives_way_to_the_exact_target():
    # The growth stops on the training bound; _grown also compares the
    # rows' leave-one-out densities. Eight inducing inputs for a sine of
    # period 1.3 over 10 cannot follow it: the exact model predicts every
    # held-out row far better, and the kept set gives way. Forty inputs
    # (under _EXACT_AFTER_GROWTH_FRACTION of the 120 rows) follow it as the
    # exact model does: no difference beyond its standard errors, kept.
    from skgp_bayes.kernels import KernelAdapter
    from skgp_bayes.variational_mcmc._approximation import (
        ApproximationStage,
        CollapsedOptimum,
    )

    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 10, (120, 1)), axis=0)
    y = np.sin(5 * X[:, 0]) + 0.2 * rng.standard_normal(120)
    adapter = KernelAdapter(ConstantKernel() * RBF())
    hyper = np.array([0.0, np.log(0.3), np.log(0.04)])
    stage = ApproximationStage.of(VariationalMCMCRegressor())
    reference = (0.0, hyper, [])
    for m, exact in ((8, True), (40, False)):
        Z = np.linspace(0, 10, m)[:, None]
        kept = CollapsedOptimum(hyper, Z, False, [], 0)
        grown = stage._grown((adapter, X, y), reference, X, kept)
        assert grown.exact is exact
        assert grown.Z.shape[0] == (120 if exact else m)
    # without the exact mode (no growth compared) the set stays
    kept = CollapsedOptimum(hyper, np.linspace(0, 10, 8)[:, None], False, [], 0)
    assert not stage._grown((adapter, X, y), (-np.inf, None, []), X, kept).exact


def test_nearly_exact_data_keep_the_chains_off_the_noise_floor():
    # 13 rows of an Antoine vapour-pressure curve (pressure over six decades
    # of a temperature): exact data, whose noise variance's optimum lies 3.4
    # log units above its floor (a fraction 1e-6 of the standardised
    # targets' variance) with the density on the floor 1.5 nats lower. The
    # chains sample it as its log distance from the floor: with the floor
    # as a wall in their way they diverged 74 times and warned. A fit is
    # quiet, and its draws reach within a log unit of the floor. The signal
    # variance keeps Gamma(1, 2) here: the test is of the wall, and under
    # the default half-Cauchy the long ridge of a large signal variance at a
    # vanishing noise gives divergences of its own on these data (1-8 over
    # random states 0-3), which the defaults page records.
    X = np.arange(0.0, 361.0, 30.0)[:, None]
    y = 10.0 ** (10.0 - 3000.0 / (X[:, 0] + 273.0))
    priors = {"k1__constant_value": Gamma(1.0, 2.0)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg = VariationalMCMCRegressor(random_state=0, priors=priors).fit(X, y)
    assert reg.diagnostics_["n_divergences"] == 0
    log_noise = reg.draws_[:, reg.param_names_.index("noise_variance")]
    assert log_noise.min() < np.log(NOISE_VARIANCE_BOUNDS[0]) + 1.0


@pytest.mark.parametrize("repeats", [1, 2])
def test_draws_on_the_training_inputs_predict_as_the_exact_gp(repeats):
    # With the training inputs as inducing inputs the chains sample the
    # exact GP's hyperparameters, and each draw must predict as that exact
    # GP. Through v it predicted with K(Z, Z) + jitter, the jitter (1e-6 of
    # the signal variance) acting as a second noise on u: on these 13 rows
    # of an Antoine curve (signal variance near 200 Var(y), noise near 3e-6
    # Var(y)) the predictive sd was 1,290-1,580 where the exact GP's is
    # 100-170. The reference is scikit-learn's GP at each draw's kernel and
    # noise, mixed over the draws: the same arithmetic up to round-off.
    # With every row twice (repeats=2) Z holds the distinct rows and the
    # exact GP all of them.
    from sklearn.gaussian_process import GaussianProcessRegressor

    X = np.repeat(np.arange(0.0, 361.0, 30.0), repeats)[:, None]
    y = 10.0 ** (10.0 - 3000.0 / (X[:, 0] + 273.0))
    X_test = np.array([[15.0], [100.0], [200.0], [345.0]])
    with warnings.catch_warnings():
        # repeated exact rows pin the noise to its floor, and say so
        warnings.simplefilter("ignore", DegenerateFitWarning)
        reg = quiet_fit(VariationalMCMCRegressor(random_state=0), X, y)
    assert reg.diagnostics_["exact_marginal"]
    X_model, X_test_model = (reg.input_scaling_.transform(a) for a in (X, X_test))
    y_model = (y - reg.y_mean_) / reg.y_std_
    noise = reg.noise_variance_ / reg.y_std_**2
    means, variances = [], []
    for kernel, s2 in zip(reg.kernels_, noise, strict=True):
        peer = GaussianProcessRegressor(kernel, alpha=s2, optimizer=None)
        mean, sd = peer.fit(X_model, y_model).predict(X_test_model, return_std=True)
        means.append(mean)
        variances.append(sd**2)
    means, variances = np.array(means), np.array(variances)
    ref_mean = means.mean(axis=0) * reg.y_std_ + reg.y_mean_
    ref_sd = np.sqrt(np.mean(variances + means**2, axis=0) - means.mean(axis=0) ** 2)
    ref_sd *= reg.y_std_
    mean, sd = reg.predict(X_test, return_std=True)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-8, atol=1e-6 * reg.y_std_)
    np.testing.assert_allclose(sd, ref_sd, rtol=1e-5)
    _, cov = reg.predict(X_test, return_cov=True)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), ref_sd, rtol=1e-5)
    # the draws on two threads: each draw's arithmetic is its own
    reg.set_params(n_jobs=2)
    np.testing.assert_array_equal(reg.predict(X_test, return_std=True)[1], sd)
    # Joint and pathwise draws are independent draws of the same mixture
    # (each picks a draw uniformly). Its variance's sample estimate from n
    # of them has standard error sqrt((m4 - var^2) / n), with m4 the
    # mixture's fourth central moment, exact from its components (a heavy
    # tail here: a few draws of a large signal variance hold much of the
    # spread, so a fixed relative tolerance on the sd failed under another
    # BLAS kernel); six standard errors, of the mean too (false failure
    # about 2e-9 per check). The pathwise draws' 1,024 Fourier features
    # approximate the prior covariance, a bias of a few percent of the
    # variance (4.4% of the sd measured at 100); 10% of it is allowed.
    n = 4000
    mix_mean = means.mean(axis=0)
    centred = means - mix_mean
    mix_var = np.mean(variances + centred**2, axis=0)
    m4 = np.mean(centred**4 + 6 * centred**2 * variances + 3 * variances**2, axis=0)
    var_se = np.sqrt((m4 - mix_var**2) / n) * reg.y_std_**2
    draws = {
        "exact": reg.sample_y(X_test, n, random_state=0, method="exact"),
        "pathwise": reg.sample_functions(n, random_state=0)(X_test),
    }
    for method, values in draws.items():
        bias = 0.0 if method == "exact" else 0.1 * ref_sd**2
        assert np.all(np.abs(values.var(axis=1) - ref_sd**2) < 6 * var_se + bias)
        assert np.all(np.abs(values.mean(axis=1) - ref_mean) < 6 * ref_sd / np.sqrt(n))
