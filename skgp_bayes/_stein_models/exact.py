"""The exact models of :class:`~skgp_bayes.SteinGPRegressor`.

All three move particles over the marginal posterior ``p(theta | y)`` of
the kernel hyperparameters and the noise variance, the latent function
integrated out. :class:`ExactCholeskyModel` factorises each particle's
kernel matrix for exact values and gradients; :class:`StochasticTraceModel`
factorises too but estimates the gradient's trace term by Hutchinson probes
(``gradient="stochastic_trace"``); :class:`ExactCGModel` never factorises:
each particle's gradient is an unbiased estimate from conjugate gradients
and Hutchinson probes (seed 002). The last two give noisy gradients, which
SVGD follows in its stochastic mode.
"""

import numpy as np

from .._starts import exact_climb_point, screened_exact_starts, unused_input_starts
from .._stein_base import (
    Start,
    SteinModel,
    batch_evaluator,
    check_dense_memory,
    check_particle_shape,
    search_threads,
)
from .._threads import blas_threads_for
from .._validation import check_input_magnitude, column_scales
from .._warnings import warn_user
from ..exceptions import NumericalWarning, SolverConvergenceWarning
from ..inference._chain_threads import mapped_on_threads
from ..inference.gaussian_surrogate import GaussianMixtureDensity
from ..inference.laplace import (
    find_map,
    gaussian_draws,
    gaussian_factor,
    laplace_covariance,
    laplace_modes,
    same_mode,
)
from ..inference.particles import evaluation_seconds
from ..predictive.exact import CGGPDraws, ExactGPDraws
from ..targets import ExactMarginalTarget, StochasticTraceTarget
from ..targets.cg_particles import (
    CG_TOL,
    MAP_SUBSET,
    PRECONDITIONER_RANK,
    CGParticleGradients,
)
from .common import regressor_attributes

__all__ = ["ExactCGModel", "ExactCholeskyModel", "StochasticTraceModel"]

# Rademacher probes per trace estimate of gradient="stochastic_trace": the
# target's own default, whose step time benchmarks/bench_stein_regressor.py
# measures.
TRACE_PROBES = 4


def allocate(weights, total):
    """Split ``total`` items by ``weights`` with the largest-remainder rule.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._stein_models.exact import allocate
    >>> allocate(np.array([0.5, 0.3, 0.2]), 4).tolist()
    [2, 1, 1]
    """
    exact = weights * total
    counts = np.floor(exact).astype(int)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return counts


def map_particles(estimator, target, start, bounds, prior_set, rng):
    """Particles, the MAP point, the preconditioner's factor and the surrogate.

    The factor is the Cholesky factor of the (capped) Laplace covariance
    at the most probable mode; the surrogate the Laplace approximation the
    particles were drawn from (a mixture over the modes with restarts), as
    a :class:`~skgp_bayes.inference.gaussian_surrogate.GaussianMixtureDensity`.
    All three are ``None`` with ``init="prior"``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._stein_models.exact import map_particles
    >>> est = SteinGPRegressor(n_particles=3)
    >>> particles, centre, factor, surrogate = map_particles(
    ...     est, None, np.empty(0), np.empty((0, 2)), None, None)
    >>> particles.shape, centre, factor, surrogate
    ((3, 0), None, None, None)
    """
    J = estimator.n_particles
    if start.shape[0] == 0:
        return np.empty((J, 0)), None, None, None
    if estimator.init == "prior":
        particles = prior_set.sample(rng, J)
        return np.clip(particles, bounds[:, 0], bounds[:, 1]), None, None, None
    if estimator.n_restarts > 0:
        return multimodal_particles(estimator, target, start, bounds, prior_set, rng)
    result = find_map(target, start, bounds)
    map_params = result.params
    if estimator.verbose:
        estimator._log(
            f"MAP after {result.n_iter} L-BFGS iterations: "
            f"{target.describe(map_params)}"
        )
    factor = gaussian_factor(laplace_covariance(target, map_params, bounds))
    surrogate = GaussianMixtureDensity(map_params[None, :], [factor])
    if J == 1:
        return map_params[None, :], map_params, factor, surrogate
    particles = gaussian_draws(map_params, factor, J, rng)
    return (
        np.clip(particles, bounds[:, 0], bounds[:, 1]),
        map_params,
        factor,
        surrogate,
    )


