"""The chains of :class:`~skgp_bayes.SGLDGPRegressor`: one chain's run, the
blocks of the run-length rule, burn-in, the convergence warnings and the
warm-start check."""

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from ._backend import get_array_module
from ._base import Printer
from ._progress import engine_verbose, fit_progress
from ._warnings import collect_warnings, report, warn_user
from .diagnostics import (
    effective_sample_size,
    rank_normalize,
    split_chains,
    split_rhat,
)
from .exceptions import SamplerWarning, SolverConvergenceWarning
from .inference import run_sgld
from .inference.laplace import (
    gaussian_draws,
    gaussian_factor,
)
from .targets import ExactMarginalTarget, StochasticMarginalGradient

# Fewer kept draws per chain than this make R-hat and ESS unreliable.
MIN_DIAGNOSTIC_DRAWS = 100
# A fixed n_iter warns beyond this R-hat (the user chose the run length).
_RHAT_WARN = 1.1
# n_iter="auto" runs until every split R-hat is at most _RHAT_TARGET and every
# bulk ESS at least _ESS_TARGET (Vehtari, Gelman, Simpson, Carpenter and
# Buerkner, 2021), or until max_iter.
_RHAT_TARGET = 1.01
_ESS_TARGET = 100

# Parameters that define the chains: a warm start needs them unchanged
# (n_iter, burn-in, thinning, prediction and parallelism may change).
_CHAIN_PARAMS = (
    "noise_variance_bounds",
    "step_size_start",
    "step_size_end",
    "step_size_gamma",
    "freeze_threshold",
    "freeze_window",
    "preconditioner",
    "map_subset",
    "n_probes",
    "probe_refresh",
    "early_stop_q",
    "beta",
    "max_random_steps",
    "solver",
    "cg_tol",
    "cg_preconditioner_rank",
    "cg_max_iter",
    "storage",
    "n_chains",
    "normalize_y",
    "backend",
)


def _bulk_ess(kept):
    """Bulk ESS: the ESS of the rank-normalised split chains (Vehtari et al.)."""
    return effective_sample_size(rank_normalize(split_chains(kept)))


class _SafeGradient:
    """The stochastic gradient, with NaN where the kernel matrix fails.

    The engine treats a NaN gradient as a rejected update, halves the step
    and tries again; an exception would end the chain.
    """

    def __init__(self, gradient):
        self.gradient = gradient

    def __call__(self, params):
        try:
            return self.gradient(params)
        except (np.linalg.LinAlgError, FloatingPointError):
            return float("nan"), np.full(params.shape[0], np.nan)


class _SafeTarget:
    """The exact log posterior and gradient, ``-inf`` where ``K`` fails.

    MALA rejects such a proposal; the chain stays where it is.
    """

    def __init__(self, target):
        self.target = target

    def __call__(self, params):
        try:
            return self.target.logp_and_grad(params)
        except (np.linalg.LinAlgError, FloatingPointError):
            return -np.inf, np.full(params.shape[0], np.nan)


def _gradient(adapter, X, y, prior_set, log_noise, grad_rng, options, xp):
    """The chain's ``logp_and_grad``: exact (Cholesky) or stochastic (CG)."""
    if options["solver"] == "cholesky":
        return ExactMarginalTarget(adapter, X, y, prior_set, log_noise)
    return StochasticMarginalGradient(
        adapter,
        X,
        y,
        prior_set,
        log_noise,
        rng=grad_rng,
        n_probes=options["n_probes"],
        probe_refresh=options["probe_refresh"],
        q=options["q"],
        beta=options["beta"],
        max_random_steps=options["max_random_steps"],
        solver=options["solver"],
        tol=options["tol"],
        preconditioner_rank=options["preconditioner_rank"],
        max_iter=options["max_iter"],
        storage=options["storage"],
        xp=xp,
    )


