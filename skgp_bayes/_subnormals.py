"""Subnormal numbers flushed to zero while this package computes.

A squared-exponential kernel entry ``exp(-r^2 / 2 l^2)`` lies in the
subnormal range (below 2.2e-308) for a band of distances, ``r`` between
37.6 and 38.6 length scales, so any data set that spans more than about 38
length scales puts subnormals into its kernel matrix, and the Cholesky
factor and inverse of such a matrix make more of them as its far entries
decay. x86 processors handle an arithmetic operation on a subnormal by a
microcode assist that costs 100 or more cycles, and LAPACK's blocked
kernels then run several times slower. On the monthly level of the Rio
Negro (756 training rows, one input, a length scale of 0.0066 of its
spread at the posterior mode) one value and gradient of the exact marginal
posterior took 68 ms against 11 ms at a length scale of 0.05; the
factorisation alone 43 ms against 7 ms with subnormals flushed (one BLAS
thread). A subnormal entry is 300 orders of magnitude below the kernel's
variance and below any rounding error of the factorisation, so flushing it
changes no result beyond its rounding. Only a logarithm taken of a number
that small notices: ``predict_log_proba``, the logarithm of
``predict_proba``, reaches ``-inf`` at probabilities below 2.2e-308 (a
logarithm of -708) rather than below 4.9e-324 (-744); the likelihoods take
their logarithms through ``log_expit``, ``log_ndtr`` and log-sum-exp, which
never form such numbers.

:func:`subnormals_flushed` sets the processor's flush-to-zero and
denormals-are-zero modes (MXCSR bits 15 and 6) for the calling thread and
restores them on exit; threads started inside inherit them (POSIX threads
take the creating thread's floating-point environment), which covers the
chains and particles run on threads. BLAS's own worker threads, started
when the library was loaded, keep the modes they have: a problem large
enough for multi-threaded BLAS is sped up only in the calling thread's
share. Numba's parallel worker threads, where a fit starts them, keep the
modes after it (they persist for the process), which touches only
arithmetic on numbers below 2.2e-308. The modes are set through the C
library's ``fegetenv`` and ``fesetenv`` on x86-64 Linux, whose ``fenv_t``
keeps MXCSR in its eighth 32-bit word; elsewhere the context does nothing
and the arithmetic keeps its subnormals (correct, only slower). The flush
is checked once: where ``tiny / 2`` does not become zero under the modes,
they are restored and never set again.
"""

import contextlib
import ctypes
import ctypes.util
import functools
import platform
import sys
import threading

import numpy as np
from joblib import delayed

from ._thread_pool import interrupts_held

__all__ = [
    "call_flushed",
    "delayed_flushed",
    "flushes_subnormals",
    "subnormals_flushed",
]

# MXCSR: flush-to-zero (results) and denormals-are-zero (operands).
_FLUSH_BITS = (1 << 15) | (1 << 6)
# The exception masks, all set in a Python process; a word without them is
# not the MXCSR this module expects to find there.
_EXCEPTION_MASKS = 0x1F80
# fenv_t on x86-64 glibc: the x87 environment (28 bytes), then MXCSR.
_FENV_WORDS = 8
_MXCSR_WORD = 7

_state = threading.local()
_checked = {"works": None}


def _libm():
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    except OSError:
        return None


_LIBM = _libm()


def _read_env():
    env = (ctypes.c_uint32 * _FENV_WORDS)()
    if _LIBM.fegetenv(env) != 0:
        return None
    return env


def _set_mode_bits(bits):
    """Set the flush bits of MXCSR to ``bits``, keeping every other bit
    (status flags included); returns the bits it replaced, or None."""
    env = _read_env()
    if env is None or env[_MXCSR_WORD] & _EXCEPTION_MASKS != _EXCEPTION_MASKS:
        return None
    before = env[_MXCSR_WORD] & _FLUSH_BITS
    env[_MXCSR_WORD] = (env[_MXCSR_WORD] & ~_FLUSH_BITS & 0xFFFFFFFF) | bits
    if _LIBM.fesetenv(env) != 0:
        return None
    return before


