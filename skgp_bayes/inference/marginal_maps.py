"""Elementwise sinh maps that make skewed marginals closer to normal.

A metric, dense or diagonal, is a linear change of variables: it can make
a density's covariance the identity (:mod:`.affine`) but not a skewed
marginal symmetric. HMC then has to cross a long tail with the step that
the sharp side allows. Log length scales of Gaussian-process models are
often like that: a steep side where the function would have to wiggle, a
long side towards an input that no longer matters. On the US
macroeconomic series of the defaults suite (142 rows, five inputs) one log
length scale had skewness 2.4 and 540 effective draws in 22,500 gradients
(2.4 per 100), where the median coordinate had 2,800 (12 per 100).

The maps are those of Johnson's S_U family (Johnson, 1949), which takes a
standard normal to ``sinh`` of an affine function of it: one side of the
density stretched exponentially more than the other. Written in ``x``'s
own units, with ``r = (s - mu) / sigma`` and ``u = rate r + skew``,

``x(s) = mu + sigma (sinh(u) - sinh(skew)) / (rate cosh(skew))``,

with slope ``x'(s) = cosh(u) / cosh(skew)``: 1 at ``s = mu``, the identity
in the limit ``rate -> 0``, and a smooth increasing bijection of the real
line for every ``rate > 0``. ``skew > 0`` stretches the right side (a
long right tail in ``x`` becomes a normal one in ``s``), ``rate`` sets how
fast. A sampler on ``s`` sees the density ``p_x(x(s)) x'(s)`` (the
Jacobian in :func:`~._marginal_maps_numba.map_forward`); its draws mapped
by ``x(s)`` are draws of ``p_x``, whatever the map, so a map fitted to a
few hundred warm-up draws and then held fixed changes how well the chains
mix, not what they sample.

Why this family: a long tail of a log length scale is itself roughly
exponential in the log (the likelihood flattens as the input stops
mattering, and the prior's normal tail takes over only far out). Maps of
this family fitted to 300 draws, then the affine refinement, raised the
effective draws per gradient of the slowest coordinate from 6.1 to 50 per
1,000 on that macroeconomic posterior and from 4.7 to 9.3 on the breast
cancer classifier's (one run each, against the affine refinement from all
of a long run's draws); the sinh-arcsinh family of Jones and Pewsey
(2009), whose tails grow only as a power, gained 4-40% on the second.

:func:`fit_marginal_maps` fits ``(mu, log sigma, skew, rate)`` to the
draws of each coordinate by maximum likelihood, with ``rate`` in ``[0.02,
2]`` and ``skew`` in ``[-8, 8]``, so that a few hundred draws cannot make a
wild map. A large ``skew`` is the log-normal limit of the family (the
slope ``cosh(u) / cosh(skew)`` is close to ``exp(rate r)`` over the draws'
range); held in ``[-3, 3]``, most of the breast cancer classifier's length
scales stopped on that bound. In that limit the likelihood is flat along
the skew: on a warm-up's 300 draws of one of Boston's log length scales it
rose by 0.002 nats from skew 3 to 8, where the maps agree over the draws
and part beyond them (towards 8 the short side approaches a floor in
``x``, whose neighbourhood the chains' coordinates then stretch without
limit). Each coordinate's fit therefore maximises the likelihood less
``skew^2 / (2 * 4^2)``: where the data are flat it takes the least extreme
map, and it costs 0.28 nats at a skew of 3 and 2 at the bound, small
against the 4.6 nats of likelihood the test below asks of a map, so that
it decides a tie and not whether a coordinate is mapped (the test reads
the likelihood alone at the fitted map). The likelihood is counted there
in effective draws, as the test counts it (times ``ESS / n``): a warm-up's
300 draws of a slow coordinate hold some tens of independent ones, and
the penalty weighs against what they hold. A coordinate keeps its map
only where the likelihood-ratio statistic against the normal, counted in
effective rather than nominal draws (the draws of a chain are correlated),
exceeds the 1% point of the chi-squared with two degrees of freedom: a
symmetric coordinate is left alone rather than bent by noise.

Like the samplers, nothing here knows about Gaussian processes.
"""

