import pickle
import sys
import warnings

import joblib
import numba
import numpy as np
import pytest
from _sgld_grid import assert_draws_match_quadrature, grid_posterior, one_input_data
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes import SGLDGPRegressor, _sgld_chains
from skgp_bayes._sgld_setup import FIRST_DRAWS, WARMUP, not_mixed_message
from skgp_bayes.exceptions import BackendUnavailableError, SamplerWarning
from skgp_bayes.inference import sgld_schedule
from skgp_bayes.priors import Gamma

# Iterations per chain of the first block of a default (MALA) fit.
_FIRST = WARMUP + FIRST_DRAWS

# The ULISSE path, which "auto" would not take on 40 points.
FAST = dict(n_iter=60, n_chains=2, solver="ulisse", random_state=0)


@pytest.fixture(scope="module")
def data():
    return one_input_data()


@pytest.fixture(scope="module")
def fitted(data):
    return SGLDGPRegressor(**FAST).fit(*data)


@pytest.mark.slow
@pytest.mark.statistical
def test_posterior_matches_quadrature(data, stat_seed):
    # The data set is the shared one (the grid's ranges are set to hold its
    # posterior); the seed changes the chains.
    X, y = data
    y = (y - y.mean()) / y.std()  # the model's scale (normalize_y=True)
    mean, sd, marginals = grid_posterior(X, y, [(-2.5, 4.5), (-1.2, 1.6), (-3.2, -0.3)])
    for marginal in marginals:  # the grid holds the whole posterior
        assert max(marginal[0], marginal[-1]) < 1e-3
    reg = SGLDGPRegressor(
        n_iter=3000,
        n_chains=2,
        n_jobs=2,
        burn_in=200,
        solver="ulisse",
        step_size_start=0.1,
        step_size_end=0.1,
        step_size_gamma=0.0,
        normalize_X=False,
        priors={
            "k1__constant_value": Gamma(1.0, 2.0),
            "k2__length_scale": Gamma(1.0, 2.0),
        },
        random_state=stat_seed,
    ).fit(X, y)
    draws = reg.samples_.reshape(-1, 3)
    # Standard errors from the chains' own ESS (24-234 over seeds 0-4; the
    # noise variance mixes slowest): sd / sqrt(ESS) for a mean,
    # sd * sqrt(1 / (2 ESS)) for an sd (the Gaussian var * sqrt(2 / ESS),
    # halved for the square root). The step's
    # own bias inflates the variance by about eps / 4 = 2.5% for a
    # preconditioner near the posterior covariance, plus the gradient
    # noise's eps / 4 lambda_max(M V) of about 1%: 0.02 is added to the sd
    # ratio's bound for it. 5 standard errors on 3 means and 3 sds: 3e-6
    # false failures for Gaussian errors, below 1e-4 with a 10% error in the
    # estimated ESS. Over seeds 0-4 the 30 errors were all within 1.2
    # standard errors. The chains must mix at all (a stuck chain has an ESS
    # of a few; 24 is the least seen).
    assert np.all(reg.ess_ > 10)
    se_mean = 1.0 / np.sqrt(reg.ess_)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean) / sd, 5 * se_mean)
    se_sd = np.sqrt(1.0 / (2 * reg.ess_))
    np.testing.assert_array_less(np.abs(draws.std(axis=0) / sd - 1.0), 5 * se_sd + 0.02)
    # R-hat of two stationary chains: R^2 - 1 is about (2 / ESS) chi^2_1
    # (the squared gap between the chain means over twice the variance), so
    # 5 standard deviations of the gap allow sqrt(1 + 50 / ESS): 1.16-1.75
    # for the ESS seen, against R-hat 1.003-1.079 over seeds 0-4. A fixed
    # 1.1 would fail for about 1 seed in 10 where the ESS is near 25.
    assert np.all(reg.rhat_ < np.sqrt(1.0 + 50.0 / reg.ess_))


