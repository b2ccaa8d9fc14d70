"""Compiled forward and reverse pass of the sparse whitened target.

For the kernels of the stationary fast path
(:mod:`skgp_bayes.kernels._lowering`: ``variance * k(r) [+ noise I]``) the
whole Gaussian-process part of
:class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget` runs in two calls:
:func:`forward` builds ``R``, ``A``, ``gamma`` and ``mu = A' v`` and
:func:`backward` turns the likelihood's ``g_mu`` and ``gbar`` into the
gradient in the natural kernel parameters ``[log variance, log ell...,
log noise]``, with the same algebra as ``_whitened_pullback`` in
:mod:`skgp_bayes.targets.sparse` (see its module notes).

Why compiled: at the sizes the variational MCMC samples (``m`` of 10 to
50 inducing inputs, a few hundred points) the arithmetic of one gradient is
tens of microseconds, while the same steps as NumPy and SciPy calls cost
about a millisecond of per-call overhead (argument checks, wrappers,
temporaries): HMC evaluates the gradient tens of thousands of times, so the
overhead was the fit. The loops here are serial on purpose: the problems
are small and parallel regions would only add thread start-up.

No fastmath: the results agree with the NumPy path to round-off.
"""

import math

import numpy as np
from numba import njit

from ..kernels._numba import kernel_value, kernel_value_and_slope
from ..likelihoods._quadrature import gauss_hermite
from ..linalg._nogil_lapack import DPOTRF, DTRSM, cholesky_lower_c, solve_lower_c

__all__ = ["backward", "forward"]

# Same constants as targets/_sparse_shared.py.
MIN_VAR = 1e-200
# Addresses of LAPACK's dpotrf and BLAS's dtrsm, handed to the compiled
# functions at every call: an address differs between processes, and as a
# global constant it would stop Numba caching them.
LAPACK = (DPOTRF, DTRSM)
# From this many inducing inputs, K(Z, Z)'s factor and R^-1 K(Z, X) go to
# LAPACK and BLAS. On one core (n = 300) the loops here took 83 us against
# 84 at m = 64, 137 against 118 at 80, 1,723 against 769 at 216 and 9,871
# against 2,859 at 400 (the collapsed target's exact limit).
LAPACK_MIN_INDUCING = 80
_TINY = 1e-280


@njit(cache=True, nogil=True)
def scaled(X, inv_ell):
    n, d = X.shape
    out = np.empty((n, d))
    for i in range(n):
        for c in range(d):
            out[i, c] = X[i, c] * inv_ell[c]
    return out


@njit(cache=True, nogil=True)
def kernel_values(Ys, Xs, variance, base):
    """``variance * k(r)`` between rows of ``Ys`` and ``Xs``, tiny entries 0.

    The squared distances are accumulated one input column at a time over
    a contiguous copy of that column (``Xs`` transposed), a loop the
    compiler vectorises, before the one transcendental call per entry.
    """
    m, d = Ys.shape
    n = Xs.shape[0]
    XT = np.ascontiguousarray(Xs.T)
    K = np.zeros((m, n))
    for j in range(m):
        row = K[j]
        for c in range(d):
            y = Ys[j, c]
            col = XT[c]
            for i in range(n):
                t = y - col[i]
                row[i] += t * t
    for j in range(m):
        for i in range(n):
            k = variance * kernel_value(base, K[j, i])
            K[j, i] = 0.0 if abs(k) < _TINY else k
    return K


@njit(cache=True, nogil=True)
def cholesky_lower(K):
    """In-place lower Cholesky factor; False when a pivot is not positive."""
    m = K.shape[0]
    for j in range(m):
        s = K[j, j]
        for k in range(j):
            s -= K[j, k] * K[j, k]
        if not (s > 0.0) or not math.isfinite(s):
            return False
        rjj = math.sqrt(s)
        K[j, j] = rjj
        for i in range(j + 1, m):
            t = K[i, j]
            for k in range(j):
                t -= K[i, k] * K[j, k]
            K[i, j] = t / rjj
        for i in range(j):
            K[i, j] = 0.0
    return True


@njit(cache=True, nogil=True)
def solve_lower(R, B):
    """``R^-1 B`` for lower triangular ``R``, row by row (rows of B are long)."""
    m, k = B.shape
    X = np.empty((m, k))
    for i in range(m):
        for c in range(k):
            X[i, c] = B[i, c]
        for p in range(i):
            r = R[i, p]
            if r != 0.0:
                for c in range(k):
                    X[i, c] -= r * X[p, c]
        inv = 1.0 / R[i, i]
        for c in range(k):
            X[i, c] *= inv
    return X


