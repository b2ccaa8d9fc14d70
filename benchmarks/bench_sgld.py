"""Quality and speed of SGLDGPRegressor (SGLD + ULISSE), in one run.

Peers measured in the same run: a random-walk Metropolis chain on the exact
(Cholesky) marginal likelihood, CG run to full tolerance, the dense BLAS
product ``K @ V`` and one LAPACK Cholesky of the same matrix.

    python benchmarks/bench_sgld.py            # everything (about 20 minutes)
    python benchmarks/bench_sgld.py --quick    # smaller sizes
    python benchmarks/bench_sgld.py --only-warm-starts  # issue #17, last row
    python benchmarks/bench_sgld.py --only-trace-steps  # stochastic-trace steps
    python benchmarks/bench_sgld.py --only-mala-blocks  # compiled MALA blocks

Prints Markdown tables.
"""

import argparse
import os
import platform
import time
import warnings

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path when run as a script
from scipy.linalg import lapack
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from threadpoolctl import threadpool_limits

from skgp_bayes import SGLDGPRegressor
from skgp_bayes._sgld_compiled import compiled_langevin
from skgp_bayes.datasets import load_concrete
from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.inference import run_sgld
from skgp_bayes.inference.laplace import find_map, laplace_covariance
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.priors import Gamma, PriorSet
from skgp_bayes.targets import (
    ExactMarginalTarget,
    StochasticMarginalGradient,
    StochasticTraceTarget,
)

NAMES = ["sigma (constant_value)", "length_scale", "lambda (noise_variance)"]
# (label, solver, max_random_steps, preconditioner rank) of the gradient
# comparisons; the first is the estimator's default, the third its reference.
SOLVERS = [
    ("ULISSE, pivoted-Cholesky rank 100 (default)", "ulisse", 10, 100),
    ("ULISSE, no preconditioner", "ulisse", 10, 0),
    ("CG to 1e-8, rank 100", "cg", None, 100),
    ("CG to 1e-8, no preconditioner", "cg", None, 0),
]


# (probes, constant step) of the SGLD runs against the reference. The
# gradient noise whitened by the SGLD preconditioner has a largest eigenvalue
# of about 15 / (probes / 4) at the MAP, so both keep seed 002's ratio
# eps / 4 lambda_max near 0.07 (variance inflated by about that); more probes
# allow a longer step, at little cost when CG multiplies by a stored K.
SGLD_CONFIGS = [(16, 0.08), (32, 0.16)]


def kernel():
    # sigma exp(-tau |x - x'|^2) with tau = 1 / (2 length_scale^2); lambda
    # delta is the estimator's noise_variance.
    return ConstantKernel(1.0, (1e-3, 1e3)) * RBF(1.0, (1e-2, 1e3))


PRIORS = {
    "k1__constant_value": Gamma(2.0, 1.0),
    "k2__length_scale": Gamma(2.0, 2.0),
    "noise_variance": Gamma(1.0, 1.0),
}


def concrete(n_max):
    data = load_concrete()
    X, y = np.asarray(data.data, float), np.asarray(data.target, float)
    if n_max < X.shape[0]:
        idx = np.random.default_rng(0).choice(X.shape[0], n_max, replace=False)
        X, y = X[idx], y[idx]
    X = (X - X.mean(0)) / X.std(0)
    return X, (y - y.mean()) / y.std()


def exact_target(X, y):
    adapter = KernelAdapter(kernel())
    slices = dict(adapter.hyperparameter_slices)
    slices["noise_variance"] = slice(2, 3)
    prior = PriorSet(slices, PRIORS)
    return adapter, prior, ExactMarginalTarget(adapter, X, y, prior)


def metropolis(target, prior, start, cov, n_iter, rng):
    """Random-walk Metropolis on the exact log posterior (Cholesky each step)."""
    root = np.linalg.cholesky(cov * 2.38**2 / start.size)

    def logp(p):
        try:
            return target.log_likelihood(p, eval_gradient=False) + prior.log_prob(p)[0]
        except np.linalg.LinAlgError:
            return -np.inf

    x, lx = start.copy(), logp(start)
    out = np.empty((n_iter, start.size))
    accepted = 0
    for t in range(n_iter):
        prop = x + root @ rng.standard_normal(start.size)
        lp = logp(prop)
        if np.log(rng.random()) < lp - lx:
            x, lx = prop, lp
            accepted += 1
        out[t] = x
    return out, accepted / n_iter


