"""Independent chains on threads of this process.

A chain whose target runs in compiled code that releases the GIL (HMC's
compiled trajectories,
:class:`~skgp_bayes.variational_mcmc._trajectory.TrajectoryTarget`; the
exact target's compiled RBF path under SGLD) spends most of its time
outside the interpreter, so its chains can share the cores by threads, with
nothing pickled and nothing started but the threads. Each chain keeps its
own generator and state, so the draws are those of the chains run one after
another, bit for bit.

Two things a thread pool does not give by itself are added here:

- Ctrl-C. The signal reaches the main thread, which waits on the chains; a
  thread cannot be killed, so every chain checks a shared flag once an
  iteration (through its progress callable) and ends at the next one,
  before the ``KeyboardInterrupt`` goes on to the caller.
- Interrupts that strand a lock: the pool is
  :class:`~skgp_bayes._thread_pool.ThreadPool`.
- Progress. The engine reports each chain's own count, and a shared
  reporter that expects runs one after another would take the interleaved
  counts for new runs; the chains' counts are summed under a lock instead.
"""

import contextlib
import threading
import time
from concurrent.futures import FIRST_EXCEPTION

from joblib import effective_n_jobs

from .._thread_pool import ThreadPool, interrupts_held, wait_for
from .._threads import one_blas_thread
from .._warnings import bound_to_fit

__all__ = [
    "default_chain_threads",
    "mapped_on_threads",
    "numba_threads_are_safe",
    "quickest_seconds",
    "run_on_threads",
]


class _Stopped(Exception):
    """A chain ended early because another chain failed or the user pressed Ctrl-C."""


class _SharedProgress:
    """The chains' progress callables: their counts summed; a stop on request."""

    def __init__(self, progress, n_chains):
        self.progress = progress
        self.done = [0] * n_chains
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def for_chain(self, index):
        def report(done, total=None, stats=None):
            if self.stop.is_set():
                raise _Stopped
            if self.progress is None:
                return
            with self.lock:
                self.done[index] = int(done)
                self.progress(sum(self.done), total, stats)

        return report


def run_on_threads(run_chain, n_chains, n_threads, progress=None):
    """``[run_chain(c, progress_c) for c in range(n_chains)]`` on ``n_threads`` threads.

    Parameters
    ----------
    run_chain : callable
        ``run_chain(c, progress)`` runs chain ``c`` to its end, calling
        ``progress(done, total, stats)`` once an iteration, and returns its
        result.
    n_chains : int
    n_threads : int
        At least 2. BLAS runs on one thread meanwhile: the chains are the
        parallelism.
    progress : callable, optional
        ``progress(done, total, stats)`` with ``done`` summed over the
        chains, as for chains run one after another.

    Returns
    -------
    list
        The chains' results, in chain order.

    Raises
    ------
    KeyboardInterrupt
        After every chain has stopped at its next iteration.
    Exception
        The error of the first chain (in chain order) that raised one, once
        the others have stopped.

    Examples
    --------
    >>> from skgp_bayes.inference._chain_threads import run_on_threads
    >>> def run_chain(c, progress):
    ...     for i in range(3):
    ...         progress(i + 1, 3, {})
    ...     return c * c
    >>> run_on_threads(run_chain, 4, 2)
    [0, 1, 4, 9]
    """
    shared = _SharedProgress(progress, n_chains)
    with one_blas_thread(), ThreadPool(n_threads) as pool:
        futures = [
            pool.submit(bound_to_fit(run_chain), c, shared.for_chain(c))
            for c in range(n_chains)
        ]
        try:
            # Waits in the main thread: Ctrl-C lands here.
            wait_for(futures, return_when=FIRST_EXCEPTION)
        finally:
            # On a failure or Ctrl-C the other chains end at their next
            # iteration, and leaving the pool waits for them.
            try:
                _stop_unless_all_succeeded(futures, shared.stop)
            except BaseException:  # pending as the guard was entered
                _stop_unless_all_succeeded(futures, shared.stop)
                raise
    with interrupts_held():
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            raise next(e for e in errors if not isinstance(e, _Stopped))
        return [future.result() for future in futures]


