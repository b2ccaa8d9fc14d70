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

One update is :func:`~skgp_bayes.inference.langevin.sgld_step` or
:func:`~skgp_bayes.inference.langevin.mala_step` on an :class:`SGLDState`;
:func:`run_sgld` is the loop around it, with the step-size schedule,
freezing, rejections and adaptation outside the step.
"""

import math
import time

import numpy as np

from .._warnings import warn_user
from ..exceptions import SamplerWarning
from ._mala_stretch import chain_jump, compiled_stretch, mala_stream_length
from .adaptation import DualAveraging, fisher_metric
from .langevin import (
    LangevinMetric,
    SGLDInfo,
    SGLDState,
    mala_step,
    sgld_init,
    sgld_step,
)

__all__ = [
    "LangevinMetric",
    "SGLDInfo",
    "SGLDResult",
    "SGLDState",
    "copy_state",
    "mala_stream_length",
    "mala_step",
    "readapting_state",
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
    n_jumps, n_jumps_accepted : int
        Mode-jumping moves tried and accepted (``jumps``; 0 without).

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
        self.n_jumps = self.n_jumps_accepted = 0


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
    jumps=None,
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
    jumps : ModeJumps, optional
        With ``metropolis=True``: after every ``jumps.every`` iterations an
        independence Metropolis-Hastings move from ``jumps``' mixture of
        Gaussians (:func:`~skgp_bayes.inference.mode_jumps.mode_jump`), so
        that the chain moves between the modes it describes. The result's
        ``n_jumps`` and ``n_jumps_accepted`` count the moves.

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
    if jumps is not None and not metropolis:
        raise ValueError("jumps need exact log densities: metropolis=True.")
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
    stretch = None
    if metropolis:
        stretch = compiled_stretch(logp_and_grad, chain, jumps, step.adaptation)
    t, end = chain.t0, chain.t0 + n_iter
    while t < end:
        last = None if stretch is None else stretch(t, end)
        if last is None:
            step(t)
            if jumps is not None and (t + 1) % jumps.every == 0:
                chain_jump(chain, logp_and_grad, jumps)
        else:
            t = last
        chain.record(t)
        if progress is not None:
            progress(t - chain.t0 + 1, n_iter, chain.stats(t))
        t += 1
    result = chain.result()
    result.n_jumps, result.n_jumps_accepted = chain.n_jumps, chain.n_jumps_accepted
    return result


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
        self.n_jumps = self.n_jumps_accepted = 0

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


def readapting_state(state, x, target_accept=MALA_TARGET_ACCEPT):
    """A MALA chain's state at ``x`` that adapts its step and metric again.

    For a chain that goes on in new coordinates (the same density under a
    change of variables fitted to its draws): the counter, the metric in
    use and the random state carry over, the cached density and gradient
    are dropped (they are the old coordinates'), and dual averaging
    restarts from the step the chain had frozen. Run it with
    ``adapt_steps`` and ``metric_windows`` beyond ``state.t``; its draws
    from then on are discarded as warm-up, as a fresh chain's are.

    Parameters
    ----------
    state : SGLDState
        A MALA chain's state (``metropolis=True``) after its adaptation.
    x : array-like of shape (n_params,)
        The chain's position in the new coordinates.
    target_accept : float, default=0.574
        The acceptance rate the restarted adaptation aims at.

    Returns
    -------
    SGLDState

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_sgld
    >>> from skgp_bayes.inference.sgld import readapting_state
    >>> target = lambda x: (-0.5 * float(x @ x), -x)
    >>> first = run_sgld(target, np.zeros(1), n_iter=300, a=1.0, gamma=0.0,
    ...                  metropolis=True, adapt_steps=200,
    ...                  rng=np.random.default_rng(0))
    >>> state = readapting_state(first.state, 2.0 * first.state.x)
    >>> state.t, state.frozen_at, state.logp is None
    (300, None, True)
    >>> more = run_sgld(lambda s: (-0.125 * float(s @ s), -0.25 * s), None,
    ...                 n_iter=300, a=1.0, gamma=0.0, metropolis=True,
    ...                 adapt_steps=500, resume=state,
    ...                 rng=np.random.default_rng(1))
    >>> more.frozen_at
    499
    """
    if state.frozen_eps is None:
        raise ValueError("Only a chain whose step has been adapted can readapt.")
    s = copy_state(state)
    s.x = np.array(x, dtype=np.float64)
    s.logp = s.grad = None
    s.frozen_at = s.frozen_eps = None
    s.dual = _restarted_dual(state.frozen_eps, target_accept)
    s.moments = []
    return s


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


def _mala_update(logp_and_grad, chain, schedule, adapt_steps, target_accept, windows):
    """The driver of MALA: step-size and metric adaptation around a step.

    Returns ``update(t)``, one interpreted transition, with the warm-up's
    schedule as ``update.adaptation`` (for the compiled stretches).
    """
    a, b, gamma = schedule
    adaptation = _Adaptation(adapt_steps, target_accept, windows)
    if chain.s.logp is None:
        start = sgld_init(chain.s.x, logp_and_grad)
        chain.s.logp, chain.s.grad = start.logp, start.grad
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
            adaptation.collect(s, t, ([s.x], [s.grad]))
            adaptation.conclude(chain, t, eps)

    update.adaptation = adaptation
    return update


class _Adaptation:
    """MALA's warm-up: its metric windows and the end of the step's adaptation."""

    def __init__(self, adapt_steps, target_accept, windows):
        self.adapt_steps, self.target_accept = adapt_steps, target_accept
        self.windows = windows
        self.ends = {end: start for start, end in windows}

    def next_stop(self, t):
        """The first iteration after ``t`` at which the metric or step changes
        (infinite where none does)."""
        return min(
            [end for end in self.ends if end > t]
            + ([self.adapt_steps] if self.adapt_steps > t else []),
            default=math.inf,
        )

    def collect(self, s, t, moments):
        """Keep the states and gradients after iterations ``t, t + 1, ...``
        (``moments = (states, gradients)``) that fall in a metric window."""
        if s.dual is None:
            return
        for i, (x, grad) in enumerate(zip(*moments, strict=True)):
            if any(start <= t + i < end for start, end in self.windows):
                s.moments.append((np.array(x), np.array(grad)))

    def conclude(self, chain, t, eps):
        """After iteration ``t``'s transition at ``eps``: a new metric at a
        window's end, the step frozen at the adaptation's."""
        s = chain.s
        if s.dual is None:
            return
        if t + 1 in self.ends:
            _adapt_metric(chain, eps, self.target_accept)
        if t == self.adapt_steps - 1:
            s.frozen_at, s.frozen_eps, s.dual = t, s.dual.final_step_size, None


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
    estimate = fisher_metric(xs, gs, chain.bounds)
    if estimate is not None:
        chain.set_metric(estimate)
        s.dual = _restarted_dual(eps, target_accept)


def _check_windows(windows, adapt_steps):
    windows = [(int(a), int(b)) for a, b in windows]
    for start, end in windows:
        if not 0 <= start < end <= adapt_steps:
            raise ValueError(
                f"Metric windows must lie inside the adaptation [0, {adapt_steps}); "
                f"got {(start, end)}."
            )
    return windows


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
