"""One maximiser for every point estimate: L-BFGS-B or Adam on minibatches.

Maximum a posteriori points, the Gaussian (SVGP) approximations that start
the samplers and the bounds of the selective estimators all climb a
function given as ``fn(params, batch) -> (value, grad)``. They share one
failure policy: an evaluation that raises :class:`~skgp_bayes.exceptions.NotPSDError`
or :class:`numpy.linalg.LinAlgError`, or returns a non-finite value or
gradient, is rejected. L-BFGS-B then sees ``+inf`` (its line search steps
back) and Adam skips the batch.

The value is divided by ``n`` (the number of terms it sums) before either
method sees it, so that the tolerances of L-BFGS-B and the step of Adam do
not depend on the data size; traces and stopping rules see the value
itself.
"""

from collections import namedtuple

import numpy as np
from scipy.optimize import minimize

from ..exceptions import NotPSDError
from .adam import adam_init, adam_update

__all__ = [
    "MaximizeResult",
    "epoch_batches",
    "maximize",
    "random_batches",
    "settled",
    "stalled",
]

MaximizeResult = namedtuple("MaximizeResult", "params trace converged n_iter")
MaximizeResult.__doc__ = """Outcome of :func:`maximize`.

Attributes
----------
params : ndarray
    The last iterate, clipped to the bounds.
trace : list of float
    The value after each iteration (each accepted batch for Adam).
converged : bool
    True when the stopping rule ended the run, L-BFGS-B stopped on its own
    before its budget, or Adam ran with no stopping rule.
n_iter : int
    Iterations run (Adam counts rejected batches).

Examples
--------
>>> import numpy as np
>>> from skgp_bayes.inference import maximize
>>> out = maximize(lambda x, _: (-x @ x, -2 * x), np.ones(1), np.array([[-1, 1]]))
>>> out.converged, out.n_iter > 0
(True, True)
"""

_REJECTED = (NotPSDError, np.linalg.LinAlgError)


def _evaluate(fn, params, batch):
    """``fn(params, batch)``, or None where the failure policy rejects it.

    A line search probes points far from the optimum, where a likelihood's
    expectation overflows (a Poisson rate ``exp(mu + var / 2)``); the
    non-finite value rejects the probe, so NumPy's overflow warnings would
    only tell the user about a step the optimiser has already discarded.
    """
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            value, grad = fn(params, batch)
    except _REJECTED:
        return None
    if not (np.isfinite(value) and np.all(np.isfinite(grad))):
        return None
    return value, grad


def maximize(
    fn,
    start,
    bounds,
    *,
    max_iter=None,
    n=1,
    stop=None,
    batches=None,
    learning_rate=None,
):
    """Maximise ``fn(params, batch) -> (value, grad)`` within box bounds.

    Parameters
    ----------
    fn : callable
        ``fn(params, batch)`` returns the value and its gradient; ``batch``
        is None for the full function, else the rows of one minibatch.
    start : ndarray of shape (p,)
    bounds : ndarray of shape (p, 2)
        Lower and upper bounds; ``-inf`` and ``inf`` for none.
    max_iter : int, optional
        Iterations at most. None leaves L-BFGS-B its own default budget.
        Zero returns ``start`` with nothing evaluated.
    n : int or float, default=1
        Divisor of value and gradient before the method sees them.
    stop : callable, optional
        ``stop(trace) -> bool`` after each iteration; True ends the run as
        converged.
    batches : iterator of ndarray, optional
        Minibatch rows, one per Adam step. None runs L-BFGS-B on the full
        function.
    learning_rate : float, optional
        Adam's step; required with ``batches``.

    Returns
    -------
    MaximizeResult

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import maximize
    >>> def fn(x, batch):
    ...     return -np.sum((x - 1.0) ** 2), -2.0 * (x - 1.0)
    >>> out = maximize(fn, np.zeros(2), np.array([[-5.0, 5.0], [-5.0, 0.5]]))
    >>> np.round(out.params, 6), out.converged
    (array([1. , 0.5]), True)
    """
    start = np.asarray(start, dtype=np.float64)
    if max_iter == 0:
        return MaximizeResult(start.copy(), [], True, 0)
    if batches is None:
        return _lbfgs(fn, start, bounds, max_iter, n, stop)
    return _adam(fn, start, bounds, max_iter, n, stop, batches, learning_rate)


