"""Adding to a matrix's diagonal in place."""

__all__ = ["add_to_diagonal"]


def add_to_diagonal(matrix, value):
    """``matrix[i, i] += value`` (a scalar, or one value per row), in place.

    The same additions as ``matrix[np.diag_indices_from(matrix)] += value``,
    through a strided view of the flat array instead of two index arrays:
    1 us against 9 on a 22 x 22 matrix, where a small target's evaluation
    adds a noise or jitter to a diagonal a few times and takes tens of
    microseconds in all. Returns nothing.

    Parameters
    ----------
    matrix : ndarray of shape (n, n)
    value : float or ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.linalg import add_to_diagonal
    >>> K = np.ones((2, 2))
    >>> add_to_diagonal(K, 0.5)
    >>> K
    array([[1.5, 1. ],
           [1. , 1.5]])
    >>> add_to_diagonal(K, np.array([1.0, 2.0]))
    >>> K.diagonal()
    array([2.5, 3.5])
    """
    matrix.flat[:: matrix.shape[0] + 1] += value
