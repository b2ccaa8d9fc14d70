"""Stein variational gradient descent (Liu and Wang, 2016) over flat vectors.

The engine knows nothing about Gaussian processes: it moves a set of
particles with the kernelised Stein direction of any differentiable log
density given as ``logp_and_grad(particles) -> (values, grads)``.

Stopping rule. SVGD's particles are a fixed point of the update: at
convergence the Stein field ``phi`` vanishes at every particle. The run
stops once the root mean square of the field, measured in units of the
posterior standard deviation, stays below ``tol`` for ``_PATIENCE``
iterations. The unit makes the rule free of the parameters' scale: with a
preconditioner ``Q = S S'`` (the inverse Hessian at a mode) the field is
measured in the whitened coordinates ``S^-1 x``; without one, each
coordinate's field is multiplied by that coordinate's particle spread (a
diagonal whitening by the particles' own sd). The field is divided by each
particle's kernel mass ``1/J sum_j k(x_j, x_i)``, which leaves its zeros
unchanged and makes it, for a Gaussian in whitened coordinates, the
distance left to travel: a field of ``tol`` means the particles are about
``tol`` posterior sds from their fixed point. Coordinates held at a bound
by a field pointing out of the box count as settled (the projected field,
as in L-BFGS-B).

Kernels. ``kernel="coordinatewise"`` gives each whitened coordinate its
own RBF kernel, for targets with many coordinates and few particles;
``kernel="rbf+linear"`` adds a linear kernel to the joint RBF one, against
the joint kernel's shrinking of the spread with fewer coordinates than
particles (:func:`choose_kernel` picks one from the shape); the fields and
their kernels are in :mod:`.stein_kernel`.

Step control. ``step_control="per_coordinate"`` (whitened runs) gives every
particle and coordinate its own fraction of the field, at most
``learning_rate``: halved where the field's sign flips between two
iterations (the step overshot a stiff direction), down to 1/64 of it (to
1/4096 where the field, above ``tol``, flips without shrinking: a step
that diverges), and grown by a fifth where it keeps its sign, as in Rprop
(Riedmiller and Braun, 1993). A stiff coordinate then slows alone, where the global rule
(``"global"``: halve the whole step once the field grows 20% past its
smallest value) slows every coordinate for it and never speeds up again.

State and step. One iteration is :func:`svgd_step` on an :class:`SVGDState`
built by :func:`svgd_init`; :func:`run_svgd` is the loop around it, with the
records, the callbacks, the rejection policy and the stopping outside the
step. A continued run keeps the state and steps again.
"""

import time
from dataclasses import dataclass, replace

import numpy as np

from .._warnings import warn_user
from ..exceptions import SamplerWarning
from ._svgd_steps import adapt_rates, plain_step
from .adam import AdamState, adam_init, adam_update
from .stein_kernel import (
    SteinCoordinates,
    choose_kernel,
    median_bandwidth,
    svgd_direction,
)

__all__ = [
    "svgd_direction",
    "median_bandwidth",
    "choose_kernel",
    "SVGDInfo",
    "SVGDResult",
    "SVGDState",
    "run_svgd",
    "svgd_init",
    "svgd_step",
]

# Consecutive rejected steps (non-finite target) before the run is abandoned.
_MAX_CONSECUTIVE_FAILURES = 10
# Consecutive iterations with the field below tol before the run counts as
# converged: one small value may be a particle passing through, two in a row
# on a contracting deterministic map are not.
_PATIENCE = 2
# Growth of the field over its smallest value in the run that halves the
# whitened step. The field's norm is not a Lyapunov function of the SVGD
# flow (its Jacobian is not symmetric), so small rises happen without
# overshooting; a 20% rise is taken for oscillation.
_REGROWTH = 1.2
# Standard deviations of the mean log density of J exact draws that a fall
# must exceed to count as instability (see _check_stability).
_FALL_SDS = 3.0


