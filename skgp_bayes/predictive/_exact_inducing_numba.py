"""Compiled per-draw moments of an exact GP, for the fast-path kernels.

A sparse model whose inducing inputs are its training inputs is the exact
GP, and the exact GP's latent moments given ``(theta, s2)`` are closed
forms: ``mean = k(x, X) (K + s2 I)^-1 y`` and ``var = k(x, x) - k(x, X) (K
+ s2 I)^-1 k(X, x)``. :func:`~skgp_bayes.targets._sparse_numba.
inducing_projection` with the training inputs as ``Z`` and the relative
jitter ``s2 / (variance + white)`` factorises exactly ``K + s2 I`` (its
diagonal is ``(variance + white) (1 + jitter)``), so the loop below is that
projection per draw plus one solve for the mean.
"""

import numpy as np
from numba import njit

from ..targets._sparse_numba import inducing_projection, scaled, solve_lower

__all__ = ["exact_draw_moments"]


@njit(cache=True, nogil=True)
def exact_draw_moments(
    X, X_train, y, inv_ells, variances, whites, noises, base, lapack
):
    """Latent means and variances at ``X`` of each draw's exact GP posterior.

    Parameters
    ----------
    X : ndarray of shape (k, d)
    X_train : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        Training targets on the model's scale.
    inv_ells : ndarray of shape (J, d)
        Each draw's inverse length scales.
    variances, whites, noises : ndarray of shape (J,)
        Signal variance, WhiteKernel variance and likelihood noise variance.
    base : int
        Radial function code of :mod:`skgp_bayes.kernels._lowering`.
    lapack : tuple of int
        :data:`~skgp_bayes.targets._sparse_numba.LAPACK`.

    Returns
    -------
    ok : ndarray of bool of shape (J,)
        False where ``K + s2 I`` did not factorise (that draw's moments are
        not filled in).
    means, variances : ndarray of shape (J, k)
    """
    work = np.empty(0)
    J, k, n = inv_ells.shape[0], X.shape[0], X_train.shape[0]
    ok = np.ones(J, dtype=np.bool_)
    means = np.zeros((J, k))
    spread = np.zeros((J, k))
    rhs = np.empty((n, 1))
    for j in range(J):
        Xs = scaled(X, inv_ells[j])
        Ts = scaled(X_train, inv_ells[j])
        relative = noises[j] / (variances[j] + whites[j])
        done, _, R, _, A, gamma, _ = inducing_projection(
            Xs, Ts, variances[j], whites[j], base, relative, lapack, work
        )
        if not done:
            ok[j] = False
            continue
        for p in range(n):
            rhs[p, 0] = y[p]
        # one column: the compiled substitution, not BLAS's dtrsm, whose
        # single-column call cost 0.3 ms at n = 216 on one thread
        w = solve_lower(R, rhs)
        for p in range(n):  # A is (n, k) in C order: rows outside
            for i in range(k):
                means[j, i] += A[p, i] * w[p, 0]
        for i in range(k):
            spread[j, i] = gamma[i]
    return ok, means, spread
