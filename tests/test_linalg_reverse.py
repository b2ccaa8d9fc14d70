"""Reverse-mode Cholesky against finite differences and known gradients."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skgp_bayes.linalg.reverse import cholesky_reverse


def _spd(n, rng, cond=10.0):
    # Spread eigenvalues over [1, cond] so the finite differences stay
    # accurate while the matrix is far from diagonal.
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * np.geomspace(1.0, cond, n)) @ q.T


def _sym(n, rng):
    a = rng.standard_normal((n, n))
    return a + a.T


# 150 is past NOGIL_MIN_ROWS, where the congruence is one dsygst call.
@pytest.mark.parametrize("n", [1, 2, 5, 12, 150])
def test_matches_finite_differences_of_linear_functional(n):
    rng = np.random.default_rng(n)
    K = _spd(n, rng)
    G = rng.standard_normal((n, n))

    def F(mat):
        return np.sum(G * np.linalg.cholesky(mat))

    # Lbar is dF/dL = G; its upper triangle must be ignored.
    Kbar = cholesky_reverse(np.linalg.cholesky(K), G)
    assert_allclose(Kbar, Kbar.T, rtol=0, atol=1e-14)
    h = 1e-6
    for _ in range(5):
        dK = _sym(n, rng)
        fd = (F(K + h * dK) - F(K - h * dK)) / (2 * h)
        assert_allclose(np.sum(Kbar * dK), fd, rtol=1e-6, atol=1e-8)


def test_upper_triangle_of_lbar_is_ignored():
    rng = np.random.default_rng(1)
    K = _spd(6, rng)
    L = np.linalg.cholesky(K)
    Lbar = rng.standard_normal((6, 6))
    assert_allclose(cholesky_reverse(L, Lbar), cholesky_reverse(L, np.tril(Lbar)))


def test_log_det_gradient_is_half_inverse():
    rng = np.random.default_rng(2)
    K = _spd(8, rng, cond=100.0)
    L = np.linalg.cholesky(K)
    Kbar = cholesky_reverse(L, np.diag(1.0 / np.diag(L)))
    assert_allclose(Kbar, 0.5 * np.linalg.inv(K), rtol=1e-10, atol=1e-12)


def test_quadratic_form_through_whitened_latent():
    # F(K) = g' L nu, the whitened-latent chain rule of the design notes,
    # with Lbar = tril(g nu').
    rng = np.random.default_rng(3)
    n = 7
    K = _spd(n, rng)
    g, nu = rng.standard_normal(n), rng.standard_normal(n)

    def F(mat):
        return g @ np.linalg.cholesky(mat) @ nu

    Kbar = cholesky_reverse(np.linalg.cholesky(K), np.tril(np.outer(g, nu)))
    h = 1e-6
    for _ in range(3):
        dK = _sym(n, rng)
        fd = (F(K + h * dK) - F(K - h * dK)) / (2 * h)
        assert_allclose(np.sum(Kbar * dK), fd, rtol=1e-6, atol=1e-8)


def test_nonlinear_functional():
    rng = np.random.default_rng(4)
    n = 6
    K = _spd(n, rng)
    b = rng.standard_normal(n)

    def F(mat):
        L = np.linalg.cholesky(mat)
        return np.sum(np.sin(L)) + np.sum(np.log(np.diag(L)) ** 2) + b @ L @ b

    L = np.linalg.cholesky(K)
    Lbar = np.tril(np.cos(L)) + np.diag(2 * np.log(np.diag(L)) / np.diag(L))
    Lbar += np.tril(np.outer(b, b))
    Kbar = cholesky_reverse(L, Lbar)
    h = 1e-6
    for _ in range(3):
        dK = _sym(n, rng)
        fd = (F(K + h * dK) - F(K - h * dK)) / (2 * h)
        assert_allclose(np.sum(Kbar * dK), fd, rtol=1e-6, atol=1e-8)


def test_rejects_bad_shapes():
    with pytest.raises(ValueError, match="square"):
        cholesky_reverse(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="shape of L"):
        cholesky_reverse(np.eye(3), np.eye(2))
