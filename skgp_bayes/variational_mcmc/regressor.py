"""Gaussian-process regression on counts or real values by variational MCMC."""

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import fit_method, sample_y_spec
from .._defaults import NOISE_VARIANCE_BOUNDS, in_natural_units
from .._fit_checks import warn_degenerate_fit
from .._predictive_contract import (
    DEFAULT_QUANTILES,
    LatentDraws,
    check_coverage,
    check_quantiles,
    check_targets,
)
from .._public import public_method
from .._validation import (
    atomic_feature_state,
    check_exposure,
    check_n_samples,
    check_single_target,
    noise_box,
    pooled_log_rate,
    safe_mean_std,
    variance_in_units,
)
from ..likelihoods import Gaussian, Poisson
from ..predictive._distributions import (
    GaussianMixturePredictive,
    PoissonMixturePredictive,
    lognormal_rate_prediction,
    mixture_prediction,
)
from ..sampling import require_spectral_spec
from ._base import VariationalMCMCBase
from ._pipelines import fit_collapsed
from ._sample_y import exact_y, expected_counts, pathwise_y

# Why the regressor takes one target (ValueError on a 2-D y).
_SINGLE_TARGET = (
    "HMC samples the whitened inducing values of one latent function jointly "
    "with the hyperparameters; a second target would need its own block of "
    "them and its own likelihood term, which the sparse target does not have."
)


