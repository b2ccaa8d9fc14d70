"""Rules for expectations under a normal distribution.

Gauss-Hermite nodes for one latent dimension, fixed standard-normal
draws for the Monte Carlo rules of the multi-latent likelihoods, and
quasi-random normal nodes for mixtures.
"""

import functools
import numbers

import numpy as np
from scipy.special import ndtri, roots_laguerre
from scipy.stats import qmc

__all__ = ["gauss_hermite", "sobol_normal_blocks", "standard_normal_draws"]

# Sobol points are integers over 2**_SOBOL_BITS; the nodes take each cell's
# centre, so that no node is at 0, where the normal quantile is infinite.
_SOBOL_BITS = 30


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


def sobol_normal_blocks(n_blocks, block_size, n_dims, random_state=0):
    """Standard-normal nodes from one scrambled Sobol sequence, in blocks.

    Block ``s`` holds points ``s * block_size`` to ``(s + 1) * block_size - 1``
    of one scrambled Sobol sequence in ``n_dims`` dimensions (SciPy's
    scrambling: a random linear matrix scramble and a digital shift),
    mapped through the normal quantile. Every node is
    marginally standard normal (to the sequence's resolution of
    ``2**-30``), so an average over any block, or over all of them, is an
    unbiased estimate of an expectation under ``N(0, I)``; for smooth
    integrands its error falls nearly as ``1 / N`` instead of Monte
    Carlo's ``1 / sqrt(N)``. A block of ``2**m`` points at a multiple of
    ``2**m`` is itself a net, so each block integrates well alone, and
    the blocks together fill the space more evenly than independent sets.

    Parameters
    ----------
    n_blocks : int
        Number of blocks (one per draw of a mixture).
    block_size : int
        Points per block; a power of two keeps each block a net.
    n_dims : int
        Dimension of each node.
    random_state : int, numpy Generator or None, default=0
        Seed of the scrambling.

    Returns
    -------
    nodes : ndarray of shape (n_blocks, block_size, n_dims)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.likelihoods import sobol_normal_blocks
    >>> nodes = sobol_normal_blocks(4, 256, 3, random_state=0)
    >>> nodes.shape
    (4, 256, 3)
    >>> bool(np.abs(nodes.mean(axis=(0, 1))).max() < 0.01)
    True
    """
    n_blocks, block_size, n_dims = int(n_blocks), int(block_size), int(n_dims)
    if min(n_blocks, block_size, n_dims) < 1:
        raise ValueError("n_blocks, block_size and n_dims must be positive.")
    n_points = n_blocks * block_size
    sobol = _scrambled_sobol(n_dims, np.random.default_rng(random_state))
    # A power-of-two run keeps the balance of the whole sequence; the tail
    # beyond the blocks is dropped.
    u = sobol.random_base2(max(0, int(np.ceil(np.log2(n_points)))))[:n_points]
    u += 2.0 ** -(_SOBOL_BITS + 1)
    return ndtri(u).reshape(n_blocks, block_size, n_dims)


def _scrambled_sobol(n_dims, rng):
    try:
        return qmc.Sobol(n_dims, scramble=True, bits=_SOBOL_BITS, rng=rng)
    except TypeError:  # SciPy before 1.15 names the generator ``seed``
        return qmc.Sobol(n_dims, scramble=True, bits=_SOBOL_BITS, seed=rng)
