"""Small Numba kernels for dense linear-algebra glue (no fastmath)."""

import numba as nb


@nb.njit(cache=True)
def residual_weight_from_lower_inverse(inverse_lower, alpha):
    """Overwrite ``inverse_lower`` with ``W = alpha alpha' - K^-1`` (full).

    ``inverse_lower`` holds ``K^-1`` in its lower triangle as ``dpotri``
    leaves it; the upper triangle is garbage on entry. Doing the mirror and
    the rank-one update in one pass avoids three n x n temporaries.
    """
    n = inverse_lower.shape[0]
    for i in range(n):
        ai = alpha[i]
        for j in range(i + 1):
            w = ai * alpha[j] - inverse_lower[i, j]
            inverse_lower[i, j] = w
    for i in range(n):
        for j in range(i + 1, n):
            inverse_lower[i, j] = inverse_lower[j, i]
    return inverse_lower


@nb.njit(cache=True)
def trace(matrix):
    """Sum of the diagonal."""
    total = 0.0
    for i in range(matrix.shape[0]):
        total += matrix[i, i]
    return total
