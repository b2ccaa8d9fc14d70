"""SteinGPRegressor at scale: inducing points and minibatches, in one run.

Two studies.

* **Air-quality-sized** (seed 000, section 5.3): synthetic spatio-temporal
  data, 3 inputs (2 spatial, 1 time), 550,134 training points, an ARD
  Matern-3/2 kernel, 600 inducing points, 30 particles, batches of 256, 1000
  SVGD iterations. Peer: a sparse variational GP (SVGP) Gaussian
  approximation with the same inducing points, fitted by Adam on the same
  batches. Each model is fitted in its own process so that its peak memory
  (max resident set size) is its own. Goal: under 10 minutes and 4 GB.
* **n = 5,000**: sparse + minibatch against the exact model (whose particle
  count and iterations are cut so that it runs in minutes), and one LAPACK
  Cholesky of the 5,000 x 5,000 kernel matrix, the floor every exact
  iteration pays per particle.

    python benchmarks/bench_stein_sparse.py           # everything (~40 min)
    python benchmarks/bench_stein_sparse.py --quick   # smaller sizes
    python benchmarks/bench_stein_sparse.py --n-jobs 2
    python benchmarks/bench_stein_sparse.py --only per-iteration  # #17, 550k row

Prints Markdown tables; benchmarks/RESULTS.md records a run.
"""

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
import warnings

import numpy as np
from scipy.linalg import lapack
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import ConstantKernel, Matern

from skgp_bayes import SteinGPRegressor
from skgp_bayes._sparse import fit_svgp_adam, initial_inducing
from skgp_bayes._threads import blas_threads_for
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Gaussian
from skgp_bayes.priors import PriorSet
from skgp_bayes.targets._sparse_shared import inducing_factor, project
from skgp_bayes.targets.svgp import SVGPBound

NOISE_SD = 0.3


