"""Speed and quality of SteinGPRegressor against its peers, in one run.

Peers: one LAPACK Cholesky of the same kernel matrix (the cost floor that
every exact-GP step pays) and scikit-learn's ``GaussianProcessRegressor``.

    python benchmarks/bench_stein_regressor.py            # everything
    python benchmarks/bench_stein_regressor.py --quick    # smaller sizes
    python benchmarks/bench_stein_regressor.py --only-solvers  # Cholesky vs CG
    python benchmarks/bench_stein_regressor.py --target-sweep  # issue #17, row 1
    python benchmarks/bench_stein_regressor.py --target-sweep --sizes 200 300
    python benchmarks/bench_stein_regressor.py --only-concrete --seeds 1  # row 2

Prints Markdown tables; benchmarks/RESULTS.md records a run.
"""

import argparse
import platform
import time
import warnings

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from scipy.linalg import lapack
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_info

from skgp_bayes import SteinGPRegressor
from skgp_bayes.__main__ import fit_sklearn, fit_stein
from skgp_bayes._stein_base import batch_evaluator
from skgp_bayes._stein_models.exact import TRACE_PROBES
from skgp_bayes._threads import blas_threads_for
from skgp_bayes.datasets import load_concrete
from skgp_bayes.inference import svgd_direction
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.priors import PriorSet
from skgp_bayes.targets import ExactMarginalTarget, StochasticTraceTarget


def _problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X @ rng.normal(size=d)) + 0.1 * rng.normal(size=n)
    kernel = ConstantKernel(1.0) * RBF(np.full(d, 2.0))
    adapter = KernelAdapter(kernel)
    slices = dict(adapter.hyperparameter_slices)
    slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    target = ExactMarginalTarget(adapter, X, y, PriorSet(slices))
    params = np.append(kernel.theta, np.log(0.1))
    K = adapter.gram(kernel.theta, X)
    K[np.diag_indices_from(K)] += 0.1
    return X, y, kernel, target, params, K


