"""A selection step's logit subset bounds, one compiled call for all of them.

A selection of inducing inputs scores a few subsets of its candidates a
step (four by default), each by :func:`~._svgp_numba.logit_subset_into`.
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
from ._svgp_numba import logit_subset_into

__all__ = ["logit_subsets_into"]


# Long because the docstring documents its parameters; the body is 25 lines.
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
    mean : ndarray of shape (K,)
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
    ...     Kcc, Kcf, np.ones(3), masks, 0, 1e-6, np.full(2, 0.3),
    ...     np.array([0.5, 0.1, 0.5]), np.array([1.0, 0.0, 1.0]), 1.0,
    ...     *logit_rules(20), 1e-10, LAPACK, np.zeros((2, 2)), np.zeros((2, 3)),
    ...     np.zeros(3), values, g_mean, g_L)
    >>> stopped, bool(values[0] < 0 and values[1] < 0)  # the empty third is left
    (2, True)
    """
    for s in range(first, masks.shape[0]):
        idx = np.flatnonzero(masks[s])
        k = idx.size
        if k == 0:
            return s
        sub_mean = np.empty(k)
        sub_L = np.zeros((k, k))
        for a in range(k):
            sub_mean[a] = mean[idx[a]]
            row = idx[a] * (idx[a] + 1) // 2
            for b in range(a + 1):
                sub_L[a, b] = L_values[row + idx[b]]
        status, value, g_m, g_l = logit_subset_into(
            Kcc, Kcf, kdiag, idx, jitter, sub_mean, sub_L, y, scale, nodes,
            weights, counts, limits, small_var, lapack, W_cc, W_cf, w_diag,
        )  # fmt: skip
        if status != DONE:
            return s
        values[s] = value
        t = 0
        for a in range(k):
            g_mean[idx[a]] += g_m[a]
            row = idx[a] * (idx[a] + 1) // 2
            for b in range(a + 1):
                g_L[row + idx[b]] += g_l[t]
                t += 1
    return masks.shape[0]
