"""One meaning per prediction call, on every estimator.

Every regressor's predictive is an equally weighted mixture over posterior
draws (particles, MCMC draws, or one draw for a point estimate). Each
estimator hands this module, through one small hook, the per-draw latent
means and variances and the per-draw noise variances; the calls of the
contract are built here from them:

- ``predict(X, return_std, return_cov, noise=False)``: mean of the
  mixture and the spread of the latent function (total variance: the mean
  of the variances plus the variance of the means); ``noise=True`` adds each
  draw's noise variance, giving the spread of a noisy observation.
- ``predict_quantiles(X, quantiles)`` and ``predict_interval(X,
  coverage)``: quantiles of the mixture for a noisy observation, by a
  safeguarded Newton iteration on the mixture's CDF.
- ``log_predictive_density(X, y)``: ``log p(y_i | data)`` per point, in the
  units of ``y``.

Classifiers get ``predict_log_proba`` (the logarithm of the averaged
probabilities, computed from log probabilities so that it stays finite in
the tails) and, for two classes, ``decision_function`` (the log predictive
odds). Renamed fitted attributes keep their old name through
:func:`deprecated_alias`. The mixture distributions themselves (moments,
densities, CDFs and quantiles) are in ``skgp_bayes.predictive._distributions``.
"""

from collections import namedtuple

import numpy as np
from scipy.special import expit, log_expit

from ._public import public_method
from ._warnings import warn_user
from .targets._sparse_shared import inducing_factor, project

__all__ = [
    "LatentDraws",
    "RegressorContractMixin",
    "binary_log_odds",
    "check_coverage",
    "check_quantiles",
    "deprecated_alias",
    "draws_alias",
    "fit_time_from_diagnostics",
    "per_chain_samples",
    "proba_from_log_odds",
    "sparse_latent_covariances",
]

DEFAULT_QUANTILES = (0.05, 0.5, 0.95)


LatentDraws = namedtuple(
    "LatentDraws", ["means", "spread", "noise_variances", "offset", "scale"]
)
LatentDraws.__doc__ = """Per-draw latent predictive of a regressor, model scale.

``means`` has shape ``(S, m)``; ``spread`` holds variances ``(S, m)`` or
covariances ``(S, m, m)``; ``noise_variances`` has shape ``(S,)``. Values in
the units of ``y`` are ``offset + scale * value`` (variances times
``scale ** 2``).

Examples
--------
>>> import numpy as np
>>> from skgp_bayes._predictive_contract import LatentDraws
>>> draws = LatentDraws(np.zeros((2, 3)), np.ones((2, 3)), np.ones(2), 0.0, 1.0)
>>> draws.means.shape
(2, 3)
"""


# ------------------------------------------------------------ arguments
def check_quantiles(quantiles):
    """Quantile levels as a 1-D float array strictly inside (0, 1).

    Examples
    --------
    >>> from skgp_bayes._predictive_contract import check_quantiles
    >>> check_quantiles(0.5)
    array([0.5])
    """
    levels = np.atleast_1d(np.asarray(quantiles, dtype=np.float64))
    if levels.ndim != 1 or levels.size == 0:
        raise ValueError(
            f"quantiles must be a number or a 1-D sequence; got shape {levels.shape}."
        )
    if not np.all((levels > 0.0) & (levels < 1.0)):
        raise ValueError(
            f"quantiles must lie strictly between 0 and 1; got {levels.tolist()}."
        )
    return levels


def check_coverage(coverage):
    """Lower and upper quantile levels of a central interval.

    Examples
    --------
    >>> from skgp_bayes._predictive_contract import check_coverage
    >>> check_coverage(0.9)
    array([0.05, 0.95])
    """
    if not np.isscalar(coverage) or not 0.0 < float(coverage) < 1.0:
        raise ValueError(
            f"coverage must lie strictly between 0 and 1; got {coverage!r}."
        )
    tail = 0.5 * (1.0 - float(coverage))
    return np.array([tail, 1.0 - tail])


def check_targets(y, n_rows, n_targets=None):
    """``y`` as a finite float vector of length ``n_rows``.

    With ``n_targets`` (a multi-output fit), ``y`` must have shape
    ``(n_rows, n_targets)`` instead.

    Examples
    --------
    >>> from skgp_bayes._predictive_contract import check_targets
    >>> check_targets([1, 2], 2)
    array([1., 2.])
    >>> check_targets([[1, 2]], 1, n_targets=2)
    array([[1., 2.]])
    """
    if n_targets is None:
        y = np.asarray(y, dtype=np.float64).reshape(-1)
    else:
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 2 or y.shape[1] != n_targets:
            raise ValueError(
                f"y must have shape (n_samples, {n_targets}) for an estimator "
                f"fitted on {n_targets} targets; got shape {y.shape}."
            )
    if y.shape[0] != n_rows:
        raise ValueError(
            "Found input variables with inconsistent numbers of samples: "
            f"[{n_rows}, {y.shape[0]}]"
        )
    if not np.all(np.isfinite(y)):
        raise ValueError("Input y contains NaN or infinity.")
    return y