def multimodal_particles(estimator, target, start, bounds, prior_set, rng):
    """Particles spread over every mode that L-BFGS finds from restarts.

    SVGD moves particles within a basin but rarely across a valley, so
    the share of particles per mode is set here, in proportion to each
    mode's Laplace estimate of its posterior mass. The preconditioner is
    the Laplace covariance of the mode with the most mass.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._stein_models.exact import multimodal_particles
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.priors import PriorSet
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> X = np.linspace(-2, 2, 15)[:, None]
    >>> prior_set = PriorSet({"length_scale": slice(0, 1)}, {})
    >>> target = ExactMarginalTarget(
    ...     KernelAdapter(RBF()), X, np.sin(X[:, 0]), prior_set, np.log(0.1))
    >>> est = SteinGPRegressor(n_particles=4, n_restarts=2)
    >>> particles, best, factor, surrogate = multimodal_particles(
    ...     est, target, np.zeros(1), np.array([[-5.0, 5.0]]), prior_set,
    ...     np.random.RandomState(0))
    >>> particles.shape, factor.shape
    ((4, 1), (1, 1))
    """
    restarts = prior_set.sample(rng, estimator.n_restarts)
    # The screen's best point reaches short-length-scale modes that the
    # start and the prior draws never start in (see skgp_bayes._starts).
    extra = []
    if type(target) is ExactMarginalTarget:
        extra = screened_exact_starts(target, start, bounds)
    starts = np.vstack([start, *extra, np.clip(restarts, bounds[:, 0], bounds[:, 1])])
    rows = getattr(target, "X", None)
    n_rows = 0 if rows is None else rows.shape[0]
    threads = search_threads(
        estimator,
        target,
        n_rows,
        starts.shape[0],
        lambda: evaluation_seconds(target, starts[0]),
    )
    with mapped_on_threads(threads) as map_fn:
        modes = laplace_modes(target, starts, bounds, map_fn=map_fn)
        if modes and type(target) is ExactMarginalTarget:
            modes, best = with_climbed_mode(target, modes, bounds)
            modes, best = with_unused_input_modes(target, modes, best, bounds, map_fn)
        elif modes:
            best = _highest(target, modes)[0]
    if not modes:  # every optimum failed: let the caller report the error
        return np.clip(starts[: estimator.n_particles], *bounds.T), None, None, None
    roots = [gaussian_factor(cov) for _, cov, _ in modes]
    factor = roots[0]
    log_mass = np.array([entry[2] for entry in modes])
    weights = np.exp(log_mass - log_mass.max())
    weights /= weights.sum()
    if estimator.verbose:
        for (mode, _, _), weight in zip(modes, weights, strict=True):
            estimator._log(
                f"mode with Laplace mass {weight:.3f}: {target.describe(mode)}"
            )
    surrogate = GaussianMixtureDensity([m[0] for m in modes], roots, log_mass)
    if estimator.n_particles == 1:
        return best[None, :], best, factor, surrogate
    counts = allocate(weights, estimator.n_particles)
    blocks = [
        gaussian_draws(mode, root, count, rng)
        for (mode, _, _), root, count in zip(modes, roots, counts, strict=True)
    ]
    particles = np.vstack(blocks)
    return np.clip(particles, bounds[:, 0], bounds[:, 1]), best, factor, surrogate


def _highest(target, modes):
    """The highest of ``modes``' centres and its log density."""
    values = [target.logp_and_grad(entry[0])[0] for entry in modes]
    k = int(np.argmax(values))
    return modes[k][0], values[k]


