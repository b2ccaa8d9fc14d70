"""The array-module kernels (``kernels/_array_forms``) against the compiled ones.

They run on the GPU backend; here they run with NumPy as the array module and
must give the compiled Gram matrix and gradient contraction to rounding. The
Gram entries come from per-column sums of squared differences, as in the
compiled code, but of centred inputs (bound below). The contraction sums ``n^2`` terms
in another order and, for the length scales, as a difference of two sums of
the order of ``sum |W| |x|^2``; its error is bounded by ``n eps`` times that
scale, and ``1e-10`` of it is a wide margin at these sizes.
"""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.kernels._array_forms import (
    array_gram,
    array_kernel_columns,
    array_lowrank_grad_contract,
)
from skgp_bayes.linalg import lowrank_grad_contract

BASES = {
    "rbf": lambda ls: RBF(ls),
    "matern12": lambda ls: Matern(ls, nu=0.5),
    "matern32": lambda ls: Matern(ls, nu=1.5),
    "matern52": lambda ls: Matern(ls, nu=2.5),
}


def _kernel(base, ard, noise):
    kernel = ConstantKernel(1.7) * BASES[base]([0.6, 1.3, 2.1] if ard else 0.9)
    return kernel + WhiteKernel(0.2) if noise else kernel


def _inputs(n=57):
    rng = np.random.default_rng(0)
    # far from the origin, with a duplicated row and a near-duplicate: the
    # centring and the column-wise distances must keep those exact
    X = 100.0 + rng.normal(size=(n, 3))
    X[5] = X[4]
    X[7] = X[6] + 1e-9
    return X


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("ard", [False, True])
def test_kernel_columns_match_the_compiled_cross_kernel(base, ard):
    # with a WhiteKernel, which a cross-kernel column leaves out
    adapter = KernelAdapter(_kernel(base, ard, True))
    X = _inputs()
    theta = adapter.kernel.theta
    column = array_kernel_columns(adapter, theta, X, np)
    # the same per-coordinate rounding bound as the Gram matrix (below)
    length_scales = np.exp(theta[1:4] if ard else theta[1:2])
    eps_x = np.finfo(float).eps * np.abs(X).max() / length_scales.min()
    for i in (0, 4, 5, 6, 56):
        expected = adapter.cross(theta, X, X[i : i + 1])[:, 0]
        np.testing.assert_allclose(column(i), expected, rtol=0, atol=64 * 1.7 * eps_x)
        # exact on its own row: a pivot's entry is k(0), the variance
        assert column(i)[i] == expected[i]
    assert column(4)[5] == column(4)[4]  # and on a duplicated input


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("ard", [False, True])
@pytest.mark.parametrize("noise", [False, True])
@pytest.mark.parametrize("block_entries", [2**25, 57 * 10])
def test_gram_matches_compiled(base, ard, noise, block_entries):
    adapter = KernelAdapter(_kernel(base, ard, noise))
    assert adapter.is_fast
    X = _inputs()
    theta = adapter.kernel.theta
    got = array_gram(adapter, theta, X, np, block_entries=block_entries)
    # The compiled code differences the raw inputs, these the centred ones:
    # each coordinate difference then differs by about eps |x| / ell, and k
    # by its slope (at most 1 for these kernels) times that, times variance.
    length_scales = np.exp(theta[1:4] if ard else theta[1:2])
    eps_x = np.finfo(float).eps * np.abs(X).max() / length_scales.min()
    expected = adapter.gram(theta, X)
    np.testing.assert_allclose(got, expected, rtol=0, atol=64 * 1.7 * eps_x)
    np.testing.assert_array_equal(got, got.T)


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("ard", [False, True])
@pytest.mark.parametrize("noise", [False, True])
@pytest.mark.parametrize("block_entries", [2**25, 57 * 10])
def test_lowrank_contraction_matches_compiled(base, ard, noise, block_entries):
    adapter = KernelAdapter(_kernel(base, ard, noise))
    X = _inputs()
    rng = np.random.default_rng(1)
    U, V = rng.normal(size=(57, 4)), rng.normal(size=(57, 4))
    theta = adapter.kernel.theta
    got = array_lowrank_grad_contract(
        adapter, theta, X, U, V, np, block_entries=block_entries
    )
    expected = lowrank_grad_contract(adapter, theta, X, U, V)
    # scale of the summed terms: sum |U V'| |dK/dtheta| with dK bounded by
    # the variance times (1 + max scaled squared distance)
    Xs = X / np.exp(theta[1:4] if ard else theta[1])
    spread = np.max(np.sum((Xs - Xs.mean(0)) ** 2, axis=1))
    scale = np.abs(U @ V.T).sum() * 1.7 * (1.0 + 4.0 * spread)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10 * scale)
    assert got.shape == theta.shape
