"""Stein variational gradient descent (Liu and Wang, 2016) over flat vectors.

The engine knows nothing about Gaussian processes: it moves a set of
particles with the kernelised Stein direction of any differentiable log
density given as ``logp_and_grad(particles) -> (values, grads)``.
"""

import time

import numpy as np

from .._warnings import warn_user
from ..exceptions import SamplerWarning
from .adam import adam_init, adam_update

__all__ = ["svgd_direction", "median_bandwidth", "SVGDResult", "run_svgd"]

# Consecutive rejected steps (non-finite target) before the run is abandoned.
_MAX_CONSECUTIVE_FAILURES = 10
# Iterations with every move below tol before the run counts as converged.
_PATIENCE = 3
_BANDWIDTH_FLOOR = 1e-8


def median_bandwidth(sq_dists, n_particles):
    """Median-rule RBF bandwidth ``h = med^2 / log(J + 1)``, with a floor.

    Parameters
    ----------
    sq_dists : ndarray of shape (J, J)
        Squared distances between particles.
    n_particles : int

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.svgd import median_bandwidth
    >>> d2 = np.array([[0.0, 4.0], [4.0, 0.0]])
    >>> round(float(median_bandwidth(d2, 2)), 4)  # median of [0, 4, 4, 0] is 2
    1.8205
    """
    if n_particles < 2:
        return 1.0
    med = float(np.median(sq_dists))
    # Coincident particles give med = 0: the floor keeps the repulsive term
    # finite and lets it push them apart.
    return max(med / np.log(n_particles + 1.0), _BANDWIDTH_FLOOR)


def svgd_direction(particles, grads, bandwidth=None):
    """The SVGD update field at every particle.

    ``phi(x_i) = 1/J sum_j [k(x_j, x_i) grad log p(x_j) + grad_{x_j} k(x_j, x_i)]``
    with ``k(x, y) = exp(-|x - y|^2 / h)``.

    Parameters
    ----------
    particles : ndarray of shape (J, P)
    grads : ndarray of shape (J, P)
        Gradients of the log density at the particles.
    bandwidth : float, optional
        ``h``; the median rule when omitted.

    Returns
    -------
    phi : ndarray of shape (J, P)
    bandwidth : float

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import svgd_direction
    >>> phi, h = svgd_direction(np.array([[0.0]]), np.array([[2.0]]))
    >>> phi  # one particle: plain gradient ascent
    array([[2.]])
    """
    n_particles = particles.shape[0]
    diff = particles[:, None, :] - particles[None, :, :]  # x_j - x_i at [j, i]
    sq_dists = np.einsum("jip,jip->ji", diff, diff)
    if bandwidth is None:
        bandwidth = median_bandwidth(sq_dists, n_particles)
    k = np.exp(-sq_dists / bandwidth)
    drive = k.T @ grads
    # grad_{x_j} k(x_j, x_i) = -2 (x_j - x_i) / h k_ji
    repulse = -2.0 / bandwidth * np.einsum("ji,jip->ip", k, diff)
    return (drive + repulse) / n_particles, bandwidth


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
    history : dict of lists
        ``log_density`` (mean over particles), ``learning_rate``,
        ``max_move``, ``bandwidth``, ``time`` per iteration.
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