class SVGDResult:
    """Outcome of :func:`run_svgd`.

    Attributes
    ----------
    particles : ndarray of shape (J, P)
    log_density : ndarray of shape (J,)
        Log density at the final particles.
    grads : ndarray of shape (J, P)
        Gradients at the final particles.
    n_iter : int
        Iterations taken in this run.
    converged : bool
        Whether the run ended because the stopping rule (``tol``) was met.
    history : dict of lists
        ``log_density`` (mean over particles), ``learning_rate``,
        ``max_move``, ``field`` (the stopping rule's RMS normalised field in
        posterior sds, before the step), ``bandwidth``, ``time`` per
        iteration.
    state : dict
        Optimiser state to continue from (``warm_start``).

    Examples
    --------
    >>> from skgp_bayes.inference import SVGDResult
    >>> SVGDResult.__name__
    'SVGDResult'
    """

    def __init__(
        self, particles, log_density, grads, n_iter, converged, history, state
    ):
        self.particles = particles
        self.log_density = log_density
        self.grads = grads
        self.n_iter = n_iter
        self.converged = converged
        self.history = history
        self.state = state


def _finite(values, grads, stochastic=False):
    if stochastic:
        # Gradient-only estimators (stochastic trace estimates) return NaN
        # for a value they never compute; -inf still rejects the step.
        values = np.where(np.isnan(values), 0.0, values)
    return bool(np.all(np.isfinite(values)) and np.all(np.isfinite(grads)))


@dataclass
class SVGDState:
    """Particles of an SVGD run with everything the next step needs.

    Attributes
    ----------
    particles : ndarray of shape (J, P)
    values : ndarray of shape (J,)
        Log density at the particles.
    grads : ndarray of shape (J, P)
        Gradients of the log density at the particles.
    adam : AdamState
        Adam's moments (runs without a preconditioner).
    learning_rate : float
        Base learning rate, halved after every rejected step (and, in a
        whitened run with the global rule, when the field regrows).
    iterations : int
        Accepted steps, counted across continued runs (the clock of
        ``decay``).
    rates, last_field : ndarray of shape (J, P) or None
        Per-coordinate step fractions and the last normalised field
        (``step_control="per_coordinate"``).
    metric : SteinCoordinates
        Working coordinates of the run (whitened by the preconditioner or
        not) and the posterior-sd unit of the stopping rule.
    kernel : {"rbf", "rbf+linear", "coordinatewise"}
    per_coordinate : bool
        Whether steps are controlled per coordinate.
    stochastic : bool
        Whether values and gradients are noisy estimates.
    quiet_iters : int
        Consecutive steps with the field at most ``tol``.
    fresh : bool
        Whether the particles moved since the field was last counted (a
        rejected step leaves them, and they are counted once).
    best : float
        Smallest field of the run (the global step rule).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import svgd_init
    >>> def logp(x):
    ...     return -0.5 * np.sum(x**2, axis=1), -x
    >>> state = svgd_init(logp, np.zeros((4, 2)), learning_rate=0.1)
    >>> state.particles.shape, state.iterations
    ((4, 2), 0)
    """

    particles: np.ndarray
    values: np.ndarray
    grads: np.ndarray
    adam: AdamState
    learning_rate: float
    iterations: int
    rates: np.ndarray
    last_field: np.ndarray
    metric: SteinCoordinates
    kernel: str
    per_coordinate: bool
    stochastic: bool
    quiet_iters: int = 0
    fresh: bool = True
    best: float = np.inf

    def checkpoint(self):
        """The ``state`` dict of :class:`SVGDResult`, to continue a run.

        Returns
        -------
        dict
            ``adam``, ``learning_rate``, ``iterations``, ``rates`` and
            ``last_field``: the ``resume`` of :func:`svgd_init` and the
            ``state`` of :func:`run_svgd`.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.inference import svgd_init
        >>> def logp(x):
        ...     return -0.5 * np.sum(x**2, axis=1), -x
        >>> sorted(svgd_init(logp, np.zeros((2, 1)), learning_rate=0.1).checkpoint())
        ['adam', 'iterations', 'last_field', 'learning_rate', 'rates']
        """
        return {
            "adam": self.adam,
            "learning_rate": self.learning_rate,
            "iterations": self.iterations,
            "rates": self.rates,
            "last_field": self.last_field,
        }


