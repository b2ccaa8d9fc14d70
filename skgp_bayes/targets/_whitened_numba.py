"""The whitened latent target's value and gradient in one compiled call.

:class:`~skgp_bayes.targets.whitened.WhitenedLatentTarget` with one shared
``[c *] RBF [+ White]`` kernel and a Bernoulli-logit or softmax likelihood,
the Stein classifier's default, evaluated without returning to Python:
the Gram matrix by one product of the scaled inputs, ``dpotrf``, ``F = L
nu``, the likelihood, ``U = L' G``, the reverse pass through the factor
(as :func:`~skgp_bayes.targets.whitened._reverse_whitened`: one
``dsygst`` from 128 rows, two compiled triangular solves below, where
LAPACK's unblocked ``dsygst`` is the slower: 18 against 31 us at 48 rows)
and the kernel contraction (``_RBFGram.contract``'s), in that module's
order and with its conventions (the flush of tiny entries, the relative
jitter and its weight).

At the sizes a classifier's default fit runs at, the interpreted layers
cost more than the arithmetic: on 48 rows and two inputs an evaluation
took about 200 us, of which the factorisation and the congruence were
under 20. From a few hundred rows the LAPACK calls dominate and the
compiled call saves the interpreter's 0.1-0.2 ms around them. The call
holds no interpreter lock, so particles evaluated on threads run side by
side.

A status :data:`NOT_PSD` (the jittered Gram matrix has no Cholesky
factor, or its factor is not finite) hands the evaluation back to the
interpreted target, which raises its :class:`~skgp_bayes.exceptions.NotPSDError`
with the hyperparameters named.
"""

import math

import numpy as np
from numba import njit

from .._vector_exp import vector_exp, vector_log1p
from ..linalg._nogil_lapack import cholesky_in_place_c
from ..linalg._numba_ops import TINY, copy_matrix, copy_vector
from ._sparse_numba import (
    LAPACK,
    congruence_with_jitter_weight,
    cross_contract,
    kernel_scales,
    log_prior_theta,
    scaled,
)

__all__ = [
    "LOGIT",
    "NOT_PSD",
    "OK",
    "SOFTMAX",
    "WHITENED_ROUTINES",
    "WORK_MATRICES",
    "contract_rbf",
    "jittered_gram",
    "rbf_gram_noiseless",
    "whitened_value_and_grad",
    "work_matrix",
]

LOGIT, SOFTMAX = 0, 1
OK, NOT_PSD = 0, 1
# dpotrf, dtrsm, dsygst and dsyrk, as the sparse targets take them
WHITENED_ROUTINES = LAPACK
# (n, n) matrices of an evaluation's scratch memory (see work_matrix)
WORK_MATRICES = 4


@njit(cache=True, nogil=True)
def rbf_gram_noiseless(Xs, variance):
    """``variance exp(-|xs_a - xs_b|^2 / 2)`` of scaled inputs, by one product.

    The squared distances as ``s_a + s_b - 2 xs_a.xs_b``, clipped at zero
    (rounding can leave a tiny negative distance between coincident
    points) and the diagonal set to ``variance`` exactly, as
    ``_RBFGram._noiseless`` does; one exponential per pair.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._whitened_numba import rbf_gram_noiseless
    >>> K = rbf_gram_noiseless(np.array([[0.0], [1.0]]), 2.0)
    >>> bool(np.allclose(K, [[2.0, 2.0 * np.exp(-0.5)], [2.0 * np.exp(-0.5), 2.0]]))
    True
    """
    K = np.empty((Xs.shape[0], Xs.shape[0]))
    _rbf_gram_into(Xs, variance, K)
    return K


@njit(cache=True, nogil=True)
def _rbf_gram_into(Xs, variance, K):
    """:func:`rbf_gram_noiseless` written into ``K``."""
    n, d = Xs.shape
    np.dot(Xs, np.ascontiguousarray(Xs.T), K)
    sq = np.empty(n)
    for a in range(n):
        s = 0.0
        for c in range(d):
            s += Xs[a, c] * Xs[a, c]
        sq[a] = s
    for a in range(n):
        row = K[a]
        for b in range(a):
            row[b] = variance * vector_exp(0.5 * min(2.0 * row[b] - sq[a] - sq[b], 0.0))
        row[a] = variance
    for a in range(n):
        for b in range(a):
            K[b, a] = K[a, b]


@njit(cache=True, nogil=True)
def jittered_gram(K, noise, jitter):
    """The target's ``gram``: ``K + noise I`` flushed, then jittered (a copy).

    Entries below :data:`~skgp_bayes.linalg._numba_ops.TINY` in magnitude
    set to zero, then ``jitter`` times the mean diagonal added to it.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._whitened_numba import jittered_gram
    >>> jittered_gram(np.array([[1.0, 1e-300], [1e-300, 1.0]]), 0.5, 0.1)
    array([[1.65, 0.  ],
           [0.  , 1.65]])
    """
    out = np.empty_like(K)
    _jittered_into(K, noise, jitter, out)
    return out


