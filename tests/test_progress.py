"""Long fits that talk: the progress line and scikit-learn's fit callbacks."""

import io
import re
from collections import Counter

import numpy as np
import pytest
from _estimators import CHEAP
from sklearn.base import is_classifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgp_bayes._progress import HAS_SKLEARN_CALLBACKS, FitProgress

# The stages each estimator reports, in order.
STAGES = {
    "SteinGPRegressor": ["SVGD"],
    "SteinGPClassifier": ["SVGD"],
    "SGLDGPRegressor": ["Langevin chains"],
    # The collapsed bound is maximised from the start and again from the
    # length-scale screen's point (skgp_bayes._starts), which beats the
    # start on this data: two searches, two tasks.
    # Warm-up is a task of its own: the chains then share one step size.
    "VariationalMCMCRegressor": [
        "Gaussian approximation",
        "Gaussian approximation",
        "HMC warm-up",
        "HMC chains",
    ],
    # The SVGP bound is maximised from three k-means placements of the
    # inducing inputs (_approximation._SVGP_STARTS): three tasks.
    "VariationalMCMCClassifier": [
        "Gaussian approximation",
        "Gaussian approximation",
        "Gaussian approximation",
        "HMC warm-up",
        "HMC chains",
    ],
    "SelectiveSVGP": ["selection"],
    "SelectiveSVGPClassifier": ["selection"],
}

pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn.exceptions.ConvergenceWarning",
    "ignore::skgp_bayes.exceptions.SamplerWarning",
)

needs_callbacks = pytest.mark.skipif(
    not HAS_SKLEARN_CALLBACKS,
    reason="the installed scikit-learn has no sklearn.callback API",
)