def spatio_temporal(n, seed):
    """Smooth space-time field on the unit cube plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    s1, s2, t = X.T
    f = (
        np.sin(2 * np.pi * s1) * np.cos(np.pi * s2)
        + 0.5 * np.sin(4 * np.pi * t + 3 * s1)
        + np.exp(-((s1 - 0.6) ** 2 + (s2 - 0.3) ** 2) / 0.05)
    )
    return X, f + NOISE_SD * rng.normal(size=n), f


def kernel():
    return ConstantKernel(1.0) * Matern(length_scale=[0.3, 0.3, 0.3], nu=1.5)


def _scores(mean, var, y_test, f_test):
    rmse = float(np.sqrt(np.mean((mean - f_test) ** 2)))
    lpd = float(
        np.mean(-0.5 * np.log(2 * np.pi * var) - 0.5 * (y_test - mean) ** 2 / var)
    )
    return rmse, lpd


def run_stein(n, m, particles, batch, iters, n_jobs, seed):
    X, y, _ = spatio_temporal(n, seed)
    X_test, y_test, f_test = spatio_temporal(10_000, seed + 1)
    start = time.perf_counter()
    Z = initial_inducing(X, m, seed)
    t_kmeans = time.perf_counter() - start
    reg = SteinGPRegressor(
        kernel(),
        n_particles=particles,
        max_iter=iters,
        inducing_points=Z,
        batch_size=batch,
        n_jobs=n_jobs,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(X, y)
    t_fit = time.perf_counter() - start
    mean, std = reg.predict(X_test, return_std=True)
    rmse = float(np.sqrt(np.mean((mean - f_test) ** 2)))
    return {
        "fit_s": t_fit,
        "kmeans_s": t_kmeans,
        "rmse": rmse,
        "lpd": float(reg.log_predictive_density(X_test, y_test).mean()),
        "noise_sd": float(np.mean(np.sqrt(reg.noise_variance_))),
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
    }


def run_svgp(n, m, batch, steps, seed):
    X, y, _ = spatio_temporal(n, seed)
    X_test, y_test, f_test = spatio_temporal(10_000, seed + 1)
    start = time.perf_counter()
    Z = initial_inducing(X, m, seed)
    y_mean, y_std = y.mean(), y.std()
    adapter = KernelAdapter(kernel())
    slices = dict(adapter.hyperparameter_slices)
    slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    bound = SVGPBound(
        adapter,
        X,
        (y - y_mean) / y_std,
        Z,
        Gaussian(0.1),
        PriorSet(slices),
        learn_inducing=False,
    )
    theta0 = adapter.kernel.theta
    params0 = bound.initial_params(theta0, np.log(0.1))
    limits = np.tile([-np.inf, np.inf], (bound.n_params, 1))
    limits[: adapter.n_params] = adapter.kernel.bounds
    limits[adapter.n_params] = np.log([1e-6, 1e3])
    # One thread per matrix product at this size, as the estimators do.
    with blas_threads_for(batch, m):
        params, _, _, _ = fit_svgp_adam(
            bound, params0, limits, steps, batch, 0.01, np.random.default_rng(seed)
        )
    t_fit = time.perf_counter() - start
    theta, log_noise, q_mean, q_L, _ = bound.split(params)
    R = inducing_factor(adapter, theta, Z, bound.jitter)
    A, gamma, _ = project(adapter, theta, Z, X_test, R)
    B = q_L[0].T @ A
    mean = (A.T @ q_mean[:, 0]) * y_std + y_mean
    var_f = (gamma + np.einsum("ij,ij->j", B, B)) * y_std**2
    var_y = var_f + np.exp(log_noise) * y_std**2
    rmse, lpd = _scores(mean, var_y, y_test, f_test)
    return {
        "fit_s": t_fit,
        "rmse": rmse,
        "lpd": lpd,
        "noise_sd": float(np.sqrt(np.exp(log_noise)) * y_std),
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
    }


def _in_subprocess(kind, **options):
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, json.dumps(options)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def large_study(args):
    n = 20_000 if args.quick else 550_134
    iters = 100 if args.quick else 1000
    m, particles, batch = 600, 30, 256
    steps = 500 if args.quick else 3000
    print(
        f"\n## Air-quality-sized study: n={n}, 3 inputs, ARD Matern-3/2, "
        f"{m} inducing points, batch {batch}\n"
    )
    stein = _in_subprocess(
        "stein",
        n=n,
        m=m,
        particles=particles,
        batch=batch,
        iters=iters,
        n_jobs=args.n_jobs,
        seed=0,
    )
    svgp = _in_subprocess("svgp", n=n, m=m, batch=batch, steps=steps, seed=0)
    print(
        "| model | fit (s) | peak memory (GB) | test RMSE (f) "
        + "| test LPD (y) | noise sd |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| SteinGPRegressor ({particles} particles, {iters} iters, "
        f"n_jobs={args.n_jobs}) | {stein['fit_s']:.0f} | {stein['peak_gb']:.2f} | "
        f"{stein['rmse']:.4f} | {stein['lpd']:.4f} | {stein['noise_sd']:.4f} |"
    )
    print(
        f"| SVGP Gaussian approximation (Adam, {steps} steps) | {svgp['fit_s']:.0f} | "
        f"{svgp['peak_gb']:.2f} | {svgp['rmse']:.4f} | {svgp['lpd']:.4f} | "
        f"{svgp['noise_sd']:.4f} |"
    )
    print(
        f"\nStein / SVGP fit time: {stein['fit_s'] / svgp['fit_s']:.2f}; of the "
        f"Stein fit, k-means took {stein['kmeans_s']:.0f} s. True noise sd "
        f"{NOISE_SD}."
    )


def medium_study(args):
    n = 2000 if args.quick else 5000
    X, y, _ = spatio_temporal(n, 3)
    X_test, y_test, f_test = spatio_temporal(5000, 4)
    print(f"\n## n = {n}: sparse + minibatch against the exact model\n")
    rows = []
    configs = [
        (
            "sparse: 100 inducing, batch 256, 10 particles, 500 iters",
            dict(inducing_points=100, batch_size=256, n_particles=10, max_iter=500),
        ),
        (
            "exact: 4 particles, 15 iters, no restarts",
            dict(n_particles=4, max_iter=15, n_restarts=0),
        ),
    ]
    for label, options in configs:
        reg = SteinGPRegressor(kernel(), random_state=0, n_jobs=args.n_jobs, **options)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reg.fit(X, y)
        fit_s = time.perf_counter() - start
        mean = reg.predict(X_test)
        rmse = float(np.sqrt(np.mean((mean - f_test) ** 2)))
        lpd = float(reg.log_predictive_density(X_test, y_test).mean())
        rows.append((label, fit_s, rmse, lpd))
    K = KernelAdapter(kernel()).gram(kernel().theta, X)
    K[np.diag_indices_from(K)] += 0.1
    start = time.perf_counter()
    lapack.dpotrf(K, lower=1)
    t_chol = time.perf_counter() - start
    print("| model | fit (s) | / one Cholesky | test RMSE (f) | test LPD (y) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, fit_s, rmse, lpd in rows:
        print(
            f"| {label} | {fit_s:.1f} | {fit_s / t_chol:.0f} | {rmse:.4f} | {lpd:.4f} |"
        )
    print(f"\nOne LAPACK Cholesky at n={n}: {t_chol:.3f} s.")
    print(f"Sparse / exact fit time: {rows[0][1] / rows[1][1]:.2f}")


def threads_study(args):
    """One SVGD gradient evaluation (30 particles, m=600, b=256), three ways."""
    from _timing import best_time
    from threadpoolctl import threadpool_limits

    from skgp_bayes.inference.particles import ParticleEvaluator
    from skgp_bayes.targets.sparse import SparseWhitenedTarget

    X, y, _ = spatio_temporal(20_000, 5)
    adapter = KernelAdapter(kernel())
    Z = initial_inducing(X, 600, 0)
    target = SparseWhitenedTarget(adapter, X, y, Z, Gaussian(0.1))
    rng = np.random.default_rng(0)
    particles = np.hstack(
        [
            np.tile(np.append(adapter.kernel.theta, np.log(0.1)), (30, 1)),
            rng.normal(size=(30, 600)),
        ]
    )
    repeats = 2 if args.quick else 5
    batch = np.sort(rng.choice(20_000, 256, replace=False))
    rows = []
    for label, n_jobs, blas in (
        ("one thread (BLAS serial)", None, 1),
        ("BLAS threads over each particle", None, None),
        ("n_jobs=2: particles over 2 threads", 2, 1),
    ):
        evaluator = ParticleEvaluator(target, n_jobs=n_jobs)
        with threadpool_limits(limits=blas, user_api="blas"):
            evaluator.evaluate(particles, batch)
            rows.append(
                (
                    label,
                    best_time(
                        lambda ev=evaluator: ev.evaluate(particles, batch), repeats
                    ),
                )
            )
    print("\n## One gradient evaluation at 30 particles, m=600, batch 256\n")
    print("| how | seconds | / one thread |")
    print("| --- | ---: | ---: |")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.3f} | {seconds / rows[0][1]:.2f} |")


def per_iteration_study(args):
    """The 550k run's iteration against the SVGP's step, a few of each (#17).

    The full run is 1000 SVGD iterations against 3000 Adam steps; per
    iteration both cost the same whatever ``n`` (minibatches of 256), so a
    few iterations of each, on the same data and inducing points, give the
    ratio of the two fits less their set-up (k-means, here run on a
    20,000-point subsample since the inducing inputs do not change the cost).
    """
    from _timing import best_time
    from threadpoolctl import threadpool_limits

    from skgp_bayes.inference import adam_init, adam_update, svgd_direction
    from skgp_bayes.inference.particles import ParticleEvaluator
    from skgp_bayes.targets.sparse import SparseWhitenedTarget

    n = 20_000 if args.quick else 550_134
    m, n_particles, batch_size, iters, steps = 600, 30, 256, 1000, 3000
    X, y, _ = spatio_temporal(n, 0)
    y = (y - y.mean()) / y.std()
    adapter = KernelAdapter(kernel())
    Z = initial_inducing(X[:20_000], m, 0)
    rng = np.random.default_rng(0)
    repeats = 3 if args.quick else 10
    batches = [np.sort(rng.choice(n, batch_size, replace=False)) for _ in range(8)]

    target = SparseWhitenedTarget(adapter, X, y, Z, Gaussian(0.1))
    particles = np.hstack(
        [
            np.tile(np.append(adapter.kernel.theta, np.log(0.1)), (n_particles, 1)),
            rng.normal(size=(n_particles, m)),
        ]
    )
    evaluator = ParticleEvaluator(target, n_jobs=args.n_jobs)

    def stein_iteration():
        _, grads = evaluator.evaluate(particles, batches[rng.integers(8)])
        svgd_direction(particles, grads)

    slices = dict(adapter.hyperparameter_slices)
    slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    bound = SVGPBound(
        adapter, X, y, Z, Gaussian(0.1), PriorSet(slices), learn_inducing=False
    )
    params = bound.initial_params(adapter.kernel.theta, np.log(0.1))
    state = adam_init(params)

    def svgp_step():
        _, grad = bound.elbo_and_grad(params, batches[rng.integers(8)])
        adam_update(state, grad / n, 0.01)

    with threadpool_limits(limits=1, user_api="blas"):
        stein_iteration()
        t_stein = best_time(stein_iteration, repeats)
    with blas_threads_for(batch_size, m):
        svgp_step()
        t_svgp = best_time(svgp_step, repeats * 3)
    print(
        f"\n## One iteration at n={n}, {m} inducing, batch {batch_size}: "
        f"Stein ({n_particles} particles, n_jobs={args.n_jobs}) against the SVGP\n"
    )
    print("| what | seconds | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| SVGP step (bound + gradient, Adam) | {t_svgp:.4f} | 1.00 |")
    print(f"| SVGD iteration | {t_stein:.4f} | {t_stein / t_svgp:.1f} |")
    fit_ratio = iters * t_stein / (steps * t_svgp)
    print(
        f"| {iters} SVGD iterations / {steps} SVGP steps | "
        f"{iters * t_stein:.0f} s / {steps * t_svgp:.0f} s | {fit_ratio:.2f} |"
    )
    print(
        f"\nGoal (#17): the fit at most 2x the SVGP's and at most 332 s: "
        f"{'met' if fit_ratio <= 2 and iters * t_stein <= 332 else 'not met'} "
        "on iterations alone (set-up and prediction excluded)."
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument(
        "--only",
        choices=["large", "medium", "threads", "per-iteration"],
        default=None,
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, options = args.child[0], json.loads(args.child[1])
        result = run_stein(**options) if kind == "stein" else run_svgp(**options)
        print(json.dumps(result))
        return
    print(f"# SteinGPRegressor at scale ({platform.processor() or platform.machine()})")
    if args.only in (None, "large"):
        large_study(args)
    if args.only in (None, "threads"):
        threads_study(args)
    if args.only == "per-iteration":
        per_iteration_study(args)
    if args.only in (None, "medium"):
        medium_study(args)


if __name__ == "__main__":
    main()