def with_unused_input_modes(target, modes, best, bounds, map_fn=map):
    """``modes`` and those reached from :func:`~skgp_bayes._starts.unused_input_starts`
    at ``best``; with the highest centre among them.

    One search per input that ``best`` leaves at a length scale longer
    than its spread, on threads through ``map_fn``. Measured on the
    default fits of eleven data sets at five splits each (55 fits; the
    searches from inputs at more than 5 sds only): new modes on three,
    with 0.16 and 0.27 of the Laplace mass on two of them, for a median of
    6% of a fit's time and at most 0.26 s. The modes found join ``modes``
    by decreasing Laplace mass unless they are among them.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._stein_models.exact import with_unused_input_modes
    >>> from skgp_bayes.inference.laplace import laplace_modes
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 2))
    >>> target = ExactMarginalTarget(KernelAdapter(RBF([1.0, 1.0])), X,
    ...                              np.sin(2 * X[:, 0]), None, np.log(0.01))
    >>> bounds = np.tile([-5.0, 5.0], (2, 1))
    >>> modes = laplace_modes(target, np.log([[0.5, 50.0]]), bounds)
    >>> found, best = with_unused_input_modes(target, modes, modes[0][0], bounds)
    >>> len(found), np.round(np.exp(best), 1)  # input 1 carries nothing
    (1, array([  1. , 148.4]))
    """
    starts = unused_input_starts(target.param_names, best, target.X, bounds)
    if not starts.shape[0]:
        return modes, best
    found = laplace_modes(target, starts, bounds, map_fn=map_fn)
    # best is the highest of modes (with_climbed_mode): only the new ones
    # need evaluating against it
    return _joined(target, modes, found, best, lambda: target.logp_and_grad(best)[0])


def with_climbed_mode(target, modes, bounds):
    """``modes``, and the mode one input's shorter length scale climbs to;
    with the highest centre among them.

    The searches end in basins their starts lead to; once one has settled
    the amplitude and the noise, shortening a single input's length scale
    at the best mode can reveal a higher basin that no start showed
    (:func:`~skgp_bayes._starts.climb_point`): a sine of one of four
    inputs at a third of a linear trend's size, on 40 points, was taken
    for noise by every particle on five of seven draws of the data, in a
    mode 15-19 nats below the one this finds. The new mode joins
    ``modes`` (by decreasing Laplace mass) unless it is one of them. Returns
    the modes and the highest centre, each mode's log density evaluated
    once.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes._stein_models.exact import with_climbed_mode
    >>> from skgp_bayes.inference.laplace import laplace_modes
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets import ExactMarginalTarget
    >>> X = np.linspace(-1.7, 1.7, 30)[:, None]
    >>> target = ExactMarginalTarget(KernelAdapter(ConstantKernel() * RBF([1.0])),
    ...                              X, np.sin(X[:, 0]), None, np.log(0.1))
    >>> bounds = np.tile([-5.0, 5.0], (2, 1))
    >>> modes = laplace_modes(target, np.zeros((1, 2)), bounds)
    >>> climbed, best = with_climbed_mode(target, modes, bounds)
    >>> len(climbed) == len(modes), best.shape
    (True, (2,))
    """
    best, best_value = _highest(target, modes)
    point = exact_climb_point(target, best, bounds)
    if point is None:
        return modes, best
    found = laplace_modes(target, point[None, :], bounds)
    return _joined(target, modes, found, best, lambda: best_value)


def _joined(target, modes, found, best, best_value):
    """``modes`` with the entries of ``found`` that are none of them, by
    decreasing Laplace mass, and ``best`` or the highest new centre where it
    is higher.

    Both lists are distinct within themselves (:func:`laplace_modes`);
    ``best_value()`` gives ``best``'s log density, asked for only when a
    mode is new.
    """
    known = [entry[0] for entry in modes]
    new = [e for e in found if not any(same_mode(e[0], k) for k in known)]
    if not new:
        return modes, best
    centre, value = _highest(target, new)
    if value > best_value():
        best = centre
    return sorted([*modes, *new], key=lambda entry: -entry[2]), best


