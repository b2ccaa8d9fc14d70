"""Preconditioned stochastic gradient Langevin dynamics over flat vectors.

``x_{t+1} = x_t + eps_t / 2 M g_t + N(0, eps_t M)`` (Welling and Teh, 2011;
seed 002, eq. 5), where ``g_t`` is an unbiased estimate of the gradient of the
log density and ``eps_t = a (b + t)^-gamma``. No accept/reject step is taken,
so the chain carries a bias of order ``eps``; it is kept small by freezing the
step size once the injected noise dominates the gradient noise: every
``freeze_window`` iterations the ratio ``eps_t / 4 lambda_max(M^1/2 V M^1/2)``
(seed 002, eq. 7), with ``V`` the sample covariance of the window's
gradients, is compared with ``freeze_threshold``.

With ``metropolis=True`` the update is a proposal, accepted with the
Metropolis-Hastings probability of the Langevin proposal density (MALA;
Roberts and Tweedie, 1996): the chain is then exact for any step size, and
the step is tuned during the first ``adapt_steps`` iterations by dual
averaging toward the acceptance rate 0.574 that is optimal for MALA
(Roberts and Rosenthal, 1998), then held fixed. Welling and Teh drop the
accept/reject step only because a stochastic gradient comes without the log
density; when both are exact, keeping it removes the ``O(eps)`` bias and
allows steps an order of magnitude larger. ``metric_windows`` also
re-estimate the preconditioner during that adaptation, from the states and
gradients of each window (:func:`fisher_metric`), as Stan's warm-up
re-estimates its metric.

The engine knows nothing about Gaussian processes: it calls
``logp_and_grad(x) -> (value, gradient)`` and uses the value only with
``metropolis=True``.
"""

import copy
import math
import time

import numpy as np

from .._warnings import warn_user
from ..exceptions import SamplerWarning
from .hmc import DualAveraging

__all__ = [
    "LangevinMetric",
    "SGLDInfo",
    "SGLDResult",
    "SGLDState",
    "copy_state",
    "mala_step",
    "run_sgld",
    "sgld_init",
    "sgld_schedule",
    "sgld_step",
]

# Acceptance rate that maximises MALA's efficiency on product targets as the
# dimension grows (Roberts and Rosenthal, 1998); the optimum is flat around
# it, so small departures on finite targets cost little.
MALA_TARGET_ACCEPT = 0.574


def sgld_schedule(start, end, n_iter, gamma=1.0):
    """``(a, b)`` such that ``a (b + t)^-gamma`` runs from ``start`` to ``end``.

    Parameters
    ----------
    start, end : float
        Step sizes at ``t = 0`` and ``t = n_iter - 1``; ``end <= start``.
    n_iter : int
    gamma : float, default=1.0
        Decay exponent; ``gamma = 0`` gives the constant step ``start``.

    Returns
    -------
    a, b : float

    Examples
    --------
    >>> from skgp_bayes.inference import sgld_schedule
    >>> a, b = sgld_schedule(0.1, 1e-4, 1001)
    >>> round(a / b, 6), round(a / (b + 1000), 6)
    (0.1, 0.0001)
    """
    if not 0 < end <= start:
        raise ValueError(f"Need 0 < end <= start, got start={start}, end={end}.")
    if gamma == 0 or end == start or n_iter < 2:
        return float(start), 1.0
    span = n_iter - 1
    b = span / ((start / end) ** (1.0 / gamma) - 1.0)
    return float(start * b**gamma), float(b)