def solver_gradient(adapter, X, y, prior, seed, solver, cap, rank):
    return StochasticMarginalGradient(
        adapter,
        X,
        y,
        prior,
        rng=np.random.default_rng(seed),
        q=0.1,
        beta=0.1,
        max_random_steps=cap,
        solver=solver,
        preconditioner_rank=rank,
        n_probes=16,
    )


def quality(quick, n=None):
    n = n or (300 if quick else 1030)
    X, y = concrete(n)
    adapter, prior, target = exact_target(X, y)
    bounds = np.vstack([np.asarray(kernel().bounds), np.log([[1e-6, 1e3]])])
    map_params = find_map(target, np.zeros(3), bounds).params
    cov = laplace_covariance(target, map_params, bounds)
    n_ref = 3000 if quick else 6000
    t0 = time.perf_counter()
    ref, acc = metropolis(
        target, prior, map_params, cov, n_ref, np.random.default_rng(0)
    )
    ref_time = time.perf_counter() - t0
    ref = ref[n_ref // 10 :]
    ref_ess = effective_sample_size(ref[None])

    n_iter = 1500 if quick else 3000
    print(f"\n### Concrete (n = {n}, d = 8): posterior of log parameters\n")
    print(
        f"Reference: random-walk Metropolis on the Cholesky marginal, {n_ref} "
        f"iterations (acceptance {acc:.2f}), first 10% dropped. SGLD: 2 chains x "
        f"{n_iter} iterations in 2 processes, constant step, q = 0.1, beta = 0.1, "
        "max_random_steps = 10, probes redrawn every iteration, CG "
        "preconditioner rank 100, first 10% dropped.\n"
    )
    rm, rs = ref.mean(0), ref.std(0)
    rows = [("Metropolis (Cholesky)", ref_time, ref_ess.min(), rm, rs, None)]
    regs = []
    for n_probes, step in SGLD_CONFIGS:
        reg = SGLDGPRegressor(
            kernel(),
            priors=PRIORS,
            n_iter=n_iter,
            n_chains=2,
            n_jobs=2,
            n_probes=n_probes,
            solver="ulisse",  # the subject here; "auto" would factorise
            step_size_start=step,
            step_size_end=step,
            step_size_gamma=0.0,
            burn_in=n_iter // 10,
            thin=1,
            normalize_y=False,
            random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reg.fit(X, y)
        draws = reg.samples_.reshape(-1, 3)
        ess = effective_sample_size(reg.samples_)
        label = f"SGLD, {n_probes} probes, step {step}"
        fit_time = reg.diagnostics_["fit_time"]
        rows.append((label, fit_time, ess.min(), draws.mean(0), draws.std(0), reg))
        regs.append(reg)
    head = " | ".join(f"log {nm}: mean (sd)" for nm in NAMES)
    print(f"| sampler | {head} | largest \\|diff\\| / ref sd | sd / ref sd |")
    print("| --- " * (3 + len(NAMES)) + "|")
    for label, _, _, mean, sd, _ in rows:
        cells = " | ".join(f"{mean[j]:.3f} ({sd[j]:.3f})" for j in range(3))
        diff = np.max(np.abs(mean - rm) / rs)
        ratio = ", ".join(f"{v:.2f}" for v in sd / rs)
        print(f"| {label} | {cells} | {diff:.2f} | {ratio} |")
    print(
        "\n| sampler | wall time (s) | min ESS | s per independent sample | "
        "ratio to Metropolis | CG iterations per gradient | split R-hat | "
        "largest move |"
    )
    print("| --- " * 8 + "|")
    for label, secs, min_ess, _, _, reg in rows:
        extra = "| | | |"
        if reg is not None:
            extra = (
                f"| {reg.diagnostics_['cg_iterations_mean']:.1f} | "
                f"{np.array2string(reg.rhat_, precision=3)} | "
                f"{np.abs(np.diff(reg.chains_, axis=1)).max():.3f} |"
            )
        print(
            f"| {label} | {secs:.1f} | {min_ess:.0f} | {secs / min_ess:.2f} | "
            f"{(secs / min_ess) / (ref_time / ref_ess.min()):.2f} {extra}"
        )
    reg = regs[0]
    ess = effective_sample_size(reg.samples_)

    # ULISSE against CG to full tolerance, along the SGLD chain (warm starts).
    path = reg.chains_[0, n_iter // 10 :: max(1, n_iter // 100)]
    counts = {}
    for label, solver, cap, rank in SOLVERS:
        grad = solver_gradient(adapter, X, y, prior, 1, solver, cap, rank)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            for p in path:
                grad(p)
        counts[label] = (np.mean(grad.cg_iterations), time.perf_counter() - t0)
    # Gradient noise at the MAP, whitened by M: seed 002's eq. 7 is
    # eps / 4 times its largest eigenvalue; the largest whitened deviation
    # from the exact gradient shows the tail.
    root = np.linalg.cholesky(reg.preconditioner_)
    exact = target.logp_and_grad(reg.map_params_)[1]
    n_noise = 100 if quick else 300
    noise = {}
    for label, solver, cap, rank in SOLVERS:
        grad = solver_gradient(adapter, X, y, prior, 2, solver, cap, rank)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            G = np.array([grad(reg.map_params_)[1] for _ in range(n_noise)])
        white = (G - exact) @ root
        noise[label] = (
            np.linalg.eigvalsh(np.cov(white.T)).max(),
            np.linalg.norm(white, axis=1).max(),
        )
    print(
        f"\n| solver | block CG iterations per gradient | s per gradient | "
        f"lambda_max(M^1/2 V M^1/2) at the MAP | largest whitened error of "
        f"{n_noise} |"
    )
    print("| --- | --- | --- | --- | --- |")
    for label, (its, secs) in counts.items():
        lam, worst = noise[label]
        print(
            f"| {label} | {its:.1f} | {secs / len(path):.4f} | {lam:.1f} | "
            f"{worst:.1f} |"
        )
    its = {label: counts[label][0] for label, *_ in SOLVERS}
    labels = [label for label, *_ in SOLVERS]
    print(
        f"\nOver {len(path)} gradients along the chain: ULISSE / CG iterations "
        f"{its[labels[0]] / its[labels[2]]:.2f} with the preconditioner, "
        f"{its[labels[1]] / its[labels[3]]:.2f} without; the default against "
        f"plain CG to tolerance {its[labels[0]] / its[labels[3]]:.3f}."
    )
    return ess.min() / (2 * n_iter)


# (label, warm_start, probe_refresh) of the warm-start comparison; None keeps
# the probes for the whole run.
WARM_CONFIGS = [
    ("cold: every solve from zero, probes redrawn every step", False, 1),
    ("warm K^-1 y, probes redrawn every step (default)", True, 1),
    ("warm, probes kept 5 steps", True, 5),
    ("warm, probes kept 20 steps", True, 20),
    ("warm, probes kept for the whole run", True, None),
]


def _langevin_chain(gradient, start, cov, step, n_steps, seed):
    """Preconditioned Langevin steps ``x + step/2 M g + sqrt(step) M^1/2 xi``.

    The SGLD update of the estimator's constant-step chains, kept here so
    that only the gradient's solver options differ between runs.
    """
    rng = np.random.default_rng(seed)
    root = np.linalg.cholesky(cov)
    x = start.copy()
    for _ in range(n_steps):
        _, g = gradient(x)
        x = x + 0.5 * step * cov @ g + np.sqrt(step) * root @ rng.normal(size=x.size)
    return x


def warm_starts(n, n_steps, step=0.08):
    """Block CG products per SGLD step with and without warm starts.

    Every run is the same Langevin chain (same start, same injected noise)
    on Concrete, with ULISSE as in the quality runs (16 probes, q = 0.1,
    beta = 0.1, 10 randomised steps at most, pivoted-Cholesky rank 100).
    A warm start costs one more product (the starting residual), counted.
    """
    X, y = concrete(n)
    adapter, prior, target = exact_target(X, y)
    bounds = np.vstack([np.asarray(kernel().bounds), np.log([[1e-6, 1e3]])])
    map_params = find_map(target, np.zeros(3), bounds).params
    cov = laplace_covariance(target, map_params, bounds)
    print(
        f"\n### CG products per SGLD step with and without warm starts "
        f"(Concrete, n = {X.shape[0]}, {n_steps} steps of {step}, 16 probes)\n"
    )
    print(
        "| solves | block CG products per step | ratio to cold | products "
        "per step, 10% / 90% quantiles | s per step |"
    )
    print("| --- | ---: | ---: | --- | ---: |")
    cold = None
    for label, warm, refresh in WARM_CONFIGS:
        grad = StochasticMarginalGradient(
            adapter,
            X,
            y,
            prior,
            rng=np.random.default_rng(1),
            q=0.1,
            beta=0.1,
            max_random_steps=10,
            preconditioner_rank=100,
            n_probes=16,
            probe_refresh=n_steps if refresh is None else refresh,
            warm_start=warm,
        )
        t0 = time.perf_counter()
        _langevin_chain(grad, map_params, cov, step, n_steps, seed=2)
        seconds = (time.perf_counter() - t0) / n_steps
        products = np.array(grad.cg_iterations) + (1 if warm else 0)
        products[0] = grad.cg_iterations[0]  # the first call has no start
        mean = products[1:].mean()
        cold = mean if cold is None else cold
        low, high = np.quantile(products[1:], [0.1, 0.9])
        print(
            f"| {label} | {mean:.1f} | {mean / cold:.2f} | {low:.0f} / {high:.0f} "
            f"| {seconds:.3f} |"
        )


def _step_seconds(logp_and_grad, start, cov, metropolis, n_steps, repeats):
    """Seconds per step of ``run_sgld`` on ``logp_and_grad`` (best run)."""

    def chain():
        run_sgld(
            logp_and_grad,
            start,
            n_iter=n_steps,
            a=0.1,
            gamma=0.0,
            preconditioner=cov,
            rng=np.random.default_rng(0),
            metropolis=metropolis,
        )

    return best_time(chain, repeats) / n_steps


def trace_steps(sizes, n_steps=20, repeats=3):
    """An SGLD step with ``solver="stochastic_trace"`` in units of one Cholesky.

    On Concrete subsets (d = 8, isotropic RBF, the quality runs' priors), at
    the MAP with the Laplace covariance as the preconditioner: one LAPACK
    ``dpotrf`` of ``K`` against a Langevin step of the engine the estimator
    runs for each solver (MALA on the exact target for "cholesky", SGLD on
    the stochastic-trace target with 16 and 4 probes). One BLAS thread, as
    the estimator's chains run at these sizes: on a loaded 2-core machine
    two OpenBLAS threads made both targets ten to twenty times slower at
    n = 200.
    """
    print(
        "\n### One Langevin step in units of one Cholesky (`dpotrf`) at the "
        f"same n (Concrete, d = 8, {n_steps} steps, best of {repeats})\n"
    )
    print(
        "| n | dpotrf (ms) | cholesky: MALA step / dpotrf | stochastic_trace, 16 "
        "probes: SGLD step / dpotrf | stochastic_trace, 4 probes |"
    )
    print("| ---: | ---: | ---: | ---: | ---: |")
    with threadpool_limits(1, user_api="blas"):
        for n in sizes:
            _trace_step_row(n, n_steps, repeats)


def _at_the_map(n, chol_repeats):
    """A Concrete subset of ``n`` points, its exact target, the MAP with its
    Laplace covariance, and the seconds of one ``dpotrf`` of ``K`` there."""
    X, y = concrete(n)
    adapter, prior, target = exact_target(X, y)
    bounds = np.vstack([np.asarray(kernel().bounds), np.log([[1e-6, 1e3]])])
    start = find_map(target, np.zeros(3), bounds).params
    cov = laplace_covariance(target, start, bounds)
    theta, noise = start[:2], np.exp(start[2])
    K = adapter.gram(theta, X) + noise * np.eye(X.shape[0])
    chol = best_time(lambda: lapack.dpotrf(K, lower=1, clean=0), chol_repeats)
    return X, y, adapter, prior, target, bounds, start, cov, chol


def _trace_step_row(n, n_steps, repeats):
    """One row of :func:`trace_steps`: Concrete subset of ``n`` points."""
    X, y, adapter, prior, target, bounds, start, cov, chol = _at_the_map(n, 5)
    exact = _step_seconds(target.logp_and_grad, start, cov, True, n_steps, repeats)
    cells = []
    for probes in (16, 4):
        trace = StochasticTraceTarget(
            adapter, X, y, prior, rng=np.random.default_rng(1), n_probes=probes
        )
        seconds = _step_seconds(
            trace.logp_and_grad, start, cov, False, n_steps, repeats
        )
        cells.append(f"{seconds / chol:.2f}")
    print(
        f"| {X.shape[0]} | {1e3 * chol:.2f} | {exact / chol:.2f} | "
        + " | ".join(cells)
        + " |"
    )


def mala_blocks(sizes, n_steps=4000, repeats=3):
    """A MALA transition interpreted and in compiled blocks, against the floor.

    On Concrete subsets (d = 8, the quality runs' kernel and priors), at the
    MAP with the Laplace covariance as the preconditioner, dual averaging
    over the whole run (so every transition is the estimator's warm-up
    kind): ``run_sgld`` on the target's ``logp_and_grad`` (one interpreted
    ``mala_step`` a transition) and on the same density with compiled blocks
    (:mod:`skgp_bayes._sgld_compiled`), the same stream of random numbers for
    both. The floor is one evaluation of the target (its compiled value and
    gradient through the interpreted call) and one LAPACK ``dpotrf`` of
    ``K``. One BLAS thread.
    """
    print(
        "\n### One MALA transition, interpreted and in compiled blocks "
        f"(Concrete, d = 8, {n_steps} transitions, best of {repeats})\n"
    )
    print(
        "| n | dpotrf (us) | target call (us) | interpreted transition (us) | "
        "compiled transition (us) | interpreted / compiled | compiled / target "
        "call |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with threadpool_limits(1, user_api="blas"):
        for n in sizes:
            _mala_block_row(n, n_steps, repeats)


def _mala_block_row(n, n_steps, repeats):
    """One row of :func:`mala_blocks`: Concrete subset of ``n`` points."""
    X, y, adapter, prior, target, bounds, start, cov, chol = _at_the_map(n, 50)
    call = best_time(lambda: target.logp_and_grad(start), 50)

    def transition_seconds(density):
        def run():
            run_sgld(
                density, start, n_iter=n_steps, a=0.5, gamma=0.0,
                preconditioner=cov, bounds=bounds, metropolis=True,
                adapt_steps=n_steps, rng=np.random.default_rng(0),
            )  # fmt: skip

        return best_time(run, repeats) / n_steps

    interpreted = transition_seconds(target.logp_and_grad)
    compiled = transition_seconds(compiled_langevin(target.logp_and_grad, target))
    print(
        f"| {X.shape[0]} | {1e6 * chol:.1f} | {1e6 * call:.1f} | "
        f"{1e6 * interpreted:.1f} | {1e6 * compiled:.1f} | "
        f"{interpreted / compiled:.2f} | {compiled / call:.2f} |"
    )


# The census-sized gradient's settings (also bench_gpu.py's).
CENSUS_GRADIENT = dict(
    q=0.1,
    beta=0.1,
    max_random_steps=10,
    storage="dense",
    preconditioner_rank=100,
    n_probes=16,
)
# constant, length scale, noise variance at which the census gradient is timed
CENSUS_PARAMS = np.log([1.0, 2.0, 0.1])


def census_data(n, rng):
    """Synthetic data of the census size: 8 standard normal inputs, a smooth
    function of their sum plus noise, the target standardised."""
    X = rng.standard_normal((n, 8))
    y = np.sin(X @ np.full(8, 0.4)) + 0.3 * rng.standard_normal(n)
    return X, (y - y.mean()) / y.std()


def census(quick, ess_per_iter, n=None):
    n = n or (4000 if quick else 22784)
    rng = np.random.default_rng(0)
    X, y = census_data(n, rng)
    adapter, prior, _ = exact_target(X, y)
    params = CENSUS_PARAMS
    grad = StochasticMarginalGradient(adapter, X, y, prior, rng=rng, **CENSUS_GRADIENT)
    t0 = time.perf_counter()
    grad(params)
    cold = time.perf_counter() - t0
    times = []
    for step in range(2):
        t0 = time.perf_counter()
        # a nearby point: K^-1 y starts from the last solution, probes are new
        grad(params + 0.01 * (step + 1))
        times.append(time.perf_counter() - t0)
    warm = min(times)
    per_hour = 3600.0 / warm
    print(f"\n### Census-sized synthetic data (n = {n}, d = 8), 2 cores\n")
    print("| quantity | value |")
    print("| --- | --- |")
    print(f"| first gradient (cold CG start, new probes) | {cold:.1f} s |")
    print(f"| SGLD iteration (warm start of K^-1 y, stored K) | {warm:.1f} s |")
    print(f"| block CG iterations (cold, warm) | {grad.cg_iterations} |")
    print(f"| iterations per hour | {per_hour:.0f} |")
    print(
        f"| independent samples per day (x ESS/iteration {ess_per_iter:.4f} "
        f"from Concrete) | {24 * per_hour * ess_per_iter:.0f} |"
    )


def products(quick):
    n = 2000 if quick else 4000
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 8))
    adapter = KernelAdapter(kernel())
    theta = np.log([1.0, 2.0])
    V = rng.standard_normal((n, 5))
    adapter.matvec(theta, X, V)  # compile
    K = adapter.gram(theta, X) + 0.1 * np.eye(n)
    t_free = best_time(lambda: adapter.matvec(theta, X, V), 3)
    t_dense = best_time(lambda: K @ V, 5)
    t_gram = best_time(lambda: adapter.gram(theta, X), 2)
    t_chol = best_time(lambda: lapack.dpotrf(K, lower=1, clean=0), 2)
    print(f"\n### K @ V with 5 columns, n = {n}, d = 8 (RBF)\n")
    print("| operation | seconds | ratio to matrix-free K @ V |")
    print("| --- | --- | --- |")
    for label, t in (
        ("matrix-free K @ V (Numba, tiled, parallel)", t_free),
        ("dense K @ V (BLAS, K stored)", t_dense),
        ("build K (adapter.gram)", t_gram),
        ("one LAPACK Cholesky (dpotrf)", t_chol),
    ):
        print(f"| {label} | {t:.4f} | {t / t_free:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--n-concrete", type=int, help="Concrete subset size")
    parser.add_argument("--n-census", type=int, help="size of the synthetic set")
    parser.add_argument(
        "--skip-quality", action="store_true", help="only the timing sections"
    )
    parser.add_argument(
        "--ess-per-iter",
        type=float,
        default=None,
        help="ESS per iteration to extrapolate with when --skip-quality is given",
    )
    parser.add_argument(
        "--only-warm-starts",
        action="store_true",
        help="only CG products per SGLD step with and without warm starts",
    )
    parser.add_argument(
        "--warm-steps", type=int, default=200, help="steps of that comparison"
    )
    parser.add_argument(
        "--only-trace-steps",
        action="store_true",
        help="only the stochastic-trace SGLD step against one Cholesky",
    )
    parser.add_argument(
        "--only-mala-blocks",
        action="store_true",
        help="only a MALA transition interpreted and in compiled blocks",
    )
    parser.add_argument(
        "--trace-n",
        type=int,
        nargs="+",
        default=None,
        help="sizes of that comparison (default 200 500 1000; quick 200 500)",
    )
    args = parser.parse_args()
    print(
        f"# SGLDGPRegressor benchmark ({'quick' if args.quick else 'full'})\n\n"
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"NumPy {np.__version__}"
    )
    if args.only_warm_starts:
        warm_starts(args.n_concrete or 1030, args.warm_steps)
        return
    sizes = args.trace_n or ([200, 500] if args.quick else [200, 500, 1000])
    if args.only_trace_steps:
        trace_steps(sizes)
        return
    if args.only_mala_blocks:
        mala_blocks(args.trace_n or [12, 36, 96, 300])
        return
    if args.skip_quality:
        ess_per_iter = args.ess_per_iter or float("nan")
    else:
        ess_per_iter = quality(args.quick, args.n_concrete)
    trace_steps(sizes)
    products(args.quick)
    census(args.quick, ess_per_iter, args.n_census)


if __name__ == "__main__":
    main()