def test_fitted_attributes(fitted, data):
    X, _ = data
    reg = fitted
    assert reg.chains_.shape == (2, 60, 3)
    assert reg.step_sizes_.shape == (2, 60)
    assert reg.param_names_ == [
        "k1__constant_value",
        "k2__length_scale",
        "noise_variance",
    ]
    assert reg.samples_.shape[0] == 2 and reg.samples_.shape[2] == 3
    assert reg.burn_in_ == 30  # no freezing in 60 iterations: half discarded
    np.testing.assert_array_equal(reg.samples_[0], reg.chains_[0, 30:])
    assert reg.solver_ == "ulisse" and reg.n_iter_ == 60
    assert np.all(np.isnan(reg.rhat_)) and np.all(np.isnan(reg.ess_))
    assert any("not computed" in note for note in reg.diagnostics_["notes"])
    assert reg.diagnostics_["cg_iterations_mean"] > 0
    assert len(reg.kernels_) == len(reg.noise_variance_) == 30
    assert reg.n_features_in_ == 1
    assert np.all(np.isfinite(reg.predict(X)))


def test_step_size_schedule_and_freezing(data):
    X, y = data
    reg = SGLDGPRegressor(
        n_iter=400,
        n_chains=1,
        solver="ulisse",
        step_size_end=1e-4,
        freeze_threshold=0.05,
        freeze_window=50,
        random_state=0,
    ).fit(X, y)
    steps = reg.step_sizes_[0]
    assert steps[0] == pytest.approx(0.1)
    frozen = reg.frozen_at_[0]
    assert frozen is not None
    assert np.all(steps[frozen:] == steps[frozen])
    assert np.all(np.diff(steps[: frozen + 1]) < 0)
    assert reg.burn_in_ == frozen + 1


def test_prediction_matches_sklearn_with_fixed_hyperparameters(data):
    X, y = data
    kernel = ConstantKernel(1.3, "fixed") * RBF(0.9, "fixed")
    reg = SGLDGPRegressor(
        kernel,
        noise_variance=0.2,
        noise_variance_bounds="fixed",
        n_iter=2,
        n_chains=1,
        burn_in=0,
        thin=1,
        normalize_X=False,
        random_state=0,
        preconditioner="identity",
    )
    with pytest.raises(ValueError, match="at least one free hyperparameter"):
        reg.fit(X, y)
    # one free parameter, pinned by its bounds
    kernel = ConstantKernel(1.3, "fixed") * RBF(0.9, (0.9, 0.9 + 1e-12))
    reg.set_params(kernel=kernel).fit(X, y)
    ref = GaussianProcessRegressor(
        ConstantKernel(1.3, "fixed") * RBF(0.9, "fixed"),
        alpha=0.2,
        normalize_y=True,
    ).fit(X, y)
    Xq = np.linspace(-3, 3, 7)[:, None]
    m, s = reg.predict(Xq, return_std=True)
    m_ref, s_ref = ref.predict(Xq, return_std=True)
    np.testing.assert_allclose(m, m_ref, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s, s_ref, rtol=1e-5, atol=1e-8)


def test_cg_predictions_equal_cholesky_predictions(data):
    X, y = data
    # cg_tol also ends ULISSE's continuations, so both fits share it
    chol = SGLDGPRegressor(**FAST, predict_solver="cholesky", cg_tol=1e-11).fit(X, y)
    cg = SGLDGPRegressor(**FAST, predict_solver="cg", cg_tol=1e-11).fit(X, y)
    np.testing.assert_array_equal(chol.samples_, cg.samples_)
    Xq = np.linspace(-3, 3, 9)[:, None]
    m1, s1 = chol.predict(Xq, return_std=True)
    m2, s2 = cg.predict(Xq, return_std=True)
    np.testing.assert_allclose(m2, m1, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2, s1, rtol=1e-5, atol=1e-7)
    _, c1 = chol.predict(Xq, return_cov=True)
    _, c2 = cg.predict(Xq, return_cov=True)
    np.testing.assert_allclose(c2, c1, rtol=1e-5, atol=1e-7)


def test_determinism_across_n_jobs(data):
    X, y = data
    one = SGLDGPRegressor(**{**FAST, "n_jobs": 1}).fit(X, y)
    two = SGLDGPRegressor(**{**FAST, "n_jobs": 2}).fit(X, y)
    np.testing.assert_array_equal(one.chains_, two.chains_)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    other = SGLDGPRegressor(**{**FAST, "random_state": 1}).fit(X, y)
    assert not np.array_equal(one.chains_, other.chains_)


