"""Evaluate a target's log density and gradient at every SVGD particle.

The Stein estimators hand :func:`~skgp_bayes.inference.run_svgd` an
evaluator over a particle array. This one adds what large data needs: a
fresh minibatch per call, shared by all particles (a random subset, so each
estimate is unbiased), and particles spread over threads, or over the
workers of a joblib backend the user chose (a Dask cluster) where a
particle's work is large enough to pay for the round trip.
"""

import time

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from joblib.parallel import BACKENDS, DEFAULT_BACKEND, get_active_backend

from .._subnormals import subnormals_flushed
from .._thread_pool import ThreadPool
from .._threads import one_blas_thread
from .._warnings import bound_to_fit
from ..exceptions import NotPSDError
from ._chain_threads import (
    default_chain_threads,
    numba_threads_are_safe,
    quickest_seconds,
)

__all__ = []

# Fewer particles per thread than this and thread hand-off costs more than
# it saves.
_MIN_PARTICLES_PER_JOB = 2
# With ``auto_threads``, particles go on threads where the quickest one's
# evaluation takes at least this long. A round on the evaluator's own pool
# (two blocks handed over and collected) costs 20-40 us on a 2-core
# machine; see the note in ParticleEvaluator for what was measured.
THREADED_PARTICLE_SECONDS = 100e-6
# Particles timed on the calling thread before ``auto_threads`` decides.
_TIMED_PARTICLES = 2

# A block sent to another process must compute for at least this many
# times the backend's measured round trip (40-50 ms for joblib's Dask
# backend on a local cluster), so that the round trip adds at most 20%.
_REMOTE_WORK_PER_ROUND_TRIP = 5.0
_TIMING_ROUNDS = 3


def _evaluate_block(target, block, batch, in_worker=False):
    if in_worker:
        from .._numba_threads import set_numba_threads

        # Each worker thread runs its kernels on one core: the threads are
        # the parallelism, and nested thread pools would only oversubscribe.
        set_numba_threads(1)
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


def _evaluate_timed(target, block, batch):
    """``_evaluate_block`` here, with the quickest particle's seconds."""
    parts, quickest = [], np.inf
    for j in range(block.shape[0]):
        start = time.perf_counter()
        parts.append(_evaluate_block(target, block[j : j + 1], batch))
        quickest = min(quickest, time.perf_counter() - start)
    return (*_merge(parts), quickest)


def requested_threads(n_jobs, n_tasks):
    """Threads for ``n_tasks`` independent evaluations as an explicit ``n_jobs`` asks.

    At most one per task (``-1``: every core), and one where Numba's
    threading layer cannot be entered from several threads.

    Examples
    --------
    >>> from skgp_bayes.inference.particles import requested_threads
    >>> requested_threads(1, 10), requested_threads(4, 1)
    (1, 1)
    """
    wanted = min(effective_n_jobs(n_jobs), n_tasks)
    if wanted <= 1 or not numba_threads_are_safe():
        return 1
    return wanted


def automatic_threads(target, n_tasks, seconds, n_jobs=None):
    """Threads for ``n_tasks`` independent evaluations of ``target`` by default.

    One unless ``target.compiled`` (one compiled call without the GIL) and
    :func:`~skgp_bayes.inference._chain_threads.default_chain_threads`
    allows more with ``seconds()``, one evaluation's time, at least
    :data:`THREADED_PARTICLE_SECONDS`: the rule the particles, the Stein
    regressor's MAP searches and the SVGP bound's starts share.

    Examples
    --------
    >>> from skgp_bayes.inference.particles import automatic_threads
    >>> class Interpreted:
    ...     compiled = False
    >>> automatic_threads(Interpreted(), 10, lambda: 1.0)
    1
    """
    if not getattr(target, "compiled", False):
        return 1
    return default_chain_threads(n_jobs, n_tasks, seconds, THREADED_PARTICLE_SECONDS)


def evaluation_seconds(target, at):
    """The quickest of three evaluations of ``target`` at ``at``, or None.

    None where the kernel matrix there is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.inference.particles import evaluation_seconds
    >>> class Quadratic:
    ...     def logp_and_grad(self, x):
    ...         return -0.5 * float(x @ x), -x
    >>> evaluation_seconds(Quadratic(), np.zeros(2)) >= 0.0
    True
    """
    try:
        return quickest_seconds(lambda: target.logp_and_grad(at))
    except NotPSDError:
        return None


def _evaluate_remote_block(target, block, batch):
    # Another process: one BLAS thread and subnormals flushed, as the threads
    # path has, so that the arithmetic (and each particle's result) is the
    # same wherever it runs.
    with one_blas_thread(), subnormals_flushed():
        return _evaluate_block(target, block, batch, True)


