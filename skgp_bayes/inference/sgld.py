"""Preconditioned stochastic gradient Langevin dynamics over flat vectors.

``x_{t+1} = x_t + eps_t / 2 M g_t + N(0, eps_t M)`` (Welling and Teh, 2011;
seed 002, eq. 5), where ``g_t`` is an unbiased estimate of the gradient of the
log density and ``eps_t = a (b + t)^-gamma``. No accept/reject step is taken,
so the chain carries a bias of order ``eps``; it is kept small by freezing the
step size once the injected noise dominates the gradient noise: every
``freeze_window`` iterations the ratio ``eps_t / 4 lambda_max(M^1/2 V M^1/2)``
(seed 002, eq. 7), with ``V`` the sample covariance of the window's
gradients, is compared with ``freeze_threshold``.

The engine knows nothing about Gaussian processes: it calls
``logp_and_grad(x) -> (value, gradient)`` and uses only the gradient.
"""

import time

import numpy as np

from .._warnings import warn_user
from ..exceptions import SamplerWarning

__all__ = ["SGLDResult", "SGLDState", "sgld_schedule", "run_sgld"]


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
        self, x, t, scale, failures, n_rejected, window, frozen_at, frozen_eps, ratios
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
        Updates rejected because the gradient or the new state was not finite.
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

    def __init__(self, samples, step_sizes, state):
        self.samples = samples
        self.step_sizes = step_sizes
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
):
    """Run one SGLD chain.

    Parameters
    ----------
    logp_and_grad : callable
        ``logp_and_grad(x) -> (value, grad)``; ``grad`` is an unbiased
        estimate of the gradient of the log density, ``value`` is ignored
        (it may be NaN).
    x0 : ndarray of shape (n_params,)
        Starting point; not used when ``resume`` is given.
    n_iter : int
        Iterations of this run.
    a, b, gamma : float
        Step size ``eps_t = a (b + t)^-gamma``; see :func:`sgld_schedule`.
    preconditioner : ndarray of shape (n_params,) or (n_params, n_params), optional
        ``M``: a diagonal or a symmetric positive definite matrix, ideally
        close to the posterior covariance. Identity by default.
    freeze_threshold : float, optional
        Freeze the step size once the ratio of seed 002's eq. 7 falls below
        it. ``None`` never freezes.
    freeze_window : int, default=100
        Iterations per estimate of the gradient covariance ``V``.
    bounds : ndarray of shape (n_params, 2), optional
        A box; proposals outside are reflected back in.
    rng : numpy.random.Generator
        Source of the injected noise.
    max_failures : int, default=5
        Consecutive rejected updates (non-finite gradient or state) after
        which the run stops with ``FloatingPointError``. Every rejection
        halves the step size for the rest of the run.
    verbose : int, default=0
        Print about ten progress lines when positive.
    print_fn : callable, default=print
    resume : SGLDState, optional
        State of an earlier run (its ``result.state``) to continue from:
        position, schedule counter, step halvings, freezing window and frozen
        step. With the same ``rng`` continuing, the two runs together equal
        one run of their summed length.

    Returns
    -------
    SGLDResult

    Raises
    ------
    FloatingPointError
        After ``max_failures`` consecutive rejected updates.

    Warns
    -----
    SamplerWarning
        At the first rejected update.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference import run_sgld
    >>> res = run_sgld(lambda x: (0.0, -x), np.zeros(1), n_iter=4000, a=0.05,
    ...                gamma=0.0, rng=np.random.default_rng(0))
    >>> bool(abs(res.samples[500:].std() - 1.0) < 0.2)
    True
    """
    if resume is None:
        resume = SGLDState(
            np.array(x0, dtype=np.float64), 0, 1.0, 0, 0, [], None, None, []
        )
    x = np.array(resume.x, dtype=np.float64)
    t0 = resume.t
    scale, failures, n_rejected = resume.scale, resume.failures, resume.n_rejected
    window, ratios = list(resume.window), list(resume.freeze_ratios)
    frozen_at, frozen_eps = resume.frozen_at, resume.frozen_eps
    n_params = x.shape[0]
    apply_m, root = _preconditioner(preconditioner, n_params)
    bounds = None if bounds is None else np.asarray(bounds, dtype=np.float64)
    samples = np.empty((n_iter, n_params))
    steps = np.empty(n_iter)
    report = max(1, n_iter // 10)
    t_start = time.perf_counter()
    for t in range(t0, t0 + n_iter):
        eps = frozen_eps if frozen_eps is not None else a * (b + t) ** (-gamma)
        eps *= scale
        _, grad = logp_and_grad(x)
        grad = np.asarray(grad, dtype=np.float64)
        noise = rng.standard_normal(n_params)
        if root is not None:
            noise = root @ noise if root.ndim == 2 else root * noise
        proposal = x + 0.5 * eps * apply_m(grad) + np.sqrt(eps) * noise
        if bounds is not None and np.all(np.isfinite(proposal)):
            proposal = _reflect(proposal, bounds)
        if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(proposal))):
            failures += 1
            n_rejected += 1
            scale *= 0.5
            if n_rejected == 1:
                warn_user(
                    f"SGLD update {t} was rejected: the gradient or the new state "
                    "was not finite. The step size is halved after every "
                    "rejection.",
                    SamplerWarning,
                )
            if failures >= max_failures:
                raise FloatingPointError(
                    f"SGLD stopped after {failures} consecutive non-finite "
                    f"gradients or states (iteration {t}); the last state was "
                    f"{x}. Lower the step size or check the target."
                )
        else:
            failures = 0
            x = proposal
            if freeze_threshold is not None and frozen_eps is None:
                window.append(grad)
                if len(window) == freeze_window:
                    ratio = _noise_ratio(np.array(window), eps, root)
                    ratios.append((t, ratio))
                    window = []
                    if ratio < freeze_threshold:
                        frozen_at, frozen_eps = t, eps / scale
        samples[t - t0] = x
        steps[t - t0] = eps
        if verbose and (t + 1 - t0) % report == 0:
            print_fn(
                f"iteration {t + 1}/{t0 + n_iter}: step {eps:.3g}"
                f"{' (frozen)' if frozen_eps is not None else ''}, state "
                f"{np.array2string(x, precision=3)}, "
                f"{time.perf_counter() - t_start:.1f} s"
            )
    state = SGLDState(
        x,
        t0 + n_iter,
        scale,
        failures,
        n_rejected,
        window,
        frozen_at,
        frozen_eps,
        ratios,
    )
    return SGLDResult(samples, steps, state)


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
