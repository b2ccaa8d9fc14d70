"""A parallel kernel whose only job is to make Numba choose its threading layer.

Numba picks its layer (``tbb``, ``omp`` or ``workqueue``) when the first
parallel kernel launches, and :func:`numba.threading_layer` raises until
then. Which layer it picks decides whether particles may run on threads
(see :mod:`skgp_bayes.inference.particles`), so the decision cannot wait
for a parallel kernel that a fit may never launch.
"""

from numba import njit, prange


@njit(parallel=True, cache=True)
def launch_parallel_layer(n):
    """``sum(range(n))`` over Numba's threads.

    Examples
    --------
    >>> from skgp_bayes.inference._numba_layer import launch_parallel_layer
    >>> int(launch_parallel_layer(10))
    45
    """
    total = 0
    for i in prange(n):
        total += i
    return total