def bench_gradient(n, d, repeats):
    X, y, kernel, target, params, K = _problem(n, d)
    target.logp_and_grad(params)  # compile
    t_chol = best_time(lambda: lapack.dpotrf(K, lower=1), repeats)
    t_ours = best_time(lambda: target.logp_and_grad(params), repeats)
    full = kernel + WhiteKernel(0.1)
    gpr = GaussianProcessRegressor(full, optimizer=None).fit(X, y)
    t_skl = best_time(
        lambda: gpr.log_marginal_likelihood(full.theta, eval_gradient=True),
        max(1, repeats // 3),
    )
    print(f"\n### One log posterior + gradient, n={n}, d={d}, ARD RBF\n")
    print("| what | seconds | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| LAPACK dpotrf (floor) | {t_chol:.4f} | 1.00 |")
    print(f"| skgp_bayes target | {t_ours:.4f} | {t_ours / t_chol:.2f} x Cholesky |")
    print(
        f"| sklearn log_marginal_likelihood(eval_gradient=True) | {t_skl:.4f} | "
        f"{t_skl / t_ours:.1f} x skgp_bayes |"
    )
    return t_chol


def _interleaved_best(funcs, repeats):
    """Best time of each function, calls taken in turn.

    Under load a burst hits every function alike instead of one of them,
    so the ratios between them stay meaningful.
    """
    best = [np.inf] * len(funcs)
    for _ in range(repeats):
        for i, func in enumerate(funcs):
            best[i] = min(best[i], best_time(func, 1))
    return best


def bench_target_sweep(sizes, d, repeats):
    """Exact target's value + gradient against one Cholesky at every n.

    The floor of an exact gradient is a factorisation and an explicit
    inverse (``dpotrf`` + ``dpotri``); both are timed on the target's own
    kernel matrix, under the BLAS thread policy the estimator uses.
    """
    print(f"\n### Exact target, value + gradient, d = {d}, ARD RBF (#17 row 1)\n")
    print(
        "| n | dpotrf (ms) | dpotrf + dpotri (ms) | target (ms) "
        "| target / dpotrf | target / (dpotrf + dpotri) | goal <= 4x "
        "| stochastic trace, 4 probes / dpotrf |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for n in sizes:
        _, _, _, target, params, K = _problem(n, d)
        K = np.asfortranarray(K)
        target.logp_and_grad(params)  # compile

        def chol(K=K):
            lapack.dpotrf(K, lower=1, clean=0)

        def floor(K=K):
            L, _ = lapack.dpotrf(K, lower=1, clean=0)
            lapack.dpotri(L, lower=1, overwrite_c=1)

        def ours(target=target, params=params):
            target.logp_and_grad(params)

        noisy = StochasticTraceTarget(
            target.adapter,
            target.X,
            target.y,
            target.prior_set,
            rng=np.random.default_rng(0),
            n_probes=4,
        )
        noisy.logp_and_grad(params)  # compile

        def trace(noisy=noisy, params=params):
            noisy.logp_and_grad(params)

        count = max(3, repeats * 1000 // n)
        with blas_threads_for(n):
            t_chol, t_floor, t_ours, t_trace = _interleaved_best(
                (chol, floor, ours, trace), count
            )
        ratio = t_ours / t_chol
        print(
            f"| {n} | {1e3 * t_chol:.3f} | {1e3 * t_floor:.3f} | {1e3 * t_ours:.3f} "
            f"| {ratio:.2f} | {t_ours / t_floor:.2f} | "
            f"{'met' if ratio <= 4.0 else 'not met'} | {t_trace / t_chol:.2f} |"
        )


def bench_svgd_iteration(n, d, particle_counts, repeats):
    """One SVGD iteration with exact and with stochastic-trace gradients
    (``gradient="stochastic_trace"``), in units of J Choleskys."""
    X, y, kernel, target, params, K = _problem(n, d)
    evaluate = batch_evaluator(target)
    noisy = StochasticTraceTarget(
        target.adapter,
        target.X,
        target.y,
        target.prior_set,
        rng=np.random.default_rng(0),
        n_probes=TRACE_PROBES,
    )
    noisy.logp_and_grad(params)  # compile
    evaluate_trace = batch_evaluator(noisy)
    t_chol = best_time(lambda: lapack.dpotrf(K, lower=1), repeats)
    rng = np.random.default_rng(1)
    print(f"\n### One SVGD iteration, n={n}, d={d}\n")
    print(
        "| J | seconds | J x Cholesky | ratio | stochastic trace (s) "
        "| stochastic trace ratio |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for J in particle_counts:
        particles = params + 0.1 * rng.normal(size=(J, params.size))

        def iteration(particles=particles, evaluate=evaluate):
            _, grads = evaluate(particles)
            svgd_direction(particles, grads)

        t = best_time(iteration, max(1, repeats // J))
        t_trace = best_time(
            lambda p=particles: iteration(p, evaluate_trace), max(1, repeats // J)
        )
        print(
            f"| {J} | {t:.3f} | {J * t_chol:.3f} | {t / (J * t_chol):.2f} "
            f"| {t_trace:.3f} | {t_trace / (J * t_chol):.2f} |"
        )


def bench_concrete(seeds, n_particles, n_restarts):
    data = load_concrete()
    print(
        f"\n### Concrete (n=1030, d=8), 70/30 split, ARD; SteinGP with "
        f"{n_particles} particles, sklearn with {n_restarts} restarts\n"
    )
    print("| seed | model | test RMSE | test LPD | fit time (s) | time ratio |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for seed in seeds:
        X_tr, X_te, y_tr, y_te = train_test_split(
            data.data, data.target, test_size=0.3, random_state=seed
        )
        ref = fit_sklearn(X_tr, y_tr, X_te, y_te, n_restarts=n_restarts, seed=seed)
        rows = [ref]
        for init, restarts in (("map", 4), ("map", 0), ("prior", None)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                res = fit_stein(
                    X_tr,
                    y_tr,
                    X_te,
                    y_te,
                    n_particles=n_particles,
                    init=init,
                    map_restarts=restarts,
                    seed=seed,
                )
            label = init if restarts is None else f"{init}, n_restarts={restarts}"
            res["name"] = f"SteinGPRegressor init={label} ({res['n_iter']} iter)"
            rows.append(res)
        for r in rows:
            print(
                f"| {seed} | {r['name']} | {r['rmse']:.3f} | {r['lpd']:.4f} | "
                f"{r['fit_time']:.1f} | {r['fit_time'] / ref['fit_time']:.2f} |"
            )


def bench_solvers(seed, n_particles, max_iter):
    """solver="cholesky" against solver="cg" on the same Concrete split."""
    data = load_concrete()
    X_tr, X_te, y_tr, y_te = train_test_split(
        data.data, data.target, test_size=0.3, random_state=seed
    )
    mean, scale = X_tr.mean(0), X_tr.std(0)
    X_tr, X_te = (X_tr - mean) / scale, (X_te - mean) / scale
    print(
        f"\n### Concrete (n = {X_tr.shape[0]} training points, d = 8, ARD): "
        f'SteinGPRegressor solver="cholesky" against solver="cg", '
        f"{n_particles} particles, max_iter={max_iter}, seed {seed}\n"
    )
    print(
        "| solver | test RMSE | test LPD | fit time (s) | time ratio | iterations "
        "| mean log length scales |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    rows = []
    for solver in ("cholesky", "cg"):
        reg = SteinGPRegressor(
            ConstantKernel(1.0) * RBF(np.ones(8)),
            n_particles=n_particles,
            max_iter=max_iter,
            solver=solver,
            random_state=seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            reg.fit(X_tr, y_tr)
            fit_time = time.perf_counter() - t0
        pred = reg.predict(X_te)
        rmse = float(np.sqrt(np.mean((pred - y_te) ** 2)))
        lpd = float(reg.log_predictive_density(X_te, y_te).mean())
        length = reg.particles_[:, 1:9].mean(0)
        rows.append((solver, rmse, lpd, fit_time, reg.n_iter_, length))
    for solver, rmse, lpd, fit_time, n_iter, length in rows:
        print(
            f"| {solver} | {rmse:.3f} | {lpd:.4f} | {fit_time:.1f} | "
            f"{fit_time / rows[0][3]:.2f} | {n_iter} | "
            f"{np.array2string(length, precision=2)} |"
        )


def bench_small_sweep(sizes, d):
    """The exact target's two compiled paths at small n.

    ``targets._exact_numba.rbf_value_and_grad`` runs the unblocked loops
    of ``rbf_value_and_grad_small`` up to ``SMALL_N`` rows and
    ``rbf_value_and_grad_lapack`` beyond; both are timed on the same
    target's arrays, one BLAS thread, 2,000 calls a round, best of 5 rounds,
    taken in turn.
    """
    from threadpoolctl import threadpool_limits

    from skgp_bayes.targets import _exact_numba as compiled

    print(
        f"\n### Exact target at small n, d = {d}: unblocked loops against "
        f"LAPACK (SMALL_N = {compiled.SMALL_N})\n"
    )
    print("| n | unblocked (us) | LAPACK (us) | LAPACK / unblocked |")
    print("| ---: | ---: | ---: | ---: |")
    for n in sizes:
        _, _, _, target, params, _ = _problem(n, d)
        args = (
            np.asarray(params, dtype=np.float64),
            target._phi_defaults,
            target._param_index,
            target._X_centred,
            target.y,
        )

        def call(small, args=args):
            for _ in range(2000):
                if small:
                    compiled.rbf_value_and_grad_small(*args)
                else:
                    compiled.rbf_value_and_grad_lapack(*args, compiled.RBF_ROUTINES)

        with threadpool_limits(1):
            call(True)
            call(False)  # compile both
            times = _interleaved_best((lambda: call(True), lambda: call(False)), 5)
        small, lapack = (1e6 * t / 2000 for t in times)
        ratio = lapack / small
        print(f"| {n} | {small:.1f} | {lapack:.1f} | {ratio:.2f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--seeds", type=int, default=3, help="Concrete splits (default: 3)."
    )
    parser.add_argument(
        "--only-solvers",
        action="store_true",
        help='only the solver="cholesky" against solver="cg" comparison',
    )
    parser.add_argument(
        "--target-sweep",
        action="store_true",
        help="only the exact target against one Cholesky, n = 200 to 4000",
    )
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=(200, 500, 1000, 2000, 4000),
        help="n values of --target-sweep (default: 200 500 1000 2000 4000)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=10,
        help="--target-sweep timing rounds, scaled by 1000 / n (default: 10)",
    )
    parser.add_argument(
        "--small-sweep",
        action="store_true",
        help="only the exact target's compiled small-n path against the general "
        "one, n = 8 to 64",
    )
    parser.add_argument(
        "--only-svgd-iteration",
        action="store_true",
        help="only one SVGD iteration, exact and stochastic-trace gradients",
    )
    parser.add_argument(
        "--only-concrete",
        action="store_true",
        help="only the Concrete fits against scikit-learn",
    )
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {platform.processor() or ''} "
        f"numpy {np.__version__}"
    )
    if args.target_sweep:
        bench_target_sweep(tuple(args.sizes), 8, args.repeats)
        return
    if args.small_sweep:
        bench_small_sweep((8, 16, 24, 32, 40, 48, 64), 8)
        return
    if args.only_solvers:
        bench_solvers(0, 10, 300)
        return
    if args.only_concrete:
        bench_concrete(tuple(range(args.seeds)), 10, 9)
        return
    n = 500 if args.quick else 2000
    if args.only_svgd_iteration:
        with blas_threads_for(n):
            bench_svgd_iteration(n, 8, (1, 10, 20), 21)
        return
    repeats = 3 if args.quick else 7
    # The estimator factorises with the BLAS thread count blas_threads_for
    # picks; the floor is timed under the same policy.
    with blas_threads_for(n):
        blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        print(f"BLAS threads: {blas}")
        bench_gradient(n, 8, repeats)
        bench_svgd_iteration(n, 8, (1, 10, 20), repeats * 3)
    bench_concrete(tuple(range(1 if args.quick else args.seeds)), 10, 9)
    bench_solvers(0, 10, 300)


if __name__ == "__main__":
    main()
