"""Compiled CDF of a Poisson count with a log-normal rate, mixed over draws.

``P(Y_i <= k) = mean_s sum_a w_a P(Poisson(exp(mu_si + sd_si z_a)) <= k)``
for Gauss-Hermite nodes ``z_a``. SciPy's ``pdtr`` costs about 75 ns a call,
and a quantile search calls it for every draw, node, point and level some
six times: 26 s for 30 points and 15,000 draws. For small counts and rates
the Poisson CDF is a short sum, ``exp(-lam) sum_j lam^j / j!``, accumulated
here by its recursion, a few multiplications per term. Large counts stay
with ``pdtr`` (see :data:`MAX_COUNT`). A rate above :data:`MAX_RATE`, where
``exp(-lam)`` would approach underflow, adds nothing: for ``k <= 256`` and
``lam >= 600`` the Chernoff bound ``P(Y <= k) <= exp(-lam + k + k
log(lam / k))`` is below ``exp(-126)``.
"""

import math

import numpy as np
from numba import njit, prange

__all__ = ["MAX_COUNT", "MAX_RATE", "mixture_poisson_cdf"]

# Longest sum accumulated here; a point whose largest queried count is
# higher is left to pdtr (each further term is one multiplication, but at
# hundreds of terms pdtr's continued fraction is as quick).
MAX_COUNT = 256
# exp(-lam) is a normal double up to lam of about 708; 600 leaves the
# recursion's first terms well inside the range, and a larger rate's CDF at
# MAX_COUNT or below is zero to double precision (module notes).
MAX_RATE = 600.0


@njit(parallel=True, cache=True, nogil=True)
def mixture_poisson_cdf(k, mu, sd, nodes, weights):
    """``P(Y_i <= k_il)`` averaged over draws ``s`` and nodes ``a``.

    Parameters
    ----------
    k : ndarray of shape (m, q)
        Integer-valued counts (floats), at most :data:`MAX_COUNT`; a
        negative one gives 0.
    mu, sd : ndarray of shape (S, m)
        The log rate's mean and standard deviation per draw and point.
    nodes, weights : ndarray of shape (n_nodes,)
        Gauss-Hermite rule for the standard normal (weights sum to one).

    Returns
    -------
    cdf : ndarray of shape (m, q)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.predictive._poisson_numba import mixture_poisson_cdf
    >>> one = np.ones(1)
    >>> cdf = mixture_poisson_cdf(np.array([[0.0, 2.0]]), np.zeros((1, 1)),
    ...                           np.zeros((1, 1)), np.zeros(1), one)
    >>> np.round(cdf, 6)  # Poisson(1): exp(-1), 2.5 exp(-1)
    array([[0.367879, 0.919699]])
    """
    S, m = mu.shape
    q = k.shape[1]
    out = np.zeros((m, q))
    for i in prange(m):
        top = -1
        for level in range(q):
            top = max(top, int(k[i, level]))
        if top < 0:
            continue
        below = np.zeros(top + 1)  # the running P(Y <= j) summed over atoms
        for s in range(S):
            for a in range(nodes.size):
                rate = math.exp(mu[s, i] + sd[s, i] * nodes[a])
                if rate > MAX_RATE:
                    continue
                term = math.exp(-rate)
                total = term
                below[0] += weights[a] * total
                for j in range(1, top + 1):
                    term *= rate / j
                    total += term
                    below[j] += weights[a] * total
        for level in range(q):
            j = int(k[i, level])
            if j >= 0:
                out[i, level] = min(below[j] / S, 1.0)
    return out
