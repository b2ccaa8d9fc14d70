"""Predictive distributions of equally weighted mixtures over posterior draws:
``predict``'s moments, and the densities, CDFs and quantiles of Gaussian
and Poisson (log-normal rate) mixtures behind the prediction contract of
``skgp_bayes._predictive_contract``."""

import numpy as np
from scipy.special import logsumexp, ndtr, ndtri, pdtr

from ..likelihoods import gauss_hermite
from ..linalg.diagonal import add_to_diagonal
from ._poisson_numba import MAX_COUNT, mixture_poisson_cdf
from .mixture import (
    mixture_log_density,
    mixture_mean_cov,
    mixture_mean_var,
)

__all__ = [
    "GaussianMixturePredictive",
    "MultiTargetPredictive",
    "PoissonMixturePredictive",
    "gaussian_mixture_quantiles",
    "lognormal_rate_prediction",
    "mixture_prediction",
    "stack_target_columns",
]

# Newton steps on the mixture CDF; each at least halves the bracket, so 200
# reach the resolution of a double from any bracket.
_MAX_NEWTON = 200
# Relative change of a quantile below which the iteration stops: the
# contract promises about 1e-10.
_QUANTILE_RTOL = 1e-13
# Gauss-Hermite nodes for the Poisson CDF of a log-normal rate.
_POISSON_CDF_NODES = 64
# Upper end of the integer search for a Poisson quantile (2**62 counts).
_POISSON_MAX_DOUBLINGS = 62


def mixture_prediction(draws, return_std=False, return_cov=False, noise=False):
    """``predict``'s return value from per-draw latent moments.

    Parameters
    ----------
    draws : LatentDraws
        ``spread`` holds covariances when ``return_cov``, else variances.
    return_std, return_cov : bool
        At most one may be set.
    noise : bool, default=False
        Add each draw's noise variance: the spread of a noisy observation
        instead of that of the latent function.

    Returns
    -------
    mean : ndarray of shape (m,)
    std : ndarray of shape (m,), only with ``return_std``
    cov : ndarray of shape (m, m), only with ``return_cov``

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._predictive_contract import LatentDraws
    >>> from skgp_bayes.predictive._distributions import mixture_prediction
    >>> draws = LatentDraws(np.array([[-1.0], [1.0]]), np.ones((2, 1)),
    ...                     np.array([2.0, 2.0]), 0.0, 1.0)
    >>> mixture_prediction(draws, return_std=True)  # sqrt(1 + 1)
    (array([0.]), array([1.41421356]))
    >>> mixture_prediction(draws, return_std=True, noise=True)[1]  # sqrt(2 + 2)
    array([2.])
    """
    if return_std and return_cov:
        raise RuntimeError("At most one of return_std or return_cov can be requested.")
    means, spread, noise_var = draws.means, draws.spread, draws.noise_variances
    scale = draws.scale
    if return_cov:
        if noise:
            m = means.shape[1]
            spread = spread + noise_var[:, None, None] * np.eye(m)[None]
        mean, cov = mixture_mean_cov(means, spread)
        return draws.offset + scale * mean, cov * scale**2
    if noise:
        spread = spread + noise_var[:, None]
    mean, var = mixture_mean_var(means, spread)
    mean = draws.offset + scale * mean
    if return_std:
        return mean, np.sqrt(var) * abs(scale)
    return mean


def _cdf_minus_levels(x, means, sds, levels, upper):
    """``F(x) - q`` of the mixture, from the survival side above the median."""
    u = (x[None] - means[..., None]) / sds[..., None]
    lower_gap = ndtr(u).mean(axis=0) - levels
    upper_gap = (1.0 - levels) - ndtr(-u).mean(axis=0)
    density = np.mean(np.exp(-0.5 * u * u) / sds[..., None], axis=0)
    density /= np.sqrt(2.0 * np.pi)
    return np.where(upper, upper_gap, lower_gap), density


