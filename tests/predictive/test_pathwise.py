"""Pathwise posterior function samples.

Moment tests (RELIABILITY statistical test 5). Given its Fourier features a
pathwise sample has exactly the predictive mean; its covariance is
``Sigma + P dC P'``, where ``dC`` is the error of the random-feature prior
covariance over the stacked points ``[X*; X]`` and ``P = [I, -k(X*, X)
A^-1]`` (Matheron's update is linear in the prior sample). With ``z`` one
feature column over the stacked points, ``P dC P'`` is a mean of ``F`` iid
terms ``(Pz)(Pz)' - P C P'``, so the standard deviation of entry ``(a, b)``
is ``sqrt(Var[(Pz)_a (Pz)_b] / F)``; the variance is estimated here from
200,000 independent feature columns (the spectral draws themselves are
checked in tests/test_spectral.py). Averaged over ``R`` independent feature
sets it shrinks by ``sqrt(R)``. The Monte Carlo error of an empirical
covariance entry from ``N`` samples has a standard deviation
``sqrt((S_aa S_bb + S_ab^2) / N)`` and that of a mean ``sqrt(S_aa / N)``.
Tolerances are 5 times the sum, which is at least 5 times the standard error
of the difference (the root of the sum of squares): a two-sided normal tail
below 5.7e-7 per entry, stated per test for its number of entries. They
shrink as ``F`` grows. The tests are ``@pytest.mark.statistical``: every
seed, data included, is offset by ``stat_seed``.
"""

import pickle

import numba
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Matern,
    WhiteKernel,
)

from skgp_bayes import SteinGPRegressor
from skgp_bayes import _base as _exact_gp
from skgp_bayes.kernels import lower_kernel
from skgp_bayes.kernels.spectral import (
    _own_count,
    spectral_parameters,
    weighted_frequencies,
)
from skgp_bayes.linalg import cho_solve, cholesky
from skgp_bayes.sampling import (
    FunctionSamples,
    exact_conditioner,
    latent_conditioner,
    pathwise_functions,
    sparse_conditioner,
    with_prior_noise,
)
from skgp_bayes.sampling._numba import exp_nonpositive

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(n=8, d=1, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, (n, d))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.randn(n)
    return X, y


def _fit(kernel, n_particles=1, random_state=0, **kwargs):
    X, y = _data(**kwargs)
    params = dict(
        kernel=kernel,
        n_particles=n_particles,
        max_iter=0,
        random_state=random_state,
    )
    if n_particles > 1:
        params.update(init="prior", max_iter=5)
    return SteinGPRegressor(**params).fit(X, y)


def _feature_term_sd(kernel, points, P, n_features, n_sets, seed=0):
    """sd of each entry of the feature bias ``P dC P'`` averaged over sets.

    A feature set is stratified: a share ``c`` of its columns comes from the
    spectral density and the rest from the wide density, each column
    weighted, so the variance of its mean is ``(c V_own + (1 - c) V_wide) /
    F`` with ``V`` the variance of one weighted term within a stratum.
    """
    rng = np.random.RandomState(seed)
    n_cols = 200000
    spec = lower_kernel(kernel)
    W, weights = weighted_frequencies(spec, kernel.theta, n_cols, points.shape[1], rng)
    s2 = spectral_parameters(spec, kernel.theta, points.shape[1])[0]
    b = rng.uniform(0.0, 2.0 * np.pi, n_cols)
    PZ = P @ (np.sqrt(2.0 * s2 * weights) * np.cos(points @ W.T + b))
    terms = PZ[:, None, :] * PZ[None, :, :]
    own = _own_count(n_cols)
    share = own / n_cols
    var = share * np.var(terms[..., :own], axis=2)
    var += (1.0 - share) * np.var(terms[..., own:], axis=2)
    return np.sqrt(var / n_features / n_sets)


def _bias_sd(reg, Xq, n_features, n_sets, seed=0):
    """Largest feature-bias sd over particles, in the units of y."""
    draws = reg._draws
    Xq = reg.input_scaling_.transform(Xq)  # the model's units, as draws.X
    points = np.vstack([Xq, draws.X])
    bound = np.zeros((Xq.shape[0], Xq.shape[0]))
    for j in range(draws.n_draws):
        kernel = reg.kernels_[j]
        if isinstance(kernel.k2, WhiteKernel):
            kernel = kernel.k1
        Ks = draws.adapter.cross(draws.kernel_thetas[j], Xq, draws.X)
        P = np.hstack([np.eye(Xq.shape[0]), -cho_solve(draws.factor(j), Ks.T).T])
        sd = _feature_term_sd(kernel, points, P, n_features, n_sets, seed + j)
        bound = np.maximum(bound, sd)
    return bound * reg._y_std**2


