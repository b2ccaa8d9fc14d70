"""What a local Dask cluster gains or loses against one machine's joblib pools.

Three workloads that go through joblib's ``n_jobs``, each timed (best of
``--repeats``) three ways in one run:

- ``n_jobs=1``: one process, the reference;
- ``n_jobs=2`` under joblib's default backend (loky worker processes);
- ``n_jobs=2`` under ``joblib.parallel_config(backend="dask")`` with a
  ``distributed.LocalCluster`` of two single-threaded worker processes
  started before the timing.

Workloads: the four HMC chains of ``VariationalMCMCClassifier`` on breast
cancer (300 rows, 30 inputs; a fixed run of 200 warm-up and 200 draws per
chain so that every variant does the same work), the two MALA chains of
``SGLDGPRegressor`` on diabetes (300 rows, a fixed 1,500 iterations), and a
``GridSearchCV`` of ``SteinGPRegressor`` over four settings with three folds
on diabetes (12 fits). Every variant's result is checked equal to
``n_jobs=1`` before its time is reported. BLAS is held at one thread so
that two workers use the two cores.

With ``--stein-particles`` it times instead the SVGD iterations of a sparse
``SteinGPRegressor`` (``init="prior"``, four particles, ``n_jobs=2``) with
the particles on this process's threads against the same fit under
``parallel_config(backend="dask")`` on the two-worker cluster, at a size
where the rule of :class:`~skgp_bayes.inference.particles.ParticleEvaluator`
keeps the particles on threads and one where it sends them to the cluster.
The time per iteration is the difference between fits of 12 and 2
iterations divided by 10, so that the set-up (and the one scatter of the
target) cancels; the tasks the cluster ran say which way the rule went
(six are its timing rounds),
and the particles are checked equal to the threads' first.

Usage::

    PYTHONPATH=. python benchmarks/bench_dask.py [--repeats 2]
    PYTHONPATH=. python benchmarks/bench_dask.py --stein-particles
"""

import argparse
import os
import platform
import time
import warnings

import joblib
import numpy as np
from _timing import best_time
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from threadpoolctl import threadpool_limits

from skgp_bayes import SGLDGPRegressor, SteinGPRegressor, VariationalMCMCClassifier
from skgp_bayes.exceptions import SamplerWarning


def _quiet(fit):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            return fit()

    return run


def workloads():
    cancer = load_breast_cancer()
    Xc, yc = cancer.data[:300], cancer.target[:300]
    diabetes = load_diabetes(scaled=False)
    Xd, yd = diabetes.data[:300], diabetes.target[:300]

    def hmc(n_jobs):
        model = VariationalMCMCClassifier(
            n_warmup=200, n_samples=200, max_samples=200, random_state=0, n_jobs=n_jobs
        )
        return model.fit(Xc, yc).draws_

    def sgld(n_jobs):
        model = SGLDGPRegressor(n_iter=1500, random_state=0, n_jobs=n_jobs)
        return model.fit(Xd, yd).chains_

    def search(n_jobs):
        grid = GridSearchCV(
            SteinGPRegressor(random_state=0),
            {"n_particles": [6, 8, 10, 12]},
            cv=3,
            n_jobs=n_jobs,
        )
        return grid.fit(Xd, yd).cv_results_["mean_test_score"]

    return {
        "HMC chains (VariationalMCMCClassifier, 4 chains)": hmc,
        "MALA chains (SGLDGPRegressor, 2 chains)": sgld,
        "GridSearchCV (SteinGPRegressor, 12 fits)": search,
    }


# (rows, inducing points, batch size): the rule keeps the first on threads
# and sends the second to the cluster.
STEIN_SIZES = ((2000, 30, 500), (4000, 400, 2000))


def _sparse_stein(size, max_iter):
    n, m, batch = size
    rng = np.random.RandomState(2)
    X = rng.uniform(-3, 3, (n, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(n)
    model = SteinGPRegressor(
        inducing_points=m,
        batch_size=batch,
        n_particles=4,
        max_iter=max_iter,
        init="prior",
        random_state=0,
        n_jobs=2,
    )
    return model.fit(X, y).particles_


def _per_iteration(size, repeats):
    long = best_time(_quiet(lambda: _sparse_stein(size, 12)), repeats)
    short = best_time(_quiet(lambda: _sparse_stein(size, 2)), repeats)
    return (long - short) / 10


def stein_particles(client, repeats):
    from distributed import get_task_stream

    print(
        "| rows, inducing, batch | threads (ms/iter) | dask, 2 workers (ms/iter) "
        "| rule sent to cluster | dask speed-up |"
    )
    print("| --- | ---: | ---: | --- | ---: |")
    for size in STEIN_SIZES:
        reference = _quiet(lambda s=size: _sparse_stein(s, 12))()
        with get_task_stream(client) as stream:
            with joblib.parallel_config(backend="dask"):
                on_dask = _quiet(lambda s=size: _sparse_stein(s, 12))()
        np.testing.assert_array_equal(on_dask, reference)
        # The rule's three timing rounds send one empty task per worker each.
        sent = len(stream.data) > 3 * 2
        threads = _per_iteration(size, repeats)
        with joblib.parallel_config(backend="dask"):
            dask = _per_iteration(size, repeats)
        print(
            f"| {size[0]}, {size[1]}, {size[2]} | {1e3 * threads:.1f} "
            f"| {1e3 * dask:.1f} | {sent} ({len(stream.data)} tasks) "
            f"| {threads / dask:.2f}x |",
            flush=True,
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--stein-particles",
        action="store_true",
        help="time sparse Stein SVGD iterations, threads against the cluster",
    )
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()}, "
        f"joblib {joblib.__version__}"
    )
    with (
        threadpool_limits(1),
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=40,
        ) as cluster,
        Client(cluster) as client,
    ):
        if args.stein_particles:
            stein_particles(client, args.repeats)
            print(f"load after: {os.getloadavg()}")
            return
        print(
            "| workload | n_jobs=1 (s) | loky, 2 (s) | dask, 2 workers (s) "
            "| loky speed-up | dask speed-up |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, work in workloads().items():
            reference = _quiet(lambda w=work: w(1))()
            with joblib.parallel_config(backend="loky"):
                np.testing.assert_array_equal(_quiet(lambda w=work: w(2))(), reference)
            with joblib.parallel_config(backend="dask"):
                np.testing.assert_array_equal(_quiet(lambda w=work: w(2))(), reference)
            one = best_time(_quiet(lambda w=work: w(1)), args.repeats)
            with joblib.parallel_config(backend="loky"):
                loky = best_time(_quiet(lambda w=work: w(2)), args.repeats)
            with joblib.parallel_config(backend="dask"):
                dask = best_time(_quiet(lambda w=work: w(2)), args.repeats)
            print(
                f"| {name} | {one:.2f} | {loky:.2f} | {dask:.2f} | "
                f"{one / loky:.2f}x | {one / dask:.2f}x |",
                flush=True,
            )
    print(f"load after: {os.getloadavg()}; {time.strftime('%Y-%m-%d %H:%M UTC')}")


if __name__ == "__main__":
    main()
