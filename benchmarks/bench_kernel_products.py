"""The kernel adapter's RBF matrices and gradient contractions, by input width.

For ``ConstantKernel * RBF(ARD) + WhiteKernel`` on standard normal inputs,
one BLAS thread, best of ``--repeats`` calls (after a warm-up that compiles
or loads the Numba functions), at each ``(n, m, d)`` of ``--sizes``:

* ``cross``: ``K(X, Z)``, ``n x m``;
* ``cross_grad``: ``sum_ab W_ab dK(X, Z)_ab / dtheta_j``, all parameters;
* ``gram``: ``K(Z, Z)`` with the noise, ``m x m``;
* ``grad``: ``sum_ab W_ab dK(Z, Z)_ab / dtheta_j`` for symmetric ``W``;
* ``dpotrf``: LAPACK's Cholesky of that ``m x m`` Gram matrix, the floor
  the sparse targets measure against.

The sizes are those of the sparse targets' shared kernel parts (a
selection of inducing inputs scores subsets of ``m = 80`` candidates on
``n = 300`` rows; the default cap of training rows is 300) and a larger
set. Run it on two checkouts to compare their kernels:

    PYTHONPATH=. python benchmarks/bench_kernel_products.py
"""

import argparse

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from scipy.linalg import lapack
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from threadpoolctl import threadpool_limits

from skgp_bayes.kernels import KernelAdapter

DEFAULT_SIZES = ["300,80,2", "300,80,4", "300,80,8", "300,80,30", "1000,200,8"]


def _problem(n, m, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Z = X[rng.choice(n, size=m, replace=False)]
    kernel = ConstantKernel(1.3) * RBF(np.linspace(0.8, 2.5, d) * np.sqrt(d))
    adapter = KernelAdapter(kernel + WhiteKernel(0.1))
    W_cross = rng.normal(size=(n, m))
    S = rng.normal(size=(m, m))
    return adapter, X, Z, W_cross, S + S.T


def _row(n, m, d, repeats):
    adapter, X, Z, W_cross, W = _problem(n, m, d)
    theta = adapter.kernel.theta
    calls = {
        "cross": lambda: adapter.cross(theta, X, Z),
        "cross_grad": lambda: adapter.cross_grad_contract(theta, X, Z, W_cross),
        "gram": lambda: adapter.gram(theta, Z),
        "grad": lambda: adapter.grad_contract(theta, Z, W),
    }
    for call in calls.values():  # compile or load
        call()
    times = {name: best_time(call, repeats) for name, call in calls.items()}
    K = adapter.gram(theta, Z)
    times["dpotrf"] = best_time(
        lambda: lapack.dpotrf(K, lower=1, overwrite_a=0, clean=0), repeats
    )
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=DEFAULT_SIZES, help="n,m,d")
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    columns = ["cross", "cross_grad", "gram", "grad", "dpotrf"]
    print("| n | m | d | " + " | ".join(f"{c} (us)" for c in columns) + " |")
    print("| ---: | ---: | ---: | " + " | ".join("---:" for _ in columns) + " |")
    with threadpool_limits(1, user_api="blas"):
        for size in args.sizes:
            n, m, d = (int(v) for v in size.split(","))
            times = _row(n, m, d, args.repeats)
            cells = " | ".join(f"{times[c] * 1e6:.0f}" for c in columns)
            print(f"| {n} | {m} | {d} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