class SGLDState:
    """Everything a chain needs to continue where it stopped.

    Passed back to :func:`run_sgld` as ``resume``, it makes a run of ``a``
    iterations followed by one of ``b`` identical to one run of ``a + b``
    (same schedule, same injected noise when the same generator continues).

    Attributes
    ----------
    x : ndarray of shape (n_params,)
        Current position.
    t : int
        Iterations done (the schedule's counter).
    scale : float
        Product of the step halvings after rejections.
    failures : int
        Consecutive rejections at the end.
    n_rejected : int
    window : list of ndarray
        Gradients of the unfinished freezing window.
    frozen_at : int or None
    frozen_eps : float or None
        The frozen step size (before ``scale``).
    freeze_ratios : list of (int, float)
    logp, grad : float and ndarray or None
        Log density and gradient at ``x`` (``metropolis=True`` only).
    dual : DualAveraging or None
        Step-size adaptation still under way (``metropolis=True`` only).
    n_accepted : int
        Accepted proposals (``metropolis=True``).
    metric : ndarray of shape (n_params, n_params) or None
        The preconditioner estimated during warm-up (``metric_windows``);
        None while the given one is in use.
    moments : list of (ndarray, ndarray)
        States and gradients of the unfinished metric window.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_sgld
    >>> res = run_sgld(lambda x: (0.0, -x), np.zeros(2), n_iter=5, a=0.1,
    ...                rng=np.random.default_rng(0))
    >>> res.state.t
    5
    """

    def __init__(
        self,
        x,
        t,
        scale,
        failures,
        n_rejected,
        window,
        frozen_at,
        frozen_eps,
        ratios,
        logp=None,
        grad=None,
        dual=None,
        n_accepted=0,
        metric=None,
        moments=None,
    ):
        self.x = x
        self.t = t
        self.scale = scale
        self.failures = failures
        self.n_rejected = n_rejected
        self.window = window
        self.frozen_at = frozen_at
        self.frozen_eps = frozen_eps
        self.freeze_ratios = ratios
        self.logp = logp
        self.grad = grad
        self.dual = dual
        self.n_accepted = n_accepted
        self.metric = metric
        self.moments = [] if moments is None else moments


class SGLDResult:
    """Outcome of :func:`run_sgld`.

    Attributes
    ----------
    samples : ndarray of shape (n_iter, n_params)
        State after every iteration of this run.
    step_sizes : ndarray of shape (n_iter,)
        Step size used at every iteration (after any halving and freezing).
    frozen_at : int or None
        Iteration at which the step size was frozen.
    freeze_ratios : list of (int, float)
        ``(t, eps_t / 4 lambda_max(M^1/2 V M^1/2))`` at the end of every window.
    n_rejected : int
        Updates rejected because the gradient or the new state was not finite
        (with ``metropolis=True``: proposals whose log density or gradient was
        not finite, also counted as rejected proposals).
    accepted : ndarray of bool of shape (n_iter,)
        Whether each iteration's proposal was accepted (all True without
        ``metropolis``).
    step_scale : float
        Product of the halvings after rejections (1 if none).
    state : SGLDState
        Where the chain stopped; ``run_sgld(..., resume=state)`` continues.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_sgld
    >>> res = run_sgld(lambda x: (0.0, -x), np.zeros(2), n_iter=5, a=0.1,
    ...                rng=np.random.default_rng(0))
    >>> res.samples.shape, res.n_rejected
    ((5, 2), 0)
    """

    def __init__(self, samples, step_sizes, state, accepted=None):
        self.samples = samples
        self.step_sizes = step_sizes
        self.accepted = (
            np.ones(samples.shape[0], dtype=bool) if accepted is None else accepted
        )
        self.frozen_at = state.frozen_at
        self.freeze_ratios = state.freeze_ratios
        self.n_rejected = state.n_rejected
        self.step_scale = state.scale
        self.state = state


def _preconditioner(M, n_params):
    """(apply M to a vector, Cholesky factor of M) for None, a diagonal or a matrix."""
    if M is None:
        return (lambda g: g), None
    M = np.asarray(M, dtype=np.float64)
    if M.ndim == 1:
        if M.shape != (n_params,) or not np.all(M > 0):
            raise ValueError(
                "A diagonal preconditioner must be positive, one per parameter."
            )
        return (lambda g: M * g), np.sqrt(M)
    if M.shape != (n_params, n_params):
        raise ValueError(f"The preconditioner must have shape {(n_params, n_params)}.")
    try:
        L = np.linalg.cholesky(0.5 * (M + M.T))
    except np.linalg.LinAlgError as err:
        raise ValueError("The preconditioner must be positive definite.") from err
    return (lambda g: M @ g), L


def _reflect(x, bounds):
    lo, hi = bounds[:, 0], bounds[:, 1]
    x = np.where(x < lo, 2 * lo - x, x)
    x = np.where(x > hi, 2 * hi - x, x)
    return np.clip(x, lo, hi)


