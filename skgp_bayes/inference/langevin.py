"""Langevin transitions over flat vectors: the state and one step.

:func:`sgld_step` takes one unadjusted Langevin update with a gradient that
may be a noisy unbiased estimate (Welling and Teh, 2011); :func:`mala_step`
takes one Metropolis-adjusted transition (Roberts and Tweedie, 1996), for
exact densities. Both take the step size and the preconditioner from the
caller: the schedules, freezing, step-size and metric adaptation of
:func:`~skgp_bayes.inference.run_sgld` live in its loop, outside the step.

The engine knows nothing about Gaussian processes: it calls
``logp_and_grad(x) -> (value, gradient)``.
"""

import copy
import math

import numpy as np

# Products summed in the compiled blocks' order, not BLAS's: the same draws
# compiled or not, under every BLAS kernel (see _ordered_numba).
from ._ordered_numba import ordered_dot, ordered_matvec
from .laplace import reflect_into_box

__all__ = [
    "LangevinMetric",
    "SGLDInfo",
    "SGLDState",
    "mala_step",
    "sgld_init",
    "sgld_step",
]


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
    drift, drift_of, drift_root : ndarray or None
        The last accepted MALA proposal's reverse drift, with the gradient
        and the metric root it was computed from: :func:`mala_step` reuses
        it as its forward drift while ``grad`` and the root are those
        objects. None until a MALA proposal is accepted.

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
        self.drift = self.drift_of = self.drift_root = None

    def __copy__(self):
        # every transition that moves a chain copies its state (moved_state):
        # copy's generic reduce protocol took 6 of a small MALA step's 35 us
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new


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


def moved_state(state, x, logp=None, grad=None):
    """A copy of ``state`` at ``x``; the bookkeeping fields are shared.

    Every transition that moves a chain (a Langevin step, a mode jump)
    returns its new state through this.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.langevin import moved_state, sgld_init
    >>> state = sgld_init(np.zeros(2))
    >>> moved = moved_state(state, np.ones(2), -1.0)
    >>> moved.x.tolist(), moved.logp, state.x.tolist()
    ([1.0, 1.0], -1.0, [0.0, 0.0])
    """
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
        proposal = reflect_into_box(proposal, bounds)
    if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(proposal))):
        return state, SGLDInfo(False, 0.0, True, grad)
    return moved_state(state, proposal, state.logp, state.grad), SGLDInfo(
        True, 1.0, False, grad
    )


def mala_step(state, logp_and_grad, rng, *, step_size, metric, bounds=None):
    """One Metropolis-adjusted Langevin transition.

    With ``M = R R'`` and the proposal ``x' = x + eps/2 R a + sqrt(eps) R z``,
    ``a = t(R' g)`` the whitened gradient with its norm capped (MALTA,
    Roberts and Tweedie 1996; the cap only acts far out in a tail), the
    forward proposal density needs only ``z`` and the reverse one only
    ``a + a'``, since ``R^-1 (x - x' - eps/2 R a') = -(sqrt(eps) z +
    eps/2 (a + a'))``: no triangular solve per transition. A proposal
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
    d = state.x.shape[0]
    z = rng.standard_normal(d)
    # getattr: states pickled before the drift was kept lack the field
    drift = getattr(state, "drift", None)  # the last accepted reverse drift
    if (
        drift is None
        or state.drift_of is not state.grad
        or state.drift_root is not root
    ):
        drift = _truncated(_times_root_t(root, state.grad), d)
    proposal = state.x + _times_root(
        root, 0.5 * step_size * drift + math.sqrt(step_size) * z
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
        drift_back = _truncated(_times_root_t(root, grad), d)
        back = z + 0.5 * math.sqrt(step_size) * (drift + drift_back)
        squares = ordered_dot(z, z) - ordered_dot(back, back)
        log_ratio = logp - state.logp + 0.5 * squares
        prob = math.exp(min(0.0, log_ratio))
    info = SGLDInfo(u < prob, prob, inside and grad is None)
    if info.accepted:
        moved = moved_state(state, proposal, logp, grad)
        # kept with the gradient and root it was computed from, so that a
        # state whose gradient or metric has changed since computes it anew
        moved.drift, moved.drift_of, moved.drift_root = drift_back, grad, root
        return moved, info
    return state, info


def _truncated(whitened_grad, d):
    """The drift of MALTA: the whitened gradient, its norm capped.

    Roberts and Tweedie (1996) truncate MALA's drift so that a chain far in
    a light tail, where the gradient is huge, proposes a bounded move
    instead of one that overshoots and is rejected forever: plain MALA is
    then not geometrically ergodic and stays stuck. The proposal and its
    reverse use the same truncated drift, so the Metropolis test keeps the
    target exact. The cap ``10 (sqrt(d) + 1)`` is some ten times the norm
    of the whitened gradient at equilibrium (about ``sqrt(d)`` where the
    metric whitens the target), so that only a chain far out in a tail
    meets it: a cap of ``2 sqrt(d) + 3`` acted on 1-4% of the proposals of
    the default fits on star98, concrete and ccard, where the Laplace metric
    whitens only roughly, and those fits needed more iterations to meet the
    run-length rule; at this cap those fits run as without one.
    """
    norm = math.sqrt(ordered_dot(whitened_grad, whitened_grad))
    cap = 10.0 * (math.sqrt(d) + 1.0)
    if norm > cap:
        return whitened_grad * (cap / norm)
    return whitened_grad


def _finite_evaluation(logp_and_grad, x):
    value, grad = logp_and_grad(x)
    grad = np.asarray(grad, dtype=np.float64)
    value = float(value)
    if not (math.isfinite(value) and np.isfinite(grad).all()):
        return -np.inf, None
    return value, grad


def _times_root(root, z):
    if root is None:
        return z
    return ordered_matvec(root, z) if root.ndim == 2 else root * z


def _times_root_t(root, v):
    """``R' v`` for the preconditioner's root ``R`` (None: identity)."""
    if root is None:
        return v
    return ordered_matvec(root.T, v) if root.ndim == 2 else root * v
