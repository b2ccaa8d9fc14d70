"""A thread pool that Ctrl-C cannot leave locked, and the guard it rests on.

CPython raises ``KeyboardInterrupt`` in the main thread at the next
bytecode boundary after the signal, and that can fall between a lock's
acquisition and the ``with`` block that would release it: inside
``Condition.__enter__``, after the C lock is taken and before the method
returns. :class:`concurrent.futures.ThreadPoolExecutor` takes such
conditions in the main thread on every ``submit`` (its idle-thread
semaphore), every ``Future.result``, ``done`` and ``cancel``, and
``Event.set`` takes one too. A condition left held that way is never freed:
the pool's workers then wait on it forever after their next task, and so
does the fit that shuts the pool down. A full test run hung so on
2026-12-05 (the Stein regressor's timed interrupts, its particles'
semaphore), and 1 of 26 runs of those fifteen interrupts did the same here.

So the main thread touches a pool and its futures only while
:func:`interrupts_held`, and waits for them in slices of
``_WAIT_SLICE_SECONDS`` so that Ctrl-C still ends a long wait, raised
between two slices, where no lock is held. Worker threads never run
Python's signal handlers and need no guard.

An interrupt that arrived just before a guard is raised as the guard is
entered (Python checks for pending signals on every call), before its
block runs. Clean-up that must happen (a shutdown, a restore) therefore
runs again in an ``except BaseException`` branch, where the pending
interrupt is spent (``BaseException``: a user's handler of SIGALRM may
raise something else, a ``TimeoutError`` for instance). That ``try`` is
written out in each frame that cleans up rather than put in a helper: a
helper's own entry is one more point where Python checks for signals, and
an interrupt raised there would escape before the helper's ``try`` began.
"""

# _signal is the C module under signal: the same calls without the
# conversions to enums, which took 4 us of a guarded call's 5.
import _signal
import signal
import threading
from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_EXCEPTION,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures import TimeoutError as FuturesTimeoutError

__all__ = ["ThreadPool", "interrupts_held", "wait_for"]

# SIGINT is Ctrl-C; SIGALRM is how a timed interrupt arrives (the test suite's,
# or a user's alarm-driven timeout with ``signal.default_int_handler``).
_HELD_SIGNALS = tuple(
    int(getattr(signal, name))
    for name in ("SIGINT", "SIGALRM")
    if hasattr(signal, name)
)
# How long Ctrl-C may wait, at most, while the main thread waits on a pool.
_WAIT_SLICE_SECONDS = 0.05


def interrupts_held():
    """Hold off the Python handlers of SIGINT and SIGALRM inside the block.

    A signal that arrives inside is recorded, and its handler runs (raising
    ``KeyboardInterrupt``, for the default one) when the block ends. A no-op
    outside the main thread, where Python runs no signal handler.

    Returns
    -------
    context manager

    Examples
    --------
    >>> import os, signal
    >>> from skgp_bayes._thread_pool import interrupts_held
    >>> previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    >>> try:
    ...     with interrupts_held():
    ...         os.kill(os.getpid(), signal.SIGALRM)
    ...         print("the block finishes")
    ... except KeyboardInterrupt:
    ...     print("then the interrupt")
    the block finishes
    then the interrupt
    >>> _ = signal.signal(signal.SIGALRM, previous)
    """
    return _InterruptsHeld()


class _InterruptsHeld:
    # A class rather than a generator context: entered on every submit and
    # every read of a result, where the generator's machinery cost 20 us.
    __slots__ = ("_caught", "_held")

    def __enter__(self):
        self._caught, self._held = [], {}
        if threading.get_ident() != threading.main_thread().ident:
            return self
        try:
            for signum in _HELD_SIGNALS:
                handler = _signal.getsignal(signum)
                if callable(handler):
                    self._held[signum] = handler
                    _signal.signal(signum, self._record)
        except BaseException:
            # An interrupt between two installations: put every handler back.
            self._restore()
            raise
        return self

    def _record(self, signum, frame):
        self._caught.append((signum, frame))

    def _restore(self):
        for signum, handler in self._held.items():
            _signal.signal(signum, handler)

    def __exit__(self, exc_type, exc, traceback):
        self._restore()
        for signum, frame in self._caught[:1]:
            self._held[signum](signum, frame)
        return False


