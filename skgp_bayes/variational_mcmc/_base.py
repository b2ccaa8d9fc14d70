"""Fit and prediction machinery shared by the two variational MCMC estimators."""

import time
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._arviz import InferenceDataMixin
from .._base import EstimatorBase
from .._base import Printer as _Printer
from .._defaults import (
    NOISE_VARIANCE_BOUNDS,
    fit_input_scaling,
    merged_priors,
)
from .._fit_checks import warn_at_bounds
from .._predictive_contract import per_chain_samples
from .._progress import engine_verbose, fit_progress
from .._sparse import SVGP_WINDOW as _SVGP_WINDOW
from .._sparse import fit_svgp_adam, fit_svgp_lbfgs, initial_inducing
from .._threads import blas_threads_for
from .._validation import (
    VersionedStateMixin,
    check_bounds,
    check_finite_theta,
    check_input_magnitude,
    check_n_samples,
)
from .._warnings import warn_user
from ..exceptions import SamplerWarning
from ..inference import run_hmc_chains
from ..inference.affine import curvature_preconditioner
from ..kernels import KernelAdapter
from ..likelihoods import Gaussian, RobustMax
from ..predictive.sparse import (
    q_draw,
    q_marginal_variances,
    q_moments_per_latent,
    sparse_draw_moments,
    sparse_function_samples,
)
from ..priors import PriorSet
from ..targets.sparse import SparseWhitenedTarget
from ..targets.svgp import SVGPBound
from ._sampling import (
    BULK_ESS_MIN,
    HYPER_INV_MASS,
    RHAT_MAX,
    GuardedTarget,
    Sampler,
    after_warmup,
    default_n_inducing,
    merge,
    rhat_and_bulk_ess,
    run_length_met,
    svgp_recent_gain,
)

# Above this many training points the SVGP is fitted by minibatch Adam
# (unless batch_size says otherwise); below, full-batch L-BFGS-B converges
# in far fewer passes over the data.
_LBFGS_MAX_N = 5000
_DEFAULT_BATCH = 512
# Stopping rule of the Gaussian approximation, in nats per data point over
# the last _SVGP_WINDOW iterations. The approximation only places the
# inducing inputs and starts the chains (HMC then samples the sparse
# posterior itself), and 1e-4 nats per point is a thousandth of the
# differences in mean log predictive density that matter (0.05 and more).
SVGP_TOL = 1e-4
# Log noise variance bounds of a Gaussian likelihood (standardised targets).
LOG_NOISE_BOUNDS = tuple(np.log(NOISE_VARIANCE_BOUNDS))
# Default leapfrog bound (max_leapfrog=None): steps up to an integration
# time of pi, at most _LEAPFROG_CAP of them (the cap only stops a step size
# collapsed towards zero from making one transition endless). _TYPICAL_STEP
# is the adapted step seen in the curvature-scaled coordinates (0.15 to
# 0.4), used only to cost the curvature against the warm-up.
_LEAPFROG_CAP = 1024
_TYPICAL_STEP = 0.3
# Shortest warm-up split into a curvature-scaled quarter, a quarter of draws
# that refine the coordinates, and a half in the refined coordinates: each
# engine warm-up of at least 20 iterations adapts a mass matrix.
_MIN_REFINED_WARMUP = 80
# Query rows per block in prediction, bounding memory at O(rows * m).
_PREDICT_ROWS = 4096