def _chosen_backend():
    """The process-based joblib backend the user chose, or None.

    joblib's default (loky without any ``parallel_config``) and thread-based
    backends leave the particles on this process's threads.
    """
    backend, _ = get_active_backend()
    if getattr(backend, "uses_threads", False):
        return None
    if isinstance(backend, BACKENDS[DEFAULT_BACKEND]):
        return None
    return backend


def _holding(backend, target):
    """``backend`` with ``target`` already on every worker, where it can.

    joblib's Dask backend replaces an argument by the future in its
    ``data_futures`` for that object (``id``); its tasks then carry a
    reference to the copy on the workers. The target is broadcast here
    rather than through the backend's ``scatter`` argument, which keys the
    data by its content: a later fit on the same data then scattered the
    same key while the scheduler was still releasing the earlier fit's copy,
    and its tasks could be cancelled for "lost dependencies" (seen once in
    a full test run; dask/distributed#3703). ``hash=False`` gives every
    fit a key of its own.
    """
    client = getattr(backend, "client", None)
    if client is None or not hasattr(backend, "data_futures"):
        return backend
    held = type(backend)(client=client)
    [future] = client.scatter([target], broadcast=True, hash=False)
    # the object stays referenced, so that its id keeps naming the future
    held._scatter = [target]
    held.data_futures = {id(target): future}
    return held


