"""Stein variational Gaussian-process estimators (Pinder et al.)."""

import time
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _config
from ._exact_gp import ExactGPRegressorMixin
from ._predictive import (
    ExactGPDraws,
    mixture_log_density,
)
from ._threads import blas_threads_for
from ._validation import (
    VersionedStateMixin,
    atomic_feature_state,
    check_input_magnitude,
    target_scale,
)
from .diagnostics import kernel_stein_discrepancy
from .exceptions import NotPSDError, NumericalWarning
from .inference import run_svgd
from .targets import ExactMarginalTarget

__all__ = ["SteinGPRegressor"]

# Cap on the Laplace standard deviation used to spread initial particles, in
# log units: beyond it the quadratic approximation is meaningless.
_MAX_INIT_STD = 1.0
_LAPLACE_STEP = 1e-4
# Two L-BFGS optima closer than this in every log coordinate are one mode.
_SAME_MODE = 0.3


class _BatchEvaluator:
    """Evaluate ``target.logp_and_grad`` at every particle.

    A particle whose kernel matrix is not positive definite gets a log
    density of -inf, which makes the engine reject the step; the error is
    kept so that a set where every particle fails can be reported with the
    hyperparameters that caused it.
    """

    def __init__(self, target):
        self.target = target
        self.last_error = None

    def __call__(self, particles):
        values = np.empty(particles.shape[0])
        grads = np.empty_like(particles)
        for j, params in enumerate(particles):
            try:
                values[j], grads[j] = self.target.logp_and_grad(params)
            except NotPSDError as err:
                values[j], grads[j] = -np.inf, np.nan
                self.last_error = err
        return values, grads

    def check_initial(self, particles):
        """Raise the kernel's error if no starting particle can be evaluated."""
        values, _ = self(particles)
        if particles.shape[0] and not np.any(np.isfinite(values)):
            if self.last_error is not None:
                raise self.last_error
            raise FloatingPointError(
                "The log posterior is not finite at any initial particle."
            )


def _batch_evaluator(target):
    """A :class:`_BatchEvaluator` over ``target``."""
    return _BatchEvaluator(target)


def _warn_at_bounds(particles, bounds, names):
    """ConvergenceWarning naming parameters that most particles pin to a bound."""
    if particles.shape[0] == 0:
        return
    for j, name in enumerate(names):
        for side, label in ((0, "lower"), (1, "upper")):
            pinned = np.abs(particles[:, j] - bounds[j, side]) < 1e-6
            if np.mean(pinned) >= 0.5:
                warnings.warn(
                    f"The parameter {name} is at its {label} bound "
                    f"{np.exp(bounds[j, side]):.3g} for {int(pinned.sum())} of "
                    f"{particles.shape[0]} particles. Increasing the bound and "
                    "fitting again might find a better posterior.",
                    ConvergenceWarning,
                    stacklevel=5,
                )


def _check_dense_memory(n_samples, estimator_name):
    """MemoryError before allocating kernel matrices that cannot fit."""
    needed = 4 * 8 * n_samples**2  # K, its factor, the inverse and one copy
    if needed > _config.MAX_DENSE_BYTES:
        raise MemoryError(
            f"{estimator_name} with {n_samples} samples needs about "
            f"{needed / 1024**3:.1f} GiB for dense kernel matrices, above the "
            f"limit of {_config.MAX_DENSE_BYTES / 1024**3:.1f} GiB "
            "(skgp_bayes._config.MAX_DENSE_BYTES). Subsample the data or use a "
            "sparse (inducing-point) model."
        )


def _find_map(target, start, bounds):
    """Maximum a posteriori point by L-BFGS-B from ``start``."""

    def objective(params):
        try:
            value, grad = target.logp_and_grad(params)
        except NotPSDError:
            return np.inf, np.zeros_like(params)
        return -value, -grad

    result = minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds)
    return np.clip(result.x, bounds[:, 0], bounds[:, 1]), result


