"""Compiled passes of the exact RBF marginal likelihood (no fastmath).

Both work on one Fortran-ordered ``n x n`` buffer ``B`` that carries the
kernel matrix ``K`` through the factorisation: LAPACK's ``dpotrf`` and
``dpotri`` with ``lower=1`` read and write only the lower triangle, so the
strict upper triangle still holds ``K`` when the lower one holds ``K^-1``.
The pairwise work is then one read of each triangle instead of a second
evaluation of every kernel entry.
"""

import numba as nb

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
def rbf_residual_products(B, alpha, variance):
    """Turn ``B`` into the symmetric ``V = (a a' - K^-1) o K_f``.

    On entry the lower triangle of ``B`` (Fortran order, so ``B[i, j]`` with
    ``i >= j``) holds ``K^-1`` and the strict upper one holds ``K``; ``K_f``
    is ``K`` without the noise on the diagonal, whose entries are
    ``variance``. On exit ``B`` is the full ``V``. Returns ``(sum of V,
    trace of a a' - K^-1)``: the log-variance gradient and the noise
    gradient's trace, both before their factor of one half.
    """
    n = B.shape[0]
    total = 0.0
    trace = 0.0
    for j in range(n):
        aj = alpha[j]
        w = aj * aj - B[j, j]
        trace += w
        v = w * variance
        B[j, j] = v
        total += v
        for i in range(j + 1, n):
            v = (alpha[i] * aj - B[i, j]) * B[j, i]
            B[i, j] = v
            B[j, i] = v
            total += 2.0 * v
    return total, trace
