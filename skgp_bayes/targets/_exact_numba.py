"""Compiled passes of the exact RBF marginal likelihood (no fastmath).

The exact target works on one Fortran-ordered ``n x n`` buffer ``B`` that
LAPACK's ``dpotrf`` and the inverse read and write in the lower triangle
only. The kernel matrix is built once, as the strict lower triangle packed
column by column into a vector (one vectorised ``exp`` over half the
entries); the vector keeps ``K`` through the factorisation, so the residual
pass reads it there instead of evaluating any kernel entry again.
:func:`rbf_log_fill` (the full matrix) serves the stochastic-trace target.
"""

import numba as nb
import numpy as np

__all__ = []


@nb.njit(cache=True, nogil=True)
def rbf_log_fill(B, sq, log_variance):
    """Overwrite the Gram product ``B = Xs Xs'`` with ``log k(x_i, x_j)``.

    ``B`` is C-ordered (rows are contiguous); the result is symmetric, so
    its transpose is the same matrix in Fortran order.

    ``log k = log_variance - |xs_i - xs_j|^2 / 2`` from ``|a - b|^2 = |a|^2
    + |b|^2 - 2 a'b``; the squared distance is clipped at 0, which rounding
    can cross for near-duplicate inputs. The exponential is left to NumPy,
    whose vectorised ``exp`` is several times faster than a scalar loop.
    Returns nothing (see ``linalg._numba_ops``).
    """
    n = B.shape[0]
    for i in range(n):
        si = sq[i]
        for j in range(n):
            r2 = si + sq[j] - 2.0 * B[i, j]
            if r2 < 0.0:
                r2 = 0.0
            B[i, j] = log_variance - 0.5 * r2


@nb.njit(cache=True, nogil=True)
def rbf_log_pack(G, log_variance, packed):
    """Pack ``log k(x_i, x_j)``, ``i > j``, column by column into ``packed``.

    ``G`` holds the Gram product ``Xs Xs'`` in its lower triangle, as
    ``dsyrk`` leaves it, so its diagonal holds ``|xs_i|^2``. Only the strict
    lower triangle is kept: one vectorised ``exp`` then covers
    ``n (n - 1) / 2`` entries instead of ``n^2``, and the factorisation
    leaves ``K`` intact in ``packed`` for the residual pass. The squared
    distance is clipped at 0 as in :func:`rbf_log_fill`; the inner loop
    indexes by offset so that it compiles to vector instructions. Returns
    nothing.
    """
    n = G.shape[0]
    sq = np.empty(n)
    for i in range(n):
        sq[i] = G[i, i]
    start = 0
    for j in range(n):
        sj = sq[j]
        m = n - j - 1
        for t in range(m):
            i = j + 1 + t
            r2 = max(sq[i] + sj - 2.0 * G[i, j], 0.0)
            packed[start + t] = log_variance - 0.5 * r2
        start += m


@nb.njit(cache=True, nogil=True)
def fill_lower(B, packed, diagonal):
    """Lower triangle of ``B`` from :func:`rbf_log_pack`'s layout (no return).

    Each column of ``B``'s Fortran layout below the diagonal is one
    contiguous slice of ``packed``; ``dpotrf`` reads nothing else.
    """
    n = B.shape[0]
    start = 0
    for j in range(n):
        B[j, j] = diagonal
        m = n - j - 1
        B[j + 1 :, j] = packed[start : start + m]
        start += m


@nb.njit(cache=True, nogil=True)
def rbf_residual_packed(B, alpha, packed, variance):
    """Overwrite ``B`` with the full ``V = (a a' - K^-1) o K_f``.

    On entry the lower triangle of ``B`` holds ``K^-1`` and ``packed`` the
    strict lower triangle of ``K_f`` (:func:`rbf_log_pack`'s layout, after
    ``exp``); ``K_f`` is ``K`` without the noise on the diagonal, whose
    entries are ``variance``. The upper triangle of ``B`` may hold anything
    on entry. Returns ``(sum of V, trace of a a' - K^-1)``: the
    log-variance gradient and the noise gradient's trace, both before their
    factor of one half.
    """
    n = B.shape[0]
    total = 0.0
    trace = 0.0
    k = 0
    for j in range(n):
        aj = alpha[j]
        w = aj * aj - B[j, j]
        trace += w
        v = w * variance
        B[j, j] = v
        total += v
        for i in range(j + 1, n):
            v = (alpha[i] * aj - B[i, j]) * packed[k]
            k += 1
            B[i, j] = v
            B[j, i] = v
            total += 2.0 * v
    return total, trace


@nb.njit(cache=True, nogil=True)
def rbf_ard_gradient(Xs1, P, out):
    """Length-scale gradients from ``P = V [Xs, 1]`` (no return).

    ``out_c = 2 sum_a xs_ac (xs_ac (V 1)_a - (V Xs)_ac)``, the module notes'
    identity in :mod:`skgp_bayes.targets.exact`, before its factor of one
    half. ``Xs1 = [Xs, 1]`` and ``P`` have ``d + 1`` columns; the last
    column of ``P`` is ``V 1``.
    """
    n = Xs1.shape[0]
    d = Xs1.shape[1] - 1
    for c in range(d):
        out[c] = 0.0
    for a in range(n):
        r = P[a, d]
        for c in range(d):
            x = Xs1[a, c]
            out[c] += x * (x * r - P[a, c])
    for c in range(d):
        out[c] *= 2.0
