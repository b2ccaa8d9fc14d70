"""The SVGP bound's Bernoulli-logit terms given the projection, compiled.

:meth:`~skgp_bayes.targets.svgp.SVGPBound._given_projection` for one
latent function and the logit link: from ``A = R^-1 K(Z, X)``, the clamped
conditional variances and ``q(u) = N(m, L L')`` (whitened), the bound
without the prior and its gradients in ``m``, the packed ``L`` (log
diagonal), ``A`` and the diagonal of ``K(X, X)``, in one call. The
expectation is :func:`~skgp_bayes.targets._likelihood_numba.logit_expectation`,
the rule the sparse whitened target uses (Gauss-Hermite with the fewest
nodes that resolve each point's sd to 1e-12).

Small problems are where this counts: a selection of inducing inputs
evaluates the bound of four subsets a step (150 steps on 48 rows, each
bound about 180 us in NumPy, most of it the interpreter), and the
variational MCMC classifier's first stage evaluates it a few hundred times.
A status False (a variance below the likelihood's small-variance limit)
hands the evaluation back to the interpreted version, which switches rule
there.
"""

import math

import numpy as np
from numba import njit

from ._likelihood_numba import logit_expectation

__all__ = ["logit_given_projection"]


@njit(cache=True, nogil=True)
def _kl(mean, L):
    """``KL(N(m, L L') || N(0, I))`` for ``m`` of size ``m``."""
    m = mean.size
    total = 0.0
    log_diag = 0.0
    for j in range(m):
        total += mean[j] * mean[j]
        log_diag += math.log(L[j, j])
        for k in range(j + 1):
            total += L[j, k] * L[j, k]
    return 0.5 * (total - m - 2.0 * log_diag)


# Long because the docstring documents twelve parameters; the body is 45 lines.
@njit(cache=True, nogil=True)
def logit_given_projection(
    A, gamma, free, mean, L, y, scale, nodes, weights, counts, limits, small_var
):  # fmt: skip
    """``(ok, value, g_m, g_L, Abar, gbar)`` of the logit SVGP bound.

    Parameters
    ----------
    A : ndarray of shape (m, n)
        ``R^-1 K(Z, X)``.
    gamma : ndarray of shape (n,)
        Clamped conditional variances.
    free : ndarray of bool of shape (n,)
        The variances not clamped.
    mean : ndarray of shape (m,)
        ``q(u)``'s whitened mean.
    L : ndarray of shape (m, m)
        Its lower Cholesky factor (positive diagonal).
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    scale : float
        The minibatch factor of the data term.
    nodes, weights, counts, limits
        :func:`~skgp_bayes.targets._likelihood_numba.logit_rules`.
    small_var : float
        Below this latent variance the interpreted rule applies.

    Returns
    -------
    ok : bool
        False where a variance is below ``small_var`` (nothing else is
        then meaningful).
    value : float
        ``scale sum_i E[log sigmoid(s_i f_i)] - KL``.
    g_m : ndarray of shape (m,)
    g_L : ndarray of shape (m (m + 1) / 2,)
        In the packed lower triangle's row-major order, the diagonal in
        log units.
    Abar : ndarray of shape (m, n)
        ``dF/dA``.
    gbar : ndarray of shape (n,)
        ``dF/d diag K(X, X)`` (zero where clamped).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._likelihood_numba import logit_rules
    >>> from skgp_bayes.targets._svgp_numba import logit_given_projection
    >>> A = np.array([[0.5, -0.5]])
    >>> ok, value, g_m, g_L, Abar, gbar = logit_given_projection(
    ...     A, np.array([0.75, 0.75]), np.ones(2, dtype=bool), np.zeros(1),
    ...     np.eye(1), np.array([1.0, 0.0]), 1.0, *logit_rules(20), 1e-10)
    >>> ok, g_L.shape, Abar.shape
    (True, (1,), (1, 2))
    """
    m, n = A.shape
    B = np.ascontiguousarray(L.T) @ A
    mu = np.zeros(n)
    sd = np.empty(n)
    for j in range(m):
        for i in range(n):
            mu[i] += A[j, i] * mean[j]
    for i in range(n):
        var = gamma[i]
        for j in range(m):
            var += B[j, i] * B[j, i]
        if var < small_var:
            return False, 0.0, np.empty(0), np.empty(0), np.empty((0, 0)), np.empty(0)
        sd[i] = math.sqrt(var)
    elp, d_mu, d_var = logit_expectation(y, mu, sd, nodes, weights, counts, limits)
    data = 0.0
    g_s = np.empty(n)
    gbar = np.empty(n)
    for i in range(n):
        data += elp[i]
        d_mu[i] *= scale
        g_s[i] = scale * d_var[i]
        gbar[i] = g_s[i] if free[i] else 0.0
    value = scale * data - _kl(mean, L)
    g_m = A @ d_mu - mean
    # Abar = m g_mu' - 2 A diag(gbar) + 2 L (B diag(g_s))
    Bg = B * g_s
    Abar = L @ Bg
    for j in range(m):
        for i in range(n):
            Abar[j, i] = 2.0 * Abar[j, i] + mean[j] * d_mu[i] - 2.0 * A[j, i] * gbar[i]
    # dF/dL = 2 (A diag(g_s)) B' - L, the diagonal then in log units
    Lbar = (A * g_s) @ np.ascontiguousarray(B.T)
    g_L = np.empty(m * (m + 1) // 2)
    t = 0
    for r in range(m):
        for c in range(r + 1):
            entry = 2.0 * Lbar[r, c] - L[r, c]
            g_L[t] = entry * L[r, r] + 1.0 if r == c else entry
            t += 1
    return True, value, g_m, g_L, Abar, gbar