@njit(cache=True, nogil=True)
def solve_lower_t(R, B):
    """``R^-T B`` for lower triangular ``R``."""
    m, k = B.shape
    X = np.empty((m, k))
    for i in range(m - 1, -1, -1):
        for c in range(k):
            X[i, c] = B[i, c]
        for p in range(i + 1, m):
            r = R[p, i]
            if r != 0.0:
                for c in range(k):
                    X[i, c] -= r * X[p, c]
        inv = 1.0 / R[i, i]
        for c in range(k):
            X[i, c] *= inv
    return X


@njit(cache=True, nogil=True)
def forward(X, Z, inv_ell, variance, noise, base, jitter, v, lapack):
    """``R``, ``A``, clamped ``gamma``, its mask and ``mu = A' v``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d)
    inv_ell : ndarray of shape (d,)
        Inverse length scales, one per input column.
    variance, noise : float
        Kernel variance and WhiteKernel noise (0 without one).
    base : int
        Radial function code of :mod:`skgp_bayes.kernels._lowering`.
    jitter : float
        Relative diagonal jitter of ``K(Z, Z)``.
    v : ndarray of shape (m, C)
    lapack : tuple of int
        :data:`LAPACK`, used from :data:`LAPACK_MIN_INDUCING` inducing inputs.

    Returns
    -------
    ok : bool
        False when the jittered ``K(Z, Z)`` is not positive definite (the
        other outputs are then meaningless).
    R : ndarray of shape (m, m)
    A : ndarray of shape (m, n)
    gamma : ndarray of shape (n,)
    free : ndarray of bool of shape (n,)
    mu : ndarray of shape (n, C)
    Kuu : ndarray of shape (m, m)
        ``K(Z, Z)`` without noise or jitter (its diagonal is the variance).
    Kuf : ndarray of shape (m, n)
        ``K(Z, X)``. Both are handed to :func:`backward`, which then needs
        no transcendental call for the RBF kernel.
    """
    Xs = scaled(X, inv_ell)
    Zs = scaled(Z, inv_ell)
    ok, Kuu, R, Kuf, A, gamma, free = inducing_projection(
        Xs, Zs, variance, noise, base, jitter, lapack
    )
    if not ok:
        n = X.shape[0]
        return ok, R, A, gamma, free, np.zeros((n, v.shape[1])), Kuu, Kuu
    mu = np.ascontiguousarray(A.T) @ v
    return ok, R, A, gamma, free, mu, Kuu, Kuf


@njit(cache=True, nogil=True)
def inducing_projection(Xs, Zs, variance, noise, base, jitter, lapack):
    """``K(Z, Z)``, its jittered factor ``R``, ``K(Z, X)``, ``A = R^-1 K(Z, X)``
    and the clamped conditional variances ``gamma`` with their mask.

    Inputs are scaled by the inverse length scales. ``ok`` is False when the
    jittered ``K(Z, Z)`` is not positive definite; ``A`` is then zero and
    ``Kuf``, ``gamma`` and ``free`` are not filled in. From
    :data:`LAPACK_MIN_INDUCING` inducing inputs the factor and the solve
    are LAPACK's (``lapack`` is :data:`LAPACK`).
    """
    n = Xs.shape[0]
    m = Zs.shape[0]
    Kuu = kernel_values(Zs, Zs, variance, base)
    diag = variance + noise
    R = Kuu.copy()
    for i in range(m):
        R[i, i] = diag + jitter * diag
    large = m >= LAPACK_MIN_INDUCING
    if large:
        R, info = cholesky_lower_c(R, lapack[0])
        # LAPACK passes NaN through where the loop's pivot test stops
        ok = info == 0
        for i in range(m):
            ok = ok and math.isfinite(R[i, i])
    else:
        ok = cholesky_lower(R)
    gamma = np.empty(n)
    free = np.zeros(n, dtype=np.bool_)
    if not ok:
        return ok, Kuu, R, Kuu, np.zeros((m, n)), gamma, free
    Kuf = kernel_values(Zs, Xs, variance, base)
    A = solve_lower_c(R, Kuf, False, lapack[1]) if large else solve_lower(R, Kuf)
    for i in range(n):
        s = diag
        for j in range(m):
            s -= A[j, i] * A[j, i]
        if s > MIN_VAR:
            gamma[i] = s
            free[i] = True
        else:
            gamma[i] = MIN_VAR
    return ok, Kuu, R, Kuf, A, gamma, free


