"""Plumbing shared by every estimator, each piece defined once.

The query check, the progress lines, the kernel a fit starts from, the
wrapper around ``fit`` (parameter validation, Ctrl-C, warnings), the
fit-time clock and the installation of fitted attributes. The policy
behind the defaults lives in :mod:`skgp_bayes._defaults`; this module only
applies it.

Then what every exact-GP regressor shares, whatever its engine
(:class:`ExactGPRegressorMixin`): hyperparameter set-up from the
estimator's ``kernel``, ``noise_variance``, ``noise_variance_bounds`` and
``priors``; and, from a fitted state that is an exact per-draw GP posterior
(``self._draws`` with ``X``, ``y``, ``kernel_thetas``, ``noise_variances``,
``factor(j)`` and ``moments``, plus ``_y_mean`` and ``_y_std``),
``predict``, ``sample_y`` and ``sample_functions``.
"""

import time

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _config
from ._defaults import (
    default_kernel,
    estimator_prior_set,
    in_natural_units,
    query_inputs,
)
from ._predictive_contract import (
    LatentDraws,
    RegressorContractMixin,
    fit_time_from_diagnostics,
)
from ._progress import CallbackMixin, fit_callbacks
from ._public import public_method
from ._validation import (
    check_bounds,
    check_finite_theta,
    check_n_samples,
    log_noise_bounds,
    positive_finite,
)
from ._warnings import fit_warnings, warn_user
from .kernels import KernelAdapter, lower_kernel
from .kernels.spectral import spectral_parameters
from .predictive._distributions import (
    GaussianMixturePredictive,
    MultiTargetPredictive,
    mixture_prediction,
    stack_target_columns,
)
from .predictive.mixture import gaussian_joint_draws
from .sampling import (
    add_white_noise,
    exact_conditioner,
    pathwise_functions,
    require_spectral_spec,
)

__all__ = ["EstimatorBase", "Printer", "fit_method", "mean_kernel", "seconds_since"]


class Printer:
    """A progress printer that writes ``[name] message`` lines.

    A class rather than a closure so that it pickles into worker processes.

    Parameters
    ----------
    name : str
        The prefix in brackets, usually the estimator's class name.

    Examples
    --------
    >>> from skgp_bayes._base import Printer
    >>> Printer("SGLDGPRegressor chain 0")("burn-in done")
    [SGLDGPRegressor chain 0] burn-in done
    """

    def __init__(self, name):
        self.name = name

    def __call__(self, msg):
        print(f"[{self.name}] {msg}")


def fit_method(method):
    """Wrap an estimator's ``fit`` or ``partial_fit``.

    scikit-learn's parameter validation, its fit callbacks where the
    installed version has them (:func:`~skgp_bayes._progress.fit_callbacks`),
    a ``KeyboardInterrupt`` that passes through compiled code, and the fit's
    warnings issued once each at the user's line: every fit needs the four,
    in this order.

    Parameters
    ----------
    method : callable
        ``fit(self, X, y, ...)`` or ``partial_fit(self, X, y, ...)``.

    Returns
    -------
    callable
        The wrapped method.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from skgp_bayes._base import fit_method
    >>> class Mean(BaseEstimator):
    ...     _parameter_constraints = {}
    ...     @fit_method
    ...     def fit(self, X, y):
    ...         self.mean_ = sum(y) / len(y)
    ...         return self
    >>> Mean().fit([[0], [1]], [1.0, 3.0]).mean_
    2.0
    """
    guarded = public_method(fit_warnings()(method))
    return _fit_context(prefer_skip_nested_validation=True)(fit_callbacks(guarded))


def seconds_since(start):
    """Seconds on the fit clock since ``start``, a ``time.perf_counter()``.

    Parameters
    ----------
    start : float
        A reading of :func:`time.perf_counter`.

    Returns
    -------
    float

    Examples
    --------
    >>> import time
    >>> from skgp_bayes._base import seconds_since
    >>> seconds_since(time.perf_counter()) >= 0.0
    True
    """
    return time.perf_counter() - start