def _data(estimator):
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (30, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
    return X, (y > 0).astype(int) if is_classifier(estimator) else y


class _Tty(io.StringIO):
    def isatty(self):
        return True


class Recorder:
    """A custom FitCallback that records every task it sees end."""

    def __init__(self):
        self.begun, self.ended, self.set_up, self.torn_down = [], [], 0, 0

    def setup(self, estimator, context):
        self.set_up += 1

    def teardown(self, estimator, context):
        self.torn_down += 1

    def on_fit_task_begin(self, estimator, context):
        self.begun.append(context.task_name)

    def on_fit_task_end(self, estimator, context):
        self.ended.append(context.task_name)


# --------------------------------------------------------------- the line
def test_plain_lines_carry_the_fields_and_the_time_left():
    out = io.StringIO()
    bar = FitProgress("Model", "HMC chains", 50, n_runs=2, stream=out)
    for _chain in range(2):
        for i in range(1, 51):
            bar(i, 50, {"acceptance": 0.8, "divergences": 0})
    bar.close()
    lines = out.getvalue().splitlines()
    # the first iteration, then one line per tenth of the 100 iterations
    # (the second chain counts on from the first), no carriage return
    assert len(lines) == 11 and "\r" not in out.getvalue()
    assert lines[0].startswith("[Model] HMC chains 1/100 (1%)")
    assert lines[5].startswith("[Model] HMC chains 50/100 (50%), acceptance 0.8")
    assert "divergences 0" in lines[5] and "left" in lines[5]
    assert lines[-1].startswith("[Model] HMC chains 100/100 (100%)")
    assert "left" not in lines[-1]  # nothing is left at the end


def test_a_terminal_gets_one_line_rewritten_in_place(monkeypatch):
    monkeypatch.setattr("skgp_bayes._progress.TTY_INTERVAL", 0.0)
    out = _Tty()
    bar = FitProgress("Model", "SVGD", 300, stream=out)
    for i in range(1, 121):
        bar(i, 300, {"field": 0.01})
    bar.close()  # stopped early, as on a converged run
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    updates = text.rstrip("\n").split("\r")[1:]
    assert len(updates) == 121  # every call, plus the final rewrite
    assert updates[-1].startswith("[Model] SVGD 120/300 (40%), field 0.01")
    # a shorter line blanks what the longer one before it left behind
    assert all(len(u) >= len(updates[0].rstrip()) for u in updates)


def test_the_time_left_is_the_mean_pace_times_the_iterations_left(monkeypatch):
    clock = iter([0.0, 10.0])
    monkeypatch.setattr("skgp_bayes._progress.time.perf_counter", lambda: next(clock))
    bar = FitProgress("Model", "SVGD", 100, show=False)
    bar(25, 100)
    # 25 iterations in 10 s: 75 more take 30 s
    assert bar.line().endswith("10.0 s elapsed, about 30.0 s left")


def test_a_stage_that_stops_by_its_rule_shows_no_share_of_its_guard(monkeypatch):
    clock = iter([0.0, 10.0])
    monkeypatch.setattr("skgp_bayes._progress.time.perf_counter", lambda: next(clock))
    bar = FitProgress("Model", "Fit", 15_000, show=False, stops_early=True)
    bar(25, 15_000, {"ELBO": -3.5})
    # the guard would give 1% done and an hour and a half left
    assert (
        bar.line()
        == "[Model] Fit iteration 25 (at most 15000), ELBO -3.5, 10.0 s elapsed"
    )


def test_the_variational_approximation_reports_against_its_guard(capsys):
    from skgp_bayes import VariationalMCMCClassifier

    clf = VariationalMCMCClassifier(
        n_inducing=4, n_chains=1, n_warmup=20, n_samples=20, max_samples=20,
        verbose=1, random_state=0,
    )  # fmt: skip
    X, y = _data(clf)
    clf.fit(X, y)
    lines = [
        line for line in capsys.readouterr().err.splitlines()
        if "Gaussian approximation" in line
    ]  # fmt: skip
    assert lines and all("(at most 15000)" in line for line in lines)
    assert not any(" left" in line for line in lines)


@pytest.mark.parametrize(
    "name, stage, guard",
    [
        ("SteinGPRegressor", "SVGD", 5),
        ("SteinGPClassifier", "SVGD", 5),
        ("SelectiveSVGP", "selection", 5),
    ],
)
def test_stages_ended_by_their_rule_count_against_their_guard(
    name, stage, guard, capsys
):
    # SVGD on the full data and the selection stop on their own rules long
    # before the guard, so a share of it or a time left would mislead.
    estimator = CHEAP[name]().set_params(verbose=1)
    estimator.fit(*_data(estimator))
    lines = [
        line for line in capsys.readouterr().err.splitlines()
        if line.startswith(f"[{name}] {stage} ")
    ]  # fmt: skip
    assert lines and all(f"(at most {guard})" in line for line in lines)
    assert not any(" left" in line or "%)" in line for line in lines)


def test_minibatch_svgd_keeps_its_share_and_time_left(capsys):
    from skgp_bayes import SteinGPRegressor

    # The minibatch field's noise keeps it above tol: max_iter is the run.
    reg = SteinGPRegressor(
        n_particles=2, max_iter=20, inducing_points=6, batch_size=10,
        verbose=1, random_state=0,
    )  # fmt: skip
    reg.fit(*_data(reg))
    err = capsys.readouterr().err
    assert re.search(r"^\[SteinGPRegressor\] SVGD 20/20 \(100%\)", err, re.M), err
    assert " left" in err and "at most" not in err


# ------------------------------------------------------------- estimators
@pytest.mark.parametrize("name", sorted(CHEAP))
def test_verbose_one_writes_a_progress_line_per_stage(name, capsys):
    estimator = CHEAP[name]().set_params(verbose=1)
    estimator.fit(*_data(estimator))
    err = capsys.readouterr().err
    for stage in STAGES[name]:
        # a stage ended by its own rule counts against its guard instead
        done = r"(\d+/\d+ \(\d+%\)|iteration \d+ \(at most \d+\))"
        pattern = rf"^\[{name}\] {stage} {done}, .* elapsed"
        assert re.search(pattern, err, flags=re.MULTILINE), (stage, err)


@pytest.mark.parametrize("name", sorted(CHEAP))
def test_verbose_zero_writes_nothing(name, capsys):
    estimator = CHEAP[name]()
    estimator.fit(*_data(estimator))
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_verbose_two_keeps_the_detailed_lines_and_no_progress_line(capsys):
    estimator = CHEAP["SteinGPRegressor"]().set_params(verbose=2)
    estimator.fit(*_data(estimator))
    captured = capsys.readouterr()
    assert "[SteinGPRegressor] [SVGD] iter" in captured.out
    assert "SVGD" not in captured.err


# -------------------------------------------------------------- callbacks
def _expected_iterations(name, estimator):
    if name.startswith("Stein"):
        return estimator.n_iter_
    if name == "SGLDGPRegressor":
        return estimator.n_iter * estimator.n_chains
    if name.startswith("Variational"):
        hmc = estimator.n_chains * (estimator.n_warmup + estimator.n_samples)
        return estimator.diagnostics_["svgp_iterations"] + hmc
    return None  # the selection may skip a step whose bound failed


@needs_callbacks
@pytest.mark.parametrize("name", sorted(CHEAP))
def test_a_custom_fit_callback_receives_the_iterations(name):
    recorder = Recorder()
    estimator = CHEAP[name]().set_callbacks(recorder)
    estimator.fit(*_data(estimator))
    ended = Counter(recorder.ended)
    assert recorder.set_up == recorder.torn_down == 1
    assert Counter(recorder.begun) == ended  # every task that began ended
    assert ended["fit"] == 1 and recorder.ended[-1] == "fit"
    stages = [task for task in recorder.ended if task not in ("fit", "iteration")]
    assert stages == STAGES[name]
    expected = _expected_iterations(name, estimator)
    if expected is None:
        assert 1 <= ended["iteration"] <= estimator.n_select_iter
    else:
        assert ended["iteration"] == expected
    # nothing of the fit's context is left on the estimator
    assert not hasattr(estimator, "_callback_fit_ctx")


@needs_callbacks
def test_callbacks_leave_the_fit_unchanged():
    X, y = _data(CHEAP["SteinGPRegressor"]())
    plain = CHEAP["SteinGPRegressor"]().fit(X, y)
    watched = CHEAP["SteinGPRegressor"]().set_callbacks(Recorder()).fit(X, y)
    np.testing.assert_array_equal(plain.particles_, watched.particles_)


@needs_callbacks
def test_set_callbacks_refuses_what_is_not_a_fit_callback():
    with pytest.raises(TypeError, match="FitCallback protocol"):
        CHEAP["SteinGPRegressor"]().set_callbacks(object())


@needs_callbacks
def test_a_pipeline_passes_its_propagated_callback_down():
    # An auto-propagated callback set on the pipeline reaches our estimator,
    # whose tasks join the pipeline's task tree.
    from sklearn.callback import AutoPropagatedCallback

    class Propagated(Recorder):
        max_propagation_depth = None

    assert isinstance(Propagated(), AutoPropagatedCallback)
    recorder = Propagated()
    estimator = CHEAP["SteinGPRegressor"]()
    pipe = make_pipeline(StandardScaler(), estimator).set_callbacks(recorder)
    pipe.fit(*_data(estimator))
    assert Counter(recorder.ended)["iteration"] == pipe[-1].n_iter_
    assert "SVGD" in recorder.ended


@needs_callbacks
@pytest.mark.parametrize("name", sorted(CHEAP))
def test_scikit_learns_progress_bar_runs_on_a_fit(name):
    pytest.importorskip("rich")
    from sklearn.callback import ProgressBar

    estimator = CHEAP[name]().set_callbacks(ProgressBar())
    estimator.fit(*_data(estimator))
    assert not hasattr(estimator, "_callback_fit_ctx")


def test_runs_in_other_processes_are_reported_when_the_stage_ends():
    out = io.StringIO()
    with FitProgress("Model", "HMC chains", 40, n_runs=2, stream=out) as bar:
        bar.in_process = False  # the engines got no callable
    assert bar.done == 80
    assert out.getvalue().splitlines()[-1].startswith("[Model] HMC chains 80/80")
    failed = FitProgress("Model", "HMC chains", 40, n_runs=2, stream=io.StringIO())
    failed.in_process = False
    with pytest.raises(RuntimeError), failed:
        raise RuntimeError("a chain failed")
    assert failed.done == 0  # not reported as run to its end


def test_parallel_chains_report_their_stage_when_it_ends(capsys):
    estimator = CHEAP["SGLDGPRegressor"]().set_params(n_chains=2, n_jobs=2, verbose=1)
    estimator.fit(*_data(estimator))
    err = capsys.readouterr().err
    # workers cannot write this process's line: one line when the block ends
    assert re.search(r"^\[SGLDGPRegressor\] Langevin chains 20/20 \(100%\)", err, re.M)
    assert "Langevin chains 1/20" not in err