import numpy as np

from ._marginal_maps_numba import map_forward
from .optimize import maximize

__all__ = ["MarginalMapTarget", "SinhMaps", "fit_marginal_maps"]

# Parameter limits of a fitted map (module notes).
_SKEW_LIMIT = 8.0
_RATE_LIMITS = (0.02, 2.0)
# Scale of the normal penalty on a fitted skew (module notes).
_SKEW_SCALE = 4.0
# Likelihood-ratio threshold: the 1% point of chi-squared with 2 degrees
# of freedom, the two shape parameters the normal lacks.
_LR_THRESHOLD = 9.21
# Coordinates with fewer effective draws than this are not fitted: four
# parameters from fewer points say little about a tail.
MIN_EFFECTIVE_DRAWS = 30.0
# The most draws a fit reads: longer chains are thinned by an even stride.
# The test counts in effective draws and the run-length rule asks for 100 to
# 400 of them, so a stride that keeps this many keeps every effective draw
# there is to keep, while each evaluation of the fit's likelihood costs in
# draws: an SGLD fit on 11 rows spent 0.76 of its 1.2 s fitting maps to the
# 24,000 draws of two long chains, block after block.
_MOST_DRAWS = 4096
# Below that, each coordinate reads this many draws per effective draw
# (ESS), at least _LEAST_DRAWS: a stride of a quarter of the chains'
# autocorrelation time ``n / ESS`` keeps nearly all the effective draws
# (97% for a chain whose correlations fall geometrically, as an AR(1)'s:
# at an autocorrelation time of 40 a stride of 10 leaves correlations of
# 0.6 and a time of 4.1 between the kept draws), and the fit and its test
# count the likelihood in effective draws, so reading more says nothing
# more. A slow coordinate's draws at the run-length rule's 100-400
# effective ones are 1,000-1,600 draws of 4,096: its fit costs a quarter.
_DRAWS_PER_EFFECTIVE = 4.0
_LEAST_DRAWS = 1024


