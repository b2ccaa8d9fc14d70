"""A selection step's subset bounds, one compiled call for all of them.

A selection of inducing inputs scores a few subsets of its candidates a
step (four by default), each by :func:`~._svgp_numba.logit_subset_into`
or :func:`~._svgp_numba.softmax_subset_into`.
Called one subset at a time from NumPy, each call paid about 60 us of the
interpreter on top of its 90 us of compiled work on 100 rows (gathering the
subset's variational parameters, building its bound, scattering its
gradient): on a 140-row binary classification the interpreter was a fifth
of the whole fit. Here the subsets' parameters are read from the full
vector and their gradients added to it in the loop, subset by subset in
the order the interpreted loop takes, so the sums are the same to the bit.
"""

import numpy as np
from numba import njit

from ._likelihood_numba import DONE
from ._svgp_numba import logit_subset_into, softmax_subset_into

__all__ = ["logit_subsets_into", "softmax_subsets_into"]


@njit(cache=True, nogil=True, inline="always")
def _gathered(idx, mean, L_values):
    """The subset's ``q(u)``: rows ``idx`` of ``mean`` (K, C) and the
    rows and columns ``idx`` of each of the C packed triangles."""
    k, C = idx.size, mean.shape[1]
    n_tri = mean.shape[0] * (mean.shape[0] + 1) // 2
    sub_mean = np.empty((k, C))
    sub_L = np.zeros((C, k, k))
    for a in range(k):
        row = idx[a] * (idx[a] + 1) // 2
        for c in range(C):
            sub_mean[a, c] = mean[idx[a], c]
            for b in range(a + 1):
                sub_L[c, a, b] = L_values[c * n_tri + row + idx[b]]
    return sub_mean, sub_L


@njit(cache=True, nogil=True, inline="always")
def _scattered(idx, g_m, g_l, C, g_mean, g_L):
    """Add the subset's gradients (its ``m`` as (k, C), its C packed
    triangles in turn) to the entries of the full ones they came from."""
    k = idx.size
    n_tri = g_mean.size // C * (g_mean.size // C + 1) // 2
    k_tri = k * (k + 1) // 2
    for a in range(k):
        for c in range(C):
            g_mean[idx[a] * C + c] += g_m[a * C + c]
    for c in range(C):
        t = 0
        for a in range(k):
            row = idx[a] * (idx[a] + 1) // 2
            for b in range(a + 1):
                g_L[c * n_tri + row + idx[b]] += g_l[c * k_tri + t]
                t += 1


# Long because the docstring documents its parameters; the body is 14 lines.
@njit(cache=True, nogil=True)
def logit_subsets_into(
    Kcc, Kcf, kdiag, masks, first, jitter, mean, L_values, y, scale, nodes,
    weights, counts, limits, small_var, lapack, W_cc, W_cf, w_diag, values,
    g_mean, g_L,
):  # fmt: skip
    """The logit bounds of subsets ``first, first + 1, ...`` of ``masks``.

    Subset after subset until one is empty or handed back, each as
    :func:`~._svgp_numba.logit_subset_into` scores it, with its ``q(u)``
    the rows and columns of the subset in the full ``mean`` and packed
    lower triangle ``L_values``.

    Parameters
    ----------
    Kcc, Kcf, kdiag, jitter, y, scale, nodes, weights, counts, limits, small_var, lapack
        As in :func:`~._svgp_numba.logit_subset_into`.
    masks : ndarray of bool of shape (S, K)
        One row per subset.
    first : int
        The subset to start from.
    mean : ndarray of shape (K, 1)
        The whitened mean of all candidates.
    L_values : ndarray of shape (K (K + 1) / 2,)
        The candidates' packed lower triangle, its diagonal exponentiated
        (the factor's entries, not its parameters).
    W_cc, W_cf, w_diag : ndarray
        The candidates' kernel weights, added to in place.
    values : ndarray of shape (S,)
        Written with each subset's bound (no prior).
    g_mean : ndarray of shape (K,)
    g_L : ndarray of shape (K (K + 1) / 2,)
        The gradients in the full ``mean`` and packed parameters, added to.

    Returns
    -------
    int
        The subset the loop stopped at: ``S`` when all were scored, else
        one that is empty or whose status was not ``DONE`` (its weights
        and gradients untouched), for the caller to score.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._likelihood_numba import logit_rules
    >>> from skgp_bayes.targets._sparse_numba import LAPACK
    >>> from skgp_bayes.targets._selective_numba import logit_subsets_into
    >>> x, z = np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5])
    >>> Kcc = np.exp(-0.5 * (z[:, None] - z) ** 2)
    >>> Kcf = np.exp(-0.5 * (z[:, None] - x) ** 2)
    >>> masks = np.array([[True, False], [True, True], [False, False]])
    >>> values, g_mean, g_L = np.zeros(3), np.zeros(2), np.zeros(3)
    >>> stopped = logit_subsets_into(
    ...     Kcc, Kcf, np.ones(3), masks, 0, 1e-6, np.full((2, 1), 0.3),
    ...     np.array([0.5, 0.1, 0.5]), np.array([1.0, 0.0, 1.0]), 1.0,
    ...     *logit_rules(20), 1e-10, LAPACK, np.zeros((2, 2)), np.zeros((2, 3)),
    ...     np.zeros(3), values, g_mean, g_L)
    >>> stopped, bool(values[0] < 0 and values[1] < 0)  # the empty third is left
    (2, True)
    """
    for s in range(first, masks.shape[0]):
        idx = np.flatnonzero(masks[s])
        if idx.size == 0:
            return s
        sub_mean, sub_L = _gathered(idx, mean, L_values)
        status, value, g_m, g_l = logit_subset_into(
            Kcc, Kcf, kdiag, idx, jitter, np.ascontiguousarray(sub_mean[:, 0]),
            sub_L[0], y, scale, nodes, weights, counts, limits, small_var, lapack,
            W_cc, W_cf, w_diag,
        )  # fmt: skip
        if status != DONE:
            return s
        values[s] = value
        _scattered(idx, g_m, g_l, 1, g_mean, g_L)
    return masks.shape[0]