@njit(cache=True, inline="always")
def _slope(base, r2, kv, variance):
    """``f(r)`` given ``kv = variance * k(r)``; free for the RBF (f = k)."""
    if base == 0:
        return kv / variance if variance > 0.0 else 0.0
    return kernel_value_and_slope(base, r2)[1]


@njit(cache=True, nogil=True)
def gram_contract(Zs, Kuu, W, variance, noise, base, ard, g):
    """Add ``sum_ab W_ab dK(Z, Z)_ab / dphi`` to ``g`` (symmetric ``W``)."""
    m, d = Zs.shape
    n_ls = g.size - 2
    for i in range(m):
        g[0] += variance * W[i, i]
        g[n_ls + 1] += noise * W[i, i]
        for j in range(i):
            r2 = 0.0
            for c in range(d):
                t = Zs[i, c] - Zs[j, c]
                r2 += t * t
            w = 2.0 * W[i, j]
            g[0] += w * Kuu[i, j]
            wf = w * variance * _slope(base, r2, Kuu[i, j], variance)
            if ard:
                for c in range(d):
                    t = Zs[i, c] - Zs[j, c]
                    g[1 + c] += wf * t * t
            else:
                g[1] += wf * r2


@njit(cache=True, nogil=True)
def cross_contract(Zs, Xs, Kuf, W, variance, base, ard, g):
    """Add ``sum_ja W_ja dK(Z, X)_ja / dphi`` to ``g``.

    With ``G_ja = W_ja variance f(r_ja)`` the length-scale entry of column
    ``c`` is ``sum_ja G_ja (z_jc - x_ac)^2``, expanded into ``sum_j z_jc^2
    rowsum(G)_j + sum_a x_ac^2 colsum(G)_a - 2 sum_j z_jc (G X)_jc``: one
    ``(m, n) x (n, d)`` product instead of a pass over ``m n d`` squared
    differences. The terms are weighted sums of products of standardised
    inputs, so the cancellation costs a few ulps of their size.
    """
    m, d = Zs.shape
    n = Xs.shape[0]
    G = np.zeros((m, n))
    for j in range(m):
        for a in range(n):
            w = W[j, a]
            kv = Kuf[j, a]
            if w == 0.0 or kv == 0.0:
                continue
            g[0] += w * kv
            if base == 0:
                G[j, a] = w * kv
            else:
                r2 = 0.0
                for c in range(d):
                    t = Zs[j, c] - Xs[a, c]
                    r2 += t * t
                G[j, a] = w * variance * _slope(base, r2, kv, variance)
    rows = G.sum(axis=1)
    cols = G.sum(axis=0)
    GX = G @ Xs
    for c in range(d):
        s = 0.0
        for j in range(m):
            s += Zs[j, c] * (Zs[j, c] * rows[j] - 2.0 * GX[j, c])
        for a in range(n):
            s += Xs[a, c] * Xs[a, c] * cols[a]
        if ard:
            g[1 + c] += s
        else:
            g[1] += s


