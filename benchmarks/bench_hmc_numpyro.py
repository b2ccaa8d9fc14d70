"""HMC of VariationalMCMCClassifier against NumPyro's NUTS on the same target.

Issue #17, row 6: effective samples per second of the classifier's HMC,
against NumPyro's NUTS run on the same sparse whitened posterior
``p(theta, v | y)`` (seed paper 003): the same inputs in the model's units,
the same inducing inputs (the fitted ``inducing_points_``), kernel, default
priors, Gauss-Hermite rule, jitter and hyperparameter bounds (zero density
outside them, as the estimator's guarded target). The script first checks
that the JAX log density equals the estimator's target at its own draws, so
the two samplers are known to sample one density. ``--sampler nuts`` (or
``both``) fits ours with ``sampler="nuts"`` too.

Both run four chains one after another on one thread (BLAS for ours; XLA
told to use one thread for NumPyro), from the estimator's starting points
(the Gaussian approximation's mean). Ours: the estimator's default run
(warm-up and sampling blocks until split R-hat <= 1.01 and bulk ESS >= 100).
NumPyro: NUTS (target acceptance 0.8) with a diagonal and with a dense
mass matrix, the same number of warm-up iterations, then
``--numpyro-samples`` draws per chain (ESS per second is a rate; the
default keeps NUTS's run to minutes). ESS is the same estimator for both
(the estimator's own rank-normalised bulk ESS and split R-hat) on draws
in the same coordinates. The rates compare sampling phases: NumPyro's
timed alone after its warm-up (which includes JIT compilation, reported
apart), ours the share of the HMC time that its sampling-phase gradients
take.

NumPyro and JAX are needed in the benchmark environment only; they are
never a dependency of skgp_bayes::

    python -m venv /tmp/npvenv && . /tmp/npvenv/bin/activate
    pip install numpyro jax jaxlib && pip install -e .
    python benchmarks/bench_hmc_numpyro.py
"""

import argparse
import math
import os
import sys
import time

os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
)
os.environ.setdefault("JAX_ENABLE_X64", "1")

import numpy as np  # noqa: E402
from _real_data import LOADERS  # noqa: E402 (benchmarks/ is sys.path[0])
from bench_defaults import split  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from skgp_bayes import VariationalMCMCClassifier  # noqa: E402
from skgp_bayes._defaults import merged_priors  # noqa: E402
from skgp_bayes.likelihoods import gauss_hermite  # noqa: E402
from skgp_bayes.priors import Gamma, LogNormal, PriorSet  # noqa: E402
from skgp_bayes.targets.sparse import SparseWhitenedTarget  # noqa: E402
from skgp_bayes.variational_mcmc._sampling import rhat_and_bulk_ess  # noqa: E402


def fit_ours(seed, sampler="hmc"):
    """The default fit on breast cancer, split as in bench_defaults.py.

    ``sampler`` is the estimator's (the default is ``"hmc"``).
    """
    X_tr, _, y_tr, _ = split(LOADERS["breast_cancer"](), 0.3, 300, 0)
    with threadpool_limits(1):
        t0 = time.perf_counter()
        # one chain after another, as NumPyro's: a rate per core
        clf = VariationalMCMCClassifier(random_state=seed, sampler=sampler, n_jobs=1)
        clf.fit(X_tr, y_tr)
        wall = time.perf_counter() - t0
    return clf, X_tr, y_tr, wall


def our_target(clf, X_tr, y_tr):
    """The estimator's sparse target, rebuilt from its fitted state."""
    X_model = clf._validate_query(X_tr)
    y01 = np.searchsorted(clf.classes_, y_tr).astype(np.float64)
    adapter = clf._adapter
    slices = dict(adapter.hyperparameter_slices)
    priors = merged_priors(clf.priors, slices, X_model.shape[1])
    prior_set = PriorSet(slices, priors)
    target = SparseWhitenedTarget(
        adapter, X_model, y01, clf.inducing_points_, clf._likelihood, prior_set
    )
    return target, X_model, y01, priors


