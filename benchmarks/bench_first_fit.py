"""The first fit after an installation: compilation against the fit itself.

Every estimator's numerical kernels are compiled by Numba on first use and
cached on disk; a user's first fit after ``pip install`` pays for that
once. For each estimator this runs, in a fresh process with an empty
``NUMBA_CACHE_DIR``, its default fit and prediction on the data set of
``bench_defaults.py`` (same split, inputs in their natural units, one
BLAS thread) twice: the first time compiles, the second loads nothing and
compiles nothing, as any later fit in any process would (from the cache).
The compilation's share is the time Numba's compile events report (each
function counted once, its callees' compilation subtracted).
scikit-learn's peer is fitted in the same run for scale; it compiles
nothing.

    PYTHONPATH=. python benchmarks/bench_first_fit.py
    PYTHONPATH=. python benchmarks/bench_first_fit.py --estimators SteinGPRegressor

Run one benchmark at a time: compilation is single-threaded, and another
job on the machine moves these figures by tens of percent.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

# benchmarks/ is on sys.path when run as a script
from bench_defaults import (
    CLASSIFIERS,
    PEERS,
    REGRESSORS,
    load_all,
    make_estimator,
    split,
    task_of,
)
from threadpoolctl import threadpool_limits

from skgp_bayes._compile_time import compile_seconds

DATA = {"regression": "diabetes", "classification": "breast_cancer"}


def _split(data):
    return split(load_all([data])[data], 0.3, 300, 0)


def _fit_and_predict(estimator, X_tr, y_tr, X_te):
    """Seconds of a fit and its prediction (class probabilities, or mean and sd)."""
    start = time.perf_counter()
    estimator.fit(X_tr, y_tr)
    if hasattr(estimator, "predict_proba"):
        estimator.predict_proba(X_te)
    else:
        estimator.predict(X_te, return_std=True)
    return time.perf_counter() - start


def _child(name, data):
    """In the fresh process: two fits, each with the seconds it spent compiling."""
    X_tr, X_te, y_tr, _ = _split(data)
    times = []
    with threadpool_limits(1, user_api="blas"):
        for _ in range(2):
            estimator = make_estimator(name, X_tr.shape[1])
            with compile_seconds() as compiling:
                seconds = _fit_and_predict(estimator, X_tr, y_tr, X_te)
            times.append((seconds, compiling[0]))
    print(json.dumps(times))


def first_fit(name, data):
    """``[(seconds, compiling), (seconds, compiling)]`` of two fits, cold cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", name, data],
            env=env,
            capture_output=True,
            text=True,
        )
    if out.returncode:
        raise RuntimeError(f"{name}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def peer_fit(task):
    """Seconds of scikit-learn's peer fit and prediction on the task's data."""
    X_tr, X_te, y_tr, _ = _split(DATA[task])
    peer = make_estimator(PEERS[task], X_tr.shape[1])
    with threadpool_limits(1, user_api="blas"):
        return _fit_and_predict(peer, X_tr, y_tr, X_te)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--estimators",
        default=",".join(REGRESSORS + CLASSIFIERS),
        help="comma-separated estimator names (default: all)",
    )
    parser.add_argument(
        "--child", nargs=2, metavar=("ESTIMATOR", "DATA"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        warnings.simplefilter("ignore")
        _child(*args.child)
        return
    names = [n for n in args.estimators.split(",") if n]
    peers = {task: peer_fit(task) for task in DATA}
    print(
        "| estimator | data | first fit (s) | of it compiling (s) | second fit (s) "
        "| peer (s) | first / peer | second / peer |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        task = task_of(name)
        (first, compiling), (second, _) = first_fit(name, DATA[task])
        peer = peers[task]
        print(
            f"| {name} | {DATA[task]} | {first:.1f} | {compiling:.1f} | "
            f"{second:.1f} | {peer:.2f} | {first / peer:.0f} | {second / peer:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
