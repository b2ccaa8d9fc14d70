"""Warnings point at the user's line, come once per fit, and give advice that works."""

import pickle
import threading
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skgp_bayes._warnings as warnings_module
from skgp_bayes import (
    SelectiveSVGP,
    SelectiveSVGPClassifier,
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)
from skgp_bayes._warnings import (
    WarningLog,
    bound_to_fit,
    collect_warnings,
    fit_warnings,
    report,
    warn_user,
)
from skgp_bayes.exceptions import NumericalWarning, SamplerWarning
from skgp_bayes.inference import run_svgd

_RNG = np.random.default_rng(0)
X = _RNG.uniform(-3, 3, (40, 1))
Y_REG = np.sin(X[:, 0]) + 0.1 * _RNG.standard_normal(40)
Y_CLF = (X[:, 0] > 0).astype(int)

_VMCMC_SMALL = dict(
    n_inducing=5,
    n_chains=2,
    n_warmup=20,
    n_samples=10,
    max_samples=10,
    max_leapfrog=3,
    random_state=0,
)
_SELECTIVE_SMALL = dict(n_candidates=8, n_pre_iter=2, n_select_iter=2, random_state=0)
_SELECTIVE_KEPT = dict(_SELECTIVE_SMALL, hyperparameters_from="kept")

# One line per estimator: a cheap instance whose fit warns, and its target.
_WARNING_FITS = {
    "SteinGPRegressor": (lambda: SteinGPRegressor(n_particles=3, max_iter=3), Y_REG),
    "SteinGPClassifier": (lambda: SteinGPClassifier(n_particles=3, max_iter=3), Y_CLF),
    "SGLDGPRegressor": (
        lambda: SGLDGPRegressor(
            n_iter=20,
            n_chains=1,
            solver="ulisse",
            cg_max_iter=3,
            cg_preconditioner_rank=0,
        ),
        Y_REG,
    ),
    "VariationalMCMCClassifier": (
        lambda: VariationalMCMCClassifier(svgp_max_iter=2, **_VMCMC_SMALL),
        Y_CLF,
    ),
    "VariationalMCMCRegressor": (
        lambda: VariationalMCMCRegressor(svgp_max_iter=2, **_VMCMC_SMALL),
        Y_REG,
    ),
    "SelectiveSVGP": (lambda: SelectiveSVGP(n_post_iter=1, **_SELECTIVE_SMALL), Y_REG),
    "SelectiveSVGPClassifier": (
        lambda: SelectiveSVGPClassifier(n_post_iter=1, **_SELECTIVE_SMALL),
        Y_CLF,
    ),
}
_LIBRARY_CATEGORIES = (ConvergenceWarning, SamplerWarning, NumericalWarning)


def _library_warnings(caught):
    return [w for w in caught if issubclass(w.category, _LIBRARY_CATEGORIES)]


def _fit_recording(estimator, y=Y_REG):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return _library_warnings(caught)


def _messages(caught, text):
    return [str(w.message) for w in caught if text in str(w.message)]


