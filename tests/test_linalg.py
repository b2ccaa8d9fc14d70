import warnings

import numpy as np
import pytest
import scipy.linalg

from skgp_bayes.exceptions import NotPSDError, NumericalWarning
from skgp_bayes.linalg import (
    cho_inverse,
    cho_solve,
    cholesky,
    log_det_from_cholesky,
    triangular_solve,
)
from skgp_bayes.linalg._numba_ops import (
    TINY,
    flush_tiny,
    mirror_lower,
    residual_weight_from_lower_inverse,
)


def _spd(n, seed=0):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


def test_cholesky_solve_inverse_logdet():
    K = _spd(30)
    L, jitter = cholesky(K)
    assert jitter == 0.0
    np.testing.assert_allclose(L @ L.T, K, rtol=1e-12)
    b = np.arange(30.0)
    np.testing.assert_allclose(cho_solve(L, b), np.linalg.solve(K, b), rtol=1e-10)
    np.testing.assert_allclose(cho_inverse(L), np.linalg.inv(K), rtol=1e-9, atol=1e-14)
    assert log_det_from_cholesky(L) == pytest.approx(np.linalg.slogdet(K)[1])


def test_jitter_ladder_warns_with_amount():
    # rank-deficient Gram matrix of a linear kernel (scikit-learn's example)
    x = np.arange(12.0)[:, None]
    K = x @ x.T
    with pytest.warns(NumericalWarning, match=r"added jitter .* to the diagonal"):
        L, jitter = cholesky(K)
    assert jitter > 0
    np.testing.assert_allclose(L @ L.T, K + jitter * np.eye(12), rtol=1e-8, atol=1e-8)


def test_quiet_mode_returns_jitter_without_warning():
    x = np.arange(5.0)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, jitter = cholesky(x @ x.T, warn=False)
    assert jitter > 0


def test_not_psd_error_names_context():
    with pytest.raises(NotPSDError, match="length_scale=3"):
        cholesky(-np.eye(3), context="length_scale=3")
    with pytest.raises(NotPSDError, match="non-finite"):
        cholesky(np.full((2, 2), np.nan))


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_flush_tiny_zeroes_only_entries_below_tiny_in_place(layout):
    rng = np.random.default_rng(4)
    values = np.array([0.0, 5e-324, -1e-300, 0.5 * TINY, TINY, -TINY, 1e-200, -2.0])
    base = rng.choice(values, size=(9, 12))
    matrix = {
        "C": base.copy(),
        "F": np.asfortranarray(base),
        "strided": np.repeat(base, 2, axis=1)[:, ::2],
    }[layout]
    assert flush_tiny(matrix) is None
    expected = np.where(np.abs(base) < TINY, 0.0, base)
    np.testing.assert_array_equal(matrix, expected)
    # the entries at TINY itself are kept: the rule is strict
    assert np.count_nonzero(np.abs(matrix) == TINY) == np.count_nonzero(
        np.abs(base) == TINY
    )


def test_residual_weight_kernel():
    K = _spd(25, seed=2)
    L, _ = cholesky(K)
    alpha = cho_solve(L, np.ones(25))
    from scipy.linalg import lapack

    inv_lower, _ = lapack.dpotri(L, lower=1)
    W = inv_lower.copy()
    assert residual_weight_from_lower_inverse(W, alpha) is None
    assert mirror_lower(W) is None
    np.testing.assert_allclose(
        W, np.outer(alpha, alpha) - np.linalg.inv(K), rtol=1e-9, atol=1e-12
    )


def test_unique_rows_is_numpys_unique_over_rows():
    from skgp_bayes.linalg.rows import unique_rows

    rng = np.random.default_rng(0)
    for _ in range(200):
        n, d = int(rng.integers(1, 40)), int(rng.integers(1, 5))
        X = np.round(rng.normal(size=(n, d)), int(rng.integers(0, 2)))
        X[int(rng.integers(0, n))] = -0.0 * X[0]  # signed zeros are equal
        expected = np.unique(X, axis=0, return_index=True, return_inverse=True)
        got = unique_rows(X, return_index=True, return_inverse=True)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])
        np.testing.assert_array_equal(got[2], expected[2].ravel())
    with pytest.raises(ValueError, match="2-D"):
        unique_rows(np.ones(3))


def test_unique_rows_lets_an_interrupt_through_as_keyboard_interrupt():
    # In this loop np.unique(axis=0) turned 54 of 500 interrupts into a
    # TypeError (its structured-array comparison; NumPy 2.4); every one must
    # arrive as it was sent.
    import signal

    from skgp_bayes.linalg.rows import unique_rows

    X = np.round(np.random.default_rng(0).normal(size=(120, 4)), 3)
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    outcomes = []
    try:
        for k in range(500):
            try:
                signal.setitimer(signal.ITIMER_REAL, 1e-4 + 3e-6 * (k % 100))
                while True:
                    unique_rows(X, return_index=True)
            except KeyboardInterrupt:
                outcomes.append("interrupt")
            except Exception as error:  # noqa: BLE001 - the fault this test guards
                outcomes.append(type(error).__name__)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert outcomes == ["interrupt"] * 500


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("rhs_shape", [(7,), (7, 3)])
@pytest.mark.parametrize("trans", [False, True])
def test_small_triangular_solve_is_scipys_to_the_bit(order, rhs_shape, trans):
    # Small systems call LAPACK's dtrtrs directly, with the arguments
    # SciPy's solve_triangular passes it: the result must be SciPy's, bit
    # for bit, and a zero on the diagonal must raise LinAlgError.
    rng = np.random.default_rng(7)
    A = rng.normal(size=(7, 7))
    L = np.array(np.linalg.cholesky(A @ A.T + 7 * np.eye(7)), order=order)
    rhs = rng.normal(size=rhs_shape)
    expected = scipy.linalg.solve_triangular(L, rhs, lower=True, trans=int(trans))
    np.testing.assert_array_equal(triangular_solve(L, rhs, trans=trans), expected)
    L[3, 3] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        triangular_solve(L, rhs, trans=trans)