def gaussian_mixture_quantiles(levels, means, sds):
    """Quantiles of equally weighted Gaussian mixtures, one per column.

    The ``q``-quantile of the mixture lies between the smallest and the
    largest ``q``-quantile of its components (the mixture's CDF is their
    average); Newton steps on the CDF are kept inside that bracket, which
    shrinks at every step, and replaced by bisection when they would leave
    it. The iteration stops at a relative change of 1e-13.

    Parameters
    ----------
    levels : ndarray of shape (q,)
    means, sds : ndarray of shape (S, m)

    Returns
    -------
    ndarray of shape (m, q)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive._distributions import gaussian_mixture_quantiles
    >>> q = gaussian_mixture_quantiles(
    ...     np.array([0.5, 0.975]), np.array([[-1.0], [1.0]]), np.ones((2, 1)))
    >>> np.round(q, 4) + 0.0  # the median by symmetry; F(2.6461) = 0.975
    array([[0.    , 2.6461]])
    """
    sds = np.maximum(sds, np.finfo(np.float64).tiny)
    component = means[..., None] + sds[..., None] * ndtri(levels)
    lo, hi = component.min(axis=0), component.max(axis=0)
    x = component.mean(axis=0)
    upper = np.broadcast_to(levels > 0.5, x.shape)
    size = np.maximum(np.abs(means).max(axis=0), sds.max(axis=0))[:, None]
    for _ in range(_MAX_NEWTON):
        gap, density = _cdf_minus_levels(x, means, sds, levels, upper)
        below = gap < 0.0
        lo = np.where(below, x, lo)
        hi = np.where(below, hi, x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            step = x - gap / density
        tolerance = _QUANTILE_RTOL * (np.abs(x) + size)
        # A Newton step within the tolerance has converged, also where it
        # lands on an end of the bracket (after the gap's sign made x that
        # end, a step of zero does): bisecting there instead moved x half
        # the bracket away, and on a variational MCMC fit's 309 x 2
        # quantiles of 1,568-draw mixtures 175 of them then took some 40
        # further halvings (49 passes over the draws instead of 10).
        converged = np.abs(step - x) <= tolerance
        inside = (step > lo) & (step < hi)
        new = np.where(inside | converged, step, 0.5 * (lo + hi))
        settled = np.abs(new - x) <= tolerance
        x = new
        if np.all(settled | (lo == hi)):
            break
    return x


class GaussianMixturePredictive:
    """Predictive of a noisy observation: a Gaussian per draw, equally weighted.

    Parameters
    ----------
    means, variances : ndarray of shape (S, m)
        Per-draw mean and total variance (latent plus noise), model scale.
    offset, scale : float
        ``y = offset + scale * value``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive._distributions import GaussianMixturePredictive
    >>> mix = GaussianMixturePredictive(np.zeros((1, 1)), np.ones((1, 1)), 10.0, 2.0)
    >>> np.round(mix.quantiles(np.array([0.5, 0.975])), 4)
    array([[10.    , 13.9199]])
    """

    def __init__(self, means, variances, offset=0.0, scale=1.0):
        self.means = means
        self.variances = variances
        self.offset = float(offset)
        self.scale = float(scale)

    @classmethod
    def from_draws(cls, draws):
        """The noisy-observation mixture of :class:`LatentDraws` (variances).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes._predictive_contract import LatentDraws
        >>> from skgp_bayes.predictive._distributions import GaussianMixturePredictive
        >>> draws = LatentDraws(np.zeros((2, 1)), np.ones((2, 1)), np.ones(2), 0.0, 1.0)
        >>> GaussianMixturePredictive.from_draws(draws).variances
        array([[2.],
               [2.]])
        """
        variances = draws.spread + draws.noise_variances[:, None]
        return cls(draws.means, variances, draws.offset, draws.scale)

    def logpdf(self, y):
        """``log p(y_i)`` per point, in the units of ``y``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.predictive._distributions import GaussianMixturePredictive
        >>> mix = GaussianMixturePredictive(np.zeros((1, 1)), np.ones((1, 1)))
        >>> np.round(mix.logpdf(np.zeros(1)), 6)
        array([-0.918939])
        """
        y_model = (np.asarray(y, dtype=np.float64) - self.offset) / self.scale
        density = mixture_log_density(y_model, self.means, self.variances)
        return density - np.log(abs(self.scale))

    def cdf(self, y):
        """``P(Y_i <= y_i)`` per point.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.predictive._distributions import GaussianMixturePredictive
        >>> GaussianMixturePredictive(np.zeros((1, 1)), np.ones((1, 1))).cdf([0.0])
        array([0.5])
        """
        y_model = (np.asarray(y, dtype=np.float64) - self.offset) / self.scale
        return ndtr((y_model - self.means) / np.sqrt(self.variances)).mean(axis=0)

    def quantiles(self, levels):
        """Quantiles ``(m, q)`` at the levels ``(q,)``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.predictive._distributions import GaussianMixturePredictive
        >>> mix = GaussianMixturePredictive(np.zeros((1, 1)), np.ones((1, 1)))
        >>> mix.quantiles(np.array([0.5]))
        array([[0.]])
        """
        x = gaussian_mixture_quantiles(levels, self.means, np.sqrt(self.variances))
        if self.scale < 0:
            x = x[:, ::-1]  # never met: target scales are positive
        return self.offset + self.scale * x


class MultiTargetPredictive:
    """Predictive of a row of targets that share each draw's hyperparameters.

    Given a draw the targets are independent Gaussians; over the draws they
    are not, since every target of a row follows the same draw. The joint
    density of a row is therefore the mixture, over the draws, of the
    product of the targets' densities, and a single target's marginal is
    the mixture of :class:`GaussianMixturePredictive` alone.

    Parameters
    ----------
    columns : list of GaussianMixturePredictive
        One per target, over the same draws.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive._distributions import (
    ...     GaussianMixturePredictive, MultiTargetPredictive)
    >>> one = GaussianMixturePredictive(np.zeros((1, 2)), np.ones((1, 2)))
    >>> both = MultiTargetPredictive([one, one])
    >>> both.quantiles(np.array([0.5])).shape  # (points, targets, levels)
    (2, 2, 1)
    >>> np.round(both.logpdf(np.zeros((2, 2))), 6)  # two N(0, 1) at 0
    array([-1.837877, -1.837877])
    """

    def __init__(self, columns):
        self.columns = list(columns)
        self.n_targets = len(self.columns)

    def logpdf(self, y):
        """``log p(y_i1, ..., y_it)`` per row ``(m,)``, in the units of ``y``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.predictive._distributions import (
        ...     GaussianMixturePredictive, MultiTargetPredictive)
        >>> col = GaussianMixturePredictive(np.array([[-1.0], [1.0]]), np.ones((2, 1)))
        >>> joint = MultiTargetPredictive([col, col]).logpdf(np.array([[1.0, 1.0]]))
        >>> bool(joint[0] > 2 * col.logpdf(np.array([1.0]))[0])  # rows follow a draw
        True
        """
        y = np.asarray(y, dtype=np.float64)
        total = 0.0
        for c, col in enumerate(self.columns):
            z = (y[:, c] - col.offset) / col.scale
            total = total - 0.5 * (
                np.log(2.0 * np.pi * col.variances)
                + (z - col.means) ** 2 / col.variances
            )
            total = total - np.log(abs(col.scale))
        return logsumexp(total, axis=0) - np.log(self.columns[0].means.shape[0])

    def cdf(self, y):
        """Each target's marginal ``P(Y_ic <= y_ic)``, shape ``(m, t)``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.predictive._distributions import (
        ...     GaussianMixturePredictive, MultiTargetPredictive)
        >>> col = GaussianMixturePredictive(np.zeros((1, 1)), np.ones((1, 1)))
        >>> MultiTargetPredictive([col, col]).cdf(np.zeros((1, 2)))
        array([[0.5, 0.5]])
        """
        y = np.asarray(y, dtype=np.float64)
        return np.stack([col.cdf(y[:, c]) for c, col in enumerate(self.columns)], 1)

    def quantiles(self, levels):
        """Each target's marginal quantiles, shape ``(m, t, q)``.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.predictive._distributions import (
        ...     GaussianMixturePredictive, MultiTargetPredictive)
        >>> col = GaussianMixturePredictive(np.zeros((1, 1)), np.ones((1, 1)))
        >>> MultiTargetPredictive([col]).quantiles(np.array([0.5]))
        array([[[0.]]])
        """
        return np.stack([col.quantiles(levels) for col in self.columns], axis=1)


def stack_target_columns(columns, with_spread):
    """One ``predict`` result from the per-target ones, as scikit-learn's.

    Means and standard deviations become ``(m, t)``, covariances
    ``(m, m, t)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive._distributions import stack_target_columns
    >>> mean, std = stack_target_columns(
    ...     [(np.zeros(3), np.ones(3)), (np.ones(3), np.ones(3))], True)
    >>> mean.shape, std.shape
    ((3, 2), (3, 2))
    """
    if not with_spread:
        return np.stack(columns, axis=-1)
    means, spreads = zip(*columns, strict=True)
    return np.stack(means, axis=-1), np.stack(spreads, axis=-1)


# ------------------------------------------------------ Poisson mixtures
def lognormal_rate_prediction(
    means, spread, return_std=False, return_cov=False, noise=False
):
    """``predict`` for a Poisson mixture: the expected count and its spread.

    Each draw gives a log-normal rate ``lambda = exp(f)``, ``f ~ N(mu,
    C)``; the mean is ``E[lambda]`` averaged over draws and the spread is
    that of ``lambda`` (the latent quantity); ``noise=True`` adds the
    Poisson variance ``E[lambda]`` of a count.

    Parameters
    ----------
    means : ndarray of shape (S, m)
        Latent log-rate means, exposure included.
    spread : ndarray of shape (S, m) or (S, m, m)
        Latent variances, or covariances with ``return_cov``.

    Returns
    -------
    As :func:`mixture_prediction`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive._distributions import lognormal_rate_prediction
    >>> mean, std = lognormal_rate_prediction(
    ...     np.zeros((1, 1)), np.zeros((1, 1)), return_std=True, noise=True)
    >>> mean, std  # a known rate of 1: the count's sd is 1
    (array([1.]), array([1.]))
    """
    if return_std and return_cov:
        raise RuntimeError("At most one of return_std or return_cov can be requested.")
    var = np.einsum("sii->si", spread) if return_cov else spread
    rate = np.exp(means + 0.5 * var)
    mean = rate.mean(axis=0)
    if return_cov:
        # Cov(lambda_i, lambda_k) = E[lambda_i] E[lambda_k] (exp(C_ik) - 1)
        second = np.einsum("si,sk->sik", rate, rate) * np.exp(spread)
        cov = second.mean(axis=0) - np.outer(mean, mean)
        if noise:
            add_to_diagonal(cov, mean)
        return mean, cov
    if not return_std:
        return mean
    second = np.exp(2.0 * means + 2.0 * var).mean(axis=0)
    total = np.maximum(second - mean**2, 0.0) + (mean if noise else 0.0)
    return mean, np.sqrt(total)


def _pdtr_mixture(k, mu, sd, nodes, weights):
    """:func:`mixture_poisson_cdf` by SciPy's ``pdtr``, for any count and rate."""
    with np.errstate(over="ignore"):
        rate = np.exp(mu[:, :, None, None] + sd[:, :, None, None] * nodes)
    below = np.where(k[..., None] < 0, 0.0, pdtr(np.maximum(k, 0)[..., None], rate))
    return (below @ weights).mean(axis=0)


class PoissonMixturePredictive:
    """Predictive of a count: Poisson with a log-normal rate per draw.

    Parameters
    ----------
    means, variances : ndarray of shape (S, m)
        Latent log-rate moments per draw (exposure included).
    likelihood : skgp_bayes.likelihoods.Poisson
        Its adaptive quadrature gives the log probabilities.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.likelihoods import Poisson
    >>> from skgp_bayes.predictive._distributions import PoissonMixturePredictive
    >>> mix = PoissonMixturePredictive(np.full((1, 1), np.log(3.0)),
    ...                                np.zeros((1, 1)), Poisson())
    >>> mix.quantiles(np.array([0.5]))  # the median of Poisson(3)
    array([[3.]])
    """

    def __init__(self, means, variances, likelihood):
        self.means = means
        self.variances = variances
        self.likelihood = likelihood

    def logpdf(self, y):
        """``log P(Y_i = y_i)`` per point.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> from skgp_bayes.predictive._distributions import PoissonMixturePredictive
        >>> mix = PoissonMixturePredictive(np.zeros((1, 1)), np.zeros((1, 1)),
        ...                                Poisson())
        >>> np.round(mix.logpdf(np.zeros(1)), 6)  # log P(0) = -1 for rate 1
        array([-1.])
        """
        y = np.broadcast_to(np.asarray(y, dtype=np.float64), self.means.shape)
        per_draw = self.likelihood.log_predictive_density(y, self.means, self.variances)
        return logsumexp(per_draw, axis=0) - np.log(self.means.shape[0])

    def cdf(self, k):
        """``P(Y_i <= k_i)`` per point (``k`` of shape (m,) or (m, q)).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> from skgp_bayes.predictive._distributions import PoissonMixturePredictive
        >>> mix = PoissonMixturePredictive(np.zeros((1, 1)), np.zeros((1, 1)),
        ...                                Poisson())
        >>> np.round(mix.cdf(np.zeros(1)), 6)  # exp(-1)
        array([0.367879])
        """
        k = np.floor(np.asarray(k, dtype=np.float64))
        columns = k.reshape(k.shape[0], -1)
        nodes, weights = gauss_hermite(_POISSON_CDF_NODES)
        sd = np.sqrt(self.variances)
        out = np.full(columns.shape, np.nan)
        short = columns.max(axis=1) <= MAX_COUNT
        if np.any(short):
            out[short] = mixture_poisson_cdf(
                np.ascontiguousarray(columns[short]),
                np.ascontiguousarray(self.means[:, short]),
                np.ascontiguousarray(sd[:, short]),
                nodes,
                weights,
            )
        rest = ~short  # long sums: pdtr's continued fraction
        if np.any(rest):
            out[rest] = _pdtr_mixture(
                columns[rest], self.means[:, rest], sd[:, rest], nodes, weights
            )
        return out.reshape(k.shape)

    def quantiles(self, levels):
        """Smallest counts ``k`` with ``P(Y <= k) >= q``: shape (m, q).

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.likelihoods import Poisson
        >>> from skgp_bayes.predictive._distributions import PoissonMixturePredictive
        >>> mix = PoissonMixturePredictive(np.zeros((1, 1)), np.zeros((1, 1)),
        ...                                Poisson())
        >>> mix.quantiles(np.array([0.05, 0.5, 0.95]))
        array([[0., 1., 3.]])
        """
        m = self.means.shape[1]
        target = np.broadcast_to(levels, (m, levels.size))
        lo = np.full(target.shape, -1.0)  # P(Y <= -1) = 0 < q
        hi = np.ones(target.shape)
        for _ in range(_POISSON_MAX_DOUBLINGS):
            short = self.cdf(hi) < target
            if not np.any(short):
                break
            lo = np.where(short, hi, lo)
            hi = np.where(short, 2.0 * hi, hi)
        while np.any(hi - lo > 1.0):
            mid = np.floor(0.5 * (lo + hi))
            enough = self.cdf(mid) >= target
            hi = np.where(enough, mid, hi)
            lo = np.where(enough, lo, mid)
        return hi