@dataclass
class SVGDInfo:
    """What one :func:`svgd_step` did.

    Attributes
    ----------
    converged : bool
        The field had stayed at most ``tol`` long enough: no step was
        taken and the run is over.
    accepted : bool
        The particles moved. False on convergence, and when the target was
        not finite at the moved particles (the step is then rejected: the
        particles stay and the learning rate halves).
    field : float
        The stopping rule's RMS normalised field, in posterior sds, before
        the step.
    bandwidth : float
        Kernel bandwidth (the median of the coordinates' bandwidths with
        the coordinate-wise kernel).
    learning_rate : float
        Learning rate of the step, after ``decay``.
    max_move : float
        Largest change of a coordinate (0 unless accepted).
    capped : bool
        Whether some coordinate's step hit ``max_step``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import svgd_init, svgd_step
    >>> def logp(x):
    ...     return -0.5 * np.sum(x**2, axis=1), -x
    >>> state = svgd_init(logp, np.ones((3, 1)), learning_rate=0.1)
    >>> state, info = svgd_step(state, logp)
    >>> info.accepted, info.converged
    (True, False)
    """

    converged: bool
    accepted: bool
    field: float
    bandwidth: float
    learning_rate: float = np.nan
    max_move: float = 0.0
    capped: bool = False


def svgd_init(
    logp_and_grad,
    particles,
    *,
    learning_rate,
    resume=None,
    preconditioner=None,
    kernel="rbf",
    step_control="global",
    stochastic=False,
):
    """The state an SVGD run starts from.

    Parameters
    ----------
    logp_and_grad : callable
        ``logp_and_grad(particles) -> (values (J,), grads (J, P))``.
    particles : ndarray of shape (J, P)
        Starting particles (copied).
    learning_rate : float
        As in :func:`run_svgd`; ignored when ``resume`` is given.
    resume : dict, optional
        ``result.state`` of an earlier run (or :meth:`SVGDState.checkpoint`)
        to continue it exactly.
    preconditioner, kernel, step_control, stochastic
        As in :func:`run_svgd`.

    Returns
    -------
    SVGDState

    Raises
    ------
    FloatingPointError
        When the log density or its gradient is not finite at the particles.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import svgd_init
    >>> def logp(x):
    ...     return -0.5 * np.sum(x**2, axis=1), -x
    >>> svgd_init(logp, np.ones((2, 3)), learning_rate=0.1).values
    array([-1.5, -1.5])
    """
    particles = np.array(particles, dtype=np.float64, copy=True)
    metric = SteinCoordinates.of(preconditioner, particles.shape[1])
    per_coordinate = _check_options(kernel, step_control, metric)
    if resume is None:
        adam, lr, done = adam_init(particles), float(learning_rate), 0
        rates = last_field = None
    else:
        adam = resume["adam"].copy()
        lr = float(resume["learning_rate"])
        done = int(resume.get("iterations", 0))
        rates, last_field = resume.get("rates"), resume.get("last_field")
    if per_coordinate and (rates is None or rates.shape != particles.shape):
        rates, last_field = np.full(particles.shape, lr), None
    values, grads = logp_and_grad(particles)
    if not _finite(values, grads, stochastic):
        raise FloatingPointError(
            "The log density or its gradient is not finite at the initial particles."
        )
    return SVGDState(
        particles=particles,
        values=values,
        grads=grads,
        adam=adam,
        learning_rate=lr,
        iterations=done,
        rates=rates,
        last_field=last_field,
        metric=metric,
        kernel=kernel,
        per_coordinate=per_coordinate,
        stochastic=stochastic,
    )


def _normalised_field(state, bounds):
    """Field, its normalised form, bandwidth and residual at the particles."""
    metric = state.metric
    work, phi, normalised, bandwidth = metric.field(
        state.particles, state.grads, state.kernel
    )
    residual = metric.residual(normalised, state.particles, bounds)
    return work, phi, normalised, bandwidth, residual


