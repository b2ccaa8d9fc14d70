"""Spectral draws for random Fourier features.

Statistical checks (``@pytest.mark.statistical``) offset their seeds by
``stat_seed``. For features ``phi = sqrt(2 s2 / F)
cos(W x + b)`` one term of ``phi(x)' phi(x')`` is ``s2 (cos(w'(x - x')) +
cos(w'(x + x') + 2 b))``, whose second moment is at most ``1.5 s2^2`` (the
cross term vanishes because ``b`` is uniform). The Monte Carlo error of an
entry of ``Phi Phi'`` therefore has a standard deviation of at most
``s2 sqrt(1.5 / F)``; tolerances are 5 of those, a two-sided normal tail of
5.7e-7 per entry (the terms are bounded, so the normal approximation holds).
"""

import numpy as np
import pytest
from scipy import stats
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
from skgp_bayes.kernels.spectral import (
    _own_count,
    _tail_width,
    frequencies_from_spec,
    spectral_parameters,
    weighted_frequencies,
)
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


@pytest.mark.statistical
@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_empirical_kernel_matches_exact(kernel, stat_seed):
    # 21 distinct entries at 5 SE: false failure below 21 x 5.7e-7 ~ 1e-5.
    rng = np.random.RandomState(stat_seed)
    X = _points(rng)
    n_features = 40000
    Phi, s2 = _features(kernel, X, n_features, rng)
    exact = _smooth(kernel)(X)
    tol = 5 * s2 * np.sqrt(1.5 / n_features)
    np.testing.assert_allclose(Phi @ Phi.T, exact, atol=tol, rtol=0)


@pytest.mark.statistical
@pytest.mark.parametrize("kernel", KERNELS[:5], ids=repr)
def test_error_falls_fourfold_from_256_to_4096(kernel, stat_seed):
    # The mean squared error of a mean of F iid terms is exactly
    # proportional to 1 / F, so the RMS errors over R replicates have a
    # ratio of 4 up to their Monte Carlo error. The standard error of each
    # mean square is the replicates' sd / sqrt(R), that of its log by the
    # delta method, and log RMS is half of it; 5 of the combined standard
    # errors of log(ratio) (about 0.045 at R = 120; 30 replicates left 0.09,
    # so the former bounds [3.2, 5.0] were 2.4 of them): false failure
    # 5.7e-7 in the normal approximation of a mean of 120 squares.
    rng = np.random.RandomState(1 + stat_seed)
    X = _points(rng)
    exact = _smooth(kernel)(X)
    log_rms, var_log_rms = {}, {}
    for F in (256, 4096):
        errors = []
        for _ in range(120):
            Phi, _ = _features(kernel, X, F, rng)
            errors.append(np.mean((Phi @ Phi.T - exact) ** 2))
        errors = np.array(errors)
        log_rms[F] = 0.5 * np.log(errors.mean())
        rel_se = errors.std(ddof=1) / np.sqrt(errors.size) / errors.mean()
        var_log_rms[F] = (0.5 * rel_se) ** 2
    se = np.sqrt(var_log_rms[256] + var_log_rms[4096])
    assert abs(log_rms[256] - log_rms[4096] - np.log(4.0)) < 5 * se
    # and the check is informative: 5 SE is well below the log(2) that a
    # 1 / F^(1/4) rate would give
    assert 5 * se < 0.5 * np.log(2.0)


@pytest.mark.statistical
@pytest.mark.parametrize("nu", [np.inf, 2.5], ids=["rbf", "matern52"])
def test_frequency_distribution(nu, stat_seed):
    # RBF: w ell ~ N(0, I). Matern nu: w ell = z sqrt(2 nu / u) with u ~
    # chi2(2 nu), a multivariate t with 2 nu degrees of freedom, so each
    # marginal is t(2 nu) and |w ell|^2 / 2 is F(2, 2 nu) (chi2(2) / 2 for
    # the Gaussian), which checks the shared mixing variable too. A KS
    # p-value of a continuous law is uniform: p > 1e-6 on 3 laws is a
    # false failure of 3e-6. With 200,000 draws the KS test detects a scale
    # error of about 3%. (Moments would not do for t(5): its w^2 has no
    # third moment, and one extreme draw beyond 5 CLT standard errors has
    # probability 3e-4, not 6e-7.)
    ell = np.array([0.5, 2.0])
    kernel = RBF(ell) if np.isinf(nu) else Matern(ell, nu=nu)
    n = 200000
    W, _ = sample_spectral_frequencies(kernel, n, 2, random_state=stat_seed)
    scaled = W * ell
    marginal = stats.norm() if np.isinf(nu) else stats.t(2 * nu)
    radial = stats.chi2(2, scale=0.5) if np.isinf(nu) else stats.f(2, 2 * nu)
    for d in range(2):
        assert stats.kstest(scaled[:, d], marginal.cdf).pvalue > 1e-6
    assert stats.kstest(np.sum(scaled**2, axis=1) / 2, radial.cdf).pvalue > 1e-6
    if np.isinf(nu):
        # Gaussian second moments: the relative sd of a mean of w^2 is
        # sqrt(2 / n), of a mean sqrt(1 / n) in units of the sd, of a
        # correlation 1 / sqrt(n); 5 of them on 5 numbers: false failure
        # 5 x 5.7e-7.
        expected = 1 / ell**2
        emp = np.mean(W**2, axis=0)
        np.testing.assert_allclose(emp, expected, rtol=5 * np.sqrt(2 / n))
        assert np.all(np.abs(np.mean(W, axis=0)) < 5 * np.sqrt(expected / n))
        assert abs(np.corrcoef(W.T)[0, 1]) < 5 / np.sqrt(n)


