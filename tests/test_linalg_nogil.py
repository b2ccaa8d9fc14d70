"""Triangular solves through BLAS without the interpreter lock."""

import numpy as np
import pytest
from scipy.linalg import solve_triangular

from skgp_bayes.linalg import cholesky, inverse_congruence, triangular_solve
from skgp_bayes.linalg._nogil_lapack import (
    DPOTRF,
    DPOTRS,
    DSYMM,
    NOGIL_MIN_ROWS,
    cholesky_lower_c,
    cholesky_solve_f,
    inverse_congruence_c,
    solve_lower_c,
    symmetric_product_upper_f,
)


def _lower(n, rng):
    A = rng.normal(size=(n, n))
    return np.linalg.cholesky(A @ A.T + n * np.eye(n))


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("shape", [(200,), (200, 1), (200, 37), (300, 300)])
def test_large_solves_match_scipy(shape, trans):
    rng = np.random.default_rng(0)
    L = _lower(shape[0], rng)
    rhs = rng.normal(size=shape)
    expected = solve_triangular(L, rhs, lower=True, trans=int(trans))
    got = triangular_solve(L, rhs, trans=trans)
    assert got.shape == rhs.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_fortran_ordered_and_strided_inputs():
    rng = np.random.default_rng(1)
    L = _lower(150, rng)
    rhs = rng.normal(size=(40, 150)).T  # a transposed view, not C-contiguous
    expected = solve_triangular(L, rhs, lower=True, trans=1)
    got = triangular_solve(np.asfortranarray(L), rhs, trans=True)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_inputs_are_not_overwritten():
    rng = np.random.default_rng(2)
    L = _lower(NOGIL_MIN_ROWS, rng)
    rhs = rng.normal(size=(NOGIL_MIN_ROWS, 3))
    L0, rhs0 = L.copy(), rhs.copy()
    triangular_solve(L, rhs)
    np.testing.assert_array_equal(L, L0)
    np.testing.assert_array_equal(rhs, rhs0)


def test_a_rhs_that_does_not_conform_gets_scipy_s_error():
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError):
        triangular_solve(_lower(200, rng), np.ones(199))


def test_the_kernels_release_the_interpreter_lock():
    assert solve_lower_c.targetoptions.get("nogil") is True
    assert cholesky_lower_c.targetoptions.get("nogil") is True
    assert inverse_congruence_c.targetoptions.get("nogil") is True


@pytest.mark.parametrize("n", [1, 2, 7, NOGIL_MIN_ROWS - 1, NOGIL_MIN_ROWS, 301])
def test_inverse_congruence_matches_the_explicit_inverse(n):
    # Both sides of the switch to dsygst, with garbage above the diagonal of
    # L and of S: only their lower triangles may be read.
    rng = np.random.default_rng(n)
    L = _lower(n, rng)
    S = rng.normal(size=(n, n))
    S = S + S.T
    Linv = np.linalg.inv(L)
    expected = Linv.T @ S @ Linv
    garbage = np.triu(rng.normal(size=(n, n)), 1)
    L_in, S_in = L + garbage, np.tril(S) + garbage
    got = inverse_congruence(L_in, S_in)
    np.testing.assert_array_equal(got, got.T)
    np.testing.assert_allclose(
        got, expected, rtol=0, atol=1e-11 * np.abs(expected).max()
    )
    np.testing.assert_array_equal(S_in, np.tril(S) + garbage)  # not overwritten


@pytest.mark.parametrize("n", [NOGIL_MIN_ROWS, 300])
def test_large_cholesky_matches_numpy_and_reads_the_lower_triangle(n):
    rng = np.random.default_rng(5)
    A = rng.normal(size=(n, n))
    K = A @ A.T + n * np.eye(n)
    garbage_above = np.tril(K) + np.triu(rng.normal(size=(n, n)), 1)
    L, jitter = cholesky(garbage_above)
    assert jitter == 0.0
    np.testing.assert_array_equal(np.triu(L, 1), 0.0)
    np.testing.assert_allclose(L, np.linalg.cholesky(K), rtol=1e-10, atol=1e-12)


def test_large_cholesky_reports_a_matrix_that_is_not_positive_definite():
    n = NOGIL_MIN_ROWS + 1
    K = np.eye(n)
    K[5, 5] = -1.0
    _, info = cholesky_lower_c(K, DPOTRF)
    assert info == 6  # LAPACK's one-based order of the failing minor


def test_inverse_congruence_rejects_shapes_that_do_not_conform():
    with pytest.raises(ValueError, match="square matrices of one size"):
        inverse_congruence(np.eye(3), np.eye(4))
    with pytest.raises(ValueError, match="square matrices of one size"):
        inverse_congruence(np.ones((3, 2)), np.ones((3, 2)))


@pytest.mark.parametrize("overwrite", [False, True])
def test_inverse_congruence_of_fortran_ordered_inputs_reads_their_lower_triangle(
    overwrite,
):
    # The routine works in C order; a Fortran-ordered S must not have its
    # upper triangle read in place of the lower one.
    rng = np.random.default_rng(11)
    n = NOGIL_MIN_ROWS + 5
    L = _lower(n, rng)
    S = rng.normal(size=(n, n))
    S = S + S.T
    garbage = np.triu(rng.normal(size=(n, n)), 1)
    S_in = np.asfortranarray(np.tril(S) + garbage)
    L_in = np.asfortranarray(L + garbage)
    Linv = np.linalg.inv(L)
    expected = Linv.T @ S @ Linv
    got = inverse_congruence(L_in, S_in, overwrite=overwrite)
    np.testing.assert_allclose(
        got, expected, rtol=0, atol=1e-11 * np.abs(expected).max()
    )


def test_inverse_congruence_overwrite_uses_the_arrays_handed_over():
    rng = np.random.default_rng(12)
    n = NOGIL_MIN_ROWS
    L = _lower(n, rng)
    S = rng.normal(size=(n, n))
    S = S + S.T
    expected = inverse_congruence(L, S)
    L_before, S_in = L.copy(), S.copy()
    got = inverse_congruence(L, S_in, overwrite=True)
    assert got is S_in  # the result is written over S
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(L, L_before)  # reversed, then restored


@pytest.mark.parametrize("n, k", [(1, 1), (7, 3), (300, 5)])
def test_cholesky_solve_f_solves_with_the_lower_triangle_only(n, k):
    rng = np.random.default_rng(n)
    L = _lower(n, rng)
    K = L @ L.T
    B = rng.normal(size=(n, k))
    factor = np.asfortranarray(L + np.triu(rng.normal(size=(n, n)), 1))
    got = B.copy(order="F")
    assert cholesky_solve_f(factor, got, DPOTRS) == 0
    np.testing.assert_allclose(K @ got, B, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n, k", [(1, 1), (7, 3), (300, 50)])
def test_symmetric_product_reads_the_upper_triangle_only(n, k):
    rng = np.random.default_rng(n)
    A = rng.normal(size=(n, n))
    A = A + A.T
    # Whatever sits below the diagonal (a Cholesky factor, say) is not read.
    stored = np.asfortranarray(np.triu(A) + np.tril(rng.normal(size=(n, n)), -1))
    B = np.asfortranarray(rng.normal(size=(n, k)))
    out = np.asfortranarray(np.full((n, k), np.nan))
    symmetric_product_upper_f(stored, B, out, DSYMM)
    np.testing.assert_allclose(out, A @ B, rtol=1e-12, atol=1e-12)
