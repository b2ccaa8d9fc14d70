"""Compiled likelihood expectations of the sparse whitened target.

Gauss-Hermite and sampled rules for ``E[log p(y | f)]`` under the
Gaussian conditionals of :mod:`skgp_bayes.targets._sparse_numba`'s forward
pass, with their derivatives in the means and variances: the softmax rule,
the Bernoulli-logit rules chosen per point by its sd, the class
probabilities of a mixture of draws, and the Bernoulli-logit target's value
and gradient in one call (:func:`logit_joint`).

No fastmath. The logit expectation takes its ``exp`` and ``log1p`` from
:mod:`skgp_bayes._vector_exp` (1 and 2 ulp), whose loops vectorise.
"""

import math

import numpy as np
from numba import njit

from .._vector_exp import vector_exp, vector_log1p
from ..likelihoods._quadrature import gauss_hermite
from ._sparse_numba import backward, forward, kernel_scales

__all__ = [
    "LOGIT_RULE_LIMITS",
    "logit_expectation",
    "logit_joint",
    "logit_rules",
    "softmax_expectation",
    "softmax_joint",
    "softmax_mean_proba",
    "simplex_softmax_expectation",
]


# Node values (points x classes x nodes) per block of softmax_expectation:
# its two arrays of that size take 128 KB each, which the second-level
# cache holds.
_SOFTMAX_BLOCK_VALUES = 16384
# Largest shift of a latent at a node of simplex_softmax_expectation whose
# exponential it takes (e^700 < 1.8e308 / 8, so sums of eight stay finite);
# beyond, the point takes the general form.
_BOOST_LIMIT = 700.0
# simplex_softmax_expectation's bound on what the short form of the class
# probabilities' sum may lose: 16 times the sum's rounding, about 2e-15.
_CANCEL_BOUND = 16.0