def _moments(reg, Xq, n_features, n_sets, per_set, seed=0):
    """Moments of ``n_sets`` independent feature sets (seeds ``seed * n_sets``
    onward, fresh for every ``seed``)."""
    samples = np.hstack(
        [
            reg.sample_y(
                Xq,
                per_set,
                random_state=seed * n_sets + r,
                method="pathwise",
                n_features=n_features,
            )
            for r in range(n_sets)
        ]
    )
    return samples.mean(axis=1), np.cov(samples)


@pytest.mark.statistical
@pytest.mark.parametrize("n_features", [64, 1024])
def test_moments_match_exact_predictive(n_features, stat_seed):
    # 5 means and 15 distinct covariance entries: false failure below
    # 20 x 5.7e-7 ~ 1e-5.
    reg = _fit(ConstantKernel(1.0) * RBF(1.0), seed=stat_seed, random_state=stat_seed)
    Xq = np.array([[-3.0], [-1.0], [0.1], [1.3], [2.5]])
    mean, cov = reg.predict(Xq, return_cov=True)
    n_sets, per_set = 50, 2000
    N = n_sets * per_set
    emp_mean, emp_cov = _moments(reg, Xq, n_features, n_sets, per_set, stat_seed)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(emp_mean - mean) < 5 * sd / np.sqrt(N))
    mc = np.sqrt((np.outer(sd**2, sd**2) + cov**2) / N)
    tol = 5 * (mc + _bias_sd(reg, Xq, n_features, n_sets, 100 * stat_seed))
    assert np.all(np.abs(emp_cov - cov) < tol)
    # the tolerance is informative: well below the covariance it checks, and
    # dominated by the feature term at F = 64
    assert np.max(tol) < 0.2 * np.max(np.abs(cov))


@pytest.mark.statistical
def test_mixture_moments_with_white_noise(stat_seed):
    # Several particles with different hyperparameters and a WhiteKernel: the
    # samples mix over particles, and the WhiteKernel adds independent noise
    # at each query point, as in predict(return_cov=True). 4 means and 10
    # distinct covariance entries: false failure below 14 x 5.7e-7 ~ 1e-5.
    kernel = ConstantKernel(1.0) * Matern(1.0, nu=2.5) + WhiteKernel(0.05)
    reg = _fit(kernel, n_particles=4, seed=stat_seed, random_state=stat_seed)
    assert np.ptp(reg.particles_[:, 1]) > 0.1
    Xq = np.array([[-2.8], [0.0], [0.7], [2.6]])
    mean, cov = reg.predict(Xq, return_cov=True)
    n_sets, per_set, F = 40, 2500, 1024
    N = n_sets * per_set
    emp_mean, emp_cov = _moments(reg, Xq, F, n_sets, per_set, stat_seed)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(emp_mean - mean) < 5 * sd / np.sqrt(N))
    mc = np.sqrt((np.outer(sd**2, sd**2) + cov**2) / N)
    # Each particle's feature sets are independent across the n_sets calls;
    # the largest per-particle bias sd bounds that of the mixture.
    bias = _bias_sd(reg, Xq, F, n_sets, 100 * stat_seed)
    assert np.all(np.abs(emp_cov - cov) < 5 * (mc + bias))


@pytest.mark.parametrize(
    "kernel",
    [
        ConstantKernel(1.5) * RBF([0.8, 1.7]),
        Matern([0.9, 1.4], nu=1.5),
        ConstantKernel(0.7) * Matern(1.1, nu=2.5) + WhiteKernel(0.1),
        ConstantKernel(1.2) * Matern([0.8, 1.2], nu=0.5),
    ],
    ids=repr,
)
def test_gradient_matches_finite_differences(kernel):
    reg = _fit(kernel, n=12, d=2)
    f = reg.sample_functions(3, random_state=1, n_features=256)
    rng = np.random.RandomState(2)
    Xq = rng.uniform(-2.5, 2.5, (7, 2))
    grad = f.gradient(Xq)
    assert grad.shape == (7, 3, 2)
    h = 1e-6
    for c in range(2):
        step = np.zeros(2)
        step[c] = h
        fd = (f(Xq + step) - f(Xq - step)) / (2 * h)
        scale = np.max(np.abs(fd)) + 1.0
        np.testing.assert_allclose(grad[:, :, c], fd, atol=1e-5 * scale, rtol=0)
    single = f[2]
    np.testing.assert_array_equal(single.gradient(Xq), grad[:, 2, :])