def test_exact_chains_on_threads_by_default_give_the_same_draws(data, monkeypatch):
    """n_jobs=None: compiled exact chains share the cores by threads."""
    X, y = data
    params = dict(n_iter=60, n_chains=2, solver="cholesky", random_state=0)
    one = SGLDGPRegressor(**params, n_jobs=1).fit(X, y)
    threads = []
    choose = _sgld_chains.SGLDChainsMixin._chain_threads

    def recorded(self, *args):
        threads.append(choose(self, *args))
        return threads[-1]

    monkeypatch.setattr(_sgld_chains.SGLDChainsMixin, "_chain_threads", recorded)
    monkeypatch.setattr(_sgld_chains, "THREADED_GRADIENT_SECONDS", 0.0)
    default = SGLDGPRegressor(**params).fit(X, y)
    np.testing.assert_array_equal(one.chains_, default.chains_)
    np.testing.assert_array_equal(one.predict(X), default.predict(X))
    expected = 2 if numba.get_num_threads() >= 2 else 1
    assert threads and set(threads) == {expected}
    # CG gradients hold BLAS, not compiled code: they stay one after another.
    threads.clear()
    SGLDGPRegressor(**FAST).fit(X, y)
    assert threads and set(threads) == {1}


def test_pickle_and_joblib_round_trip(fitted, data, tmp_path):
    X, _ = data
    expected = fitted.predict(X, return_std=True)
    loaded = pickle.loads(pickle.dumps(fitted))
    for a, b in zip(loaded.predict(X, return_std=True), expected, strict=True):
        np.testing.assert_array_equal(a, b)
    path = tmp_path / "model.joblib"
    joblib.dump(fitted, path)
    again = joblib.load(path, mmap_mode="r")
    np.testing.assert_array_equal(again.predict(X), expected[0])
    np.testing.assert_array_equal(clone(fitted).get_params()["n_iter"], 60)


def test_sample_y(fitted, data):
    X, _ = data
    draws = fitted.sample_y(X[:5], n_samples=4)
    assert draws.shape == (5, 4)
    np.testing.assert_array_equal(draws, fitted.sample_y(X[:5], n_samples=4))
    with pytest.raises(ValueError, match="positive integer"):
        fitted.sample_y(X[:5], n_samples=0)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(n_iter=0), "n_iter"),
        (dict(n_chains=0), "n_chains"),
        (dict(step_size_start=-1.0), "step_size_start"),
        (dict(step_size_start=1e-3, step_size_end=1e-1), "must not exceed"),
        (dict(early_stop_q=-0.1), "early_stop_q"),
        (dict(beta=0.0), "beta"),
        (dict(max_random_steps=-1), "max_random_steps"),
        (dict(warm_start="yes"), "warm_start"),
        (dict(solver="lu"), "solver"),
        (dict(backend="torch"), "backend"),
        (dict(noise_variance_bounds=(1.0, 0.1)), "noise_variance_bounds"),
        (dict(priors={"nope": None}), "unknown hyperparameters"),
    ],
)
def test_bad_parameters(data, params, match):
    with pytest.raises(ValueError, match=match):
        SGLDGPRegressor(**{**FAST, **params}).fit(*data)


def test_bad_input(fitted, data):
    X, y = data
    with pytest.raises(ValueError, match="NaN"):
        SGLDGPRegressor(**FAST).fit(np.where(X > 2, np.nan, X), y)
    with pytest.raises(ValueError, match="NaN"):
        fitted.predict(np.array([[np.nan]]))
    with pytest.raises(ValueError, match="features"):
        fitted.predict(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="At most one"):
        fitted.predict(X, return_std=True, return_cov=True)
    with pytest.raises(NotFittedError):
        SGLDGPRegressor().predict(X)


def test_failed_fit_keeps_previous_state(fitted, data):
    X, y = data
    reg = pickle.loads(pickle.dumps(fitted))
    before = reg.predict(X)
    with pytest.raises(ValueError):
        reg.set_params(n_iter=0).fit(X, y)
    np.testing.assert_array_equal(reg.predict(X), before)


def test_cupy_backend_missing(monkeypatch, data):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(BackendUnavailableError, match="pip install cupy"):
        SGLDGPRegressor(**FAST, backend="cupy").fit(*data)


def test_constant_target(data):
    X, _ = data
    reg = SGLDGPRegressor(**FAST).fit(X, np.full(40, 2.0))
    mean, std = reg.predict(X[:4], return_std=True)
    np.testing.assert_allclose(mean, 2.0, atol=1e-6)
    assert np.all(np.isfinite(std)) and np.all(std >= 0)