def _merge(parts):
    values = np.concatenate([p[0] for p in parts])
    grads = np.concatenate([p[1] for p in parts])
    errors = [p[2] for p in parts if p[2] is not None]
    return values, grads, errors[-1] if errors else None


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
        are at least two particles per thread. Under a process-based joblib
        backend the user chose (``joblib.parallel_config(backend="dask")``),
        blocks of particles go to its workers instead, one task per block,
        where a particle's work is large enough (see Notes).
    auto_threads : bool, default=False
        With ``n_jobs=None``, put the particles on this process's threads
        where the target's evaluation is one compiled call that releases
        the GIL (``target.compiled``), the quickest particle of the first
        evaluation took at least :data:`THREADED_PARTICLE_SECONDS`, no
        :func:`joblib.parallel_config` is active and Numba's threading
        layer is thread-safe. For models whose BLAS runs on one thread
        anyway, so that the other cores would otherwise idle.

    Notes
    -----
    Threads share one pool for the evaluator's life (:meth:`close` ends
    it): starting threads afresh every SVGD iteration, as a
    :class:`joblib.Parallel` call does, cost more than ten particles of a
    few hundred rows took to evaluate.

    The rule for a chosen backend: the first two evaluations run here and
    the second is timed (the first may include compiling the kernels),
    which gives ``t``, one core's seconds per particle. The target is then
    sent to the backend's workers and a round of empty tasks is timed,
    ``r`` (the quickest of three; it includes sending the target where the
    backend cannot keep it on its workers). With ``k`` particles per block
    (the particles split over the workers' cores), the blocks go to the
    backend when ``k * t`` is at least ``_REMOTE_WORK_PER_ROUND_TRIP * r``
    (5), so that the round trip adds at most 20% to a block's work; below
    it the particles stay on threads. Every SVGD iteration is one round of
    tasks, so a cheaper block spends its time travelling. The Dask backend
    receives the target once per fit, under a key of its own (see
    ``_holding``); each round then carries only the
    block of particles and the batch's indices out, and the values and
    gradients back. Each particle's arithmetic is the same in a worker as
    in a thread (one BLAS thread, one Numba thread), so where it runs never
    changes the result. Warnings raised in a worker process stay there.

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

    def __init__(
        self, target, *, batch_size=None, rng=None, n_jobs=None, auto_threads=False
    ):
        if batch_size is not None and rng is None:
            raise ValueError("batch_size needs an rng for the permutations.")
        self.target = target
        self.batch_size = batch_size
        self.rng = rng
        self.n_jobs = n_jobs
        # With auto_threads: None until the first evaluation has been timed.
        self._auto_threads = None if auto_threads and n_jobs is None else 1
        self._pool, self._pool_size = None, 0
        self.last_error = None
        self._order = None
        self._epoch_state = None
        self._position = 0
        self._remote = None
        self._decided = False
        self._n_timed = 0

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
        if self._remote is not None:
            return self._evaluate_remote(particles, batch)
        if self._decided:
            return self._evaluate_here(particles, batch)
        backend = _chosen_backend() if self.n_jobs not in (None, 1) else None
        if backend is None:
            self._decided = True
            return self._evaluate_here(particles, batch)
        start = time.perf_counter()
        values, grads = self._evaluate_here(particles, batch)
        self._n_timed += 1
        # The first evaluation may include compiling the kernels: the
        # second one is timed.
        if self._n_timed >= 2:
            self._decide(
                backend, particles.shape[0], time.perf_counter() - start, batch
            )
        return values, grads

    def _decide(self, backend, n_particles, seconds, batch):
        """Whether the blocks go to ``backend``, from one timed evaluation."""
        self._decided = True
        n_blocks = self._remote_blocks(backend, n_particles)
        if n_blocks <= 1:
            return
        # The timed evaluation ran on this process's threads: one core's
        # time per particle is the wall time times the threads.
        per_particle = seconds * self._threads(n_particles) / n_particles
        block_seconds = per_particle * n_particles / n_blocks
        held = _holding(backend, self.target)
        round_trip = self._round_trip(held, n_blocks, batch)
        if block_seconds >= _REMOTE_WORK_PER_ROUND_TRIP * round_trip:
            self._remote = held

    def _round_trip(self, backend, n_blocks, batch):
        """Seconds for a round of empty blocks on ``backend``, target included."""
        empty = np.empty((0, 0))
        seconds = np.inf
        # The quickest of three: the first may include the workers' imports,
        # and other load only ever adds to a round.
        for _ in range(_TIMING_ROUNDS):
            start = time.perf_counter()
            Parallel(n_jobs=n_blocks, backend=backend)(
                delayed(_evaluate_remote_block)(self.target, empty, batch)
                for _ in range(n_blocks)
            )
            seconds = min(seconds, time.perf_counter() - start)
        return seconds

    def _remote_blocks(self, backend, n_particles):
        workers = backend.effective_n_jobs(self.n_jobs)
        return min(max(int(workers), 1), n_particles)

    def _evaluate_remote(self, particles, batch):
        n_blocks = self._remote_blocks(self._remote, particles.shape[0])
        blocks = np.array_split(particles, n_blocks)
        parts = Parallel(n_jobs=n_blocks, backend=self._remote)(
            delayed(_evaluate_remote_block)(self.target, block, batch)
            for block in blocks
        )
        return self._keep_error(*_merge(parts))

    def _evaluate_here(self, particles, batch):
        if self._auto_threads is None and particles.shape[0] > _TIMED_PARTICLES:
            # The first particles here, timed (the first of all may include
            # loading the compiled kernels), and the rest as they decide.
            timed = particles[:_TIMED_PARTICLES]
            values, grads, error, quickest = _evaluate_timed(self.target, timed, batch)
            self._auto_threads = automatic_threads(
                self.target, particles.shape[0], lambda: quickest
            )
            rest = self._evaluate_here(particles[_TIMED_PARTICLES:], batch)
            return self._keep_error(
                np.concatenate([values, rest[0]]), np.vstack([grads, rest[1]]), error
            )
        n_threads = self._threads(particles.shape[0])
        if n_threads <= 1:
            values, grads, error = _evaluate_block(self.target, particles, batch)
        else:
            blocks = np.array_split(particles, n_threads)
            run_block = bound_to_fit(_evaluate_block)
            with one_blas_thread():
                pool = self._threads_pool(n_threads)
                futures = [
                    pool.submit(run_block, self.target, block, batch, True)
                    for block in blocks
                ]
                parts = pool.results(futures)
            values, grads, error = _merge(parts)
        return self._keep_error(values, grads, error)

    def _threads_pool(self, n_threads):
        if self._pool is None or self._pool_size < n_threads:
            self.close()
            self._pool = ThreadPool(n_threads)
            self._pool_size = n_threads
        return self._pool

    def close(self):
        """End the evaluator's threads (a later threaded call starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_pool"] = None
        return state

    def _keep_error(self, values, grads, error):
        if error is not None:
            self.last_error = error
        return values, grads

    def _threads(self, n_particles):
        if self.n_jobs is None:
            if self._auto_threads is None:  # still undecided: too few to time
                return 1
            wanted = min(self._auto_threads, n_particles // _MIN_PARTICLES_PER_JOB)
            return max(1, wanted)
        return requested_threads(self.n_jobs, n_particles // _MIN_PARTICLES_PER_JOB)

    def check_initial(self, particles):
        """Raise the kernel's error if no starting particle can be evaluated.

        Returns the values ``(J,)`` and gradients ``(J, P)`` it computed, on
        the batch the first step will use.
        """
        # The check looks at the batch the first step will use, without
        # consuming it, so that a check never shifts the batch sequence.
        saved = self.get_state()
        values, grads = self.evaluate(particles, self.next_batch())
        self.set_state(saved)
        if particles.shape[0] and not np.any(np.isfinite(values)):
            if self.last_error is not None:
                raise self.last_error
            raise FloatingPointError(
                "The log posterior is not finite at any initial particle."
            )
        return values, grads
