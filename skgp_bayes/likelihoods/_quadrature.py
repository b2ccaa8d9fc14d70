"""Rules for expectations under a normal distribution.

Gauss-Hermite nodes for one latent dimension, and fixed standard-normal
draws for the Monte Carlo rules of the multi-latent likelihoods.
"""

import functools
import numbers

import numpy as np
from scipy.special import roots_laguerre

__all__ = ["gauss_hermite", "standard_normal_draws"]


@functools.lru_cache(maxsize=64)
def _gauss_hermite_cached(n):
    nodes, weights = np.polynomial.hermite_e.hermegauss(n)
    # Dividing by the computed sum (rather than sqrt(2 pi)) makes the weights
    # sum to one to the last bit, so constants integrate exactly.
    weights = weights / weights.sum()
    # The arrays are shared between callers through the cache.
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def gauss_hermite(n):
    """Gauss-Hermite rule for expectations under the standard normal.

    ``E[h(x)]`` with ``x ~ N(0, 1)`` is approximated by
    ``sum(weights * h(nodes))``; the rule is exact for polynomials of degree
    up to ``2 n - 1``. For ``N(mu, var)`` use the nodes
    ``mu + sqrt(var) * nodes``. Results are cached and read-only.

    Parameters
    ----------
    n : int
        Number of nodes, at least 1.

    Returns
    -------
    nodes : ndarray of shape (n,)
        Roots of the probabilists' Hermite polynomial ``He_n``, ascending.
    weights : ndarray of shape (n,)
        Positive weights summing to one.

    Examples
    --------
    >>> from skgp_bayes.likelihoods import gauss_hermite
    >>> x, w = gauss_hermite(3)
    >>> [round(float(w @ x**k), 12) for k in (0, 2, 4)]  # moments of N(0, 1)
    [1.0, 1.0, 3.0]
    """
    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1 or n > 1000:
        raise ValueError(f"n must be an integer in [1, 1000]; got {n!r}.")
    return _gauss_hermite_cached(int(n))


@functools.lru_cache(maxsize=16)
def gauss_laguerre(n):
    """Gauss-Laguerre rule: ``int_0^inf exp(-t) h(t) dt ~ sum(w * h(t))``.

    Used for one-sided integrals with an exponentially decaying factor.
    Results are cached and read-only.

    Parameters
    ----------
    n : int
        Number of nodes, at least 1.

    Returns
    -------
    nodes, weights : ndarray of shape (n,)

    Examples
    --------
    >>> from skgp_bayes.likelihoods._quadrature import gauss_laguerre
    >>> t, w = gauss_laguerre(5)
    >>> round(float(w @ t**3), 10)  # int_0^inf exp(-t) t^3 dt = 3!
    6.0
    """
    nodes, weights = roots_laguerre(int(n))
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def standard_normal_draws(n_samples, n_dims, random_state=None, antithetic=True):
    """Fixed standard-normal draws for Monte Carlo expectations.

    With ``antithetic=True`` the second half of the rows is the negation of
    the first half, so the draws have mean exactly zero and the Monte Carlo
    estimate is an even function of the latent scale.

    Parameters
    ----------
    n_samples : int
        Number of draws (rows); even when ``antithetic`` is true.
    n_dims : int
        Number of independent dimensions (columns).
    random_state : None, int or numpy.random.Generator, default=None
        Seed or generator for the draws.
    antithetic : bool, default=True
        Pair every draw with its negation.

    Returns
    -------
    draws : ndarray of shape (n_samples, n_dims)

    Examples
    --------
    >>> from skgp_bayes.likelihoods import standard_normal_draws
    >>> eps = standard_normal_draws(4, 3, random_state=0)
    >>> eps.shape, bool((eps[:2] == -eps[2:]).all())
    ((4, 3), True)
    """
    n_samples = int(n_samples)
    n_dims = int(n_dims)
    if n_samples < 1 or n_dims < 1:
        raise ValueError("n_samples and n_dims must be positive.")
    if antithetic and n_samples % 2:
        raise ValueError(f"antithetic draws need an even n_samples; got {n_samples}.")
    rng = np.random.default_rng(random_state)
    if not antithetic:
        return rng.standard_normal((n_samples, n_dims))
    half = rng.standard_normal((n_samples // 2, n_dims))
    return np.concatenate([half, -half], axis=0)
