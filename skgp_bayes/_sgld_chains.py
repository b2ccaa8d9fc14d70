"""The chains of :class:`~skgp_bayes.SGLDGPRegressor`: one chain's run, the
blocks of the run-length rule, the convergence warnings and the warm-start
check. Where the gradient comes from is the solver's business
(:mod:`skgp_bayes._sgld_solvers`); starts, schedule and the rule itself are
in :mod:`skgp_bayes._sgld_setup`."""

import numpy as np
from joblib import Parallel, effective_n_jobs

from ._backend import get_array_module
from ._base import Printer
from ._progress import engine_verbose, fit_progress
from ._run_length import BULK_ESS_MIN, RHAT_MAX
from ._sgld_compiled import CompiledLangevinDensity, compiled_langevin
from ._sgld_refine import continuation, mapped_bounds, maps_line
from ._sgld_setup import (
    chain_diagnostics,
    mixed,
    not_mixed_message,
    worst,
)
from ._subnormals import delayed_flushed
from ._warnings import collect_warnings, report, warn_user
from .exceptions import SamplerWarning, SolverConvergenceWarning
from .inference import run_sgld
from .inference._chain_threads import (
    default_chain_threads,
    quickest_seconds,
    run_on_threads,
)
from .inference.marginal_maps import MarginalMapTarget

# The least time an exact gradient must take for the chains to go on threads
# by default, where each iteration's interpreted part (the step, the
# Metropolis test, the records) holds the GIL. Default fits on 2 cores, the
# same draws either way: a gradient of 40 us (statecrime, 35 rows in 5
# dimensions) ran 0.75x as fast on threads, one of 112-1,705 us 1.34-2.06x as
# fast (coal, mcycle, sunspots, diabetes). Chains whose transitions run in
# compiled blocks hold the GIL only between blocks: 4,000 iterations of two
# chains on statecrime took 0.15 s on threads against 0.24 s on one.
THREADED_GRADIENT_SECONDS = 80e-6
# A fixed n_iter warns beyond this R-hat (the user chose the run length).
_RHAT_WARN = 1.1

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


def _run_chain(data, chain, options, M, bounds, verbose, progress=None):
    """Run (or continue) one chain.

    ``data`` is ``(adapter, X, y, prior_set, log_noise)``; ``chain`` holds
    either ``"start"`` and ``"seed"`` (a new chain) or ``"state"``, the
    state a previous run returned (warm start or a further block of an
    automatic run length); ``options["solver"]`` makes the chain's target.
    With ``options["maps"]`` (:mod:`skgp_bayes._sgld_refine`) the chain
    moves in the mapped coordinates: its state is there, its samples are
    returned mapped back.
    """
    solver = options["solver"]
    xp = get_array_module(options["backend"])
    resumed = chain.get("state")
    if resumed is None:
        grad_rng, noise_rng = (np.random.default_rng(s) for s in chain["seed"].spawn(2))
        target = solver.new_target(data, grad_rng, xp)
    else:
        noise_rng = resumed["noise_rng"]
        target = solver.resumed_target(data, resumed["gradient"], xp)
    density = solver.guarded(target)
    maps = options.get("maps")
    if maps is not None:
        density = MarginalMapTarget(density, maps)
        bounds = mapped_bounds(bounds, maps)
    if solver.metropolis:
        density = compiled_langevin(density, target, maps)
    # A chain may run in another process: its warnings travel back as a log.
    with collect_warnings() as log:
        result = run_sgld(
            density,
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
            metropolis=solver.metropolis,
            adapt_steps=options["adapt_steps"],
            metric_windows=options["metric_windows"] if solver.metropolis else (),
            progress=progress,
            jumps=options.get("jumps"),
        )
    record = solver.record(target, options["n_iter"])
    if resumed is not None:
        record["cg_iterations"] = np.concatenate(
            [resumed["cg_iterations"], record["cg_iterations"]]
        )
        record["max_residual"] = max(record["max_residual"], resumed["max_residual"])
    return {
        "samples": result.samples if maps is None else maps.to_x(result.samples),
        "step_sizes": result.step_sizes,
        "accepted": result.accepted,
        "frozen_at": result.frozen_at,
        "n_rejected": result.n_rejected,
        "n_jumps": result.n_jumps,
        "n_jumps_accepted": result.n_jumps_accepted,
        "warnings": log,
        **record,
        "state": {
            "sgld": result.state,
            "noise_rng": noise_rng,
            "gradient": solver.state(target),
            "cg_iterations": record["cg_iterations"],
            "max_residual": record["max_residual"],
        },
    }