def _run_chain(
    adapter,
    X,
    y,
    prior_set,
    log_noise,
    chain,
    options,
    M,
    bounds,
    verbose,
    progress=None,
):
    """Run (or continue) one chain.

    ``chain`` holds either ``"start"`` and ``"seed"`` (a new chain) or
    ``"state"``, the state a previous run returned (warm start or a further
    block of an automatic run length).
    """
    xp = get_array_module(options["backend"])
    resumed = chain.get("state")
    if resumed is None:
        grad_rng, noise_rng = (np.random.default_rng(s) for s in chain["seed"].spawn(2))
    else:
        grad_rng, noise_rng = None, resumed["noise_rng"]
    gradient = _gradient(adapter, X, y, prior_set, log_noise, grad_rng, options, xp)
    exact = isinstance(gradient, ExactMarginalTarget)
    if resumed is not None and not exact:
        gradient.set_state(resumed["gradient"])
    # A chain may run in another process: its warnings travel back as a log.
    with collect_warnings() as log:
        result = run_sgld(
            _SafeTarget(gradient) if exact else _SafeGradient(gradient),
            chain.get("start"),
            n_iter=options["n_iter"],
            a=options["a"],
            b=options["b"],
            gamma=options["gamma"],
            preconditioner=M,
            freeze_threshold=options["freeze_threshold"],
            freeze_window=options["freeze_window"],
            bounds=bounds,
            rng=noise_rng,
            verbose=verbose,
            print_fn=Printer(f"SGLDGPRegressor chain {options['chain']}"),
            resume=None if resumed is None else resumed["sgld"],
            metropolis=exact,
            adapt_steps=options["adapt_steps"],
            metric_windows=options["metric_windows"] if exact else (),
            progress=progress,
        )
    if exact:
        cg_iterations, max_residual = np.zeros(0, dtype=np.int64), 0.0
        n_gradients, exhausted, budget_residual = options["n_iter"], 0, 0.0
    else:
        cg_iterations = np.asarray(gradient.cg_iterations, dtype=np.int64)
        max_residual = gradient.max_residual
        n_gradients = len(gradient.cg_iterations)
        exhausted, budget_residual = (
            gradient.budget_exhausted,
            gradient.budget_residual,
        )
    if resumed is not None:
        cg_iterations = np.concatenate([resumed["cg_iterations"], cg_iterations])
        max_residual = max(max_residual, resumed["max_residual"])
    return {
        "samples": result.samples,
        "step_sizes": result.step_sizes,
        "accepted": result.accepted,
        "frozen_at": result.frozen_at,
        "n_rejected": result.n_rejected,
        "cg_iterations": cg_iterations,
        "max_residual": max_residual,
        "warnings": log,
        "n_gradients": n_gradients,
        "budget_exhausted": exhausted,
        "budget_residual": budget_residual,
        "state": {
            "sgld": result.state,
            "noise_rng": noise_rng,
            "gradient": None if exact else gradient.get_state(),
            "cg_iterations": cg_iterations,
            "max_residual": max_residual,
        },
    }


def _mixed(rhat, ess):
    """The run-length rule: every split R-hat and bulk ESS on target.

    R-hat is NaN with one chain: the rule is then the ESS alone.
    """
    if np.any(np.isnan(ess)):
        return False
    rhat_ok = np.all(np.isnan(rhat)) or np.all(rhat <= _RHAT_TARGET)
    return bool(rhat_ok and np.all(ess >= _ESS_TARGET))


def _worst(values, reduce):
    """``reduce`` over the non-NaN values; NaN (not a warning) if none."""
    return reduce(values) if np.any(~np.isnan(values)) else float("nan")


def _not_mixed_message(rhat, ess, names, ran, max_iter):
    worst = []
    for name, r, e in zip(names, rhat, ess, strict=True):
        if not (r <= _RHAT_TARGET or np.isnan(r)) or not e >= _ESS_TARGET:
            worst.append(f"{name} (R-hat {r:.3f}, ESS {e:.0f})")
    return (
        f"The chains did not mix within the budget of max_iter={max_iter} "
        f"iterations per chain ({ran} run by this fit): split R-hat up to "
        f"{_worst(rhat, np.nanmax):.3f} where {_RHAT_TARGET} is wanted and bulk "
        f"ESS down to {_worst(ess, np.nanmin):.0f} where {_ESS_TARGET} is "
        "wanted, for "
        f"{', '.join(worst)}. Summaries of these draws are unreliable; "
        "increase max_iter, or continue the chains with warm_start=True."
    )