@njit(cache=True, nogil=True)
def backward(
    X, Z, inv_ell, variance, noise, base, ard, jitter, R, A, Kuu, Kuf, v, g_mu, gbar
):
    """Gradient in ``phi = [log variance, log ell..., log noise]``.

    Of the data term ``F`` given ``g_mu = dF/dmu`` (n, C) and ``gbar``, the
    derivative in the shared ``gamma`` (zero where clamped); the same
    algebra as ``_whitened_pullback`` in :mod:`skgp_bayes.targets.sparse`.
    ``ard`` selects one length-scale entry per column or one in all;
    ``R``, ``A``, ``Kuu`` and ``Kuf`` are :func:`forward`'s.

    Returns
    -------
    g_phi : ndarray of shape (n_ls + 2,)
    """
    m, n = A.shape
    Xs = scaled(X, inv_ell)
    Zs = scaled(Z, inv_ell)
    B = solve_lower_t(R, A)
    W = solve_lower_t(R, v)
    H = A @ g_mu
    # Kufbar = W g_mu' - 2 B diag(gbar); Bg = B diag(gbar)
    Bg = np.empty((m, n))
    for j in range(m):
        for i in range(n):
            Bg[j, i] = B[j, i] * gbar[i]
    Kufbar = W @ np.ascontiguousarray(g_mu.T)
    for j in range(m):
        for i in range(n):
            Kufbar[j, i] -= 2.0 * Bg[j, i]
    # Murray's P = -Phi(v H'), then G = R^-T P R^-1 (see _whitened_pullback).
    P = np.zeros((m, m))
    C = v.shape[1]
    for i in range(m):
        for j in range(i + 1):
            s = 0.0
            for c in range(C):
                s += v[i, c] * H[j, c]
            P[i, j] = -s if j < i else -0.5 * s
    G = solve_lower_t(R, P)
    G = solve_lower_t(R, np.ascontiguousarray(G.T))
    Kuubar = Bg @ np.ascontiguousarray(B.T)
    trace = 0.0
    for i in range(m):
        for j in range(m):
            Kuubar[i, j] += 0.5 * (G[i, j] + G[j, i])
        trace += Kuubar[i, i]
    for i in range(m):
        Kuubar[i, i] += jitter / m * trace
    n_ls = inv_ell.size if ard else 1
    g = np.zeros(n_ls + 2)
    gram_contract(Zs, Kuu, Kuubar, variance, noise, base, ard, g)
    cross_contract(Zs, Xs, Kuf, Kufbar, variance, base, ard, g)
    total = 0.0
    for i in range(n):
        total += gbar[i]
    g[0] += variance * total
    g[n_ls + 1] += noise * total
    return g


@njit(cache=True, nogil=True)
def softmax_expectation(labels, mu, sd, eps, weights):
    """Weighted-node ``E[log softmax(F_i)[y_i]]`` and its gradients.

    ``sum_s weights_s log softmax(F_is)[y_i]`` with ``F_is = mu_i + sd_i
    eps_s`` and nodes ``eps`` of shape ``(S, C)`` shared by the points, for
    latents that share the standard deviation ``sd_i`` (as they do in the
    sparse target). With equal weights ``1 / S`` and the likelihood's draws
    it is the Monte Carlo estimate of :meth:`skgp_bayes.likelihoods.Softmax.
    expected_log_prob`; with a cubature rule's nodes and weights, that
    rule. One pass over the ``S * n * C`` nodes, where the NumPy version
    builds five temporaries of that size. The gradients are the exact
    derivatives of the weighted sum.

    Parameters
    ----------
    labels : ndarray of int of shape (n,)
    mu : ndarray of shape (n, C)
    sd : ndarray of shape (n,)
        Positive.
    eps : ndarray of shape (S, C)
    weights : ndarray of shape (S,)

    Returns
    -------
    elp : ndarray of shape (n,)
    d_mu, d_var : ndarray of shape (n, C)
        Derivatives in ``mu`` and in the variance ``sd ** 2``.
    """
    n, C = mu.shape
    S = eps.shape[0]
    elp = np.zeros(n)
    d_mu = np.zeros((n, C))
    d_var = np.zeros((n, C))
    f = np.empty(C)
    for i in range(n):
        s_i = sd[i]
        yi = labels[i]
        for s in range(S):
            top = -np.inf
            for c in range(C):
                f[c] = mu[i, c] + s_i * eps[s, c]
                if f[c] > top:
                    top = f[c]
            total = 0.0
            for c in range(C):
                f[c] = math.exp(f[c] - top)
                total += f[c]
            w = weights[s]
            # F_y - lse, from F_y itself: exp(F_y - top) may underflow to 0
            elp[i] += w * (mu[i, yi] + s_i * eps[s, yi] - top - math.log(total))
            for c in range(C):
                g = -f[c] / total
                if c == yi:
                    g += 1.0
                d_mu[i, c] += w * g
                d_var[i, c] += w * g * eps[s, c]
        for c in range(C):
            d_var[i, c] /= 2.0 * s_i
    return elp, d_mu, d_var


# Gauss-Hermite rules for E[log sigmoid(f)], f ~ N(mu, sd^2), by sd: with K
# nodes the value and both derivatives are within 1e-12 of a 150-node rule
# for every mean in [-30, 30] up to the listed sd (a grid search over sd;
# tests/targets/test_sparse_target.py checks each entry). log sigmoid is
# analytic in a strip of half-width pi, which the rule sees as pi / sd, so
# the nodes needed grow with sd. The joint target's sd is the conditional
# sd of f given v: most points sit near inducing inputs with small ones
# (median 0.09 on the fair data, 0.7 on breast cancer).
LOGIT_RULE_LIMITS = ((6, 0.12), (8, 0.24), (12, 0.44), (16, 0.60))


