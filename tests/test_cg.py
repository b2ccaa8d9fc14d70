import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.kernels import KernelAdapter, force_generic
from skgp_bayes.linalg import (
    LowRankPreconditioner,
    batched_cg,
    kernel_operator,
    kernel_preconditioner,
    pivoted_cholesky,
)


@pytest.fixture(scope="module")
def system():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (50, 2))
    adapter = KernelAdapter(ConstantKernel(1.5) * RBF([0.7, 1.3]))
    theta = adapter.kernel.theta
    K = adapter.gram(theta, X) + 0.05 * np.eye(50)
    B = rng.normal(size=(50, 4))
    return adapter, theta, X, K, B


def test_cg_matches_direct_solve(system):
    _, _, _, K, B = system
    res = batched_cg(lambda V: K @ V, B, tol=1e-10, max_iter=500)
    assert res.converged.all()
    np.testing.assert_allclose(res.x, np.linalg.solve(K, B), rtol=1e-7, atol=1e-8)
    assert np.all(res.residual <= 1e-10)


def test_batched_equals_column_by_column(system):
    _, _, _, K, B = system
    together = batched_cg(lambda V: K @ V, B, tol=1e-10, max_iter=500).x
    for j in range(B.shape[1]):
        alone = batched_cg(lambda V: K @ V, B[:, j], tol=1e-10, max_iter=500).x
        np.testing.assert_allclose(together[:, j], alone, rtol=1e-7, atol=1e-8)


def test_warm_start_from_solution_needs_no_iteration(system):
    _, _, _, K, B = system
    exact = np.linalg.solve(K, B)
    res = batched_cg(lambda V: K @ V, B, x0=exact, tol=1e-8)
    assert res.n_iter == 0
    cold = batched_cg(lambda V: K @ V, B, tol=1e-8)
    near = batched_cg(lambda V: K @ V, B, x0=exact + 1e-6, tol=1e-8)
    assert near.n_iter < cold.n_iter


def test_non_convergence_warns_with_residual(system):
    _, _, _, K, B = system
    with pytest.warns(ConvergenceWarning, match="relative residual of [0-9.e-]+"):
        res = batched_cg(lambda V: K @ V, B, max_iter=3)
    assert not res.converged.any()
    assert res.n_iter == 3
    # the reported residual is the true one
    true = np.linalg.norm(B - K @ res.x, axis=0) / np.linalg.norm(B, axis=0)
    np.testing.assert_allclose(res.residual, true, rtol=1e-6)


def test_zero_right_hand_side_gives_zero_without_warning(system):
    _, _, _, K, B = system
    B = B.copy()
    B[:, 1] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = batched_cg(lambda V: K @ V, B, x0=np.ones_like(B))
        only_zero = batched_cg(lambda V: K @ V, np.zeros(50))
    np.testing.assert_array_equal(res.x[:, 1], 0.0)
    assert res.residual[1] == 0.0
    np.testing.assert_array_equal(only_zero.x, 0.0)
    assert only_zero.n_iter == 0


def test_nan_matvec_raises(system):
    _, _, _, K, B = system

    def broken(V):
        out = K @ V
        out[3] = np.nan
        return out

    with pytest.raises(FloatingPointError, match="NaN"):
        batched_cg(broken, B)


def test_indefinite_matrix_raises():
    A = np.diag([1.0, -1.0])
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        batched_cg(lambda V: A @ V, np.array([0.0, 1.0]))


def test_shape_mismatch_of_warm_start(system):
    _, _, _, K, B = system
    with pytest.raises(ValueError, match="x0 must have shape"):
        batched_cg(lambda V: K @ V, B, x0=np.zeros((50, 2)))


@pytest.mark.parametrize(
    "kernel",
    [
        ConstantKernel(2.0) * RBF(0.8) + WhiteKernel(0.1),
        Matern(1.1, nu=1.5),
    ],
)
@pytest.mark.parametrize("generic", [False, True])
def test_kernel_operator_storages_agree(kernel, generic):
    adapter = force_generic(kernel) if generic else KernelAdapter(kernel)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    V = rng.normal(size=(40, 3))
    theta = adapter.kernel.theta
    expected = (kernel(X) + 0.2 * np.eye(40)) @ V
    for storage in ("dense", "matrix_free", "auto"):
        op, stored = kernel_operator(adapter, theta, X, 0.2, storage=storage)
        np.testing.assert_allclose(op(V), expected, rtol=1e-10, atol=1e-12)
        assert stored == (storage != "matrix_free")
    op, stored = kernel_operator(adapter, theta, X, 0.2, max_bytes=100)
    assert not stored
    with pytest.raises(ValueError, match="storage must be"):
        kernel_operator(adapter, theta, X, 0.2, storage="sparse")