def _count_and_adapt(state, normalised, residual, tol):
    """The stopping counter and Rprop's rates, once per set of particles."""
    quiet, rates, last_field = state.quiet_iters, state.rates, state.last_field
    if state.fresh:
        quiet = quiet + 1 if residual <= tol and not state.stochastic else 0
        if state.per_coordinate:
            unsettled = np.inf if state.stochastic else tol
            rates, last_field = adapt_rates(
                rates, last_field, normalised, state.learning_rate, unsettled
            )
    return quiet, rates, last_field


def _propose(state, work, phi, normalised, rates, lr, step_lr, max_step, bounds):
    """Moved particles, Adam's new state, and whether a step hit the cap."""
    metric, adam = state.metric, state.adam
    if metric.whitened:
        scale = step_lr if rates is None else rates * (step_lr / lr)
        step, capped = plain_step(normalised, scale, max_step)
        proposal = metric.to_params(work + step)
    else:
        adam = adam.copy()
        step = adam_update(adam, phi, step_lr, max_step=max_step)
        capped = bool(np.any(np.abs(step) >= max_step * (1.0 - 1e-9)))
        proposal = state.particles + step
    if bounds is not None:
        np.clip(proposal, bounds[:, 0], bounds[:, 1], out=proposal)
    return proposal, adam, capped


def svgd_step(state, logp_and_grad, *, tol=1e-2, bounds=None, max_step=1.0, decay=None):
    """One SVGD iteration: check the stopping rule, then move the particles.

    Parameters
    ----------
    state : SVGDState
    logp_and_grad : callable
        ``logp_and_grad(particles) -> (values (J,), grads (J, P))``.
    tol, bounds, max_step, decay
        As in :func:`run_svgd`.

    Returns
    -------
    state : SVGDState
        The moved particles; on convergence or rejection the same particles
        with the updated counters (and, on rejection, a halved learning
        rate).
    info : SVGDInfo

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import svgd_init, svgd_step
    >>> def logp(x):  # standard normal in 1-D
    ...     return -0.5 * np.sum(x**2, axis=1), -x
    >>> state = svgd_init(logp, np.linspace(1, 3, 10)[:, None], learning_rate=0.1)
    >>> for _ in range(300):
    ...     state, info = svgd_step(state, logp)
    ...     if info.converged:
    ...         break
    >>> bool(abs(state.particles.mean()) < 0.1)
    True
    """
    work, phi, normalised, bandwidth, residual = _normalised_field(state, bounds)
    quiet, rates, last_field = _count_and_adapt(state, normalised, residual, tol)
    state = replace(
        state, quiet_iters=quiet, fresh=False, rates=rates, last_field=last_field
    )
    if quiet >= _PATIENCE:
        return state, SVGDInfo(True, False, residual, float(bandwidth))
    lr, best = state.learning_rate, state.best
    regrown = residual > _REGROWTH * best
    if state.metric.whitened and not state.per_coordinate and not state.stochastic:
        if regrown:
            # A field grown well past its smallest value means the steps
            # overshoot along its stiffest direction (the repulsion between
            # close particles): shorter steps restore the contraction.
            lr *= 0.5
            best = residual
    best = min(best, residual)
    step_lr = lr if decay is None else lr * (1.0 + state.iterations / decay) ** -0.55
    proposal, adam, capped = _propose(
        state, work, phi, normalised, rates, lr, step_lr, max_step, bounds
    )
    values, grads = logp_and_grad(proposal)
    info = SVGDInfo(False, False, residual, float(bandwidth), step_lr, 0.0, capped)
    if not _finite(values, grads, state.stochastic):
        halved = None if rates is None else rates * 0.5
        return replace(state, learning_rate=lr * 0.5, best=best, rates=halved), info
    particles = state.particles
    info.accepted = True
    info.max_move = (
        float(np.max(np.abs(proposal - particles))) if proposal.size else 0.0
    )
    moved = replace(
        state,
        particles=proposal,
        values=values,
        grads=grads,
        adam=adam,
        learning_rate=lr,
        iterations=state.iterations + 1,
        fresh=True,
        best=best,
    )
    return moved, info


