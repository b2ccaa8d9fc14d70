"""Time the kernel adapter's fast path against a Cholesky and scikit-learn.

Setting: n = 2000, d = 8, ``ConstantKernel * RBF(ARD) + WhiteKernel``.
Reports the best of several runs (after a warm-up that compiles the Numba
functions) for:

* ``gram``: ``K(X, X)``;
* ``grad_contract``: ``sum_ab W_ab dK_ab / dtheta_j`` for all 10 parameters;
* ``matvec``: ``K @ V`` with ``V`` of shape (n, 10), without storing ``K``;
* ``dpotrf``: ``scipy.linalg.lapack.dpotrf`` on the same matrix (no copy of
  the input beyond the one made per run outside the timer);
* scikit-learn: ``kernel(X, eval_gradient=True)`` followed by
  ``np.einsum("ab,abj->j", W, dK)``, the dense-tensor route.

Run from the repository root: ``python benchmarks/bench_kernels.py`` (with the
package installed, or ``PYTHONPATH=.``).
"""

import time

import numba
import numpy as np
from scipy.linalg import lapack
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from skgp_bayes.kernels import KernelAdapter


def best_time(fun, repeat=15, setup=None):
    times = []
    for _ in range(repeat):
        arg = setup() if setup is not None else None
        start = time.perf_counter()
        fun(arg)
        times.append(time.perf_counter() - start)
    return min(times)


def main(n=2000, d=8, k=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    kernel = ConstantKernel(1.3) * RBF(np.linspace(0.8, 2.5, d)) + WhiteKernel(0.1)
    adapter = KernelAdapter(kernel)
    theta = kernel.theta
    A = rng.normal(size=(n, n)) / n
    W = A + A.T
    V = rng.normal(size=(n, k))

    # Warm up: compile (or load from the cache) every function used.
    K = adapter.gram(theta, X)
    adapter.grad_contract(theta, X, W)
    adapter.matvec(theta, X, V)

    t_gram = best_time(lambda _: adapter.gram(theta, X))
    t_grad = best_time(lambda _: adapter.grad_contract(theta, X, W))
    t_matvec = best_time(lambda _: adapter.matvec(theta, X, V))

    def chol(Kc):
        _, info = lapack.dpotrf(Kc, lower=1, overwrite_a=1, clean=0)
        assert info == 0

    t_chol = best_time(chol, setup=lambda: np.asfortranarray(K))

    def sklearn_route(_):
        _, dK = kernel(X, eval_gradient=True)
        return np.einsum("ab,abj->j", W, dK)

    t_sklearn = best_time(sklearn_route, repeat=3)
    np.testing.assert_allclose(
        sklearn_route(None), adapter.grad_contract(theta, X, W), rtol=1e-9, atol=1e-9
    )

    print(f"n={n}, d={d}, k={k}, numba threads={numba.get_num_threads()}")
    print(f"kernel: {kernel}")
    rows = [
        ("gram", t_gram),
        ("grad_contract", t_grad),
        ("gram + grad_contract", t_gram + t_grad),
        (f"matvec (k={k})", t_matvec),
        ("dpotrf (Cholesky)", t_chol),
        ("sklearn eval_gradient + einsum", t_sklearn),
    ]
    print(f"{'operation':34s} {'seconds':>9s} {'/ dpotrf':>9s}")
    for name, t in rows:
        print(f"{name:34s} {t:9.4f} {t / t_chol:9.2f}")
    print(
        "speed-up of gram + grad_contract over sklearn: "
        f"{t_sklearn / (t_gram + t_grad):.1f}x"
    )


if __name__ == "__main__":
    main()
