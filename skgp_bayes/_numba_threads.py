"""Numba's thread count, read and set where Ctrl-C cannot break it.

Every ``numba.get_num_threads``, ``numba.set_num_threads`` and the first
parallel launch enter Numba's two thread-launch locks through ``with``
blocks. A ``KeyboardInterrupt`` raised between a lock's acquisition and the
block that releases it leaves the lock held by the main thread for good;
the next fit whose particles or chains run on threads then waits on it
forever in ``numba.np.ufunc.parallel._launch_threads``. That happened three
times in full test runs, each time under ``tests/test_interrupt.py``'s
timed signals (the last on 2026-12-02, one refit of fifteen in one run of
the whole suite). So here the signals that Python turns into
``KeyboardInterrupt`` are held off while the main thread is inside those
calls, and the interrupt is raised as soon as they return, outside the
locks. Other threads never run Python's signal handlers and need no guard.
"""

import contextlib
import signal
import threading

import numba

__all__ = ["interrupts_held", "numba_threads", "serial_numba", "set_numba_threads"]

# SIGINT is Ctrl-C; SIGALRM is how a timed interrupt arrives (the test suite's,
# or a user's alarm-driven timeout with ``signal.default_int_handler``).
_HELD_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGALRM") if hasattr(signal, name)
)


@contextlib.contextmanager
def interrupts_held():
    """Hold off the Python handlers of SIGINT and SIGALRM inside the block.

    A signal that arrives inside is recorded, and its handler runs (raising
    ``KeyboardInterrupt``, for the default one) when the block ends. A no-op
    outside the main thread, where Python runs no signal handler.

    Examples
    --------
    >>> import os, signal
    >>> from skgp_bayes._numba_threads import interrupts_held
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
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught, held = [], {}

    def record(signum, frame):
        caught.append((signum, frame))

    for signum in _HELD_SIGNALS:
        handler = signal.getsignal(signum)
        if callable(handler):
            held[signum] = handler
            signal.signal(signum, record)
    try:
        yield
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)
        for signum, frame in caught[:1]:
            held[signum](signum, frame)


def numba_threads():
    """``numba.get_num_threads()``, interrupts held (see the module notes).

    Examples
    --------
    >>> from skgp_bayes._numba_threads import numba_threads
    >>> numba_threads() >= 1
    True
    """
    with interrupts_held():
        return numba.get_num_threads()


def set_numba_threads(n):
    """``numba.set_num_threads(n)``, interrupts held (see the module notes).

    Examples
    --------
    >>> from skgp_bayes._numba_threads import numba_threads, set_numba_threads
    >>> previous = numba_threads()
    >>> set_numba_threads(1)
    >>> numba_threads()
    1
    >>> set_numba_threads(previous)
    """
    with interrupts_held():
        numba.set_num_threads(n)


@contextlib.contextmanager
def serial_numba():
    """Numba's parallel kernels on the calling thread only, inside the block.

    Examples
    --------
    >>> from skgp_bayes._numba_threads import numba_threads, serial_numba
    >>> with serial_numba():
    ...     print(numba_threads())
    1
    """
    previous = numba_threads()
    try:
        # an interrupt held in here is raised inside the try, so the count
        # is restored
        set_numba_threads(1)
        yield
    finally:
        set_numba_threads(previous)