@pytest.mark.statistical
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_characteristic_function(nu, stat_seed):
    # E[cos(w' delta)] = k(delta) / s2: checks the Student-t draw at every
    # scale, including the heavy tails of nu = 0.5 and 1.5. Var cos(w'
    # delta) = (1 + k(2 delta)) / 2 - k(delta)^2 <= 1/2, since k(2 delta)
    # <= k(delta)^2 for these Matern kernels; so the standard error is at
    # most 1 / sqrt(2 n), and 5 of them on 8 bounded means give a false
    # failure below 8 x 5.7e-7.
    rng = np.random.RandomState(3 + stat_seed)
    ell = np.array([0.7, 1.6])
    kernel = Matern(ell, nu=nu)
    n = 100000
    W, _ = sample_spectral_frequencies(kernel, n, 2, rng)
    deltas = rng.uniform(-2, 2, (8, 2))
    emp = np.mean(np.cos(W @ deltas.T), axis=0)
    exact = kernel(deltas, np.zeros((1, 2)))[:, 0]
    np.testing.assert_allclose(emp, exact, atol=5 / np.sqrt(2 * n), rtol=0)


@pytest.mark.statistical
def test_isotropic_scale_is_shared_by_dimensions(stat_seed):
    n = 50000
    W, s2 = sample_spectral_frequencies(
        ConstantKernel(3.0) * RBF(0.25), n, 3, random_state=stat_seed
    )
    assert s2 == pytest.approx(3.0)
    # relative standard error of a Gaussian sd: 1 / sqrt(2 n); 5 of them on
    # 3 dimensions: false failure 3 x 5.7e-7
    np.testing.assert_allclose(np.std(W, axis=0), 4.0, rtol=5 / np.sqrt(2 * n))


@pytest.mark.parametrize("nu", [np.inf, 0.5, 1.5, 2.5])
@pytest.mark.parametrize("n_dims", [1, 3])
def test_weights_are_the_density_ratio(nu, n_dims):
    # The weight of frequency w is p(w) / (c p(w) + (1 - c) p_rho(w)), with p
    # the kernel's normalised spectral density (a Gaussian, or a
    # multivariate t with 2 nu degrees of freedom, scale 1 / ell) and p_rho
    # the same with scale rho / ell; checked against scipy's densities.
    ell = np.array([0.7, 1.6, 0.3])[:n_dims]
    kernel = RBF(ell) if np.isinf(nu) else Matern(ell, nu=nu)
    spec = lower_kernel(kernel)
    n = 401  # odd: the shares are not exactly 3/4 and 1/4
    W, weights = weighted_frequencies(
        spec, kernel.theta, n, n_dims, np.random.RandomState(0)
    )
    rho = _tail_width(n_dims)

    def density(scale):
        cov = np.diag((scale / ell) ** 2)
        if np.isinf(nu):
            return stats.multivariate_normal(np.zeros(n_dims), cov).logpdf(W)
        return stats.multivariate_t(np.zeros(n_dims), cov, df=2 * nu).logpdf(W)

    own = _own_count(n)
    share = own / n
    log_p, log_wide = np.atleast_1d(density(1.0)), np.atleast_1d(density(rho))
    log_q = np.logaddexp(np.log(share) + log_p, np.log1p(-share) + log_wide)
    expected = np.exp(log_p - log_q)
    np.testing.assert_allclose(weights, expected, rtol=1e-10)
    assert np.all(weights <= 1 / share + 1e-12)
    # the first share are draws from p itself, the frequencies_from_spec draws
    same = frequencies_from_spec(
        spec, kernel.theta, n, n_dims, np.random.RandomState(0)
    )
    np.testing.assert_array_equal(W[:own], same[:own])
    np.testing.assert_allclose(W[own:], rho * same[own:], rtol=1e-15)


@pytest.mark.statistical
@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_weighted_features_estimate_the_kernel(kernel, stat_seed):
    # One weighted term s2 a (cos(w'(x - x')) + cos(w'(x + x') + 2 b)) has a
    # second moment of at most 1.5 s2^2 E[a^2]: with a <= 1 / c = 4/3 that
    # is 2.67 s2^2 for the draws from p, and (since a p_rho <= p / (1 - c))
    # at most 1.5 s2^2 / (c (1 - c)) = 8 s2^2 for the wide ones; so an
    # entry's standard deviation is at most s2 sqrt((0.75 * 2.67 + 0.25 * 8)
    # / F) = 2 s2 / sqrt(F). 5 of them on 21 entries: false failure 1.2e-5.
    rng = np.random.RandomState(5 + stat_seed)
    X = _points(rng)
    n_features = 40000
    spec = lower_kernel(kernel)
    W, weights = weighted_frequencies(spec, kernel.theta, n_features, 2, rng)
    s2 = spectral_parameters(spec, kernel.theta, 2)[0]
    b = rng.uniform(0.0, 2.0 * np.pi, n_features)
    Phi = random_fourier_features(X, W, b, s2) * np.sqrt(weights)
    tol = 5 * 2 * s2 / np.sqrt(n_features)
    np.testing.assert_allclose(Phi @ Phi.T, _smooth(kernel)(X), atol=tol, rtol=0)


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