class VariationalMCMCBase(
    EstimatorBase, InferenceDataMixin, VersionedStateMixin, BaseEstimator
):
    """Shared fit and prediction machinery; see the two public classes."""

    _common_constraints = {
        "kernel": [None, Kernel],
        "n_inducing": [None, Interval(Integral, 1, None, closed="left")],
        "inducing_points": [None, "array-like"],
        "optimize_inducing": ["boolean"],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "n_warmup": [Interval(Integral, 0, None, closed="left")],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "max_samples": [Interval(Integral, 1, None, closed="left")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "max_leapfrog": [None, Interval(Integral, 1, None, closed="left")],
        "target_accept": [Interval(Real, 0, 1, closed="neither")],
        "priors": [None, dict],
        "batch_size": [None, Interval(Integral, 1, None, closed="left")],
        "svgp_max_iter": [Interval(Integral, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "normalize_X": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
    }

    # ------------------------------------------------------------ helpers
    def _inducing(self, X, seed, scaling):
        if self.inducing_points is None:
            return initial_inducing(X, self._n_inducing(X.shape[0]), seed)
        Z = np.asarray(self.inducing_points, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != X.shape[1] or Z.shape[0] < 1:
            raise ValueError(
                f"inducing_points must have shape (m, {X.shape[1]}); got {Z.shape}."
            )
        if not np.all(np.isfinite(Z)):
            raise ValueError("inducing_points must be finite.")
        return np.ascontiguousarray(scaling.transform(Z))

    def _blas_limit(self, n_rows, n_inducing):
        # Small triangular solves are dominated by BLAS thread start-up (and
        # by threads fighting for the cores on a busy machine): measured at
        # n=60, m=8 on 2 cores, one target gradient took 48 ms with threaded
        # BLAS and 1.1 ms serial.
        return blas_threads_for(n_rows, n_inducing)

    def _n_inducing(self, n):
        if self.n_inducing is not None:
            return self.n_inducing
        return default_n_inducing(n)

    def _fit_pipeline(self, X, y_lik, likelihood, offset):
        """All three stages; returns the fitted attributes as a dict."""
        m = (
            self._n_inducing(X.shape[0])
            if self.inducing_points is None
            else len(self.inducing_points)
        )
        X_model, scaling = fit_input_scaling(self, X)
        with self._blas_limit(X.shape[0], m):
            fitted = self._fit_stages(X_model, y_lik, likelihood, offset, scaling)
        fitted["input_scaling_"] = scaling
        return fitted

    def _fit_start(self, X):
        """What every fit starts from: the clock, the seeds of its stages,
        the kernel (checked) and its bounds."""
        t_start = time.perf_counter()
        if self.thin > self.n_samples:
            raise ValueError(
                f"thin={self.thin} keeps no draw of n_samples={self.n_samples}."
            )
        check_input_magnitude(X)
        rng = check_random_state(self.random_state)
        seeds = rng.randint(0, 2**31 - 1, size=4)
        kernel = self._new_kernel(X.shape[1])
        adapter = KernelAdapter(kernel)
        check_finite_theta(kernel.theta, adapter.param_names)
        kernel_bounds = np.asarray(kernel.bounds, dtype=np.float64).reshape(-1, 2)
        check_bounds(kernel_bounds, adapter.param_names)
        return t_start, seeds, kernel, adapter, kernel_bounds

    def _fit_stages(self, X, y_lik, likelihood, offset, scaling):
        t_start, seeds, kernel, adapter, kernel_bounds = self._fit_start(X)
        is_gaussian = isinstance(likelihood, Gaussian)
        slices = dict(adapter.hyperparameter_slices)
        hyper_bounds = kernel_bounds
        if is_gaussian:
            slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
            hyper_bounds = np.vstack([kernel_bounds, [LOG_NOISE_BOUNDS]])
        prior_set = PriorSet(slices, merged_priors(self.priors, slices, X.shape[1]))

        # 1. Gaussian approximation
        Z0 = self._inducing(X, int(seeds[0]), scaling)
        bound = SVGPBound(
            adapter,
            X,
            y_lik,
            Z0,
            likelihood,
            prior_set,
            learn_inducing=None if self.optimize_inducing else False,
            offset=offset,
        )
        theta0 = np.clip(kernel.theta, kernel_bounds[:, 0], kernel_bounds[:, 1])
        start = bound.initial_params(theta0)
        opt_bounds = np.tile([-np.inf, np.inf], (bound.n_params, 1))
        opt_bounds[: bound.n_hyper] = hyper_bounds
        n = X.shape[0]
        batch = self.batch_size
        use_adam = (batch is not None and batch < n) or (
            batch is None and n > _LBFGS_MAX_N
        )
        report = self._svgp_reporter(t_start)
        if self.svgp_max_iter == 0:
            svgp_params, svgp_trace, converged, n_iter = start, [], True, 0
        elif use_adam:
            svgp_params, svgp_trace, converged, n_iter = fit_svgp_adam(
                bound,
                start,
                opt_bounds,
                self.svgp_max_iter,
                batch or _DEFAULT_BATCH,
                self.learning_rate,
                np.random.default_rng(int(seeds[1])),
                report=report,
            )
        else:
            svgp_params, svgp_trace, converged, n_iter = fit_svgp_lbfgs(
                bound,
                start,
                opt_bounds,
                self.svgp_max_iter,
                tol=SVGP_TOL,
                report=report,
            )
        if report is not None:
            report.close()
        if not converged:
            gain = svgp_recent_gain(svgp_trace)
            why = (
                f"the bound still rose by {gain / n:.2g} nats per point over the "
                f"last {_SVGP_WINDOW} iterations, against a tolerance of "
                f"{SVGP_TOL:g}"
                if np.isfinite(gain)
                else f"too few to apply the stopping rule over {_SVGP_WINDOW}"
            )
            warn_user(
                f"The Gaussian approximation did not converge in "
                f"{self.svgp_max_iter} L-BFGS iterations ({why}); increase "
                "svgp_max_iter.",
                ConvergenceWarning,
            )
        theta, log_noise, q_mean, q_L, Z = bound.split(svgp_params)
        Z = np.array(Z)
        svgp_elbo = (
            float(svgp_trace[-1]) if svgp_trace else float(bound.elbo(svgp_params))
        )
        if self.verbose:
            self._log(
                f"Gaussian approximation: ELBO {svgp_elbo:.4g} after {n_iter} "
                f"{'Adam' if use_adam else 'L-BFGS'} iterations "
                f"({time.perf_counter() - t_start:.2f} s)"
            )

        # 2. HMC over (theta, v) with Z fixed
        target = SparseWhitenedTarget(
            adapter, X, y_lik, Z, likelihood, prior_set, offset=offset
        )
        hyper = np.append(theta, log_noise) if is_gaussian else np.array(theta)
        guarded = GuardedTarget(target, hyper_bounds[:, 0], hyper_bounds[:, 1])
        t_hmc = time.perf_counter()
        sampler = self._sampler_setup(
            guarded, target, hyper, q_mean, q_L, np.random.default_rng(int(seeds[2]))
        )
        chains, results, n_blocks = self._sample(sampler, int(seeds[3]), t_hmc)
        hmc_time = time.perf_counter() - t_hmc
        names = target.param_names
        samples = chains.reshape(-1, chains.shape[2])
        warn_at_bounds(samples, kernel_bounds, names, "HMC draws", "spread")

        # 3. diagnostics
        rhat, ess = rhat_and_bulk_ess(chains)
        n_div = int(sum(r.n_divergent for r in results))
        self._warn_diagnostics(names, rhat, ess, n_div, chains.shape[1])
        if self.verbose:
            self._log(
                f"HMC: {self.n_chains} chains x {self.n_warmup} warm-up + "
                f"{chains.shape[1] * self.thin} sampling iterations in "
                f"{hmc_time:.2f} s; max R-hat {np.nanmax(rhat):.3f}, min bulk ESS "
                f"{np.nanmin(ess):.0f}, {n_div} divergences"
            )
        fitted_kernel = kernel.clone_with_theta(theta)
        total = time.perf_counter() - t_start
        return {
            "draws_": chains.reshape(-1, chains.shape[2]),
            "param_names_": names,
            "inducing_points_": Z,
            "kernel_": fitted_kernel,
            "rhat_": rhat,
            "ess_": ess,
            "acceptance_rate_": float(np.mean([r.acceptance_rate for r in results])),
            "n_divergences_": n_div,
            "step_size_": np.array([r.step_size for r in results]),
            "inv_mass_": np.stack([sampler.x_inv_mass(r.inv_mass) for r in results]),
            "svgp_params_": svgp_params,
            "svgp_elbo_": svgp_elbo,
            "trace_": {
                "svgp_elbo": np.asarray(svgp_trace),
                "accept_prob": np.stack([r.accept_prob for r in results]),
                "step_sizes": np.stack([r.step_sizes for r in results]),
                "divergent": np.stack([r.divergent for r in results]),
                "n_leapfrog": np.stack([r.n_leapfrog for r in results]),
                "energy": np.stack([r.energy for r in results]),
                "log_density": np.stack([r.log_density for r in results]),
            },
            "fit_time_": {"svgp": t_hmc - t_start, "hmc": hmc_time, "total": total},
            "diagnostics_": {
                "fit_time": total,
                "max_rhat": float(np.nanmax(rhat)) if np.size(rhat) else np.nan,
                "min_ess": float(np.nanmin(ess)) if np.size(ess) else np.nan,
                "n_divergences": int(n_div),
                "acceptance_rate": float(np.mean([r.acceptance_rate for r in results])),
                "step_size": [float(r.step_size) for r in results],
                "jitter": float(target.jitter),
                "svgp_elbo": float(svgp_elbo),
                "svgp_iterations": int(n_iter),
                "sampling_iterations": int(chains.shape[1] * self.thin),
                "sampling_blocks": int(n_blocks),
                "preconditioned": sampler.transform is not None,
            },
            "_adapter": adapter,
            "_likelihood": likelihood,
            "_jitter": target.jitter,
            "_n_hyper": target.n_hyper,
            "_n_latent": target.n_latent,
            "_q": (np.array(theta), log_noise, np.array(q_mean), np.array(q_L)),
        }

    def _svgp_reporter(self, t_start):
        every = max(1, self.svgp_max_iter // 10)
        progress = fit_progress(self, "Gaussian approximation", self.svgp_max_iter)
        if progress.engine is None and self.verbose < 2:
            return None

        def report(n_iter, elbo):
            if progress.engine is not None:
                progress(n_iter, self.svgp_max_iter, {"ELBO": float(elbo)})
            if self.verbose >= 2 and n_iter % every == 0:
                self._log(
                    f"Gaussian approximation: iteration {n_iter}/"
                    f"{self.svgp_max_iter}, ELBO {elbo:.6g} "
                    f"({time.perf_counter() - t_start:.1f} s)"
                )

        report.close = progress.close
        return report

    def _leapfrog_options(self):
        """The engine's step bound: a time of pi by default (see max_leapfrog)."""
        if self.max_leapfrog is None:
            return {"max_leapfrog": _LEAPFROG_CAP, "trajectory_length": np.pi}
        return {"max_leapfrog": self.max_leapfrog}

    def _mean_leapfrog(self):
        if self.max_leapfrog is None:
            return (np.ceil(np.pi / _TYPICAL_STEP) + 1) / 2
        return (self.max_leapfrog + 1) / 2

    def _sampler_setup(self, guarded, target, hyper, q_mean, q_L, rng):
        """Coordinates, starting points and initial inverse mass of HMC.

        The chains sample ``w`` with ``(theta, v) = x0 + T w``, ``T`` from
        the curvature of the target at the Gaussian approximation's point
        ``x0`` (see the module notes), when that costs at most one chain's
        warm-up in gradients; otherwise ``(theta, v)`` directly with the
        variances of ``q(v)`` as the first inverse mass.
        """
        x0 = np.concatenate([hyper, np.asarray(q_mean).reshape(-1)])
        d = x0.size
        warmup_gradients = self.n_warmup * self._mean_leapfrog()
        transform = None
        # The robust-max likelihood is piecewise constant in f: a Hessian
        # taken at one point describes no neighbourhood of it. Measured on
        # noise-free three-class data, curvature-scaled chains misclassified
        # up to 40% of the training points where unscaled ones got all right.
        smooth = not isinstance(target.likelihood, RobustMax)
        if smooth and 2 * d <= warmup_gradients:
            transform = curvature_preconditioner(guarded, x0)
        if transform is not None:
            return Sampler(guarded, x0, transform, rng, self.n_chains)
        C, m = target.n_latent, target.n_inducing
        inits = np.empty((self.n_chains, d))
        for c in range(self.n_chains):
            z = rng.standard_normal((C, m))
            v = q_draw(q_mean, q_L, z)
            inits[c] = np.concatenate([hyper, v.reshape(-1)])
        q_var = q_marginal_variances(q_L).reshape(-1)
        inv_mass = np.concatenate(
            [np.full(hyper.size, HYPER_INV_MASS), np.maximum(q_var, 1e-4)]
        )
        return Sampler(guarded, None, None, rng, self.n_chains, inits, inv_mass)

    def _sample(self, sampler, seed, t_start):
        """Warm-up and sampling blocks until the run-length rule is met.

        Returns the kept draws ``(n_chains, n_kept, n_params)`` in
        ``(theta, v)`` coordinates, one merged :class:`HMCResult` per chain
        and the number of sampling blocks.
        """
        name = type(self).__name__
        options = dict(
            thin=self.thin,
            target_accept=self.target_accept,
            **self._leapfrog_options(),
        )
        n_warmup, first = self.n_warmup, None
        if sampler.transform is not None and n_warmup >= _MIN_REFINED_WARMUP:
            sampler, n_warmup, first = self._refine(sampler, seed, options)
        with self._hmc_progress("HMC chains", n_warmup + self.n_samples) as progress:
            results = run_hmc_chains(
                sampler.target,
                sampler.inits,
                random_state=seed,
                n_jobs=self.n_jobs,
                n_warmup=n_warmup,
                n_samples=self.n_samples,
                inv_mass=sampler.inv_mass,
                step_size=None if first is None else sampler.step_size,
                verbose=engine_verbose(self),
                print_fn=_Printer(name),
                progress=progress.engine,
                **options,
            )
        if first is not None:
            results = [after_warmup(a, b) for a, b in zip(first, results, strict=True)]
        budget = max(self.max_samples, self.n_samples)
        done, n_blocks = self.n_samples, 1
        while True:
            chains = sampler.to_x(np.stack([r.samples for r in results]))
            met, rhat, ess = run_length_met(chains)
            if self.verbose:
                self._log(
                    f"HMC: {done} sampling iterations per chain, max R-hat "
                    f"{rhat:.3f}, min bulk ESS {ess:.0f} "
                    f"({time.perf_counter() - t_start:.1f} s)"
                )
            if met or done >= budget:
                return chains, results, n_blocks
            block = min(self.n_samples, budget - done)
            with self._hmc_progress("HMC chains", block) as progress:
                more = run_hmc_chains(
                    sampler.target,
                    np.stack([r.final_state for r in results]),
                    random_state=[seed, n_blocks],
                    n_jobs=self.n_jobs,
                    n_warmup=0,
                    n_samples=block,
                    step_size=np.array([r.step_size for r in results]),
                    inv_mass=np.stack([r.inv_mass for r in results]),
                    adapt_step_size=False,
                    adapt_mass=False,
                    verbose=max(0, engine_verbose(self) - 1),
                    print_fn=_Printer(name),
                    progress=progress.engine,
                    **options,
                )
            results = [merge(a, b) for a, b in zip(results, more, strict=True)]
            done += block
            n_blocks += 1

    def _hmc_progress(self, stage, length):
        """The progress of one block of HMC chains, each ``length`` long."""
        return fit_progress(
            self,
            stage,
            length,
            n_runs=self.n_chains,
            in_process=effective_n_jobs(self.n_jobs) == 1,
        )

    def _refine(self, sampler, seed, options):
        """First half of warm-up: draws that re-estimate the coordinates.

        A quarter of ``n_warmup`` adapts the step and the diagonal mass in
        the curvature-scaled coordinates; the next quarter draws with them
        held. The draws of all chains re-estimate the coordinates
        (:func:`~skgp_bayes.inference.affine.refine_from_draws`): on iris
        the point curvature left one direction of the posterior 14 times
        wider (in variance) than the unit it was scaled to, mostly a
        length scale, whose skewed posterior no curvature at one point
        describes; in the refined coordinates the widest was 3.6. The
        remaining half of ``n_warmup`` adapts step and mass again in the
        new coordinates.

        Returns the new sampler (with each chain's step size so far), the
        remaining warm-up length, and the first half's results per chain
        (their iterations count as warm-up in the chains' trace).
        """
        quarter = self.n_warmup // 4
        with self._hmc_progress("HMC warm-up", 2 * quarter) as progress:
            first = run_hmc_chains(
                sampler.target,
                sampler.inits,
                random_state=[seed, 0],
                n_jobs=self.n_jobs,
                n_warmup=quarter,
                n_samples=quarter,
                inv_mass=sampler.inv_mass,
                verbose=0,
                progress=progress.engine,
                **{**options, "thin": 1},
            )
        chains = np.stack([r.samples for r in first])
        states = np.stack([r.final_state for r in first])
        refined = sampler.refined(chains, states)
        # The new coordinates are closer to a standard normal than the old:
        # each chain's adapted step is a safe start for its adaptation (the
        # step search would begin from 1 again).
        refined.step_size = np.array([r.step_size for r in first])
        if self.verbose:
            self._log(
                f"HMC: coordinates refined from {chains.shape[0]} x "
                f"{chains.shape[1]} warm-up draws"
            )
        return refined, self.n_warmup - 2 * quarter, first

    def _warn_diagnostics(self, names, rhat, ess, n_div, n_kept):
        if n_div:
            warn_user(
                f"{n_div} divergent HMC transitions after warm-up: the steps "
                "were too large for the posterior's curvature somewhere, so the "
                "samples may miss that region. Lengthen n_warmup (the step size "
                "adapts for longer) or raise target_accept towards 0.99 (smaller "
                "steps, slower sampling).",
                SamplerWarning,
            )
        bad_rhat = np.any(np.isfinite(rhat)) and np.nanmax(rhat) > RHAT_MAX
        bad_ess = np.any(np.isfinite(ess)) and np.nanmin(ess) < BULK_ESS_MIN
        if bad_rhat or bad_ess:
            j = int(np.nanargmax(rhat))
            k = int(np.nanargmin(ess))
            warn_user(
                f"The chains did not meet the run-length rule in "
                f"{n_kept * self.thin} sampling iterations per chain (max_samples="
                f"{self.max_samples}): split R-hat {rhat[j]:.3f} for {names[j]} "
                f"(goal <= {RHAT_MAX}), bulk effective sample size {ess[k]:.0f} "
                f"for {names[k]} (goal >= {BULK_ESS_MIN}), the worst parameters. "
                "Raise max_samples, or n_warmup if R-hat is far above the goal.",
                SamplerWarning,
            )

    # ---------------------------------------------------------- prediction
    def _draw_moments(self, X):
        """Per-draw latent moments: means (S, k, C) and variances (S, k)."""
        Z, C = self.inducing_points_, self._n_latent
        S = self.draws_.shape[0]
        with self._blas_limit(min(X.shape[0], _PREDICT_ROWS), Z.shape[0]):
            return sparse_draw_moments(
                self._adapter,
                Z,
                self._jitter,
                self.draws_[:, : self._adapter.n_params],
                self.draws_[:, self._n_hyper :].reshape(S, -1, C),
                X,
            )

    def _gaussian_moments(self, X):
        """Moments of the Gaussian approximation ``q(f)``: (k, C) each."""
        theta, _, q_mean, q_L = self._q
        return q_moments_per_latent(
            self._adapter, theta, self.inducing_points_, self._jitter, q_mean, q_L, X
        )

    def _noise_draws(self):
        return np.exp(self.draws_[:, self._adapter.n_params])

    def _posterior_draws(self, posterior):
        """Kernel thetas (S, p), whitened ``v`` (S, m, C), ``q(v)`` factors.

        ``"mcmc"``: the kept HMC draws, factors None. ``"gaussian"``: the
        SVGP's ``q(v) = N(m, S)`` as one draw, with the lower factors of
        ``S`` per latent, shape (C, m, m).
        """
        if posterior == "gaussian":
            theta, _, q_mean, q_L = self._q
            return np.asarray(theta)[None, :], np.asarray(q_mean)[None], q_L
        if posterior != "mcmc":
            raise ValueError(
                f"posterior must be 'mcmc' or 'gaussian'; got {posterior!r}."
            )
        S, C = self.draws_.shape[0], self._n_latent
        thetas = self.draws_[:, : self._adapter.n_params]
        return thetas, self.draws_[:, self._n_hyper :].reshape(S, -1, C), None

    def _functions(self, n_samples, random_state, n_features, posterior, **kw):
        check_is_fitted(self)
        check_n_samples(n_samples)
        thetas, v, factors = self._posterior_draws(posterior)
        rng = check_random_state(random_state)
        return sparse_function_samples(
            self._adapter,
            self.inducing_points_,
            self._jitter,
            thetas,
            v,
            factors,
            n_samples,
            rng,
            n_features,
            **kw,
        )

    samples_ = per_chain_samples()

    @property
    def kernels_(self):
        """One kernel per kept draw, at that draw's hyperparameters.

        ``kernel_`` is the kernel at the Gaussian approximation's point
        estimate; ``kernels_[s]`` goes with ``draws_[s]``.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCClassifier
        >>> X = np.linspace(-2, 2, 20)[:, None]
        >>> clf = VariationalMCMCClassifier(n_inducing=4, n_chains=1, n_warmup=20,
        ...                                 n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     clf = clf.fit(X, X[:, 0] > 0)
        >>> len(clf.kernels_) == clf.draws_.shape[0]
        True
        """
        thetas = self.draws_[:, : self._adapter.n_params]
        return [self.kernel_.clone_with_theta(theta) for theta in thetas]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
