"""Evaluate a target's log density and gradient at every SVGD particle.

The Stein estimators hand :func:`~skgp_bayes.inference.run_svgd` an
evaluator over a particle array. This one adds what large data needs: a
fresh minibatch per call, shared by all particles (a random subset, so each
estimate is unbiased), and particles spread over threads.
"""

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from threadpoolctl import threadpool_limits

from .._warnings import bound_to_fit
from ..exceptions import NotPSDError

__all__ = []

# Fewer particles per thread than this and thread hand-off costs more than
# it saves.
_MIN_PARTICLES_PER_JOB = 2


def _numba_threads_are_safe():
    """Whether Numba's parallel kernels may be entered from several threads.

    Numba's ``workqueue`` layer aborts the process when two threads launch
    parallel kernels at once; ``omp`` and ``tbb`` are thread-safe.
    """
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet: nothing is chosen
        return False
    return layer in ("omp", "tbb")


def _evaluate_block(target, block, batch, in_worker=False):
    if in_worker:
        import numba

        # Each worker thread runs its kernels on one core: the threads are
        # the parallelism, and nested thread pools would only oversubscribe.
        numba.set_num_threads(1)
    values = np.empty(block.shape[0])
    grads = np.empty_like(block)
    error = None
    for j, params in enumerate(block):
        try:
            if batch is None:
                values[j], grads[j] = target.logp_and_grad(params)
            else:
                values[j], grads[j] = target.logp_and_grad(params, batch=batch)
        except NotPSDError as err:
            values[j], grads[j] = -np.inf, np.nan
            error = err
    return values, grads, error


class ParticleEvaluator:
    """``target.logp_and_grad`` at every particle, for the SVGD engine.

    A particle whose kernel matrix is not positive definite gets a log
    density of -inf, which makes the engine reject the step; the error is
    kept so that a set where every particle fails can be reported with the
    hyperparameters that caused it.

    Parameters
    ----------
    target : object
        Has ``logp_and_grad(params)``; with ``batch_size``, also
        ``logp_and_grad(params, batch=indices)`` and ``n``.
    batch_size : int or None, default=None
        Points per minibatch; ``None`` evaluates on all the data. Batches
        walk through random permutations of the data (without replacement
        within a pass), so each is a uniform random subset.
    rng : numpy.random.Generator, optional
        Source of the permutations (required with ``batch_size``).
    n_jobs : int or None, default=None
        Threads over particles; ``None`` is one. Threads are used only when
        Numba's threading layer is thread-safe (``omp`` or ``tbb``) and there
        are at least two particles per thread.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.particles import ParticleEvaluator
    >>> class Quadratic:
    ...     n = 10
    ...     def logp_and_grad(self, params, batch=None):
    ...         return -0.5 * params @ params, -params
    >>> evaluator = ParticleEvaluator(
    ...     Quadratic(), batch_size=4, rng=np.random.default_rng(0))
    >>> values, grads = evaluator(np.ones((3, 2)))
    >>> values
    array([-1., -1., -1.])
    """

    def __init__(self, target, *, batch_size=None, rng=None, n_jobs=None):
        if batch_size is not None and rng is None:
            raise ValueError("batch_size needs an rng for the permutations.")
        self.target = target
        self.batch_size = batch_size
        self.rng = rng
        self.n_jobs = n_jobs
        self.last_error = None
        self._order = None
        self._epoch_state = None
        self._position = 0

    # ------------------------------------------------------------ batches
    def next_batch(self):
        """Indices of the next minibatch (sorted), or None for all data."""
        if self.batch_size is None:
            return None
        n = self.target.n
        size = min(self.batch_size, n)
        if self._order is None or self._position + size > n:
            # The generator's state before the draw rebuilds the permutation,
            # so a saved state need not carry n indices.
            self._epoch_state = self.rng.bit_generator.state
            self._order = self.rng.permutation(n)
            self._position = 0
        batch = self._order[self._position : self._position + size]
        self._position += size
        # Sorted rows read the data in memory order.
        return np.sort(batch)

    def get_state(self):
        """Where the batch sequence stands, to continue it in a later fit."""
        if self.rng is None:
            return {"rng": None, "epoch": None, "position": 0, "n": None}
        return {
            "rng": self.rng.bit_generator.state,
            "epoch": self._epoch_state if self._order is not None else None,
            "position": self._position,
            "n": None if self._order is None else self._order.shape[0],
        }

    def set_state(self, state):
        """Continue the batch sequence saved by :meth:`get_state`.

        The pass under way is rebuilt from the generator's state at its
        start; a pass over data of another size (the next chunk of a stream)
        is dropped, and the next batch starts a fresh one.
        """
        if self.rng is None or state["rng"] is None:
            return
        self._order, self._position = None, 0
        if state["epoch"] is not None and state["n"] == self.target.n:
            self.rng.bit_generator.state = state["epoch"]
            self._epoch_state = state["epoch"]
            self._order = self.rng.permutation(self.target.n)
            self._position = state["position"]
        self.rng.bit_generator.state = state["rng"]

    # --------------------------------------------------------- evaluation
    def replay_first(self, particles, values, grads):
        """Answer the next call at ``particles`` with saved results.

        A continued fit on the same data starts from the last evaluation of
        the previous one instead of drawing a batch for it, so that ``a``
        then ``b`` iterations equal ``a + b`` at once.
        """
        self._replay = (np.array(particles), values, grads)

    def __call__(self, particles):
        replay = getattr(self, "_replay", None)
        if replay is not None:
            self._replay = None
            if np.array_equal(replay[0], particles):
                return replay[1].copy(), replay[2].copy()
        return self.evaluate(particles, self.next_batch())

    def evaluate(self, particles, batch=None):
        """Values ``(J,)`` and gradients ``(J, P)`` on one batch."""
        n_threads = self._threads(particles.shape[0])
        if n_threads <= 1:
            values, grads, error = _evaluate_block(self.target, particles, batch)
        else:
            blocks = np.array_split(particles, n_threads)
            with threadpool_limits(limits=1, user_api="blas"):
                parts = Parallel(n_jobs=n_threads, backend="threading")(
                    delayed(bound_to_fit(_evaluate_block))(
                        self.target, block, batch, True
                    )
                    for block in blocks
                )
            values = np.concatenate([p[0] for p in parts])
            grads = np.concatenate([p[1] for p in parts])
            errors = [p[2] for p in parts if p[2] is not None]
            error = errors[-1] if errors else None
        if error is not None:
            self.last_error = error
        return values, grads

    def _threads(self, n_particles):
        if self.n_jobs is None or self.n_jobs == 1:
            return 1
        wanted = min(
            effective_n_jobs(self.n_jobs), n_particles // _MIN_PARTICLES_PER_JOB
        )
        if wanted <= 1 or not _numba_threads_are_safe():
            return 1
        return wanted

    def check_initial(self, particles):
        """Raise the kernel's error if no starting particle can be evaluated."""
        # The check looks at the batch the first step will use, without
        # consuming it, so that a check never shifts the batch sequence.
        saved = self.get_state()
        values, _ = self.evaluate(particles, self.next_batch())
        self.set_state(saved)
        if particles.shape[0] and not np.any(np.isfinite(values)):
            if self.last_error is not None:
                raise self.last_error
            raise FloatingPointError(
                "The log posterior is not finite at any initial particle."
            )