def test_nan_gradient_is_survived(monkeypatch, data):
    from skgp_bayes.targets import stochastic

    original = stochastic.StochasticMarginalGradient.log_likelihood_gradient
    calls = {"n": 0}

    def flaky(self, params):
        calls["n"] += 1
        if calls["n"] == 5:
            return np.full(params.shape[0], np.nan)
        return original(self, params)

    monkeypatch.setattr(
        stochastic.StochasticMarginalGradient, "log_likelihood_gradient", flaky
    )
    with pytest.warns(SamplerWarning, match="rejected"):
        reg = SGLDGPRegressor(**{**FAST, "n_chains": 1}).fit(*data)
    assert reg.diagnostics_["n_rejected"] == 1
    assert np.all(np.isfinite(reg.chains_))


def test_verbose_prints_progress(data, capsys):
    # verbose=2: the detailed lines (1 shows one progress line instead)
    SGLDGPRegressor(**{**FAST, "n_chains": 1, "verbose": 2}).fit(*data)
    out = capsys.readouterr().out
    assert "[SGLDGPRegressor] MAP" in out
    assert "[SGLDGPRegressor chain 0] iteration 60/60" in out


def test_diagnostics_with_one_chain(data):
    reg = SGLDGPRegressor(
        n_iter=250, n_chains=1, burn_in=50, solver="ulisse", random_state=0
    ).fit(*data)
    assert reg.samples_.shape == (1, 200, 3)
    assert np.all(np.isnan(reg.rhat_))
    assert np.all(np.isfinite(reg.ess_)) and np.all(reg.ess_ > 0)
    assert any("2 chains" in note for note in reg.diagnostics_["notes"])


# Constant step: the schedule does not depend on n_iter, so a warm start can
# equal one long fit. probe_refresh=7 puts the split (45) inside a probe block.
WARM = dict(
    n_chains=2,
    solver="ulisse",
    step_size_start=0.05,
    step_size_end=0.05,
    probe_refresh=7,
    random_state=0,
)


def test_warm_start_equals_one_long_fit(data, monkeypatch):
    from skgp_bayes.targets import stochastic

    X, y = data
    whole = SGLDGPRegressor(n_iter=70, **WARM).fit(X, y)
    reg = SGLDGPRegressor(n_iter=45, warm_start=True, **WARM).fit(X, y)
    assert reg.n_iter_ == 45 and reg.chains_.shape == (2, 45, 3)
    np.testing.assert_array_equal(reg.chains_, whole.chains_[:, :45])
    # A warm start interrupted inside the second chain leaves the stored
    # chain states (random streams included) as they were.
    original = stochastic.StochasticMarginalGradient.log_likelihood_gradient
    calls = {"n": 0}

    def interrupted(self, params):
        calls["n"] += 1
        if calls["n"] > 30:
            raise RuntimeError("interrupted")
        return original(self, params)

    reg.set_params(n_iter=25)
    with monkeypatch.context() as patch:
        patch.setattr(
            stochastic.StochasticMarginalGradient,
            "log_likelihood_gradient",
            interrupted,
        )
        with pytest.raises(RuntimeError, match="interrupted"):
            reg.fit(X, y)
    assert calls["n"] == 31 and reg.n_iter_ == 45
    reg = pickle.loads(pickle.dumps(reg))  # the chain states survive pickling
    reg.fit(X, y)
    for name in (
        "chains_",
        "step_sizes_",
        "samples_",
        "noise_variance_",
        "map_params_",
    ):
        np.testing.assert_array_equal(getattr(reg, name), getattr(whole, name))
    assert reg.n_iter_ == 70 and reg.burn_in_ == whole.burn_in_ == 35
    assert reg.frozen_at_ == whole.frozen_at_
    assert (
        reg.diagnostics_["cg_iterations_mean"]
        == whole.diagnostics_["cg_iterations_mean"]
    )
    np.testing.assert_array_equal(reg.predict(X), whole.predict(X))


def test_warm_start_continues_the_first_schedule(data):
    X, y = data
    reg = SGLDGPRegressor(
        n_iter=40,
        n_chains=1,
        solver="ulisse",
        step_size_end=1e-4,
        warm_start=True,
        freeze_threshold=None,
        random_state=0,
    ).fit(X, y)
    first = reg.chains_.copy()
    reg.set_params(n_iter=20).fit(X, y)
    assert reg.chains_.shape == (1, 60, 3)
    np.testing.assert_array_equal(reg.chains_[:, :40], first)
    a, b = sgld_schedule(0.1, 1e-4, 40)
    np.testing.assert_allclose(reg.step_sizes_[0], a / (b + np.arange(60)), rtol=1e-12)
    assert not np.array_equal(reg.chains_[0, 40], reg.chains_[0, 39])


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda X, y: (X[:-1], y[:-1]), "another X"),
        (lambda X, y: (X + 0.5, y), "another X"),
        (lambda X, y: (X, y[::-1]), "another y"),
    ],
)
def test_warm_start_with_other_data_raises(data, change, match):
    X, y = data
    reg = SGLDGPRegressor(n_iter=20, warm_start=True, **WARM).fit(X, y)
    before = reg.chains_.copy()
    with pytest.raises(ValueError, match=match):
        reg.fit(*change(X, y))
    np.testing.assert_array_equal(reg.chains_, before)
    assert reg.n_features_in_ == 1