class LangevinMetric:
    """A preconditioner ``M`` made ready for Langevin steps.

    Built once per metric: it checks ``M`` and factors it, so that each step
    costs one product ``M g`` and one ``R z`` with ``R R' = M``.

    Parameters
    ----------
    M : ndarray of shape (n_params,) or (n_params, n_params) or None
        A positive diagonal or a symmetric positive definite matrix; None
        for the identity.
    n_params : int

    Attributes
    ----------
    M : ndarray or None
    root : ndarray or None
        ``sqrt(M)`` for a diagonal, the lower Cholesky factor for a matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import LangevinMetric
    >>> metric = LangevinMetric(np.array([4.0, 1.0]), 2)
    >>> metric.root, metric.apply(np.ones(2))
    (array([2., 1.]), array([4., 1.]))
    """

    def __init__(self, M, n_params):
        self.M = M
        self._apply, self.root = _preconditioner(M, n_params)

    def apply(self, g):
        """``M g``.

        Parameters
        ----------
        g : ndarray of shape (n_params,)

        Returns
        -------
        ndarray of shape (n_params,)

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference import LangevinMetric
        >>> LangevinMetric(None, 2).apply(np.ones(2))
        array([1., 1.])
        """
        return self._apply(g)


class SGLDInfo:
    """What one :func:`sgld_step` or :func:`mala_step` did.

    Attributes
    ----------
    accepted : bool
        Whether the chain moved.
    accept_prob : float
        Metropolis-Hastings acceptance probability (:func:`mala_step`); 1 for
        a finite SGLD update, 0 for a rejected one.
    failed : bool
        The update was rejected because the target (or, for SGLD, the new
        state) was not finite; a MALA proposal outside ``bounds`` is
        rejected without counting as failed.
    grad : ndarray of shape (n_params,) or None
        The gradient estimate the SGLD update used.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import sgld_init, sgld_step, LangevinMetric
    >>> _, info = sgld_step(sgld_init(np.zeros(1)), lambda x: (0.0, -x),
    ...                     np.random.default_rng(0), step_size=0.1,
    ...                     metric=LangevinMetric(None, 1))
    >>> info.accepted, info.failed
    (True, False)
    """

    def __init__(self, accepted, accept_prob, failed, grad=None):
        self.accepted = accepted
        self.accept_prob = accept_prob
        self.failed = failed
        self.grad = grad


def sgld_init(x0, logp_and_grad=None):
    """The state a Langevin chain starts from.

    Parameters
    ----------
    x0 : array-like of shape (n_params,)
    logp_and_grad : callable, optional
        Given, the log density and gradient at ``x0`` are evaluated and
        kept in the state, as :func:`mala_step` needs them.

    Returns
    -------
    SGLDState

    Raises
    ------
    ValueError
        When ``logp_and_grad`` is given and not finite at ``x0``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import sgld_init
    >>> state = sgld_init([0.0, 1.0], lambda x: (-0.5 * float(x @ x), -x))
    >>> state.t, state.logp
    (0, -0.5)
    """
    state = SGLDState(np.array(x0, dtype=np.float64), 0, 1.0, 0, 0, [], None, None, [])
    if logp_and_grad is not None:
        _evaluate_start(logp_and_grad, state)
    return state


def _evaluate_start(logp_and_grad, state):
    state.logp, state.grad = _finite_evaluation(logp_and_grad, state.x)
    if state.grad is None:
        raise ValueError(
            f"The log density or its gradient is not finite at the start {state.x}."
        )


def _moved(state, x, logp=None, grad=None):
    """A copy of ``state`` at ``x``; the bookkeeping fields are shared."""
    new = copy.copy(state)
    new.x, new.logp, new.grad = x, logp, grad
    return new


