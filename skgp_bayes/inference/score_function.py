"""Score-function (REINFORCE) gradients for independent Bernoulli variables.

For ``b_k ~ Bernoulli(sigmoid(l_k))`` independently and any function ``f``,

``d/dl E_q[f(b)] = E_q[(f(b) - c) (b - sigmoid(l))]``

for every constant ``c``, because ``E_q[b - sigmoid(l)] = 0`` (Williams,
1992). The estimate from ``S`` draws,
``1/S sum_s (f(b_s) - c) (b_s - sigmoid(l))``, is unbiased whenever ``c``
does not depend on the current draws. A decaying average of earlier values
of ``f`` is such a ``c``: it tracks the level of ``f`` and so removes most of
the variance that a large constant offset would add, while staying
independent of the draws it is used with (it is updated only afterwards).

Nothing here knows about Gaussian processes: ``f`` maps a boolean mask to a
float (and optionally to other per-draw results the caller wants back).
"""

import numpy as np
from scipy.special import expit

__all__ = [
    "DecayingBaseline",
    "bernoulli_score_gradient",
    "estimate_bernoulli_gradient",
]


class DecayingBaseline:
    """Exponentially decaying average of past function values.

    Parameters
    ----------
    decay : float, default=0.9
        Weight of the old average in each update, in ``[0, 1)``.

    Attributes
    ----------
    value : float
        Current baseline; ``0`` before the first update.
    n_updates : int

    Examples
    --------
    >>> from skgp_bayes.inference import DecayingBaseline
    >>> baseline = DecayingBaseline(decay=0.5)
    >>> baseline.update([2.0, 4.0])  # the first update takes the mean
    3.0
    >>> baseline.update([5.0])
    4.0
    """

    def __init__(self, decay=0.9):
        decay = float(decay)
        if not (0.0 <= decay < 1.0):
            raise ValueError(f"decay must lie in [0, 1); got {decay}.")
        self.decay = decay
        self.value = 0.0
        self.n_updates = 0

    def update(self, values):
        """Fold the mean of ``values`` into the average.

        Parameters
        ----------
        values : array-like of float
            Function values of the latest draws; non-finite ones are ignored.

        Returns
        -------
        float
            The new baseline.

        Examples
        --------
        >>> from skgp_bayes.inference import DecayingBaseline
        >>> DecayingBaseline().update([1.0, float("nan"), 3.0])
        2.0
        """
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        values = values[np.isfinite(values)]
        if values.size == 0:
            return self.value
        mean = float(np.mean(values))
        if self.n_updates == 0:
            self.value = mean
        else:
            self.value = self.decay * self.value + (1.0 - self.decay) * mean
        self.n_updates += 1
        return self.value


def bernoulli_score_gradient(values, masks, logits, baseline=0.0):
    """``1/S sum_s (values_s - baseline) (masks_s - sigmoid(logits))``.

    Parameters
    ----------
    values : array-like of shape (S,)
        ``f(b_s)`` for each draw.
    masks : array-like of shape (S, K)
        The draws ``b_s`` (boolean or 0/1).
    logits : ndarray of shape (K,)
        Logits of the inclusion probabilities the draws came from.
    baseline : float, default=0.0
        Control variate; must not depend on these draws.

    Returns
    -------
    ndarray of shape (K,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import bernoulli_score_gradient
    >>> bernoulli_score_gradient([1.0], [[True, False]], np.zeros(2))
    array([ 0.5, -0.5])
    """
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    masks = np.asarray(masks, dtype=np.float64)
    logits = np.asarray(logits, dtype=np.float64)
    if masks.ndim != 2 or masks.shape != (values.size, logits.size):
        raise ValueError(
            f"masks must have shape ({values.size}, {logits.size}); got {masks.shape}."
        )
    score = masks - expit(logits)
    return (values - float(baseline)) @ score / values.size


def estimate_bernoulli_gradient(func, logits, n_samples, rng, baseline=None):
    """Draw masks, evaluate ``func`` and estimate ``d/dl E_q[func(b)]``.

    Parameters
    ----------
    func : callable
        ``func(mask) -> value`` or ``(value, extra)`` with ``mask`` a
        boolean array of shape ``(K,)``; ``extra`` (anything) is handed back.
    logits : ndarray of shape (K,)
    n_samples : int
        Number of draws ``S``.
    rng : numpy.random.Generator
    baseline : DecayingBaseline, optional
        Used as the control variate, then updated with the new values.
        Without one the estimator uses ``c = 0``.

    Returns
    -------
    grad : ndarray of shape (K,)
    values : ndarray of shape (S,)
    masks : ndarray of bool, shape (S, K)
    extras : list
        ``extra`` of each draw (``None`` when ``func`` returns a float).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import DecayingBaseline, estimate_bernoulli_gradient
    >>> rng = np.random.default_rng(0)
    >>> grad, values, masks, _ = estimate_bernoulli_gradient(
    ...     lambda b: float(b.sum()), np.zeros(3), 4, rng, DecayingBaseline())
    >>> grad.shape, masks.shape
    ((3,), (4, 3))
    """
    logits = np.asarray(logits, dtype=np.float64)
    n_samples = int(n_samples)
    if n_samples < 1:
        raise ValueError(f"n_samples must be at least 1; got {n_samples}.")
    masks = rng.random((n_samples, logits.size)) < expit(logits)
    values = np.empty(n_samples)
    extras = []
    for s in range(n_samples):
        out = func(masks[s])
        if isinstance(out, tuple):
            values[s], extra = float(out[0]), out[1]
        else:
            values[s], extra = float(out), None
        extras.append(extra)
    # Before any history the draws' own mean would bias the estimate, so the
    # first step uses c = 0 and only then seeds the average.
    c = baseline.value if baseline is not None and baseline.n_updates else 0.0
    grad = bernoulli_score_gradient(values, masks, logits, c)
    if baseline is not None:
        baseline.update(values)
    return grad, values, masks, extras