@njit(cache=True, nogil=True, error_model="numpy")
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
        Expected log probability of each point's label.
    d_mu, d_var : ndarray of shape (n, C)
        Derivatives in ``mu`` and in the variance ``sd ** 2``.
    """
    n, C = mu.shape
    S = eps.shape[0]
    eps_t = np.ascontiguousarray(eps.T)
    elp = np.zeros(n)
    d_mu = np.zeros((n, C))
    d_var = np.zeros((n, C))
    # In blocks of points: one block of all n (n C S doubles per array:
    # 2.4 MB at 300 points, 10 classes and the 100 draws used beyond eight
    # classes) left the cache and took 16-22 ns a node value, the blocks 5-7.
    # Each point's arithmetic, and the order of every sum, is the same.
    width = max(1, _SOFTMAX_BLOCK_VALUES // (C * S))
    for start in range(0, n, width):
        stop = min(n, start + width)
        _softmax_block(
            labels[start:stop], mu[start:stop], sd[start:stop], eps_t, weights,
            elp[start:stop], d_mu[start:stop], d_var[start:stop],
        )  # fmt: skip
    return elp, d_mu, d_var


@njit(cache=True, nogil=True, error_model="numpy")
def _softmax_block(labels, mu, sd, eps_t, weights, elp, d_mu, d_var):
    """:func:`softmax_expectation` of a block of points, into ``elp, d_mu, d_var``."""
    n, C = mu.shape
    S = eps_t.shape[1]
    # Node-major layout: every inner loop runs over the S nodes of one class
    # of one point, contiguously, so the shifted logits, their exponentials
    # and the logs of their sums vectorise; the sums over nodes stay in
    # node order.
    shifted = _shifted_logits(mu, sd, eps_t)
    flat = shifted.reshape(n * C * S)
    expo = np.empty(n * C * S)
    for t in range(n * C * S):
        expo[t] = vector_exp(flat[t])
    expo3 = expo.reshape((n, C, S))
    # The largest term is exp(0) = 1, so each sum lies in [1, C] and the sum
    # minus 1 is exact: log1p keeps all its digits.
    total = np.zeros((n, S))
    for i in range(n):
        for c in range(C):
            for s in range(S):
                total[i, s] += expo3[i, c, s]
    log_total = np.empty(n * S)
    total_flat = total.reshape(n * S)
    for t in range(n * S):
        log_total[t] = vector_log1p(total_flat[t] - 1.0)
    share = np.empty(S)
    for i in range(n):
        yi = labels[i]
        for s in range(S):
            share[s] = weights[s] / total[i, s]
        value = 0.0
        for s in range(S):
            # F_y - lse, from the shifted F_y: exp(F_y - top) may underflow
            value += weights[s] * (shifted[i, yi, s] - log_total[i * S + s])
        elp[i] = value
        for c in range(C):
            slope = 0.0
            moment = 0.0
            for s in range(S):
                g = -expo3[i, c, s] * share[s]
                if c == yi:
                    g += weights[s]
                slope += g
                moment += g * eps_t[c, s]
            d_mu[i, c] = slope
            d_var[i, c] = moment / (2.0 * sd[i])


# Long because the docstring derives the closed form; the body is 55 lines.
@njit(cache=True, nogil=True, error_model="numpy")
def simplex_softmax_expectation(labels, mu, sd, eps, weights):
    """:func:`softmax_expectation` for the simplex rule, with few logarithms.

    ``eps, weights`` are :func:`~skgp_bayes.targets.sparse.softmax_rule`'s
    nodes for six to eight classes: the centre, the simplex vertices ``a_j
    ~ e_j - 1/C`` and the pair midpoints ``b_jk ~ e_j + e_k - 2/C``, each
    with its mirror image, at radius ``sqrt(C + 1)``. ``log softmax`` does
    not change when a constant is added to every latent, so at a vertex
    node ``F = mu + sd eps`` acts as ``mu`` with ``alpha = sd sqrt(C + 1) /
    |e_j - 1/C|`` added to ``mu_j`` (or taken away), and its log-sum-exp is
    ``log(S_-j + E_j e^(+-alpha))`` with ``E_c = exp(mu_c - max mu)`` and
    ``S_-j`` the sum of the others; likewise at a midpoint with
    ``beta`` added to ``mu_j`` and ``mu_k``. A point then takes ``C + 2``
    exponentials and one logarithm a node, where the general form takes
    ``C`` exponentials and a logarithm a node. The class probabilities at
    every node, and so both gradients, follow from those sums by
    arithmetic. Points whose ``alpha`` or ``beta`` passes 700 (an sd beyond
    218-241, by ``C``), near where ``exp`` overflows, take the general form.

    Parameters
    ----------
    labels : ndarray of int of shape (n,)
    mu : ndarray of shape (n, C)
    sd : ndarray of shape (n,)
        Positive.
    eps : ndarray of shape (S, C)
        The rule's nodes, for the general form's points only.
    weights : ndarray of shape (S,)
        The rule's weights, in its order (the centre's first, a midpoint's
        last).

    Returns
    -------
    elp : ndarray of shape (n,)
        Expected log probability of each point's label.
    d_mu : ndarray of shape (n, C)
        Derivative in ``mu``.
    d_var : ndarray of shape (n,)
        Derivative in the variance ``sd ** 2`` that the classes share (the
        row sums of :func:`softmax_expectation`'s).
    """
    n, C = mu.shape
    S = weights.size
    n_pairs = C * (C - 1) // 2
    has_vertices = S > 1 + 2 * n_pairs  # eight classes give them weight 0
    n_vertex_nodes = 2 * C if has_vertices else 0
    radius = math.sqrt(C + 1.0)
    a_scale = radius / math.sqrt((C - 1.0) / C)
    b_scale = radius / math.sqrt(2.0 - 4.0 / C)
    E, top, up = _simplex_exponentials(mu, sd, a_scale, b_scale)
    T = _simplex_node_sums(E, up, S, has_vertices)
    log_T = _logs(T.reshape(n * S))
    elp = np.empty(n)
    d_mu = np.empty((n, C))
    d_var = np.empty(n)
    share = np.empty(S)  # weight / T of every node
    boosted = np.empty(C)
    eps_t = np.ascontiguousarray(eps.T)
    for i in range(n):
        alpha, beta = a_scale * sd[i], b_scale * sd[i]
        if max(alpha, beta) > _BOOST_LIMIT:
            d_var_c = np.empty((1, C))
            _softmax_block(
                labels[i : i + 1], mu[i : i + 1], sd[i : i + 1], eps_t, weights,
                elp[i : i + 1], d_mu[i : i + 1], d_var_c,
            )  # fmt: skip
            d_var[i] = np.sum(d_var_c)
            continue
        yi = labels[i]
        boost_a, boost_b = up[i, 0], up[i, 1]
        value = 0.0
        for t in range(S):
            share[t] = weights[t] / T[i, t]
            value -= weights[t] * log_T[i * S + t]
        slope = 0.0  # d/d sd of the weighted sum
        for j in range(C if has_vertices else 0):
            up_q, down_q = share[1 + j], share[1 + C + j]
            slope -= a_scale * E[i, j] * (up_q * boost_a - down_q / boost_a)
        node = 1 + n_vertex_nodes
        for j in range(C):
            for k in range(j + 1, C):
                up_q, down_q = share[node], share[node + n_pairs]
                slope -= (
                    b_scale * (E[i, j] + E[i, k]) * (up_q * boost_b - down_q / boost_b)
                )
                node += 1
        # The label's own boost, +-alpha at its vertex nodes and +-beta at
        # the pair nodes that hold it, cancels between each node and its
        # mirror image (equal weights), in the value and in the slope alike.
        elp[i] = value + (mu[i, yi] - top[i])
        _simplex_class_slopes(
            E[i], share, boost_a, boost_b, has_vertices, boosted, d_mu[i]
        )
        d_mu[i, yi] += 1.0
        d_var[i] = slope / (2.0 * sd[i])
    return elp, d_mu, d_var


@njit(cache=True, nogil=True)
def _simplex_exponentials(mu, sd, a_scale, b_scale):
    """``exp(mu - max mu)``, each point's ``max mu`` and its ``e^alpha, e^beta``."""
    n, C = mu.shape
    E = np.empty((n, C))
    top = np.empty(n)
    for i in range(n):
        top[i] = mu[i, 0]
        for c in range(1, C):
            top[i] = max(top[i], mu[i, c])
        for c in range(C):
            E[i, c] = vector_exp(mu[i, c] - top[i])
    up = np.empty((n, 2))
    for i in range(n):
        up[i, 0] = vector_exp(min(a_scale * sd[i], _BOOST_LIMIT))
        up[i, 1] = vector_exp(min(b_scale * sd[i], _BOOST_LIMIT))
    return E, top, up


@njit(cache=True, nogil=True)
def _logs(values):
    """``log`` of positive ``values``, vectorised where that keeps every digit."""
    out = np.empty(values.size)
    for t in range(values.size):
        out[t] = vector_log1p(values[t] - 1.0)
    for t in range(values.size):
        if values[t] < 0.5:  # 1 + (value - 1) would lose the value's low digits
            out[t] = math.log(values[t])
    return out


@njit(cache=True, nogil=True)
def _simplex_node_sums(E, up, S, has_vertices):
    """Every node's sum of exponentials, ``(n, S)`` in the rule's order."""
    n, C = E.shape
    n_pairs = C * (C - 1) // 2
    T = np.empty((n, S))
    for i in range(n):
        total = 0.0
        for c in range(C):
            total += E[i, c]
        T[i, 0] = total
        boost_a, boost_b = up[i, 0], up[i, 1]
        for j in range(C if has_vertices else 0):
            others = 0.0
            for c in range(C):
                if c != j:
                    others += E[i, c]
            T[i, 1 + j] = others + E[i, j] * boost_a
            T[i, 1 + C + j] = others + E[i, j] / boost_a
        node = 1 + (2 * C if has_vertices else 0)
        for j in range(C):
            for k in range(j + 1, C):
                others = 0.0
                for c in range(C):
                    if c != j and c != k:
                        others += E[i, c]
                pair = E[i, j] + E[i, k]
                T[i, node] = others + pair * boost_b
                T[i, node + n_pairs] = others + pair / boost_b
                node += 1
    return T


@njit(cache=True, nogil=True)
def _simplex_class_slopes(E, share, boost_a, boost_b, has_vertices, boosted, d_mu):
    """``d_mu`` of one point, less the label's 1, into ``d_mu``."""
    C = E.size
    n_pairs = C * (C - 1) // 2
    n_vertex_nodes = 2 * C if has_vertices else 0
    # d_mu_c = -E_c sum_k share_k e^(boost of c at k): the sum of every
    # share plus each boosted node's share times (e^boost - 1). Where one
    # node's T is tiny (the top class pushed down, the rest far below) its
    # share is huge and the two parts cancel; E_c times the sum of shares
    # bounds what is lost, and past _CANCEL_BOUND the sum takes its terms
    # one class at a time, all of them positive.
    shares = 0.0
    for t in range(share.size):
        shares += share[t]
    boosted[:] = 0.0
    grow_a, shrink_a = boost_a - 1.0, 1.0 / boost_a - 1.0
    grow_b, shrink_b = boost_b - 1.0, 1.0 / boost_b - 1.0
    for j in range(C if has_vertices else 0):
        boosted[j] += share[1 + j] * grow_a + share[1 + C + j] * shrink_a
    node = 1 + n_vertex_nodes
    for j in range(C):
        for k in range(j + 1, C):
            moved = share[node] * grow_b + share[node + n_pairs] * shrink_b
            boosted[j] += moved
            boosted[k] += moved
            node += 1
    for c in range(C):
        if E[c] * shares <= _CANCEL_BOUND:
            d_mu[c] = -E[c] * (shares + boosted[c])
        else:
            d_mu[c] = -E[c] * _positive_share_sum(
                share, c, C, n_pairs, has_vertices, boost_a, boost_b
            )


@njit(cache=True, nogil=True)
def _positive_share_sum(share, c, C, n_pairs, has_vertices, boost_a, boost_b):
    """``sum_k share_k e^(boost of class c at node k)``, term by term."""
    total = share[0]
    n_vertex_nodes = 2 * C if has_vertices else 0
    for j in range(C if has_vertices else 0):
        up_q, down_q = share[1 + j], share[1 + C + j]
        if j == c:
            total += up_q * boost_a + down_q / boost_a
        else:
            total += up_q + down_q
    node = 1 + n_vertex_nodes
    for j in range(C):
        for k in range(j + 1, C):
            up_q, down_q = share[node], share[node + n_pairs]
            if j == c or k == c:
                total += up_q * boost_b + down_q / boost_b
            else:
                total += up_q + down_q
            node += 1
    return total


@njit(cache=True, nogil=True)
def _shifted_logits(mu, sd, eps_t):
    """``F - max_c F`` of shape (n, C, S), ``F = mu_ic + sd_i eps_t[c, s]``."""
    n, C = mu.shape
    S = eps_t.shape[1]
    shifted = np.empty((n, C, S))
    top = np.empty(S)
    for i in range(n):
        for s in range(S):
            top[s] = -np.inf
        for c in range(C):
            row = shifted[i, c]
            for s in range(S):
                row[s] = mu[i, c] + sd[i] * eps_t[c, s]
                top[s] = max(top[s], row[s])
        for c in range(C):
            row = shifted[i, c]
            for s in range(S):
                row[s] -= top[s]
    return shifted


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
    >>> from skgp_bayes.targets._likelihood_numba import logit_rules
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


@njit(cache=True, nogil=True, error_model="numpy")
def logit_expectation(y, mu, sd, nodes, weights, counts, limits):
    """Gauss-Hermite ``E[log sigmoid(s_i f_i)]`` and its gradients.

    The same rule as :meth:`skgp_bayes.likelihoods.Bernoulli.
    expected_log_prob` with the logistic link (``s_i = 2 y_i - 1``, nodes
    ``mu_i + sd_i x_k``), without the NumPy version's temporaries of size
    ``n * K``, whose cost was half of a sparse-target gradient at a few
    hundred points. Each point takes the fewest nodes of
    :func:`logit_rules` that resolve its ``sd`` to 1e-12, and the
    likelihood's own rule beyond :data:`LOGIT_RULE_LIMITS`. The variance
    derivative is the exact derivative of the rule, ``sum_k w_k g_k x_k /
    (2 sd_i)``; the caller handles variances so small that this quotient
    loses its digits. Compiled with NumPy's error model: Python's inserts a
    zero test before every division, which stops the vectorisation of
    :func:`~skgp_bayes._vector_exp.vector_log1p`.

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
    rule = np.empty(n, dtype=np.int64)
    start = np.empty(n + 1, dtype=np.int64)
    start[0] = 0
    for i in range(n):
        r = 0
        while sd[i] > limits[r]:
            r += 1
        rule[i] = r
        start[i + 1] = start[i] + counts[r]
    # Three passes, so that the transcendental one has no reduction in it
    # and vectorises: the node arguments, log sigmoid and sigmoid(-z) at
    # every node of every point, then the weighted sums per point.
    z = np.empty(start[n])
    for i in range(n):
        sign = 2.0 * y[i] - 1.0
        r = rule[i]
        for k in range(counts[r]):
            z[start[i] + k] = sign * (mu[i] + sd[i] * nodes[r, k])
    log_sig = np.empty(start[n])
    tail = np.empty(start[n])
    # One exp and one log1p of -|z| give both terms on either side; in two
    # loops, which LLVM vectorises where it left the fused one scalar (20
    # against 14 us for 4,800 nodes).
    for t in range(start[n]):
        zt = z[t]
        e = vector_exp(-abs(zt))
        log_sig[t] = e
        tail[t] = (e if zt >= 0.0 else 1.0) / (1.0 + e)
    for t in range(start[n]):
        zt = z[t]
        log_sig[t] = (zt if zt < 0.0 else 0.0) - vector_log1p(log_sig[t])
    elp = np.empty(n)
    d_mu = np.empty(n)
    d_var = np.empty(n)
    for i in range(n):
        sign = 2.0 * y[i] - 1.0
        r = rule[i]
        value = 0.0
        slope = 0.0
        moment = 0.0
        for k in range(counts[r]):
            w = weights[r, k]
            g = w * sign * tail[start[i] + k]
            value += w * log_sig[start[i] + k]
            slope += g
            moment += g * nodes[r, k]
        elp[i] = value
        d_mu[i] = slope
        d_var[i] = moment / (2.0 * sd[i])
    return elp, d_mu, d_var


# logit_joint's outcomes.
DONE, NOT_PSD, SMALL_VARIANCE = 0, 1, 2


@njit(cache=True, nogil=True)
def logit_joint(
    X, Z, theta, phi_defaults, theta_index, base, jitter, v, y, scale,
    nodes, weights, counts, limits, small_var, lapack, work,
):  # fmt: skip
    """The Bernoulli-logit whitened target's data term, prior on ``v`` and
    gradients, in one call.

    :func:`forward`, :func:`logit_expectation` and :func:`backward` chained
    without returning to Python between them: the value ``scale sum_i
    E[log sigmoid(s_i f_i)] - v'v / 2`` (no hyperparameter prior), its
    gradient in the kernel's ``theta`` and in ``v``.

    Parameters
    ----------
    X, Z, base, jitter, v
        As in :func:`forward`; ``v`` of shape (m, 1).
    theta, phi_defaults, theta_index
        The kernel's log hyperparameters and its spec's layout (see
        :func:`~skgp_bayes.targets._sparse_numba.kernel_scales`, which
        needs one length scale or one per input column).
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    scale : float
        The minibatch factor of the data term.
    nodes, weights, counts, limits
        The rules of :func:`logit_rules`.
    small_var : float
        Below this conditional variance the likelihood's own rule applies
        (the quadrature's variance derivative loses its digits).
    lapack : tuple of int
        :data:`LAPACK`.
    work : ndarray
        Scratch memory (see :func:`~skgp_bayes.targets._sparse_numba.forward`).

    Returns
    -------
    status : int
        :data:`DONE`; :data:`NOT_PSD` when the jittered ``K(Z, Z)`` is not
        positive definite; :data:`SMALL_VARIANCE` when a conditional
        variance is below ``small_var`` (the caller takes the general
        path). The other outputs are meaningful only with :data:`DONE`.
    value : float
    g_theta : ndarray of shape (len(theta_index),)
    g_v : ndarray of shape (m,)
    """
    n = X.shape[0]
    m = Z.shape[0]
    g_v = np.zeros(m)
    g_theta = np.zeros(theta_index.size)
    variance, noise, inv_ell, ard = kernel_scales(
        theta, phi_defaults, theta_index, X.shape[1]
    )
    ok, R, A, gamma, free, mu, Kuu, Kuf = forward(
        X, Z, inv_ell, variance, noise, base, jitter, v, lapack, work
    )
    if not ok:
        return NOT_PSD, 0.0, g_theta, g_v
    sd = np.empty(n)
    for i in range(n):
        if gamma[i] < small_var:
            return SMALL_VARIANCE, 0.0, g_theta, g_v
        sd[i] = math.sqrt(gamma[i])
    elp, d_mu, d_var = logit_expectation(
        y, np.ascontiguousarray(mu[:, 0]), sd, nodes, weights, counts, limits
    )
    value, g_phi, g_v = _whitened_gradients(
        X, Z, inv_ell, variance, noise, base, ard, jitter, v, lapack, work,
        R, A, Kuu, Kuf, free, scale, elp, d_mu.reshape((n, 1)), d_var,
    )  # fmt: skip
    return DONE, value, in_theta(g_phi, theta_index), g_v


@njit(cache=True, nogil=True)
def softmax_joint(
    X, Z, theta, phi_defaults, theta_index, base, jitter, v, labels, scale,
    eps, weights, on_simplex, lapack, work,
):  # fmt: skip
    """:func:`logit_joint` for the softmax likelihood (``v`` of shape (m, C)).

    The expectation is :func:`softmax_expectation` with the nodes and
    weights ``eps``, ``weights``, or :func:`simplex_softmax_expectation`
    where ``on_simplex`` says they are the simplex rule's; ``labels`` are
    class indices. There is no
    small-variance hand-over (the softmax rule has none). Returns
    ``(status, value, g_theta, g_v)`` with ``g_v`` of shape ``(m * C,)``
    (row-major, as ``v.ravel()``); ``status`` is :data:`DONE` or
    :data:`NOT_PSD`.
    """
    n = X.shape[0]
    C = v.shape[1]
    variance, noise, inv_ell, ard = kernel_scales(
        theta, phi_defaults, theta_index, X.shape[1]
    )
    ok, R, A, gamma, free, mu, Kuu, Kuf = forward(
        X, Z, inv_ell, variance, noise, base, jitter, v, lapack, work
    )
    if not ok:
        return NOT_PSD, 0.0, np.zeros(0), np.zeros(0)
    sd = np.empty(n)
    for i in range(n):
        sd[i] = math.sqrt(gamma[i])
    if on_simplex:
        elp, d_mu, d_var_sum = simplex_softmax_expectation(labels, mu, sd, eps, weights)
    else:
        elp, d_mu, d_var = softmax_expectation(labels, mu, sd, eps, weights)
        d_var_sum = np.zeros(n)
        for i in range(n):
            for c in range(C):
                d_var_sum[i] += d_var[i, c]
    value, g_phi, g_v = _whitened_gradients(
        X, Z, inv_ell, variance, noise, base, ard, jitter, v, lapack, work,
        R, A, Kuu, Kuf, free, scale, elp, d_mu, d_var_sum,
    )  # fmt: skip
    return DONE, value, in_theta(g_phi, theta_index), g_v


@njit(cache=True, nogil=True)
def in_theta(g_phi, theta_index):
    """The gradient in the kernel's ``theta`` from the one in its ``phi``.

    ``phi = [log variance, log ell..., log noise]`` holds every entry of the
    kernel's layout, ``theta`` the free ones, ``phi[theta_index] = theta``
    (see :func:`~skgp_bayes.targets._sparse_numba.kernel_scales`).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._likelihood_numba import in_theta
    >>> in_theta(np.array([1.0, 2.0, 3.0]), np.array([0, 1]))
    array([1., 2.])
    """
    g_theta = np.empty(theta_index.size)
    for k in range(theta_index.size):
        g_theta[k] = g_phi[theta_index[k]]
    return g_theta


@njit(cache=True, nogil=True)
def _whitened_gradients(
    X, Z, inv_ell, variance, noise, base, ard, jitter, v, lapack, work,
    R, A, Kuu, Kuf, free, scale, elp, d_mu, d_var,
):  # fmt: skip
    """Value and gradients from the expectation's terms (see logit_joint).

    ``d_mu`` of shape (n, C) and ``d_var`` of shape (n,), the derivative in
    the variance that the latents share, unscaled; the clamped variances'
    entries are dropped here.
    """
    n, C = d_mu.shape
    m = Z.shape[0]
    data = 0.0
    g_mu = np.empty((n, C))
    gbar = np.empty(n)
    for i in range(n):
        data += elp[i]
        for c in range(C):
            g_mu[i, c] = scale * d_mu[i, c]
        gbar[i] = scale * d_var[i] if free[i] else 0.0
    vv = 0.0
    g_v = np.empty(m * C)
    Ag = A @ g_mu
    for j in range(m):
        for c in range(C):
            vv += v[j, c] * v[j, c]
            g_v[j * C + c] = Ag[j, c] - v[j, c]
    g_phi = backward(
        X, Z, inv_ell, variance, noise, base, ard, jitter, R, A, Kuu, Kuf, v,
        g_mu, gbar, lapack, work,
    )  # fmt: skip
    return scale * data - 0.5 * vv, g_phi, g_v


@njit(cache=True, nogil=True)
def softmax_mean_proba(means, sd, nodes, weights):
    """``mean_s sum_k weights_k softmax(means[s, i] + sd[s, i] * nodes[r, k])``.

    The class probabilities of a mixture of draws, each with latent means
    ``means[s, i]`` (one per class) and standard deviations ``sd[s, i]``
    (one shared by the classes, or one per class), averaged over the draws
    in one pass (no array of ``S * n * K * C`` values is ever built). The
    nodes are shared by every draw (``r = 0``) or are each draw's own
    (``r = s``).

    Parameters
    ----------
    means : ndarray of shape (S, n, C)
    sd : ndarray of shape (S, n, 1) or (S, n, C)
    nodes : ndarray of shape (1, K, C) or (S, K, C)
    weights : ndarray of shape (K,)

    Returns
    -------
    proba : ndarray of shape (n, C)
        Rows normalised to sum to one exactly.
    """
    S, n, C = means.shape
    K = nodes.shape[1]
    shared = nodes.shape[0] == 1
    # 0 where the classes share one sd, 1 where each has its own
    class_step = 1 if sd.shape[2] > 1 else 0
    out = np.zeros((n, C))
    f = np.empty(C)
    for s in range(S):
        r = 0 if shared else s
        for i in range(n):
            for k in range(K):
                top = -np.inf
                for c in range(C):
                    f[c] = means[s, i, c] + sd[s, i, c * class_step] * nodes[r, k, c]
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