def sgld_step(state, logp_and_grad, rng, *, step_size, metric, bounds=None):
    """One unadjusted (stochastic-gradient) Langevin update.

    ``x' = x + eps/2 M g + sqrt(eps) R z`` with ``g`` the gradient estimate
    at ``x``, ``R R' = M`` and ``z ~ N(0, I)``; with ``bounds`` a finite
    ``x'`` is reflected back into the box. The gradient is evaluated before
    the noise is drawn: a loop of these steps with :func:`run_sgld`'s step
    sizes repeats its chain bit for bit.

    Parameters
    ----------
    state : SGLDState
    logp_and_grad : callable
        ``x -> (value, grad)``; ``value`` is ignored.
    rng : numpy.random.Generator
    step_size : float
        ``eps``.
    metric : LangevinMetric
    bounds : ndarray of shape (n_params, 2), optional

    Returns
    -------
    state : SGLDState
        At ``x'``; ``state`` itself when the gradient or ``x'`` is not
        finite (``info.failed``).
    info : SGLDInfo

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import sgld_init, sgld_step, LangevinMetric
    >>> rng, metric = np.random.default_rng(0), LangevinMetric(None, 1)
    >>> state, xs = sgld_init(np.zeros(1)), []
    >>> for _ in range(4000):
    ...     state, _ = sgld_step(state, lambda x: (0.0, -x), rng,
    ...                          step_size=0.05, metric=metric)
    ...     xs.append(state.x[0])
    >>> bool(abs(np.std(xs[500:]) - 1.0) < 0.2)
    True
    """
    _, grad = logp_and_grad(state.x)
    grad = np.asarray(grad, dtype=np.float64)
    noise = _times_root(metric.root, rng.standard_normal(state.x.shape[0]))
    proposal = (
        state.x + 0.5 * step_size * metric.apply(grad) + np.sqrt(step_size) * noise
    )
    if bounds is not None and np.all(np.isfinite(proposal)):
        proposal = _reflect(proposal, bounds)
    if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(proposal))):
        return state, SGLDInfo(False, 0.0, True, grad)
    return _moved(state, proposal, state.logp, state.grad), SGLDInfo(
        True, 1.0, False, grad
    )


def mala_step(state, logp_and_grad, rng, *, step_size, metric, bounds=None):
    """One Metropolis-adjusted Langevin transition.

    With ``M = R R'`` and the proposal ``x' = x + eps/2 M g + sqrt(eps) R z``,
    the forward proposal density needs only ``z`` and the reverse one only
    ``R' (g + g')``, since ``R^-1 (x - x' - eps/2 M g') = -(sqrt(eps) z +
    eps/2 R' (g + g'))``: no triangular solve per transition. A proposal
    outside ``bounds`` (where the target is zero) or with a non-finite
    density is rejected.

    Parameters
    ----------
    state : SGLDState
        With ``logp`` and ``grad`` at ``x`` (see :func:`sgld_init`).
    logp_and_grad : callable
        ``x -> (log density, gradient)``, both exact.
    rng : numpy.random.Generator
        Draws ``z``, then the uniform of the acceptance test.
    step_size : float
    metric : LangevinMetric
    bounds : ndarray of shape (n_params, 2), optional

    Returns
    -------
    state : SGLDState
    info : SGLDInfo

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import sgld_init, mala_step, LangevinMetric
    >>> def logp(x):
    ...     return -0.5 * float(x @ x), -x
    >>> rng, metric = np.random.default_rng(0), LangevinMetric(None, 1)
    >>> state, accepted = sgld_init(np.zeros(1), logp), []
    >>> for _ in range(500):
    ...     state, info = mala_step(state, logp, rng, step_size=1.0, metric=metric)
    ...     accepted.append(info.accepted)
    >>> bool(0.3 < np.mean(accepted) < 0.9)
    True
    """
    root = metric.root
    z = rng.standard_normal(state.x.shape[0])
    root_z = _times_root(root, z)
    proposal = (
        state.x
        + 0.5 * step_size * metric.apply(state.grad)
        + math.sqrt(step_size) * root_z
    )
    u = rng.random()
    inside = bool(np.isfinite(proposal).all()) and (
        bounds is None
        or bool(((proposal >= bounds[:, 0]) & (proposal <= bounds[:, 1])).all())
    )
    logp, grad = (
        _finite_evaluation(logp_and_grad, proposal) if inside else (-np.inf, None)
    )
    prob = 0.0
    if grad is not None:
        back = z + 0.5 * math.sqrt(step_size) * _times_root_t(root, state.grad + grad)
        log_ratio = logp - state.logp + 0.5 * (float(z @ z) - float(back @ back))
        prob = math.exp(min(0.0, log_ratio))
    info = SGLDInfo(u < prob, prob, inside and grad is None)
    if info.accepted:
        return _moved(state, proposal, logp, grad), info
    return state, info