def _flushes():
    tiny = np.finfo(np.float64).tiny
    return float(np.multiply(np.float64(tiny), 0.5)) == 0.0


@contextlib.contextmanager
def subnormals_flushed():
    """Context in which this thread's float arithmetic flushes subnormals to zero.

    Re-entrant: an inner context leaves the modes to the outermost one. A
    no-op where the modes cannot be set (see the module notes). Ctrl-C
    cannot leave the modes set: they change with interrupts held
    (:func:`~skgp_bayes._thread_pool.interrupts_held`), and the restore
    runs again after an interrupt that was pending as it began.

    Yields
    ------
    bool
        Whether subnormals are flushed inside.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._subnormals import subnormals_flushed
    >>> tiny = np.finfo(np.float64).tiny
    >>> with subnormals_flushed() as active:
    ...     half = float(np.multiply(np.float64(tiny), 0.5))
    >>> half == 0.0 if active else half > 0.0
    True
    >>> float(np.multiply(np.float64(tiny), 0.5)) > 0.0  # restored on exit
    True
    """
    if getattr(_state, "active", None) is not None:  # an outer context holds them
        yield _state.active
        return
    before = None
    try:
        # Ctrl-C held off while the modes change: an interrupt landing
        # between setting them and recording it left them set for the rest
        # of the process.
        with interrupts_held():
            before = _enter()
            _state.active = before is not None
        yield _state.active
    finally:
        try:
            with interrupts_held():
                _leave(before)
        except BaseException:
            # An interrupt already pending is raised as the guard is
            # entered, before the block runs; the restore follows it.
            _leave(before)
            raise


def _leave(before):
    _state.active = None
    if before is not None:
        _set_mode_bits(before)


def _enter():
    """Set the flush modes; the bits they replaced, or None where not set."""
    if _LIBM is None or _checked["works"] is False:
        return None
    before = _set_mode_bits(_FLUSH_BITS)
    if before is None:
        return None
    if _checked["works"] is None:
        _checked["works"] = _flushes()
        if not _checked["works"]:
            _set_mode_bits(before)
            return None
    return before


def flushes_subnormals(method):
    """Run ``method`` inside :func:`subnormals_flushed`.

    Parameters
    ----------
    method : callable

    Returns
    -------
    callable
        The method, wrapped; name, docstring and signature are kept.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._subnormals import flushes_subnormals
    >>> @flushes_subnormals
    ... def half_of_tiny():
    ...     return float(np.multiply(np.finfo(np.float64).tiny, 0.5))
    >>> half_of_tiny() in (0.0, np.finfo(np.float64).tiny / 2)
    True
    """

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        return call_flushed(method, *args, **kwargs)

    # Outer wrappers (functools.wraps) copy this, so a test can find it.
    wrapper.flushes_subnormals = True
    return wrapper


def call_flushed(function, *args, **kwargs):
    """``function(*args, **kwargs)`` inside :func:`subnormals_flushed`.

    A module-level function, so that a job sent to another process (joblib's
    process backends, Dask) sets the modes there too: the arithmetic, and
    so each chain's or particle's result, is then the same wherever it runs.

    Examples
    --------
    >>> from skgp_bayes._subnormals import call_flushed
    >>> call_flushed(max, 2, 3)
    3
    """
    with subnormals_flushed():
        return function(*args, **kwargs)


def delayed_flushed(function):
    """:func:`joblib.delayed` for ``function``, run under :func:`call_flushed`.

    The job a process backend (loky, Dask) runs then sets the caller's flush
    modes there: its arithmetic, and so each chain's result, is the same as
    on this process.

    Examples
    --------
    >>> from joblib import Parallel
    >>> from skgp_bayes._subnormals import delayed_flushed
    >>> Parallel(n_jobs=1)(delayed_flushed(pow)(2, k) for k in range(3))
    [1, 2, 4]
    """
    return functools.partial(delayed(call_flushed), function)
