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
locks (:func:`skgp_bayes._thread_pool.interrupts_held`, which the thread
pools the package drives rest on too). Other threads never run Python's
signal handlers and need no guard.

Once the threading layer is launched, the count is read and set through
the layer's own two C functions, which Numba's public calls reach after
taking the locks (``numba.np.ufunc.parallel._get_num_threads`` and
``_set_num_threads``): no lock, so nothing to guard, in 0.1-0.2 us where
the guarded public calls took 10 us each. Every kernel evaluation of
``KernelAdapter`` reads the count and sets it twice, and on the selective
classifier's default fit on breast cancer the guarded calls took 12% of the
time. Where those functions are missing (another Numba), the guarded
public calls serve.
"""

import contextlib

import numba

from ._thread_pool import interrupts_held

__all__ = ["numba_threads", "serial_numba", "set_numba_threads"]


def _lock_free_calls():
    """``(get, set)`` of the launched threading layer, or None (not launched
    yet, or a Numba without them)."""
    from numba.np.ufunc import parallel

    if not getattr(parallel, "_is_initialized", False):
        return None
    get = getattr(parallel, "_get_num_threads", None)
    put = getattr(parallel, "_set_num_threads", None)
    return (get, put) if callable(get) and callable(put) else None


def numba_threads():
    """``numba.get_num_threads()``, safe from interrupts (see the module notes).

    Examples
    --------
    >>> from skgp_bayes._numba_threads import numba_threads
    >>> numba_threads() >= 1
    True
    """
    calls = _lock_free_calls()
    if calls is not None:
        return int(calls[0]())
    with interrupts_held():
        return numba.get_num_threads()


def set_numba_threads(n):
    """``numba.set_num_threads(n)``, safe from interrupts (see the module notes).

    Examples
    --------
    >>> from skgp_bayes._numba_threads import numba_threads, set_numba_threads
    >>> previous = numba_threads()
    >>> set_numba_threads(1)
    >>> numba_threads()
    1
    >>> set_numba_threads(previous)
    """
    calls = _lock_free_calls()
    if calls is not None and 1 <= n <= numba.config.NUMBA_NUM_THREADS:
        calls[1](int(n))
        return
    with interrupts_held():  # and Numba's own errors for a bad n
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
        try:
            set_numba_threads(previous)
        except BaseException:  # pending as the call began: restore after it
            set_numba_threads(previous)
            raise
