"""The fitting machinery of :class:`~skgp_bayes.SteinGPRegressor`: the
target, the initial particles, and the exact and sparse SVGD fits."""

import time

import joblib
import numpy as np
from sklearn.utils import check_random_state

from ._base import mean_kernel, seconds_since
from ._fit_checks import warn_at_bounds
from ._sparse import resolve_inducing
from ._stein_base import (
    batch_evaluator,
    check_dense_memory,
    check_particle_shape,
    check_same_model,
    check_sparse_memory,
    check_sparse_options,
    run_stein_svgd,
    sparse_svgd_stage,
    warn_not_converged,
)
from ._threads import blas_threads_for
from ._validation import (
    check_input_magnitude,
    column_scales,
    target_scale,
    variance_in_units,
)
from ._warnings import warn_user
from .diagnostics import kernel_stein_discrepancy
from .exceptions import NumericalWarning, SolverConvergenceWarning
from .inference.laplace import (
    find_map,
    gaussian_draws,
    gaussian_factor,
    laplace_covariance,
    laplace_modes,
)
from .inference.particles import ParticleEvaluator
from .likelihoods import Gaussian
from .predictive.exact import CGGPDraws, ExactGPDraws
from .predictive.sparse import SparseGPDraws
from .targets import ExactMarginalTarget
from .targets.cg_particles import (
    CG_TOL,
    MAP_SUBSET,
    PRECONDITIONER_RANK,
    CGParticleGradients,
)
from .targets.sparse import SparseWhitenedTarget


def _warn_cg_budget(evaluator, n_samples):
    """SolverConvergenceWarning when solver="cg" left solves unfinished."""
    warn_user(
        "Conjugate gradients ran out of their budget of max(2 n, 100) = "
        f"{max(2 * n_samples, 100)} iterations in {evaluator.budget_exhausted} "
        "particle gradients (relative residual left up to "
        f"{evaluator.budget_residual:.3g}, tolerance {CG_TOL:.0e}); those "
        "gradients are biased. No parameter sets this budget: "
        "solver='cholesky' avoids conjugate gradients where the kernel matrix "
        "fits in memory.",
        SolverConvergenceWarning,
    )


def _allocate(weights, total):
    """Split ``total`` items by ``weights`` with the largest-remainder rule."""
    exact = weights * total
    counts = np.floor(exact).astype(int)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return counts