# ------------------------------------------------------------ regressors
class RegressorContractMixin:
    """``predict_quantiles``, ``predict_interval`` and ``log_predictive_density``.

    The estimator provides ``_validate_query(X)`` and
    ``_observation_predictive(X)``, the predictive of a noisy observation at
    validated query points (a :class:`GaussianMixturePredictive` or
    :class:`PoissonMixturePredictive`).
    """

    @public_method
    def predict_quantiles(self, X, quantiles=DEFAULT_QUANTILES):
        """Quantiles of the posterior predictive of a noisy observation ``y``.

        The predictive is the equally weighted mixture, over the posterior
        draws, of each draw's distribution of ``y`` (latent function plus
        that draw's observation noise); its quantiles are found by Newton
        steps on the mixture's distribution function, kept inside a
        shrinking bracket, to a relative error of about 1e-13.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.
        quantiles : float or sequence of float, default=(0.05, 0.5, 0.95)
            Levels strictly between 0 and 1.

        Returns
        -------
        ndarray of shape (n_samples, n_quantiles)
            In the units of ``y``; non-decreasing along each row when the
            levels are. ``(n_samples, n_targets, n_quantiles)``, each
            target's marginal, for an estimator fitted on several targets.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, max_iter=20, random_state=0)
        >>> q = reg.fit(X, y).predict_quantiles(X[:2], quantiles=[0.1, 0.5, 0.9])
        >>> q.shape, bool(np.all(np.diff(q, axis=1) > 0))
        ((2, 3), True)
        """
        levels = check_quantiles(quantiles)
        return self._observation_predictive(self._validate_query(X)).quantiles(levels)

    @public_method
    def predict_interval(self, X, coverage=0.9):
        """Central predictive interval of a noisy observation ``y``.

        The interval between the ``(1 - coverage) / 2`` and ``(1 + coverage)
        / 2`` quantiles of :meth:`predict_quantiles`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        coverage : float, default=0.9
            Probability the interval holds under the predictive.

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
            ``(n_samples, n_targets)`` for an estimator fitted on several
            targets.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, max_iter=20, random_state=0)
        >>> lower, upper = reg.fit(X, y).predict_interval(X[:3], coverage=0.9)
        >>> bool(np.all(lower < upper))
        True
        """
        levels = check_coverage(coverage)
        bounds = self._observation_predictive(self._validate_query(X)).quantiles(levels)
        return bounds[..., 0], bounds[..., 1]

    @public_method
    def log_predictive_density(self, X, y):
        """Log posterior predictive density of each noisy observation.

        ``log p(y_i | data) = log (1/S) sum_s p(y_i | draw s)``, with the
        latent function integrated out under each draw and that draw's
        observation noise included; in the units of ``y``, so that a change
        of units ``y -> a y + b`` shifts it by ``-log |a|``. Average it for
        the test mean log predictive density.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            ``(n_samples, n_targets)`` for an estimator fitted on several
            targets: the density is then that of each row's targets
            jointly, under the draw they share.

        Returns
        -------
        ndarray of shape (n_samples,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes import SteinGPRegressor
        >>> rng = np.random.RandomState(0)
        >>> X = rng.uniform(-3, 3, (30, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(30)
        >>> reg = SteinGPRegressor(n_particles=4, random_state=0).fit(X, y)
        >>> lpd = reg.log_predictive_density(X, y)
        >>> lpd.shape, bool(lpd.mean() > 0)  # noise sd is 0.1
        ((30,), True)
        """
        X = self._validate_query(X)
        predictive = self._observation_predictive(X)
        y = check_targets(y, X.shape[0], getattr(predictive, "n_targets", None))
        return predictive.logpdf(y)


# ----------------------------------------------------------- classifiers
def binary_log_odds(likelihood, means, variances, threads=1):
    """Log odds of class 1 under the draw-averaged predictive.

    ``log mean_s P_s(y=1) - log mean_s P_s(y=0)``, from each draw's log
    probabilities (``likelihood.log_predictive_density``), so that it stays
    finite where a probability underflows.

    Parameters
    ----------
    likelihood : skgp_bayes.likelihoods.Bernoulli
    means, variances : ndarray of shape (S, m)
        Per-draw latent moments.
    threads : int, default=1
        Threads for the per-draw probabilities
        (:meth:`~skgp_bayes.likelihoods.Bernoulli.log_class_probabilities`).

    Returns
    -------
    ndarray of shape (m,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes._predictive_contract import binary_log_odds
    >>> d = binary_log_odds(Bernoulli(link="probit"), np.full((1, 1), 40.0),
    ...                     np.zeros((1, 1)))
    >>> bool(d[0] > 700)  # P(y=0) = Phi(-40) underflows exp, not its log
    True
    """
    S, m = means.shape
    lp = likelihood.log_class_probabilities(
        means.ravel(), variances.ravel(), threads=threads
    )
    lp = lp.reshape(S, m, 2)
    summed = _log_sum_exp_over_draws(lp)
    return summed[:, 1] - summed[:, 0]


