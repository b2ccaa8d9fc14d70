"""The degree-5 cubature rule for softmax expectations over the sum-zero
subspace, and the class probabilities it gives."""

import numpy as np

from ..likelihoods import sobol_normal_blocks
from . import _likelihood_numba

# Most sum-zero dimensions (classes minus one) for which softmax_rule has a
# degree-5 rule with no negative weight: Stroud's fully symmetric rule up to
# 4, the simplex rule from 5 to 7; more classes use the likelihood's draws.
_MAX_SYMMETRIC_DIM = 4
_MAX_RULE_DIM = 7

# Fewest nodes, summed over the draws, of softmax_mixture_proba: a mixture of
# a few draws (a short run asked for by hand, a Stein classifier's ten
# particles) still averages 1,000 nodes.
_MIN_MIXTURE_NODES = 1000
# Most nodes a draw: a single Gaussian (the selective classifier's q) pays
# what its 256 random draws cost before, at a fourth to a sixth of their
# error on the defaults suite's iris, wine and modechoice fits; 1,024 nodes
# would cut it 3.4-4.2 times more at four times the cost.
_MAX_DRAW_NODES = 256


def _helmert_basis(n_classes):
    """Orthonormal basis of the sum-zero subspace, shape (C, C - 1)."""
    C = n_classes
    U = np.zeros((C, C - 1))
    for k in range(1, C):
        U[:k, k - 1] = 1.0
        U[k, k - 1] = -float(k)
        U[:, k - 1] /= np.sqrt(k * (k + 1.0))
    return U


def softmax_rule(n_classes):
    """Degree-5 cubature nodes for ``E[log softmax(mu + s eps)[y]]``.

    ``log softmax(F)`` does not change when a constant is added to every
    entry of ``F``, so with ``eps ~ N(0, I_C)`` only the projection of
    ``eps`` onto the sum-zero subspace matters, a standard normal in
    ``n = C - 1`` dimensions (the mean ``s * mean(eps)`` added to ``F_y``
    and to the log-sum-exp cancels). Up to five classes (``n <= 4``) the
    nodes are the fully symmetric degree-5 rule with ``2 n^2 + 1`` points
    (Stroud, *Approximate Calculation of Multiple Integrals*, 1971, rule
    E_n^r2 5-2: the centre with weight ``2 / (n + 2)``, ``+-sqrt(n + 2)
    e_i`` with ``(4 - n) / (2 (n + 2)^2)`` and ``sqrt((n + 2) / 2) (+-e_i
    +- e_j)`` with ``1 / (n + 2)^2``), whose axis weight turns negative
    beyond. From six to eight classes they are the degree-5 rule built on
    the regular simplex (Mysovskikh, *Interpolatory Cubature Formulas*,
    1981; the fifth-degree rule of high-degree cubature Kalman filters):
    the centre with weight ``2 / (n + 2)`` and, at radius ``sqrt(n + 2)``,
    the ``C`` simplex vertices ``a_j`` (here the class axes ``e_j`` projected
    onto the sum-zero subspace) and the ``C (C - 1) / 2`` normalised
    midpoints of pairs of them, each with its mirror image, with weights
    ``n / (n + 2)`` times ``n (7 - n) / (2 (n + 1)^2 (n + 2))`` and ``2 (n -
    1)^2 / (n (n + 1)^2 (n + 2))``: ``n^2 + 3 n + 3`` points (``n^2 + n +
    1`` at eight classes, where the vertices' weight is 0), non-negative up
    to ``n = 7``. Either rule integrates every polynomial of degree at most
    5 exactly. ``log softmax`` is smooth, so against the expectation
    computed to 1e-10 (a 30-point Gauss-Hermite product rule) on random
    means of scale 3, Stroud's rule erred at latent standard deviations
    0.3, 1 and 2 by 3e-6, 1.5e-3 and 2.4e-2 (root mean square, three
    classes), where 100 antithetic Monte Carlo draws were off by 2e-3,
    2e-2 and 6e-2, and biased by nearly as much: 9 nodes (3 classes) or 19
    (4 classes) instead of 100, and a more accurate integral. The simplex
    rule at six to eight classes (200 points, against 2^20 scrambled Sobol
    nodes, whose error was below 3e-6): 2.8e-6-2.9e-6, 1.6e-3-1.7e-3 and
    2.6e-2-2.7e-2, where the likelihood's 100 draws erred by 2.1e-3-3.2e-3,
    2.0e-2-3.0e-2 and 5.6e-2-8.6e-2; 43 nodes at six classes, 57 at seven
    and eight.

    Parameters
    ----------
    n_classes : int
        ``C``, from 2 to 8.

    Returns
    -------
    nodes : ndarray of shape (n_nodes, C)
        Points of the rule in the sum-zero subspace, as rows of length ``C``
        (``2 (C - 1)^2 + 1`` of them up to five classes, less any of weight
        0; ``C^2 + C + 1`` at six and seven classes, ``C^2 - C + 1`` at
        eight).
    weights : ndarray of shape (n_nodes,)
        Non-negative, summing to one.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.sparse import softmax_rule
    >>> nodes, weights = softmax_rule(3)
    >>> nodes.shape, float(weights.sum())
    ((9, 3), 1.0)
    >>> bool(np.allclose(nodes.sum(axis=1), 0.0))
    True
    >>> nodes, weights = softmax_rule(6)
    >>> nodes.shape, bool(weights.min() > 0)
    ((43, 6), True)
    """
    n = int(n_classes) - 1
    if not 1 <= n <= _MAX_RULE_DIM:
        raise ValueError(f"n_classes must lie in [2, {_MAX_RULE_DIM + 1}].")
    if n > _MAX_SYMMETRIC_DIM:
        return _simplex_rule(n + 1)
    return _symmetric_rule(n)


