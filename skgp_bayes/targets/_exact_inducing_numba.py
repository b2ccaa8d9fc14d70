"""Exact draws of ``v | theta, y`` for many hyperparameter draws in one call.

The update of :mod:`skgp_bayes.targets.exact_inducing` (module notes
there), draw by draw: ``K(Z, Z)`` with the sparse targets' jitter, its
factor ``R``, the factor ``L`` of ``D^1/2 K D^1/2 + s2 I``, and ``v = z1 +
R' D^1/2 (L L')^-1 D^-1/2 S'(y - S R z1 - s z2)``. In the interpreter each
draw made some twenty NumPy, SciPy and LAPACK calls; on the handful to a
few tens of rows where the variational MCMC regressor samples the exact
target, they took longer than the chains that drew the hyperparameters
(130 us a draw on 11 rows, 1,960 draws in a fit).
"""

import math

import numpy as np
from numba import njit

from ..linalg._numba_ops import copy_matrix
from ._sparse_numba import (
    kernel_scales,
    kernel_values_into,
    lower_factor,
    lower_solve,
    scaled,
)

__all__ = ["DONE", "FACTOR_FAILED", "NOISY_FAILED", "exact_v_draws"]

# Status of exact_v_draws: all drawn; the jittered K(Z, Z) (resp.
# D^1/2 K D^1/2 + s2 I) of draw ``failed`` not positive definite.
DONE, FACTOR_FAILED, NOISY_FAILED = 0, 1, 2


@njit(cache=True, nogil=True)
def exact_v_draws(
    Z, y, index, root_counts, hyper, normals, phi_defaults, theta_index, base,
    jitter, lapack, out,
):  # fmt: skip
    """One exact draw of ``v`` per row of ``hyper``, into ``out``.

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        The distinct training inputs.
    y : ndarray of shape (n,)
    index : ndarray of int of shape (n,)
        The row of ``Z`` of each training input.
    root_counts : ndarray of shape (m,) or (0,)
        ``sqrt`` of each distinct input's count; empty when all are 1.
    hyper : ndarray of shape (S, n_kernel_params + 1)
        ``[theta, log s2]`` per draw.
    normals : ndarray of shape (S, m + n)
        ``[z1, z2]`` per draw, standard normal.
    phi_defaults, theta_index, base
        The kernel spec's (:mod:`skgp_bayes.kernels._lowering`).
    jitter : float
        Relative diagonal jitter of ``K(Z, Z)``.
    lapack : tuple
        :data:`skgp_bayes.targets._sparse_numba.LAPACK`.
    out : ndarray of shape (S, m)

    Returns
    -------
    status : int
        :data:`DONE`, or the factor that failed.
    failed : int
        The draw at which it failed (``-1`` with :data:`DONE`).
    """
    m, d = Z.shape
    weighted = root_counts.size > 0
    K = np.empty((m, m))
    R = np.empty((m, m))
    for s in range(hyper.shape[0]):
        variance, noise, inv_ell, _ = kernel_scales(
            hyper[s], phi_defaults, theta_index, d
        )
        s2 = math.exp(hyper[s, hyper.shape[1] - 1])
        Zs = scaled(Z, inv_ell)
        kernel_values_into(Zs, Zs, variance, base, K)
        diagonal = variance + noise
        for i in range(m):
            K[i, i] = diagonal + jitter * diagonal
        copy_matrix(R, K)
        if not lower_factor(R, lapack):
            return FACTOR_FAILED, s
        if weighted:
            for i in range(m):
                for j in range(m):
                    K[i, j] *= root_counts[i] * root_counts[j]
        for i in range(m):
            K[i, i] += s2
        if not lower_factor(K, lapack):
            return NOISY_FAILED, s
        _update(R, K, normals[s], math.sqrt(s2), y, index, root_counts, lapack, out[s])
    return DONE, -1


@njit(cache=True, nogil=True)
def _update(R, L, normals, noise_sd, y, index, root_counts, lapack, v):
    """``v = z1 + R' D^1/2 (L L')^-1 D^-1/2 S'(y - S R z1 - s z2)`` into ``v``.

    Every pass reads the factors by rows, as they lie in memory: the solves
    by :func:`lower_solve` (LAPACK's from ``LAPACK_MIN_INDUCING`` rows),
    and ``R' x`` as a sum of the rows of ``R`` scaled by ``x``, which adds
    the same products in the same order as the dot products of its columns
    did, at a fifth of the time for 216 rows.
    """
    m, n = R.shape[0], y.size
    z1 = normals[:m]
    summed = np.zeros(m)
    for t in range(n):
        row = index[t]
        f = 0.0
        for j in range(row + 1):
            f += R[row, j] * z1[j]
        summed[row] += y[t] - f - noise_sd * normals[m + t]
    weighted = root_counts.size > 0
    if weighted:
        for i in range(m):
            summed[i] /= root_counts[i]
    half = lower_solve(L, summed.reshape((m, 1)), False, lapack)
    solved = lower_solve(L, half, True, lapack)[:, 0]
    if weighted:
        for i in range(m):
            solved[i] *= root_counts[i]
    for i in range(m):
        v[i] = z1[i]
    for j in range(m):
        x = solved[j]
        for i in range(j + 1):
            v[i] += R[j, i] * x
