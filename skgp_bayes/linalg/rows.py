"""Distinct rows of a matrix, without NumPy's structured-array comparison.

``np.unique(X, axis=0)`` views each row as one structured element and
compares them with a try block around the dtype promotion: a
``KeyboardInterrupt`` (Ctrl-C, or a timer's ``SIGALRM``) that lands inside
it comes out as ``TypeError: Cannot compare structured arrays``. In a loop
of interrupted calls on 120 x 4 inputs, 237 of 3,000 interrupts came out
that way (NumPy 2.4), so a user who stopped a fit could get a
``TypeError`` instead. A stable lexicographic sort and elementwise
comparisons give the same rows, order and indices with plain arrays.
"""

import numpy as np

__all__ = ["unique_rows"]


def unique_rows(X, *, return_index=False, return_inverse=False):
    """``np.unique(X, axis=0)`` for a 2-D array, by a stable lexicographic sort.

    Parameters
    ----------
    X : array-like of shape (n, d)
        ``d`` at least 1.
    return_index : bool, default=False
        Also return the index of each distinct row's first occurrence.
    return_inverse : bool, default=False
        Also return, for every row of ``X``, the index of its distinct row.

    Returns
    -------
    unique : ndarray of shape (n_unique, d)
        The distinct rows in lexicographic order (first column first), as
        ``np.unique`` orders them.
    index : ndarray of int of shape (n_unique,)
        Only with ``return_index``.
    inverse : ndarray of int of shape (n,)
        Only with ``return_inverse``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg.rows import unique_rows
    >>> X = np.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0]])
    >>> rows, index, inverse = unique_rows(X, return_index=True, return_inverse=True)
    >>> rows
    array([[0., 5.],
           [1., 2.]])
    >>> index, inverse
    (array([1, 0]), array([1, 0, 1]))
    """
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"X must be 2-D with at least one column; got {X.shape}.")
    n = X.shape[0]
    order = np.lexsort(X.T[::-1])  # the first column is the primary key
    ordered = X[order]
    first = np.ones(n, dtype=bool)
    if n > 1:
        first[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    out = [ordered[first]]
    if return_index:
        out.append(order[first])
    if return_inverse:
        inverse = np.empty(n, dtype=np.intp)
        inverse[order] = np.cumsum(first) - 1
        out.append(inverse)
    return out[0] if len(out) == 1 else tuple(out)