@njit(cache=True, nogil=True)
def _jittered_into(K, noise, jitter, out):
    """:func:`jittered_gram` written into ``out``."""
    n = K.shape[0]
    copy_matrix(out, K)
    total = 0.0
    for a in range(n):
        out[a, a] += noise
        for b in range(n):
            if abs(out[a, b]) < TINY:
                out[a, b] = 0.0
        total += out[a, a]
    delta = jitter * total / n
    for a in range(n):
        out[a, a] += delta


@njit(cache=True, nogil=True)
def _jittered_factor(K, noise, jitter, dpotrf, L):
    """Whether :func:`jittered_gram` has a finite lower factor, written into ``L``."""
    _jittered_into(K, noise, jitter, L)
    ok = cholesky_in_place_c(L, dpotrf) == 0
    for a in range(K.shape[0]):
        ok = ok and math.isfinite(L[a, a])
    return ok


@njit(cache=True, nogil=True, error_model="numpy")
def _likelihood(F, labels, kind, G):
    """``sum_i log p(y_i | F_i)``; its gradient in ``F`` written into ``G``.

    Logit (one latent): ``log sigmoid(s f)`` and ``s sigmoid(-s f)`` with
    ``s = 2 y - 1``, from one exponential of ``-|z|``. Softmax:
    ``F_iy - logsumexp(F_i)`` and ``one_hot(y) - softmax(F_i)``.
    """
    n, C = F.shape
    value = 0.0
    if kind == LOGIT:
        for i in range(n):
            sign = 2.0 * labels[i] - 1.0
            z = sign * F[i, 0]
            e = vector_exp(-abs(z))
            value += min(z, 0.0) - vector_log1p(e)
            G[i, 0] = sign * (e if z >= 0.0 else 1.0) / (1.0 + e)
        return value
    for i in range(n):
        top = F[i, 0]
        for c in range(1, C):
            top = max(top, F[i, c])
        total = 0.0
        for c in range(C):
            total += math.exp(F[i, c] - top)
        lse = top + math.log(total)
        y = int(labels[i])
        value += F[i, y] - lse
        for c in range(C):
            G[i, c] = (1.0 if c == y else 0.0) - math.exp(F[i, c] - lse)
    return value


@njit(cache=True, nogil=True)
def contract_rbf(Kbar, K, Xs, noise, ard, g_phi):
    """``sum_ab Kbar_ab dK_ab / dphi`` for the RBF, into ``g_phi``.

    ``_RBFGram.contract``'s arithmetic, which is the sparse targets'
    :func:`~skgp_bayes.targets._sparse_numba.cross_contract` with the
    training inputs on both sides (``M = Kbar o K``, the noiseless ``K``,
    and one ``(n, n) x (n, d)`` product), and the noise's entry, ``noise
    tr(Kbar)``. ``Kbar`` is symmetric; ``g_phi`` is ``[log variance, log
    ell..., log noise]``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._whitened_numba import contract_rbf
    >>> g_phi = np.empty(3)
    >>> contract_rbf(np.eye(2), np.eye(2), np.zeros((2, 1)), 0.5, False, g_phi)
    >>> g_phi  # d tr(K) / d log variance = 2; the noise's: 0.5 * 2
    array([2., 0., 1.])
    """
    _contract_rbf_with(Kbar, K, Xs, noise, ard, g_phi, np.empty((K.shape[0], 0)))


@njit(cache=True, nogil=True)
def _contract_rbf_with(Kbar, K, Xs, noise, ard, g_phi, scratch):
    """:func:`contract_rbf` with ``scratch`` for ``Kbar o K`` where it is ``(n, n)``."""
    n = K.shape[0]
    g_phi[:] = 0.0
    # The RBF's slope is K itself, so the variance argument goes unread;
    # K's diagonal is the variance exactly.
    cross_contract(Xs, Xs, K, Kbar, K[0, 0], 0, ard, g_phi, np.empty((0, 0)), scratch)
    trace = 0.0
    for a in range(n):
        trace += Kbar[a, a]
    g_phi[g_phi.size - 1] = noise * trace


@njit(cache=True, nogil=True)
def _hyper_gradient(L, U, N, K, Xs, noise, ard, jitter, routines, g_phi, S, scratch):
    """``dF/dphi`` of ``F = sum_c g_c' L nu_c`` through the factor, into ``g_phi``.

    ``Kbar = L^-T sym(Phi(tril(U N'))) L^-1``, whose symmetric middle has
    the lower triangle ``U N' / 2``, formed in ``S``; then the jitter's
    weight and the kernel contraction, with ``scratch`` for its ``Kbar o
    K``. ``L`` is reversed and restored during the call.
    """
    np.dot(U, np.ascontiguousarray(N.T), S)
    n = S.shape[0]
    for a in range(n):
        for b in range(n):
            S[a, b] *= 0.5
    congruence_with_jitter_weight(L, S, jitter, routines)
    _contract_rbf_with(S, K, Xs, noise, ard, g_phi, scratch)