def _laplace_cov(target, centre, bounds, return_log_volume=False):
    """Inverse negative Hessian at ``centre`` by central differences of the
    exact gradient; a diagonal fallback where it is not positive definite.

    The returned covariance has its standard deviations capped at
    ``_MAX_INIT_STD``; ``return_log_volume`` also gives half the
    log-determinant of the uncapped one, the Laplace estimate of the log
    volume of the mode."""
    n = centre.shape[0]
    hess = np.empty((n, n))
    for i in range(n):
        step = np.zeros(n)
        step[i] = _LAPLACE_STEP
        up = np.clip(centre + step, bounds[:, 0], bounds[:, 1])
        down = np.clip(centre - step, bounds[:, 0], bounds[:, 1])
        width = up[i] - down[i]
        if width <= 0:
            hess[i] = 0.0
            continue
        hess[i] = (target.logp_and_grad(up)[1] - target.logp_and_grad(down)[1]) / width
    precision = -0.5 * (hess + hess.T)
    try:
        cov = np.linalg.inv(precision)
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        cov = np.diag(1.0 / np.maximum(np.abs(np.diag(precision)), 1.0))
    std = np.sqrt(np.diag(cov))
    shrink = np.minimum(1.0, _MAX_INIT_STD / np.maximum(std, 1e-300))
    capped = cov * np.outer(shrink, shrink)
    if return_log_volume:
        return capped, 0.5 * float(np.linalg.slogdet(cov)[1])
    return capped


def _laplace_modes(target, starts, bounds):
    """Distinct local maxima of ``target`` found by L-BFGS-B from ``starts``.

    Returns a list of ``(mode, capped_cov, log_mass)`` sorted by decreasing
    ``log_mass``, the Laplace estimate ``log p(mode) + log volume``. Optima
    closer than ``_SAME_MODE`` log units in every coordinate are one mode.
    """
    modes = []
    for start in starts:
        mode, _ = _find_map(target, start, bounds)
        if any(np.max(np.abs(mode - m)) < _SAME_MODE for m, _, _ in modes):
            continue
        try:
            value = target.logp_and_grad(mode)[0]
        except NotPSDError:
            continue
        cov, log_volume = _laplace_cov(target, mode, bounds, return_log_volume=True)
        modes.append((mode, cov, value + log_volume))
    modes.sort(key=lambda entry: -entry[2])
    return modes


def _allocate(weights, total):
    """Split ``total`` items by ``weights`` with the largest-remainder rule."""
    exact = weights * total
    counts = np.floor(exact).astype(int)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return counts