class SGLDChainsMixin:
    """Chain-side methods of :class:`~skgp_bayes.SGLDGPRegressor`."""

    def _chain_starts(self, map_params, M, bounds, rng):
        """Starts from ``N(MAP, M)`` (the MAP for ``preconditioner="identity"``)
        and one seed per chain."""
        starts = gaussian_draws(map_params, gaussian_factor(M), self.n_chains, rng)
        if self.preconditioner == "identity":
            starts[:] = map_params
        starts = np.clip(starts, bounds[:, 0], bounds[:, 1])
        seeds = np.random.SeedSequence(rng.randint(np.iinfo(np.int32).max)).spawn(
            self.n_chains
        )
        return [{"start": starts[c], "seed": seeds[c]} for c in range(self.n_chains)]

    def _run_block(self, args, chain_inputs, options):
        adapter, X, y_model, prior_set, log_noise, M, bounds = args
        progress = fit_progress(
            self,
            "Langevin chains",
            options["n_iter"],
            n_runs=self.n_chains,
            in_process=effective_n_jobs(self.n_jobs) == 1,
        )
        jobs = (
            delayed(_run_chain)(
                adapter,
                X,
                y_model,
                prior_set,
                log_noise,
                chain_inputs[c],
                {**options, "chain": c},
                M,
                bounds,
                engine_verbose(self),
                progress.engine,
            )
            for c in range(self.n_chains)
        )
        with progress:
            return Parallel(n_jobs=self.n_jobs)(jobs)

    def _sample(self, args, chain_inputs, options, previous, names):
        """Run the chains, in blocks until they mix when ``n_iter="auto"``.

        Returns the pooled record and the iterations this fit ran.
        """
        if previous is None:
            p = len(names)
            chains = np.empty((self.n_chains, 0, p))
            steps = np.empty((self.n_chains, 0))
            accepted = np.empty((self.n_chains, 0), dtype=bool)
        else:
            chains, steps, accepted = previous
        auto = self.n_iter == "auto"
        limit = chains.shape[1] + self.max_iter if auto else None
        record = {"blocks": 0, "budget": [0, 0, 0.0]}
        ran = 0
        while True:
            runs = self._run_block(args, chain_inputs, options)
            ran += options["n_iter"]
            record["blocks"] += 1
            chains = np.concatenate([chains, np.stack([r["samples"] for r in runs])], 1)
            steps = np.concatenate(
                [steps, np.stack([r["step_sizes"] for r in runs])], 1
            )
            accepted = np.concatenate(
                [accepted, np.stack([r["accepted"] for r in runs])], 1
            )
            budget = record["budget"]
            budget[0] += sum(r["budget_exhausted"] for r in runs)
            budget[1] += sum(r["n_gradients"] for r in runs)
            budget[2] = max([budget[2]] + [r["budget_residual"] for r in runs])
            for r in runs:
                report(r["warnings"])
            frozen_at = [r["frozen_at"] for r in runs]
            notes = []
            burn = self._burn_in(chains.shape[1], frozen_at, notes)
            kept = chains[:, burn :: self.thin]
            rhat, ess = self._diagnostics(kept, notes)
            converged = _mixed(rhat, ess)
            done = not auto or converged or chains.shape[1] >= limit
            if self.verbose and auto:
                self._log(
                    f"{chains.shape[1]} iterations per chain: "
                    f"split R-hat up to {_worst(rhat, np.nanmax):.3f} (target "
                    f"{_RHAT_TARGET}), bulk ESS down to {_worst(ess, np.nanmin):.0f} "
                    f"(target {_ESS_TARGET})" + ("" if done else "; extending")
                )
            if done:
                break
            options = {
                **options,
                "n_iter": self._next_block(chains.shape[1], burn, limit),
            }
            chain_inputs = [{"state": r["state"]} for r in runs]
        cg = np.concatenate([r["cg_iterations"] for r in runs])
        record.update(
            chains=chains,
            steps=steps,
            accepted=accepted,
            burn=burn,
            kept=kept,
            rhat=rhat,
            ess=ess,
            notes=notes,
            converged=bool(converged),
            frozen_at=frozen_at,
            last=runs,
            cg_iterations=cg,
            max_residual=max(r["max_residual"] for r in runs),
            n_rejected=int(sum(r["n_rejected"] for r in runs)),
        )
        return record, ran

    def _next_block(self, n_total, burn, limit):
        """Half the kept span more (at least enough for 50 kept draws), so
        that the checks are few (logarithmic in the run length) and each run
        overshoots the length it needed by at most half."""
        block = max(self.thin * MIN_DIAGNOSTIC_DRAWS // 2, (n_total - burn) // 2)
        if limit is not None:
            block = min(block, limit - n_total)
        return max(block, 1)

    def _burn_in(self, n_total, frozen_at, notes):
        if self.burn_in is not None:
            return min(self.burn_in, n_total - 1)
        if all(f is not None for f in frozen_at):
            return min(max(frozen_at) + 1, n_total - 1)
        if self.n_iter == "auto":
            return min(self._warmup(exact=False), n_total - 1)
        if self.freeze_threshold is not None:
            notes.append(
                "the step size did not freeze in every chain; the first half "
                "of each chain was discarded"
            )
        return n_total // 2

    def _diagnostics(self, kept, notes):
        """Rank-normalised split R-hat and bulk ESS (Vehtari et al., 2021)."""
        p = kept.shape[2]
        if kept.shape[1] < MIN_DIAGNOSTIC_DRAWS:
            notes.append(
                f"R-hat and ESS were not computed: {kept.shape[1]} kept draws per "
                f"chain, fewer than {MIN_DIAGNOSTIC_DRAWS}"
            )
            return np.full(p, np.nan), np.full(p, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            ess = np.atleast_1d(_bulk_ess(kept))
            if kept.shape[0] < 2:
                notes.append("R-hat was not computed: it needs at least 2 chains")
                return np.full(p, np.nan), ess
            rhat = np.atleast_1d(split_rhat(kept, rank_normalized=True))
        return rhat, ess

    def _report_warnings(self, runs, budget, rhat, ess, names, n_samples, ran):
        exhausted, n_gradients, residual = budget
        if exhausted:
            warn_user(
                f"Conjugate gradients ran out of their budget of cg_max_iter="
                f"{self.cg_max_iter} iterations in {exhausted} of "
                f"{n_gradients} gradient evaluations "
                f"(relative residual left up to {residual:.3g}, cg_tol="
                f"{self.cg_tol}); those gradients are biased, so the chains may "
                "not sample the posterior. Increase cg_max_iter, or set it to "
                f"None for the default budget max(2 n, 100) = "
                f"{max(2 * n_samples, 100)} on these data.",
                SolverConvergenceWarning,
            )
        if self.n_iter == "auto":
            if not _mixed(rhat, ess):
                warn_user(
                    _not_mixed_message(rhat, ess, names, ran, self.max_iter),
                    SamplerWarning,
                )
            return
        bad = [n for n, r in zip(names, rhat, strict=True) if r > _RHAT_WARN]
        if bad:
            warn_user(
                f"The chains disagree (split R-hat above {_RHAT_WARN}) for {bad}; "
                "increase n_iter.",
                SamplerWarning,
            )

    def _chain_signature(self, names, bounds):
        """What a warm start must find unchanged, as comparable values."""
        params = {name: repr(getattr(self, name)) for name in _CHAIN_PARAMS}
        params["hyperparameters"] = repr((list(names), bounds.tolist()))
        return params

    def _check_warm_start(self, X, y, names, bounds):
        """The previous fit's data and chain set-up, or a ValueError.

        Returns the target on the model's scale.
        """
        if X.shape != self.X_train_.shape or not np.array_equal(X, self.X_train_):
            what = (
                f"shape {self.X_train_.shape}, got {X.shape}"
                if X.shape != self.X_train_.shape
                else "same shape, other values"
            )
            raise ValueError(
                "warm_start=True continues the chains of the previous fit, which "
                f"used another X ({what}); fit with the same X and y, or set "
                "warm_start=False to start afresh."
            )
        y_model = (y - self._y_mean) / self._y_std
        if not np.array_equal(y_model, self.y_train_):
            raise ValueError(
                "warm_start=True continues the chains of the previous fit, which "
                "used another y; fit with the same X and y, or set "
                "warm_start=False to start afresh."
            )
        now = self._chain_signature(names, bounds)
        changed = [k for k in now if now[k] != self._signature.get(k)]
        if changed:
            detail = "; ".join(
                f"{k}: {self._signature.get(k)} -> {now[k]}" for k in changed
            )
            raise ValueError(
                "warm_start=True continues the chains of the previous fit, but "
                f"parameters that define them changed ({detail}). Restore them, "
                "or set warm_start=False to start afresh."
            )
        return y_model