class ExactCholeskyModel(SteinModel):
    """The exact regressor: one Cholesky factorisation per particle.

    Exact values and gradients, ``O(n^3)`` time and ``O(n^2)`` memory per
    particle and iteration. With ``init="map"`` the particles start from
    the Laplace approximation of every mode found, and SVGD is
    preconditioned by the covariance of the most probable one. Parameters
    as for :class:`~skgp_bayes._stein_base.SteinModel`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._stein_models import ExactCholeskyModel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (20, 1))
    >>> est = SteinGPRegressor(n_particles=3, max_iter=5, random_state=0)
    >>> est.n_features_in_ = 1
    >>> fitted = ExactCholeskyModel(est, X, np.sin(X[:, 0]),
    ...                             continuing=False).fit()
    >>> sorted(k for k in fitted if k.endswith("_") and "train" in k)
    ['X_train_', 'y_train_']
    """

    def prepare(self):
        """Checks, the target scaling and the marginal posterior."""
        estimator, X = self.estimator, self.X
        check_input_magnitude(X)
        self.check_memory()
        self.y_mean, self.y_std = column_scales(self.y, estimator.normalize_y)
        self.y_model = (self.y - self.y_mean) / self.y_std
        kernel, adapter, names, bounds, start, prior_set, fixed_log_noise = (
            estimator._hyperparameters()
        )
        self.target = ExactMarginalTarget(
            adapter, X, self.y_model, prior_set, fixed_log_noise
        )
        self.kernel, self.adapter, self.prior_set = kernel, adapter, prior_set
        self.names, self.bounds, self.hyper_start = names, bounds, start
        self.n_hyper = len(names)

    def check_memory(self):
        """MemoryError before dense kernel matrices that cannot fit."""
        check_dense_memory(self.X.shape[0], type(self.estimator).__name__)

    def threads(self):
        """BLAS threads for ``n x n`` factorisations."""
        return blas_threads_for(self.X.shape[0])

    def initial(self):
        """Particles from the MAP modes' Laplace approximations, or the prior."""
        particles, centre, factor, surrogate = map_particles(
            self.estimator,
            self.map_target(),
            self.hyper_start,
            self.bounds,
            self.prior_set,
            self.rng,
        )
        return Start(
            particles,
            centre=centre,
            preconditioner=self.precondition(factor),
            surrogate=surrogate,
        )

    def resume(self):
        """The fitted particles, engine state and preconditioner."""
        estimator = self.estimator
        check_particle_shape(estimator, len(self.names), "warm_start")
        return Start(
            estimator.particles_,
            state=estimator._svgd_state,
            centre=estimator.map_params_,
            preconditioner=self.precondition(
                getattr(estimator, "_preconditioner", None)
            ),
        )

    def map_target(self):
        """The target the MAP search climbs."""
        return self.target

    def precondition(self, factor):
        """SVGD's preconditioner from the Laplace factor."""
        return factor

    def make_evaluator(self, start):
        """Every particle's exact value and gradient."""
        return batch_evaluator(self.target, self.estimator, self.X.shape[0])

    def log_density(self, particles):
        """Log posterior of particles with every parameter fixed."""
        return np.array([self.target.logp_and_grad(p)[0] for p in particles])

    def warns_unconverged(self, result):
        """As for every model, but quiet on one sample.

        One sample leaves the broad prior, whose particles rarely meet the
        move rule; the one-sample warning already says what the fit is
        (RELIABILITY row 7).
        """
        return super().warns_unconverged(result) and self.X.shape[0] != 1

    def noise_variances(self, particles):
        """Each particle's noise variance on the model's scale."""
        log_noise = self.target.log_noise_variance
        if log_noise is None:
            return np.exp(particles[:, -1])
        return np.full(particles.shape[0], np.exp(log_noise))

    def draws(self, kernel_thetas, noise):
        """The predictive: per-particle exact GP posteriors."""
        return ExactGPDraws(self.adapter, self.X, self.y_model, kernel_thetas, noise)

    def max_jitter(self):
        """Largest jitter a factorisation of this fit needed."""
        return self.target.max_jitter

    def finish(self, result, start):
        """Warn of added jitter; kernels, noise, training data and draws."""
        target, max_jitter = self.target, self.max_jitter()
        if max_jitter > 0:
            warn_user(
                "Kernel matrices were not positive definite for some particles; "
                f"added jitter up to {max_jitter:.3g} to their diagonal.",
                NumericalWarning,
                worst=max_jitter,
            )
        particles = result.particles
        kernel_thetas = particles[:, : self.adapter.n_params]
        noise = self.noise_variances(particles)
        return {
            **regressor_attributes(
                self.kernel, kernel_thetas, noise, self.y, self.y_std
            ),
            "n_samples_seen_": self.X.shape[0],
            "X_train_": self.X,
            "y_train_": self.y_model,
            "_y_mean": self.y_mean,
            "_y_std": self.y_std,
            "_draws": self.draws(kernel_thetas, noise),
            "_target": target,
            "_preconditioner": start.preconditioner,
            "_cg_state": None,
            "_bounds": self.bounds,
        }

    def diagnostics(self, result, start, init_time, fit_time):
        """``max_jitter``, ``converged``, ``fit_time``."""
        return {
            "max_jitter": self.max_jitter(),
            "converged": result.converged,
            "fit_time": fit_time,
        }