def wait_for(futures, return_when=ALL_COMPLETED):
    """Wait for ``futures`` as :func:`concurrent.futures.wait` does, Ctrl-C safe.

    Parameters
    ----------
    futures : list of concurrent.futures.Future
    return_when : {ALL_COMPLETED, FIRST_EXCEPTION}
        Until all are done, or until one raised (or all are done).

    Raises
    ------
    KeyboardInterrupt
        Within ``_WAIT_SLICE_SECONDS`` of Ctrl-C, with no lock held; the
        futures run on.

    Examples
    --------
    >>> from skgp_bayes._thread_pool import ThreadPool, wait_for
    >>> with ThreadPool(2) as pool:
    ...     futures = [pool.submit(abs, x) for x in (-1, -2)]
    ...     wait_for(futures)
    ...     print(pool.results(futures))
    [1, 2]
    """
    if return_when not in (ALL_COMPLETED, FIRST_EXCEPTION):
        raise ValueError(f"return_when={return_when!r} is not supported")
    while True:
        with interrupts_held():
            # A future cancelled before it ran never counts as done in wait.
            live = [f for f in futures if not f.cancelled()]
            done, pending = wait(
                live, timeout=_WAIT_SLICE_SECONDS, return_when=return_when
            )
            if not pending:
                return
            if return_when == FIRST_EXCEPTION and any(
                f.exception() is not None for f in done
            ):
                return


def _result(future):
    """``future.result()``, waited for in slices with interrupts held."""
    while True:
        with interrupts_held():
            try:
                return future.result(timeout=_WAIT_SLICE_SECONDS)
            except FuturesTimeoutError:
                pass


class ThreadPool:
    """:class:`~concurrent.futures.ThreadPoolExecutor`, driven Ctrl-C safe.

    Every call from the main thread into the executor or its futures runs
    under :func:`interrupts_held`, and waits go through :func:`wait_for`
    (see the module notes). Leaving the ``with`` block shuts the pool down,
    waiting for running tasks; on an exception, tasks not yet started are
    cancelled first.

    Parameters
    ----------
    max_workers : int

    Examples
    --------
    >>> from skgp_bayes._thread_pool import ThreadPool
    >>> with ThreadPool(2) as pool:
    ...     print(list(pool.map(abs, [-1, 2, -3])))
    [1, 2, 3]
    """

    def __init__(self, max_workers):
        self.max_workers = max_workers
        self._executor = ThreadPoolExecutor(max_workers=max_workers)
        self._futures = []  # submitted, not yet seen done

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        try:
            self.shutdown(cancel_pending=exc_type is not None)
        except BaseException:
            # Raised as the shutdown began (an interrupt already pending)
            # or by a second Ctrl-C during its wait: the threads end after
            # their running tasks, and the interrupt goes on.
            with interrupts_held():
                self._executor.shutdown(wait=False, cancel_futures=True)
            raise
        return False

    def submit(self, function, *args, **kwargs):
        """Schedule ``function(*args, **kwargs)``; its future.

        Examples
        --------
        >>> from skgp_bayes._thread_pool import ThreadPool
        >>> with ThreadPool(1) as pool:
        ...     print(pool.results([pool.submit(pow, 2, 5)]))
        [32]
        """
        with interrupts_held():
            if len(self._futures) > 4 * self.max_workers:
                self._futures = [f for f in self._futures if not f.done()]
            future = self._executor.submit(function, *args, **kwargs)
            self._futures.append(future)
            return future

    def results(self, futures):
        """The results of ``futures``, read in order.

        Raises the error of the first (in order) that raised one, as soon as
        it is reached; the others run on.

        Examples
        --------
        >>> from skgp_bayes._thread_pool import ThreadPool
        >>> with ThreadPool(2) as pool:
        ...     print(pool.results([pool.submit(len, "ab"), pool.submit(len, "")]))
        [2, 0]
        """
        return [_result(future) for future in futures]

    def map(self, function, items):
        """``function`` over ``items`` on the pool; results in order, lazily.

        All items are submitted at once; an item's error is raised where its
        result is read, as with the builtin :func:`map`. Closing the
        iterator early cancels the items not yet started.

        Examples
        --------
        >>> from skgp_bayes._thread_pool import ThreadPool
        >>> with ThreadPool(2) as pool:
        ...     print(list(pool.map(str.upper, ["a", "b"])))
        ['A', 'B']
        """
        futures = [self.submit(function, item) for item in items]
        return self._in_order(futures)

    def _in_order(self, futures):
        try:
            for future in futures:
                yield _result(future)
        finally:
            try:
                self._cancel(futures)
            except BaseException:  # pending as the cancel began
                self._cancel(futures)
                raise

    @staticmethod
    def _cancel(futures):
        with interrupts_held():
            for future in futures:
                future.cancel()

    def shutdown(self, cancel_pending=False):
        """End the pool's threads, after the tasks already running.

        The wait for those tasks is one a second Ctrl-C can end; the
        threads then end with their tasks.

        Examples
        --------
        >>> from skgp_bayes._thread_pool import ThreadPool
        >>> pool = ThreadPool(1)
        >>> pool.shutdown()
        """
        with interrupts_held():
            self._executor.shutdown(wait=False, cancel_futures=cancel_pending)
        wait_for(self._futures)
        with interrupts_held():
            self._executor.shutdown(wait=True)  # joins threads already idle
            self._futures = []