def _symmetric_rule(n):
    """:func:`softmax_rule`'s fully symmetric nodes and weights (``n <= 4``)."""
    points = [np.zeros(n)]
    weights = [2.0 / (n + 2.0)]
    eye = np.eye(n)
    for i in range(n):
        for sign in (1.0, -1.0):
            points.append(sign * np.sqrt(n + 2.0) * eye[i])
            weights.append((4.0 - n) / (2.0 * (n + 2.0) ** 2))
    for i in range(n):
        for j in range(i + 1, n):
            for a in (1.0, -1.0):
                for b in (1.0, -1.0):
                    points.append(np.sqrt((n + 2.0) / 2.0) * (a * eye[i] + b * eye[j]))
                    weights.append(1.0 / (n + 2.0) ** 2)
    weights = np.array(weights)
    keep = weights > 0  # n = 4 gives the axis points weight 0
    nodes = np.array(points)[keep] @ _helmert_basis(n + 1).T
    return np.ascontiguousarray(nodes), weights[keep]


def _simplex_rule(n_classes):
    """:func:`softmax_rule`'s simplex-based nodes and weights (``C`` to 8)."""
    C = n_classes
    n = C - 1
    vertices = np.eye(C) - 1.0 / C  # the regular simplex of the sum-zero subspace
    first, second = np.triu_indices(C, 1)
    midpoints = vertices[first] + vertices[second]
    radius = np.sqrt(n + 2.0)
    shell = n / (n + 2.0)  # the centre takes the rest, 2 / (n + 2)
    vertex_weight = shell * n * (7.0 - n) / (2.0 * (n + 1.0) ** 2 * (n + 2.0))
    midpoint_weight = shell * 2.0 * (n - 1.0) ** 2 / (n * (n + 1.0) ** 2 * (n + 2.0))
    orbits = [(midpoints, midpoint_weight)]
    if vertex_weight > 0:  # 0 at eight classes
        orbits.insert(0, (vertices, vertex_weight))
    nodes, weights = [np.zeros((1, C))], [np.array([2.0 / (n + 2.0)])]
    for points, weight in orbits:
        on_sphere = radius * points / np.linalg.norm(points, axis=1, keepdims=True)
        nodes += [on_sphere, -on_sphere]
        weights.append(np.full(2 * len(points), weight))
    return np.ascontiguousarray(np.vstack(nodes)), np.concatenate(weights)


def softmax_rule_proba(means, variances):
    """Softmax class probabilities of a mixture of draws, by :func:`softmax_rule`.

    Accurate while the latent sds are small (errors below 3e-4 at 0.5) and
    biased beyond (up to 0.03-0.04 at 2); :func:`softmax_mixture_proba`,
    unbiased at any spread, gives the variational MCMC classifier's class
    probabilities.

    Parameters
    ----------
    means : ndarray of shape (S, n, C)
        Latent means of each draw, ``C`` from 2 to 8.
    variances : ndarray of shape (S, n)
        Latent variance of each draw, shared by the classes (as in the
        sparse model, where it is the conditional variance ``gamma``).

    Returns
    -------
    proba : ndarray of shape (n, C)
        ``E[softmax(F)]`` for each draw's ``F ~ N(mean, variance I)``,
        averaged over the draws; rows sum to one.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.sparse import softmax_rule_proba
    >>> means = np.array([[[2.0, 0.0, -2.0]], [[0.0, 0.0, 0.0]]])
    >>> proba = softmax_rule_proba(means, np.full((2, 1), 0.01))
    >>> proba.shape, bool(np.isclose(proba.sum(), 1.0))
    ((1, 3), True)
    >>> bool(proba[0, 0] > proba[0, 1] > proba[0, 2])
    True
    """
    means = np.ascontiguousarray(means, dtype=np.float64)
    nodes, weights = softmax_rule(means.shape[-1])
    return _mean_proba(means, variances, nodes[None], weights)


def _mean_proba(means, variances, nodes, weights):
    variances = np.asarray(variances, dtype=np.float64)
    if variances.ndim == means.ndim - 1:
        variances = variances[..., None]
    sd = np.sqrt(np.maximum(variances, 0.0))
    return _likelihood_numba.softmax_mean_proba(
        means, np.ascontiguousarray(sd), nodes, weights
    )