class _Recorder:
    """History, callbacks and progress lines of :func:`run_svgd`."""

    def __init__(self, max_iter, callback, progress, verbose, print_fn):
        self.history = {
            k: []
            for k in (
                "log_density",
                "learning_rate",
                "max_move",
                "field",
                "bandwidth",
                "time",
            )
        }
        self.hit_cap = []
        self.max_iter, self.callback, self.progress = max_iter, callback, progress
        self.verbose, self.print_fn = verbose, print_fn
        self.report_every = max(1, max_iter // 10)
        self.start = time.perf_counter()

    def record(self, n_iter, state, info):
        values = state.values
        self.hit_cap.append(info.capped)
        self.history["log_density"].append(float(np.mean(values)))
        self.history["learning_rate"].append(info.learning_rate)
        self.history["max_move"].append(info.max_move)
        self.history["field"].append(info.field)
        self.history["bandwidth"].append(info.bandwidth)
        self.history["time"].append(time.perf_counter() - self.start)
        if self.callback is not None:
            self.callback(n_iter, state.particles)
        if self.progress is not None:
            stats = {"mean log density": float(np.mean(values)), "field": info.field}
            self.progress(n_iter, self.max_iter, stats)
        if self.verbose > 0 and (n_iter % self.report_every == 0 or n_iter == 1):
            self.print_fn(
                f"[SVGD] iter {n_iter:5d}/{self.max_iter}  mean log density "
                f"{np.mean(values): .5g}  field {info.field:.2e} sd  max move "
                f"{info.max_move:.2e}  lr {info.learning_rate:.3g}  "
                f"{time.perf_counter() - self.start:.1f}s"
            )


def _on_rejection(iteration, failures, warned):
    """Warn at a run's first rejected step; give up after too many in a row."""
    if not warned:  # once per run: later ones add nothing
        warn_user(
            f"SVGD step {iteration} was rejected: the log density "
            "or its gradient was not finite at the moved particles. The "
            "learning rate is halved after every rejection.",
            SamplerWarning,
        )
    if failures >= _MAX_CONSECUTIVE_FAILURES:
        raise FloatingPointError(
            f"SVGD abandoned after {failures} consecutive steps with a "
            "non-finite log density or gradient."
        )
    return True


def _warn_collapse(particles):
    n_particles = particles.shape[0]
    spread = np.max(np.ptp(particles, axis=0)) if n_particles > 1 else np.inf
    if n_particles > 1 and particles.shape[1] > 0 and spread < 1e-8:
        warn_user(
            f"SVGD particles collapsed to one point (spread {spread:.2e}).",
            SamplerWarning,
        )


# Long because the docstring documents 19 parameters; the body is a thin loop.
def run_svgd(
    logp_and_grad,
    particles,
    *,
    max_iter,
    learning_rate,
    tol=1e-2,
    bounds=None,
    state=None,
    max_step=1.0,
    callback=None,
    verbose=0,
    print_fn=print,
    decay=None,
    stochastic=False,
    preconditioner=None,
    kernel="rbf",
    step_control="global",
    progress=None,
):
    """Move particles by SVGD until the Stein field vanishes.

    Parameters
    ----------
    logp_and_grad : callable
        ``logp_and_grad(particles) -> (values (J,), grads (J, P))``. A
        non-finite value or gradient rejects the step: particles stay, the
        learning rate halves (the first rejection of a run issues a
        ``SamplerWarning``), and after 10 consecutive rejections the run
        raises ``FloatingPointError``.
    particles : ndarray of shape (J, P)
        Starting particles (not modified).
    max_iter : int
        Budget of iterations; the run normally ends earlier, on ``tol``.
    learning_rate : float
        Without a preconditioner, Adam's learning rate (units of the
        parameters per step). With one, the fraction of the normalised
        field taken per step in whitened coordinates: a Gaussian target
        whose covariance is the preconditioner contracts towards the fixed
        point by a factor of about ``1 - learning_rate`` per iteration.
    tol : float, default=1e-2
        Converged once the root mean square of the normalised Stein field,
        in posterior standard deviations, has been at most ``tol`` for two
        consecutive iterations (see the module notes). The particles are
        then within about ``tol`` posterior sds of SVGD's fixed point.
    bounds : ndarray of shape (P, 2), optional
        Box the particles are clipped to after every step.
    state : dict, optional
        ``result.state`` of an earlier run, to continue it exactly.
    max_step : float, default=1.0
        Cap on one coordinate's move in one iteration (parameter units with
        Adam, posterior sds with a preconditioner).
    callback : callable, optional
        ``callback(iteration, particles)`` after each accepted step; it may
        raise to interrupt the run.
    verbose : int, default=0
        Print a progress line about ten times per run when positive.
    print_fn : callable, default=print
    decay : float, optional
        With noisy gradients, shrink the learning rate as
        ``learning_rate * (1 + t / decay) ** -0.55`` at iteration ``t``
        (counted across continued runs); the exponent lies in (1/2, 1], so
        the steps satisfy the Robbins-Monro conditions. ``None`` keeps it
        constant.
    stochastic : bool, default=False
        The log density and gradients are unbiased estimates (minibatches):
        the run never stops on ``tol`` (the noise keeps the field above it)
        and a falling mean log density is not taken for instability. Values
        may then be NaN, for estimators of the gradient alone (``-inf``
        still rejects a step).
    preconditioner : ndarray of shape (P, P), optional
        A square root ``S`` of a constant preconditioner ``Q = S S'``,
        typically the Cholesky factor of the inverse negative Hessian of the
        log density at a mode. SVGD then runs in the whitened coordinates
        ``S^-1 x`` (matrix-valued kernel SVGD, Wang et al. 2019), with plain
        steps along the field divided by each particle's kernel mass
        instead of Adam; on a target close to the Gaussian of covariance
        ``Q`` it converges in tens of iterations whatever the scales and
        correlations of the parameters. The coordinates built from ``S``
        (``stein_kernel.SteinCoordinates``) may stand in for it, so that a
        second run does not invert ``S`` again.
    kernel : {"rbf", "rbf+linear", "coordinatewise"}, default="rbf"
        ``"rbf"``: one RBF kernel on the whole (whitened) vector.
        ``"rbf+linear"``: that kernel plus a linear one, whose fixed points
        match a Gaussian target's covariance (fewer coordinates than
        particles; :func:`choose_kernel`). ``"coordinatewise"``: the
        diagonal matrix-valued kernel of the module notes, one RBF kernel
        per coordinate, for targets with many coordinates and few
        particles. The last two need a ``preconditioner``; without one the
        RBF kernel acts on each coordinate divided by the particles' spread.
    step_control : {"global", "per_coordinate"}, default="global"
        How a whitened run adapts its step (module notes). Needs a
        ``preconditioner``.
    progress : callable, optional
        ``progress(n_iter, max_iter, stats)`` after each accepted step,
        with ``stats`` the mean log density and the field (in sds).

    Returns
    -------
    SVGDResult

    References
    ----------
    Q. Liu and D. Wang, "Stein Variational Gradient Descent: A General
    Purpose Bayesian Inference Algorithm", NeurIPS 2016.

    D. Wang, Z. Tang, C. Bajaj and Q. Liu, "Stein Variational Gradient
    Descent with Matrix-Valued Kernels", NeurIPS 2019.

    J. Zhuo, C. Liu, J. Shi, J. Zhu, N. Chen and B. Zhang, "Message Passing
    Stein Variational Gradient Descent", ICML 2018.

    J. Ba, M. A. Erdogdu, M. Ghassemi, S. Sun, T. Suzuki, D. Wu and T.
    Zhang, "Understanding the Variance Collapse of SVGD in High Dimensions",
    ICLR 2022.

    M. Riedmiller and H. Braun, "A Direct Adaptive Method for Faster
    Backpropagation Learning: the RPROP Algorithm", ICNN 1993.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_svgd
    >>> def logp(x):  # standard normal in 1-D
    ...     return -0.5 * np.sum(x**2, axis=1), -x
    >>> x0 = np.linspace(-3, 3, 20)[:, None] + 2.0
    >>> res = run_svgd(logp, x0, max_iter=500, learning_rate=0.1)
    >>> bool(abs(res.particles.mean()) < 0.1)
    True
    >>> res = run_svgd(logp, x0, max_iter=500, learning_rate=0.5,
    ...                preconditioner=np.eye(1))
    >>> res.converged, bool(abs(res.particles.mean()) < 0.1)
    (True, True)
    """
    if decay is not None and not decay > 0:
        raise ValueError(f"decay must be a positive number of iterations; got {decay}.")
    state = svgd_init(
        logp_and_grad,
        particles,
        learning_rate=learning_rate,
        resume=state,
        preconditioner=preconditioner,
        kernel=kernel,
        step_control=step_control,
        stochastic=stochastic,
    )
    recorder = _Recorder(max_iter, callback, progress, verbose, print_fn)
    n_iter, failures, warned, converged = 0, 0, False, False
    while n_iter < max_iter:
        state, info = svgd_step(
            state,
            logp_and_grad,
            tol=tol,
            bounds=bounds,
            max_step=max_step,
            decay=decay,
        )
        if info.converged:
            converged = True
            break
        if not info.accepted:
            failures += 1
            warned = _on_rejection(state.iterations + 1, failures, warned)
            continue
        failures = 0
        n_iter += 1
        recorder.record(n_iter, state, info)
    shape = state.particles.shape
    _check_stability(recorder.history, recorder.hit_cap, stochastic, shape, converged)
    _warn_collapse(state.particles)
    return SVGDResult(
        state.particles,
        state.values,
        state.grads,
        n_iter,
        converged,
        recorder.history,
        state.checkpoint(),
    )


def _check_options(kernel, step_control, metric):
    """Validate ``kernel`` and ``step_control``; whether steps are per coordinate."""
    if kernel not in ("rbf", "rbf+linear", "coordinatewise"):
        raise ValueError(
            f"kernel must be 'rbf', 'rbf+linear' or 'coordinatewise'; got {kernel!r}."
        )
    if step_control not in ("global", "per_coordinate"):
        raise ValueError(
            f"step_control must be 'global' or 'per_coordinate'; got {step_control!r}."
        )
    if not metric.whitened and (kernel != "rbf" or step_control != "global"):
        raise ValueError(
            "kernel='rbf+linear' or 'coordinatewise' and "
            "step_control='per_coordinate' need a preconditioner: they act on "
            "whitened coordinates."
        )
    return step_control == "per_coordinate"


def _check_stability(history, hit_cap, stochastic, shape, converged=False):
    """SamplerWarning when steps kept hitting the cap or the density fell.

    Both count only in a run that did not meet its stopping rule (a small
    field twice in a row): a run that met it stands at a fixed point of
    the update, which the step does not move. Capped steps there were its
    approach (modechoice, seed 7: 22 capped iterations, the rule met at the
    24th); a fall, a fixed point below the starts (a near-separable
    four-class problem: 40 nats over 3,312 coordinates a particle in 11
    shrinking steps, test log loss 0.04). A fall counts when it exceeds one
    nat and ``_FALL_SDS`` standard deviations of the mean log density of
    ``J`` exact draws from a ``P``-dimensional near-Gaussian target,
    ``sqrt(P / (2 J))`` (one draw's is ``-chi2_P / 2`` plus a constant).
    """
    if len(hit_cap) < 10 or converged:
        return
    capped = np.mean(hit_cap[-10:]) > 0.5
    n_particles, n_dims = shape
    allowed = max(1.0, _FALL_SDS * np.sqrt(n_dims / (2.0 * max(n_particles, 1))))
    fell = (
        not stochastic
        and history["log_density"][-1] < history["log_density"][0] - allowed
    )
    if capped or fell:
        warn_user(
            "SVGD looks unstable: "
            + ("steps kept hitting the cap of max_step; " if capped else "")
            + ("the mean log density fell during the run; " if fell else "")
            + "the learning rate is probably too large: lower learning_rate.",
            SamplerWarning,
        )