def test_matrix_free_cg_solves_kernel_system(system):
    adapter, theta, X, K, B = system
    op, _ = kernel_operator(adapter, theta, X, 0.05, storage="matrix_free")
    res = batched_cg(op, B, tol=1e-10, max_iter=500)
    np.testing.assert_allclose(res.x, np.linalg.solve(K, B), rtol=1e-7, atol=1e-8)


def test_pivoted_cholesky_is_exact_on_its_pivots_and_for_low_rank():
    rng = np.random.default_rng(1)
    G = rng.normal(size=(30, 4))
    A = G @ G.T
    L, rest = pivoted_cholesky(np.diag(A), lambda i: A[:, i], 10)
    assert L.shape == (30, 4)  # stops once the remaining trace is round-off
    np.testing.assert_allclose(L @ L.T, A, atol=1e-10)
    assert np.all(rest >= 0) and rest.max() < 1e-9
    # a full-rank matrix: rank-k factor matches A on the first pivot's row
    K = RBF(0.5)(rng.uniform(-2, 2, (40, 1))) + 1e-6 * np.eye(40)
    L, rest = pivoted_cholesky(np.diag(K), lambda i: K[:, i], 6)
    assert L.shape == (40, 6)
    i = int(np.argmax(np.diag(K)))
    np.testing.assert_allclose((L @ L.T)[i], K[i], atol=1e-12)
    np.testing.assert_allclose(rest, np.diag(K) - np.sum(L * L, axis=1), atol=1e-12)
    with pytest.raises(FloatingPointError, match="NaN"):
        pivoted_cholesky(np.ones(3), lambda i: np.full(3, np.nan), 2)

    # a non-finite column after finite ones, NaN or infinite, and at the last
    # step: finiteness is checked once, on the finished factor
    def column_with(bad, at):
        return lambda i: np.full(40, bad) if i == at else K[:, i]

    pivots = []
    pivoted_cholesky(np.diag(K), lambda i: pivots.append(i) or K[:, i], 2)
    for bad in (np.nan, np.inf):
        for rank in (2, 6):
            with pytest.raises(FloatingPointError, match="NaN or infinite"):
                pivoted_cholesky(np.diag(K), column_with(bad, pivots[1]), rank)


def test_low_rank_preconditioner_solves_exactly():
    rng = np.random.default_rng(2)
    L, D = rng.normal(size=(20, 3)), rng.uniform(0.1, 1.0, 20)
    P = LowRankPreconditioner(L, D)
    V = rng.normal(size=(20, 4))
    dense = L @ L.T + np.diag(D)
    np.testing.assert_allclose(P.solve(V), np.linalg.solve(dense, V), rtol=1e-10)
    np.testing.assert_allclose(P(V[:, 0]), np.linalg.solve(dense, V[:, 0]), rtol=1e-10)
    assert LowRankPreconditioner(np.zeros((20, 0)), D).solve(V) == pytest.approx(
        V / D[:, None]
    )
    with pytest.raises(ValueError, match="positive"):
        LowRankPreconditioner(L, np.zeros(20))


@pytest.mark.parametrize(
    "kernel",
    [ConstantKernel(1.5) * RBF([0.7, 1.3]), RBF(0.9) + WhiteKernel(0.2)],
)
def test_preconditioned_cg_same_solution_fewer_iterations(kernel):
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, (150, 2))
    adapter = KernelAdapter(kernel)
    theta = adapter.kernel.theta
    noise = 1e-3
    A = adapter.gram(theta, X) + noise * np.eye(150)
    B = rng.normal(size=(150, 3))
    P = kernel_preconditioner(adapter, theta, X, noise, 40)
    # the preconditioner is built from the Gram's columns, WhiteKernel included
    L_dense = P.solve(np.eye(150))
    assert np.linalg.cond(L_dense @ A) < 1e-2 * np.linalg.cond(A)
    plain = batched_cg(lambda V: A @ V, B, tol=1e-10, max_iter=2000)
    fast = batched_cg(lambda V: A @ V, B, tol=1e-10, max_iter=2000, precondition=P)
    assert fast.converged.all()
    np.testing.assert_allclose(fast.x, np.linalg.solve(A, B), rtol=1e-6, atol=1e-7)
    assert fast.n_iter < plain.n_iter / 3
    # the residual reported is the true one, not the preconditioned one
    true = np.linalg.norm(B - A @ fast.x, axis=0) / np.linalg.norm(B, axis=0)
    np.testing.assert_allclose(fast.residual, true, rtol=0.05, atol=1e-13)
    with pytest.warns(ConvergenceWarning, match="relative residual"):
        batched_cg(lambda V: A @ V, B, max_iter=2, precondition=P)
    assert kernel_preconditioner(adapter, theta, X, noise, 0) is None