def logit_rules(n_quadrature):
    """The stacked rules :func:`logit_expectation` chooses from.

    Those of :data:`LOGIT_RULE_LIMITS` with fewer than ``n_quadrature``
    nodes, then the ``n_quadrature``-node rule for every larger sd.

    Parameters
    ----------
    n_quadrature : int

    Returns
    -------
    nodes, weights : ndarray of shape (n_rules, n_quadrature)
        Row ``r`` holds rule ``r``, padded with zeros.
    counts : ndarray of int of shape (n_rules,)
    limits : ndarray of shape (n_rules,)
        Largest sd of each rule; the last is infinite.

    Examples
    --------
    >>> from skgp_bayes.targets._sparse_numba import logit_rules
    >>> nodes, weights, counts, limits = logit_rules(20)
    >>> counts.tolist(), limits.tolist()
    ([6, 8, 12, 16, 20], [0.12, 0.24, 0.44, 0.6, inf])
    """
    rules = [(k, limit) for k, limit in LOGIT_RULE_LIMITS if k < n_quadrature]
    rules.append((n_quadrature, np.inf))
    nodes = np.zeros((len(rules), n_quadrature))
    weights = np.zeros((len(rules), n_quadrature))
    for r, (k, _) in enumerate(rules):
        nodes[r, :k], weights[r, :k] = gauss_hermite(k)
    counts = np.array([k for k, _ in rules], dtype=np.int64)
    return nodes, weights, counts, np.array([limit for _, limit in rules])


@njit(cache=True, nogil=True)
def logit_expectation(y, mu, sd, nodes, weights, counts, limits):
    """Gauss-Hermite ``E[log sigmoid(s_i f_i)]`` and its gradients.

    The same rule as :meth:`skgp_bayes.likelihoods.Bernoulli.
    expected_log_prob` with the logistic link (``s_i = 2 y_i - 1``, nodes
    ``mu_i + sd_i x_k``), in one pass over the nodes: the NumPy version
    builds four temporaries of size ``n * K`` and a ``logaddexp`` and an
    ``expit`` over them, whose per-call cost was half of a sparse-target
    gradient at a few hundred points. Each point takes the fewest nodes of
    :func:`logit_rules` that resolve its ``sd`` to 1e-12, and the
    likelihood's own rule beyond :data:`LOGIT_RULE_LIMITS`. The variance
    derivative is the exact derivative of the rule, ``sum_k w_k g_k x_k /
    (2 sd_i)``; the caller handles variances so small that this quotient
    loses its digits.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    mu, sd : ndarray of shape (n,)
        Latent means and standard deviations (positive).
    nodes, weights, counts, limits
        The rules of :func:`logit_rules`.

    Returns
    -------
    elp, d_mu, d_var : ndarray of shape (n,)
    """
    n = mu.shape[0]
    elp = np.empty(n)
    d_mu = np.empty(n)
    d_var = np.empty(n)
    for i in range(n):
        sign = 2.0 * y[i] - 1.0
        s_i = sd[i]
        r = 0
        while s_i > limits[r]:
            r += 1
        value = 0.0
        slope = 0.0
        moment = 0.0
        for k in range(counts[r]):
            x = nodes[r, k]
            w = weights[r, k]
            z = sign * (mu[i] + s_i * x)
            # One exp and one log1p give both log sigmoid(z) and sigmoid(-z).
            if z >= 0.0:
                e = math.exp(-z)
                log_sig = -math.log1p(e)
                tail = e / (1.0 + e)
            else:
                e = math.exp(z)
                log_sig = z - math.log1p(e)
                tail = 1.0 / (1.0 + e)
            value += w * log_sig
            g = w * sign * tail
            slope += g
            moment += g * x
        elp[i] = value
        d_mu[i] = slope
        d_var[i] = moment / (2.0 * s_i)
    return elp, d_mu, d_var