def test_values_are_frozen_and_do_not_depend_on_other_rows():
    reg = _fit(ConstantKernel(1.0) * RBF([1.0, 2.0]), n=15, d=2)
    f = reg.sample_functions(5, random_state=3)
    rng = np.random.RandomState(0)
    Xq = rng.uniform(-3, 3, (300, 2))
    first = f(Xq)
    np.testing.assert_array_equal(first, f(Xq))
    np.testing.assert_array_equal(first[100:250], f(Xq[100:250]))
    np.testing.assert_array_equal(first[7:8], f(Xq[7:8]))
    order = rng.permutation(300)
    np.testing.assert_array_equal(first[order], f(Xq[order]))
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        np.testing.assert_array_equal(first, f(Xq))
    finally:
        numba.set_num_threads(previous)
    for i in range(5):
        np.testing.assert_array_equal(f[i](Xq[50:90]), first[50:90, i])


def test_pickle_round_trip_gives_identical_values():
    reg = _fit(ConstantKernel(1.0) * Matern(1.0, nu=1.5))
    f = reg.sample_functions(4, random_state=0)
    Xq = np.linspace(-3, 3, 50)[:, None]
    g = pickle.loads(pickle.dumps(f))
    assert isinstance(g, FunctionSamples)
    np.testing.assert_array_equal(f(Xq), g(Xq))
    np.testing.assert_array_equal(f.gradient(Xq), g.gradient(Xq))
    # the estimator itself: Cholesky factors are recomputed after loading
    reg2 = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(
        reg.sample_y(Xq, 3, random_state=0, method="pathwise"),
        reg2.sample_y(Xq, 3, random_state=0, method="pathwise"),
    )


def test_sample_y_pathwise_equals_sample_functions_and_is_reproducible():
    reg = _fit(ConstantKernel(1.0) * RBF(1.0), n_particles=3)
    Xq = np.linspace(-3, 3, 40)[:, None]
    a = reg.sample_y(Xq, 6, random_state=4, method="pathwise")
    np.testing.assert_array_equal(a, reg.sample_functions(6, random_state=4)(Xq))
    np.testing.assert_array_equal(
        a, reg.sample_y(Xq, 6, random_state=4, method="pathwise")
    )
    assert not np.array_equal(a, reg.sample_y(Xq, 6, random_state=5, method="pathwise"))
    f = reg.sample_functions(6, random_state=4)
    assert set(f.draws) <= set(range(3)) and len(set(f.draws)) > 1


