"""Sparse Stein fit with its particles on one thread against two (#17, row 5).

A ``SteinGPRegressor`` with inducing points and minibatches (4,000 rows,
8 inputs, 300 inducing points, batches of 1,000, 10 particles, 15 SVGD
iterations from the prior) is fitted with ``n_jobs=1`` and ``n_jobs=2``,
twice each in turn; the first fit also compiles the kernels, so the best of
each is kept. The particles of the two settings are the same bit for bit
(tests/estimators/test_stein_sparse.py checks it).

Usage::

    PYTHONPATH=. python benchmarks/bench_particle_threads.py
"""

import time
import warnings

import numpy as np

from skgp_bayes import SteinGPRegressor


def main():
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n, d = 4000, 8
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    Z = X[rng.choice(n, 300, replace=False)]
    times = {}
    for n_jobs in (1, 2, 1, 2):
        model = SteinGPRegressor(
            inducing_points=Z,
            batch_size=1000,
            n_particles=10,
            max_iter=15,
            init="prior",
            n_jobs=n_jobs,
            random_state=0,
        )
        start = time.perf_counter()
        model.fit(X, y)
        elapsed = time.perf_counter() - start
        times.setdefault(n_jobs, []).append(elapsed)
        print(f"n_jobs={n_jobs}: {elapsed:.2f} s", flush=True)
    speedup = min(times[1]) / min(times[2])
    print(f"best n_jobs=1 / best n_jobs=2: {speedup:.2f} (goal >= 1.8)")


if __name__ == "__main__":
    main()