def _block_line(n_done, rhat, ess, done):
    """The progress line of a block of the automatic run length."""
    return (
        f"{n_done} iterations per chain: "
        f"split R-hat up to {worst(rhat, np.nanmax):.3f} (target "
        f"{RHAT_MAX}), bulk ESS down to {worst(ess, np.nanmin):.0f} "
        f"(target {BULK_ESS_MIN})" + ("" if done else "; extending")
    )


def _empty_traces(n_chains, n_params):
    """Positions, step sizes and acceptances of chains not yet run."""
    return (
        np.empty((n_chains, 0, n_params)),
        np.empty((n_chains, 0)),
        np.empty((n_chains, 0), dtype=bool),
    )


def _new_record():
    """What :func:`_tally` counts over a fit's blocks, before the first."""
    return {
        "blocks": 0,
        "budget": [0, 0, 0.0],
        "mode_jumps": [0, 0],
        "refined_at": None,
    }


def _tally(record, runs):
    """Count a block into ``record``: the block, its CG budget overruns
    (``[overruns, gradients, worst residual]``) and mode jumps, and report
    the chains' warnings."""
    record["blocks"] += 1
    budget = record["budget"]
    budget[0] += sum(r["budget_exhausted"] for r in runs)
    budget[1] += sum(r["n_gradients"] for r in runs)
    budget[2] = max([budget[2]] + [r["budget_residual"] for r in runs])
    for r in runs:
        record["mode_jumps"][0] += r["n_jumps"]
        record["mode_jumps"][1] += r["n_jumps_accepted"]
        report(r["warnings"])


