"""The fixed-order sums that compiled and interpreted transitions share."""

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from skgp_bayes.inference._ordered_numba import (
    mixture_log_density,
    ordered_dot,
    ordered_matvec,
)
from skgp_bayes.inference.mode_jumps import ModeJumps


def _sequential(a, b):
    total = 0.0
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        total += x * y
    return total


@pytest.mark.parametrize("d", [1, 3, 6, 7, 16, 33])
def test_sums_are_in_index_order_at_any_alignment(d):
    # Python's floats add one product at a time, in index order: the
    # reference. A slice at an odd 8-byte offset is the case where some
    # BLAS kernels (OpenBLAS's Prescott ones) sum in another order.
    rng = np.random.default_rng(d)
    for _ in range(200):
        stream = rng.normal(size=2 * d + 1)
        a, b = stream[1 : d + 1], stream[d + 1 :]
        expected = _sequential(a, b)
        assert ordered_dot(a, b) == expected
        assert ordered_dot(a.copy(), b.copy()) == expected
        A = rng.normal(size=(d + 2, d))
        by_rows = ordered_matvec(A, a)
        assert by_rows.tolist() == [_sequential(row, a) for row in A]
        np.testing.assert_array_equal(by_rows, ordered_matvec(A, a.copy()))
        w = stream[: d + 2]  # aligned, where a and b are not
        by_columns = ordered_matvec(A.T, w)
        assert by_columns.tolist() == [_sequential(col, w) for col in A.T]
        np.testing.assert_allclose(by_rows, A @ a, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(by_columns, A.T @ w, rtol=1e-12, atol=1e-12)


def test_mixture_log_density_is_the_mixture_of_gaussians():
    rng = np.random.default_rng(0)
    k, d = 3, 4
    means = rng.normal(size=(k, d))
    factors = np.stack(
        [
            np.linalg.cholesky(np.eye(d) + 0.3 * (B @ B.T))
            for B in rng.normal(size=(k, d, d))
        ]
    )
    weights = np.array([0.2, 0.5, 0.3])
    jumps = ModeJumps(means, factors, np.log(weights))
    for x in rng.normal(size=(20, d)):
        expected = math.log(
            sum(
                w * multivariate_normal(m, L @ L.T).pdf(x)
                for w, m, L in zip(weights, means, factors, strict=True)
            )
        )
        arrays = jumps.as_arrays()
        value = mixture_log_density(x, arrays[3], arrays[4], arrays[5])
        assert value == jumps.log_q(x)
        assert math.isclose(value, expected, rel_tol=1e-10)