@njit(cache=True, nogil=True)
def work_matrix(work, slot, n):
    """Matrix ``slot`` of ``work`` as ``(n, n)``, or a fresh one.

    The slots hold the Gram matrix, its factor, the factor's transpose
    (then the contraction's ``Kbar o K``) and ``Kbar``. A buffer of any
    other length than ``WORK_MATRICES * n * n`` gives fresh matrices.
    One flat array, not a tuple of matrices, as
    :func:`~skgp_bayes.targets._sparse_numba.scratch` takes, for the
    same reason (each array argument costs its unboxing).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._whitened_numba import WORK_MATRICES, work_matrix
    >>> work = np.zeros(WORK_MATRICES * 9)
    >>> work_matrix(work, 1, 3).shape, np.shares_memory(work_matrix(work, 1, 3), work)
    ((3, 3), True)
    >>> np.shares_memory(work_matrix(np.empty(0), 1, 3), work)
    False
    """
    size = n * n
    if work.size != WORK_MATRICES * size:
        return np.empty((n, n))
    return work[slot * size : (slot + 1) * size].reshape((n, n))


# Long because the docstring documents eleven parameters; the body is 45 lines.
@njit(cache=True, nogil=True)
def whitened_value_and_grad(
    params, X, phi_defaults, theta_index, jitter, labels, kind, n_latent, prior,
    routines, work,
):  # fmt: skip
    """``(status, value, grad)`` of the whitened target at ``params``.

    Parameters
    ----------
    params : ndarray of shape (p + n_latent * n,)
        ``[theta, nu]``: the kernel's log hyperparameters, then the
        whitened latents, latent ``c`` at ``p + c n`` to ``p + (c + 1) n``.
    X : ndarray of shape (n, d)
    phi_defaults, theta_index
        The kernel spec's layout (see
        :func:`~skgp_bayes.targets._sparse_numba.kernel_scales`).
    jitter : float
        The relative jitter of the Gram matrix's diagonal.
    labels : ndarray of shape (n,)
        ``{0, 1}`` for :data:`LOGIT`, class indices for :data:`SOFTMAX`.
    kind : int
        :data:`LOGIT` or :data:`SOFTMAX`.
    n_latent : int
        1 for :data:`LOGIT`, the number of classes for :data:`SOFTMAX`.
    prior : tuple of ndarray
        ``(kind, a, b, const)`` of
        :func:`~skgp_bayes.targets._sparse_numba.log_prior_theta`, all of
        length zero for a flat prior.
    routines : tuple of int
        :data:`WHITENED_ROUTINES`.
    work : ndarray of shape (WORK_MATRICES * n * n,) or (0,)
        Scratch memory for the ``(n, n)`` matrices (see :func:`work_matrix`);
        any other length allocates them afresh. The results do not depend
        on it.

    Returns
    -------
    status : int
        :data:`OK`, or :data:`NOT_PSD` (the other outputs are then
        meaningless).
    value : float
        ``-inf`` where not finite.
    grad : ndarray of shape (params.size,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._whitened_numba import (
    ...     LOGIT, OK, WHITENED_ROUTINES, whitened_value_and_grad)
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> flat = tuple(np.zeros(0, dtype=k) for k in (np.int64, float, float, float))
    >>> status, value, grad = whitened_value_and_grad(
    ...     np.zeros(7), X, np.array([0.0, 0.0, -np.inf]), np.array([1]), 1e-6,
    ...     (X[:, 0] > 0).astype(float), LOGIT, 1, flat, WHITENED_ROUTINES,
    ...     np.empty(0))
    >>> status == OK, bool(np.isclose(value, 6 * np.log(0.5))), grad.shape
    (True, True, (7,))
    """
    n, d = X.shape
    p = theta_index.size
    grad = np.zeros(params.size)
    theta = params[:p].copy()
    variance, noise, inv_ell, ard = kernel_scales(theta, phi_defaults, theta_index, d)
    Xs = scaled(X, inv_ell)
    K = work_matrix(work, 0, n)
    _rbf_gram_into(Xs, variance, K)
    L = work_matrix(work, 1, n)
    if not _jittered_factor(K, noise, jitter, routines[0], L):
        return NOT_PSD, 0.0, grad
    C = n_latent
    N = np.empty((n, C))
    nu_sq = 0.0
    for c in range(C):
        for a in range(n):
            t = params[p + c * n + a]
            N[a, c] = t
            nu_sq += t * t
    F = L @ N
    G = np.empty((n, C))
    value = _likelihood(F, labels, kind, G) - 0.5 * nu_sq
    if prior[0].size:
        prior_value, prior_grad = log_prior_theta(theta, *prior)
        value += prior_value
        copy_vector(grad[:p], prior_grad)
    LT = work_matrix(work, 2, n)
    copy_matrix(LT, L.T)
    U = LT @ G
    for c in range(C):
        for a in range(n):
            grad[p + c * n + a] = U[a, c] - N[a, c]
    if p:
        g_phi = np.empty(phi_defaults.size)
        # the transposed factor's matrix is free again: Kbar o K goes there
        S = work_matrix(work, 3, n)
        _hyper_gradient(L, U, N, K, Xs, noise, ard, jitter, routines, g_phi, S, LT)
        for k in range(p):
            grad[k] += g_phi[theta_index[k]]
    if not math.isfinite(value):
        value = -math.inf
    return OK, value, grad