def test_warm_start_with_other_dynamics_raises(data):
    X, y = data
    reg = SGLDGPRegressor(n_iter=20, warm_start=True, **WARM).fit(X, y)
    with pytest.raises(ValueError, match="n_probes: 16 -> 2"):
        reg.set_params(n_probes=2).fit(X, y)
    with pytest.raises(ValueError, match="hyperparameters"):
        reg.set_params(n_probes=16, noise_variance_bounds="fixed").fit(X, y)
    # allowed changes, and warm_start=False starts afresh
    reg.set_params(noise_variance_bounds=(1e-6, 1e2), thin=2, burn_in=5).fit(X, y)
    assert reg.chains_.shape == (2, 40, 3) and reg.samples_.shape == (2, 18, 3)
    reg.set_params(warm_start=False, n_probes=2).fit(X, y)
    assert reg.chains_.shape == (2, 20, 3)


# ------------------------------------------------------- solver="auto"
def test_auto_solver_takes_cholesky_while_a_factorisation_is_cheap(data, monkeypatch):
    from skgp_bayes import _config, _sgld_solvers

    X, y = data
    small = dict(n_iter=30, n_chains=1, random_state=0)
    reg = SGLDGPRegressor(**small).fit(X, y)
    assert reg.solver_ == "cholesky"
    assert reg.diagnostics_["cg_iterations_mean"] == 0.0
    # exact gradients: the chain is Metropolis-adjusted, so some proposals
    # are refused and the chain repeats its state
    assert 0.0 < reg.diagnostics_["acceptance_rate"] < 1.0
    # beyond the size threshold, or when K and its inverse would not fit in
    # a quarter of the dense-memory limit, "auto" takes ULISSE
    monkeypatch.setattr(_sgld_solvers, "CHOLESKY_GRADIENT_MAX_N", 39)
    assert SGLDGPRegressor(**small).fit(X, y).solver_ == "ulisse"
    monkeypatch.setattr(_sgld_solvers, "CHOLESKY_GRADIENT_MAX_N", 40)
    assert SGLDGPRegressor(**small).fit(X, y).solver_ == "cholesky"
    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 4 * 2 * 8 * 40 * 40 - 1)
    assert SGLDGPRegressor(**small).fit(X, y).solver_ == "ulisse"
    # asked for explicitly, Cholesky above the whole limit is refused
    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 2 * 8 * 40 * 40 - 1)
    with pytest.raises(MemoryError, match="solver='ulisse'"):
        SGLDGPRegressor(**small, solver="cholesky").fit(X, y)
    for solver in ("ulisse", "cg"):
        fitted = SGLDGPRegressor(**small, solver=solver).fit(X, y)
        assert fitted.solver_ == solver
        assert fitted.diagnostics_["cg_iterations_mean"] > 0
        assert np.isnan(fitted.diagnostics_["acceptance_rate"])


