"""The compiled per-draw sparse moments against the generic NumPy path."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.gaussian_process.kernels import RBF, Matern, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgp_bayes._threads import one_blas_thread
from skgp_bayes.exceptions import NotPSDError
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.predictive.sparse import sparse_draw_moments

KERNELS = [
    C(2.0) * RBF([1.0, 2.0, 0.5]),
    C(1.0) * Matern(1.0, nu=1.5) + WhiteKernel(0.1),
    RBF(1.0),
]


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_compiled_draw_moments_equal_generic(kernel):
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(50, 3)), rng.normal(size=(7, 3))
    thetas = kernel.theta + 0.1 * rng.normal(size=(20, kernel.theta.size))
    v = rng.normal(size=(20, 7, 2))
    fast = KernelAdapter(kernel)
    assert fast.is_fast
    generic = KernelAdapter(kernel, _force_generic=True)
    m1, s1 = sparse_draw_moments(fast, Z, 1e-6, thetas, v, X)
    m2, s2 = sparse_draw_moments(generic, Z, 1e-6, thetas, v, X)
    assert m1.shape == (20, 50, 2) and s1.shape == (20, 50)
    assert_allclose(m1, m2, rtol=0, atol=1e-12)
    assert_allclose(s1, s2, rtol=1e-12)


def test_compiled_draw_moments_raise_on_singular_inducing_gram():
    # Two identical inducing inputs and no jitter: K(Z, Z) is singular.
    Z = np.zeros((2, 1))
    adapter = KernelAdapter(RBF(1.0))
    with pytest.raises(NotPSDError):
        sparse_draw_moments(
            adapter, Z, 0.0, np.zeros((1, 1)), np.ones((1, 2, 1)), np.ones((3, 1))
        )


@pytest.mark.parametrize("threads", [2, 3, 25])
def test_draws_on_threads_give_the_same_moments(threads):
    # Each thread takes a contiguous share of the draws (more threads than
    # draws: one each); with BLAS on one thread every draw's arithmetic is
    # the one thread's, so the moments agree to the bit.
    rng = np.random.default_rng(1)
    kernel = C(2.0) * RBF([1.0, 2.0, 0.5])
    X, Z = rng.normal(size=(40, 3)), rng.normal(size=(9, 3))
    thetas = kernel.theta + 0.1 * rng.normal(size=(20, kernel.theta.size))
    v = rng.normal(size=(20, 9, 2))
    adapter = KernelAdapter(kernel)
    with one_blas_thread():
        serial = sparse_draw_moments(adapter, Z, 1e-6, thetas, v, X)
        threaded = sparse_draw_moments(adapter, Z, 1e-6, thetas, v, X, threads=threads)
    np.testing.assert_array_equal(threaded[0], serial[0])
    np.testing.assert_array_equal(threaded[1], serial[1])


def test_a_singular_draw_on_a_thread_raises():
    Z = np.zeros((2, 1))
    thetas = np.zeros((4, 1))
    with pytest.raises(NotPSDError):
        sparse_draw_moments(
            KernelAdapter(RBF(1.0)), Z, 0.0, thetas, np.ones((4, 2, 1)), Z, threads=2
        )
