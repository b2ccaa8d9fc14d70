"""Row-blocked generic-path helpers of :class:`~._adapter.KernelAdapter`.

Any scikit-learn kernel, through its own ``__call__`` and ``diag``, in
blocks of rows so that no temporary grows with ``n^2`` (or ``n^2 p`` for a
gradient tensor).
"""

import numpy as np

__all__ = ["generic_diag_grad", "generic_matvec"]

# Rows per block of the generic K @ V and of the generic diagonal gradient.
_GENERIC_ROWS = 256


def generic_diag_grad(adapter, theta, X):
    """Gradient of the diagonal of ``K(X, X)`` in theta, shape (n, n_params).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgp_bayes.kernels import force_generic
    >>> from skgp_bayes.kernels._generic import generic_diag_grad
    >>> adapter = force_generic(ConstantKernel(2.0) * RBF(1.0))
    >>> generic_diag_grad(adapter, adapter.kernel.theta, np.zeros((2, 1)))
    array([[2., 0.],
           [2., 0.]])
    """
    kernel = adapter.kernel_with_theta(theta)
    n, p = X.shape[0], adapter.n_params
    if p == 0:
        return np.zeros((n, 0))
    if not adapter._gradient_available(X):
        columns = adapter._finite_difference(
            adapter._theta(theta), lambda t: adapter.kernel.clone_with_theta(t).diag(X)
        )
        return np.stack(columns, axis=1)
    out = np.empty((n, p))
    for i0 in range(0, n, _GENERIC_ROWS):
        rows = slice(i0, min(n, i0 + _GENERIC_ROWS))
        _, G = kernel(X[rows], eval_gradient=True)
        out[rows] = np.diagonal(G, axis1=0, axis2=1).T
    return out


def generic_matvec(adapter, theta, X, V):
    """``K(X, X) @ V`` (WhiteKernel noise included) for ``V`` of shape (n, k).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    >>> from skgp_bayes.kernels import force_generic
    >>> from skgp_bayes.kernels._generic import generic_matvec
    >>> adapter = force_generic(RBF(1.0) + WhiteKernel(0.1))
    >>> X, V = np.array([[0.0], [1.0]]), np.eye(2)
    >>> bool(np.allclose(generic_matvec(adapter, adapter.kernel.theta, X, V),
    ...                  adapter.gram(adapter.kernel.theta, X)))
    True
    """
    kernel = adapter.kernel_with_theta(theta)
    n = X.shape[0]
    out = np.empty((n, V.shape[1]))
    for i0 in range(0, n, _GENERIC_ROWS):
        i1 = min(n, i0 + _GENERIC_ROWS)
        block = np.array(kernel(X[i0:i1], X), dtype=np.float64)
        # kernel(A, B) leaves out WhiteKernel noise, which only the Gram
        # matrix's diagonal carries; kernel.diag has it.
        rows = np.arange(i1 - i0)
        block[rows, rows + i0] = kernel.diag(X[i0:i1])
        out[i0:i1] = block @ V
    return out