def jax_log_density(X, y, Z, priors, names, bounds, jitter, n_quadrature):
    """The same log density in JAX, over ``[log c, log ell_1..d, v]``."""
    import jax.numpy as jnp
    from jax.scipy.linalg import solve_triangular

    nodes, weights = gauss_hermite(n_quadrature)
    nodes, log_w = jnp.asarray(nodes), jnp.log(jnp.asarray(weights))
    sign = 2.0 * jnp.asarray(y) - 1.0
    X, Z = jnp.asarray(X), jnp.asarray(Z)
    m, d = Z.shape
    lower, upper = jnp.asarray(bounds[:, 0]), jnp.asarray(bounds[:, 1])
    n_hyper = 1 + d
    # theta-space log priors, Jacobian included, as PriorSet evaluates them
    constant = priors.get(names[0])
    length = priors[names[1].split("[")[0]]
    assert isinstance(length, LogNormal)
    assert constant is None or isinstance(constant, Gamma)
    gamma_prior = constant if constant is not None else Gamma(1.0, 2.0)

    def log_prior(theta):
        a, s = gamma_prior.shape, gamma_prior.scale
        lp_c = a * theta[0] - jnp.exp(theta[0]) / s - a * jnp.log(s)
        lp_c = lp_c - math.lgamma(a)
        z = (theta[1:] - length.mu) / length.sigma
        lp_l = -0.5 * z * z - jnp.log(length.sigma) - 0.5 * jnp.log(2.0 * jnp.pi)
        return lp_c + jnp.sum(lp_l)

    def log_density(params):
        theta, v = params[:n_hyper], params[n_hyper:]
        variance, inv_ell = jnp.exp(theta[0]), jnp.exp(-theta[1:])
        Xs, Zs = X * inv_ell, Z * inv_ell

        def gram(A, B):
            sq = jnp.sum(A * A, 1)[:, None] + jnp.sum(B * B, 1)[None, :] - 2.0 * A @ B.T
            return variance * jnp.exp(-0.5 * jnp.maximum(sq, 0.0))

        Kuu = gram(Zs, Zs)
        Kuu = Kuu.at[jnp.diag_indices(m)].set(variance * (1.0 + jitter))
        R = jnp.linalg.cholesky(Kuu)
        A = solve_triangular(R, gram(Zs, Xs), lower=True)
        mu = A.T @ v
        gamma = jnp.maximum(variance - jnp.sum(A * A, 0), 1e-200)
        z = sign[:, None] * (mu[:, None] + jnp.sqrt(gamma)[:, None] * nodes)
        elp = jnp.sum(jnp.exp(log_w) * -jnp.logaddexp(0.0, -z), axis=1)
        value = jnp.sum(elp) - 0.5 * v @ v + log_prior(theta)
        inside = jnp.all((theta >= lower) & (theta <= upper))
        return jnp.where(inside, value, -jnp.inf)

    return log_density


def min_bulk_ess(chains):
    """The estimator's own run-length figures: min bulk ESS, max split R-hat."""
    rhat, ess = rhat_and_bulk_ess(chains)
    return float(np.nanmin(ess)), float(np.nanmax(rhat))


def run_numpyro(log_density, inits, n_warmup, n_samples, dense, seed):
    """NUTS warm-up, then sampling, each timed; JIT compilation falls in the
    warm-up's time (the first call), the sampling phase is timed alone."""
    import jax
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(
        potential_fn=lambda p: -log_density(p),
        dense_mass=dense,
        target_accept_prob=0.8,
    )
    mcmc = MCMC(
        kernel,
        num_warmup=n_warmup,
        num_samples=n_samples,
        num_chains=inits.shape[0],
        chain_method="sequential",
        progress_bar=False,
    )
    # one chain takes one starting point, several a batch of them
    starts = jax.numpy.asarray(inits[0] if inits.shape[0] == 1 else inits)
    t0 = time.perf_counter()
    mcmc.warmup(
        jax.random.PRNGKey(seed),
        init_params=starts,
        extra_fields=("num_steps",),
        collect_warmup=True,
    )
    warmup_s = time.perf_counter() - t0
    warmup_steps = int(np.asarray(mcmc.get_extra_fields()["num_steps"]).sum())
    t0 = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed + 1), extra_fields=("num_steps",))
    sampling_s = time.perf_counter() - t0
    draws = np.asarray(mcmc.get_samples(group_by_chain=True))
    n_steps = int(np.asarray(mcmc.get_extra_fields()["num_steps"]).sum())
    return draws, sampling_s, n_steps, warmup_s, warmup_steps


