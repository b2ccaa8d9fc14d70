"""Small Numba kernels for dense linear-algebra glue (no fastmath)."""

import numba as nb

# Kernel-matrix entries below this are flushed to zero before a
# factorisation: subnormal entries (inputs far beyond the length scale, a
# saturated likelihood's weights) slow LAPACK down a hundredfold and are
# zero for every practical purpose.
TINY = 1e-280


@nb.njit(cache=True, nogil=True)
def flush_tiny(matrix):
    """Entries of ``matrix`` below :data:`TINY` in magnitude set to 0, in place.

    NumPy's ``matrix[abs(matrix) < TINY] = 0`` builds two temporaries of the
    matrix's size: after a fresh Gram matrix of 721 rows they took 4 ms
    (page faults on new memory) where this loop takes 0.05 ms. Returns
    nothing (see :func:`residual_weight_from_lower_inverse`).
    """
    rows, cols = matrix.shape
    for i in range(rows):
        for j in range(cols):
            if abs(matrix[i, j]) < TINY:
                matrix[i, j] = 0.0


@nb.njit(cache=True, nogil=True)
def residual_weight_from_lower_inverse(inverse_lower, alpha):
    """Overwrite the lower triangle of ``inverse_lower`` with ``a a' - K^-1``.

    ``inverse_lower`` holds ``K^-1`` in its lower triangle as ``dpotri``
    leaves it. Only the lower triangle is written: the fast kernel
    contraction reads nothing else, and skipping the mirror saves a
    cache-unfriendly pass over ``n^2`` entries. Call :func:`mirror_lower`
    where a full matrix is needed.

    Returns nothing: a Numba function that returns one of its own array
    arguments hands back the caller's object, and a signal arriving in that
    hand-back turns ``KeyboardInterrupt`` into ``SystemError`` (measured:
    196 of 200 timed interrupts of a kernel that did).
    """
    n = inverse_lower.shape[0]
    for i in range(n):
        ai = alpha[i]
        for j in range(i + 1):
            inverse_lower[i, j] = ai * alpha[j] - inverse_lower[i, j]


@nb.njit(cache=True, nogil=True)
def mirror_lower(matrix):
    """Copy the strict lower triangle onto the upper one, in place (no return)."""
    n = matrix.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            matrix[i, j] = matrix[j, i]


@nb.njit(cache=True, nogil=True)
def trace(matrix):
    """Sum of the diagonal."""
    total = 0.0
    for i in range(matrix.shape[0]):
        total += matrix[i, i]
    return total


# Compiled code copies arrays by these loops, not by slice assignment: a
# slice assignment between arrays compiles Numba's broadcasting and its
# shape-error messages, 2-3 s of a user's first fit for each dimension, for
# the same copy.
@nb.njit(cache=True, nogil=True)
def copy_vector(dst, src):
    """``dst[:] = src`` for two vectors of one length (no return)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@nb.njit(cache=True, nogil=True)
def copy_matrix(dst, src):
    """``dst[:, :] = src`` for two matrices of one shape (no return)."""
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]