def run_svgd(
    logp_and_grad,
    particles,
    *,
    max_iter,
    learning_rate,
    tol=1e-4,
    bounds=None,
    state=None,
    max_step=1.0,
    callback=None,
    verbose=0,
    print_fn=print,
    decay=None,
    stochastic=False,
):
    """Move particles by SVGD with Adam steps until they stop moving.

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
    learning_rate : float
    tol : float, default=1e-4
        Converged once no coordinate of any particle moved more than ``tol``
        for 3 consecutive iterations.
    bounds : ndarray of shape (P, 2), optional
        Box the particles are clipped to after every step.
    state : dict, optional
        ``result.state`` of an earlier run, to continue it exactly.
    max_step : float, default=1.0
        Cap on one coordinate's move in one iteration.
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
        the run never stops on ``tol`` (noisy moves never fall below it) and
        a falling mean log density is not taken for instability. Values may
        then be NaN, for estimators of the gradient alone (``-inf`` still
        rejects a step).

    Returns
    -------
    SVGDResult

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
    """
    particles = np.array(particles, dtype=np.float64, copy=True)
    n_particles = particles.shape[0]
    if state is None:
        adam = adam_init(particles)
        lr = float(learning_rate)
        done = 0
    else:
        adam = state["adam"].copy()
        lr = float(state["learning_rate"])
        done = int(state.get("iterations", 0))
    if decay is not None and not decay > 0:
        raise ValueError(f"decay must be a positive number of iterations; got {decay}.")
    history = {
        k: [] for k in ("log_density", "learning_rate", "max_move", "bandwidth", "time")
    }
    values, grads = logp_and_grad(particles)
    if not _finite(values, grads, stochastic):
        raise FloatingPointError(
            "The log density or its gradient is not finite at the initial particles."
        )
    quiet_iters = 0
    failures = 0
    rejected = False
    converged = False
    n_iter = 0
    start = time.perf_counter()
    report_every = max(1, max_iter // 10)
    while n_iter < max_iter:
        phi, bandwidth = svgd_direction(particles, grads)
        saved_adam = adam.copy()
        step_lr = lr if decay is None else lr * (1.0 + (done + n_iter) / decay) ** -0.55
        step = adam_update(adam, phi, step_lr, max_step=max_step)
        proposal = particles + step
        if bounds is not None:
            np.clip(proposal, bounds[:, 0], bounds[:, 1], out=proposal)
        new_values, new_grads = logp_and_grad(proposal)
        if not _finite(new_values, new_grads, stochastic):
            failures += 1
            adam = saved_adam
            lr *= 0.5
            if not rejected:  # once per run: later ones add nothing
                warn_user(
                    f"SVGD step {done + n_iter + 1} was rejected: the log density "
                    "or its gradient was not finite at the moved particles. The "
                    "learning rate is halved after every rejection.",
                    SamplerWarning,
                )
            rejected = True
            if failures >= _MAX_CONSECUTIVE_FAILURES:
                raise FloatingPointError(
                    f"SVGD abandoned after {failures} consecutive steps with a "
                    "non-finite log density or gradient."
                )
            continue
        failures = 0
        move = float(np.max(np.abs(proposal - particles))) if proposal.size else 0.0
        particles, values, grads = proposal, new_values, new_grads
        n_iter += 1
        history["log_density"].append(float(np.mean(values)))
        history["learning_rate"].append(step_lr)
        history["max_move"].append(move)
        history["bandwidth"].append(float(bandwidth))
        history["time"].append(time.perf_counter() - start)
        if callback is not None:
            callback(n_iter, particles)
        if verbose > 0 and (n_iter % report_every == 0 or n_iter == 1):
            print_fn(
                f"[SVGD] iter {n_iter:5d}/{max_iter}  mean log density "
                f"{np.mean(values): .5g}  max move {move:.2e}  "
                f"lr {step_lr:.3g}  {time.perf_counter() - start:.1f}s"
            )
        quiet_iters = quiet_iters + 1 if move <= tol and not stochastic else 0
        if quiet_iters >= _PATIENCE:
            converged = True
            break
    if n_iter >= 10:
        recent = np.asarray(history["max_move"][-10:])
        capped = np.mean(recent >= max_step * (1.0 - 1e-9)) > 0.5
        fell = (
            not stochastic
            and history["log_density"][-1] < history["log_density"][0] - 1.0
        )
        if capped or fell:
            warn_user(
                "SVGD looks unstable: "
                + ("steps kept hitting the cap of max_step; " if capped else "")
                + ("the mean log density fell during the run; " if fell else "")
                + "the learning rate is probably too large: lower learning_rate.",
                SamplerWarning,
            )
    spread = np.max(np.ptp(particles, axis=0)) if n_particles > 1 else np.inf
    if n_particles > 1 and particles.shape[1] > 0 and spread < 1e-8:
        warn_user(
            f"SVGD particles collapsed to one point (spread {spread:.2e}).",
            SamplerWarning,
        )
    return SVGDResult(
        particles,
        values,
        grads,
        n_iter,
        converged,
        history,
        {"adam": adam, "learning_rate": lr, "iterations": done + n_iter},
    )