def mean_kernel(kernel, thetas):
    """The kernel at the mean of its draws in log coordinates.

    The point summary ``kernel_`` of an estimator with several draws: the
    mean of log hyperparameters stays inside the (log-space box) bounds
    that every draw respects, and equals the geometric mean of each
    positive hyperparameter.

    Parameters
    ----------
    kernel : Kernel
        The fit's kernel, whose ``theta`` layout the rows of ``thetas``
        follow.
    thetas : ndarray of shape (n_draws, n_kernel_params)
        Log hyperparameters per draw.

    Returns
    -------
    Kernel

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._base import mean_kernel
    >>> mean_kernel(RBF(), np.log([[0.5], [2.0]]))
    RBF(length_scale=1)
    """
    return kernel.clone_with_theta(np.mean(thetas, axis=0))


class EstimatorBase(CallbackMixin):
    """Mixin of the plumbing every estimator shares.

    It expects the estimator's ``kernel`` and ``verbose`` parameters and,
    once fitted, the attributes that :func:`~skgp_bayes._defaults.query_inputs`
    reads.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from skgp_bayes._base import EstimatorBase
    >>> class Tiny(EstimatorBase, BaseEstimator):
    ...     def __init__(self, kernel=None, verbose=0):
    ...         self.kernel, self.verbose = kernel, verbose
    >>> Tiny()._new_kernel(2)
    1**2 * RBF(length_scale=[1.41, 1.41])
    >>> Tiny()._log("started")
    [Tiny] started
    """

    def _log(self, msg):
        print(f"[{type(self).__name__}] {msg}")

    def _validate_query(self, X):
        return query_inputs(self, X)

    def _new_kernel(self, n_features):
        """The kernel a fresh fit starts from: the user's, cloned, or the
        default of :func:`~skgp_bayes._defaults.default_kernel`."""
        if self.kernel is None:
            return default_kernel(n_features)
        return clone(self.kernel)

    def _set_fitted(self, fitted, model_specific=()):
        """Install a fit's attributes, all at once.

        Attributes in ``model_specific`` that this fit did not set belong
        to another model of the same estimator (exact or sparse) and must
        not outlive the refit.
        """
        for key in model_specific:
            if key not in fitted:
                self.__dict__.pop(key, None)
        self.__dict__.update(fitted)


# Query sets above this size make exact joint sampling slow enough to say so.
EXACT_SAMPLE_WARN = 5000
# From this many query points on, sample_y(method="auto") samples pathwise.
# benchmarks/bench_sample_y.py (mcycle, 20 particles, 2 cores) measured the
# exact draw slower from about 25 points with 100 samples and at every size
# with 1 sample, but under 0.15 s below 100 points: there the exact draw, free
# of random-feature error, costs little; at 100 it was 8-50x slower.
PATHWISE_MIN_POINTS = 100


def check_exact_sampling(n_points, no_spectral):
    """MemoryError or a cost warning before an exact joint draw at ``n_points``.

    Examples
    --------
    >>> from skgp_bayes._base import check_exact_sampling
    >>> check_exact_sampling(50, no_spectral=False)  # small: silent
    """
    reason = (
        " (the kernel has no spectral density, so the pathwise sampler cannot be used)"
        if no_spectral
        else "; method='pathwise' costs O(n) instead"
    )
    _config.check_dense_bytes(
        3 * 8 * n_points**2,
        f"Exact sample_y at {n_points} points (a dense predictive covariance)",
        f"Draw at fewer points{reason}.",
    )
    if n_points > EXACT_SAMPLE_WARN:
        warn_user(
            f"sample_y at {n_points} points builds a dense "
            f"{n_points} x {n_points} covariance and factorises it for "
            "each draw used; this costs O(n^3) time and O(n^2) memory"
            f"{reason}.",
            UserWarning,
        )


