"""K(Z, X) of the compiled sparse targets: the product form against the differences."""

import numpy as np
import pytest

from skgp_bayes.kernels._lowering import BASE_RBF
from skgp_bayes.targets._sparse_numba import (
    GEMM_MIN_COLUMNS,
    cross_kernel_values_into,
    kernel_values_into,
)


@pytest.mark.parametrize("d", [1, GEMM_MIN_COLUMNS - 1, GEMM_MIN_COLUMNS, 30])
def test_rbf_cross_kernel_matches_the_exact_differences(d):
    rng = np.random.default_rng(d)
    X = rng.normal(size=(70, d))
    Z = np.vstack([X[:5], rng.normal(size=(6, d))])  # some on training inputs
    for inv_ell in (0.3, 1.0, 4.0):
        Xs, Zs = X * inv_ell, Z * inv_ell
        exact, product = np.empty((11, 70)), np.empty((11, 70))
        kernel_values_into(Zs, Xs, 1.7, BASE_RBF, exact)
        cross_kernel_values_into(Zs, Xs, 1.7, BASE_RBF, product)
        # |z|^2 + |x|^2 - 2 z.x loses about eps (|z|^2 + |x|^2) to
        # cancellation; k moves by half that, relative. Here |x|^2 is at
        # most about 16 * 30 * 10, so 1e-11 relative is a bound with room.
        np.testing.assert_allclose(product, exact, rtol=1e-11, atol=1e-300)
        # an inducing input on a training input: the variance, within the
        # cancellation bound (a distance of rounding size, not exactly zero)
        bound = 4 * np.finfo(float).eps * np.max(np.sum(Xs * Xs, axis=1))
        np.testing.assert_allclose(np.diag(product[:5, :5]), 1.7, rtol=bound)


def test_other_radial_functions_keep_the_differences():
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(30, 8)), rng.normal(size=(4, 8))
    for base in range(1, 4):
        exact, cross = np.empty((4, 30)), np.empty((4, 30))
        kernel_values_into(Z, X, 1.0, base, exact)
        cross_kernel_values_into(Z, X, 1.0, base, cross)
        np.testing.assert_array_equal(cross, exact)
