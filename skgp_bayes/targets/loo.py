"""Leave-one-out predictive densities of Gaussian models in closed form.

For ``y ~ N(0, C)`` the predictive of ``y_i`` given the other rows is
Gaussian with mean ``y_i - [C^-1 y]_i / [C^-1]_ii`` and variance
``1 / [C^-1]_ii`` (Rasmussen and Williams 2006, section 5.4.2; Sundararajan
and Keerthi 2001): one factorisation gives every row's held-out density,
with no refit. Two models use it here:

- the exact GP, ``C = K + s2 I``;
- Titsias' collapsed sparse GP, whose predictive is the DTC one
  (Quinonero-Candela and Rasmussen 2005): the rows are ``N(0, Q + s2 I)``
  with ``Q = K_fu K_uu^-1 K_uf``, and a held-out row's latent value keeps
  its prior variance ``K_ii`` where ``Q`` gives ``Q_ii``, so its
  predictive variance gains ``K_ii - Q_ii``. By Woodbury this costs
  ``O(n m^2)``.

The variational MCMC regressor compares the two at their optima: the
growth of the inducing set stops on the training bound, which says how
well the sparse model explains the rows it was fitted to, not how it
predicts new ones (see ``_approximation.ApproximationStage._grown``).
"""

import numpy as np

from ..exceptions import NotPSDError
from ..linalg import add_to_diagonal, cho_inverse, cholesky, triangular_solve
from ._sparse_shared import factor_of_gram, project
from .sparse import JITTER

__all__ = ["collapsed_loo_densities", "exact_loo_densities"]


def _held_out_density(inv_y, inv_diag, extra_variance=0.0):
    """``log N(y_i; held-out mean, held-out variance)`` of every row."""
    variance = 1.0 / inv_diag + extra_variance
    residual = inv_y / inv_diag  # y_i minus its held-out mean
    return -0.5 * np.log(2.0 * np.pi * variance) - 0.5 * residual**2 / variance


def exact_loo_densities(adapter, X, y, hyper):
    """Leave-one-out log predictive density of every row under the exact GP.

    Parameters
    ----------
    adapter : KernelAdapter
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    hyper : ndarray
        ``[theta, log noise variance]``.

    Returns
    -------
    ndarray of shape (n,)
        Nats; ``-inf`` everywhere where ``K + s2 I`` cannot be factorised.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets.loo import exact_loo_densities
    >>> X = np.linspace(0, 1, 30)[:, None]
    >>> y = np.sin(6 * X[:, 0])
    >>> adapter = KernelAdapter(RBF())
    >>> smooth = exact_loo_densities(adapter, X, y, np.array([np.log(0.2), -6.0]))
    >>> rough = exact_loo_densities(adapter, X, y, np.array([np.log(0.01), -6.0]))
    >>> bool(smooth.mean() > rough.mean())
    True
    """
    covariance = adapter.gram(hyper[:-1], X)
    add_to_diagonal(covariance, np.exp(hyper[-1]))
    try:
        inverse = cho_inverse(cholesky(covariance, warn=False)[0])
    except NotPSDError:
        return np.full(y.size, -np.inf)
    return _held_out_density(inverse @ y, np.diagonal(inverse))


def collapsed_loo_densities(adapter, X, y, Z, hyper, jitter=JITTER):
    """Leave-one-out log predictive density of every row under the collapsed sparse GP.

    Parameters
    ----------
    adapter : KernelAdapter
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    Z : ndarray of shape (m, d)
        Inducing inputs.
    hyper : ndarray
        ``[theta, log noise variance]``.
    jitter : float, default=1e-6
        Relative jitter on ``K(Z, Z)``, as the collapsed target adds it.

    Returns
    -------
    ndarray of shape (n,)
        Nats; ``-inf`` everywhere where ``K(Z, Z)`` or ``s2 I + A A'``
        cannot be factorised.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.targets.loo import collapsed_loo_densities, exact_loo_densities
    >>> X = np.linspace(0, 1, 30)[:, None]
    >>> y = np.sin(6 * X[:, 0])
    >>> adapter, hyper = KernelAdapter(RBF()), np.array([np.log(0.2), -4.0])
    >>> every_row = collapsed_loo_densities(adapter, X, y, X, hyper)
    >>> exact = exact_loo_densities(adapter, X, y, hyper)
    >>> bool(np.max(np.abs(every_row - exact)) < 1e-3)
    True
    >>> few = collapsed_loo_densities(adapter, X, y, X[::10], hyper)
    >>> bool(few.mean() < every_row.mean())
    True
    """
    theta, noise = hyper[:-1], float(np.exp(hyper[-1]))
    try:
        R = factor_of_gram(adapter.gram(theta, Z), jitter)
    except NotPSDError:
        return np.full(y.size, -np.inf)
    A, gamma, _ = project(adapter, theta, Z, X, R)  # A = R^-1 K_uf, gamma ~ K_ii - Q_ii
    # (Q + s2 I)^-1 = (I - W'W) / s2 with W = L_B^-1 A, B = s2 I + A A'
    B = A @ A.T
    add_to_diagonal(B, noise)
    try:
        L_B, _ = cholesky(B, warn=False)
    except NotPSDError:
        return np.full(y.size, -np.inf)
    W = triangular_solve(L_B, A)
    inv_diag = (1.0 - np.einsum("ji,ji->i", W, W)) / noise
    inv_y = (y - W.T @ (W @ y)) / noise
    return _held_out_density(inv_y, inv_diag, gamma)