class SinhMaps:
    """Maps ``s -> x`` of the first ``k`` coordinates; the others unchanged.

    Parameters
    ----------
    mu, sigma, skew, rate : ndarray of shape (k,)
        One map per coordinate (module notes); ``rate == 0`` is the
        identity.

    Attributes
    ----------
    n_mapped : int
        ``k``.
    mapped : ndarray of bool of shape (k,)
        The coordinates whose map is not the identity.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.marginal_maps import SinhMaps
    >>> maps = SinhMaps(np.zeros(1), np.ones(1), np.ones(1), np.ones(1))
    >>> s = np.array([[-1.0, 5.0], [0.0, 5.0], [1.0, 5.0]])
    >>> np.round(maps.to_x(s), 3)  # the right side stretched; column 2 unmapped
    array([[-0.762,  5.   ],
           [ 0.   ,  5.   ],
           [ 1.589,  5.   ]])
    >>> bool(np.allclose(maps.to_s(maps.to_x(s)), s))
    True
    """

    def __init__(self, mu, sigma, skew, rate):
        self.mu, self.sigma, self.skew, self.rate = (
            np.ascontiguousarray(a, dtype=np.float64) for a in (mu, sigma, skew, rate)
        )
        self.n_mapped = self.mu.size
        self.mapped = self.rate != 0.0

    def _parts(self):
        # a rate of 1 stands in where the map is the identity (no 0 / 0)
        rate = np.where(self.mapped, self.rate, 1.0)
        return rate, np.cosh(self.skew), np.sinh(self.skew)

    def to_x(self, s):
        """``x(s)`` for points ``s`` of shape ``(..., d)``, ``d >= k``.

        Parameters
        ----------
        s : array-like of shape (..., d)

        Returns
        -------
        ndarray of shape (..., d)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.marginal_maps import SinhMaps
        >>> maps = SinhMaps([0.0], [1.0], [0.0], [1.0])  # x = sinh(s)
        >>> np.round(maps.to_x(np.array([1.0, 1.0])), 4)
        array([1.1752, 1.    ])
        """
        s = np.asarray(s, dtype=np.float64)
        k = self.n_mapped
        rate, cosh_skew, sinh_skew = self._parts()
        u = rate * (s[..., :k] - self.mu) / self.sigma + self.skew
        mapped = self.mu + self.sigma * (np.sinh(u) - sinh_skew) / (rate * cosh_skew)
        x = s.copy()
        x[..., :k] = np.where(self.mapped, mapped, s[..., :k])
        return x

    def to_s(self, x):
        """The inverse map, ``s(x)``, for points of shape ``(..., d)``.

        Parameters
        ----------
        x : array-like of shape (..., d)

        Returns
        -------
        ndarray of shape (..., d)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.marginal_maps import SinhMaps
        >>> maps = SinhMaps([0.0], [1.0], [0.0], [1.0])  # s = asinh(x)
        >>> np.round(maps.to_s(np.array([np.sinh(1.0), 1.0])), 4)
        array([1., 1.])
        """
        x = np.asarray(x, dtype=np.float64)
        k = self.n_mapped
        rate, cosh_skew, sinh_skew = self._parts()
        q = (x[..., :k] - self.mu) / self.sigma
        u = np.arcsinh(rate * cosh_skew * q + sinh_skew)
        mapped = self.mu + self.sigma * (u - self.skew) / rate
        s = x.copy()
        s[..., :k] = np.where(self.mapped, mapped, x[..., :k])
        return s

    def slope(self, s):
        """``dx / ds`` of the mapped coordinates at one point ``s``.

        Parameters
        ----------
        s : ndarray of shape (d,)

        Returns
        -------
        ndarray of shape (k,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.marginal_maps import SinhMaps
        >>> maps = SinhMaps([0.0], [1.0], [0.0], [1.0])  # x = sinh(s)
        >>> np.round(maps.slope(np.array([1.0, 7.0])), 4)  # cosh(1)
        array([1.5431])
        """
        s = np.ascontiguousarray(s[: self.n_mapped], dtype=np.float64)
        return map_forward(s, self.mu, self.sigma, self.skew, self.rate)[1]


class MarginalMapTarget:
    """The density of ``s`` when ``x = maps.to_x(s)`` has ``logp_and_grad``.

    ``log p(s) = log p_x(x(s)) + sum_j log x_j'(s_j)`` and ``grad_s =
    grad_x x'(s) + d/ds sum_j log x_j'(s_j)`` on the mapped coordinates.
    Picklable when the wrapped density is.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``.
    maps : SinhMaps

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.marginal_maps import MarginalMapTarget, SinhMaps
    >>> maps = SinhMaps(np.zeros(1), np.ones(1), np.zeros(1), np.zeros(1))
    >>> target = MarginalMapTarget(lambda x: (-0.5 * x @ x, -x), maps)
    >>> value, grad = target(np.array([1.0, 2.0]))  # the identity map
    >>> float(value), grad
    (-2.5, array([-1., -2.]))
    """

    def __init__(self, logp_and_grad, maps):
        self.logp_and_grad = logp_and_grad
        self.maps = maps

    def __call__(self, s):
        maps = self.maps
        k = maps.n_mapped
        s = np.asarray(s, dtype=np.float64)
        x = s.copy()
        mapped, slope, log_jacobian, d_log = map_forward(
            np.ascontiguousarray(s[:k]), maps.mu, maps.sigma, maps.skew, maps.rate
        )
        x[:k] = mapped
        value, grad = self.logp_and_grad(x)
        grad = np.array(grad, dtype=np.float64)
        grad[:k] = grad[:k] * slope + d_log
        return value + log_jacobian, grad


