"""Quality and speed of the variational MCMC estimators, in one run.

1. Coal-mining disasters as in Hensman et al. (2015): 100 bins, 30 evenly
   spaced inducing inputs (fixed), half of the events held out at random,
   repeated over splits; mean held-out log predictive density per bin of
   HMC against the Gaussian (SVGP) approximation of the same fit.
2. Breast cancer (scikit-learn's ``load_breast_cancer``, standardised, 70/30
   split): log loss, accuracy and fit time of VariationalMCMCClassifier
   against SteinGPClassifier and scikit-learn's GaussianProcessClassifier;
   effective samples per second of the slowest parameter.
3. A 10-dimensional binary problem, n = 20,000, 100 inducing inputs,
   minibatch SVGP initialisation: seconds per gradient of the sparse target,
   per HMC iteration and per effective sample (slowest parameter).
4. ``--sections crossover``: one value and gradient of the exact marginal
   target against the collapsed bound with 64 inducing inputs (the default
   set's cap), one BLAS thread, over n and the input dimension: where the
   regressor samples the exact target from the start
   (``_approximation._EXACT_FROM_START_MAX_N``); then, at 80-128 rows, the
   smallest inducing set whose bound costs as much as the exact target, as
   a fraction of the rows (``_approximation._EXACT_AFTER_GROWTH_FRACTION``).
5. ``--sections trajectory``: a leapfrog step of the exact target's chain
   density in one compiled call against the engine's interpreted loop,
   over n (beyond ``_trajectory.EXACT_MAX_ROWS`` rows in calls of fewer steps).
6. ``--sections softmax``: the sampled target's softmax expectation and its
   gradients at six to eight classes, one thread: the likelihood's 100
   draws and the simplex rule's nodes summed node by node, against the
   rule's closed form (``simplex_softmax_expectation``).

    python benchmarks/bench_variational_mcmc.py            # everything
    python benchmarks/bench_variational_mcmc.py --quick    # smaller sizes

Prints Markdown tables.
"""

import argparse
import functools
import platform
import time
import warnings

import numpy as np
from _timing import best_time  # benchmarks/ is on sys.path as a script
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skgp_bayes import (
    SteinGPClassifier,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)
from skgp_bayes.datasets import bin_coal_counts, load_coal
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli
from skgp_bayes.priors import Gamma, PriorSet
from skgp_bayes.targets.sparse import SparseWhitenedTarget


def _quiet():
    warnings.simplefilter("ignore", ConvergenceWarning)


