"""Affine preconditioning of a density from its curvature at one point.

HMC with a dense mass matrix ``M`` is HMC with a unit mass matrix on
``w = M^(1/2) x`` (Neal, 2011, section 4.1): a fixed linear change of
variables. :func:`curvature_preconditioner` builds that change of variables
from the negative Hessian ``H`` of the log density at a point ``x0``,
``x = x0 + T w`` with ``T' H T = I``, so that a density that is close to
Gaussian around ``x0`` becomes close to a standard normal in ``w``, whatever
the correlations and scales of ``x``. The engine's own diagonal adaptation
then corrects what the point curvature gets wrong, direction by direction.

The Hessian comes from central differences of the analytic gradient
(``2 d`` gradient evaluations; no autodiff). Away from a mode, or where the
density is not log-concave, ``H`` may have small or negative eigenvalues;
they are raised to ``min_precision`` (a standard deviation of
``min_precision ** -0.5`` along that direction), which the adaptation then
shrinks if the direction is narrower.

Like the samplers, nothing here knows about Gaussian processes.
"""

import numpy as np

__all__ = ["AffineTarget", "curvature_preconditioner"]

# Central-difference step of the gradient: parameters are expected on unit
# scales (logs, whitened values), and the step balances truncation error,
# O(h^2), against rounding, O(eps / h), near h = eps^(1/3) ~ 1e-5.
_FD_STEP = 1e-5


class AffineTarget:
    """The density of ``x = shift + T w`` as a function of ``w``.

    ``log p(w) = log p_x(shift + T w)`` (the Jacobian is constant) and
    ``grad_w = T' grad_x``. Picklable when the wrapped density is.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``.
    shift : ndarray of shape (d,)
    transform : ndarray of shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.affine import AffineTarget
    >>> target = AffineTarget(lambda x: (-0.5 * x @ x, -x), np.ones(2), 2 * np.eye(2))
    >>> value, grad = target(np.zeros(2))  # x = (1, 1)
    >>> float(value), grad
    (-1.0, array([-2., -2.]))
    """

    def __init__(self, logp_and_grad, shift, transform):
        self.logp_and_grad = logp_and_grad
        self.shift = np.asarray(shift, dtype=np.float64)
        self.transform = np.asarray(transform, dtype=np.float64)
        # T' in C order: the product with a vector is then one contiguous pass.
        self._transform_t = np.ascontiguousarray(self.transform.T)

    def to_x(self, w):
        """Map ``w`` (shape ``(..., d)``) to ``x``.

        Parameters
        ----------
        w : ndarray of shape (..., d)

        Returns
        -------
        ndarray of shape (..., d)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference.affine import AffineTarget
        >>> AffineTarget(None, np.ones(2), 2 * np.eye(2)).to_x(np.ones((3, 2)))[0]
        array([3., 3.])
        """
        return self.shift + np.asarray(w) @ self.transform.T

    def __call__(self, w):
        value, grad = self.logp_and_grad(self.shift + self.transform @ w)
        # A non-finite entry of grad stays non-finite through T' (T is
        # invertible, so every row of T has a non-zero entry): no check here.
        return value, self._transform_t @ np.asarray(grad, dtype=np.float64)


def curvature_preconditioner(logp_and_grad, x0, *, min_precision=1e-2):
    """``T`` with ``T' H T = I`` for the negative Hessian ``H`` at ``x0``.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``; finite around ``x0``.
    x0 : ndarray of shape (d,)
    min_precision : float, default=1e-2
        Floor of the eigenvalues of ``H``.

    Returns
    -------
    transform : ndarray of shape (d, d) or None
        ``V diag(lambda^-1/2)`` from the eigendecomposition ``H = V diag
        (lambda) V'``; None when a gradient near ``x0`` was not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.affine import curvature_preconditioner
    >>> cov = np.array([[4.0, 1.9], [1.9, 1.0]])
    >>> prec = np.linalg.inv(cov)
    >>> T = curvature_preconditioner(lambda x: (-0.5 * x @ prec @ x, -prec @ x),
    ...                              np.zeros(2))
    >>> bool(np.allclose(T @ T.T, cov))
    True
    """
    x0 = np.asarray(x0, dtype=np.float64)
    d = x0.size
    hessian = np.empty((d, d))
    for j in range(d):
        step = np.zeros(d)
        step[j] = _FD_STEP
        _, g_plus = logp_and_grad(x0 + step)
        _, g_minus = logp_and_grad(x0 - step)
        hessian[j] = (np.asarray(g_plus) - np.asarray(g_minus)) / (2 * _FD_STEP)
    if not np.all(np.isfinite(hessian)):
        return None
    precision = -0.5 * (hessian + hessian.T)
    lam, vectors = np.linalg.eigh(precision)
    lam = np.maximum(lam, min_precision)
    return vectors / np.sqrt(lam)
