"""Timing helper shared by the benchmark scripts (run from any folder)."""

import time


def best_time(func, repeats):
    """Smallest wall time of ``repeats`` calls of ``func()``.

    The minimum is the figure least disturbed by other load on the machine.
    """
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)