def _log_sum_exp_over_draws(values):
    """``log sum_s exp(values[s])`` over the first axis, both classes at once.

    One pass for each step over the ``(S, m, 2)`` array: SciPy's
    ``logsumexp`` of each column's strided slice copied and cast it first,
    0.137 s against 0.046 s for 5,796 draws of 724 rows (results within
    2e-15). The values are log probabilities, so at most 0; a column that
    is ``-inf`` for every draw stays ``-inf``.
    """
    top = values.max(axis=0)
    top[~np.isfinite(top)] = 0.0
    shifted = values - top
    np.exp(shifted, out=shifted)
    with np.errstate(divide="ignore"):
        return np.log(shifted.sum(axis=0)) + top


def proba_from_log_odds(log_odds, log=False):
    """Two-class (log) probabilities ``(m, 2)`` from the log odds of class 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._predictive_contract import proba_from_log_odds
    >>> proba_from_log_odds(np.array([0.0]))
    array([[0.5, 0.5]])
    """
    if log:
        return np.column_stack([log_expit(-log_odds), log_expit(log_odds)])
    return np.column_stack([expit(-log_odds), expit(log_odds)])


def log_of_proba(proba):
    """``log(proba)``, with ``-inf`` for a probability of exactly 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._predictive_contract import log_of_proba
    >>> log_of_proba(np.array([[1.0, 0.0]]))
    array([[  0., -inf]])
    """
    with np.errstate(divide="ignore"):
        return np.log(proba)


def has_two_classes(estimator):
    """Whether ``decision_function`` exists: two classes, or not fitted yet.

    Unfitted, the method is exposed so that calling it raises
    ``NotFittedError``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from skgp_bayes._predictive_contract import has_two_classes
    >>> has_two_classes(SimpleNamespace(classes_=[0, 1]))
    True
    """
    return not hasattr(estimator, "classes_") or len(estimator.classes_) == 2


# ------------------------------------------------------------ attributes
def draws_alias(source):
    """A read-only ``draws_`` property that returns ``self.<source>``.

    ``draws_`` names, on every estimator with a sampled posterior, the
    equally weighted draws that predictions average over, shape
    ``(n_draws, n_params)``, columns ``param_names_``; an engine's own name
    for them (``particles_``) stays.

    Examples
    --------
    >>> from skgp_bayes._predictive_contract import draws_alias
    >>> class Fitted:
    ...     particles_ = [[0.0, 1.0]]
    ...     draws_ = draws_alias("particles_")
    >>> Fitted().draws_
    [[0.0, 1.0]]
    """

    def getter(self):
        return getattr(self, source)

    getter.__doc__ = f"""Posterior draws predictions average over: ``{source}``.

    Shape ``(n_draws, n_params)``, log coordinates, columns ``param_names_``;
    ``kernels_[s]`` and ``noise_variance_[s]`` (regressors) go with row ``s``.

    Examples
    --------
    >>> {source!r}.endswith("_")
    True
    """
    return property(getter)


def fit_time_from_diagnostics(**phases):
    """A read-only ``fit_time_`` property from ``diagnostics_``.

    ``fit_time_`` is, on every estimator, a dict of seconds with the key
    ``"total"`` and one key per phase; here ``"total"`` is
    ``diagnostics_["fit_time"]`` and each keyword maps a phase to its
    ``diagnostics_`` key.

    Examples
    --------
    >>> from skgp_bayes._predictive_contract import fit_time_from_diagnostics
    >>> class Fitted:
    ...     diagnostics_ = {"fit_time": 2.0, "init_time": 0.5}
    ...     fit_time_ = fit_time_from_diagnostics(init="init_time")
    >>> Fitted().fit_time_
    {'total': 2.0, 'init': 0.5}
    """

    def getter(self):
        diagnostics = self.diagnostics_
        times = {"total": diagnostics["fit_time"]}
        times.update({k: diagnostics[v] for k, v in phases.items() if v in diagnostics})
        return times

    getter.__doc__ = """Seconds spent fitting: ``{"total": ...}`` and per phase.

    Examples
    --------
    >>> sorted({"total": 1.0})
    ['total']
    """
    return property(getter)


