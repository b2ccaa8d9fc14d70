"""Pathwise function samples of the sparse estimators (variational MCMC and
SelectiveSVGP): moments against each estimator's own predictive, frozen and
reproducible functions, gradients, pickling, ``sample_y`` methods.

Moment tolerances. Each check pools ``R = 32`` replicate sets of
``N / R = 125`` samples, each set drawn with its own seed and so its own
Fourier features. Given its features a pathwise sample has the exact
posterior mean (the prior part's weights average to zero), so the pooled
mean has standard error ``sd / sqrt(N)``; 5 of them are allowed. The
variance given one feature set is off by the features' error, which is far
from negligible where the posterior variance is a small part of the prior's
(over 20 feature sets the variance ratio of one draw's samples had an sd of
up to 0.14 at F = 2048, against 0.022 from N samples alone). The spread of
the R replicate variances measures both errors at once: their mean has
standard error ``sd_R / sqrt(R)``, and 6 of them are allowed (a t statistic
with 31 degrees of freedom exceeds 6 with probability 1.2e-6). With at most
15 values per check, false failures stay below 3e-5 per test. Every seed
(data, fit, samples) is offset by ``SKGP_TEST_SEED``.
"""

import pickle
import warnings

import numpy as np
import pytest
from _variational_mcmc_fits import SMALL
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    RationalQuadratic,
    WhiteKernel,
)

from skgp_bayes import (
    SelectiveSVGP,
    SelectiveSVGPClassifier,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)
from skgp_bayes.predictive.mixture import mixture_mean_var
from skgp_bayes.sampling import FunctionSamples

N, F, R = 4000, 2048, 32
VMCMC = SMALL
SELECT = dict(n_pre_iter=30, n_select_iter=40, n_post_iter=30, random_state=0)


def _quiet(est, *args, **kwargs):
    with warnings.catch_warnings():
        # chains this short warn about R-hat and ESS; the tests compare the
        # samples with the estimator's own predictive, whatever its quality
        warnings.simplefilter("ignore")
        return est.fit(*args, **kwargs)


