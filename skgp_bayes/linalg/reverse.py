"""Reverse-mode derivative of the Cholesky factorisation."""

import numpy as np

from .cholesky import inverse_congruence

__all__ = ["cholesky_reverse"]


def cholesky_reverse(L, Lbar):
    """Pull a gradient with respect to ``L = chol(K)`` back to ``K``.

    With ``L`` the lower Cholesky factor of a symmetric positive-definite
    ``K`` and ``Lbar = dF/dL``, returns the symmetric ``Kbar`` such that
    ``dF = sum(Kbar * dK)`` for every symmetric perturbation ``dK``. This is
    the blocked (level-3) symbolic rule of Murray (2016)::

        P    = Phi(L' tril(Lbar))      # lower triangle, diagonal halved
        Kbar = sym(L^-T P L^-1)        # sym(A) = (A + A') / 2

    which follows from ``dL = L Phi(L^-1 dK L^-T)``. It costs ``O(n^3)``:
    one matrix product and one congruence
    (:func:`~skgp_bayes.linalg.inverse_congruence`, as ``sym(L^-T P
    L^-1) = L^-T sym(P) L^-1``), with no inverse formed.

    Parameters
    ----------
    L : ndarray of shape (n, n)
        Lower Cholesky factor of ``K``; its strict upper triangle is ignored.
    Lbar : ndarray of shape (n, n)
        Gradient of the scalar ``F`` with respect to ``L``. Only its lower
        triangle is read, since ``L`` has no other free entries.

    Returns
    -------
    Kbar : ndarray of shape (n, n)
        Symmetric gradient of ``F`` with respect to ``K``. For a
        hyperparameter ``theta_j``, ``dF/dtheta_j = sum(Kbar * dK/dtheta_j)``.

    References
    ----------
    I. Murray, "Differentiation of the Cholesky decomposition",
    arXiv:1602.07527, 2016.

    Examples
    --------
    ``F = sum(log(diag(L))) = log|K| / 2`` has the gradient ``K^-1 / 2``:

    >>> import numpy as np
    >>> from skgp_bayes.linalg.reverse import cholesky_reverse
    >>> K = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> L = np.linalg.cholesky(K)
    >>> Kbar = cholesky_reverse(L, np.diag(1.0 / np.diag(L)))
    >>> np.allclose(Kbar, np.linalg.inv(K) / 2)
    True
    """
    L = np.asarray(L, dtype=np.float64)
    Lbar = np.asarray(Lbar, dtype=np.float64)
    if L.ndim != 2 or L.shape[0] != L.shape[1]:
        raise ValueError(f"L must be a square matrix; got shape {L.shape}.")
    if Lbar.shape != L.shape:
        raise ValueError(f"Lbar must have the shape of L, {L.shape}; got {Lbar.shape}.")
    lower = np.tril(L)
    # Only the lower triangle of L' tril(Lbar) enters P. sym(P) has the
    # lower triangle (L' tril(Lbar)) / 2: Phi halves the diagonal, sym the
    # rest; and L^-T sym(P) L^-1 = sym(L^-T P L^-1) is one congruence.
    return inverse_congruence(lower, 0.5 * (lower.T @ np.tril(Lbar)), overwrite=True)
