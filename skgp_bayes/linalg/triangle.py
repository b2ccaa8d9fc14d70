"""Indices of a square matrix's lower triangle, computed once per size."""

from functools import lru_cache

import numpy as np

__all__ = ["lower_triangle_indices"]


@lru_cache(maxsize=128)
def _indices(m):
    rows, cols = np.tril_indices(m)
    rows.flags.writeable = False
    cols.flags.writeable = False
    return rows, cols


def lower_triangle_indices(m):
    """``numpy.tril_indices(m)``, kept for each size and read-only.

    The packed lower triangles of the variational bounds are laid out in
    this order; a selection of inducing points builds a bound for a new
    subset hundreds of times a fit, and ``numpy.tril_indices`` builds the
    whole ``m x m`` mask every time (about 35 us for a handful of rows,
    where the rest of a small bound takes a few hundred).

    Parameters
    ----------
    m : int
        Rows of the square matrix.

    Returns
    -------
    rows, cols : ndarray of int of shape (m * (m + 1) // 2,)
        Read-only: the same arrays serve every caller.

    Examples
    --------
    >>> from skgp_bayes.linalg import lower_triangle_indices
    >>> rows, cols = lower_triangle_indices(3)
    >>> rows, cols
    (array([0, 1, 1, 2, 2, 2]), array([0, 0, 1, 0, 1, 2]))
    >>> rows.flags.writeable
    False
    """
    return _indices(int(m))
