"""Spectral draws for random Fourier features.

Statistical checks use fixed seeds. For features ``phi = sqrt(2 s2 / F)
cos(W x + b)`` one term of ``phi(x)' phi(x')`` is ``s2 (cos(w'(x - x')) +
cos(w'(x + x') + 2 b))``, whose second moment is at most ``1.5 s2^2`` (the
cross term vanishes because ``b`` is uniform). The Monte Carlo error of an
entry of ``Phi Phi'`` therefore has a standard deviation of at most
``s2 sqrt(1.5 / F)``; tolerances are 5 of those.
"""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from skgp_bayes.kernels import (
    has_spectral_density,
    lower_kernel,
    random_fourier_features,
    sample_spectral_frequencies,
)
from skgp_bayes.kernels.spectral import frequencies_from_spec, spectral_parameters
from skgp_bayes.sampling._numba import cos_poly

KERNELS = [
    ConstantKernel(1.7) * RBF(0.8),
    RBF([0.5, 2.0]),
    ConstantKernel(0.6) * Matern(1.2, nu=0.5),
    Matern([0.7, 1.5], nu=1.5) * ConstantKernel(2.0),
    ConstantKernel(1.3) * Matern([1.1, 0.4], nu=2.5),
    ConstantKernel(0.9) * RBF(1.0) + WhiteKernel(0.3),
]


def _points(rng, n=6):
    return rng.uniform(-1.5, 1.5, (n, 2))


def _smooth(kernel):
    """The kernel without its WhiteKernel, which random features leave out."""
    if isinstance(getattr(kernel, "k2", None), WhiteKernel):
        return kernel.k1
    return kernel


def _features(kernel, X, n_features, rng):
    W, s2 = sample_spectral_frequencies(kernel, n_features, X.shape[1], rng)
    b = rng.uniform(0.0, 2.0 * np.pi, n_features)
    return random_fourier_features(X, W, b, s2), s2


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_empirical_kernel_matches_exact(kernel):
    rng = np.random.RandomState(0)
    X = _points(rng)
    n_features = 40000
    Phi, s2 = _features(kernel, X, n_features, rng)
    exact = _smooth(kernel)(X)
    tol = 5 * s2 * np.sqrt(1.5 / n_features)
    np.testing.assert_allclose(Phi @ Phi.T, exact, atol=tol, rtol=0)


@pytest.mark.parametrize("kernel", KERNELS[:5], ids=repr)
def test_error_falls_fourfold_from_256_to_4096(kernel):
    # The RMS error of a mean of F iid terms is exactly proportional to
    # 1 / sqrt(F); averaging 30 replicates over 36 entries makes the ratio's
    # own spread about 5%, so [3.2, 5.0] fails only when the rate is wrong.
    rng = np.random.RandomState(1)
    X = _points(rng)
    exact = _smooth(kernel)(X)
    rms = {}
    for F in (256, 4096):
        errors = []
        for _ in range(30):
            Phi, _ = _features(kernel, X, F, rng)
            errors.append(np.mean((Phi @ Phi.T - exact) ** 2))
        rms[F] = np.sqrt(np.mean(errors))
    assert 3.2 < rms[256] / rms[4096] < 5.0