class SGLDChainsMixin:
    """Chain-side methods of :class:`~skgp_bayes.SGLDGPRegressor`."""

    def _run_block(self, chain_args, chain_inputs, options, threads):
        data, M, bounds = chain_args
        progress = fit_progress(
            self,
            "Langevin chains",
            options["n_iter"],
            n_runs=self.n_chains,
            in_process=effective_n_jobs(self.n_jobs) == 1,
        )
        verbose = engine_verbose(self)

        def arguments(c):
            return data, chain_inputs[c], {**options, "chain": c}, M, bounds, verbose

        with progress:
            if threads > 1:
                return run_on_threads(
                    lambda c, shared: _run_chain(*arguments(c), shared),
                    self.n_chains,
                    threads,
                    progress.engine,
                )
            jobs = (  # on processes: the caller's flush modes set there too
                delayed_flushed(_run_chain)(*arguments(c), progress.engine)
                for c in range(self.n_chains)
            )
            return Parallel(n_jobs=self.n_jobs)(jobs)

    def _chain_threads(self, data, chain_inputs, options):
        """Threads for the chains, once per fit: one per chain, or 1.

        Exact chains whose gradient is one compiled call that releases the
        GIL, on the CPU, and takes at least
        :data:`THREADED_GRADIENT_SECONDS` (timed at the first chain's start),
        or whose transitions after the warm-up run in compiled blocks
        (:mod:`skgp_bayes._sgld_compiled`; a block of up to 1,024
        transitions is then the unit of work that releases the GIL), go on
        threads when ``n_jobs`` is None
        (:func:`~skgp_bayes.inference._chain_threads.default_chain_threads`).
        The draws are those of one chain after another.
        """
        solver = options["solver"]

        def gradient_seconds():
            if solver.name != "cholesky":
                return None
            if get_array_module(options["backend"]) is not np:
                return None
            target = solver.new_target(data, None, np)
            if not target.compiled:
                return None
            start = chain_inputs[0].get("start")
            x = np.zeros(target.n_params) if start is None else np.asarray(start)
            guarded = solver.guarded(target)
            seconds = quickest_seconds(lambda: guarded(x))
            density = compiled_langevin(guarded, target)
            if isinstance(density, CompiledLangevinDensity):
                # a block of transitions is the compiled work that frees the GIL
                return seconds * density.mala_block_steps
            return seconds

        return default_chain_threads(
            self.n_jobs, self.n_chains, gradient_seconds, THREADED_GRADIENT_SECONDS
        )

    def _sample(
        self, chain_args, chain_inputs, options, previous, run, names, find_modes=None
    ):
        """Run the chains, in blocks until they mix when ``n_iter="auto"``.

        ``previous`` holds the traces a warm start continues (None on a
        fresh fit), ``run`` is the
        :class:`~skgp_bayes._sgld_setup.RunLength` and ``names`` are the
        parameters'. Chains that have not mixed may go on with jumps
        between modes that searches from their draws found (``find_modes``,
        :mod:`skgp_bayes._sgld_modes`; searched again after twice the
        iterations of the last search), or, once per fit, in coordinates
        that map their skewed parameters to nearly normal ones
        (:mod:`skgp_bayes._sgld_refine`). Returns the pooled record and the
        iterations this fit ran.
        """
        if previous is None:
            previous = _empty_traces(self.n_chains, chain_args[1].shape[0])
        chains, steps, accepted = previous
        auto = self.n_iter == "auto"
        limit = chains.shape[1] + self.max_iter if auto else None
        record = _new_record()
        ran = 0
        threads = self._chain_threads(chain_args[0], chain_inputs, options)
        while True:
            runs = self._run_block(chain_args, chain_inputs, options, threads)
            ran += options["n_iter"]
            chains, steps, accepted = (
                np.concatenate([old, np.stack([r[key] for r in runs])], 1)
                for old, key in (
                    (chains, "samples"),
                    (steps, "step_sizes"),
                    (accepted, "accepted"),
                )
            )
            _tally(record, runs)
            frozen_at = [r["frozen_at"] for r in runs]
            notes = []
            burn = run.discarded(
                chains.shape[1], frozen_at, notes, self.freeze_threshold
            )
            kept = chains[:, burn :: self.thin]
            rhat, ess = chain_diagnostics(kept, notes)
            converged = mixed(rhat, ess)
            done = not auto or converged or chains.shape[1] >= limit
            if self.verbose and auto:
                self._log(_block_line(chains.shape[1], rhat, ess, done))
            if done:
                break
            before, diagnosed = options, (chains.shape[1], burn, kept, rhat, ess)
            options, chain_inputs = continuation(
                runs, diagnosed, options, run, limit, find_modes
            )
            self._note_refinement(record, before, options, chains.shape[1], names)
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
            cg_iterations=np.concatenate([r["cg_iterations"] for r in runs]),
            max_residual=max(r["max_residual"] for r in runs),
            n_rejected=int(sum(r["n_rejected"] for r in runs)),
            options=options,
        )
        return record, ran

    def _note_refinement(self, record, before, options, n_done, names):
        """Record (and report) new maps or mode jumps the chains go on with."""
        if options.get("maps") is not before.get("maps"):
            record["refined_at"] = n_done
            if self.verbose:
                self._log(maps_line(names, options["maps"]))
        if options.get("jumps") is not before.get("jumps"):
            record["refined_at"] = n_done
            if self.verbose:
                self._log(
                    f"{options['jumps'].describe()} from searches that started "
                    "where the chains went: the chains jump between them and "
                    "adapt again"
                )

    def _report_warnings(self, runs, names, n_samples, ran):
        """The solver's and the run length's warnings, from ``_sample``'s
        record ``runs``."""
        rhat, ess = runs["rhat"], runs["ess"]
        exhausted, n_gradients, residual = runs["budget"]
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
            if not mixed(rhat, ess):
                warn_user(
                    not_mixed_message(
                        rhat, ess, names, ran, self.max_iter, runs["kept"]
                    ),
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