class SteinGPRegressor(
    ExactGPRegressorMixin, VersionedStateMixin, RegressorMixin, BaseEstimator
):
    """Gaussian-process regression with a particle posterior over hyperparameters.

    Stein variational gradient descent (Pinder et al.) moves a set of
    particles, each a value of the kernel hyperparameters and the noise
    variance, towards the exact posterior ``p(theta | y)`` of a GP with
    Gaussian noise (the latent function is integrated out). Predictions are
    the mixture of the per-particle GP posteriors, so hyperparameter
    uncertainty, including several modes, reaches ``predict(return_std=True)``,
    ``sample_y`` and ``log_predictive_density``.

    Parameters
    ----------
    kernel : sklearn kernel, default=ConstantKernel(1.0) * RBF(1.0)
        Prior covariance. Its hyperparameter values are the starting point of
        the MAP search (``init="map"``); its bounds (log scale) box the
        particles. Hyperparameters with ``"fixed"`` bounds are not inferred. A
        ``WhiteKernel`` inside it is inferred like any other term, in addition
        to ``noise_variance``.
    priors : dict, default=None
        Hyperparameter name (``"k2__length_scale"``, ``"noise_variance"``, or
        one entry ``"k2__length_scale[0]"``) to a prior on the natural scale:
        a :class:`skgp_bayes.priors.Prior` or a frozen ``scipy.stats``
        distribution. Unnamed parameters get ``Gamma(shape=1, scale=2)``.
    noise_variance : float, default=0.1
        Initial observation-noise variance, on the scale of the (normalised)
        target.
    noise_variance_bounds : pair of float or "fixed", default=(1e-6, 1e3)
        Box for the noise variance, on the scale of the (normalised) target;
        ``"fixed"`` keeps it at ``noise_variance``. The lower bound keeps
        duplicate inputs from making the kernel matrix singular.
    n_particles : int, default=20
        Number of SVGD particles.
    max_iter : int, default=300
        SVGD iterations per call to ``fit``.
    learning_rate : float, default=0.05
        Adam learning rate for the particle updates (log units per step).
    tol : float, default=1e-4
        Stop when no particle coordinate moved more than ``tol`` for three
        consecutive iterations.
    init : {"map", "prior"}, default="map"
        ``"map"``: find the maximum a posteriori point by L-BFGS-B and spread
        the particles by its Laplace approximation (with standard deviations
        capped at one log unit). ``"prior"``: draw particles from the prior.
    n_restarts : int, default=4
        With ``init="map"``, further L-BFGS-B searches started from prior
        draws. Every distinct local maximum found becomes a component of the
        initial particle set, with a share of the particles proportional to
        its Laplace estimate of posterior mass, so that a posterior with
        several modes starts with particles in each (SVGD rarely moves
        particles across the valley between modes). ``0`` starts every
        particle around the single maximum reached from the kernel's
        hyperparameters.
    normalize_y : bool, default=True
        Standardise the target before fitting; priors and noise bounds then
        refer to the standardised scale.
    random_state : int, RandomState instance or None, default=None
        Seeds the particle initialisation. The same seed gives bit-identical
        particles.
    verbose : int, default=0
        Print progress lines during the fit when positive.
    warm_start : bool, default=False
        Continue from the current particles and optimiser state, running
        ``max_iter`` further iterations, instead of starting anew.

    Attributes
    ----------
    particles_ : ndarray of shape (n_particles, n_params)
        Final particles in log (unconstrained) coordinates; columns follow
        ``param_names_``.
    param_names_ : list of str
        Names of the particle coordinates (``kernel.theta`` entries, then
        ``"noise_variance"`` unless it is fixed).
    kernels_ : list of Kernel
        One fitted kernel per particle.
    noise_variance_ : ndarray of shape (n_particles,)
        Noise variance of each particle, in the units of ``y``.
    log_posterior_ : ndarray of shape (n_particles,)
        Log posterior (up to a constant) at each particle.
    n_iter_ : int
        SVGD iterations run (cumulative over warm starts).
    history_ : dict of lists
        Per-iteration trace: mean ``log_density``, ``learning_rate``,
        ``max_move``, ``bandwidth`` and elapsed ``time``.
    ksd_ : float
        Kernel Stein discrepancy of the final particle set.
    map_params_ : ndarray of shape (n_params,) or None
        MAP point used for the initialisation (``init="map"``).
    diagnostics_ : dict
        ``max_jitter`` added to kernel diagonals, ``converged``,
        ``fit_time``.
    X_train_ : ndarray of shape (n_samples, n_features)
        Training inputs.
    y_train_ : ndarray of shape (n_samples,)
        Training targets on the model's (normalised) scale.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features,)
        Names of features seen during ``fit`` (string column names only).

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessRegressor : point estimate of the
        hyperparameters.

    References
    ----------
    T. Pinder, C. Nemeth and D. Leslie, "Stein Variational Gaussian
    Processes", 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import ConstantKernel, RBF
    >>> from skgp_bayes import SteinGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (40, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(40)
    >>> reg = SteinGPRegressor(n_particles=5, max_iter=50, random_state=0)
    >>> reg = reg.fit(X, y)
    >>> mean, std = reg.predict(X[:3], return_std=True)
    >>> reg.particles_.shape
    (5, 3)
    >>> reg.sample_y(X[:3], n_samples=4).shape
    (3, 4)
    """

    _parameter_constraints = {
        "kernel": [None, Kernel],
        "priors": [None, dict],
        "noise_variance": [Interval(Real, 0, None, closed="neither")],
        "noise_variance_bounds": [StrOptions({"fixed"}), tuple, list, np.ndarray],
        "n_particles": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"map", "prior"})],
        "n_restarts": [Interval(Integral, 0, None, closed="left")],
        "normalize_y": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
    }

    def __init__(
        self,
        kernel=None,
        *,
        priors=None,
        noise_variance=0.1,
        noise_variance_bounds=(1e-6, 1e3),
        n_particles=20,
        max_iter=300,
        learning_rate=0.05,
        tol=1e-4,
        init="map",
        n_restarts=4,
        normalize_y=True,
        random_state=None,
        verbose=0,
        warm_start=False,
    ):
        self.kernel = kernel
        self.priors = priors
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.n_particles = n_particles
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.tol = tol
        self.init = init
        self.n_restarts = n_restarts
        self.normalize_y = normalize_y
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    # ------------------------------------------------------------------ fit
    def _continuing(self):
        return self.warm_start and hasattr(self, "particles_")

    def _build_target(self, X, y):
        """Kernel adapter, bounds, starting point and target of this fit."""
        kernel, adapter, names, bounds, start, prior_set, fixed_log_noise = (
            self._hyperparameters()
        )
        target = ExactMarginalTarget(adapter, X, y, prior_set, fixed_log_noise)
        return kernel, adapter, target, names, bounds, start, prior_set

    def _initial_particles(self, target, start, bounds, prior_set, rng):
        if start.shape[0] == 0:
            return np.empty((self.n_particles, 0)), None
        if self.init == "prior":
            particles = prior_set.sample(rng, self.n_particles)
            return np.clip(particles, bounds[:, 0], bounds[:, 1]), None
        if self.n_restarts > 0:
            return self._multimodal_particles(target, start, bounds, prior_set, rng)
        map_params, result = _find_map(target, start, bounds)
        if self.verbose:
            print(
                f"[SteinGPRegressor] MAP after {result.nit} L-BFGS iterations: "
                f"{target.describe(map_params)}"
            )
        if self.n_particles == 1:
            return map_params[None, :], map_params
        cov = _laplace_cov(target, map_params, bounds)
        noise = rng.standard_normal((self.n_particles, map_params.shape[0]))
        particles = map_params + noise @ np.linalg.cholesky(cov).T
        return np.clip(particles, bounds[:, 0], bounds[:, 1]), map_params

    def _multimodal_particles(self, target, start, bounds, prior_set, rng):
        """Particles spread over every mode that L-BFGS finds from restarts.

        SVGD moves particles within a basin but rarely across a valley, so
        the share of particles per mode is set here, in proportion to each
        mode's Laplace estimate of its posterior mass.
        """
        restarts = prior_set.sample(rng, self.n_restarts)
        starts = np.vstack([start, np.clip(restarts, bounds[:, 0], bounds[:, 1])])
        modes = _laplace_modes(target, starts, bounds)
        if not modes:  # every optimum failed: let the caller report the error
            return np.clip(starts[: self.n_particles], *bounds.T), None
        best = max(modes, key=lambda entry: target.logp_and_grad(entry[0])[0])[0]
        log_mass = np.array([entry[2] for entry in modes])
        weights = np.exp(log_mass - log_mass.max())
        weights /= weights.sum()
        if self.verbose:
            for (mode, _, _), weight in zip(modes, weights, strict=True):
                print(
                    f"[SteinGPRegressor] mode with Laplace mass {weight:.3f}: "
                    f"{target.describe(mode)}"
                )
        if self.n_particles == 1:
            return best[None, :], best
        counts = _allocate(weights, self.n_particles)
        blocks = []
        for (mode, cov, _), count in zip(modes, counts, strict=True):
            noise = rng.standard_normal((count, mode.shape[0]))
            blocks.append(mode + noise @ np.linalg.cholesky(cov).T)
        particles = np.vstack(blocks)
        return np.clip(particles, bounds[:, 0], bounds[:, 1]), best

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Move the particles towards the hyperparameter posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : SteinGPRegressor
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, max_iter=30, tol=1e-2,
        ...                        random_state=0).fit(X, y)
        >>> reg.particles_.shape  # log amplitude, log length scale, log noise
        (4, 3)
        """
        continuing = self._continuing()
        with atomic_feature_state(self):
            X, y = validate_data(
                self,
                X,
                y,
                dtype=np.float64,
                order="C",
                y_numeric=True,
                reset=not continuing,
            )
            with blas_threads_for(X.shape[0]):
                fitted = self._fit(X, y, continuing)
        self.__dict__.update(fitted)
        return self

    def _fit(self, X, y, continuing):
        t_start = time.perf_counter()
        if X.shape[0] < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 samples to infer "
                f"hyperparameters; got {X.shape[0]} sample."
            )
        check_input_magnitude(X)
        _check_dense_memory(X.shape[0], type(self).__name__)
        y_mean, y_std = target_scale(y, self.normalize_y)
        y_model = (y - y_mean) / y_std
        kernel, adapter, target, names, bounds, start, prior_set = self._build_target(
            X, y_model
        )
        rng = check_random_state(self.random_state)
        state = None
        map_params = None
        if continuing:
            if self.particles_.shape != (self.n_particles, len(names)):
                raise ValueError(
                    "warm_start needs the same number of particles and "
                    f"parameters: have {self.particles_.shape}, asked for "
                    f"({self.n_particles}, {len(names)})."
                )
            particles = self.particles_
            state = self._svgd_state
            map_params = self.map_params_
        else:
            particles, map_params = self._initial_particles(
                target, start, bounds, prior_set, rng
            )
        history = {k: list(v) for k, v in self.history_.items()} if continuing else {}
        if len(names) == 0:
            values = np.array([target.logp_and_grad(p)[0] for p in particles])
            result_state, n_iter, converged, grads = state, 0, True, particles
        else:
            evaluator = _batch_evaluator(target)
            evaluator.check_initial(particles)
            result = run_svgd(
                evaluator,
                particles,
                max_iter=self.max_iter,
                learning_rate=self.learning_rate,
                tol=self.tol,
                bounds=bounds,
                state=state,
                verbose=self.verbose,
                print_fn=lambda msg: print(f"[SteinGPRegressor] {msg}"),
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
            if not converged and self.max_iter > 0:
                warnings.warn(
                    f"SVGD did not converge in {self.max_iter} iterations (last "
                    f"largest move {result.history['max_move'][-1]:.2e} > tol="
                    f"{self.tol}); increase max_iter or learning_rate.",
                    ConvergenceWarning,
                    stacklevel=4,
                )
        _warn_at_bounds(particles, bounds, names)
        if target.max_jitter > 0:
            warnings.warn(
                f"Kernel matrices were not positive definite for some particles; "
                f"added jitter up to {target.max_jitter:.3g} to their diagonal.",
                NumericalWarning,
                stacklevel=4,
            )
        kernel_thetas = particles[:, : adapter.n_params]
        if target.log_noise_variance is None:
            noise_model = np.exp(particles[:, -1])
        else:
            noise_model = np.full(particles.shape[0], np.exp(target.log_noise_variance))
        draws = ExactGPDraws(adapter, X, y_model, kernel_thetas, noise_model)
        ksd = kernel_stein_discrepancy(particles, grads) if len(names) else 0.0
        return {
            "particles_": particles,
            "param_names_": names,
            "kernels_": [kernel.clone_with_theta(t) for t in kernel_thetas],
            # y units; beyond ~1e154 the variance itself is not representable
            "noise_variance_": noise_model * np.float64(y_std) * y_std,
            "log_posterior_": values,
            "n_iter_": (self.n_iter_ if continuing else 0) + n_iter,
            "history_": history,
            "ksd_": float(ksd),
            "map_params_": map_params,
            "diagnostics_": {
                "max_jitter": target.max_jitter,
                "converged": converged,
                "fit_time": time.perf_counter() - t_start,
            },
            "X_train_": X,
            "y_train_": y_model,
            "_y_mean": y_mean,
            "_y_std": y_std,
            "_draws": draws,
            "_target": target,
            "_svgd_state": result_state,
            "_bounds": bounds,
        }

    def log_predictive_density(self, X, y):
        """Mean log density of noisy observations under the predictive mixture.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        float
            ``mean_i log(1/J sum_j N(y_i; m_ij, v_ij + noise_j))``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, max_iter=30, tol=1e-2,
        ...                        random_state=0).fit(X, y)
        >>> bool(reg.log_predictive_density(X, y) > 0)  # noise sd is 0.1
        True
        """
        X = self._validate_query(X)
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"Found input variables with inconsistent numbers of samples: "
                f"[{X.shape[0]}, {y.shape[0]}]"
            )
        if not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity.")
        means, variances = self._draws.moments(X)
        variances = variances + self._draws.noise_variances[:, None]
        y_model = (y - self._y_mean) / self._y_std
        density = mixture_log_density(y_model, means, variances)
        return float(np.mean(density) - np.log(self._y_std))

    def log_marginal_likelihood(self, theta=None, eval_gradient=False):
        """Log marginal likelihood of the (normalised) training targets.

        Parameters
        ----------
        theta : array-like of shape (n_params,), default=None
            Log-scale parameters in the order of ``param_names_``. ``None``
            evaluates every particle.
        eval_gradient : bool, default=False
            Also return the gradient in ``theta`` (only with ``theta`` given).

        Returns
        -------
        float or ndarray of shape (n_particles,)
        gradient : ndarray of shape (n_params,), only if ``eval_gradient``

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, max_iter=30, tol=1e-2,
        ...                        random_state=0).fit(X, y)
        >>> reg.log_marginal_likelihood().shape  # one value per particle
        (4,)
        >>> value, grad = reg.log_marginal_likelihood(
        ...     reg.particles_[0], eval_gradient=True)
        >>> grad.shape
        (3,)
        """
        check_is_fitted(self)
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return np.array(
                [
                    self._target.log_likelihood(p, eval_gradient=False)
                    for p in self.particles_
                ]
            )
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.particles_.shape[1],):
            raise ValueError(
                f"theta must have shape ({self.particles_.shape[1]},), got "
                f"{theta.shape}."
            )
        return self._target.log_likelihood(theta, eval_gradient=eval_gradient)
