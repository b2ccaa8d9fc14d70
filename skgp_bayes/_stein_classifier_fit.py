"""The fitting machinery of :class:`~skgp_bayes.SteinGPClassifier`: the
target, the Laplace start of the particles, and the exact and sparse SVGD fits."""

import time

import numpy as np
from scipy.linalg import block_diag
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from ._base import mean_kernel, seconds_since
from ._defaults import (
    fit_input_scaling,
    merged_priors,
)
from ._fit_checks import warn_at_bounds, warn_degenerate_fit
from ._progress import engine_verbose, fit_progress
from ._sparse import resolve_inducing
from ._stein_base import (
    batch_evaluator,
    check_dense_memory,
    check_same_model,
    check_sparse_memory,
    check_sparse_options,
    sparse_svgd_stage,
    svgd_decay,
    svgd_learning_rate,
    svgd_tol,
    warn_not_converged,
)
from ._threads import blas_threads_for
from ._validation import (
    atomic_feature_state,
    check_bounds,
    check_finite_theta,
    check_input_magnitude,
)
from .diagnostics import kernel_stein_discrepancy
from .inference import run_svgd
from .inference.laplace import (
    MAX_LAPLACE_STD,
    find_map,
    gaussian_draws,
    gaussian_factor,
)
from .inference.svgd import choose_kernel
from .kernels import KernelAdapter
from .likelihoods import Bernoulli, Softmax
from .predictive.latent import LatentDraws, SparseLatentDraws
from .priors import PriorSet
from .targets.laplace import (
    BinaryLaplaceProblem,
    LaplaceSurrogate,
    binary_laplace_draw,
    binary_precision_factor,
    covariance_root,
    softmax_chord_draw,
    softmax_laplace_draw,
    surrogate_cov,
)
from .targets.sparse import SparseWhitenedTarget
from .targets.whitened import WhitenedLatentTarget

# Largest number of whitened unknowns (n * n_classes) for which the softmax
# Laplace step forms its dense Hessian; beyond it one-vs-rest draws are used.
_DENSE_NEWTON_MAX = 2000

# Fitted attributes that only one of the exact and sparse models has.
_MODEL_SPECIFIC = (
    "inducing_points_",
    "X_train_",
    "_y_train",
    "_target",
    "_batch_state",
    "_preconditioner",
)