class ExactCGModel(ExactCholeskyModel):
    """The exact regressor by conjugate gradients (``solver="cg"``).

    Each particle's gradient is an unbiased estimate from CG solves,
    warm-started from the previous iteration's, and Hutchinson probes of
    the trace term (seed 002); memory is ``O(n)``. SVGD follows these noisy
    gradients with Adam and a decaying rate, unpreconditioned, and the log
    density is never computed (NaN). The MAP search factorises, on a random
    subset of ``MAP_SUBSET`` points where there are more. Parameters as
    for :class:`~skgp_bayes._stein_base.SteinModel`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._stein_models import ExactCGModel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (20, 1))
    >>> est = SteinGPRegressor(n_particles=3, max_iter=5, random_state=0)
    >>> est.n_features_in_ = 1
    >>> fitted = ExactCGModel(est, X, np.sin(X[:, 0]), continuing=False).fit()
    >>> bool(np.all(np.isnan(fitted["log_posterior_"])))
    True
    """

    stochastic = True
    evaluator = None

    def check_memory(self):
        """Nothing to check: ``K @ V`` is formed in tiles."""

    def map_target(self):
        """The full target, or one on a random subset of ``MAP_SUBSET`` points.

        The MAP search factorises: on a subset it costs ``O(MAP_SUBSET^3)``,
        and SVGD corrects the rest.
        """
        X = self.X
        if X.shape[0] <= MAP_SUBSET:
            return self.target
        subset = np.sort(self.rng.choice(X.shape[0], MAP_SUBSET, replace=False))
        return ExactMarginalTarget(
            self.adapter,
            X[subset],
            self.y_model[subset],
            self.prior_set,
            self.target.log_noise_variance,
        )

    def precondition(self, factor):
        """None: noisy gradients take Adam with a decaying rate."""
        return None

    def make_evaluator(self, start):
        """Per-particle CG gradient streams, continued where they stopped."""
        estimator = self.estimator
        self.evaluator = CGParticleGradients(
            self.adapter,
            self.X,
            self.y_model,
            self.prior_set,
            self.target.log_noise_variance,
            self.rng.randint(0, 2**31 - 1, size=start.particles.shape[0]),
        )
        if self.continuing and getattr(estimator, "_cg_state", None) is not None:
            self.evaluator.set_state(estimator._cg_state)
        return self.evaluator

    def log_density(self, particles):
        """NaN: the value would need a factorisation."""
        return np.full(particles.shape[0], np.nan)

    def after_run(self, evaluator):
        """SolverConvergenceWarning when solves ran out of their budget."""
        if not evaluator.budget_exhausted:
            return
        n_samples = self.X.shape[0]
        warn_user(
            "Conjugate gradients ran out of their budget of max(2 n, 100) = "
            f"{max(2 * n_samples, 100)} iterations in "
            f"{evaluator.budget_exhausted} particle gradients (relative "
            f"residual left up to {evaluator.budget_residual:.3g}, tolerance "
            f"{CG_TOL:.0e}); those gradients are biased. No parameter sets "
            "this budget: solver='cholesky' avoids conjugate gradients where "
            "the kernel matrix fits in memory.",
            SolverConvergenceWarning,
        )

    def draws(self, kernel_thetas, noise):
        """The predictive: per-particle GP posteriors solved by CG."""
        return CGGPDraws(
            self.adapter,
            self.X,
            self.y_model,
            kernel_thetas,
            noise,
            CG_TOL,
            "auto",
            PRECONDITIONER_RANK,
        )

    def finish(self, result, start):
        """As the Cholesky model, plus the CG streams' state."""
        fitted = super().finish(result, start)
        if self.evaluator is not None:
            fitted["_cg_state"] = self.evaluator.get_state()
        return fitted

    def diagnostics(self, result, start, init_time, fit_time):
        """As the Cholesky model, plus CG iterations and residual."""
        diagnostics = super().diagnostics(result, start, init_time, fit_time)
        if self.evaluator is not None:
            diagnostics["cg_iterations_mean"] = float(
                np.mean(self.evaluator.cg_iterations)
            )
            diagnostics["cg_max_residual"] = self.evaluator.max_residual
        return diagnostics