def report_ours(sampler, clf, X_tr, y_tr, wall):
    """Print our fit's figures; return its sampling-phase ESS per second."""
    # draws_ pools the chains in chain order
    n_chains = clf.n_chains
    n_kept = clf.draws_.shape[0] // n_chains
    chains = clf.draws_.reshape(n_chains, n_kept, -1)
    ess, rhat = min_bulk_ess(chains)
    hmc_time = clf.fit_time_["hmc"]
    n_ours = int(clf.trace_["n_leapfrog"].sum())
    n_ours_sampling = int(clf.trace_["n_leapfrog"][:, clf.n_warmup :].sum())
    print(
        f"ours ({sampler}): {n_chains} chains x ({clf.n_warmup} warm-up + "
        f"{n_kept} kept), {n_ours} gradients, HMC {hmc_time:.2f} s (fit "
        f"{wall:.2f} s), min bulk ESS {ess:.0f}, max R-hat {rhat:.4f}, "
        f"ESS/s {ess / hmc_time:.2f}, sampling-phase gradients per ESS "
        f"{n_ours_sampling / ess:.0f}"
    )
    # The sampling phase alone, for a like-for-like rate: its share of the
    # HMC time in proportion to its gradients (each costs the same).
    sampling_s = hmc_time * n_ours_sampling / n_ours
    print(
        f"ours ({sampler}), sampling phase: {sampling_s:.2f} s, ESS/s "
        f"{ess / sampling_s:.2f}"
    )
    return ess / sampling_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--numpyro-samples",
        type=int,
        default=250,
        help="NUTS draws per chain after warm-up (ESS per second is a rate)",
    )
    parser.add_argument("--numpyro-chains", type=int, default=4)
    parser.add_argument(
        "--numpyro-warmup", type=int, help="default: the estimator's n_warmup"
    )
    parser.add_argument("--mass", choices=["diagonal", "dense", "both"], default="both")
    parser.add_argument(
        "--sampler",
        choices=["hmc", "nuts", "both"],
        default="hmc",
        help="our estimator's sampler (default: its default, static HMC)",
    )
    args = parser.parse_args()
    import jax

    samplers = ["hmc", "nuts"] if args.sampler == "both" else [args.sampler]
    fits = {name: fit_ours(args.seed, name) for name in samplers}
    clf, X_tr, y_tr, wall = fits[samplers[0]]
    target, X_model, y01, priors = our_target(clf, X_tr, y_tr)
    names = list(clf.param_names_)
    bounds = np.asarray(clf._adapter.kernel.bounds).reshape(-1, 2)
    log_density = jax.jit(
        jax_log_density(
            X_model,
            y01,
            clf.inducing_points_,
            priors,
            names,
            bounds,
            clf._jitter,
            clf._likelihood.n_quadrature,
        )
    )
    draws = clf.draws_
    check = draws[:: max(1, draws.shape[0] // 20)]
    ours = np.array([target.logp_and_grad(p)[0] for p in check])
    theirs = np.array([float(log_density(jax.numpy.asarray(p))) for p in check])
    gap = float(np.max(np.abs(ours - theirs)))
    print(
        f"same target: max |log p ours - log p JAX| at {check.shape[0]} draws {gap:.2e}"
    )
    if not gap < 1e-6:
        sys.exit("the JAX density is not the estimator's target; nothing to compare")

    rates = {name: report_ours(name, *fits[name]) for name in samplers}
    start = np.concatenate([clf._q[0], np.asarray(clf._q[2]).ravel()])
    inits = np.tile(start, (clf.n_chains, 1))
    inits += 0.01 * np.random.default_rng(args.seed).standard_normal(inits.shape)
    grad_fn = jax.jit(jax.value_and_grad(log_density))
    point = jax.numpy.asarray(check[0])
    grad_fn(point)[1].block_until_ready()
    t0 = time.perf_counter()
    for _ in range(200):
        grad_fn(point)[1].block_until_ready()
    jax_us = (time.perf_counter() - t0) / 200 * 1e6
    print(
        f"one gradient: ours "
        f"{clf.fit_time_['hmc'] / clf.trace_['n_leapfrog'].sum() * 1e6:.0f} us "
        "(HMC time over "
        f"its gradients), JAX {jax_us:.0f} us (jitted value_and_grad, best loop)"
    )
    masses = {"diagonal": (False,), "dense": (True,), "both": (False, True)}
    n_warmup = clf.n_warmup if args.numpyro_warmup is None else args.numpyro_warmup
    for dense in masses[args.mass]:
        nd, secs, n_steps, warm_s, warm_steps = run_numpyro(
            log_density,
            inits[: args.numpyro_chains],
            n_warmup,
            args.numpyro_samples,
            dense,
            args.seed,
        )
        ess_n, rhat_n = min_bulk_ess(nd)
        print(
            f"NumPyro NUTS ({'dense' if dense else 'diagonal'} mass, "
            f"{nd.shape[0]} chains x {n_warmup} warm-up): warm-up "
            f"{warm_steps} gradients in {warm_s:.1f} s (compilation included); "
            f"sampling {args.numpyro_samples} per chain, {n_steps} gradients in "
            f"{secs:.2f} s, min bulk ESS {ess_n:.0f}, max R-hat {rhat_n:.4f}, "
            f"ESS/s {ess_n / secs:.2f}, sampling-phase gradients per ESS "
            f"{n_steps / ess_n:.0f}",
            flush=True,
        )
        for name, rate in rates.items():
            print(
                f"ours ({name}) / NumPyro ({'dense' if dense else 'diagonal'}) "
                f"ESS/s, sampling phases: {rate / (ess_n / secs):.2f}"
            )


if __name__ == "__main__":
    main()