def test_auto_switches_at_the_crossover():
    reg = _fit(ConstantKernel(1.0) * RBF(1.0))
    big = np.linspace(-3, 3, _exact_gp.PATHWISE_MIN_POINTS)[:, None]
    np.testing.assert_array_equal(
        reg.sample_y(big, 2, random_state=0),
        reg.sample_y(big, 2, random_state=0, method="pathwise"),
    )
    small = big[:: max(1, big.shape[0] // 20)]
    np.testing.assert_array_equal(
        reg.sample_y(small, 2, random_state=0),
        reg.sample_y(small, 2, random_state=0, method="exact"),
    )


def test_sklearn_shapes_and_bad_input():
    reg = _fit(ConstantKernel(1.0) * RBF(1.0))
    Xq = np.zeros((3, 1))
    for method in ("exact", "pathwise"):
        assert reg.sample_y(Xq, method=method).shape == (3, 1)
        assert reg.sample_y(Xq, 4, method=method).shape == (3, 4)
    with pytest.raises(ValueError, match="method"):
        reg.sample_y(Xq, method="fast")
    with pytest.raises(ValueError, match="n_samples"):
        reg.sample_functions(0)
    with pytest.raises(ValueError, match="n_features"):
        reg.sample_y(Xq, method="pathwise", n_features=0)
    f = reg.sample_functions(2)
    with pytest.raises(ValueError, match="shape"):
        f(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="NaN"):
        f(np.array([[np.nan]]))
    with pytest.raises(IndexError):
        f[2]


def test_kernel_without_spectral_density_falls_back(monkeypatch):
    reg = _fit(ConstantKernel(1.0) * DotProduct(1.0))
    Xq = np.linspace(-1, 1, 5)[:, None]
    with pytest.raises(ValueError, match="no spectral density"):
        reg.sample_functions(2)
    with pytest.warns(UserWarning, match="no spectral density"):
        fallback = reg.sample_y(Xq, 3, random_state=0, method="pathwise")
    np.testing.assert_array_equal(
        fallback, reg.sample_y(Xq, 3, random_state=0, method="exact")
    )
    monkeypatch.setattr(_exact_gp, "EXACT_SAMPLE_WARN", 4)
    with pytest.warns(UserWarning, match="no spectral density"):
        reg.sample_y(Xq, 1)
    monkeypatch.setattr(_exact_gp._config, "MAX_DENSE_BYTES", 100)
    with pytest.raises(MemoryError, match="no spectral density"):
        reg.sample_y(Xq, 1)


def test_latent_conditioner_interpolates_latent_values():
    # Whitened latent models: with f = L nu given at X, every function sample
    # passes through it (Matheron's update with no noise).
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (10, 2))
    kernel = ConstantKernel(1.3) * Matern([0.9, 1.4], nu=2.5)
    thetas = np.array([kernel.theta, kernel.theta + 0.2])
    factors, latents = [], []
    for theta in thetas:
        L = cholesky(kernel.clone_with_theta(theta)(X) + 1e-9 * np.eye(10))[0]
        factors.append(L)
        latents.append(L @ rng.standard_normal(10))
    f = pathwise_functions(
        lower_kernel(kernel),
        thetas,
        6,
        latent_conditioner(X, factors, np.array(latents)),
        n_features=64,
        random_state=0,
    )
    values = f(X)
    for s in range(6):
        np.testing.assert_allclose(values[:, s], latents[f.draws[s]], atol=1e-5)


@pytest.mark.statistical
def test_sparse_conditioner_matches_the_sparse_predictive(stat_seed):
    # f(x) = f_prior(x) + k(x, Z) K_uu^-1 (u - f_prior(Z)), u ~ N(m, S): the
    # mean is k(x, Z) K_uu^-1 m, the covariance
    # k(x, x) - Q(x, x) + k(x, Z) K_uu^-1 S K_uu^-1 k(Z, x). 3 means and 6
    # distinct covariance entries: false failure below 9 x 5.7e-7.
    rng = np.random.RandomState(1 + stat_seed)
    Z = rng.uniform(-2, 2, (5, 1))
    kernel = ConstantKernel(0.8) * RBF(0.9)
    Kuu = kernel(Z) + 1e-9 * np.eye(5)
    R = cholesky(Kuu)[0]
    m = rng.standard_normal(5)
    B = 0.3 * rng.standard_normal((5, 5))
    S_factor = np.linalg.cholesky(B @ B.T + 0.05 * np.eye(5))
    Xq = np.array([[-2.5], [0.0], [1.0]])
    Kxz = kernel(Xq, Z)
    A = cho_solve(R, Kxz.T).T
    mean = A @ m
    cov = kernel(Xq) - A @ Kxz.T + A @ (S_factor @ S_factor.T) @ A.T
    n_sets, per_set, F = 20, 5000, 1024
    N = n_sets * per_set
    samples = np.hstack(
        [
            pathwise_functions(
                lower_kernel(kernel),
                kernel.theta[None, :],
                per_set,
                sparse_conditioner(Z, [R], m[None, :], [S_factor]),
                n_features=F,
                random_state=stat_seed * n_sets + r,
            )(Xq)
            for r in range(n_sets)
        ]
    )
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(samples.mean(axis=1) - mean) < 5 * sd / np.sqrt(N))
    P = np.hstack([np.eye(3), -A])
    bias = _feature_term_sd(kernel, np.vstack([Xq, Z]), P, F, n_sets, stat_seed)
    mc = np.sqrt((np.outer(sd**2, sd**2) + cov**2) / N)
    assert np.all(np.abs(np.cov(samples) - cov) < 5 * (mc + bias))