def sample_y_spec(kernel, method, n_points):
    """The lowered kernel when ``sample_y`` samples pathwise, else None.

    ``"auto"`` samples pathwise from ``PATHWISE_MIN_POINTS`` query points
    on; exact sampling costs ``O(n^3)`` in the query points whatever the
    model. Raises for an unknown method, warns when a kernel without a
    spectral density forces exact sampling, and checks the cost of an
    exact draw.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes._base import sample_y_spec
    >>> sample_y_spec(RBF(), "auto", 10) is None  # few points: exact
    True
    """
    if method not in ("auto", "exact", "pathwise"):
        raise ValueError(
            f"method must be 'auto', 'exact' or 'pathwise', got {method!r}."
        )
    spec = lower_kernel(kernel)
    if spec is None and method == "pathwise":
        warn_user(
            f"The kernel {kernel!r} has no spectral density for random Fourier "
            "features; sampling exactly instead.",
            UserWarning,
        )
    if spec is not None and (
        method == "pathwise" or (method == "auto" and n_points >= PATHWISE_MIN_POINTS)
    ):
        return spec
    check_exact_sampling(n_points, spec is None)
    return None


class ExactGPRegressorMixin(EstimatorBase, RegressorContractMixin):
    """Set-up, ``predict`` and sampling of regressors with exact GP draws."""

    def _hyperparameters(self):
        """Kernel, adapter, names, bounds, start, priors and fixed log noise.

        The noise variance is a free parameter after the kernel's unless its
        bounds are ``"fixed"``; then the last entry is its log value, else
        ``None``.
        """
        n_features = self.n_features_in_
        kernel = self._new_kernel(n_features)
        adapter = KernelAdapter(kernel)
        check_finite_theta(kernel.theta, adapter.param_names)
        noise = positive_finite("noise_variance", self.noise_variance)
        noise_bounds = log_noise_bounds(self.noise_variance_bounds, noise)
        names = list(adapter.param_names)
        bounds = adapter.bounds.copy()
        start = np.array(kernel.theta, dtype=np.float64)
        if noise_bounds is None:
            fixed_log_noise = float(np.log(noise))
        else:
            fixed_log_noise = None
            names.append("noise_variance")
            bounds = np.vstack([bounds, noise_bounds])
            start = np.append(start, np.log(noise))
        check_bounds(bounds, names)
        start = np.clip(start, bounds[:, 0], bounds[:, 1])
        prior_set = estimator_prior_set(
            adapter,
            self.priors,
            n_features,
            noise=noise_bounds is not None,
            regression=True,
        )
        return kernel, adapter, names, bounds, start, prior_set, fixed_log_noise

    fit_time_ = fit_time_from_diagnostics()

    # -------------------------------------------------------------- predict
    @public_method
    def predict(self, X, return_std=False, return_cov=False, *, noise=False):
        """Mean (and spread) of the predictive mixture over the draws.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.
        return_std : bool, default=False
            Also return the standard deviation of the latent function.
        return_cov : bool, default=False
            Also return the joint covariance of the latent function.
        noise : bool, default=False
            Include each draw's observation noise (``noise_variance_``) in
            the standard deviation or covariance: the spread of a noisy
            observation of ``y`` instead of the latent function's.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,) or (n_samples, n_targets)
        y_std : ndarray of shape (n_samples,) or (n_samples, n_targets)
            Only if ``return_std``.
        y_cov : ndarray of shape (n_samples, n_samples[, n_targets])
            Only if ``return_cov``. The ``n_targets`` axis, as in
            scikit-learn, when the estimator was fitted on several targets.

        Notes
        -----
        As in scikit-learn, the spread is by default that of the latent
        function (a ``WhiteKernel`` in the kernel adds its noise,
        ``noise_variance`` does not); it is the mixture's, the mean of the
        draws' variances plus the variance of their means. For intervals of
        ``y`` use :meth:`predict_interval` or :meth:`predict_quantiles`,
        which use the exact mixture rather than a Gaussian with this spread.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X, y)
        >>> mean, std = reg.predict(np.array([[0.0], [1.0]]), return_std=True)
        >>> mean.shape, bool(np.all(std > 0))
        ((2,), True)
        >>> _, std_y = reg.predict(np.array([[0.0], [1.0]]), return_std=True,
        ...                        noise=True)
        >>> bool(np.all(std_y > std))
        True
        """
        if return_std and return_cov:
            raise RuntimeError(
                "At most one of return_std or return_cov can be requested."
            )
        draws = self._predictive_draws(self._validate_query(X), full_cov=return_cov)
        if isinstance(draws, LatentDraws):
            return mixture_prediction(draws, return_std, return_cov, noise)
        columns = [mixture_prediction(d, return_std, return_cov, noise) for d in draws]
        return stack_target_columns(columns, return_std or return_cov)

    def _predictive_draws(self, X, full_cov=False):
        """:class:`LatentDraws`, or one per target of a multi-output fit."""
        means, spread = self._draws.moments(X, full_cov=full_cov)
        noise = self._draws.noise_variances
        if means.ndim == 2:
            return LatentDraws(means, spread, noise, self._y_mean, self._y_std)
        # The targets share each draw's variance; their means and units differ.
        return [
            LatentDraws(means[..., c], spread, noise, self._y_mean[c], self._y_std[c])
            for c in range(means.shape[-1])
        ]

    def _observation_predictive(self, X):
        draws = self._predictive_draws(X)
        if isinstance(draws, LatentDraws):
            return GaussianMixturePredictive.from_draws(draws)
        return MultiTargetPredictive(
            [GaussianMixturePredictive.from_draws(d) for d in draws]
        )

    def _to_y(self, values):
        return values * self._y_std + self._y_mean

    @public_method
    def sample_y(self, X, n_samples=1, random_state=0, method="auto", n_features=None):
        """Draw functions from the predictive mixture at ``X``.

        Each sample first picks a particle uniformly at random, then draws
        from that particle's Gaussian posterior at ``X``: jointly from the
        dense posterior covariance (``"exact"``), or as a pathwise sample,
        a random-Fourier-feature prior draw updated by Matheron's rule
        (``"pathwise"``, see :meth:`sample_functions`).

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        method : {"auto", "exact", "pathwise"}, default="auto"
            ``"exact"`` costs ``O(n_samples_X^3)`` time and
            ``O(n_samples_X^2)`` memory per particle drawn; ``"pathwise"``
            costs ``O(n_samples_X (n_features + n_train))`` per sample and
            approximates the prior covariance with ``n_features`` Fourier
            features. ``"auto"`` uses ``"pathwise"`` from
            ``skgp_bayes._base.PATHWISE_MIN_POINTS`` query points on (where
            it is faster) and ``"exact"`` below. Kernels without a spectral
            density (anything but RBF and Matern 1/2, 3/2, 5/2, times a
            ConstantKernel, plus a WhiteKernel) are always sampled exactly.
        n_features : int, default=None
            Fourier features per particle for ``"pathwise"``; None uses
            ``skgp_bayes.sampling.DEFAULT_N_FEATURES`` (1024).

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples)
            As in scikit-learn, samples of the latent function (plus the
            noise of a ``WhiteKernel`` in the kernel, not ``noise_variance``).
            ``(n_samples_X, n_targets, n_samples)`` for an estimator fitted
            on several targets, sampled exactly (each sample picks one draw
            for all the targets).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, max_iter=20, random_state=0)
        >>> reg = reg.fit(X, y)
        >>> grid = np.linspace(-3, 3, 5000)[:, None]
        >>> reg.sample_y(grid, n_samples=10, method="pathwise").shape
        (5000, 10)
        >>> reg.sample_y(grid[:50], n_samples=10, method="exact").shape
        (50, 10)
        """
        X = self._validate_query(X)
        check_n_samples(n_samples)
        if np.ndim(self._y_mean) == 1:
            return self._sample_y_targets(X, n_samples, random_state, method)
        spec = sample_y_spec(self._draws.adapter.kernel, method, X.shape[0])
        if spec is not None:
            return self._sample_y_pathwise(X, spec, n_samples, random_state, n_features)
        rng = check_random_state(random_state)
        which = rng.randint(self._draws.n_draws, size=n_samples)
        out = np.empty((X.shape[0], n_samples))
        for j in np.unique(which):
            cols = np.flatnonzero(which == j)
            means, covs = self._draws.moments(X, full_cov=True, draws=[j])
            out[:, cols] = gaussian_joint_draws(means[0], covs[0], cols.size, rng)
        return self._to_y(out)

    def _sample_y_targets(self, X, n_samples, random_state, method):
        """``sample_y`` of a multi-output fit: ``(n_samples_X, t, n_samples)``.

        Each sample picks one draw for all the targets, as their posteriors
        share it, then draws every target from that draw's GP.
        """
        if method not in ("auto", "exact"):
            raise ValueError(
                f"sample_y of a multi-output fit samples exactly (method='auto' or "
                f"'exact'); got method={method!r}. The pathwise sampler draws one "
                "target; fit one estimator per target to use it."
            )
        check_exact_sampling(
            X.shape[0], lower_kernel(self._draws.adapter.kernel) is None
        )
        rng = check_random_state(random_state)
        which = rng.randint(self._draws.n_draws, size=n_samples)
        n_targets = self._y_mean.shape[0]
        out = np.empty((X.shape[0], n_targets, n_samples))
        for j in np.unique(which):
            cols = np.flatnonzero(which == j)
            means, covs = self._draws.moments(X, full_cov=True, draws=[j])
            for c in range(n_targets):
                out[:, c, cols] = gaussian_joint_draws(
                    means[0][:, c], covs[0], cols.size, rng
                )
        return out * self._y_std[:, None] + self._y_mean[:, None]

    def _pathwise(self, spec, n_samples, random_state, n_features):
        if np.ndim(self._y_mean) == 1:
            raise ValueError(
                "sample_functions draws functions of one target; this estimator "
                f"was fitted on {self._y_mean.shape[0]} targets. Use sample_y, "
                "or fit one estimator per target."
            )
        draws = self._draws
        n_dims = draws.X.shape[1]
        white = np.array(
            [spectral_parameters(spec, t, n_dims)[2] for t in draws.kernel_thetas]
        )
        conditioner = exact_conditioner(
            draws.X, draws.y, draws.factor, draws.noise_variances + white
        )
        functions = pathwise_functions(
            spec,
            draws.kernel_thetas,
            n_samples,
            conditioner,
            n_features=n_features,
            random_state=random_state,
            offset=self._y_mean,
            scale=self._y_std,
        )
        return functions, white

    def _sample_y_pathwise(self, X, spec, n_samples, random_state, n_features):
        rng = check_random_state(random_state)
        functions, white = self._pathwise(spec, n_samples, rng, n_features)
        return add_white_noise(functions(X), functions.draws, white, self._y_std, rng)

    @public_method
    def sample_functions(self, n_samples=1, random_state=0, n_features=None):
        """Posterior function samples that can be evaluated anywhere.

        Each function picks a particle uniformly at random and is a pathwise
        sample of that particle's GP posterior: a random-Fourier-feature
        prior draw plus Matheron's update ``k(x, X) (K + s2 I)^-1 (y -
        f_prior(X) - eps)``. The returned object returns the same functions
        on every call, has an analytic input gradient (for Thompson sampling
        and optimisation) and pickles. Evaluation costs
        ``O(n_points (n_features + n_train))`` per function.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        n_features : int, default=None
            Fourier features per particle; None uses 1024. The error of the
            prior covariance falls as ``1 / sqrt(n_features)``.

        Returns
        -------
        functions : skgp_bayes.sampling.FunctionSamples
            ``functions(X)`` has shape ``(n_points, n_samples)``,
            ``functions.gradient(X)`` shape ``(n_points, n_samples,
            n_features_in_)``, and ``functions[i]`` is the ``i``-th function
            alone. Values are latent functions in the units of ``y``; the
            noise of a ``WhiteKernel`` is not part of them.

        Raises
        ------
        ValueError
            If the kernel has no spectral density (use ``sample_y`` with
            ``method="exact"`` instead).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, max_iter=20, random_state=0)
        >>> reg = reg.fit(X, y)
        >>> f = reg.sample_functions(n_samples=3, random_state=0)
        >>> grid = np.linspace(-3, 3, 7)[:, None]
        >>> f(grid).shape, f.gradient(grid).shape
        ((7, 3), (7, 3, 1))
        >>> np.array_equal(f(grid), f(grid))
        True
        """
        check_is_fitted(self)
        check_n_samples(n_samples)
        spec = require_spectral_spec(
            self._draws.adapter.kernel, "sample_y(X, method='exact')"
        )
        rng = check_random_state(random_state)
        functions = self._pathwise(spec, n_samples, rng, n_features)[0]
        return in_natural_units(functions, self)