# ---------------------------------------------------------------- attribution
@pytest.mark.parametrize("name", sorted(_WARNING_FITS))
@pytest.mark.parametrize("how", ["direct", "pipeline", "cross_val_score"])
def test_fit_warnings_point_at_the_calling_line(name, how):
    make, y = _WARNING_FITS[name]
    estimator = make().set_params(random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if how == "direct":
            line = _line() + 1
            estimator.fit(X, y)
        elif how == "pipeline":
            line = _line() + 1
            make_pipeline(StandardScaler(), estimator).fit(X, y)
        else:
            line = _line() + 1
            cross_val_score(estimator, X, y, cv=2, n_jobs=1, error_score="raise")
    ours = _library_warnings(caught)
    assert ours, f"{name} raised no warning in this configuration"
    assert {(w.filename, w.lineno) for w in ours} == {(__file__, line)}


def _line():
    import sys

    return sys._getframe(1).f_lineno


# ---------------------------------------------------------------- aggregation
def test_sgld_cg_budget_warns_once_naming_cg_max_iter():
    caught = _fit_recording(_WARNING_FITS["SGLDGPRegressor"][0]().set_params(n_iter=40))
    budget = [w for w in caught if "budget" in str(w.message)]
    assert len(budget) == 1
    assert "cg_max_iter=3" in str(budget[0].message)
    assert "in 40 of 40 gradient evaluations" in str(budget[0].message)


def test_sgld_cg_budget_advice_removes_the_warning():
    # The advice: cg_max_iter=None, the default budget.
    estimator = _WARNING_FITS["SGLDGPRegressor"][0]().set_params(
        cg_max_iter=None, random_state=0
    )
    assert _messages(_fit_recording(estimator), "budget") == []


def test_grouping_counts_and_keeps_the_worst():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fit_warnings():
            for residual in (0.5, 3.0, 1.0):
                warn_user(f"residual {residual}", UserWarning, worst=residual)
            warn_user("k1__length_scale at 2", UserWarning)
            warn_user("k2__length_scale at 2", UserWarning)
            warn_user("residual 9.0", RuntimeWarning)  # another category
            warn_user("first wording 1", UserWarning, key="same")
            warn_user("second wording 2", UserWarning, key="same")
    got = [(w.category, str(w.message)) for w in caught]
    assert got == [
        (
            UserWarning,
            "residual 3.0 (Raised 3 times during this fit; the figures are "
            "those of the worst occurrence.)",
        ),
        (UserWarning, "k1__length_scale at 2"),
        (UserWarning, "k2__length_scale at 2"),
        (RuntimeWarning, "residual 9.0"),
        (
            UserWarning,
            "first wording 1 (Raised 2 times during this fit; the figures are "
            "those of the first occurrence.)",
        ),
    ]
    assert {w.filename for w in caught} == {__file__}


def test_nested_fits_report_once_from_the_outermost():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fit_warnings() as outer:
            warn_user("step 1 failed", UserWarning)
            with fit_warnings() as inner:
                assert inner is None
                warn_user("step 2 failed", UserWarning)
            assert caught == []  # nothing before the outer fit ends
            assert outer.groups()[0]["count"] == 2
    assert len(caught) == 1
    assert "Raised 2 times" in str(caught[0].message)


def test_estimator_fit_inside_a_fit_is_reported_by_the_outer_one():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fit_warnings():
            # the post-training stage runs on the kept-set pipeline only
            SelectiveSVGP(n_post_iter=1, **_SELECTIVE_KEPT).fit(X, Y_REG)
            SelectiveSVGP(n_post_iter=1, **_SELECTIVE_KEPT).fit(X, Y_REG)
    post = _messages(caught, "Post-training")
    assert len(post) == 1 and "Raised 2 times" in post[0]


def test_warnings_reach_the_user_when_the_fit_fails():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyError, match="boom"):
            with fit_warnings():
                warn_user("seen before the failure", UserWarning)
                raise KeyError("boom")
    assert [str(w.message) for w in caught] == ["seen before the failure"]
    assert caught[0].filename == __file__


def test_error_filter_raises_when_the_fit_ends_or_notes_the_failure():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="late"):
            with fit_warnings():
                warn_user("late", UserWarning)
                warn_user("late", UserWarning)
        with pytest.raises(KeyError) as failure:
            with fit_warnings():
                warn_user("noted", UserWarning)
                raise KeyError("first")
    assert any("noted" in note for note in failure.value.__notes__)


def test_pytest_warns_and_ignore_filters_see_the_grouped_warning():
    estimator = SelectiveSVGP(n_post_iter=1, **_SELECTIVE_KEPT)
    with pytest.warns(ConvergenceWarning, match="n_post_iter") as record:
        estimator.fit(X, Y_REG)
    assert record[0].filename == __file__
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator.fit(X, Y_REG)
    assert _messages(caught, "Post-training") == []