class VariationalMCMCRegressor(RegressorMixin, VariationalMCMCBase):
    """Gaussian-process regression on counts or real values by variational MCMC.

    The same pipeline as :class:`VariationalMCMCClassifier` (SVGP fit, then
    HMC over hyperparameters and whitened inducing values) with a Poisson
    likelihood for counts (log link, optional exposure), or a Gaussian
    likelihood whose noise variance is sampled with the kernel
    hyperparameters. For the Gaussian likelihood the whitened inducing
    values are integrated out exactly: HMC samples the hyperparameters on
    Titsias' collapsed bound (plus the log prior), which is the exact
    marginal of the joint target, and each kept draw gets an exact draw of
    ``v`` from its Gaussian conditional, so ``draws_`` holds draws of the
    same joint posterior in the same layout (see the module notes and
    :mod:`skgp_bayes.targets.collapsed`).

    Parameters
    ----------
    kernel : sklearn kernel, default=None
        Prior covariance of the latent function (log rate for Poisson).
        Default as in :class:`VariationalMCMCClassifier`.
    likelihood : {"poisson", "gaussian"}, default="gaussian"
        ``"poisson"``: ``y_i ~ Poisson(exposure_i * exp(f_i))``.
        ``"gaussian"``: ``y_i ~ N(f_i, noise_variance)``, with ``y``
        standardised internally and the noise variance a parameter (prior
        name ``"noise_variance"``, in standardised units).
    noise_variance : float, default=0.1
        Gaussian likelihood: initial noise variance, a fraction of
        ``Var(y)``.
    noise_variance_bounds : pair of float or "fixed", default=(1e-6, 1e2)
        Gaussian likelihood: box for the noise variance, as fractions of
        ``Var(y)``; ``"fixed"`` holds it at ``noise_variance``. A posterior
        piled on a bound (noise-free data) is sampled in the log of its
        distance from the bound (user guide).
    n_inducing : int, default=None
        As in :class:`VariationalMCMCClassifier` for Poisson counts. For the
        Gaussian likelihood, None with at most 64 training rows takes the
        distinct inputs (the bound is then exact and no dearer than at the cap
        below); with more it starts from ``min(50, ceil(sqrt(n)))`` and doubles
        the set (new k-means centres, hyperparameters warm-started) while, at
        the collapsed bound's optimum, its gap to Titsias' upper bound on the
        log marginal likelihood exceeds 0.05 nats per point, up to 64 (128
        beyond 1,000 rows, where no exact model is checked against); a doubling
        (a capped step: its share of one) that raises the bound by less than
        0.05 nats per point keeps the smaller set. The gap bounds the divergence
        of the sparse posterior from the exact one (Burt, Rasmussen and van der
        Wilk, 2020); 0.05 nats per point is the smallest difference in mean log
        predictive density that matters. More inducing inputs make each gradient
        dearer (``O(n m^2)``) but, ``v`` integrated out, not the chains longer.
        A set short of the exact mode, or without a mode the exact posterior
        holds mass at, grows on, then becomes the training inputs, as does a
        kept set of 0.43 of the distinct inputs (as dear) or one that predicts
        held-out rows worse than the exact model.
    inducing_points, optimize_inducing, n_chains, n_warmup, \
n_samples, max_samples, thin, max_leapfrog, sampler, target_accept, priors, \
normalize_X, random_state, n_jobs, verbose
        As in :class:`VariationalMCMCClassifier`.
    batch_size, learning_rate, svgp_max_iter
        As in :class:`VariationalMCMCClassifier` for Poisson counts. The
        Gaussian likelihood maximises the collapsed bound by full-batch
        L-BFGS-B (one evaluation costs what one HMC gradient costs), with
        at most ``svgp_max_iter`` iterations per inducing-set size and the
        same stopping rule; ``batch_size`` and ``learning_rate`` do not
        apply to it.

    Attributes
    ----------
    draws_ : ndarray of shape (n_chains * n_kept, n_params)
        ``[kernel theta, (log noise variance), v]`` per kept draw (for the
        Gaussian likelihood ``v`` is the exact draw of ``v | theta``).
        ``inv_mass_`` is NaN for ``v``; ``diagnostics_`` has ``collapsed``,
        ``exact_marginal`` (whether ``Z`` is ``X``) and ``mode_jumps``
        (modes jumped between, moves tried and accepted).
    noise_variance_ : ndarray of shape (n_chains * n_kept,)
        Gaussian likelihood only: the noise variance of each draw, in the
        units of ``y``.
    samples_, param_names_, inducing_points_, kernel_, kernels_, rhat_, \
ess_, acceptance_rate_, n_divergences_, step_size_, inv_mass_, svgp_params_, \
svgp_elbo_, trace_, fit_time_, diagnostics_, n_features_in_, feature_names_in_
        As in :class:`VariationalMCMCClassifier`.
    y_mean_, y_std_ : float
        Standardisation of ``y``. For Poisson ``y_std_`` is 1 and
        ``y_mean_`` is the pooled log rate ``log((sum(y) + 1/2) /
        sum(exposure))``, the latent function's constant mean, so that the
        unit of exposure (years or days, people or thousands) changes
        nothing but that constant.

    See Also
    --------
    VariationalMCMCClassifier

    Examples
    --------
    >>> import warnings
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes import VariationalMCMCRegressor
    >>> from skgp_bayes.datasets import bin_coal_counts
    >>> X, counts, width = bin_coal_counts(n_bins=50)
    >>> reg = VariationalMCMCRegressor(
    ...     ConstantKernel(1.0) * RBF(10.0), likelihood="poisson",
    ...     inducing_points=X[::5], n_chains=2, n_warmup=100, n_samples=100,
    ...     max_samples=100,
    ...     max_leapfrog=10, random_state=0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     _ = reg.fit(X, counts, exposure=width)
    >>> reg.predict(X[:2], exposure=width).shape
    (2,)
    """

    _parameter_constraints = {
        **VariationalMCMCBase._common_constraints,
        "likelihood": [StrOptions({"poisson", "gaussian"})],
        "noise_variance": [Interval(Real, 0, None, closed="neither")],
        "noise_variance_bounds": [StrOptions({"fixed"}), tuple, list, np.ndarray],
    }

    def __init__(
        self,
        kernel=None,
        *,
        likelihood="gaussian",
        noise_variance=0.1,
        noise_variance_bounds=NOISE_VARIANCE_BOUNDS,
        n_inducing=None,
        inducing_points=None,
        optimize_inducing=True,
        n_chains=4,
        n_warmup=300,
        n_samples=250,
        max_samples=5000,
        thin=1,
        max_leapfrog=None,
        sampler="hmc",
        target_accept=0.9,
        priors=None,
        batch_size=None,
        svgp_max_iter=None,
        learning_rate=0.01,
        normalize_X=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.likelihood = likelihood
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.optimize_inducing = optimize_inducing
        self.n_chains = n_chains
        self.n_warmup = n_warmup
        self.n_samples = n_samples
        self.max_samples = max_samples
        self.thin = thin
        self.max_leapfrog = max_leapfrog
        self.sampler = sampler
        self.target_accept = target_accept
        self.priors = priors
        self.batch_size = batch_size
        self.svgp_max_iter = svgp_max_iter
        self.learning_rate = learning_rate
        self.normalize_X = normalize_X
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    @fit_method
    def fit(self, X, y, exposure=None):
        """Fit the Gaussian approximation, then sample by HMC.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Counts (non-negative integers) for Poisson, real values for
            Gaussian.
        exposure : float or array-like of shape (n_samples,), default=None
            Poisson only: time at risk (bin width) of each count, so that
            the expected count is ``exposure * exp(f)``. None means 1.

        Returns
        -------
        self : VariationalMCMCRegressor

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> reg.draws_.shape[0]
        10
        """
        with atomic_feature_state(self):
            check_single_target(y, type(self).__name__, _SINGLE_TARGET)
            X, y = validate_data(
                self, X, y, dtype=np.float64, order="C", y_numeric=True
            )
            exposure = check_exposure(exposure, X.shape[0], self.likelihood)
            if self.likelihood == "poisson":
                if np.any(y < 0) or np.any(y != np.round(y)):
                    raise ValueError(
                        "likelihood='poisson' needs non-negative integer counts y."
                    )
                likelihood = Poisson()
                y_lik, y_std = y, 1.0
                y_mean = pooled_log_rate(y, exposure)
                offset = np.full(y.shape[0], y_mean)
                if exposure is not None:
                    offset += np.log(exposure)
            else:
                y_mean, y_std = safe_mean_std(y)
                y_lik = (y - y_mean) / y_std
                likelihood = Gaussian(0.1)
                offset = None
            fitted = self._fit_pipeline(X, y_lik, likelihood, offset)
        fitted["y_mean_"], fitted["y_std_"] = float(y_mean), float(y_std)
        self._set_fitted(fitted)
        rates = y if exposure is None else y / exposure  # what predict(X) gives
        warn_degenerate_fit(self._for_fit_checks(), X, rates)
        return self

    def _noise_box(self):
        return noise_box(self.noise_variance, self.noise_variance_bounds)

    def _fit_model(self, likelihood):
        # A Gaussian likelihood integrates v out (see the module notes).
        if isinstance(likelihood, Gaussian):
            return fit_collapsed
        return super()._fit_model(likelihood)

    def _moments_per_draw(self, X, exposure):
        means, variances = self._draw_moments(X)
        return self._log_rate(means[..., 0], exposure), variances

    def _log_rate(self, f, exposure):
        """Poisson: the latent ``f`` as a log expected count; else ``f``.

        The fit's pooled log rate ``y_mean_`` is the latent function's mean,
        and ``log(exposure)`` is added where given.
        """
        if self.likelihood != "poisson":
            return f
        f = f + self.y_mean_
        return f if exposure is None else f + np.log(exposure)

    @public_method
    def predict(
        self,
        X,
        exposure=None,
        return_std=False,
        method="mcmc",
        *,
        return_cov=False,
        noise=False,
    ):
        """Posterior predictive mean (and spread) of the regression function.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        exposure : float or array-like of shape (n_queries,), default=None
            Poisson only: the expected count is ``exposure * E[exp(f)]``.
        return_std : bool, default=False
            Also return the standard deviation of the latent function
            (Gaussian likelihood, units of ``y``) or of the expected count
            ``exposure * exp(f)`` (Poisson), over the posterior draws.
        method : {"mcmc", "gaussian"}, default="mcmc"
            Average over the HMC draws, or use the SVGP approximation.
        return_cov : bool, default=False
            Also return the joint covariance of the same quantity.
        noise : bool, default=False
            Include the observation noise in the spread: each draw's
            noise variance (Gaussian) or the Poisson variance of a count.

        Returns
        -------
        mean : ndarray of shape (n_queries,)
        std : ndarray of shape (n_queries,), only if ``return_std``
        cov : ndarray of shape (n_queries, n_queries), only if ``return_cov``

        Notes
        -----
        Where the chains sampled the exact target (``Z`` is ``X``) each
        draw predicts as the exact GP, ``v`` integrated out: through ``v``
        the jitter on ``K(Z, Z)`` would act as a second noise.

        In skgp_bayes 0.1.0 the standard deviation included the
        observation noise; it is now, as for every regressor of the package
        and as in scikit-learn, that of the latent function unless
        ``noise=True``.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> mean, std = reg.predict(X[:3], exposure=0.5, return_std=True)
        >>> mean.shape, bool(np.all(std > 0))
        ((3,), True)
        >>> _, std_y = reg.predict(X[:3], exposure=0.5, return_std=True, noise=True)
        >>> bool(np.all(std_y > std))
        True
        """
        if return_std and return_cov:
            raise RuntimeError(
                "At most one of return_std or return_cov can be requested."
            )
        X = self._validate_query(X)
        exposure = check_exposure(exposure, X.shape[0], self.likelihood)
        asked = method, return_std, return_cov, noise
        if return_cov:  # one joint covariance over all the rows
            return self._predicted(X, exposure, asked)
        return self._in_row_blocks(lambda *a: self._predicted(*a, asked), X, exposure)

    def _predicted(self, X, exposure, asked):
        """:meth:`predict` at one block of rows (all of them for a covariance)."""
        method, return_std, return_cov, noise = asked
        draws = self._predictive_draws(X, exposure, method, full_cov=return_cov)
        if self.likelihood == "poisson":
            return lognormal_rate_prediction(
                draws.means, draws.spread, return_std, return_cov, noise
            )
        return mixture_prediction(draws, return_std, return_cov, noise)

    def _predictive_draws(self, X, exposure, method, full_cov=False):
        """Per-draw latent moments as :class:`LatentDraws` (log rate for Poisson)."""
        if full_cov:
            mu, spread = self._latent_covariances(X, method)
            mu = self._log_rate(mu, exposure)
        else:
            mu, spread = self._latent(X, exposure, method)
        if self.likelihood == "poisson":
            return LatentDraws(mu, spread, np.zeros(mu.shape[0]), 0.0, 1.0)
        noise = self._noise(method, mu.shape[0])
        return LatentDraws(mu, spread, noise, self.y_mean_, self.y_std_)

    def _observation_predictive(self, X, exposure=None, method="mcmc"):
        draws = self._predictive_draws(X, exposure, method)
        if self.likelihood == "poisson":
            return PoissonMixturePredictive(draws.means, draws.spread, self._likelihood)
        return GaussianMixturePredictive.from_draws(draws)

    def _observed(self, X, exposure, method, read, *per_row):
        """``read(observation predictive, *per_row)`` over blocks of rows."""

        def block(X, exposure, *cut):
            return read(self._observation_predictive(X, exposure, method), *cut)

        return self._in_row_blocks(block, X, exposure, *per_row)

    def _latent(self, X, exposure, method):
        """Latent means and variances, ``(S, k)`` each (S=1 for gaussian)."""
        if method == "gaussian":
            mu, var = self._gaussian_moments(X)
            mu, var = mu[None, :, 0], var[None, :, 0]
            return self._log_rate(mu, exposure), var
        if method != "mcmc":
            raise ValueError(f"method must be 'mcmc' or 'gaussian'; got {method!r}.")
        return self._moments_per_draw(X, exposure)

    def _noise(self, method, n_draws):
        if method == "gaussian":
            return np.array([np.exp(self._q[1])])
        return self._noise_draws()[:n_draws]

    @public_method
    def log_predictive_density(self, X, y, exposure=None, method="mcmc"):
        """Log posterior predictive density (or probability) of each ``y``.

        ``log (1/S) sum_s p(y_i | draw s)`` with ``p(y_i | draw s)`` the
        likelihood integrated over ``f_i ~ N(mu_is, gamma_is)``; with
        ``method="gaussian"`` the integral under the SVGP's ``q(f_i)``.
        Gaussian likelihood: in the units of ``y``, each draw's noise
        variance included.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        y : array-like of shape (n_queries,)
        exposure : float or array-like, default=None
            Poisson only.
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        ndarray of shape (n_queries,)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> lpd = reg.log_predictive_density(X, y, exposure=0.5)
        >>> lpd.shape, bool(np.all(lpd < 0))
        ((20,), True)
        """
        X = self._validate_query(X)
        y = check_targets(y, X.shape[0])
        exposure = check_exposure(exposure, X.shape[0], self.likelihood)
        return self._observed(X, exposure, method, lambda p, y: p.logpdf(y), y)

    @public_method
    def predict_quantiles(
        self, X, quantiles=DEFAULT_QUANTILES, *, exposure=None, method="mcmc"
    ):
        """Quantiles of the posterior predictive of a noisy observation ``y``.

        Gaussian likelihood: the mixture over the draws of ``N(mu_s, gamma_s
        + noise_s)``, solved by Newton steps on its distribution function to
        a relative error of about 1e-13. Poisson: the smallest count ``k``
        with ``P(y <= k) >= q`` under the mixture of Poisson-log-normal
        distributions (Gauss-Hermite rule over each draw's log rate).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        quantiles : float or sequence of float, default=(0.05, 0.5, 0.95)
        exposure : float or array-like of shape (n_queries,), default=None
            Poisson only.
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        ndarray of shape (n_queries, n_quantiles)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y)
        >>> q = reg.predict_quantiles(X[:2], quantiles=[0.05, 0.95])
        >>> q.shape, bool(np.all(q == np.round(q)))  # counts
        ((2, 2), True)
        """
        levels = check_quantiles(quantiles)
        X = self._validate_query(X)
        exposure = check_exposure(exposure, X.shape[0], self.likelihood)
        return self._observed(X, exposure, method, lambda p: p.quantiles(levels))

    @public_method
    def predict_interval(self, X, coverage=0.9, *, exposure=None, method="mcmc"):
        """Central predictive interval of a noisy observation ``y``.

        The ``(1 - coverage) / 2`` and ``(1 + coverage) / 2`` quantiles of
        :meth:`predict_quantiles`.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        coverage : float, default=0.9
        exposure : float or array-like of shape (n_queries,), default=None
            Poisson only.
        method : {"mcmc", "gaussian"}, default="mcmc"

        Returns
        -------
        lower, upper : ndarray of shape (n_queries,)

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.sin(X[:, 0])
        >>> reg = VariationalMCMCRegressor(n_inducing=5, n_chains=1, n_warmup=20,
        ...                                n_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y)
        >>> lower, upper = reg.predict_interval(X[:3], coverage=0.9)
        >>> bool(np.all(lower < upper))
        True
        """
        levels = check_coverage(coverage)
        bounds = self.predict_quantiles(X, levels, exposure=exposure, method=method)
        return bounds[:, 0], bounds[:, 1]

    @property
    def noise_variance_(self):
        """Noise variance of each draw in ``draws_``, in the units of ``y``.

        Gaussian likelihood only.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> reg = VariationalMCMCRegressor(n_inducing=5, n_chains=1, n_warmup=20,
        ...                                n_samples=10, max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, np.sin(X[:, 0]))
        >>> reg.noise_variance_.shape
        (10,)
        """
        if not isinstance(getattr(self, "_likelihood", None), Gaussian):
            raise AttributeError(
                "noise_variance_ exists for a fitted likelihood='gaussian' model."
            )
        return variance_in_units(self._noise_draws(), self.y_std_)

    @public_method
    def sample_latent(self, X, method="mcmc", n_samples=1000, random_state=0):
        """Draws of the latent function at ``X`` (marginally per point).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        method : {"mcmc", "gaussian"}, default="mcmc"
            ``"mcmc"``: one draw ``f = A' v + sqrt(gamma) z`` per kept HMC
            sample (``n_samples`` is ignored; from the exact GP's moments
            at the draw where the chains sampled the exact target, see
            :meth:`predict`); ``"gaussian"``:
            ``n_samples`` draws from the SVGP's ``q(f)``.
        n_samples : int, default=1000
        random_state : int, RandomState instance or None, default=0

        Returns
        -------
        ndarray of shape (n_draws, n_queries)
            The latent function (the log rate without exposure for
            Poisson; standardised units for Gaussian).

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> reg.sample_latent(X[:3]).shape  # one draw per kept sample
        (10, 3)
        """
        X = self._validate_query(X)
        rng = check_random_state(random_state)
        mu, var = self._latent(X, None, method)
        if method == "gaussian":
            z = rng.standard_normal((int(n_samples), X.shape[0]))
            return mu + np.sqrt(var) * z
        return mu + np.sqrt(var) * rng.standard_normal(mu.shape)

    @public_method
    def sample_functions(
        self, n_samples=1, random_state=0, n_features=None, posterior="mcmc"
    ):
        """Latent function samples from the posterior, callable anywhere.

        Each sample picks a kept HMC draw ``(theta, v)`` (and noise
        variance) uniformly at random and is a pathwise draw of the latent
        GP given the inducing values ``u = R_theta v``: a
        random-Fourier-feature prior draw plus Matheron's update ``k(x, Z)
        K(Z, Z)^-1 (u - f_prior(Z))``. The samples mix over the
        hyperparameters and the inducing values. Where the chains sampled
        the exact target (``diagnostics_["exact_marginal"]``) the update is
        the exact GP's, ``k(x, X) (K + s2 I)^-1 (y - f_prior(X) - eps)``,
        as in :meth:`predict`. The functions are frozen
        (every call returns the same values), have analytic input gradients
        and pickle; evaluation costs ``O(n_points (n_features + m))`` per
        function.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        n_features : int, default=None
            Fourier features per draw; None uses 1024.
        posterior : {"mcmc", "gaussian"}, default="mcmc"
            Mix over the kept HMC draws, or sample the SVGP approximation
            ``q(v) = N(m, S)`` at its hyperparameters (as ``method`` in
            :meth:`predict`).

        Returns
        -------
        functions : skgp_bayes.sampling.FunctionSamples
            ``functions(X)`` has shape ``(n_points, n_samples)``. For the
            Gaussian likelihood the latent function in the units of ``y``;
            for Poisson the log rate, without exposure (``exposure *
            np.exp(functions(X))`` is the expected count). A
            ``WhiteKernel``'s noise is not part of them.

        Raises
        ------
        ValueError
            If the kernel has no spectral density (use :meth:`sample_y` with
            ``method="exact"`` instead).

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.sin(X[:, 0])
        >>> reg = VariationalMCMCRegressor(n_inducing=5, n_chains=1, n_warmup=20,
        ...                                n_samples=10, max_samples=10, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y)
        >>> f = reg.sample_functions(3, random_state=0)
        >>> f(X[:4]).shape, f.gradient(X[:4]).shape
        ((4, 3), (4, 3, 1))
        """
        check_is_fitted(self)
        require_spectral_spec(self._adapter.kernel, "sample_y(X, method='exact')")
        functions = self._regression_functions(
            n_samples, random_state, n_features, posterior
        )[0]
        return in_natural_units(functions, self)

    def _regression_functions(self, n_samples, random_state, n_features, posterior):
        functions, white = self._functions(
            n_samples,
            random_state,
            n_features,
            posterior,
            offset=self.y_mean_,
            scale=self.y_std_,
        )
        return functions[0], white

    @public_method
    def sample_y(
        self,
        X,
        n_samples=1,
        random_state=0,
        method="auto",
        n_features=None,
        *,
        exposure=None,
        posterior="mcmc",
    ):
        """Joint draws of the regression function at ``X``.

        Each draw picks a kept HMC draw uniformly at random (one draw of
        ``q(v)`` for ``posterior="gaussian"``), then samples the latent
        function jointly over ``X`` from its Gaussian conditional: exactly
        from the dense covariance (``"exact"``) or as a pathwise sample
        (``"pathwise"``, see :meth:`sample_functions`).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=0
        method : {"auto", "exact", "pathwise"}, default="auto"
            ``"exact"`` costs ``O(n_queries^3)`` time and
            ``O(n_queries^2)`` memory per draw used; ``"pathwise"`` costs
            ``O(n_queries (n_features + m))`` per sample and approximates
            the prior covariance with ``n_features`` Fourier features.
            ``"auto"`` samples pathwise from 100 query points on and
            exactly below; kernels without a spectral density are always
            sampled exactly.
        n_features : int, default=None
            Fourier features per draw for ``"pathwise"``; None uses 1024.
        exposure : float or array-like of shape (n_queries,), default=None
            Poisson only: the draws are ``exposure * exp(f)``.
        posterior : {"mcmc", "gaussian"}, default="mcmc"
            The kept HMC draws or the SVGP approximation.

        Returns
        -------
        y_samples : ndarray of shape (n_queries, n_samples)
            Gaussian likelihood: draws of the latent function in the units
            of ``y`` (plus a ``WhiteKernel``'s noise), without the sampled
            observation noise, as in scikit-learn and as :meth:`predict`'s
            ``std``. Poisson: draws of the expected count ``exposure *
            exp(f)`` (:meth:`predict`'s mean on average), not of counts.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from skgp_bayes import VariationalMCMCRegressor
        >>> X = np.linspace(0, 10, 20)[:, None]
        >>> y = np.random.default_rng(0).poisson(3.0, 20)
        >>> reg = VariationalMCMCRegressor(likelihood="poisson", n_inducing=4,
        ...                                n_chains=1, n_warmup=20, n_samples=10,
        ...                                max_samples=10,
        ...                                random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # chains this short warn
        ...     reg = reg.fit(X, y, exposure=0.5)
        >>> grid = np.linspace(0, 10, 500)[:, None]
        >>> rates = reg.sample_y(grid, n_samples=4, exposure=0.5)  # pathwise
        >>> rates.shape, bool(np.all(rates > 0))
        ((500, 4), True)
        >>> reg.sample_y(grid[:5], n_samples=4, method="exact").shape
        (5, 4)
        """
        X = self._validate_query(X)
        check_n_samples(n_samples)
        exposure = check_exposure(exposure, X.shape[0], self.likelihood)
        draws = self._posterior_draws(posterior)
        spec = sample_y_spec(self._adapter.kernel, method, X.shape[0])
        rng = check_random_state(random_state)
        if spec is None:
            out = exact_y(self, X, n_samples, rng, draws, self._exact_data(posterior))
        else:
            out = pathwise_y(self, X, n_samples, rng, n_features, posterior)
        return expected_counts(self.likelihood, out, exposure)