def _log_cosh(u):
    a = np.abs(u)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)


def _map_log_likelihood(params, rows):
    """Log-likelihood of each row of ``rows`` (k, n) under its map, and its gradient.

    ``params`` holds ``(mu, log sigma, skew, rate)`` of each row, stacked
    (4, k) and flattened: ``r = s(x)`` standardised is standard normal, so
    ``log p(x) = -r^2 / 2 - log sigma - log x'(s)`` (the constant ``-log(2
    pi) / 2`` left out). With ``u = rate r + skew``, ``sinh(u) = rate
    cosh(skew) q + sinh(skew)`` for ``q = (x - mu) / sigma``; the gradient
    follows by differentiating that identity. Returns the per-row sums
    (k,) and the gradient (4, k). A coordinate's draws lie along a row:
    NumPy's elementwise loops over a few columns of thousands of rows took
    2.5 times as long for three coordinates.
    """
    mu, log_sigma, skew, rate = (p[:, None] for p in params.reshape(4, -1))
    sigma = np.exp(log_sigma)
    cosh_skew, sinh_skew = np.cosh(skew), np.sinh(skew)
    q = (rows - mu) / sigma
    u = np.arcsinh(rate * cosh_skew * q + sinh_skew)
    r = (u - skew) / rate
    n = rows.shape[1]
    value = (
        np.sum(-0.5 * r * r - _log_cosh(u), axis=1)
        + n * (_log_cosh(skew) - log_sigma)[:, 0]
    )
    # dl = (-r / rate - tanh u) du + (r / rate + tanh skew) dskew
    #      + (r^2 / rate) drate - dlog sigma, with cosh(u) du = cosh(skew) q
    #      drate + (rate sinh(skew) q + cosh(skew)) dskew + rate cosh(skew) dq
    c_u = (-r / rate - np.tanh(u)) / np.cosh(u)
    d_q = c_u * rate * cosh_skew
    grad = np.stack(
        [
            -np.sum(d_q, axis=1) / sigma[:, 0],
            -np.sum(d_q * q, axis=1) - n,
            np.sum(c_u * (rate * sinh_skew * q + cosh_skew) + r / rate, axis=1)
            + n * np.tanh(skew[:, 0]),
            np.sum(c_u * cosh_skew * q + r * r / rate, axis=1),
        ]
    )
    return value, grad


