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

With ``S >= 2`` draws a step, each draw can instead use the mean of the
*other* draws as its ``c`` (the leave-one-out baseline, Kool, van Hoof and
Welling, 2019; Mnih and Rezende, 2016): it is independent of the draw it
multiplies, so the estimate stays unbiased, and it is the level of ``f``
at the current parameters, with no lag behind a moving objective. The
estimate reduces to ``1/(S-1) sum_s (f(b_s) - mean f) (b_s - sigmoid(l))``.

Stochastic ascent on such estimates never settles exactly: the iterates
wander around a stationary point with the Monte Carlo noise.
:class:`StationarityRule` decides when the wandering is all that is left,
by comparing the last two windows of tracked quantities (the objective, a
summary of the parameters) against their own Monte Carlo error.

Nothing here knows about Gaussian processes: ``f`` maps a boolean mask to a
float (and optionally to other per-draw results the caller wants back).
"""

import numpy as np
from scipy.special import expit

__all__ = [
    "DecayingBaseline",
    "StationarityRule",
    "bernoulli_score_gradient",
    "estimate_bernoulli_gradient",
    "leave_one_out_baseline",
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
    baseline : float or array-like of shape (S,), default=0.0
        Control variate, one for all draws or one per draw; a draw's own
        must not depend on that draw.

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
    baseline = np.asarray(baseline, dtype=np.float64)
    if baseline.ndim and baseline.shape != values.shape:
        raise ValueError(
            f"baseline must be a float or have shape {values.shape}; "
            f"got {baseline.shape}."
        )
    score = masks - expit(logits)
    return (values - baseline) @ score / values.size


def leave_one_out_baseline(values):
    """Each draw's control variate: the mean of the other draws' values.

    Parameters
    ----------
    values : array-like of shape (S,)
        ``f(b_s)`` for each draw, ``S >= 2``.

    Returns
    -------
    ndarray of shape (S,)

    Examples
    --------
    >>> from skgp_bayes.inference import leave_one_out_baseline
    >>> leave_one_out_baseline([1.0, 2.0, 6.0])
    array([4. , 3.5, 1.5])
    """
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size < 2:
        raise ValueError(
            f"the leave-one-out baseline needs at least 2 draws; got {values.size}."
        )
    return (values.sum() - values) / (values.size - 1)


def estimate_bernoulli_gradient(
    func, logits, n_samples, rng, baseline=None, *, vectorized=False
):
    """Draw masks, evaluate ``func`` and estimate ``d/dl E_q[func(b)]``.

    Parameters
    ----------
    func : callable
        ``func(mask) -> value`` or ``(value, extra)`` with ``mask`` a
        boolean array of shape ``(K,)``; ``extra`` (anything) is handed back.
        With ``vectorized=True``, ``func(masks) -> values`` or
        ``(values, extra)`` for all draws at once (``masks`` of shape
        ``(S, K)``), so that work shared by the draws is done once.
    logits : ndarray of shape (K,)
    n_samples : int
        Number of draws ``S``.
    rng : numpy.random.Generator
    baseline : DecayingBaseline or "leave-one-out", optional
        The control variate. A :class:`DecayingBaseline` is used, then
        updated with the new values; ``"leave-one-out"`` gives each draw
        the mean of the others (needs ``S >= 2``). Without one the
        estimator uses ``c = 0``.
    vectorized : bool, default=False
        Whether ``func`` takes all masks at once.

    Returns
    -------
    grad : ndarray of shape (K,)
    values : ndarray of shape (S,)
    masks : ndarray of bool, shape (S, K)
    extras : list or object
        ``extra`` of each draw (``None`` when ``func`` returns a float);
        with ``vectorized=True``, the one ``extra`` of the call.

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
    if isinstance(baseline, str) and baseline != "leave-one-out":
        raise ValueError(f"baseline must be 'leave-one-out'; got {baseline!r}.")
    if baseline == "leave-one-out" and n_samples < 2:
        raise ValueError("the leave-one-out baseline needs n_samples >= 2.")
    masks = rng.random((n_samples, logits.size)) < expit(logits)
    if vectorized:
        values, extras = _call_vectorized(func, masks)
    else:
        values, extras = _call_each(func, masks)
    if isinstance(baseline, str):
        c = leave_one_out_baseline(values)
    else:
        # Before any history the draws' own mean would bias the estimate, so
        # the first step uses c = 0 and only then seeds the average.
        c = baseline.value if baseline is not None and baseline.n_updates else 0.0
    grad = bernoulli_score_gradient(values, masks, logits, c)
    if baseline is not None and not isinstance(baseline, str):
        baseline.update(values)
    return grad, values, masks, extras