@pytest.mark.statistical
def test_variance_in_a_gap_between_clustered_inducing_points(stat_seed):
    # Two clusters of inducing points and a query in the gap between them:
    # the interpolation weights K_uu^-1 k(Z, x) reach 17 in norm and
    # alternate in sign, so the prior residual f(x) - k(x, Z) K_uu^-1 f(Z)
    # (the sample's whole variance here, u = 0) cancels at every frequency
    # the clusters resolve and lives 4 to 5.5 standard deviations out in
    # the RBF's spectral density. Frequencies from the density alone gave
    # 0.55-0.62 of the exact variance in each of 40 feature sets (F = 1024);
    # with the wide share, 40 sets gave 0.87-1.18 (sd 0.07, 0.022 of it from
    # the 4000 samples). The median of 16 sets leaves [0.85, 1.15] only if 8
    # of them do; at a per-set probability of 0.03 (an over-estimate: none
    # of the 40 did) that is below 1e-8.
    Z = np.r_[np.linspace(-1.66, -0.53, 6), np.linspace(0.62, 1.70, 6)][:, None]
    x = np.array([[0.0]])
    kernel = ConstantKernel(1.7) * RBF(0.632)
    jitter = 1e-6 * 1.7
    Kuu = kernel(Z) + jitter * np.eye(Z.shape[0])
    A = np.linalg.solve(Kuu, kernel(Z, x))[:, 0]
    assert np.linalg.norm(A) > 10  # the geometry that starves plain sampling
    exact = 1.7 - kernel(x, Z)[0] @ A
    conditioner = with_prior_noise(
        sparse_conditioner(Z, [cholesky(Kuu)[0]], np.zeros((1, Z.shape[0]))),
        np.array([jitter]),
    )
    ratios = [
        pathwise_functions(
            lower_kernel(kernel),
            kernel.theta[None, :],
            4000,
            conditioner,
            n_features=1024,
            random_state=16 * stat_seed + r,
        )(x)[0].var(ddof=1)
        / exact
        for r in range(16)
    ]
    assert 0.85 < np.median(ratios) < 1.15


@pytest.mark.statistical
def test_exact_conditioner_draws_noise_per_sample(stat_seed):
    cond = exact_conditioner(np.zeros((3, 1)), np.ones(3), [np.eye(3)], [0.25])
    _, _, targets = cond(0, 20000, np.random.RandomState(stat_seed))
    assert targets.shape == (3, 20000)
    # targets are 1 - N(0, 0.25): the sd of 60,000 Gaussian draws has a
    # standard error of 0.5 / sqrt(2 x 60,000); 5 of them: false failure
    # 5.7e-7
    assert abs(np.std(targets) - 0.5) < 5 * 0.5 / np.sqrt(2 * targets.size)
    with pytest.warns(ConvergenceWarning, match="did not"):
        # the regressor warns when SVGD stops early; the sampler is silent
        SteinGPRegressor(n_particles=2, max_iter=1, random_state=0).fit(*_data())


def test_compiled_exponential_matches_numpy():
    rng = np.random.RandomState(0)
    x = -rng.exponential(30.0, 200000)
    x = x[x > -708]
    np.testing.assert_allclose(exp_nonpositive(x), np.exp(x), rtol=1e-15, atol=0)
    edge = np.array([0.0, -1e-300, -0.5 * np.log(2.0), -700.0])
    np.testing.assert_allclose(exp_nonpositive(edge), np.exp(edge), rtol=1e-15)
    # far below the smallest normal number: tiny, never negative or NaN
    tiny = exp_nonpositive(np.array([-750.0, -1e6]))
    assert np.all((tiny >= 0) & (tiny < 1e-300))


def test_explicit_draws_are_used():
    X = np.linspace(-1, 1, 4)[:, None]
    kernel = RBF(0.7)
    thetas = np.log([[0.5], [0.7], [0.9]])
    factors = [
        cholesky(kernel.clone_with_theta(t)(X) + 1e-9 * np.eye(4))[0] for t in thetas
    ]
    cond = latent_conditioner(X, factors, np.zeros((3, 4)))
    f = pathwise_functions(
        lower_kernel(kernel), thetas, 4, cond, random_state=0, draws=[2, 0, 2, 1]
    )
    np.testing.assert_array_equal(f.draws, [2, 0, 2, 1])
    with pytest.raises(ValueError, match="draws"):
        pathwise_functions(lower_kernel(kernel), thetas, 2, cond, draws=[0, 3])
