"""The chains' density with its leapfrog trajectories in one compiled call.

:class:`TrajectoryTarget` is the :class:`~skgp_bayes.inference.affine.AffineTarget`
the chains run on, with a ``leapfrog`` method that the HMC engine uses in
place of its own loop (:func:`skgp_bayes.inference.leapfrog.leapfrog`)
where the layers under it have a compiled form
(:mod:`._trajectory_numba`): sinh maps or none, the bounds guard, a
target whose evaluation is one compiled call
(:func:`~skgp_bayes.targets.compiled_forms.compiled_form`: the logit and
softmax joint targets, the collapsed bound, the exact RBF target; beyond
:data:`EXACT_MAX_ROWS` rows the exact target's trajectory is cut into
calls of fewer steps) and a compiled prior (the default Gamma and
log-normal priors). Anything else (a user's prior object, log-distance
coordinates of a hyperparameter piled on a bound, the scratch buffer of a
large ``m``) keeps the interpreted loop, as does a
trajectory that reaches the logit rule's small-variance hand-over or an
exact kernel matrix that needs jitter.
"""

import numpy as np

from .._chain_density_numba import (
    GENERAL,
    KIND_COLLAPSED,
    KIND_EXACT,
    KIND_LOGIT,
    KIND_SOFTMAX,
    NO_LOG_DISTANCES,
    OK,
)
from ..inference._chain_threads import quickest_seconds
from ..inference._hmc_state import HMCBlock
from ..inference.affine import AffineTarget
from ..inference.marginal_maps import MarginalMapTarget
from ..targets.compiled_forms import FORMS, compiled_form
from ._bounds import BoundCoordinates
from ._hmc_block_numba import HMC_BLOCKS
from ._trajectory_numba import TRAJECTORIES

__all__ = ["EXACT_MAX_ROWS", "TrajectoryTarget", "compiled_plan", "steps_per_call"]

# The compiled trajectory's kinds are the targets' compiled forms, in order.
_KINDS = dict(
    zip(FORMS, (KIND_LOGIT, KIND_SOFTMAX, KIND_COLLAPSED, KIND_EXACT), strict=True)
)
# The most rows of an exact target whose whole trajectory is one compiled
# call. The compiled step and the engine's loop evaluate the target by the
# same compiled function; what the compiled step saves is the interpreted
# layers around it, 12-30 us a step (one BLAS thread, d = 1 and 5, ARD,
# guard and prior: 6.2 against 18.5 us at 16 rows, 47.9 against 61.0 at 64,
# 171 against 188 at 128, 876 against 906 at 256;
# benchmarks/bench_variational_mcmc.py --sections trajectory). Beyond 256
# rows that is under 3% of a step, but the compiled call releases the
# interpreter lock, so only compiled trajectories let chains on threads run
# side by side; there one call takes at most as many steps as hold the
# work of the most steps (1,024) at 256 rows, about a second, which is how
# long a call can hold off Ctrl-C (``steps_per_call``).
EXACT_MAX_ROWS = 256
_MOST_STEPS = 1024
# A block's mixture where it makes no jumps: the arrays of
# ModeJumps.as_arrays, of the same types, never read
_NO_JUMPS = (
    np.zeros((1, 1)), np.zeros((1, 1, 1)), np.ones(1), np.zeros((1, 1)),
    np.zeros(1), np.zeros(1),
)  # fmt: skip