# Long because the docstring documents 20 parameters; the body is a thin loop.
def run_sgld(
    logp_and_grad,
    x0,
    *,
    n_iter,
    a,
    b=1.0,
    gamma=1.0,
    preconditioner=None,
    freeze_threshold=None,
    freeze_window=100,
    bounds=None,
    rng,
    max_failures=5,
    verbose=0,
    print_fn=print,
    resume=None,
    metropolis=False,
    adapt_steps=0,
    target_accept=MALA_TARGET_ACCEPT,
    metric_windows=(),
    progress=None,
):
    """Run one SGLD chain, or one MALA chain with ``metropolis=True``.

    Parameters
    ----------
    logp_and_grad : callable
        ``logp_and_grad(x) -> (value, grad)``; ``grad`` is an unbiased
        estimate of the gradient of the log density, ``value`` is ignored
        (it may be NaN) unless ``metropolis=True``, which needs both exact.
    x0 : ndarray of shape (n_params,)
        Starting point; not used when ``resume`` is given.
    n_iter : int
        Iterations of this run.
    a, b, gamma : float
        Step size ``eps_t = a (b + t)^-gamma``; see :func:`sgld_schedule`.
        With ``metropolis=True`` and ``adapt_steps > 0``, ``a b^-gamma`` is
        only the adaptation's initial step.
    preconditioner : ndarray of shape (n_params,) or (n_params, n_params), optional
        ``M``: a diagonal or a symmetric positive definite matrix, ideally
        close to the posterior covariance. Identity by default.
    freeze_threshold : float, optional
        Freeze the step size once the ratio of seed 002's eq. 7 falls below
        it. ``None`` never freezes. Not used with ``metropolis=True``.
    freeze_window : int, default=100
        Iterations per estimate of the gradient covariance ``V``.
    bounds : ndarray of shape (n_params, 2), optional
        A box; proposals outside are reflected back in (SGLD) or rejected
        (MALA, whose target is zero outside the box).
    rng : numpy.random.Generator
        Source of the injected noise (and of the acceptance draws).
    max_failures : int, default=5
        Consecutive rejected updates (non-finite gradient or state) after
        which an SGLD run stops with ``FloatingPointError``. Every rejection
        halves the step size for the rest of the run. MALA simply rejects
        such proposals.
    verbose : int, default=0
        Print about ten progress lines when positive.
    print_fn : callable, default=print
    resume : SGLDState, optional
        State of an earlier run (its ``result.state``) to continue from:
        position, schedule counter, step halvings, freezing window and frozen
        step (and MALA's cached density and adaptation). With the same
        ``rng`` continuing, the two runs together equal one run of their
        summed length.
    metropolis : bool, default=False
        Accept or reject every Langevin proposal by Metropolis-Hastings
        (MALA): no discretisation bias, so larger steps.
    adapt_steps : int, default=0
        With ``metropolis=True``: iterations (counted from the chain's
        start) during which dual averaging (Hoffman and Gelman, 2014) tunes
        the step toward ``target_accept``; the averaged step is then frozen
        (``frozen_at = adapt_steps - 1``). 0 follows the schedule.
    target_accept : float, default=0.574
        Acceptance rate the adaptation aims at.
    metric_windows : sequence of (int, int), default=()
        With ``metropolis=True``: iteration ranges ``[start, end)`` inside
        the adaptation at whose end the preconditioner is re-estimated from
        the window's states and gradients (:func:`fisher_metric`; a window
        that gives no usable estimate keeps the metric in use), and dual
        averaging restarts from
        the current step. The estimate is kept in ``state.metric``.
    progress : callable, optional
        ``progress(iteration, n_iter, stats)`` after every iteration of this
        run, with the step size and, for MALA, the acceptance rate so far.

    Returns
    -------
    SGLDResult

    Raises
    ------
    FloatingPointError
        After ``max_failures`` consecutive rejected SGLD updates.
    ValueError
        With ``metropolis=True``, when the log density or its gradient at
        the start is not finite.

    Warns
    -----
    SamplerWarning
        At the first rejected SGLD update.

    References
    ----------
    G. O. Roberts and R. L. Tweedie, "Exponential convergence of Langevin
    distributions and their discrete approximations", Bernoulli 2(4), 1996.

    G. O. Roberts and J. S. Rosenthal, "Optimal scaling of discrete
    approximations to Langevin diffusions", JRSS B 60(1), 1998.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_sgld
    >>> res = run_sgld(lambda x: (0.0, -x), np.zeros(1), n_iter=4000, a=0.05,
    ...                gamma=0.0, rng=np.random.default_rng(0))
    >>> bool(abs(res.samples[500:].std() - 1.0) < 0.2)
    True
    >>> mala = run_sgld(lambda x: (-0.5 * float(x @ x), -x), np.zeros(1),
    ...                 n_iter=2000, a=1.0, gamma=0.0, metropolis=True,
    ...                 adapt_steps=200, rng=np.random.default_rng(0))
    >>> mala.frozen_at, bool(0.3 < mala.accepted[200:].mean() < 0.9)
    (199, True)
    """
    if resume is None:
        resume = sgld_init(x0)
    if resume.metric is not None:
        preconditioner = resume.metric
    metric = LangevinMetric(preconditioner, resume.x.shape[0])
    bounds = None if bounds is None else np.asarray(bounds, dtype=np.float64)
    chain = _Chain(resume, metric, bounds, rng, verbose, print_fn, n_iter)
    if metropolis:
        if not 0.0 < float(target_accept) < 1.0:
            raise ValueError(f"target_accept must lie in (0, 1); got {target_accept}.")
        step = _mala_update(
            logp_and_grad,
            chain,
            (a, b, gamma),
            adapt_steps,
            target_accept,
            _check_windows(metric_windows, adapt_steps),
        )
    else:
        step = _sgld_update(
            logp_and_grad,
            chain,
            a,
            b,
            gamma,
            freeze_threshold,
            freeze_window,
            max_failures,
        )
    for t in range(chain.t0, chain.t0 + n_iter):
        step(t)
        chain.record(t)
        if progress is not None:
            progress(t - chain.t0 + 1, n_iter, chain.stats(t))
    return chain.result()