@njit(cache=True, nogil=True)
def softmax_mean_proba(means, sd, nodes, weights):
    """``mean_s sum_k weights_k softmax(means[s, i] + sd[s, i] nodes_k)``.

    The class probabilities of a mixture of draws, each with latent means
    ``means[s, i]`` (one per class) and a standard deviation ``sd[s, i]``
    shared by the classes, averaged over the draws in one pass (no array of
    ``S * n * K * C`` values is ever built).

    Parameters
    ----------
    means : ndarray of shape (S, n, C)
    sd : ndarray of shape (S, n)
    nodes : ndarray of shape (K, C)
    weights : ndarray of shape (K,)

    Returns
    -------
    proba : ndarray of shape (n, C)
        Rows normalised to sum to one exactly.
    """
    S, n, C = means.shape
    K = nodes.shape[0]
    out = np.zeros((n, C))
    f = np.empty(C)
    for s in range(S):
        for i in range(n):
            s_i = sd[s, i]
            for k in range(K):
                top = -np.inf
                for c in range(C):
                    f[c] = means[s, i, c] + s_i * nodes[k, c]
                    if f[c] > top:
                        top = f[c]
                total = 0.0
                for c in range(C):
                    f[c] = math.exp(f[c] - top)
                    total += f[c]
                w = weights[k] / total
                for c in range(C):
                    out[i, c] += w * f[c]
    for i in range(n):
        total = 0.0
        for c in range(C):
            total += out[i, c]
        for c in range(C):
            out[i, c] /= total
    return out


@njit(cache=True, nogil=True)
def log_prior_theta(theta, kind, a, b, const):
    """Log prior of log-scale hyperparameters and its gradient.

    The densities of ``theta = log x`` (the Jacobian included) of the two
    priors of the default policy, entry by entry: ``kind`` 0 is
    ``Gamma(shape a, scale b)``, ``a theta - exp(theta) / b + const``;
    ``kind`` 1 is ``LogNormal(mu a, sigma b)``, ``-z^2 / 2 + const`` with
    ``z = (theta - a) / b``. The same values as
    :meth:`skgp_bayes.priors.PriorSet.log_prob`, without its per-group NumPy
    calls, which cost as much as the rest of a small target's gradient.

    Parameters
    ----------
    theta, a, b, const : ndarray of shape (p,)
    kind : ndarray of int of shape (p,)

    Returns
    -------
    value : float
    grad : ndarray of shape (p,)
    """
    p = theta.shape[0]
    grad = np.empty(p)
    value = 0.0
    for j in range(p):
        t = theta[j]
        if kind[j] == 0:
            e = math.exp(t) / b[j]
            value += a[j] * t - e + const[j]
            grad[j] = a[j] - e
        else:
            z = (t - a[j]) / b[j]
            value += const[j] - 0.5 * z * z
            grad[j] = -z / b[j]
    return value, grad


@njit(cache=True, nogil=True)
def draw_moments(X, Z, inv_ells, variances, noises, base, jitter, v, lapack):
    """Latent means and shared variances at ``X`` for each draw ``(theta_j, v_j)``.

    ``f(X) | v_j ~ N(A_j' v_j, diag K(X, X) - colsum(A_j o A_j))`` with
    ``A_j = R_j^-1 K(Z, X)``, by :func:`inducing_projection` per draw: one
    compiled loop over the draws where a prediction over thousands of
    posterior draws spent most of its time in per-draw Python calls.

    Parameters
    ----------
    X : ndarray of shape (k, d)
    Z : ndarray of shape (m, d)
    inv_ells : ndarray of shape (J, d)
        Each draw's inverse length scales, one per input column.
    variances, noises : ndarray of shape (J,)
    base : int
        Radial function code of :mod:`skgp_bayes.kernels._lowering`.
    jitter : float
    v : ndarray of shape (J, m, C)
    lapack : tuple of int
        :data:`LAPACK`.

    Returns
    -------
    ok : bool
        False when a draw's jittered ``K(Z, Z)`` is not positive definite.
    means : ndarray of shape (J, k, C)
    variances : ndarray of shape (J, k)
    """
    J = v.shape[0]
    k = X.shape[0]
    means = np.empty((J, k, v.shape[2]))
    spread = np.empty((J, k))
    for j in range(J):
        Xs = scaled(X, inv_ells[j])
        Zs = scaled(Z, inv_ells[j])
        ok, _, _, _, A, gamma, _ = inducing_projection(
            Xs, Zs, variances[j], noises[j], base, jitter, lapack
        )
        if not ok:
            return False, means, spread
        means[j] = np.ascontiguousarray(A.T) @ np.ascontiguousarray(v[j])
        spread[j] = gamma
    return True, means, spread