class SteinClassifierFitMixin:
    """Fit-side methods of :class:`~skgp_bayes.SteinGPClassifier`."""

    def _update(self, X, y, continuing, partial, classes=None):
        """Validate, fit (``partial``: one more chunk) and install the result."""
        with atomic_feature_state(self):
            X, y = validate_data(
                self,
                X,
                y,
                dtype=np.float64,
                order="C",
                reset=not continuing,
            )
            check_classification_targets(y)
            if partial:
                classes = self._stream_classes(classes, continuing)
            X_model, scaling = fit_input_scaling(self, X, continuing)
            fitted = self._fit_model(X_model, y, continuing, partial, classes, scaling)
            fitted["input_scaling_"] = scaling
        # Set together at the end, so an interrupted fit leaves the old state.
        self._set_fitted(fitted, _MODEL_SPECIFIC)
        warn_degenerate_fit(self, X, y)
        return self

    def _kernel_prior(self, n_features):
        """Kernel, its adapter, bounds (log scale) and the prior of one block."""
        kernel = self._new_kernel(n_features)
        adapter = KernelAdapter(kernel)
        check_finite_theta(kernel.theta, adapter.param_names)
        block_bounds = np.asarray(kernel.bounds, dtype=np.float64).reshape(-1, 2)
        check_bounds(block_bounds, adapter.param_names)
        slices = dict(adapter.hyperparameter_slices)
        prior_set = PriorSet(slices, merged_priors(self.priors, slices, n_features))
        return kernel, adapter, block_bounds, prior_set

    def _likelihood(self, n_classes):
        """Likelihood and number of latent functions for ``n_classes``."""
        if n_classes == 2:
            return Bernoulli(link=self.link), 1
        return Softmax(n_classes=n_classes, random_state=0), n_classes

    def _build_target(self, X, y_enc, n_classes):
        kernel, adapter, block_bounds, prior_set = self._kernel_prior(X.shape[1])
        likelihood, n_latent = self._likelihood(n_classes)
        target = WhitenedLatentTarget(
            adapter,
            X,
            y_enc.astype(np.float64) if n_latent == 1 else y_enc,
            likelihood,
            prior_set,
            n_latent,
            self.shared_kernel,
        )
        n = X.shape[0]
        names = []
        for b in range(target.n_blocks):
            prefix = "" if target.n_blocks == 1 else f"latent{b}__"
            names.extend(prefix + name for name in adapter.param_names)
        if n_latent == 1:
            names.extend(f"nu[{i}]" for i in range(n))
        else:
            names.extend(f"nu[{c},{i}]" for c in range(n_latent) for i in range(n))
        theta_bounds = np.tile(block_bounds, (target.n_blocks, 1))
        nu_bounds = np.tile([-np.inf, np.inf], (n * n_latent, 1))
        bounds = np.vstack([theta_bounds, nu_bounds])
        start = np.tile(
            np.clip(kernel.theta, block_bounds[:, 0], block_bounds[:, 1]),
            target.n_blocks,
        )
        return kernel, target, names, bounds, start

    def _surrogate(self, target, y_enc):
        """Laplace marginal of the binary problem, or one-vs-rest problems."""
        if target.n_latent == 1:
            problems = [BinaryLaplaceProblem(target, y_enc, target.likelihood)]
        else:
            logistic = Bernoulli(link="logit")
            problems = [
                BinaryLaplaceProblem(target, (y_enc == c).astype(float), logistic)
                for c in range(target.n_latent)
            ]
        return LaplaceSurrogate(
            problems, target.n_blocks, target.prior_set, target.n_kernel_params
        )

    def _initial_particles(self, target, y_enc, start, bounds, rng):
        J = self.n_particles
        n, C = target.n, target.n_latent
        theta_bounds = bounds[: target.n_theta]
        if self.init == "prior":
            thetas = (
                np.hstack(
                    [target.prior_set.sample(rng, J) for _ in range(target.n_blocks)]
                )
                if target.n_theta
                else np.empty((J, 0))
            )
            thetas = np.clip(thetas, theta_bounds[:, 0], theta_bounds[:, 1])
            nus = rng.standard_normal((J, n * C))
            return np.hstack([thetas, nus]), None, None

        surrogate = self._surrogate(target, y_enc)
        theta_root = np.empty((0, 0))
        if target.n_theta:
            result = find_map(surrogate, start, theta_bounds)
            map_theta = result.params
            if self.verbose:
                self._log(
                    f"Laplace MAP after {result.n_iter} L-BFGS iterations: "
                    + "; ".join(
                        target.describe(t)
                        for t in map_theta.reshape(target.n_blocks, -1)
                    )
                )
            cov = surrogate_cov(surrogate, map_theta, theta_bounds, MAX_LAPLACE_STD)
            theta_root = gaussian_factor(cov)
            if J > 1:
                thetas = gaussian_draws(map_theta, theta_root, J, rng)
                thetas = np.clip(thetas, theta_bounds[:, 0], theta_bounds[:, 1])
                # One particle stays at the MAP: the surrogate's best guess.
                thetas[0] = map_theta
            else:
                thetas = map_theta[None, :]
        else:
            map_theta = np.empty(0)
            thetas = np.empty((J, 0))
        # Warm starts for Newton at every particle: the modes at the MAP.
        warm = [problem.a for problem in surrogate.problems]
        dense = C > 1 and n * C <= _DENSE_NEWTON_MAX
        particles = np.empty((J, target.n_params))
        precision_factors = []
        mode = R = None  # the softmax mode and precision factor at the MAP
        for j in range(J):
            blocks = thetas[j].reshape(target.n_blocks, target.n_kernel_params)
            if dense and j > 0:
                nu = softmax_chord_draw(target, blocks, mode, R, rng)
            elif dense:
                # Start the softmax Newton from the one-vs-rest modes.
                nu_start = np.stack(
                    [
                        target.factor(blocks[target.block_of_latent(c)]).T
                        @ (warm[c] if warm[c] is not None else np.zeros(n))
                        for c in range(C)
                    ]
                )
                nu, mode, R = softmax_laplace_draw(target, blocks, nu_start, rng)
                precision_factors.append(R)
            else:
                nu = np.empty((C, n))
                for c, problem in enumerate(surrogate.problems):
                    nu[c], _, (L, W) = binary_laplace_draw(
                        problem, blocks[target.block_of_latent(c)], rng, warm[c]
                    )
                    if j == 0:
                        precision_factors.append(binary_precision_factor(L, W))
            particles[j] = target.join(blocks, nu)
        # The first particle sits at the MAP: the Laplace curvature there, in
        # theta and in the whitened latents, preconditions SVGD.
        root = block_diag(theta_root, covariance_root(precision_factors))
        return particles, map_theta, root

    def _stream_classes(self, classes, continuing):
        """The classes of a ``partial_fit`` stream, checked against earlier calls."""
        if classes is None:
            if not continuing:
                raise ValueError(
                    "classes must be passed on the first call to partial_fit: "
                    "a chunk need not hold every class of the stream."
                )
            return self.classes_
        classes = np.unique(np.asarray(classes))
        if continuing and not np.array_equal(classes, self.classes_):
            raise ValueError(
                f"classes={classes.tolist()} is not the same as on earlier calls "
                f"to partial_fit, {self.classes_.tolist()}."
            )
        if classes.size < 2:
            raise ValueError(
                f"{type(self).__name__} requires 2 classes; got {classes.size} "
                "in classes."
            )
        return classes

    def _fit_model(self, X, y, continuing, partial, classes, scaling):
        if not check_same_model(self, continuing):
            check_sparse_options(self, X.shape[0])  # rejects a batch_size
            with blas_threads_for(X.shape[0]):
                return self._fit(X, y, continuing)
        return self._fit_sparse(X, y, continuing, partial, classes, scaling)

    def _fit(self, X, y, continuing):
        t_start = time.perf_counter()
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                f"{type(self).__name__} requires 2 classes; got {classes.size} "
                f"class (label {classes[0]!r})."
            )
        check_input_magnitude(X)
        # Kernel matrices are n x n per block; the dense softmax Newton system
        # is capped at _DENSE_NEWTON_MAX unknowns.
        check_dense_memory(X.shape[0], type(self).__name__)
        if continuing and not np.array_equal(classes, self.classes_):
            raise ValueError(
                "warm_start needs the classes of the previous fit "
                f"{self.classes_.tolist()}; got {classes.tolist()}."
            )
        if continuing and not (
            np.array_equal(X, self.X_train_) and np.array_equal(y_enc, self._y_train)
        ):
            # The particles' whitened latents belong to the old inputs and
            # labels: continuing on other data would silently mix models.
            raise ValueError(
                "warm_start continues the previous fit and needs its training "
                "set; got different X or y. Set warm_start=False to refit."
            )
        kernel, target, names, bounds, start = self._build_target(
            X, y_enc, classes.size
        )
        rng = check_random_state(self.random_state)
        state = None
        map_params = None
        if continuing:
            if self.particles_.shape != (self.n_particles, len(names)):
                raise ValueError(
                    "warm_start needs the same training set size, number of "
                    f"particles and parameters: have {self.particles_.shape}, "
                    f"asked for ({self.n_particles}, {len(names)})."
                )
            particles = self.particles_
            state = self._svgd_state
            map_params = self.map_params_
            root = getattr(self, "_preconditioner", None)
        else:
            particles, map_params, root = self._initial_particles(
                target, y_enc, start, bounds, rng
            )
        t_init = seconds_since(t_start)
        history = {k: list(v) for k, v in self.history_.items()} if continuing else {}
        evaluator = batch_evaluator(target)
        evaluator.check_initial(particles)
        with fit_progress(self, "SVGD", self.max_iter) as progress:
            result = run_svgd(
                evaluator,
                particles,
                max_iter=self.max_iter,
                learning_rate=svgd_learning_rate(self, root is not None),
                tol=svgd_tol(self),
                bounds=bounds,
                state=state,
                verbose=engine_verbose(self),
                print_fn=self._log,
                decay=svgd_decay(self.learning_rate_decay, False),
                preconditioner=root,
                kernel=choose_kernel(root, particles.shape),
                step_control="global" if root is None else "per_coordinate",
                progress=progress.engine,
            )
        particles, values, grads = result.particles, result.log_density, result.grads
        for key, trace in result.history.items():
            history.setdefault(key, []).extend(trace)
        if not result.converged and self.max_iter > 0:
            warn_not_converged(self, result)
        warn_at_bounds(
            particles[:, : target.n_theta],
            bounds[: target.n_theta],
            names[: target.n_theta],
            "particles",
        )
        draws = LatentDraws(target, particles)
        kernels = []
        for p in particles:
            thetas, _ = target.split(p)
            fitted = [kernel.clone_with_theta(t) for t in thetas]
            kernels.append(fitted[0] if target.n_blocks == 1 else fitted)
        # (n_particles, n_blocks, n_theta): one summary kernel per block
        block_thetas = np.array([target.split(p)[0] for p in particles])
        summary = [
            mean_kernel(kernel, block_thetas[:, b]) for b in range(target.n_blocks)
        ]
        ksd = kernel_stein_discrepancy(particles, grads)
        return {
            "classes_": classes,
            "particles_": particles,
            "param_names_": names,
            "kernels_": kernels,
            "kernel_": summary[0] if target.n_blocks == 1 else summary,
            "log_posterior_": values,
            "n_iter_": (self.n_iter_ if continuing else 0) + result.n_iter,
            "converged_": bool(result.converged),
            "history_": history,
            "ksd_": float(ksd),
            "map_params_": map_params,
            "diagnostics_": {
                "jitter": target.jitter,
                "converged": result.converged,
                "init_time": t_init,
                "fit_time": seconds_since(t_start),
            },
            "n_samples_seen_": X.shape[0],
            "X_train_": X,
            "_y_train": y_enc,
            "_draws": draws,
            "_target": target,
            "_svgd_state": result.state,
            "_preconditioner": root,
        }

    def _sparse_labels(self, y, classes, continuing):
        """Classes and label codes of a sparse fit (``classes`` from partial_fit)."""
        if classes is None:
            classes, y_enc = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise ValueError(
                    f"{type(self).__name__} requires 2 classes; got "
                    f"{classes.size} class (label {classes[0]!r})."
                )
            if continuing and not np.array_equal(classes, self.classes_):
                raise ValueError(
                    "warm_start needs the classes of the previous fit "
                    f"{self.classes_.tolist()}; got {classes.tolist()}."
                )
            return classes, y_enc
        unseen = ~np.isin(y, classes)
        if np.any(unseen):
            raise ValueError(
                f"y holds labels {np.unique(y[unseen]).tolist()} that are not in "
                f"classes={classes.tolist()}."
            )
        return classes, np.searchsorted(classes, y)

    def _fit_sparse(self, X, y, continuing, partial, classes, scaling):
        t_start = time.perf_counter()
        name = type(self).__name__
        classes, y_enc = self._sparse_labels(y, classes, continuing)
        if classes.size > 2 and not self.shared_kernel:
            raise ValueError(
                "shared_kernel=False is not available with inducing_points: the "
                "sparse model shares one kernel across the latent functions. "
                "Set shared_kernel=True, or inducing_points=None for the exact "
                "model with one kernel per class."
            )
        check_input_magnitude(X)
        batch_size = check_sparse_options(self, X.shape[0])
        kernel, adapter, hyper_bounds, prior_set = self._kernel_prior(X.shape[1])
        likelihood, n_latent = self._likelihood(classes.size)
        start = np.clip(kernel.theta, hyper_bounds[:, 0], hyper_bounds[:, 1])
        rng = check_random_state(self.random_state)
        seeds = rng.randint(0, 2**31 - 1, size=3)
        if continuing:
            Z = self.inducing_points_
        else:
            Z = resolve_inducing(self.inducing_points, X, int(seeds[0]), scaling)
        check_sparse_memory(batch_size or X.shape[0], Z.shape[0], name)
        n_seen = X.shape[0] + (self.n_samples_seen_ if partial and continuing else 0)
        target = SparseWhitenedTarget(
            adapter,
            X,
            y_enc.astype(np.float64) if n_latent == 1 else y_enc,
            Z,
            likelihood,
            prior_set,
            n_total=n_seen,
        )
        names = target.param_names
        h, p = target.n_hyper, adapter.n_params
        bounds = np.vstack(
            [hyper_bounds, np.tile([-np.inf, np.inf], (target.n_params - h, 1))]
        )
        evaluator = batch_evaluator(
            target,
            batch_size=batch_size,
            rng=np.random.default_rng(int(seeds[1])),
            n_jobs=self.n_jobs,
        )

        with blas_threads_for(batch_size or X.shape[0], Z.shape[0]):
            result, centre, elbo, history, init_done = sparse_svgd_stage(
                self,
                target,
                evaluator,
                continuing=continuing,
                bounds=bounds,
                hyper_start=start,
                prior_set=prior_set,
                rng=np.random.default_rng(int(seeds[2])),
            )
        t_init = init_done - t_start
        if centre is not None:
            centre = centre[:h]
        particles = result.particles
        kernel_thetas = particles[:, :p]
        v = particles[:, h:].reshape(particles.shape[0], Z.shape[0], n_latent)
        draws = SparseLatentDraws(
            adapter, Z, target.jitter, kernel_thetas, v, likelihood
        )
        return {
            "classes_": classes,
            "particles_": particles,
            "param_names_": names,
            "kernels_": [kernel.clone_with_theta(t) for t in kernel_thetas],
            "kernel_": mean_kernel(kernel, kernel_thetas),
            "log_posterior_": result.log_density,
            "n_iter_": (self.n_iter_ if continuing else 0) + result.n_iter,
            "history_": history,
            "ksd_": float(kernel_stein_discrepancy(particles, result.grads)),
            "map_params_": centre,
            "diagnostics_": {
                "jitter": target.jitter,
                "converged": result.converged,
                "init_time": 0.0 if continuing else t_init,
                "fit_time": seconds_since(t_start),
                "svgp_elbo": elbo,
                "batch_size": batch_size,
            },
            "inducing_points_": Z,
            "n_samples_seen_": n_seen,
            "_draws": draws,
            "_svgd_state": result.state,
            "_batch_state": evaluator.get_state(),
        }