class _Chain:
    """Mutable state of a run, its records and its progress lines."""

    def __init__(self, resume, metric, bounds, rng, verbose, print_fn, n_iter):
        self.s = copy_state(resume)
        self.t0 = resume.t
        self.metric, self.bounds, self.rng = metric, bounds, rng
        self.samples = np.empty((n_iter, self.s.x.shape[0]))
        self.steps = np.empty(n_iter)
        self.accepted = np.ones(n_iter, dtype=bool)
        self.eps = np.nan
        self.verbose, self.print_fn, self.n_iter = verbose, print_fn, n_iter
        self.report = max(1, n_iter // 10)
        self.t_start = time.perf_counter()

    def set_metric(self, M):
        self.metric = LangevinMetric(M, self.s.x.shape[0])
        self.s.metric = M

    def record(self, t):
        i = t - self.t0
        self.samples[i] = self.s.x
        self.steps[i] = self.eps
        if self.verbose and (i + 1) % self.report == 0:
            rate = ""
            if self.s.dual is not None or self.s.logp is not None:
                rate = f", acceptance {self.accepted[: i + 1].mean():.2f}"
            self.print_fn(
                f"iteration {t + 1}/{self.t0 + self.n_iter}: step {self.eps:.3g}"
                f"{' (frozen)' if self.s.frozen_eps is not None else ''}{rate}, "
                f"state {np.array2string(self.s.x, precision=3)}, "
                f"{time.perf_counter() - self.t_start:.1f} s"
            )

    def stats(self, t):
        """The step size and, for MALA, the acceptance rate so far."""
        figures = {"step": float(self.eps)}
        if self.s.dual is not None or self.s.logp is not None:
            figures["acceptance"] = float(self.accepted[: t - self.t0 + 1].mean())
        return figures

    def result(self):
        self.s.t = self.t0 + self.n_iter
        return SGLDResult(self.samples, self.steps, self.s, self.accepted)


def copy_state(state):
    """A shallow copy of ``state`` whose fields a run may rebind freely.

    Parameters
    ----------
    state : SGLDState

    Returns
    -------
    SGLDState

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.sgld import SGLDState, copy_state
    >>> s = SGLDState(np.zeros(2), 0, 1.0, 0, 0, [], None, None, [])
    >>> copy_state(s).x is s.x
    False
    """
    return SGLDState(
        np.array(state.x, dtype=np.float64),
        state.t,
        state.scale,
        state.failures,
        state.n_rejected,
        list(state.window),
        state.frozen_at,
        state.frozen_eps,
        list(state.freeze_ratios),
        state.logp,
        None if state.grad is None else np.array(state.grad),
        state.dual,
        state.n_accepted,
        state.metric,
        list(state.moments),
    )


def _sgld_update(
    logp_and_grad, chain, a, b, gamma, freeze_threshold, freeze_window, max_failures
):
    """The driver of SGLD: the schedule, rejections and freezing around a step."""

    def update(t):
        s = chain.s
        eps = s.frozen_eps if s.frozen_eps is not None else a * (b + t) ** (-gamma)
        eps *= s.scale
        chain.eps = eps
        s, info = sgld_step(
            s,
            logp_and_grad,
            chain.rng,
            step_size=eps,
            metric=chain.metric,
            bounds=chain.bounds,
        )
        chain.s = s
        if info.failed:
            _reject_sgld(s, t, max_failures)
            return
        s.failures = 0
        if freeze_threshold is not None and s.frozen_eps is None:
            s.window.append(info.grad)
            if len(s.window) == freeze_window:
                ratio = _noise_ratio(np.array(s.window), eps, chain.metric.root)
                s.freeze_ratios.append((t, ratio))
                s.window = []
                if ratio < freeze_threshold:
                    s.frozen_at, s.frozen_eps = t, eps / s.scale

    return update


def _reject_sgld(s, t, max_failures):
    s.failures += 1
    s.n_rejected += 1
    s.scale *= 0.5
    if s.n_rejected == 1:
        warn_user(
            f"SGLD update {t} was rejected: the gradient or the new state "
            "was not finite. The step size is halved after every "
            "rejection.",
            SamplerWarning,
        )
    if s.failures >= max_failures:
        raise FloatingPointError(
            f"SGLD stopped after {s.failures} consecutive non-finite "
            f"gradients or states (iteration {t}); the last state was "
            f"{s.x}. Lower the step size or check the target."
        )


def _finite_evaluation(logp_and_grad, x):
    value, grad = logp_and_grad(x)
    grad = np.asarray(grad, dtype=np.float64)
    if not (np.isfinite(value) and np.all(np.isfinite(grad))):
        return -np.inf, None
    return float(value), grad


def _mala_update(logp_and_grad, chain, schedule, adapt_steps, target_accept, windows):
    """The driver of MALA: step-size and metric adaptation around a step."""
    a, b, gamma = schedule
    ends = {end: start for start, end in windows}
    if chain.s.logp is None:
        _evaluate_start(logp_and_grad, chain.s)
    s = chain.s
    if s.dual is None and s.frozen_eps is None and s.t < adapt_steps:
        s.dual = DualAveraging(a * b ** (-gamma), target_accept)

    def update(t):
        s = chain.s
        if s.frozen_eps is not None:
            eps = s.frozen_eps
        elif s.dual is not None:
            eps = math.exp(s.dual.log_step)
        else:
            eps = a * (b + t) ** (-gamma)
        chain.eps = eps
        s, info = mala_step(
            s,
            logp_and_grad,
            chain.rng,
            step_size=eps,
            metric=chain.metric,
            bounds=chain.bounds,
        )
        chain.s = s
        s.n_rejected += info.failed
        chain.accepted[t - chain.t0] = info.accepted
        s.n_accepted += info.accepted
        if s.dual is not None:
            s.dual.update(info.accept_prob)
            if any(start <= t < end for start, end in windows):
                s.moments.append((s.x, s.grad))
            if t + 1 in ends:
                _adapt_metric(chain, eps, target_accept)
            if t == adapt_steps - 1:
                s.frozen_at, s.frozen_eps, s.dual = t, s.dual.final_step_size, None

    return update


def _restarted_dual(eps, target_accept):
    """Dual averaging restarted after a metric update, centred on ``eps``.

    Hoffman and Gelman centre a fresh adaptation on ``10 eps`` so that it
    tries large steps early; after a metric update the step in use is
    already about right, and MALA's acceptance falls steeply above it: on
    concrete a restart centred on ``10 eps`` left one chain of two with a
    quarter of the other's step after a 50-iteration terminal stretch.
    """
    dual = DualAveraging(eps, target_accept)
    dual.mu = math.log(eps)
    return dual


def _adapt_metric(chain, eps, target_accept):
    """Re-estimate the preconditioner from the window; restart the step."""
    s = chain.s
    xs = np.array([m[0] for m in s.moments])
    gs = np.array([m[1] for m in s.moments])
    s.moments = []
    estimate = fisher_metric(xs, gs)
    if estimate is not None:
        chain.set_metric(estimate)
        s.dual = _restarted_dual(eps, target_accept)


# Pseudo-draws of each covariance's own diagonal added to a window's
# covariances (Stan adds five of a small multiple of the identity): they
# keep a short window's estimate positive definite whatever the scales.
_METRIC_PRIOR_DRAWS = 5


def fisher_metric(xs, grads):
    """The Gaussian covariance closest to a window of draws and gradients.

    For a Gaussian target ``N(mu, S)`` the gradient is ``-S^-1 (x - mu)``,
    so ``Cov(grad) = S^-1 Cov(x) S^-1`` whatever part of the target the
    draws cover: ``S`` is the geometric mean ``A # B^-1 = B^-1/2 (B^1/2 A
    B^1/2)^1/2 B^-1/2`` of ``A = Cov(x)`` and ``B = Cov(grad)``, the
    minimiser of the Fisher divergence between the draws and a Gaussian
    (the dense form of nutpie's diagonal ``sqrt(Var x / Var grad)``;
    Seyboldt, Carlson and Carpenter). Unlike the covariance of the draws
    alone (Stan's estimate), it needs no exploration of the wide
    directions, which a short warm-up of a slowly mixing chain lacks.

    Parameters
    ----------
    xs, grads : ndarray of shape (n_draws, n_params)
        States and gradients of the log density at them. Each covariance
        is shrunk toward its own diagonal by ``_METRIC_PRIOR_DRAWS``
        pseudo-draws.

    Returns
    -------
    ndarray of shape (n_params, n_params) or None
        None when a coordinate never moved or the estimate is not finite
        and positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.sgld import fisher_metric
    >>> S = np.array([[4.0, 1.0], [1.0, 1.0]])
    >>> xs = np.random.default_rng(0).multivariate_normal([0, 0], S, 500) * 0.1
    >>> grads = -xs @ np.linalg.inv(S)
    >>> np.round(fisher_metric(xs, grads), 1)  # the draws' covariance is S / 100
    array([[4., 1.],
           [1., 1.]])
    """
    k = xs.shape[0]
    if k < 2:
        return None
    with np.errstate(all="ignore"):
        try:
            cov_x, cov_g = _shrunk_cov(xs), _shrunk_cov(grads)
            half, inv_half = _sqrt_and_inverse(cov_g)
            mid, _ = _sqrt_and_inverse(half @ cov_x @ half)
        except np.linalg.LinAlgError:
            return None
        metric = inv_half @ mid @ inv_half
    metric = 0.5 * (metric + metric.T)
    if not np.all(np.isfinite(metric)):
        return None
    try:
        np.linalg.cholesky(metric)
    except np.linalg.LinAlgError:
        return None
    return metric


def _shrunk_cov(values):
    k, w = values.shape[0], _METRIC_PRIOR_DRAWS
    cov = np.atleast_2d(np.cov(values, rowvar=False))
    return (k * cov + w * np.diag(np.diag(cov))) / (k + w)


def _sqrt_and_inverse(A):
    """Symmetric square root of ``A`` and its inverse; LinAlgError unless PD."""
    lam, vectors = np.linalg.eigh(0.5 * (A + A.T))
    if not (np.all(np.isfinite(lam)) and lam[0] > 0):
        raise np.linalg.LinAlgError("not positive definite")
    root = np.sqrt(lam)
    return (vectors * root) @ vectors.T, (vectors / root) @ vectors.T


def _check_windows(windows, adapt_steps):
    windows = [(int(a), int(b)) for a, b in windows]
    for start, end in windows:
        if not 0 <= start < end <= adapt_steps:
            raise ValueError(
                f"Metric windows must lie inside the adaptation [0, {adapt_steps}); "
                f"got {(start, end)}."
            )
    return windows


def _times_root(root, z):
    if root is None:
        return z
    return root @ z if root.ndim == 2 else root * z


def _times_root_t(root, v):
    """``R' v`` for the preconditioner's root ``R`` (None: identity)."""
    if root is None:
        return v
    return root.T @ v if root.ndim == 2 else root * v


def _noise_ratio(grads, eps, root):
    """``eps / 4 lambda_max(L' V L)`` with ``M = L L'``.

    ``L' V L`` has the spectrum of ``M^1/2 V M^1/2``.
    """
    if grads.shape[1] == 0:
        return 0.0
    V = np.atleast_2d(np.cov(grads, rowvar=False))
    if root is not None:
        L = np.diag(root) if root.ndim == 1 else root
        V = L.T @ V @ L
    return float(eps / 4.0 * np.max(np.linalg.eigvalsh(0.5 * (V + V.T))))
