"""The tour's count of the seconds Numba spends compiling."""

import time

import numpy as np
from numba import njit

from skgp_bayes.__main__ import _compiling_clause
from skgp_bayes._compile_time import compile_seconds


def test_nothing_compiled_counts_nothing():
    with compile_seconds() as spent:
        np.ones(3).sum()
    assert spent[0] == 0.0


def test_nested_compilations_are_counted_once():
    # Compiling the outer function compiles the inner one on the way; summing
    # both compile events' whole durations would exceed the time that passed.
    @njit
    def inner(x):
        return np.sort(x)[0]

    @njit
    def outer(x):
        return inner(x) + np.linalg.norm(x)

    start = time.perf_counter()
    with compile_seconds() as spent:
        outer(np.arange(4.0))
    elapsed = time.perf_counter() - start
    assert 0.0 < spent[0] <= elapsed
    # a second call compiles nothing more
    before = spent[0]
    with compile_seconds() as again:
        outer(np.arange(4.0))
    assert again[0] == 0.0 and spent[0] == before


def test_the_tour_mentions_compiling_only_when_it_took_time():
    assert _compiling_clause(0.4) == ""
    assert "12 s of it compiling" in _compiling_clause(12.3)