def _stop_unless_all_succeeded(futures, stop):
    with interrupts_held():
        if not all(f.done() and f.exception() is None for f in futures):
            stop.set()


def numba_threads_are_safe():
    """Whether Numba's parallel kernels may be entered from several threads.

    Numba's ``workqueue`` layer aborts the process when two threads launch
    parallel kernels at once; ``omp`` and ``tbb`` are thread-safe.

    Returns
    -------
    bool

    Examples
    --------
    >>> from skgp_bayes.inference._chain_threads import numba_threads_are_safe
    >>> isinstance(numba_threads_are_safe(), bool)
    True
    """
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:
        # No parallel kernel has run yet, so no layer is chosen: launch one.
        # A fit on a compiled target may run none before its particles or
        # chains go on threads, and would then get no thread at all. The
        # launch takes Numba's thread-launch locks (see _numba_threads).
        from ._numba_layer import launch_parallel_layer

        with interrupts_held():
            launch_parallel_layer(2)
        layer = numba.threading_layer()
    return layer in ("omp", "tbb")


def quickest_seconds(call, repeats=3):
    """Seconds of the quickest of ``repeats`` calls of ``call()``.

    Examples
    --------
    >>> from skgp_bayes.inference._chain_threads import quickest_seconds
    >>> quickest_seconds(lambda: sum(range(100))) >= 0.0
    True
    """
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def default_chain_threads(n_jobs, n_chains, work_seconds, threshold):
    """Threads for an estimator's chains: one per chain, or 1.

    Threads only where the user left ``n_jobs`` at None (here and in any
    :func:`joblib.parallel_config`), the chains' compiled work releases the
    GIL and one unit of it takes at least ``threshold`` seconds, and Numba's
    threading layer can be entered from several threads; then up to
    :func:`numba.get_num_threads` (``NUMBA_NUM_THREADS``, which joblib's
    workers set to their share of the cores).

    Parameters
    ----------
    n_jobs : int or None
        The estimator's ``n_jobs``.
    n_chains : int
    work_seconds : callable
        Returns the seconds of one unit of the chains' compiled work (a
        leapfrog step, a gradient), or None where it is not compiled;
        called only when ``n_jobs`` allows threads.
    threshold : float

    Returns
    -------
    int

    Examples
    --------
    >>> from skgp_bayes.inference._chain_threads import default_chain_threads
    >>> default_chain_threads(None, 4, lambda: None, 50e-6)  # not compiled
    1
    >>> default_chain_threads(1, 4, lambda: 1.0, 50e-6)  # one after another
    1
    """
    if n_jobs is not None or effective_n_jobs(None) != 1:
        return 1
    seconds = work_seconds()
    if seconds is None or seconds < threshold:
        return 1
    if not numba_threads_are_safe():
        return 1
    from .._numba_threads import numba_threads

    return max(1, min(n_chains, numba_threads()))


@contextlib.contextmanager
def mapped_on_threads(n_threads):
    """Context giving a ``map(function, items)`` over ``n_threads`` threads.

    Results come in the order of ``items``, and an item's error is raised
    where its result is read, as with the builtin :func:`map`, which is
    what one thread gives. BLAS runs on one thread meanwhile: the items are
    the parallelism. Read every result inside the context.

    Parameters
    ----------
    n_threads : int

    Yields
    ------
    callable

    Examples
    --------
    >>> from skgp_bayes.inference._chain_threads import mapped_on_threads
    >>> with mapped_on_threads(2) as map_fn:
    ...     list(map_fn(abs, [-1, 2, -3]))
    [1, 2, 3]
    """
    if n_threads <= 1:
        yield map
        return
    with one_blas_thread(), ThreadPool(n_threads) as pool:

        def map_fn(function, items):
            return pool.map(bound_to_fit(function), items)

        yield map_fn