def bench_coal(n_splits, n_warmup, n_samples, n_chains, priors=None):
    dates = load_coal().data[:, 0]
    start, end = np.floor(dates.min()), np.ceil(dates.max())
    Z = np.linspace(start, end, 30)[:, None]
    rows = []
    for split in range(n_splits):
        rng = np.random.default_rng(split)
        held_out = rng.permutation(dates.size) < dates.size // 2
        X, train, width = bin_coal_counts(dates[~held_out], 100, start, end)
        _, test, _ = bin_coal_counts(dates[held_out], 100, start, end)
        reg = VariationalMCMCRegressor(
            ConstantKernel(1.0) * RBF(10.0),
            likelihood="poisson",
            inducing_points=Z,
            optimize_inducing=False,
            n_chains=n_chains,
            n_warmup=n_warmup,
            n_samples=n_samples,
            priors=priors,
            random_state=split,
        )
        t0 = time.perf_counter()
        reg.fit(X, train, exposure=width)
        elapsed = time.perf_counter() - t0
        hmc = reg.log_predictive_density(X, test, exposure=width).mean()
        gauss = reg.log_predictive_density(
            X, test, exposure=width, method="gaussian"
        ).mean()
        rows.append((split, hmc, gauss, float(np.max(reg.rhat_)), elapsed))
    print(
        f"\n### Coal mining: held-out log predictive density per bin "
        f"({n_splits} splits, {n_chains} chains x {n_samples} draws; "
        f"priors {priors or 'default Gamma(1, 2)'})\n"
    )
    print("| split | HMC | Gaussian approx. | HMC - Gaussian | max R-hat | fit s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for split, hmc, gauss, rhat, elapsed in rows:
        print(
            f"| {split} | {hmc:.4f} | {gauss:.4f} | {hmc - gauss:+.4f} | "
            f"{rhat:.3f} | {elapsed:.1f} |"
        )
    hmc = np.array([r[1] for r in rows])
    gauss = np.array([r[2] for r in rows])
    print(
        f"| **mean** | **{hmc.mean():.4f}** | **{gauss.mean():.4f}** | "
        f"**{(hmc - gauss).mean():+.4f}** | | |"
    )
    print(
        f"\nHMC better on {int(np.sum(hmc > gauss))} of {n_splits} splits "
        "(seed paper: -1.225 against -1.229, better on every split)."
    )


def bench_breast_cancer(n_warmup, n_samples, n_chains, n_inducing):
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    d = X.shape[1]
    kernel = ConstantKernel(1.0) * RBF(np.sqrt(d))
    models = {
        "VariationalMCMCClassifier (HMC)": VariationalMCMCClassifier(
            kernel,
            n_inducing=n_inducing,
            n_chains=n_chains,
            n_warmup=n_warmup,
            n_samples=n_samples,
            random_state=0,
        ),
        "SteinGPClassifier": SteinGPClassifier(kernel, random_state=0),
        "sklearn GaussianProcessClassifier": GaussianProcessClassifier(
            kernel, random_state=0
        ),
    }
    rows = []
    vm = None
    for name, model in models.items():
        t0 = time.perf_counter()
        model.fit(X_tr, y_tr)
        elapsed = time.perf_counter() - t0
        proba = model.predict_proba(X_te)
        rows.append(
            (
                name,
                log_loss(y_te, proba),
                accuracy_score(y_te, model.predict(X_te)),
                elapsed,
            )
        )
        if isinstance(model, VariationalMCMCClassifier):
            vm = model
            proba_g = model.predict_proba(X_te, method="gaussian")
            rows.append(
                (
                    "VariationalMCMCClassifier (Gaussian approx.)",
                    log_loss(y_te, proba_g),
                    accuracy_score(y_te, proba_g.argmax(1)),
                    model.fit_time_["svgp"],
                )
            )
    ref = rows[-1][3]
    print(
        f"\n### Breast cancer (n_train={len(y_tr)}, n_test={len(y_te)}, d={d}; "
        f"{n_inducing} inducing, {n_chains} chains x {n_samples} draws)\n"
    )
    print("| model | log loss | accuracy | fit s | fit time / sklearn |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, ll, acc, t in rows:
        print(f"| {name} | {ll:.4f} | {acc:.4f} | {t:.1f} | {t / ref:.2f} |")
    j = int(np.argmin(vm.ess_))
    print(
        f"\nSlowest parameter {vm.param_names_[j]}: ESS {vm.ess_[j]:.0f} in "
        f"{vm.fit_time_['hmc']:.1f} s of HMC = "
        f"{vm.ess_[j] / vm.fit_time_['hmc']:.2f} effective samples / s; "
        f"max R-hat {np.max(vm.rhat_):.3f}, acceptance {vm.acceptance_rate_:.2f}, "
        f"divergences {vm.n_divergences_}."
    )


def bench_large(n, m, n_warmup, n_samples, max_leapfrog, svgp_steps):
    rng = np.random.default_rng(0)
    d = 10
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d) / np.sqrt(d)
    y = (np.sin(2.0 * X @ w) + 0.3 * rng.normal(size=n) > 0).astype(int)
    kernel = ConstantKernel(1.0) * RBF(np.sqrt(d))
    clf = VariationalMCMCClassifier(
        kernel,
        n_inducing=m,
        n_chains=1,
        n_warmup=n_warmup,
        n_samples=n_samples,
        max_leapfrog=max_leapfrog,
        batch_size=512,
        svgp_max_iter=svgp_steps,
        learning_rate=0.02,
        random_state=0,
    )
    clf.fit(X, y)
    # the same target the sampler evaluates, timed alone (peer of an iteration)
    adapter = KernelAdapter(kernel)
    target = SparseWhitenedTarget(
        adapter,
        X,
        y.astype(float),
        clf.inducing_points_,
        Bernoulli(),
        PriorSet(dict(adapter.hyperparameter_slices)),
    )
    params = clf.draws_[-1]
    target.logp_and_grad(params)
    times = []
    # under the estimator's own BLAS thread setting, as the sampler ran
    with clf._blas_limit(n, m):
        for _ in range(5):
            t0 = time.perf_counter()
            target.logp_and_grad(params)
            times.append(time.perf_counter() - t0)
    t_grad = min(times)
    n_iter = n_warmup + n_samples
    t_iter = clf.fit_time_["hmc"] / n_iter
    steps = clf.trace_["n_leapfrog"].mean()
    ess = float(np.min(clf.ess_))
    print(
        f"\n### 10-D binary, n={n}, m={m}, minibatch SVGP then HMC "
        f"({n_warmup} warm-up + {n_samples} iterations, 1 chain)\n"
    )
    print("| what | seconds | ratio |")
    print("| --- | ---: | ---: |")
    t_svgp = clf.fit_time_["svgp"]
    print(
        f"| SVGP initialisation ({svgp_steps} Adam steps, minibatches of 512) "
        f"| {t_svgp:.1f} | |"
    )
    print(f"| one gradient of the sparse target | {t_grad:.4f} | 1.00 |")
    print(
        f"| one HMC iteration (mean {steps:.1f} leapfrog steps) | {t_iter:.3f} | "
        f"{t_iter / t_grad:.1f} x gradient |"
    )
    print(
        f"| per effective sample, slowest parameter (ESS {ess:.1f}) | "
        f"{clf.fit_time_['hmc'] / ess:.2f} | {clf.fit_time_['hmc'] / ess / t_grad:.0f} "
        "x gradient |"
    )
    print(
        f"\ntraining accuracy {clf.score(X[:2000], y[:2000]):.3f} (first 2000 points)"
    )


def _mean_of_best_round(call, repeats=30, rounds=5):
    """Mean time of ``repeats`` calls, in the best of ``rounds`` rounds."""
    return best_time(lambda: [call() for _ in range(repeats)], rounds) / repeats


def _crossover_times(rng, n, d):
    """One value and gradient of the exact target at ``theta = 0`` on ``n``
    random rows of ``d`` inputs (seconds), and a timer of the collapsed
    bound's with ``m`` of those rows as inducing inputs."""
    from skgp_bayes.targets.collapsed import CollapsedSparseTarget
    from skgp_bayes.targets.exact import ExactMarginalTarget

    X = rng.standard_normal((n, d))
    y = np.sin(X.sum(axis=1)) + 0.1 * rng.standard_normal(n)
    adapter = KernelAdapter(ConstantKernel() * RBF(np.ones(d)))
    params = np.append(np.zeros(adapter.n_params), np.log(0.1))

    def bound_time(m):
        Z = X[rng.choice(n, min(n, m), replace=False)]
        bound = CollapsedSparseTarget(adapter, X, y, Z, None)
        return _mean_of_best_round(functools.partial(bound.logp_and_grad, params))

    exact = ExactMarginalTarget(adapter, X, y, None)
    t_exact = _mean_of_best_round(functools.partial(exact.logp_and_grad, params))
    return t_exact, bound_time


def bench_crossover(sizes=(64, 100, 150, 200, 300, 400), dims=(1, 5, 10)):
    """Exact target against the collapsed bound at 64 inducing inputs."""
    from threadpoolctl import threadpool_limits

    print("\n## Exact target against the collapsed bound at m = 64 (one BLAS thread)")
    print("\n| d | n | exact (ms) | collapsed, m = 64 (ms) | exact / collapsed |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    with threadpool_limits(1):
        for d in dims:
            for n in sizes:
                t_exact, bound_time = _crossover_times(rng, n, d)
                t_bound = bound_time(64)
                print(
                    f"| {d} | {n} | {1e3 * t_exact:.3f} | {1e3 * t_bound:.3f} "
                    f"| {t_exact / t_bound:.2f} |",
                    flush=True,
                )


def bench_crossover_fraction(sizes=(80, 100, 128), dims=(1, 3, 8)):
    """Inducing-set size at which the collapsed bound costs the exact target."""
    from threadpoolctl import threadpool_limits

    sets = (24, 32, 40, 48, 56, 64)
    print("\n## Collapsed bound over m against the exact target (one BLAS thread)")
    print(
        "\n| d | n | exact (ms) | "
        + " | ".join(f"m = {m} (ms)" for m in sets)
        + " | first m / n at least as dear |"
    )
    print("| ---: " * (len(sets) + 4) + "|")
    rng = np.random.default_rng(1)
    with threadpool_limits(1):
        for d in dims:
            for n in sizes:
                t_exact, bound_time = _crossover_times(rng, n, d)
                t_bound = [bound_time(m) for m in sets]
                dear = [m for m, t in zip(sets, t_bound, strict=True) if t >= t_exact]
                cells = " | ".join(f"{1e3 * t:.3f}" for t in t_bound)
                fraction = f"{dear[0] / n:.2f}" if dear else "-"
                print(
                    f"| {d} | {n} | {1e3 * t_exact:.3f} | {cells} | {fraction} |",
                    flush=True,
                )


def _trajectory_density(n, d, rng):
    """The exact target's chain density as the regressor builds it."""
    from skgp_bayes.priors import LogNormal, PriorSet
    from skgp_bayes.targets.exact import ExactMarginalTarget
    from skgp_bayes.variational_mcmc._sampling import GuardedTarget
    from skgp_bayes.variational_mcmc._trajectory import TrajectoryTarget

    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    adapter = KernelAdapter(ConstantKernel() * RBF(np.ones(d)))
    names = dict(adapter.hyperparameter_slices)
    names["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    prior = PriorSet(names, default=LogNormal(0.0, 1.0))
    target = ExactMarginalTarget(adapter, X, y, prior)
    p = target.n_params
    guarded = GuardedTarget(target, np.full(p, -8.0), np.full(p, 8.0))
    return TrajectoryTarget(guarded, np.r_[np.zeros(p - 1), -2.0], 0.1 * np.eye(p))


def bench_trajectory(sizes=(16, 32, 64, 128, 256, 384), dims=(1, 5), n_steps=10):
    """A compiled leapfrog step of the exact target against the engine's loop.

    Both evaluate the target by the same compiled function; the engine's
    loop adds the interpreted layers around it. Beyond
    ``variational_mcmc._trajectory.EXACT_MAX_ROWS`` rows the compiled
    trajectory is cut into calls of fewer steps, though not at these sizes
    and ten steps.
    """
    from threadpoolctl import threadpool_limits

    from skgp_bayes.inference.leapfrog import leapfrog

    print("\n## Exact target: compiled leapfrog step against the interpreted one")
    print("\n| d | n | compiled (us) | interpreted (us) | compiled / interpreted |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    with threadpool_limits(1):
        for d in dims:
            for n in sizes:
                density = _trajectory_density(n, d, rng)
                p = density.shift.size
                w, momentum = np.zeros(p), rng.standard_normal(p)
                inv_mass = np.ones(p)
                _, grad = density(w)
                args = (w, momentum, grad, 0.1, inv_mass, n_steps)
                compiled = _mean_of_best_round(
                    functools.partial(density.leapfrog, *args)
                )
                interpreted = _mean_of_best_round(
                    functools.partial(leapfrog, density.__call__, *args)
                )
                print(
                    f"| {d} | {n} | {1e6 * compiled / n_steps:.1f} "
                    f"| {1e6 * interpreted / n_steps:.1f} "
                    f"| {compiled / interpreted:.2f} |",
                    flush=True,
                )


def bench_softmax(sizes=(65, 300), class_counts=(6, 7, 8), repeats=200):
    """The softmax expectation by node and in the simplex rule's closed form."""
    from threadpoolctl import threadpool_limits

    from skgp_bayes.likelihoods import Softmax
    from skgp_bayes.targets import _likelihood_numba
    from skgp_bayes.targets.sparse import softmax_rule

    by_node = _likelihood_numba.softmax_expectation
    closed = _likelihood_numba.simplex_softmax_expectation
    print(
        "\n| points | classes | 100 draws, by node (us) | rule, by node (us) "
        "| rule, closed form (us) | closed / rule by node | closed / draws |",
        flush=True,
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    with threadpool_limits(1):
        for n in sizes:
            for C in class_counts:
                mu = rng.normal(scale=3.0, size=(n, C))
                sd = rng.uniform(0.05, 2.0, n)
                labels = rng.integers(0, C, n)
                draws = np.ascontiguousarray(Softmax(C).default_draws())
                flat = np.full(draws.shape[0], 1.0 / draws.shape[0])
                nodes, weights = softmax_rule(C)
                times = [
                    _mean_of_best_round(
                        functools.partial(f, labels, mu, sd, e, w), repeats
                    )
                    for f, e, w in (
                        (by_node, draws, flat),
                        (by_node, nodes, weights),
                        (closed, nodes, weights),
                    )
                ]
                print(
                    f"| {n} | {C} | {times[0] * 1e6:.1f} | {times[1] * 1e6:.1f} | "
                    f"{times[2] * 1e6:.1f} | {times[2] / times[1]:.2f} | "
                    f"{times[2] / times[0]:.2f} |",
                    flush=True,
                )


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--coal-prior",
        choices=["default", "years"],
        default="default",
        help="'years': Gamma(2, 10) on the length scale (mean 20 years)",
    )
    parser.add_argument(
        "--sections",
        default="coal,cancer,large",
        help="comma-separated subset of coal, cancer, large, crossover, "
        "trajectory, softmax (the last three only when named)",
    )
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    warnings.simplefilter("ignore", ConvergenceWarning)
    machine = platform.processor() or platform.machine()
    print(f"Machine: {machine}, Python {platform.python_version()}", flush=True)
    priors = None
    if args.coal_prior == "years":
        priors = {"k2__length_scale": Gamma(2.0, 10.0)}
    if "coal" in sections:
        sizes = (3, 200, 300, 2) if args.quick else (10, 200, 500, 2)
        bench_coal(*sizes, priors=priors)
    if "cancer" in sections:
        bench_breast_cancer(*((100, 100, 2, 30) if args.quick else (200, 300, 4, 50)))
    if "crossover" in sections:
        bench_crossover()
        bench_crossover_fraction()
    if "trajectory" in sections:
        bench_trajectory()
    if "softmax" in sections:
        bench_softmax()
    if "large" in sections:
        if args.quick:
            bench_large(5000, 50, 10, 10, 10, 200)
        else:
            bench_large(20000, 100, 50, 50, 10, 1000)


if __name__ == "__main__":
    main()