class SteinRegressorFitMixin:
    """Fit-side methods of :class:`~skgp_bayes.SteinGPRegressor`."""

    def _build_target(self, X, y):
        """Kernel adapter, bounds, starting point and target of this fit."""
        kernel, adapter, names, bounds, start, prior_set, fixed_log_noise = (
            self._hyperparameters()
        )
        target = ExactMarginalTarget(adapter, X, y, prior_set, fixed_log_noise)
        return kernel, adapter, target, names, bounds, start, prior_set

    def _initial_particles(self, target, start, bounds, prior_set, rng):
        """Particles, the MAP point and the preconditioner's factor.

        The factor is the Cholesky factor of the (capped) Laplace covariance
        at the most probable mode; ``None`` with ``init="prior"``.
        """
        if start.shape[0] == 0:
            return np.empty((self.n_particles, 0)), None, None
        if self.init == "prior":
            particles = prior_set.sample(rng, self.n_particles)
            return np.clip(particles, bounds[:, 0], bounds[:, 1]), None, None
        if self.n_restarts > 0:
            return self._multimodal_particles(target, start, bounds, prior_set, rng)
        result = find_map(target, start, bounds)
        map_params = result.params
        if self.verbose:
            self._log(
                f"MAP after {result.n_iter} L-BFGS iterations: "
                f"{target.describe(map_params)}"
            )
        factor = gaussian_factor(laplace_covariance(target, map_params, bounds))
        if self.n_particles == 1:
            return map_params[None, :], map_params, factor
        particles = gaussian_draws(map_params, factor, self.n_particles, rng)
        return np.clip(particles, bounds[:, 0], bounds[:, 1]), map_params, factor

    def _multimodal_particles(self, target, start, bounds, prior_set, rng):
        """Particles spread over every mode that L-BFGS finds from restarts.

        SVGD moves particles within a basin but rarely across a valley, so
        the share of particles per mode is set here, in proportion to each
        mode's Laplace estimate of its posterior mass. The preconditioner is
        the Laplace covariance of the mode with the most mass.
        """
        restarts = prior_set.sample(rng, self.n_restarts)
        starts = np.vstack([start, np.clip(restarts, bounds[:, 0], bounds[:, 1])])
        modes = laplace_modes(target, starts, bounds)
        if not modes:  # every optimum failed: let the caller report the error
            return np.clip(starts[: self.n_particles], *bounds.T), None, None
        best = max(modes, key=lambda entry: target.logp_and_grad(entry[0])[0])[0]
        factor = gaussian_factor(modes[0][1])
        log_mass = np.array([entry[2] for entry in modes])
        weights = np.exp(log_mass - log_mass.max())
        weights /= weights.sum()
        if self.verbose:
            for (mode, _, _), weight in zip(modes, weights, strict=True):
                self._log(
                    f"mode with Laplace mass {weight:.3f}: {target.describe(mode)}"
                )
        if self.n_particles == 1:
            return best[None, :], best, factor
        counts = _allocate(weights, self.n_particles)
        blocks = []
        for (mode, cov, _), count in zip(modes, counts, strict=True):
            blocks.append(gaussian_draws(mode, gaussian_factor(cov), count, rng))
        particles = np.vstack(blocks)
        return np.clip(particles, bounds[:, 0], bounds[:, 1]), best, factor

    def _fit_model(self, X, y, continuing, partial, scaling):
        if not check_same_model(self, continuing):
            check_sparse_options(self, X.shape[0])  # batch_size needs sparse
            with blas_threads_for(X.shape[0]):
                return self._fit(X, y, continuing)
        return self._fit_sparse(X, y, continuing, partial, scaling)

    def _fit(self, X, y, continuing):
        t_start = time.perf_counter()
        check_input_magnitude(X)
        use_cg = self.solver == "cg"
        if not use_cg:
            check_dense_memory(X.shape[0], type(self).__name__)
        y_mean, y_std = column_scales(y, self.normalize_y)
        y_model = (y - y_mean) / y_std
        kernel, adapter, target, names, bounds, start, prior_set = self._build_target(
            X, y_model
        )
        rng = check_random_state(self.random_state)
        state = None
        map_params = None
        factor = None
        if continuing:
            check_particle_shape(self, len(names), "warm_start")
            particles = self.particles_
            state = self._svgd_state
            map_params = self.map_params_
            factor = getattr(self, "_preconditioner", None)
        else:
            init_target = target
            if use_cg and X.shape[0] > MAP_SUBSET:
                # The MAP search factorises: on a random subset it costs
                # O(MAP_SUBSET^3), and SVGD corrects the rest.
                subset = np.sort(rng.choice(X.shape[0], MAP_SUBSET, replace=False))
                init_target = ExactMarginalTarget(
                    adapter,
                    X[subset],
                    y_model[subset],
                    prior_set,
                    target.log_noise_variance,
                )
            particles, map_params, factor = self._initial_particles(
                init_target, start, bounds, prior_set, rng
            )
        if use_cg:  # noisy gradients: Adam with a decaying rate
            factor = None
        history = {k: list(v) for k, v in self.history_.items()} if continuing else {}
        if len(names) == 0:
            if use_cg:  # the value would need a factorisation
                values = np.full(particles.shape[0], np.nan)
            else:
                values = np.array([target.logp_and_grad(p)[0] for p in particles])
            result_state, n_iter, converged, grads = state, 0, True, particles
        else:
            if use_cg:
                evaluator = CGParticleGradients(
                    adapter,
                    X,
                    y_model,
                    prior_set,
                    target.log_noise_variance,
                    rng.randint(0, 2**31 - 1, size=particles.shape[0]),
                )
                if continuing and getattr(self, "_cg_state", None) is not None:
                    evaluator.set_state(self._cg_state)
            else:
                evaluator = batch_evaluator(target)
            evaluator.check_initial(particles)
            result = run_stein_svgd(
                self, evaluator, particles, bounds, state, use_cg, factor
            )
            particles, values, grads = (
                result.particles,
                result.log_density,
                result.grads,
            )
            result_state, n_iter, converged = (
                result.state,
                result.n_iter,
                result.converged,
            )
            for key, trace in result.history.items():
                history.setdefault(key, []).extend(trace)
            # One sample leaves the broad prior, whose particles rarely meet
            # the move rule; the one-sample warning already says what the
            # fit is (RELIABILITY row 7).
            one_sample = X.shape[0] == 1
            if not converged and self.max_iter > 0 and not use_cg and not one_sample:
                warn_not_converged(self, result)
            if use_cg and evaluator.budget_exhausted:
                _warn_cg_budget(evaluator, X.shape[0])
        warn_at_bounds(particles, bounds, names, "particles")
        if target.max_jitter > 0:
            warn_user(
                f"Kernel matrices were not positive definite for some particles; "
                f"added jitter up to {target.max_jitter:.3g} to their diagonal.",
                NumericalWarning,
                worst=target.max_jitter,
            )
        kernel_thetas = particles[:, : adapter.n_params]
        if target.log_noise_variance is None:
            noise_model = np.exp(particles[:, -1])
        else:
            noise_model = np.full(particles.shape[0], np.exp(target.log_noise_variance))
        cg_state, diagnostics = None, {}
        if use_cg:
            draws = CGGPDraws(
                adapter,
                X,
                y_model,
                kernel_thetas,
                noise_model,
                CG_TOL,
                "auto",
                PRECONDITIONER_RANK,
            )
            if len(names):
                cg_state = evaluator.get_state()
                iterations = evaluator.cg_iterations
                diagnostics = {
                    "cg_iterations_mean": float(np.mean(iterations)),
                    "cg_max_residual": evaluator.max_residual,
                }
        else:
            draws = ExactGPDraws(adapter, X, y_model, kernel_thetas, noise_model)
        ksd = kernel_stein_discrepancy(particles, grads) if len(names) else 0.0
        return {
            "particles_": particles,
            "param_names_": names,
            "kernels_": [kernel.clone_with_theta(t) for t in kernel_thetas],
            "kernel_": mean_kernel(kernel, kernel_thetas),
            # y units; beyond ~1e154 the variance itself is not representable
            "noise_variance_": variance_in_units(
                noise_model if y.ndim == 1 else noise_model[:, None], y_std
            ),
            "log_posterior_": values,
            "n_iter_": (self.n_iter_ if continuing else 0) + n_iter,
            "converged_": bool(converged),
            "history_": history,
            "ksd_": float(ksd),
            "map_params_": map_params,
            "diagnostics_": {
                "max_jitter": target.max_jitter,
                "converged": converged,
                "fit_time": seconds_since(t_start),
                **diagnostics,
            },
            "n_samples_seen_": X.shape[0],
            "X_train_": X,
            "y_train_": y_model,
            "_y_mean": y_mean,
            "_y_std": y_std,
            "_draws": draws,
            "_target": target,
            "_svgd_state": result_state,
            "_preconditioner": factor,
            "_cg_state": cg_state,
            "_bounds": bounds,
        }

    def _fit_sparse(self, X, y, continuing, partial, scaling):
        t_start = time.perf_counter()
        name = type(self).__name__
        if X.shape[0] < 2 and not continuing:
            raise ValueError(
                f"{name} needs at least 2 samples to infer hyperparameters; got "
                f"{X.shape[0]} sample."
            )
        check_input_magnitude(X)
        batch_size = check_sparse_options(self, X.shape[0])
        if continuing:
            y_mean, y_std = self._y_mean, self._y_std
        else:
            y_mean, y_std = target_scale(y, self.normalize_y)
        y_model = (y - y_mean) / y_std
        kernel, adapter, _, hyper_bounds, start, prior_set, fixed_log_noise = (
            self._hyperparameters()
        )
        rng = check_random_state(self.random_state)
        seeds = rng.randint(0, 2**31 - 1, size=3)
        if continuing:
            Z = self.inducing_points_
        else:
            Z = resolve_inducing(self.inducing_points, X, int(seeds[0]), scaling)
        check_sparse_memory(batch_size or X.shape[0], Z.shape[0], name)
        n_seen = X.shape[0] + (self.n_samples_seen_ if partial and continuing else 0)
        learn_noise = fixed_log_noise is None
        noise0 = float(np.exp(start[-1] if learn_noise else fixed_log_noise))
        target = SparseWhitenedTarget(
            adapter,
            X,
            y_model,
            Z,
            Gaussian(noise_variance=noise0),
            prior_set,
            learn_noise=learn_noise,
            n_total=n_seen,
        )
        names = target.param_names
        h, p = target.n_hyper, adapter.n_params
        free = np.tile([-np.inf, np.inf], (target.n_params - h, 1))
        bounds = np.vstack([hyper_bounds, free])
        evaluator = ParticleEvaluator(
            target,
            batch_size=batch_size,
            rng=np.random.default_rng(int(seeds[1])),
            n_jobs=self.n_jobs,
        )
        fingerprint = joblib.hash((X, y_model))

        def replay(evaluator, particles):
            # Unchanged data: the first SVGD step reuses the last gradient,
            # so that fit(a) + fit(b) equals fit(a + b).
            if not partial and fingerprint == self._data_fingerprint:
                evaluator.replay_first(particles, self.log_posterior_, self._last_grads)

        with blas_threads_for(batch_size or X.shape[0], Z.shape[0]):
            result, centre, elbo, history, _ = sparse_svgd_stage(
                self,
                target,
                evaluator,
                continuing=continuing,
                bounds=bounds,
                hyper_start=start,
                prior_set=prior_set,
                rng=np.random.default_rng(int(seeds[2])),
                replay=replay,
            )
        particles = result.particles
        kernel_thetas = particles[:, :p]
        if learn_noise:
            noise_model = np.exp(particles[:, p])
        else:
            noise_model = np.full(particles.shape[0], noise0)
        draws = SparseGPDraws(
            adapter, Z, target.jitter, kernel_thetas, particles[:, h:], noise_model
        )
        return {
            "particles_": particles,
            "param_names_": names,
            "kernels_": [kernel.clone_with_theta(t) for t in kernel_thetas],
            "kernel_": mean_kernel(kernel, kernel_thetas),
            "noise_variance_": variance_in_units(noise_model, y_std),
            "log_posterior_": result.log_density,
            "n_iter_": (self.n_iter_ if continuing else 0) + result.n_iter,
            "converged_": bool(result.converged),
            "history_": history,
            "ksd_": float(kernel_stein_discrepancy(particles, result.grads)),
            "map_params_": centre,
            "diagnostics_": {
                "max_jitter": 0.0,
                "jitter": target.jitter,
                "converged": result.converged,
                "fit_time": seconds_since(t_start),
                "svgp_elbo": elbo,
                "batch_size": batch_size,
            },
            "inducing_points_": Z,
            "n_samples_seen_": n_seen,
            "_y_mean": y_mean,
            "_y_std": y_std,
            "_draws": draws,
            "_svgd_state": result.state,
            "_batch_state": evaluator.get_state(),
            "_last_grads": result.grads,
            "_data_fingerprint": fingerprint,
            "_bounds": bounds,
        }