def _call_each(func, masks):
    values = np.empty(masks.shape[0])
    extras = []
    for s in range(masks.shape[0]):
        out = func(masks[s])
        if isinstance(out, tuple):
            values[s], extra = float(out[0]), out[1]
        else:
            values[s], extra = float(out), None
        extras.append(extra)
    return values, extras


def _call_vectorized(func, masks):
    out = func(masks)
    values, extra = out if isinstance(out, tuple) else (out, None)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size != masks.shape[0]:
        raise ValueError(
            f"func returned {values.size} values for {masks.shape[0]} masks."
        )
    return values, extra


class StationarityRule:
    """Stop a stochastic ascent once its tracked quantities stop trending.

    Every ``window`` steps, the means of each tracked quantity over the
    last two windows are compared. Each window is cut into ``n_batches``
    consecutive batches, and the standard error of a window's mean is taken
    from the spread of its batch means (batch means, Flegal and Jones,
    2010), which absorbs the autocorrelation of the iterates over a batch.
    The rule is met when, for every quantity,

    ``|mean_last - mean_previous| <= z * sqrt(se_last^2 + se_previous^2)``,

    that is, when no quantity has moved by more than its own Monte Carlo
    error. The test has no tolerance in the units of the quantities, so it
    is unchanged by rescaling them; at stationarity, with Gaussian batch
    means, each quantity passes with probability about 0.92 at ``z = 2``
    (Student's t with ``2 (n_batches - 1)`` degrees of freedom).

    Parameters
    ----------
    window : int, default=50
        Steps per window; the first test comes after two windows.
    n_batches : int, default=5
        Batches per window, at least 2. A batch should be longer than the
        memory of the iteration (about ``1 / (1 - beta1) = 10`` steps for
        Adam's default momentum).
    z : float, default=2.0
        Allowed change between windows, in standard errors.

    Attributes
    ----------
    n_steps : int
        Steps recorded.
    converged : bool
        Whether the rule has been met.
    z_scores : ndarray or None
        ``|change| / standard error`` of each quantity at the latest test.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import StationarityRule
    >>> rule = StationarityRule(window=20, n_batches=4)
    >>> rng = np.random.default_rng(0)
    >>> stops = [rule.update([rng.normal()]) for _ in range(200)]
    >>> rule.converged, rule.n_steps <= 200  # pure noise: stationary at once
    (True, True)
    >>> trend = StationarityRule(window=20, n_batches=4)
    >>> any(trend.update([0.1 * t + rng.normal()]) for t in range(200))
    False
    """

    def __init__(self, window=50, n_batches=5, z=2.0):
        window, n_batches, z = int(window), int(n_batches), float(z)
        if n_batches < 2 or window < n_batches:
            raise ValueError(
                "n_batches must be at least 2 and at most window; "
                f"got window={window}, n_batches={n_batches}."
            )
        if not (np.isfinite(z) and z > 0):
            raise ValueError(f"z must be a positive number; got {z}.")
        self.window, self.n_batches, self.z = window, n_batches, z
        self.n_steps = 0
        self.converged = False
        self.z_scores = None
        self._history = []

    def _window_stats(self, block):
        usable = block[: (block.shape[0] // self.n_batches) * self.n_batches]
        batches = usable.reshape(self.n_batches, -1, usable.shape[1]).mean(axis=1)
        se2 = batches.var(axis=0, ddof=1) / self.n_batches
        return block.mean(axis=0), se2

    def update(self, values):
        """Record one step's quantities; True once the rule is met.

        Parameters
        ----------
        values : array-like of float, shape (n_quantities,)
            The same quantities, in the same order, at every step.

        Returns
        -------
        bool
            Whether the last two windows agree within their errors (tested
            every ``window`` steps from the second window on; False
            between tests).

        Examples
        --------
        >>> from skgp_bayes.inference import StationarityRule
        >>> rule = StationarityRule(window=4, n_batches=2)
        >>> [rule.update([1.0]) for _ in range(8)][-1]  # constant: no change
        True
        """
        self._history.append(np.asarray(values, dtype=np.float64).reshape(-1))
        self.n_steps += 1
        w = self.window
        if self.n_steps < 2 * w or self.n_steps % w:
            return False
        recent = np.asarray(self._history[-2 * w :])
        self._history = self._history[-2 * w :]
        mean_prev, se2_prev = self._window_stats(recent[:w])
        mean_last, se2_last = self._window_stats(recent[w:])
        change = np.abs(mean_last - mean_prev)
        se = np.sqrt(se2_prev + se2_last)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.z_scores = np.where(change > 0, change / se, 0.0)
        self.converged = bool(np.all(change <= self.z * se))
        return self.converged
