"""How long Numba spent compiling, for reports that include a first fit.

After an installation, the first fit of each estimator compiles its
numerical kernels (then cached on disk): tens of seconds to about two
minutes on two cores (benchmarks/RESULTS.md, "The first fit after an
installation"), against a few seconds for the fit itself. A report that
times such a fit says how much of it was compiling, or the figure reads as
the estimator's cost.
"""

import time
from contextlib import contextmanager

__all__ = ["compile_seconds"]


@contextmanager
def compile_seconds():
    """Count the seconds Numba compiles inside the ``with`` block.

    Yields a one-element list whose entry grows as compilations end; each
    compiled function's time is counted once (the time of the functions it
    compiled on the way is subtracted from it). Loading from the cache is
    not compiling and adds nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from numba import njit
    >>> from skgp_bayes._compile_time import compile_seconds
    >>> with compile_seconds() as spent:
    ...     _ = njit(lambda x: x + 1)(np.ones(2))
    >>> spent[0] > 0
    True
    """
    from numba.core import event

    spent = [0.0]
    open_compiles = []

    class _Compiles(event.Listener):
        def on_start(self, ev):
            open_compiles.append([time.perf_counter(), 0.0])

        def on_end(self, ev):
            if not open_compiles:  # began before the block
                return
            start, inner = open_compiles.pop()
            took = time.perf_counter() - start
            spent[0] += took - inner
            if open_compiles:
                open_compiles[-1][1] += took

    listener = _Compiles()
    event.register("numba:compile", listener)
    try:
        yield spent
    finally:
        event.unregister("numba:compile", listener)