def fit_marginal_maps(chains, effective_draws=None):
    """Sinh maps fitted to each coordinate of draws, or None.

    Parameters
    ----------
    chains : ndarray of shape (n_chains, n_draws, k)
        Draws of the coordinates to map (``x``). Each coordinate reads at
        most 4,096 in all, and where ``effective_draws`` is given about
        four per effective draw (no fewer than about 1,024), every chain
        thinned by the same stride.
    effective_draws : ndarray of shape (k,), optional
        Effective sample size of each coordinate's draws (the test of the
        module notes counts in them); by default the draws are taken as
        independent.

    Returns
    -------
    SinhMaps or None
        The fitted maps, the identity for every coordinate that fails the
        likelihood-ratio test of the module notes; None when all do.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.marginal_maps import fit_marginal_maps
    >>> rng = np.random.default_rng(0)
    >>> skewed = -np.log(rng.gamma(1.0, size=(4, 300, 1)))  # a Gumbel's long right tail
    >>> symmetric = rng.normal(size=(4, 300, 1))
    >>> maps = fit_marginal_maps(np.concatenate([skewed, symmetric], axis=2))
    >>> maps.mapped, bool(maps.skew[0] > 0)
    (array([ True, False]), True)
    >>> fit_marginal_maps(symmetric) is None
    True
    """
    chains = np.asarray(chains, dtype=np.float64)
    n_chains, n_draws, k = chains.shape
    if effective_draws is None:
        ess = np.full(k, float(n_chains * n_draws))
    else:
        ess = np.asarray(effective_draws, dtype=np.float64).reshape(k)
    found = np.zeros((4, k))  # read only where kept
    keep = np.zeros(k, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for j in range(k):
            if np.isfinite(ess[j]) and ess[j] >= MIN_EFFECTIVE_DRAWS:
                row = _thinned_row(chains[:, :, j], ess[j])
                keep[j] = _fit_one(row, ess[j], found[:, j])
    if not keep.any():
        return None
    mu, log_sigma, skew, rate = found
    return SinhMaps(
        np.where(keep, mu, 0.0),
        np.where(keep, np.exp(log_sigma), 1.0),
        np.where(keep, skew, 0.0),
        np.where(keep, rate, 0.0),
    )


def _thinned_row(draws, ess):
    """One coordinate's draws (n_chains, n_draws) as a row (1, n), every
    chain thinned by the stride that keeps the draws a fit reads (see
    ``_DRAWS_PER_EFFECTIVE``)."""
    wanted = min(_MOST_DRAWS, max(_LEAST_DRAWS, _DRAWS_PER_EFFECTIVE * ess))
    stride = max(1, int(-(-draws.size // wanted)))
    return np.ascontiguousarray(draws[:, ::stride].reshape(1, -1))


def _fit_one(row, ess, fitted):
    """Fit one coordinate's map to ``row`` (1, n) into ``fitted`` (4,), and
    whether it passes the likelihood-ratio test (module notes)."""
    n = row.shape[1]
    mean, sd = row.mean(), row.std()
    if not sd > 0.0:
        return False
    log_sd = np.log(sd)
    # the normal's maximum likelihood: the null of the test, and the start
    # (at the smallest rate the map is within 0.002 sd of the identity
    # over +-3 sd)
    null = np.sum(-0.5 * ((row - mean) / sd) ** 2) - n * log_sd
    start = np.array([mean, log_sd, 0.0, _RATE_LIMITS[0]])
    # effective draws per draw: the weight of the fit and of the test alike
    weight = min(ess, n) / n
    fitted[:] = _fitted_map(row, start, weight)
    best, _ = _map_log_likelihood(fitted, row)
    statistic = 2.0 * (float(best[0]) - null) * weight
    return bool(np.isfinite(statistic) and statistic > _LR_THRESHOLD)


def _fitted_map(row, start, weight=1.0):
    """The penalised maximum-likelihood ``(mu, log sigma, skew, rate)`` of
    one coordinate's draws ``row`` (1, n), from ``start``, the likelihood
    times ``weight`` (effective draws per draw; module notes).

    The coordinates' likelihoods are separate, so each is maximised alone:
    one L-BFGS run over all of them took three to eight times as long,
    its line searches and curvature pairs shared by problems that have
    nothing in common (seven fits of an SGLD run on 32 rows, 3 to 17
    coordinates).
    """
    limits = np.array(
        [(-np.inf, np.inf)] * 2 + [(-_SKEW_LIMIT, _SKEW_LIMIT), _RATE_LIMITS]
    )

    def objective(params, batch):
        return _penalised_log_likelihood(params, row, weight)

    return maximize(objective, start, limits, n=row.shape[1]).params


def _penalised_log_likelihood(params, row, weight):
    """The objective of one coordinate's fit, and its gradient: the
    log-likelihood of ``row`` (1, n) under ``params`` times ``weight``,
    less ``skew^2 / (2 * 4^2)`` (module notes)."""
    value, grad = _map_log_likelihood(params, row)
    grad = weight * grad.ravel()
    grad[2] -= params[2] / _SKEW_SCALE**2
    return weight * float(value[0]) - 0.5 * (params[2] / _SKEW_SCALE) ** 2, grad