def test_other_libraries_and_worker_threads_are_grouped():
    def worker():
        warn_user("from a thread 1", UserWarning)
        np.log(np.zeros(1))  # NumPy's own RuntimeWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fit_warnings():
            threads = [threading.Thread(target=bound_to_fit(worker)) for _ in range(3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    got = sorted((w.category.__name__, str(w.message)) for w in caught)
    assert [name for name, _ in got] == ["RuntimeWarning", "UserWarning"]
    assert got[0][1].startswith("divide by zero")
    assert got[1][1].startswith("from a thread 1 (Raised 3 times")
    assert {w.filename for w in caught} == {__file__}


def test_a_worker_process_log_travels_back():
    with collect_warnings() as log:
        warn_user("in the worker 1", UserWarning)
        warn_user("in the worker 2", UserWarning)
    shipped = pickle.loads(pickle.dumps(log))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fit_warnings():
            report(shipped)
            report(shipped)
    assert len(caught) == 1 and "Raised 4 times" in str(caught[0].message)
    assert caught[0].filename == __file__


def test_warning_log_merge_keeps_keys_and_worst():
    a, b = WarningLog(), WarningLog()
    a.add("r 1", UserWarning, key="k", worst=1.0)
    b.add("other r 5", UserWarning, key="k", worst=5.0, count=2)
    a.merge(b)
    (group,) = a.groups()
    assert (group["message"], group["count"], group["worst"]) == ("other r 5", 3, 5.0)


# --------------------------------------------------------------------- advice
@pytest.mark.parametrize(
    "make, y",
    [
        (lambda m: SteinGPRegressor(n_particles=3, max_iter=m, random_state=0), Y_REG),
        (lambda m: SteinGPClassifier(n_particles=3, max_iter=m, random_state=0), Y_CLF),
    ],
    ids=["regressor", "classifier"],
)
def test_svgd_non_convergence_states_its_figures(make, y):
    # What the message promises: the stopping rule's last value and its
    # tolerance (tol="auto": 0.1 / sqrt(n_particles)), in posterior sds.
    estimator = make(1)
    (message,) = _messages(_fit_recording(estimator, y), "stopping rule")
    field = estimator.history_["field"][-1]
    assert f"still {field:.2e} posterior standard deviations" in message
    assert f"tol={0.1 / np.sqrt(3):.2e}" in message


def test_bound_advice_widening_the_bound_removes_the_warning():
    def fit(bounds):
        kernel = ConstantKernel(1.0) * RBF(0.02, length_scale_bounds=bounds)
        estimator = SteinGPRegressor(kernel, n_particles=4, max_iter=30, random_state=0)
        return _messages(_fit_recording(estimator), "bound")

    (message,) = fit((1e-3, 0.05))
    assert "Raise that bound (the kernel's k2__length_scale_bounds)" in message
    assert fit((1e-3, 1e3)) == []


def test_noise_bound_advice_names_noise_variance_bounds():
    def fit(bounds):
        estimator = SteinGPRegressor(
            n_particles=4, max_iter=30, noise_variance_bounds=bounds, random_state=0
        )
        return _messages(_fit_recording(estimator), "bound")

    (message,) = fit((1.0, 10.0))
    assert "Lower that bound (noise_variance_bounds)" in message
    assert fit((1e-6, 10.0)) == []


@pytest.mark.parametrize(
    "cls, y", [(SelectiveSVGP, Y_REG), (SelectiveSVGPClassifier, Y_CLF)]
)
def test_post_training_advice_more_n_post_iter(cls, y):
    # the regressor post-trains only the hyperparameters of the kept set
    kw = {"hyperparameters_from": "kept"} if cls is SelectiveSVGP else {}
    few = cls(n_post_iter=1, **_SELECTIVE_SMALL, **kw)
    assert _messages(_fit_recording(few, y), "n_post_iter")
    more = cls(n_post_iter=500, **_SELECTIVE_SMALL, **kw)
    assert _messages(_fit_recording(more, y), "n_post_iter") == []


@pytest.mark.parametrize(
    "cls, y", [(VariationalMCMCRegressor, Y_REG), (VariationalMCMCClassifier, Y_CLF)]
)
def test_svgp_advice_more_svgp_max_iter(cls, y):
    few = cls(svgp_max_iter=2, **_VMCMC_SMALL)
    assert _messages(_fit_recording(few, y), "svgp_max_iter")
    more = cls(svgp_max_iter=1000, **_VMCMC_SMALL)
    assert _messages(_fit_recording(more, y), "svgp_max_iter") == []


def test_svgd_instability_advice_lower_learning_rate():
    def logp(x):  # standard normal in 1-D
        return -0.5 * np.sum(x**2, axis=1), -x

    start = np.linspace(-3, 3, 20)[:, None] + 2.0

    def unstable(learning_rate):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run_svgd(logp, start, max_iter=200, learning_rate=learning_rate)
        return _messages(caught, "lower learning_rate")

    assert unstable(1e3)
    assert unstable(0.1) == []


def test_divergence_advice_higher_target_accept():
    # Step-size adaptation aimed at an acceptance of 0.3 leaves the steps
    # too large for the curvature (20 divergent transitions of 20 on seeds
    # 0-2); the advised remedy, a target towards 0.99, removes them.
    steps_too_large = dict(_VMCMC_SMALL, svgp_max_iter=2, target_accept=0.3)
    caught = _fit_recording(VariationalMCMCClassifier(**steps_too_large), Y_CLF)
    advice = _messages(caught, "divergent")
    assert advice and "raise target_accept" in advice[0]
    followed = VariationalMCMCClassifier(**dict(steps_too_large, target_accept=0.9))
    assert _messages(_fit_recording(followed, Y_CLF), "divergent") == []


@pytest.mark.statistical
def test_rhat_and_ess_advice_more_warmup_and_samples(stat_seed):
    def fit(n_warmup, n_samples, max_leapfrog):
        estimator = VariationalMCMCClassifier(
            **dict(
                _VMCMC_SMALL,
                n_warmup=n_warmup,
                n_samples=n_samples,
                max_samples=n_samples,
                max_leapfrog=max_leapfrog,
                random_state=stat_seed,
            )
        )
        return _messages(_fit_recording(estimator, Y_CLF), "run-length rule")

    # Short warm-up, short trajectories: over seeds 0-29 the largest R-hat
    # was never below 1.156 and the smallest ESS never above 100.
    advice = fit(20, 50, 3)
    assert advice and "Raise max_samples, or n_warmup" in advice[0]
    # Following the advice (with trajectories long enough to move: with 3
    # leapfrog steps, 2,000 draws per chain still gave R-hat 1.013 for one of
    # three seeds). For converged chains, split R-hat over m = 4 half-chains
    # of n effective draws is about 1 + (chi2_3 / 3 - 1) / (2 n). The
    # smallest ESS was 1,457 to 2,254 of 4,000 draws (seeds 0-3), so n >= 360
    # per half-chain, and R-hat > 1.01 needs chi2_3 > 24.6: probability 2e-5
    # per parameter, 2e-4 over the 8 parameters.
    assert fit(500, 2000, 10) == []


def _unconverged_searches(monkeypatch, which):
    """Make the collapsed bound's L-BFGS searches numbered in ``which`` (0, 1,
    ...) report that they ran out of iterations; returns the list of flags."""
    from skgp_bayes.variational_mcmc import _approximation

    real, flags = _approximation.fit_svgp_lbfgs, []

    def search(*args, **kwargs):
        params, trace, converged, n_iter = real(*args, **kwargs)
        converged = converged and len(flags) not in which
        flags.append(converged)
        return params, trace, converged, n_iter

    monkeypatch.setattr(_approximation, "fit_svgp_lbfgs", search)
    return flags


def test_collapsed_bound_warns_only_for_the_search_it_keeps(monkeypatch):
    # 80 rows of a wiggly function: the default first inducing set (9 inputs)
    # is far short, so the fit grows it and that size's searches are superseded.
    rng = np.random.default_rng(1)
    X80 = rng.uniform(-3, 3, (80, 1))
    y80 = np.sin(3 * X80[:, 0]) + 0.1 * rng.standard_normal(80)
    small = dict(_VMCMC_SMALL, n_inducing=None)

    def fit(which):
        flags = _unconverged_searches(monkeypatch, which)
        model = VariationalMCMCRegressor(**small)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(X80, y80)
        return model, flags, _messages(_library_warnings(caught), "svgp_max_iter")

    model, flags, messages = fit(which={0})
    assert flags[0] is False and len(flags) > 2  # the first size was left behind
    assert model.inducing_points_.shape[0] > 9
    assert messages == []
    # the same fit with every search unfinished: the kept one is, and it warns
    _, flags, messages = fit(which=set(range(100)))
    assert not any(flags) and len(messages) == 1


def test_svgp_starts_warn_only_for_the_start_they_keep(monkeypatch):
    # The classifier's SVGP bound is maximised from three k-means starts and
    # the highest ELBO kept. A start that ran out of iterations at a lower
    # ELBO (its trace ends low here) is left behind and says nothing.
    from skgp_bayes.variational_mcmc import _approximation

    real, calls = _approximation.fit_svgp_lbfgs, []

    def fit(which):
        def search(*args, **kwargs):
            params, trace, converged, n_iter = real(*args, **kwargs)
            if len(calls) in which:
                converged, trace = False, [*trace, trace[-1] - 1e6]
            calls.append(converged)
            return params, trace, converged, n_iter

        calls.clear()
        monkeypatch.setattr(_approximation, "fit_svgp_lbfgs", search)
        model = VariationalMCMCClassifier(**_VMCMC_SMALL)
        return model, _messages(_fit_recording(model, Y_CLF), "svgp_max_iter")

    model, messages = fit(which={0})
    assert calls[0] is False and len(calls) == 3 and messages == []
    assert model.diagnostics_["svgp_elbo"] > -1e5  # a converged start was kept
    _, messages = fit(which={0, 1, 2})
    assert len(messages) == 1


class _GuardRaising:
    """A stand-in for ``interrupts_held`` raising ``error`` where a pending
    interrupt is raised: as the guard is entered (before its block) or as
    it ends (after its block), on the calls listed."""

    def __init__(self, raise_on, error=KeyboardInterrupt):
        self.raise_on, self.error, self.calls = raise_on, error, 0

    def __call__(self):
        self.calls += 1
        return _RaisingGuard(self.raise_on.get(self.calls), self.error)


class _RaisingGuard:
    def __init__(self, where, error):
        self.where, self.error = where, error

    def __enter__(self):
        if self.where == "enter":
            raise self.error

    def __exit__(self, *exc_info):
        if self.where == "exit" and exc_info[0] is None:
            raise self.error
        return False


def _nothing_left_installed():
    return (
        warnings_module._current.get() is None
        and warnings_module._hook_users == 0
        and warnings.showwarning is not warnings_module._showwarning
    )


@pytest.fixture
def restored_log_state():
    # A failure here leaves a log installed; later tests must not inherit it.
    shown = warnings.showwarning
    yield
    if not _nothing_left_installed():
        warnings_module._current.set(None)
        warnings_module._hook_users = 0
        warnings.showwarning = shown


@pytest.mark.parametrize(
    "raise_on",
    [
        {1: "enter"},  # pending as the log is set: nothing set
        {1: "exit"},  # recorded while it was set: undone, no block runs
        {2: "enter"},  # pending as the undo began: undone again after it
        {2: "exit"},  # recorded during the undo: the undo is complete
    ],
    ids=["set-enter", "set-exit", "undo-enter", "undo-exit"],
)
@pytest.mark.parametrize("context", ["collect_warnings", "fit_warnings"])
def test_an_interrupt_at_either_guard_leaves_no_log_installed(
    monkeypatch, restored_log_state, raise_on, context
):
    # A log left current takes every later fit's warnings, and the user's
    # own, unseen; the hook left counted stays installed.
    monkeypatch.setattr(warnings_module, "interrupts_held", _GuardRaising(raise_on))
    body_ran = []
    with pytest.raises(KeyboardInterrupt):
        with getattr(warnings_module, context)():
            body_ran.append(True)
    assert _nothing_left_installed()
    assert body_ran == ([] if 1 in raise_on else [True])


@pytest.mark.parametrize("where", ["enter", "exit"])
def test_a_user_alarm_handler_s_error_at_the_undo_leaves_no_log_installed(
    monkeypatch, restored_log_state, where
):
    # SIGALRM is held too, and a user's handler for it may raise something
    # other than KeyboardInterrupt (a timeout): the undo is retried for it.
    monkeypatch.setattr(
        warnings_module, "interrupts_held", _GuardRaising({2: where}, TimeoutError)
    )
    with pytest.raises(TimeoutError):
        with warnings_module.fit_warnings():
            pass
    assert _nothing_left_installed()