def _lbfgs(fn, start, bounds, max_iter, n, stop):
    seen = {}

    def objective(params):
        evaluated = _evaluate(fn, params, None)
        if evaluated is None:
            return np.inf, np.zeros_like(params)
        value, grad = evaluated
        seen[params.tobytes()] = value
        return -value / n, -grad / n

    trace = []
    stopped = [False]

    def callback(xk):
        # The value at an iterate was computed when the line search accepted
        # it: looked up, not evaluated again.
        trace.append(seen.get(xk.tobytes(), np.nan))
        if stop is not None and stop(trace):
            stopped[0] = True
            raise StopIteration

    options = {}
    if max_iter is not None:
        # SciPy also stops at 15,000 evaluations; a larger iteration budget
        # keeps two evaluations an iteration (most line searches take one).
        evaluations = max(15_000, 2 * int(max_iter))
        options = {"options": {"maxiter": int(max_iter), "maxfun": evaluations}}
    result = minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        callback=callback,
        **options,
    )
    params = np.clip(result.x, bounds[:, 0], bounds[:, 1])
    # Status 1 is a budget run out, of iterations or of evaluations; a line
    # search that cannot go on (status 2) stands at the point it reached.
    budget_left = max_iter is None or (result.nit < max_iter and result.status != 1)
    converged = stopped[0] or bool(result.success) or budget_left
    return MaximizeResult(params, trace, converged, int(result.nit))


def _adam(fn, start, bounds, max_iter, n, stop, batches, learning_rate):
    params = start.copy()
    state = adam_init(params)
    trace = []
    # zip takes from range first, so no batch is drawn past the budget.
    for it, batch in zip(range(int(max_iter)), batches, strict=False):
        evaluated = _evaluate(fn, params, batch)
        if evaluated is None:
            continue
        value, grad = evaluated
        params += adam_update(state, grad / n, learning_rate)
        np.clip(params, bounds[:, 0], bounds[:, 1], out=params)
        trace.append(float(value))
        if stop is not None and stop(trace):
            return MaximizeResult(params, trace, True, it + 1)
    return MaximizeResult(params, trace, stop is None, int(max_iter))


def random_batches(rng, n, batch_size):
    """Endless minibatches, each drawn afresh without replacement.

    Parameters
    ----------
    rng : numpy.random.Generator
    n : int
        Rows to draw from.
    batch_size : int

    Yields
    ------
    ndarray of shape (batch_size,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.optimize import random_batches
    >>> stream = random_batches(np.random.default_rng(0), 10, 3)
    >>> next(stream).shape
    (3,)
    """
    while True:
        yield rng.choice(n, size=batch_size, replace=False)


def epoch_batches(rng, n, batch_size):
    """Endless minibatches that walk through a permutation, then a new one.

    Every row is used once per epoch; the tail of a permutation too short
    for a batch is dropped.

    Parameters
    ----------
    rng : numpy.random.Generator
    n : int
        Rows to draw from.
    batch_size : int

    Yields
    ------
    ndarray of shape (batch_size,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.optimize import epoch_batches
    >>> stream = epoch_batches(np.random.default_rng(0), 4, 2)
    >>> sorted(np.concatenate([next(stream), next(stream)]).tolist())
    [0, 1, 2, 3]
    """
    order = rng.permutation(n)
    pos = 0
    while True:
        if pos + batch_size > n:
            order = rng.permutation(n)
            pos = 0
        yield order[pos : pos + batch_size]
        pos += batch_size


def stalled(window, gain):
    """Stopping rule: the last ``window`` iterations gained less than ``gain``.

    Parameters
    ----------
    window : int
    gain : float
        In the units of the value (nats for a log density or bound).

    Returns
    -------
    callable
        ``stop(trace) -> bool`` for :func:`maximize`.

    Examples
    --------
    >>> from skgp_bayes.inference.optimize import stalled
    >>> rule = stalled(2, 0.1)
    >>> rule([0.0, 1.0, 1.05]), rule([0.0, 0.02, 0.05])
    (False, True)
    """

    def stop(trace):
        return len(trace) > window and trace[-1] - trace[-1 - window] < gain

    return stop


def settled(window):
    """Stopping rule for noisy (minibatch) values.

    Checked at every ``window``-th value: the mean of the last ``window``
    values exceeds the mean of the window before by less than twice the
    standard error of that difference, so the value no longer rises by
    more than its own minibatch noise shows.

    Parameters
    ----------
    window : int

    Returns
    -------
    callable
        ``stop(trace) -> bool`` for :func:`maximize`.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.optimize import settled
    >>> noise = np.random.default_rng(0).standard_normal(20)
    >>> settled(10)(list(noise)), settled(10)(list(noise + np.arange(20)))
    (True, False)
    """

    def stop(trace):
        if len(trace) < 2 * window or len(trace) % window:
            return False
        last = np.asarray(trace[-window:])
        before = np.asarray(trace[-2 * window : -window])
        rise = last.mean() - before.mean()
        se = np.sqrt((last.var(ddof=1) + before.var(ddof=1)) / window)
        return bool(rise < 2.0 * se)

    return stop