# Long because the docstring documents its parameters; the body is 13 lines.
@njit(cache=True, nogil=True)
def softmax_subsets_into(
    Kcc, Kcf, kdiag, masks, first, jitter, mean, L_values, labels, scale, eps,
    small_var, lapack, W_cc, W_cf, w_diag, values, g_mean, g_L,
):  # fmt: skip
    """:func:`logit_subsets_into` for the softmax bound of ``C`` latents.

    Parameters
    ----------
    Kcc, Kcf, kdiag, masks, first, jitter, W_cc, W_cf, w_diag, values
        As in :func:`logit_subsets_into`.
    mean : ndarray of shape (K, C)
    L_values : ndarray of shape (C K (K + 1) / 2,)
        The C packed lower triangles in turn, diagonals exponentiated.
    labels, scale, eps, small_var, lapack
        As in :func:`~._svgp_numba.softmax_subset_into`.
    g_mean : ndarray of shape (K C,)
    g_L : ndarray of shape (C K (K + 1) / 2,)

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._sparse_numba import LAPACK
    >>> from skgp_bayes.targets._selective_numba import softmax_subsets_into
    >>> x, z = np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5])
    >>> Kcc = np.exp(-0.5 * (z[:, None] - z) ** 2)
    >>> Kcf = np.exp(-0.5 * (z[:, None] - x) ** 2)
    >>> masks = np.array([[True, True]])
    >>> eps = np.random.default_rng(0).normal(size=(10, 3))
    >>> values = np.zeros(1)
    >>> stopped = softmax_subsets_into(
    ...     Kcc, Kcf, np.ones(3), masks, 0, 1e-6, np.zeros((2, 3)),
    ...     np.tile([1.0, 0.0, 1.0], 3), np.array([0, 2, 1]), 1.0, eps, 1e-10,
    ...     LAPACK, np.zeros((2, 2)), np.zeros((2, 3)), np.zeros(3), values,
    ...     np.zeros(6), np.zeros(9))
    >>> stopped, bool(values[0] < 0)
    (1, True)
    """
    C = mean.shape[1]
    for s in range(first, masks.shape[0]):
        idx = np.flatnonzero(masks[s])
        if idx.size == 0:
            return s
        sub_mean, sub_L = _gathered(idx, mean, L_values)
        status, value, g_m, g_l = softmax_subset_into(
            Kcc, Kcf, kdiag, idx, jitter, sub_mean, sub_L, labels, scale, eps,
            small_var, lapack, W_cc, W_cf, w_diag,
        )  # fmt: skip
        if status != DONE:
            return s
        values[s] = value
        _scattered(idx, g_m, g_l, C, g_mean, g_L)
    return masks.shape[0]