# ------------------------------------------------------- n_iter="auto"
@pytest.fixture(scope="module")
def default_fit(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a default fit is quiet
        return SGLDGPRegressor(random_state=0).fit(*data)


def test_default_run_length_meets_the_rule(default_fit):
    reg = default_fit
    assert reg.diagnostics_["converged"]
    assert np.all(reg.rhat_ <= 1.01) and np.all(reg.ess_ >= 100)
    # first block: the warm-up + 1000; each further one a quarter of the
    # kept span, rounded up
    lengths = [_FIRST]
    for _ in range(reg.diagnostics_["blocks"] - 1):
        lengths.append(lengths[-1] + -(-(lengths[-1] - WARMUP) // 4))
    assert reg.n_iter_ == lengths[-1] == reg.chains_.shape[1]
    assert reg.burn_in_ == WARMUP and reg.frozen_at_ == [WARMUP - 1] * 2
    assert reg.samples_.shape == (2, reg.n_iter_ - WARMUP, 3)


def test_chains_that_cannot_mix_in_the_budget_warn(data):
    # A step of 1e-6 moves a chain about 1e-3 posterior sds per iteration:
    # the two chains stay near their different starts, so their R-hat is
    # far above 1.01 and their ESS a few.
    reg = SGLDGPRegressor(
        solver="ulisse",
        step_size_start=1e-6,
        n_probes=1,
        cg_preconditioner_rank=0,
        max_iter=1300,
        random_state=0,
    )
    with pytest.warns(SamplerWarning) as caught:
        reg.fit(*data)
    messages = [str(w.message) for w in caught if "did not mix" in str(w.message)]
    assert len(messages) == 1
    assert "max_iter=1300" in messages[0] and "1300 run by this fit" in messages[0]
    assert f"{np.max(reg.rhat_):.3f}" in messages[0]
    assert f"{np.min(reg.ess_):.0f}" in messages[0]
    assert reg.n_iter_ == 1300 and not reg.diagnostics_["converged"]
    assert reg.diagnostics_["blocks"] == 2  # 200 warm-up + 1000, then 100 left
    # chains that barely move are not taken for chains in different modes
    assert "sit apart" not in messages[0]


def test_the_warning_names_parameters_whose_chains_sit_apart():
    rng = np.random.default_rng(0)
    kept = rng.normal(size=(2, 400, 2))
    kept[1, :, 0] += 4.0  # two modes in the first parameter
    message = not_mixed_message(
        np.array([1.9, 1.0]), np.array([4.0, 800.0]), ["a", "b"], 100, 100, kept
    )
    assert "The chains sit apart for a (chain means" in message
    assert "b (chain" not in message
    # two random walks of tiny steps from different starts: far apart,
    # narrow, and one or two effective draws each
    walks = np.cumsum(1e-3 * rng.normal(size=(2, 400, 1)), axis=1)
    walks[1] += 1.0
    quiet = not_mixed_message(np.array([9.0]), np.array([2.0]), ["a"], 100, 100, walks)
    assert "sit apart" not in quiet


def test_auto_warm_start_extends_the_chains(data):
    reg = SGLDGPRegressor(max_iter=_FIRST, warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        reg.fit(*data)
    first = reg.chains_.copy()
    reg.set_params(max_iter=20000).fit(*data)
    assert reg.n_iter_ >= _FIRST + 250  # at least one further block
    np.testing.assert_array_equal(reg.chains_[:, :_FIRST], first)
    assert reg.diagnostics_["converged"]


def test_verbose_reports_the_run_length(data, capsys):
    SGLDGPRegressor(max_iter=_FIRST + 100, verbose=2, random_state=0).fit(*data)
    out = capsys.readouterr().out
    assert f"[SGLDGPRegressor] {_FIRST} iterations per chain: split R-hat" in out
    assert "acceptance" in out


@pytest.mark.statistical
def test_exact_gradient_chain_matches_quadrature(data, default_fit, stat_seed):
    # The default fit (exact gradients, MALA, automatic run length) against
    # the posterior by quadrature. No step-size bias to allow for: the
    # Metropolis adjustment makes the chain exact. Standard errors from the
    # chains' own bulk ESS as in test_posterior_matches_quadrature; 5 of
    # them on 3 means and 3 sds: 3e-6 false failures for Gaussian errors.
    X, y = data
    reg = default_fit
    if stat_seed:
        reg = SGLDGPRegressor(random_state=stat_seed).fit(X, y)
    _, _, marginals = assert_draws_match_quadrature(reg, X, y)
    for marginal in marginals:  # the grid holds the whole posterior
        assert max(marginal[0], marginal[-1]) < 1e-3


def test_auto_blocks_are_the_same_in_worker_processes(data):
    # Two blocks (the first, then the 100 left of max_iter): the chain
    # states, MALA's adapted step and metric and the random streams cross
    # process boundaries.
    kw = dict(max_iter=_FIRST + 100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        one = SGLDGPRegressor(**kw, n_jobs=1).fit(*data)
        two = SGLDGPRegressor(**kw, n_jobs=2).fit(*data)
    assert one.n_iter_ == _FIRST + 100 or one.diagnostics_["converged"]
    np.testing.assert_array_equal(one.chains_, two.chains_)
    np.testing.assert_array_equal(one.step_sizes_, two.step_sizes_)
