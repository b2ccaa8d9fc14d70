"""Speed and memory of ``sample_y`` against scikit-learn, in one run.

SteinGPRegressor (20 particles, on the mcycle data: 133 points, 1-D input)
draws 100 samples at K query points with the pathwise sampler (random
Fourier features plus Matheron's update, O(K (F + n)) per sample) and with
the exact joint draw (O(K^3) per particle used). The peer is scikit-learn's
``GaussianProcessRegressor.sample_y`` on the same data, which forms and
decomposes the dense K x K predictive covariance: it runs only up to 5,000
points (``--quick``: 2,000). The exact draw runs only up to 1,000 points: on
dense grids the predictive covariance is numerically singular, the Cholesky
factorisation fails and each particle used falls back to an eigendecomposition
(20 of them at 5,000 points take tens of minutes).

    python benchmarks/bench_sample_y.py            # up to 1,000,000 points
    python benchmarks/bench_sample_y.py --quick    # up to 100,000 points

Peak memory is the peak of Python and NumPy allocations during the call
(``tracemalloc``), the output array included (K x 100 x 8 bytes: 800 MB at
1,000,000 points). Prints Markdown tables; benchmarks/RESULTS.md records a
run.
"""

import argparse
import os
import platform
import time
import tracemalloc
import warnings

import numba
import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgp_bayes import SteinGPRegressor
from skgp_bayes.datasets import load_mcycle

N_SAMPLES = 100


def measure(func):
    """(seconds, peak MiB of traced allocations) of one call."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    start = time.perf_counter()
    func()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 1024**2
    tracemalloc.stop()
    return seconds, peak


def fit_models():
    data = load_mcycle()
    X = np.asarray(data.data, dtype=np.float64).reshape(-1, 1)
    y = np.asarray(data.target, dtype=np.float64)
    X = (X - X.mean()) / X.std()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg = SteinGPRegressor(
            ConstantKernel(1.0) * RBF(1.0), n_particles=20, max_iter=30, random_state=0
        ).fit(X, y)
        gpr = GaussianProcessRegressor(
            ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1),
            normalize_y=True,
            random_state=0,
        ).fit(X, y)
    return X, reg, gpr


def grid(X, K):
    return np.linspace(X.min() - 0.5, X.max() + 0.5, K)[:, None]


def bench_sizes(X, reg, gpr, sizes, peer_max, exact_max=1_000):
    print(f"\n### sample_y, {N_SAMPLES} samples, mcycle (n=133), 20 particles\n")
    print(
        "| K | pathwise s | pathwise peak MiB | exact s | sklearn s | "
        "sklearn peak MiB | sklearn / pathwise |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = {}
    for K in sizes:
        Xq = grid(X, K)
        t_path, m_path = measure(
            lambda Xq=Xq: reg.sample_y(Xq, N_SAMPLES, random_state=0, method="pathwise")
        )
        t_exact = t_skl = m_skl = None
        if K <= exact_max:
            t_exact = best_time(
                lambda Xq=Xq: reg.sample_y(
                    Xq, N_SAMPLES, random_state=0, method="exact"
                ),
                1,
            )
        if K <= peer_max:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                t_skl, m_skl = measure(
                    lambda Xq=Xq: gpr.sample_y(Xq, N_SAMPLES, random_state=0)
                )

        def fmt(v, spec=".2f"):
            return "not run" if v is None else format(v, spec)

        ratio = "" if t_skl is None else f"{t_skl / t_path:.0f} x"
        print(
            f"| {K:,} | {t_path:.2f} | {m_path:.0f} | {fmt(t_exact)} | "
            f"{fmt(t_skl)} | {fmt(m_skl, '.0f')} | {ratio} |",
            flush=True,
        )
        rows[K] = t_path
    return rows


def bench_crossover(X, reg, sizes):
    print(
        "\n### Crossover: exact against pathwise sample_y "
        "(sets skgp_bayes._base.PATHWISE_MIN_POINTS)\n"
    )
    print("| n_samples | K | exact s | pathwise s | exact / pathwise |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n_samples in (1, N_SAMPLES):
        for K in sizes:
            Xq = grid(X, K)
            t_exact = best_time(
                lambda Xq=Xq, n=n_samples: reg.sample_y(
                    Xq, n, random_state=0, method="exact"
                ),
                2,
            )
            t_path = best_time(
                lambda Xq=Xq, n=n_samples: reg.sample_y(
                    Xq, n, random_state=0, method="pathwise"
                ),
                2,
            )
            print(
                f"| {n_samples} | {K:,} | {t_exact:.4f} | {t_path:.4f} | "
                f"{t_exact / t_path:.2f} |",
                flush=True,
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    print(
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"{os.cpu_count()} CPUs, Numba threads {numba.get_num_threads()}"
    )
    X, reg, gpr = fit_models()
    reg.sample_y(X[:5], 2, method="pathwise")  # compile
    bench_crossover(X, reg, [10, 25, 50, 100, 200, 400])
    if args.quick:
        sizes, peer_max = [1_000, 10_000, 100_000], 2_000
    else:
        sizes, peer_max = [1_000, 5_000, 10_000, 100_000, 1_000_000], 5_000
    rows = bench_sizes(X, reg, gpr, sizes, peer_max)
    if 1_000_000 in rows:
        verdict = "meets" if rows[1_000_000] < 30 else "misses"
        print(
            f"\n1,000,000 points x {N_SAMPLES} samples: {rows[1_000_000]:.1f} s "
            f"({verdict} the 30 s goal)."
        )


if __name__ == "__main__":
    main()