def deprecated_alias(old, new, note=""):
    """A read-only property ``old`` that warns and returns ``self.<new>``.

    Parameters
    ----------
    old, new : str
        The fitted attribute's former and current names.
    note : str, default=""
        Appended to the warning (what else changed).

    Returns
    -------
    property

    Examples
    --------
    >>> import warnings
    >>> from skgp_bayes._predictive_contract import deprecated_alias
    >>> class Fitted:
    ...     draws_ = 3
    ...     samples_ = deprecated_alias("samples_", "draws_")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     value = Fitted().samples_
    >>> value, caught[0].category.__name__
    (3, 'FutureWarning')
    """

    def getter(self):
        value = getattr(self, new)  # unfitted: AttributeError, no warning
        warn_user(
            f"{type(self).__name__}.{old} is deprecated and will be removed in a "
            f"future release; use {new}, which holds the same value.{note}",
            FutureWarning,
        )
        return value

    getter.__doc__ = f"""Deprecated name of ``{new}``; reading it warns.

    Examples
    --------
    >>> {new!r}.endswith("_")
    True
    """
    return property(getter)


def per_chain_samples(n_chains_from="step_size_"):
    """A read-only ``samples_`` property: ``draws_`` split by chain.

    The kept draws of an MCMC estimator stored pooled in ``draws_``,
    ``(n_chains * n_kept, n_params)`` with each chain's draws contiguous,
    read back as ``(n_chains, n_kept, n_params)`` (a view, no copy). The
    first read on an estimator announces, with a ``FutureWarning``, that
    ``samples_`` used to be the pooled array.

    Parameters
    ----------
    n_chains_from : str, default="step_size_"
        A fitted attribute with one entry per chain.

    Returns
    -------
    property

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skgp_bayes._predictive_contract import per_chain_samples
    >>> class Fitted:
    ...     draws_ = np.arange(12.0).reshape(6, 2)
    ...     step_size_ = np.ones(2)
    ...     samples_ = per_chain_samples()
    >>> fitted = Fitted()
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     first, again = fitted.samples_, fitted.samples_
    >>> first.shape, len(caught), caught[0].category.__name__
    ((2, 3, 2), 1, 'FutureWarning')
    """

    def getter(self):
        flat = self.draws_  # unfitted: AttributeError, no warning
        n_chains = len(getattr(self, n_chains_from))
        # Announced once per estimator: code that loops over samples_
        # should not drown its own output in the same warning.
        if not self.__dict__.get("_samples_shape_announced", False):
            self.__dict__["_samples_shape_announced"] = True
            warn_user(
                f"{type(self).__name__}.samples_ now has shape (n_chains, "
                "n_kept, n_params), one row of draws per chain, as on "
                "SGLDGPRegressor; it used to be the pooled (n_chains * n_kept, "
                "n_params) array, which is draws_.",
                FutureWarning,
            )
        return flat.reshape(n_chains, -1, flat.shape[1])

    getter.__doc__ = """Kept draws per chain, ``(n_chains, n_kept, n_params)``.

    The same draws as ``draws_``, split by chain (a view); the first read
    warns that the shape changed from the pooled ``draws_`` layout.

    Examples
    --------
    >>> import numpy as np
    >>> np.arange(12.0).reshape(6, 2).reshape(2, -1, 2).shape
    (2, 3, 2)
    """
    return property(getter)


def sparse_latent_covariances(adapter, Z, jitter, thetas, v, v_cov_factor, X):
    """Means ``(S, k)`` and covariances ``(S, k, k)`` of latent 0 per draw.

    Draw ``s`` of a whitened sparse GP gives ``f(X) ~ N(A' v_s, K(X, X) -
    A'A [+ A' S A])`` with ``A = R_s^-1 K(Z, X)``; the bracketed term is
    that of a Gaussian ``q(v) = N(v, L L')`` with ``v_cov_factor = L``
    (then ``S = 1``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes._predictive_contract import sparse_latent_covariances
    >>> Z = np.linspace(0, 1, 3)[:, None]
    >>> means, covs = sparse_latent_covariances(
    ...     KernelAdapter(RBF()), Z, 1e-6, np.zeros((2, 1)), np.zeros((2, 3, 1)),
    ...     None, Z[:2])
    >>> means.shape, covs.shape
    ((2, 2), (2, 2, 2))
    """
    S, k = thetas.shape[0], X.shape[0]
    means = np.empty((S, k))
    covs = np.empty((S, k, k))
    for s in range(S):
        R = inducing_factor(adapter, thetas[s], Z, jitter)
        A, _, _ = project(adapter, thetas[s], Z, X, R)
        cov = adapter.gram(thetas[s], X) - A.T @ A
        if v_cov_factor is not None:
            B = v_cov_factor.T @ A
            cov += B.T @ B
        covs[s] = 0.5 * (cov + cov.T)
        means[s] = A.T @ v[s, :, 0]
    return means, covs