def _floats(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def compiled_plan(affine):
    """Arguments of the compiled trajectory for ``affine``, or None.

    The trajectory is ``_trajectory_numba.TRAJECTORIES[kind]``.

    Parameters
    ----------
    affine : AffineTarget
        Over a ``GuardedTarget``, directly or through a
        :class:`~skgp_bayes.inference.marginal_maps.MarginalMapTarget`,
        a :class:`~skgp_bayes.variational_mcmc._bounds.BoundCoordinates`
        or both, in that order.

    Returns
    -------
    tuple or None
        ``(chain, kind, n_hyper, arguments, prior)``, ``arguments`` those of
        the target's compiled form; None where a layer has no compiled form.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.inference.affine import AffineTarget
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets import SparseWhitenedTarget
    >>> from skgp_bayes.variational_mcmc._sampling import GuardedTarget
    >>> from skgp_bayes.variational_mcmc._trajectory import compiled_plan
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> target = SparseWhitenedTarget(
    ...     KernelAdapter(RBF()), X, (X[:, 0] > 0.5).astype(float), X[::4], Bernoulli())
    >>> guarded = GuardedTarget(target, np.array([-5.0]), np.array([5.0]))
    >>> affine = AffineTarget(guarded, np.zeros(6), np.eye(6))
    >>> plan = compiled_plan(affine)
    >>> plan[1:3]  # the logit kind, one hyperparameter
    (0, 1)
    """
    base, maps = affine.logp_and_grad, None
    if type(base) is MarginalMapTarget:
        base, maps = base.logp_and_grad, base.maps
    from ._sampling import GuardedTarget  # _sampling imports this module

    distances = NO_LOG_DISTANCES
    if type(base) is BoundCoordinates:
        distances = base.compiled_layer()
        base = base.guarded
    if type(base) is not GuardedTarget:
        return None
    target = base.target
    form = compiled_form(target)
    if form is None:
        return None
    name, arguments, prior = form
    if maps is None:
        mapping = (np.zeros(0),) * 4
    else:
        mapping = tuple(_floats(a) for a in (maps.mu, maps.sigma, maps.skew, maps.rate))
    chain = (
        _floats(affine.shift),
        _floats(affine.transform),
        _floats(affine.transform.T),
        *mapping,
        _floats(base.lower),
        _floats(base.upper),
        *distances,
    )
    n_hyper = getattr(target, "n_hyper", target.n_params)  # exact: all of them
    return chain, _KINDS[name], int(n_hyper), arguments, prior


def steps_per_call(plan):
    """The most leapfrog steps one compiled call of ``plan`` takes, or None.

    None (any number) except for an exact target of more than
    :data:`EXACT_MAX_ROWS` rows, whose trajectory is cut into calls of at
    most ``1024 (256 / n)^3`` steps (at least one): the work of 1,024 steps
    at 256 rows.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.variational_mcmc._trajectory import steps_per_call
    >>> from skgp_bayes._chain_density_numba import KIND_EXACT, KIND_LOGIT
    >>> def plan(kind, n):  # (chain, kind, n_hyper, arguments, prior)
    ...     return (None, kind, 3, (None, None, np.zeros((n, 2))), None)
    >>> steps_per_call(plan(KIND_EXACT, 200)), steps_per_call(plan(KIND_EXACT, 512))
    (None, 128)
    >>> steps_per_call(plan(KIND_LOGIT, 5000)) is None
    True
    """
    if plan is None or plan[1] != KIND_EXACT:
        return None
    n = plan[3][2].shape[0]  # the exact form's arguments: defaults, index, X, ...
    if n <= EXACT_MAX_ROWS:
        return None
    return max(1, int(_MOST_STEPS * (EXACT_MAX_ROWS / n) ** 3))


class TrajectoryTarget(AffineTarget):
    """An :class:`AffineTarget` that integrates its own leapfrog trajectories.

    Parameters
    ----------
    logp_and_grad : callable
        ``x -> (log density, gradient)``: a ``GuardedTarget``, directly or
        under a :class:`~skgp_bayes.inference.marginal_maps.MarginalMapTarget`.
    shift : ndarray of shape (d,)
    transform : ndarray of shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.inference.leapfrog import leapfrog
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.likelihoods import Bernoulli
    >>> from skgp_bayes.targets import SparseWhitenedTarget
    >>> from skgp_bayes.variational_mcmc._sampling import GuardedTarget
    >>> from skgp_bayes.variational_mcmc._trajectory import TrajectoryTarget
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> target = SparseWhitenedTarget(
    ...     KernelAdapter(RBF()), X, (X[:, 0] > 0.5).astype(float), X[::4], Bernoulli())
    >>> guarded = GuardedTarget(target, np.array([-5.0]), np.array([5.0]))
    >>> density = TrajectoryTarget(guarded, np.zeros(6), 0.5 * np.eye(6))
    >>> w, p = np.zeros(6), np.full(6, 0.3)
    >>> _, grad = density(w)
    >>> compiled = density.leapfrog(w, p, grad, 0.1, np.ones(6), 5)
    >>> interpreted = leapfrog(density.__call__, w, p, grad, 0.1, np.ones(6), 5)
    >>> bool(np.allclose(compiled[0], interpreted[0], rtol=1e-12))
    True
    """

    _plan = None
    _planned = False

    def __getstate__(self):
        # the plan is rebuilt where the target is used (a joblib worker)
        state = self.__dict__.copy()
        state.pop("_plan", None)
        state.pop("_planned", None)
        state.pop("_step_seconds", None)  # another machine's figure
        return state

    def compiled(self):
        """Whether trajectories run in one compiled call (which releases the GIL)."""
        if not self._planned:
            self._plan = compiled_plan(self)
            self._planned = True
        return self._plan is not None

    def seconds_per_step(self, x):
        """Seconds a compiled leapfrog step takes from ``x`` (measured once).

        The quickest of three 8-step trajectories at a tiny step; None
        where the trajectories are not compiled.
        """
        if not self.compiled():
            return None
        if getattr(self, "_step_seconds", None) is None:
            x = _floats(x)
            _, grad = self(x)
            p, unit = np.full(x.size, 0.1), np.ones(x.size)
            seconds = quickest_seconds(lambda: self.leapfrog(x, p, grad, 1e-3, unit, 8))
            self._step_seconds = seconds / 8
        return self._step_seconds

    def leapfrog(self, x, p, grad, step, inv_mass, n_steps):
        """``n_steps`` leapfrog steps in one compiled call.

        The contract of :func:`skgp_bayes.inference.leapfrog.leapfrog`:
        ``(x, p, logp, grad)`` at the end, None where the path fails, and
        ``NotImplemented`` where the interpreted loop must run instead.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.variational_mcmc._trajectory import TrajectoryTarget
        >>> density = TrajectoryTarget(lambda x: (-0.5 * x @ x, -x), np.zeros(1),
        ...                            np.eye(1))
        >>> density.leapfrog(np.zeros(1), np.ones(1), np.zeros(1), 0.1, np.ones(1), 3)
        NotImplemented
        """
        if not self.compiled():
            return NotImplemented
        d = self.shift.size
        chain, kind, n_hyper, arguments, prior = self._plan
        left = int(n_steps)
        per_call = steps_per_call(self._plan) or left
        x, p, grad, inv_mass = (_floats(a) for a in (x, p, grad, inv_mass))
        while True:
            # A call ends with a half kick and the next starts with one: the
            # same trajectory as in one call, to rounding.
            ends = np.empty(d), np.empty(d), np.empty(d)
            steps = min(left, per_call)
            status, value = TRAJECTORIES[kind](
                x, p, grad, float(step), inv_mass, steps, chain, n_hyper,
                arguments, prior, *ends,
            )  # fmt: skip
            if status == GENERAL:
                return NotImplemented
            if status != OK:
                return None
            left -= steps
            if not left:
                return ends[0], ends[1], value, ends[2]
            x, p, grad = ends

    def hmc_block(
        self, x, logp, grad, rng, step, inv_mass, path, max_energy_error, retry,
        n_iter, adaptation, jumps=None,
    ):  # fmt: skip
        """``n_iter`` static HMC transitions in one compiled call.

        The contract of :class:`~skgp_bayes.inference.HMCBlock`: the
        transitions of :func:`~skgp_bayes.inference.hmc_step`, the same
        draws from ``rng``, adapting as warm-up does where ``adaptation``
        asks, and with ``jumps``, ``(ModeJumps, first)``, the mode jumps of
        ``run_hmc`` from its iteration ``first`` on; ``NotImplemented``
        where the trajectories are not compiled in one call or a transition
        or a jump needs the interpreted target.

        Examples
        --------
        >>> import numpy as np
        >>> from skgp_bayes.variational_mcmc._trajectory import TrajectoryTarget
        >>> density = TrajectoryTarget(lambda x: (-0.5 * x @ x, -x), np.zeros(1),
        ...                            np.eye(1))
        >>> none = (np.zeros(0), (np.zeros(1, np.int64), np.zeros((2, 1)),
        ...                       np.zeros((2, 1))), False)
        >>> density.hmc_block(np.zeros(1), 0.0, np.zeros(1),
        ...                   np.random.default_rng(0), 0.1, np.ones(1), (5, 0.0),
        ...                   1000.0, 0, 10, none)
        NotImplemented
        """
        if not self.compiled() or steps_per_call(self._plan) is not None:
            return NotImplemented
        chain, kind, n_hyper, arguments, prior = self._plan
        x, grad = _floats(x).copy(), _floats(grad).copy()
        d = x.size
        dual, (count, mean, m2), accumulate = adaptation
        out = (
            np.empty((n_iter, d)),
            np.empty(n_iter),
            np.empty(n_iter),
            np.zeros(n_iter, dtype=np.bool_),
            np.zeros(n_iter, dtype=np.bool_),
            np.zeros(n_iter, dtype=np.bool_),
            np.empty(n_iter, dtype=np.int64),
            np.empty(n_iter),
            np.empty(n_iter),
        )
        jumping, mixture = (0, 0), _NO_JUMPS
        if jumps is not None:
            jumping = (jumps[0].every, int(jumps[1]))
            mixture = tuple(_floats(a) for a in jumps[0].as_arrays())
        counts = np.zeros(2, dtype=np.int64)
        status, _, logp = HMC_BLOCKS[kind](
            rng, x, grad, float(logp), float(step), _floats(inv_mass),
            (int(path[0]), float(path[1])), int(retry), float(max_energy_error),
            (_floats(dual), count, mean, m2, bool(accumulate)), chain, n_hyper,
            arguments, prior, out, jumping, mixture, counts,
        )  # fmt: skip
        if status != OK:
            return NotImplemented
        return HMCBlock(x, logp, grad, *out, int(counts[0]), int(counts[1]))
