"""Variational MCMC chains on threads or one after another: where threads pay.

For each default fit named (``data:seed``, the splits of
``bench_fresh_splits.py``), the quickest of ``--repeats`` fits three ways in
one run: ``n_jobs=1`` (one chain after another), the default ``n_jobs=None``
(threads where a transition holds enough compiled work,
``skgp_bayes.variational_mcmc._chains.THREADED_TRANSITION_SECONDS``, or
whatever its work where the transitions run in compiled blocks,
``THREADED_BLOCK_SECONDS``), and threads forced (both thresholds set to
zero). It prints whether the default chose threads for the last sampling
block and whether that block ran in compiled blocks, the compiled work of a
transition (a step's time times the mean number of steps at the chains'
pooled step) and the ratios; the draws must be the same all three ways.

    PYTHONPATH=. python benchmarks/bench_chain_threads.py
    PYTHONPATH=. python benchmarks/bench_chain_threads.py \\
        --model VariationalMCMCRegressor --fits coal:0,engel:0,statecrime:0
"""

import argparse
import time

import numpy as np
from _holdout_data import HOLDOUT_LOADERS  # benchmarks/ on sys.path
from _real_data import LOADERS
from bench_defaults import make_estimator, split
from threadpoolctl import threadpool_limits

from skgp_bayes.variational_mcmc import _chains

_ALL = {**LOADERS, **HOLDOUT_LOADERS}
_DEFAULT_FITS = "spector:0,heart_status:12,iris:0,iris:12,wine:0,modechoice:0"


def _quickest_fit(model_name, X, y, n_jobs, repeats):
    """(seconds, fitted estimator) of the quickest of ``repeats`` fits."""
    best, model = np.inf, None
    for _ in range(repeats):
        model = make_estimator(model_name, X.shape[1]).set_params(n_jobs=n_jobs)
        start = time.perf_counter()
        model.fit(X, y)
        best = min(best, time.perf_counter() - start)
    return best, model


def _transition_work(model_name, X, y):
    """Threads the default chose for the sampling blocks, and a transition's work."""
    seen, choose = [], _chains.chain_threads

    def recorded(
        n_jobs, target, n_chains, x, mean_steps,
        threshold=_chains.THREADED_TRANSITION_SECONDS,
    ):  # fmt: skip
        step = getattr(target, "seconds_per_step", lambda x: None)(x)
        threads = choose(n_jobs, target, n_chains, x, mean_steps, threshold)
        blocks = threshold == _chains.THREADED_BLOCK_SECONDS
        seen.append((threads, blocks, step, mean_steps))
        return threads

    _chains.chain_threads = recorded
    try:
        make_estimator(model_name, X.shape[1]).fit(X, y)
    finally:
        _chains.chain_threads = choose
    threads, blocks, step, mean_steps = seen[-1]  # the last sampling block's
    work = np.nan if step is None else step * mean_steps
    return threads, blocks, step, mean_steps, work


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="VariationalMCMCClassifier")
    parser.add_argument("--fits", default=_DEFAULT_FITS)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        "| fit | default threads | compiled blocks | step (us) | steps a "
        "transition | compiled work (us) | n_jobs=1 (s) | default (s) | forced "
        "threads (s) | n_jobs=1 / default | n_jobs=1 / forced |\n"
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    thresholds = (_chains.THREADED_TRANSITION_SECONDS, _chains.THREADED_BLOCK_SECONDS)
    with threadpool_limits(1, user_api="blas"):
        for spec in args.fits.split(","):
            name, seed = spec.split(":")
            X, _, y, _ = split(_ALL[name](), 0.3, 300, int(seed))
            make_estimator(args.model, X.shape[1]).fit(X, y)  # compile, untimed
            threads, blocks, step, mean_steps, work = _transition_work(args.model, X, y)
            one, a = _quickest_fit(args.model, X, y, 1, args.repeats)
            default, b = _quickest_fit(args.model, X, y, None, args.repeats)
            _chains.THREADED_TRANSITION_SECONDS = 0.0
            _chains.THREADED_BLOCK_SECONDS = 0.0
            try:
                forced, c = _quickest_fit(args.model, X, y, None, args.repeats)
            finally:
                (
                    _chains.THREADED_TRANSITION_SECONDS,
                    _chains.THREADED_BLOCK_SECONDS,
                ) = thresholds
            same = all(np.array_equal(a.draws_, m.draws_) for m in (b, c))
            if not same:
                raise AssertionError(f"{spec}: the draws differ between the three ways")
            print(
                f"| {spec} | {threads} | {'yes' if blocks else 'no'} | "
                f"{1e6 * (step or np.nan):.1f} | "
                f"{mean_steps:.1f} | {1e6 * work:.0f} | {one:.3f} | {default:.3f} | "
                f"{forced:.3f} | {one / default:.2f} | {one / forced:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
