"""The collapsed fit of the variational MCMC regressor (Gaussian likelihood)."""

import time

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._defaults import merged_priors
from .._fit_checks import warn_at_bounds
from .._sparse import fit_svgp_lbfgs, initial_inducing
from .._warnings import warn_user
from ..inference.affine import curvature_preconditioner
from ..likelihoods import Gaussian
from ..priors import PriorSet
from ..targets.collapsed import CollapsedSparseTarget
from ..targets.svgp import SVGPBound
from ._base import LOG_NOISE_BOUNDS, SVGP_TOL
from ._sampling import CollapsedSampler, GuardedTarget, rhat_and_bulk_ess

# The Gaussian likelihood's default inducing set doubles while the collapsed
# bound's trace term, tr(K_ff - Q_ff) / (2 s2), exceeds _TRACE_TOL nats per
# point, up to _MAX_COLLAPSED_INDUCING inputs (see n_inducing in
# VariationalMCMCRegressor for the reasoning).
_TRACE_TOL = 0.05
_MAX_COLLAPSED_INDUCING = 64


class CollapsedFitMixin:
    """The Gaussian likelihood's fit, with ``v`` integrated out (see
    :mod:`skgp_bayes.targets.collapsed`); mixed into the regressor.
    """

    def _fit_collapsed(self, X, y, scaling):
        """The Gaussian likelihood's pipeline: ``v`` integrated out.

        1. Titsias' collapsed bound plus the log prior is maximised by
           L-BFGS-B over ``[theta, log s2]`` and the inducing inputs: the
           SVGP bound at its optimal ``q(v)``, so the same optimum as the
           joint SVGP fit in far fewer parameters (no ``q(v)`` to learn).
        2. HMC samples ``[theta, log s2]`` on the collapsed target, in the
           curvature-scaled coordinates at that optimum; every kept draw is
           completed by an exact draw of ``v | theta`` (see
           :mod:`skgp_bayes.targets.collapsed`).
        3. The run-length rule is checked over ``(theta, v)``.
        """
        t_start, seeds, kernel, adapter, kernel_bounds = self._fit_start(X)
        slices = dict(adapter.hyperparameter_slices)
        slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
        hyper_bounds = np.vstack([kernel_bounds, [LOG_NOISE_BOUNDS]])
        prior_set = PriorSet(slices, merged_priors(self.priors, slices, X.shape[1]))
        theta0 = np.clip(kernel.theta, kernel_bounds[:, 0], kernel_bounds[:, 1])
        optimum = self._collapsed_optimum(
            adapter,
            X,
            y,
            int(seeds[0]),
            scaling,
            prior_set,
            theta0,
            hyper_bounds,
            t_start,
        )
        hyper, Z, learn_Z, trace, n_iter = optimum
        target = CollapsedSparseTarget(adapter, X, y, Z, prior_set)
        guarded = GuardedTarget(target, hyper_bounds[:, 0], hyper_bounds[:, 1])
        t_hmc = time.perf_counter()
        transform = curvature_preconditioner(guarded, hyper)
        sampler = CollapsedSampler(
            guarded,
            hyper,
            transform,
            np.random.default_rng(int(seeds[2])),
            self.n_chains,
            target,
            int(seeds[1]),
        )
        chains, results, n_blocks = self._sample(sampler, int(seeds[3]), t_hmc)
        hmc_time = time.perf_counter() - t_hmc
        # the joint target's layout: [theta, noise_variance, v[0], ...]
        names = [*target.param_names, *(f"v[{j}]" for j in range(Z.shape[0]))]
        samples = chains.reshape(-1, chains.shape[2])
        warn_at_bounds(samples, kernel_bounds, names, "HMC draws", "spread")
        rhat, ess = rhat_and_bulk_ess(chains)
        n_div = int(sum(r.n_divergent for r in results))
        self._warn_diagnostics(names, rhat, ess, n_div, chains.shape[1])
        if self.verbose:
            self._log(
                f"HMC (v integrated out): {self.n_chains} chains x {self.n_warmup} "
                f"warm-up + {chains.shape[1] * self.thin} sampling iterations in "
                f"{hmc_time:.2f} s; max R-hat {np.nanmax(rhat):.3f}, min bulk ESS "
                f"{np.nanmin(ess):.0f}, {n_div} divergences"
            )
        q_mean, q_factor = target.conditional(hyper)
        svgp_elbo = float(trace[-1]) if trace else float(target.log_prob(hyper))
        acceptance = float(np.mean([r.acceptance_rate for r in results]))
        total = time.perf_counter() - t_start
        return {
            "draws_": samples,
            "param_names_": names,
            "inducing_points_": Z,
            "kernel_": kernel.clone_with_theta(hyper[:-1]),
            "rhat_": rhat,
            "ess_": ess,
            "acceptance_rate_": acceptance,
            "n_divergences_": n_div,
            "step_size_": np.array([r.step_size for r in results]),
            "inv_mass_": np.stack([sampler.x_inv_mass(r.inv_mass) for r in results]),
            "svgp_params_": self._svgp_layout(
                adapter, X, y, Z, prior_set, hyper, q_mean, q_factor, learn_Z
            ),
            "svgp_elbo_": svgp_elbo,
            "trace_": {
                "svgp_elbo": np.asarray(trace),
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
                "max_rhat": float(np.nanmax(rhat)),
                "min_ess": float(np.nanmin(ess)),
                "n_divergences": n_div,
                "acceptance_rate": acceptance,
                "step_size": [float(r.step_size) for r in results],
                "jitter": float(target.jitter),
                "svgp_elbo": svgp_elbo,
                "svgp_iterations": int(n_iter),
                "sampling_iterations": int(chains.shape[1] * self.thin),
                "sampling_blocks": int(n_blocks),
                "preconditioned": transform is not None,
                "collapsed": True,
            },
            "_adapter": adapter,
            "_likelihood": Gaussian(float(np.exp(hyper[-1]))),
            "_jitter": target.jitter,
            "_n_hyper": target.n_hyper,
            "_n_latent": 1,
            "_q": (
                np.array(hyper[:-1]),
                float(hyper[-1]),
                q_mean[:, None],
                q_factor[None],
            ),
        }

    def _collapsed_optimum(
        self, adapter, X, y, seed, scaling, prior_set, theta0, hyper_bounds, t_start
    ):
        """Stage 1: the collapsed bound's maximum, and the default inducing set.

        With ``n_inducing`` and ``inducing_points`` both None the inducing
        set starts at :func:`default_n_inducing` points and doubles (new
        k-means centres, the hyperparameters warm-started) while the
        bound's trace term ``tr(K_ff - Q_ff) / (2 s2)`` at the optimum
        exceeds ``_TRACE_TOL`` nats per point, up to
        ``_MAX_COLLAPSED_INDUCING`` (see ``n_inducing`` in
        :class:`VariationalMCMCRegressor`). Returns ``[theta, log s2]``,
        the inducing inputs, whether they were optimised, the optimiser's
        trace (all sizes in turn) and its iterations.
        """
        Z0 = self._inducing(X, seed, scaling)
        hyper = np.append(theta0, np.log(0.1))
        grow = self.n_inducing is None and self.inducing_points is None
        cap = min(_MAX_COLLAPSED_INDUCING, np.unique(X, axis=0).shape[0])
        traces, n_iter = [], 0
        while True:
            hyper, Z, learn_Z, trace, iters, slack = self._maximise_collapsed(
                adapter, X, y, Z0, prior_set, hyper, hyper_bounds, t_start
            )
            traces.extend(trace)
            n_iter += iters
            m = Z.shape[0]
            if not grow or slack <= _TRACE_TOL * X.shape[0] or m >= cap:
                return hyper, Z, learn_Z, traces, n_iter
            Z0 = initial_inducing(X, min(2 * m, cap), seed)

    def _maximise_collapsed(
        self, adapter, X, y, Z0, prior_set, start_hyper, hyper_bounds, t_start
    ):
        """L-BFGS-B on the collapsed bound plus the log prior, from ``Z0``.

        The stopping rule and its warning are those of the SVGP stage that
        the Gaussian likelihood no longer needs. Returns ``[theta, log s2]``,
        ``Z``, whether ``Z`` was optimised, the trace, the iterations and
        the trace term (nats) at the optimum.
        """
        learn_Z = bool(self.optimize_inducing and adapter.supports_input_gradients)
        bound = CollapsedSparseTarget(
            adapter, X, y, Z0, prior_set, learn_inducing=learn_Z
        )
        start = np.concatenate([start_hyper, Z0.reshape(-1) if learn_Z else []])
        opt_bounds = np.tile([-np.inf, np.inf], (bound.n_params, 1))
        opt_bounds[: bound.n_hyper] = hyper_bounds
        if self.svgp_max_iter == 0:
            params, trace, converged, n_iter = start, [], True, 0
        else:
            report = self._svgp_reporter(t_start)
            params, trace, converged, n_iter = fit_svgp_lbfgs(
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
            warn_user(
                f"The collapsed bound's maximisation did not converge in "
                f"{self.svgp_max_iter} L-BFGS iterations; increase svgp_max_iter.",
                ConvergenceWarning,
            )
        theta, log_noise, Z = bound.split(params)
        slack = bound.trace_term(params)
        if self.verbose:
            self._log(
                f"Collapsed bound with {Z.shape[0]} inducing inputs: "
                f"{trace[-1] if trace else np.nan:.4g} after {n_iter} L-BFGS "
                f"iterations, trace term {slack / X.shape[0]:.3g} nats per point "
                f"({time.perf_counter() - t_start:.2f} s)"
            )
        hyper = np.append(theta, log_noise)
        return hyper, np.array(Z), learn_Z, trace, n_iter, slack

    @staticmethod
    def _svgp_layout(adapter, X, y, Z, prior_set, hyper, q_mean, q_factor, learn_Z):
        """The optimum as an SVGP bound's parameter vector (``svgp_params_``)."""
        bound = SVGPBound(
            adapter, X, y, Z, Gaussian(0.1), prior_set, learn_inducing=learn_Z
        )
        params = bound.initial_params(hyper[:-1], hyper[-1])
        blocks = bound.blocks
        params[blocks["m"]] = q_mean
        rows, cols = np.tril_indices(Z.shape[0])
        packed = q_factor[rows, cols]
        on_diag = rows == cols
        packed[on_diag] = np.log(packed[on_diag])
        params[blocks["L"]] = packed
        if learn_Z:
            params[blocks["Z"]] = Z.reshape(-1)
        return params
