"""Thread-count policy for BLAS and LAPACK calls on small matrices."""

import contextlib

import numpy as np
from threadpoolctl import ThreadpoolController

from . import _config
from ._thread_pool import ThreadPool

# Scanning the loaded libraries costs milliseconds (threadpool_limits does it
# on every entry); one controller, created at first use, makes entering the
# context cost microseconds, so it can guard calls made every CG iteration.
_controller = None


def _blas_controller():
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller


def blas_threads_for(n_rows, n_cols=None):
    """Context limiting BLAS to one thread for small problems.

    Parameters
    ----------
    n_rows : int
        Rows of the largest matrix worked on inside the context (training
        points).
    n_cols : int, optional
        Its columns; defaults to ``n_rows`` (a dense kernel matrix). Pass the
        number of inducing points for a sparse model.

    Returns
    -------
    contextlib.AbstractContextManager
        A limit of one BLAS thread when ``n_rows * n_cols`` is at most
        ``skgp_bayes._config.SERIAL_BLAS_MAX_WORK``, otherwise a no-op.

    Examples
    --------
    >>> from skgp_bayes._threads import blas_threads_for
    >>> with blas_threads_for(50):
    ...     pass
    >>> with blas_threads_for(10**6, 100):  # large: BLAS keeps its threads
    ...     pass
    """
    if serial_blas(n_rows, n_cols):
        return one_blas_thread()
    return contextlib.nullcontext()


def serial_blas(n_rows, n_cols=None):
    """Whether :func:`blas_threads_for` keeps BLAS to one thread at this size.

    Parameters
    ----------
    n_rows : int
    n_cols : int, optional
        Defaults to ``n_rows``.

    Returns
    -------
    bool

    Examples
    --------
    >>> from skgp_bayes._threads import serial_blas
    >>> serial_blas(300), serial_blas(5000)
    (True, False)
    """
    n_cols = n_rows if n_cols is None else n_cols
    return n_rows * n_cols <= _config.SERIAL_BLAS_MAX_WORK


def one_blas_thread():
    """Context running BLAS on one thread, entered in microseconds.

    Returns
    -------
    contextlib.AbstractContextManager

    Examples
    --------
    >>> from skgp_bayes._threads import one_blas_thread
    >>> with one_blas_thread():
    ...     pass
    """
    return _blas_controller().limit(limits=1, user_api="blas")


def on_contiguous_shares(compute, n_items, threads):
    """``compute(rows)`` over contiguous shares of ``n_items`` items, in order.

    With ``threads`` above 1 and more than one item, the items split into
    ``min(threads, n_items)`` contiguous slices, each computed on its own
    thread with BLAS on one thread (for compiled work that releases the
    interpreter lock); otherwise one call with ``slice(None)``. Work whose
    items are independent gets the same result per item either way.

    Parameters
    ----------
    compute : callable
        ``compute(rows)`` with ``rows`` a slice of the items.
    n_items : int
    threads : int

    Returns
    -------
    list
        The results of ``compute``, one per share, in the items' order.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes._threads import on_contiguous_shares
    >>> x = np.arange(5.0)
    >>> [part.tolist() for part in on_contiguous_shares(lambda r: x[r] ** 2, 5, 2)]
    [[0.0, 1.0], [4.0, 9.0, 16.0]]
    """
    n_shares = min(threads, n_items)
    if n_shares <= 1:
        return [compute(slice(None))]
    ends = np.linspace(0, n_items, n_shares + 1).astype(int)
    shares = [slice(lo, hi) for lo, hi in zip(ends[:-1], ends[1:], strict=True)]
    with one_blas_thread(), ThreadPool(n_shares) as pool:
        return list(pool.map(compute, shares))