@pytest.mark.parametrize(
    "nu,ratio",
    [(np.inf, 1.0), (2.5, 5.0 / 3.0)],
    ids=["rbf", "matern52"],
)
def test_frequency_second_moments(nu, ratio):
    # Gaussian: Cov(w) = diag(ell^-2); Student-t with 5 degrees of freedom:
    # 5/3 diag(ell^-2). Matern 1/2 and 3/2 have no finite fourth moment, so
    # their second moments are checked through the kernel instead.
    ell = np.array([0.5, 2.0])
    kernel = RBF(ell) if np.isinf(nu) else Matern(ell, nu=nu)
    n = 200000
    W, _ = sample_spectral_frequencies(kernel, n, 2, random_state=0)
    expected = ratio / ell**2
    emp = np.mean(W**2, axis=0)
    # relative sd of a mean of w^2 is sqrt(kurtosis - 1) / sqrt(n): 3 for the
    # Gaussian, 9 for t_5 (kurtosis 9)
    kurt = 3.0 if np.isinf(nu) else 9.0
    np.testing.assert_allclose(emp, expected, rtol=5 * np.sqrt((kurt - 1) / n))
    assert np.all(np.abs(np.mean(W, axis=0)) < 5 * np.sqrt(emp / n))
    assert abs(np.corrcoef(W.T)[0, 1]) < 5 / np.sqrt(n)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_characteristic_function(nu):
    # E[cos(w' delta)] = k(delta) / s2: checks the Student-t draw at every
    # scale, including the heavy tails of nu = 0.5 and 1.5.
    rng = np.random.RandomState(3)
    ell = np.array([0.7, 1.6])
    kernel = Matern(ell, nu=nu)
    n = 100000
    W, _ = sample_spectral_frequencies(kernel, n, 2, rng)
    deltas = rng.uniform(-2, 2, (8, 2))
    emp = np.mean(np.cos(W @ deltas.T), axis=0)
    exact = kernel(deltas, np.zeros((1, 2)))[:, 0]
    np.testing.assert_allclose(emp, exact, atol=5 / np.sqrt(2 * n), rtol=0)


def test_isotropic_scale_is_shared_by_dimensions():
    W, s2 = sample_spectral_frequencies(
        ConstantKernel(3.0) * RBF(0.25), 50000, 3, random_state=0
    )
    assert s2 == pytest.approx(3.0)
    np.testing.assert_allclose(np.std(W, axis=0), 4.0, rtol=0.02)


def test_draws_are_reproducible():
    kernel = Matern([0.7, 1.5], nu=1.5)
    a = sample_spectral_frequencies(kernel, 64, 2, random_state=5)[0]
    b = sample_spectral_frequencies(kernel, 64, 2, random_state=5)[0]
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "kernel",
    [DotProduct(), RationalQuadratic(), RBF() + RBF(), Matern(nu=3.5), RBF() * RBF()],
    ids=repr,
)
def test_kernels_without_spectral_density_are_refused(kernel):
    assert not has_spectral_density(kernel)
    with pytest.raises(ValueError, match="no spectral density"):
        sample_spectral_frequencies(kernel, 10, 1)


def test_ard_dimension_mismatch():
    with pytest.raises(ValueError, match="3 features"):
        sample_spectral_frequencies(RBF([1.0, 2.0]), 10, 3)


def test_spectral_parameters_follow_theta():
    kernel = ConstantKernel(2.0) * Matern([1.0, 3.0], nu=2.5) + WhiteKernel(0.1)
    spec = lower_kernel(kernel)
    variance, inv_ell, noise = spectral_parameters(spec, kernel.theta, 2)
    assert variance == pytest.approx(2.0)
    np.testing.assert_allclose(inv_ell, [1.0, 1.0 / 3.0])
    assert noise == pytest.approx(0.1)
    W = frequencies_from_spec(spec, kernel.theta, 5, 2, np.random.RandomState(0))
    assert W.shape == (5, 2)


def test_compiled_cosine_matches_numpy():
    rng = np.random.RandomState(0)
    for scale in (1.0, 10.0, 1e3, 1e5):
        x = rng.uniform(-scale, scale, 200000)
        # a few ulp of the argument: the phase itself is no more precise
        tol = 4 * np.spacing(scale) + 4e-16
        np.testing.assert_allclose(cos_poly(x), np.cos(x), atol=tol, rtol=0)
    special = np.array([0.0, np.pi / 2, np.pi, -np.pi, 2 * np.pi, 1e-300, -3.5])
    np.testing.assert_allclose(cos_poly(special), np.cos(special), atol=1e-15)
