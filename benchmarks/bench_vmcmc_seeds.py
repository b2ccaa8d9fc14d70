"""Default variational MCMC fits over seeds: time, run length and restarts.

A single default fit's time is dominated by its run length, the first
passage of a noisy statistic (max split R-hat and min bulk ESS), and by
the restarts that a divergence forces; comparing two versions of the
sampler by one fit per data set says little. This script fits the default
estimator (``Estimator(random_state=seed)``, nothing else set) on the
suite's splits of ``bench_defaults`` (or the split ``--split`` of
``bench_fresh_splits``) for several seeds, one BLAS thread,
and prints one row per fit and a total per data set: fit time, the seconds
of the Gaussian (SVGP) stage before any chain, sampling iterations,
leapfrog steps (warm-up included, a load-free measure of the work),
restarts (``step_backoffs``), retried trajectories, the test log loss or
mean log predictive density, and the warnings raised.
``--poisson-coal`` fits the Poisson regressor on all the binned coal
counts instead (the README's count model).

Run it at two commits to compare them (a ``git worktree`` of the older one,
with ``PYTHONPATH`` pointing at it):

    PYTHONPATH=. python benchmarks/bench_vmcmc_seeds.py \\
        --datasets modechoice,breast_cancer,iris,wine --seeds 0,1,2,3,4
    PYTHONPATH=. python benchmarks/bench_vmcmc_seeds.py --regressor \\
        --datasets sunspots,macrodata,grunfeld --seeds 1,2,3,4
    PYTHONPATH=. python benchmarks/bench_vmcmc_seeds.py --poisson-coal \\
        --seeds 0,1,2,3,4,5
    PYTHONPATH=. python benchmarks/bench_vmcmc_seeds.py \\
        --datasets heart_status,spector --split 22 --seeds 0,1,2,3,4,5 --warm-up
"""

import argparse
import ast
import contextlib
import time
import warnings

import numpy as np
from bench_defaults import load_all, make_estimator, split  # benchmarks/ on sys.path
from sklearn.metrics import log_loss
from threadpoolctl import threadpool_limits

from skgp_bayes import VariationalMCMCRegressor
from skgp_bayes.variational_mcmc import _pipelines


@contextlib.contextmanager
def _gaussian_stage_timer():
    """Seconds spent in the Gaussian approximation, appended to a list."""
    original, spent = _pipelines.gaussian_approximation, []

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    _pipelines.gaussian_approximation = timed
    try:
        yield spent
    finally:
        _pipelines.gaussian_approximation = original


def _fit(estimator, X, y, **fit_params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with threadpool_limits(1, user_api="blas"), _gaussian_stage_timer() as spent:
            start = time.perf_counter()
            estimator.fit(X, y, **fit_params)
            seconds = time.perf_counter() - start
    return (seconds, sum(spent)), len(caught)


def _row(name, seed, estimator, times, n_warnings, score):
    d = estimator.diagnostics_
    seconds, gaussian_stage = times
    return {
        "data": name,
        "seed": seed,
        "seconds": seconds,
        "gaussian": gaussian_stage,
        "iterations": int(d["sampling_iterations"]),
        "leapfrog": int(np.sum(estimator.trace_["n_leapfrog"])),
        "restarts": int(d["step_backoffs"]),
        "retried": d.get("retried_trajectories", "-"),
        "score": score,
        "warnings": n_warnings,
    }


def suite_rows(estimator_name, datasets, seeds, params=None, split_seed=0, warm=False):
    """One row per default fit on split ``split_seed`` of each set (0: the
    bench_defaults split); ``warm``: an untimed fit of each set first."""
    for name in datasets:
        data = load_all([name])[name]
        X_tr, X_te, y_tr, y_te = split(data, 0.3, 300, split_seed)
        if warm:  # the load of compiled code, which the first fit pays
            estimator = make_estimator(estimator_name, X_tr.shape[1])
            _fit(estimator.set_params(**(params or {})), X_tr, y_tr)
        for seed in seeds:
            estimator = make_estimator(estimator_name, X_tr.shape[1])
            estimator.set_params(random_state=seed, **(params or {}))
            seconds, n_warnings = _fit(estimator, X_tr, y_tr)
            if hasattr(estimator, "predict_proba"):
                proba = estimator.predict_proba(X_te)
                score = log_loss(y_te, proba, labels=estimator.classes_)
            else:
                score = float(np.mean(estimator.log_predictive_density(X_te, y_te)))
            yield _row(name, seed, estimator, seconds, n_warnings, score)


def coal_rows(seeds, params=None):
    """The Poisson regressor on all the binned coal counts (no test split)."""
    from skgp_bayes.datasets import bin_coal_counts

    X, counts, width = bin_coal_counts()
    for seed in seeds:
        estimator = VariationalMCMCRegressor(
            likelihood="poisson", random_state=seed, **(params or {})
        )
        seconds, n_warnings = _fit(estimator, X, counts.astype(float), exposure=width)
        yield _row("coal (Poisson)", seed, estimator, seconds, n_warnings, np.nan)


def _parameter(text):
    name, _, value = text.partition("=")
    return name, ast.literal_eval(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="modechoice,breast_cancer,iris,wine")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--split", type=int, default=0, help="the data's split seed")
    parser.add_argument(
        "--warm-up", action="store_true", help="an untimed fit of each set first"
    )
    parser.add_argument("--regressor", action="store_true")
    parser.add_argument("--poisson-coal", action="store_true")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an estimator parameter other than its default (a Python literal)",
    )
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    params = dict(_parameter(text) for text in args.set)
    if args.poisson_coal:
        rows = coal_rows(seeds, params)
    else:
        name = "VariationalMCMC" + ("Regressor" if args.regressor else "Classifier")
        rows = suite_rows(
            name, args.datasets.split(","), seeds, params, args.split, args.warm_up
        )
    print(
        "| data | seed | fit (s) | Gaussian stage (s) | sampling iterations "
        "| leapfrog steps | restarts | retried | test score | warnings |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    totals = {}
    for r in rows:
        print(
            f"| {r['data']} | {r['seed']} | {r['seconds']:.2f} | {r['gaussian']:.3f} "
            f"| {r['iterations']} "
            f"| {r['leapfrog']} | {r['restarts']} | {r['retried']} "
            f"| {r['score']:.4f} | {r['warnings']} |",
            flush=True,
        )
        total = totals.setdefault(r["data"], [0.0, 0, 0, 0])
        total[0] += r["seconds"]
        total[1] += r["leapfrog"]
        total[2] += r["restarts"]
        total[3] += r["warnings"]
    print("\n| data | fits' time (s) | leapfrog steps | restarts | warnings |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (seconds, leapfrog, restarts, n_warnings) in totals.items():
        print(f"| {name} | {seconds:.1f} | {leapfrog} | {restarts} | {n_warnings} |")


if __name__ == "__main__":
    main()