def softmax_mixture_proba(means, variances, random_state=0):
    """Softmax class probabilities of a mixture of draws, each with its own nodes.

    Every draw takes its own block of standard-normal nodes from one
    scrambled Sobol sequence
    (:func:`~skgp_bayes.likelihoods.sobol_normal_blocks`): a power of two
    of at least two points and at most 256, and more when the draws are
    few, so that there are at least 1,000 nodes in all where that allows
    (128 for each of ten particles, 256 for a single Gaussian). With 500
    draws or more each takes one point of the sequence and its mirror
    image, an antithetic pair.

    Nodes shared by every draw, as the likelihood's 100 fixed draws are,
    make errors that the draws share and that averaging over them does not
    remove: the mixture is then no more accurate than 100 nodes, at a cost
    of 100 per draw. The degree-5 rule (:func:`softmax_rule_proba`) is
    exact for small latent spreads but biased for large ones: against
    400,000 nodes, on random means of scale 3, its class probabilities were
    off by up to 4e-3 at a latent sd of 1, 0.03-0.04 at 2 and 0.11-0.15 at
    5 (three to five classes), where 256 nodes were off by up to 0.01, 0.02
    and 0.04; a kept draw's conditional sd away from the inducing inputs is
    of that size (90% of modechoice's test points and draws below 2.4, the
    largest 5.8). Nodes of each draw's own do not repeat one error in every
    draw, and as runs of one scrambled sequence the blocks together spread
    more evenly than independent sets would. Against each draw's own
    antithetic pair of random normal nodes (this function's former nodes),
    on synthetic mixtures of three and seven classes, the mixture's
    root-mean-square error was 0.55-0.7 times as large with 3,000 draws
    (latent sds 0.05-0.5 or 0.5-2.5) and 0.13-0.21 times with ten draws of
    128 nodes; at two nodes a draw, plain blocks of the sequence lost to
    the random pairs where the sds were small (1.27-1.36 times their error),
    hence the mirror images there. The estimate is unbiased for the
    mixture's exact probabilities. The nodes come from
    ``random_state`` and depend only on the number of draws and classes,
    never on the query points, so each point's probabilities do not depend
    on the others asked with it.

    Parameters
    ----------
    means : ndarray of shape (S, n, C)
        Latent means of each draw.
    variances : ndarray of shape (S, n), (S, n, 1) or (S, n, C)
        Latent variances of each draw: shared by the classes (as in the
        sparse model, where it is the conditional variance ``gamma``), or
        one per class.
    random_state : int, numpy Generator or None, default=0
        Seed of the nodes.

    Returns
    -------
    proba : ndarray of shape (n, C)
        ``E[softmax(F)]`` for each draw's ``F ~ N(mean, diag(variances))``,
        averaged over the draws; rows sum to one.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets.sparse import softmax_mixture_proba
    >>> means = np.zeros((50, 2, 8))
    >>> means[:, 0, 3] = 4.0
    >>> proba = softmax_mixture_proba(means, np.full((50, 2), 0.25))
    >>> proba.shape, bool(np.allclose(proba.sum(axis=1), 1.0))
    ((2, 8), True)
    >>> int(proba[0].argmax()), bool(np.abs(proba[1] - 1 / 8).max() < 0.02)
    (3, True)
    """
    means = np.ascontiguousarray(means, dtype=np.float64)
    n_draws, _, n_classes = means.shape
    per_draw = -(-_MIN_MIXTURE_NODES // n_draws)
    block_size = min(_MAX_DRAW_NODES, max(2, 1 << (per_draw - 1).bit_length()))
    if block_size == 2:
        # One point of the sequence and its mirror image: the pair cancels
        # the part of the softmax linear in the nodes, which dominates the
        # error where the latent sds are small.
        half = sobol_normal_blocks(n_draws, 1, n_classes, random_state)
        nodes = np.ascontiguousarray(np.concatenate([half, -half], axis=1))
    else:
        nodes = sobol_normal_blocks(n_draws, block_size, n_classes, random_state)
    return _mean_proba(means, variances, nodes, np.full(block_size, 1.0 / block_size))


def softmax_nodes(likelihood):
    """Nodes, weights and the form of the target's softmax expectation.

    :func:`softmax_rule` up to eight classes; beyond, where the rule has
    negative weights, the likelihood's own Monte Carlo draws. The third
    entry says whether the nodes are the simplex rule's (six to eight
    classes), which
    :func:`~skgp_bayes.targets._likelihood_numba.simplex_softmax_expectation`
    takes with a logarithm a node instead of ``C`` exponentials.
    """
    C = likelihood.n_classes
    if C - 1 <= _MAX_RULE_DIM:
        return (*softmax_rule(C), C - 1 > _MAX_SYMMETRIC_DIM)
    draws = np.ascontiguousarray(likelihood.default_draws())
    return draws, np.full(draws.shape[0], 1.0 / draws.shape[0]), False