def _replicates(draw, seed):
    """``draw(n, random_state)`` for R seeds, stacked: (..., R, N // R)."""
    return np.stack([draw(N // R, 1000 * seed + r) for r in range(R)], axis=-2)


def _assert_moments(values, mean, var):
    """Replicate sets ``values`` (k, ..., R, n) against ``mean`` and ``var``."""
    pooled = values.reshape(*values.shape[:-2], -1)
    se_mean = pooled.std(axis=-1) / np.sqrt(pooled.shape[-1])
    np.testing.assert_array_less(np.abs(pooled.mean(axis=-1) - mean), 5 * se_mean)
    per_set = values.var(axis=-1, ddof=1)
    se_var = per_set.std(axis=-1, ddof=1) / np.sqrt(R)
    np.testing.assert_array_less(np.abs(per_set.mean(axis=-1) - var), 6 * se_var)


# ------------------------------------------------------------------ fixtures
def _seeded(options, seed):
    return {**options, "random_state": options["random_state"] + seed}


@pytest.fixture(scope="module")
def vmcmc_regressor(shared_stat_seed):
    rng = np.random.RandomState(shared_stat_seed)
    X = rng.uniform(-2, 2, (40, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.randn(40)
    kernel = ConstantKernel(1.0) * RBF([1.0, 1.0])
    reg = VariationalMCMCRegressor(
        kernel, n_inducing=8, **_seeded(VMCMC, shared_stat_seed)
    )
    return _quiet(reg, X, y)


@pytest.fixture(scope="module")
def vmcmc_poisson(shared_stat_seed):
    rng = np.random.RandomState(1 + shared_stat_seed)
    X = np.linspace(0, 10, 40)[:, None]
    y = rng.poisson(2.0 + np.sin(X[:, 0]))
    kernel = ConstantKernel(1.0) * RBF(2.0)
    reg = VariationalMCMCRegressor(
        kernel,
        likelihood="poisson",
        n_inducing=6,
        **_seeded(VMCMC, shared_stat_seed),
    )
    return _quiet(reg, X, y, exposure=0.5)


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "3-class"])
def vmcmc_classifier(request, shared_stat_seed):
    rng = np.random.RandomState(shared_stat_seed)
    X = rng.uniform(-2, 2, (40, 1))
    thresholds = [-0.5, 0.7][: request.param - 1]
    y = np.digitize(X[:, 0] + 0.3 * rng.randn(40), thresholds)
    multiclass = "softmax" if request.param > 2 else "robustmax"
    clf = VariationalMCMCClassifier(
        n_inducing=6, multiclass=multiclass, **_seeded(VMCMC, shared_stat_seed)
    )
    return _quiet(clf, X, y)


def _selective_data(seed):
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 10, (80, 1))
    return X, np.sin(X[:, 0]) + 0.2 * rng.randn(80)


@pytest.fixture(scope="module")
def selective(shared_stat_seed):
    X, y = _selective_data(shared_stat_seed)
    options = _seeded(SELECT, shared_stat_seed)
    return SelectiveSVGP(n_candidates=20, alpha=0.05, **options).fit(X, y)


# --------------------------------------------------- moments vs predictive
def _vmcmc_reg_moments(reg, Xq, posterior):
    mu, var = reg._latent(
        reg.input_scaling_.transform(Xq),
        None,
        "gaussian" if posterior == "gaussian" else "mcmc",
    )
    mean, var = mixture_mean_var(mu, var)
    return mean * reg.y_std_ + reg.y_mean_, var * reg.y_std_**2


@pytest.mark.statistical
@pytest.mark.parametrize("posterior", ["mcmc", "gaussian"])
def test_vmcmc_regressor_functions_match_predictive(
    vmcmc_regressor, posterior, stat_seed
):
    reg = vmcmc_regressor
    Xq = np.random.RandomState(5 + stat_seed).uniform(-2.5, 2.5, (6, 2))
    mean, var = _vmcmc_reg_moments(reg, Xq, posterior)
    used = []

    def draw(n, seed):
        functions = reg.sample_functions(
            n, random_state=seed, n_features=F, posterior=posterior
        )
        assert isinstance(functions, FunctionSamples)
        used.append(functions.draws)
        return functions(Xq)

    values = _replicates(draw, 1 + stat_seed)
    assert values.shape == (6, R, N // R)
    _assert_moments(values, mean, var)
    if posterior == "mcmc":
        # the samples mix over (almost) every kept HMC draw
        assert np.unique(used).size > 0.9 * reg.draws_.shape[0]
    else:
        assert np.all(np.concatenate(used) == 0)


@pytest.mark.statistical
@pytest.mark.parametrize("posterior", ["mcmc", "gaussian"])
def test_vmcmc_regressor_exact_sample_y_matches_predictive(
    vmcmc_regressor, posterior, stat_seed
):
    reg = vmcmc_regressor
    Xq = np.random.RandomState(6 + stat_seed).uniform(-2.5, 2.5, (5, 2))
    mean, var = _vmcmc_reg_moments(reg, Xq, posterior)

    def draw(n, seed):
        return reg.sample_y(
            Xq, n, random_state=seed, method="exact", posterior=posterior
        )

    draws = _replicates(draw, 2 + stat_seed)
    assert draws.shape == (5, R, N // R)
    _assert_moments(draws, mean, var)


@pytest.mark.statistical
def test_vmcmc_poisson_log_rate_and_rates(vmcmc_poisson, stat_seed):
    reg = vmcmc_poisson
    Xq = np.array([[0.5], [3.3], [6.1], [9.4]])
    mu, var = reg._latent(reg.input_scaling_.transform(Xq), None, "mcmc")
    mean, mixed_var = mixture_mean_var(mu, var)
    log_rate = _replicates(
        lambda n, seed: reg.sample_functions(n, random_state=seed, n_features=F)(Xq),
        3 + stat_seed,
    )
    _assert_moments(log_rate, mean, mixed_var)
    # sample_y gives expected counts exposure * exp(f); exact draws (no
    # feature error) against the lognormal moments of the mixture, 5
    # standard errors sd / sqrt(N) on 4 points
    rates = reg.sample_y(
        Xq, N, random_state=4 + stat_seed, method="exact", exposure=0.5
    )
    expected = 0.5 * np.exp(mu + 0.5 * var).mean(axis=0)
    second = 0.25 * np.exp(2 * mu + 2 * var).mean(axis=0)
    sd = np.sqrt(second - expected**2)
    np.testing.assert_allclose(expected, reg.predict(Xq, exposure=0.5))
    np.testing.assert_array_less(
        np.abs(rates.mean(axis=1) - expected), 5 * sd / np.sqrt(N)
    )
    pathwise = reg.sample_y(
        Xq, 3, random_state=4 + stat_seed, method="pathwise", exposure=0.5
    )
    assert pathwise.shape == (4, 3) and np.all(pathwise > 0)


@pytest.mark.statistical
@pytest.mark.parametrize("posterior", ["mcmc", "gaussian"])
def test_vmcmc_classifier_functions_match_predictive(
    vmcmc_classifier, posterior, stat_seed
):
    clf = vmcmc_classifier
    Xq = np.array([[-1.7], [-0.6], [0.1], [0.9], [1.8]])
    if posterior == "gaussian":
        mean, var = clf._gaussian_moments(
            clf.input_scaling_.transform(Xq)
        )  # (k, C) each
    else:
        means, variances = clf._draw_moments(clf.input_scaling_.transform(Xq))
        S, k, C = means.shape
        var_s = np.repeat(variances[..., None], C, axis=-1)
        mean, var = mixture_mean_var(means.reshape(S, -1), var_s.reshape(S, -1))
        mean, var = mean.reshape(k, C), var.reshape(k, C)
    C = clf._n_latent

    def draw(n, seed):
        functions = clf.sample_functions(
            n, random_state=seed, n_features=F, posterior=posterior
        )
        if C == 1:
            assert isinstance(functions, FunctionSamples)
            functions = [functions]
        else:
            assert len(functions) == C == clf.classes_.size
            # one draw per sample, shared by the latents
            for f in functions[1:]:
                np.testing.assert_array_equal(f.draws, functions[0].draws)
        return np.stack([f(Xq) for f in functions], axis=1)  # (k, C, n)

    values = _replicates(draw, 1 + stat_seed)  # (k, C, R, n)
    _assert_moments(values, mean, var)
    if C > 1 and posterior == "mcmc":
        # latents of one sample come from one HMC draw, so their covariance
        # across classes is the mixture's: Cov_s(mu_a, mu_b) (given a draw
        # the conditional residuals are independent)
        # (standard error from the replicates' spread, as for a variance)
        a, b = means[:, :, 0], means[:, :, 1]
        cross = (a * b).mean(axis=0) - a.mean(axis=0) * b.mean(axis=0)
        centred = values - values.mean(axis=-1, keepdims=True)
        per_set = np.sum(centred[:, 0] * centred[:, 1], axis=-1) / (N // R - 1)
        se = per_set.std(axis=-1, ddof=1) / np.sqrt(R)
        np.testing.assert_array_less(np.abs(per_set.mean(axis=-1) - cross), 6 * se)


@pytest.mark.statistical
@pytest.mark.parametrize("white", [False, True], ids=["rbf", "rbf+white"])
def test_selective_functions_match_predictive(selective, white, stat_seed):
    if white:
        # a WhiteKernel sits on the diagonal of K(Z, Z) but not in the
        # features: without the prior noise added at Z the function
        # variance would be too small (about 30% here)
        X, y = _selective_data(stat_seed)
        kernel = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.05, "fixed")
        options = _seeded(SELECT, stat_seed)
        reg = SelectiveSVGP(kernel, n_candidates=20, alpha=0.05, **options).fit(X, y)
    else:
        reg = selective
    Xq = np.array([[0.5], [2.2], [4.9], [7.1], [9.6]])
    mean, std = reg.predict(Xq, return_std=True)
    # predict's latent variance holds the WhiteKernel noise; the smooth
    # functions do not
    noise = 0.05 * reg.y_std_**2 if white else 0.0
    values = _replicates(
        lambda n, seed: reg.sample_functions(n, random_state=seed, n_features=F)(Xq),
        1 + stat_seed,
    )
    _assert_moments(values, mean, std**2 - noise)
    draws = _replicates(
        lambda n, seed: reg.sample_y(
            Xq, n, random_state=seed, method="pathwise", n_features=F
        ),
        1 + stat_seed,
    )
    _assert_moments(draws, mean, std**2)


@pytest.mark.statistical
def test_selective_classifier_functions_match_predictive(stat_seed):
    rng = np.random.RandomState(stat_seed)
    X = rng.uniform(-3, 3, (60, 1))
    y = (np.sin(X[:, 0]) + 0.5 * rng.randn(60) > 0).astype(int)
    options = _seeded(SELECT, stat_seed)
    clf = SelectiveSVGPClassifier(n_candidates=15, **options).fit(X, y)
    Xq = np.array([[-2.5], [-1.0], [0.2], [1.4], [2.6]])
    # validates and scales its input; one column per latent, two classes
    # have one
    mean, var = (moment[:, 0] for moment in clf._latent(Xq))
    values = _replicates(
        lambda n, seed: clf.sample_functions(n, random_state=seed, n_features=F)(Xq),
        1 + stat_seed,
    )
    _assert_moments(values, mean, var)


# ------------------------------------------------- frozen, reproducible
def test_functions_are_frozen_and_reproducible(
    vmcmc_regressor, vmcmc_classifier, selective
):
    X2 = np.random.RandomState(7).uniform(-2, 2, (9, 2))
    X1 = np.linspace(0, 10, 9)[:, None]
    cases = [
        (vmcmc_regressor, X2),
        (vmcmc_classifier, X1 / 5),
        (selective, X1),
    ]
    for est, Xq in cases:
        first = est.sample_functions(6, random_state=3, n_features=64)
        second = est.sample_functions(6, random_state=3, n_features=64)
        other = est.sample_functions(6, random_state=4, n_features=64)
        first = first if isinstance(first, list) else [first]
        second = second if isinstance(second, list) else [second]
        other = other if isinstance(other, list) else [other]
        for f, g, h in zip(first, second, other, strict=True):
            values = f(Xq)
            np.testing.assert_array_equal(values, f(Xq))
            np.testing.assert_array_equal(values, g(Xq))
            np.testing.assert_array_equal(values[2:5], f(Xq[2:5]))
            np.testing.assert_array_equal(values[:, 4], f[4](Xq))
            assert not np.allclose(values, h(Xq))


def test_sample_y_auto_switches_to_pathwise(vmcmc_regressor, selective):
    big = np.random.RandomState(8).uniform(-2, 2, (150, 2))
    reg = vmcmc_regressor
    auto = reg.sample_y(big, 3, random_state=5)
    np.testing.assert_array_equal(auto, reg.sample_y(big, 3, 5, method="pathwise"))
    small = big[:10]
    np.testing.assert_array_equal(
        reg.sample_y(small, 3, random_state=5),
        reg.sample_y(small, 3, random_state=5, method="exact"),
    )
    grid = np.linspace(0, 10, 150)[:, None]
    np.testing.assert_array_equal(
        selective.sample_y(grid, 3, random_state=5),
        selective.sample_y(grid, 3, random_state=5, method="pathwise"),
    )


# ------------------------------------------------------------- gradients
def test_function_gradients_match_finite_differences(vmcmc_regressor):
    functions = vmcmc_regressor.sample_functions(5, random_state=2, n_features=256)
    Xq = np.random.RandomState(9).uniform(-2, 2, (4, 2))
    grad = functions.gradient(Xq)
    assert grad.shape == (4, 5, 2)
    h = 1e-5
    for d in range(2):
        step = np.zeros(2)
        step[d] = h
        fd = (functions(Xq + step) - functions(Xq - step)) / (2 * h)
        # central differences: O(h^2) truncation and O(eps |f| / h) rounding,
        # both far below 1e-6 for values of order one
        np.testing.assert_allclose(grad[:, :, d], fd, atol=1e-6)
    one = functions[1]
    np.testing.assert_array_equal(one.gradient(Xq), grad[:, 1, :])


# --------------------------------------------------------------- pickling
def test_pickle_round_trip(vmcmc_classifier, selective):
    Xq = np.linspace(-2, 2, 7)[:, None]
    for est, X in ((vmcmc_classifier, Xq), (selective, Xq + 5)):
        restored = pickle.loads(pickle.dumps(est))
        f = est.sample_functions(4, random_state=0, n_features=128)
        g = restored.sample_functions(4, random_state=0, n_features=128)
        f = f if isinstance(f, list) else [f]
        g = g if isinstance(g, list) else [g]
        for a, b in zip(f, g, strict=True):
            np.testing.assert_array_equal(a(X), b(X))
            again = pickle.loads(pickle.dumps(a))
            np.testing.assert_array_equal(again(X), a(X))
            np.testing.assert_array_equal(again.gradient(X), a.gradient(X))


# ------------------------------------------------------------- bad input
def test_bad_input(vmcmc_regressor, selective):
    X = np.zeros((3, 2))
    reg = vmcmc_regressor
    with pytest.raises(ValueError, match="n_samples"):
        reg.sample_functions(0)
    with pytest.raises(ValueError, match="n_samples"):
        reg.sample_y(X, n_samples=True)
    with pytest.raises(ValueError, match="method"):
        reg.sample_y(X, method="gaussian")
    with pytest.raises(ValueError, match="posterior"):
        reg.sample_functions(2, posterior="laplace")
    with pytest.raises(ValueError, match="exposure"):
        reg.sample_y(X, exposure=2.0)
    with pytest.raises(ValueError, match="method"):
        selective.sample_y(np.zeros((3, 1)), method="fast")
    with pytest.raises(ValueError, match="n_features"):
        selective.sample_functions(2, n_features=0)


def test_kernel_without_spectral_density():
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 5, (30, 1))
    y = np.sin(X[:, 0])
    reg = SelectiveSVGP(RationalQuadratic(), n_candidates=8, **SELECT).fit(X, y)
    with pytest.raises(ValueError, match="spectral density"):
        reg.sample_functions(2)
    with pytest.warns(UserWarning, match="spectral density"):
        draws = reg.sample_y(X[:4], 3, random_state=0, method="pathwise")
    np.testing.assert_array_equal(
        draws, reg.sample_y(X[:4], 3, random_state=0, method="exact")
    )


# ------------------------------------------------------------------ SGLD
@pytest.mark.statistical
@pytest.mark.parametrize("predict_solver", ["cholesky", "cg"])
def test_sgld_function_samples_match_predict(predict_solver, stat_seed):
    """Exact-GP draws from SGLD, conditioned by Cholesky or by CG solves."""
    from skgp_bayes import SGLDGPRegressor

    rng = np.random.RandomState(stat_seed)
    X = rng.uniform(-3, 3, (40, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(40)
    reg = _quiet(
        SGLDGPRegressor(
            n_iter=150,
            n_chains=1,
            predict_solver=predict_solver,
            random_state=stat_seed,
        ),
        X,
        y,
    )
    Xq = np.linspace(-2.5, 2.5, 5)[:, None]
    mean, std = reg.predict(Xq, return_std=True)
    values = _replicates(
        lambda n, seed: reg.sample_functions(n, random_state=seed, n_features=F)(Xq),
        1 + stat_seed,
    )
    _assert_moments(values, mean, std**2)
    functions = reg.sample_functions(5, random_state=1 + stat_seed, n_features=F)
    assert isinstance(functions, FunctionSamples)
    again = reg.sample_functions(5, random_state=1 + stat_seed, n_features=F)
    np.testing.assert_array_equal(again(Xq), functions(Xq))
    draws = reg.sample_y(np.linspace(-3, 3, 200)[:, None], n_samples=3)
    assert draws.shape == (200, 3) and np.all(np.isfinite(draws))
