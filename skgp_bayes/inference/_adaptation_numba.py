"""Warm-up's adaptation in compiled form, for samplers that run in blocks.

The step's dual averaging (:class:`~skgp_bayes.inference.adaptation.
DualAveraging`) and a mass window's running moments (Welford's update of
``WarmupAdaptation``), on arrays, with the interpreted classes' arithmetic
in their order: a compiled block of transitions adapts to the same bits.
"""

import math

from numba import njit

__all__ = ["add_moments", "dual_update"]


@njit(cache=True, nogil=True, inline="always")
def dual_update(dual, prob):
    """``DualAveraging.update`` on its fields in ``dual``, in its order.

    ``dual`` is ``[mu, target_accept, gamma, t0, kappa, t, h_bar,
    log_step, log_step_bar]``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference._adaptation_numba import dual_update
    >>> from skgp_bayes.inference.adaptation import DualAveraging
    >>> da = DualAveraging(0.1, 0.8)
    >>> dual = np.array([da.mu, 0.8, da.gamma, da.t0, da.kappa, 0.0, 0.0,
    ...                  da.log_step, da.log_step_bar])
    >>> _ = da.update(0.3)
    >>> dual_update(dual, 0.3)
    >>> bool(dual[7] == da.log_step and dual[8] == da.log_step_bar)
    True
    """
    mu, target, gamma, t0, kappa = dual[0], dual[1], dual[2], dual[3], dual[4]
    dual[5] += 1.0
    t = dual[5]
    w = 1.0 / (t + t0)
    dual[6] = (1.0 - w) * dual[6] + w * (target - prob)
    dual[7] = mu - math.sqrt(t) / gamma * dual[6]
    eta = t ** (-kappa)
    dual[8] = eta * dual[7] + (1.0 - eta) * dual[8]


@njit(cache=True, nogil=True, inline="always")
def add_moments(count, mean, m2, x, grad):
    """Welford's update of a window's moments by ``x`` and ``grad``.

    ``count`` is an array of one; ``mean`` and ``m2`` have rows for the
    draws and for their gradients, as in ``WarmupAdaptation``'s window.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference._adaptation_numba import add_moments
    >>> count, mean, m2 = np.zeros(1, np.int64), np.zeros((2, 1)), np.zeros((2, 1))
    >>> for v in (1.0, 3.0):
    ...     add_moments(count, mean, m2, np.array([v]), np.array([-v]))
    >>> mean[:, 0].tolist(), m2[:, 0].tolist()
    ([2.0, -2.0], [2.0, 2.0])
    """
    count[0] += 1
    for row, point in ((0, x), (1, grad)):
        for j in range(point.size):
            delta = point[j] - mean[row, j]
            mean[row, j] += delta / count[0]
            m2[row, j] += delta * (point[j] - mean[row, j])