class StochasticTraceModel(ExactCholeskyModel):
    """The exact regressor with a stochastic-trace gradient.

    ``gradient="stochastic_trace"``: one Cholesky factorisation per particle
    and iteration gives the log posterior and the gradient's data term
    ``1/2 a' dK_j a`` exactly; the trace term ``tr(K^-1 dK_j)`` is
    estimated by ``TRACE_PROBES`` Rademacher probes solved with the same
    factor (:class:`~skgp_bayes.targets.StochasticTraceTarget`), which
    drops the explicit inverse of an exact gradient. The gradient is
    unbiased, so SVGD runs in its stochastic mode (a decaying step, no
    stopping rule, ``max_iter`` iterations) but otherwise as in the
    Cholesky model: the same start, the same Laplace preconditioner and
    the same SVGD kernel, hence the same fixed point. Unpreconditioned,
    with Adam and the joint RBF kernel, it had another: on one length
    scale the particles' sd came out 0.158 against 0.182 for the exact
    fit and 0.184 by quadrature, and their mean 0.09 sds off, whatever the
    step or the run length; on a 5-parameter ARD model the noise
    variance's sd was 0.026 against 0.125. Parameters as for
    :class:`~skgp_bayes._stein_base.SteinModel`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes import SteinGPRegressor
    >>> from skgp_bayes._stein_models import StochasticTraceModel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (20, 1))
    >>> est = SteinGPRegressor(n_particles=3, max_iter=5, random_state=0)
    >>> est.n_features_in_ = 1
    >>> fitted = StochasticTraceModel(est, X, np.sin(X[:, 0]),
    ...                               continuing=False).fit()
    >>> fitted["n_iter_"], fitted["converged_"]  # runs max_iter, noisy field
    (5, False)
    """

    stochastic = True
    trace_target = None

    def svgd_options(self, start):
        """The exact model's kernel, with one decaying step for all coordinates.

        Rprop's per-coordinate rates follow the sign of the field, which
        noise flips at random near the fixed point.
        """
        return {**super().svgd_options(start), "step_control": "global"}

    def make_evaluator(self, start):
        """Exact values and stochastic-trace gradients of every particle.

        The probes' stream is seeded by ``random_state`` and the number of
        iterations already run, so that a continued fit draws new probes.
        """
        done = self.estimator.n_iter_ if self.continuing else 0
        seed = self.rng.randint(0, 2**31 - 1)
        self.trace_target = StochasticTraceTarget(
            self.adapter,
            self.X,
            self.y_model,
            self.prior_set,
            self.target.log_noise_variance,
            rng=np.random.default_rng([seed, done]),
            n_probes=TRACE_PROBES,
        )
        return batch_evaluator(self.trace_target, self.estimator, self.X.shape[0])

    def max_jitter(self):
        """Largest jitter of the MAP search's and SVGD's factorisations."""
        if self.trace_target is None:
            return self.target.max_jitter
        return max(self.target.max_jitter, self.trace_target.max_jitter)
