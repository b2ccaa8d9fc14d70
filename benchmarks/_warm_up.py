"""One untimed fit per estimator before the timed ones: the compiled code's load.

The first fit of an estimator in a fresh process loads its compiled
kernels from Numba's cache (or compiles them when the cache is cold), a
one-off cost of a fraction of a second to a few seconds that no later fit
in the process pays. Left in, it lands on whichever data set comes first in
a run: on the held-out sets, whose first set has 16 training rows, it made
``SteinGPRegressor``'s fit 0.28 s against 0.043 s warm, 7x scikit-learn's
instead of about 1x. The per-fit cost is what the time goals are about, so
``bench_defaults.py`` fits every estimator (and its peer) on small synthetic
problems first and reports the load separately: the first fit's time minus
that of the same fit repeated.

The problems reach the paths that switch on with size (LAPACK from 128
rows, the sparse paths of the variational MCMC estimators beyond 64 rows)
and those below it: a first 40-row problem of each task. Without it the
variational MCMC regressor compiled its exact small-set path inside the
first timed small set's fit (statecrime, 35 rows: 4.1 s in a suite run on
a cold cache against 0.4 s warm). They cover a binary and a three-class
problem with string labels.
"""

import time
import warnings

import numpy as np

__all__ = ["render_warm_up", "warm_up"]

_ROWS = 150
_SMALL_ROWS = 40
_FEATURES = 3


def _problems(task):
    """``(name, X, y)`` of the synthetic problems of ``task``."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2.0, 2.0, (_ROWS, _FEATURES))
    signal = np.sin(2.0 * X[:, 0]) + 0.5 * X[:, 1]
    small = f"{_SMALL_ROWS} rows"
    if task == "regression":
        y = 10.0 + 3.0 * signal + rng.normal(0.0, 0.3, _ROWS)
        return [(small, X[:_SMALL_ROWS], y[:_SMALL_ROWS]), ("regression", X, y)]
    noisy = signal + rng.normal(0.0, 0.3, _ROWS)
    binary = np.where(noisy > 0.0, "yes", "no")
    three = np.array(["low", "mid", "high"])[np.digitize(noisy, [-0.5, 0.5])]
    return [
        (f"binary, {small}", X[:_SMALL_ROWS], binary[:_SMALL_ROWS]),
        ("binary", X, binary),
        ("three classes", X, three),
    ]


def _fit_seconds(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        estimator.fit(X, y)
        return time.perf_counter() - start


def warm_up(names, make_estimator, progress):
    """Fit each ``(name, task)`` of ``names`` twice on every problem of its task.

    Returns one record per estimator and problem: the first fit's seconds,
    the second's, and their difference, the load of compiled code (and
    whatever else a first fit in a process pays).
    """
    records = []
    for name, task in names:
        for problem, X, y in _problems(task):
            progress(f"warm-up: {name} on the {problem} problem ...")

            first = _fit_seconds(make_estimator(name, X.shape[1]), X, y)
            second = _fit_seconds(make_estimator(name, X.shape[1]), X, y)
            records.append(
                {
                    "estimator": name,
                    "problem": problem,
                    "first_fit": first,
                    "second_fit": second,
                    "load": first - second,
                }
            )
    return records


def render_warm_up(records):
    """Markdown lines of the warm-up table."""
    if not records:
        return []
    lines = [
        "### First fit in a process (untimed in the rows above)",
        "",
        f"Synthetic problems of {_SMALL_ROWS} and {_ROWS} rows and {_FEATURES} "
        "inputs, fitted twice before the timed fits, the small one first; 'load' "
        "is the first fit's time minus the "
        "second's, the one-off cost of loading (or compiling) the compiled "
        "code that a user's first fit in a session pays.",
        "",
        "| estimator | problem | first fit (s) | second fit (s) | load (s) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for r in records:
        lines.append(
            f"| {r['estimator']} | {r['problem']} | {r['first_fit']:.2f} | "
            f"{r['second_fit']:.2f} | {r['load']:.2f} |"
        )
    lines.append("")
    return lines
