"""The regressors' noise variance: its bounds and "fixed" on every one, and
the variational MCMC regressor's optimum piled on a bound, which its chains
sample without the wall."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from skgp_bayes import (
    SelectiveSVGP,
    SGLDGPRegressor,
    SteinGPRegressor,
    VariationalMCMCRegressor,
)
from skgp_bayes._defaults import NOISE_VARIANCE_BOUNDS, estimator_prior_set
from skgp_bayes._validation import safe_mean_std
from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.exceptions import DegenerateFitWarning, SamplerWarning
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.targets import ExactMarginalTarget

# False-failure rate of each Monte Carlo comparison below: two-sided at
# 4.4 standard errors, about 1e-5.
_Z = 4.4


def _noise_free(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0, 1, n))[:, None]
    return X, np.sin(6 * X[:, 0])


def _fit(reg, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg.fit(X, y)
    return [w for w in caught if not issubclass(w.category, SamplerWarning)]


def _exact_target(reg, X, y):
    """The exact marginal posterior of ``reg``'s hyperparameters, in its
    coordinates: standardised inputs and targets, the default priors."""
    adapter = KernelAdapter(reg.kernel_)
    prior_set = estimator_prior_set(
        adapter, None, X.shape[1], noise=True, regression=True
    )
    Xs = reg.input_scaling_.transform(X)
    y_mean, y_std = safe_mean_std(y)
    return ExactMarginalTarget(adapter, Xs, (y - y_mean) / y_std, prior_set)


def _grid_moments(log_prob, draws):
    """Means and sds of ``(log signal variance, log length scale, distance of
    the log noise variance from its bound)`` by quadrature of ``log_prob``.

    The grid spans 8 of the draws' sds around their mean in the first two,
    and the distance's log (where the pile on the bound has no wall; the
    Jacobian is added) from -14 to 2; the mass on its faces is checked.
    """
    grids = [
        np.linspace(c - 8 * s, c + 8 * s, 41)
        for c, s in zip(
            draws[:, :2].mean(axis=0), draws[:, :2].std(axis=0), strict=True
        )
    ]
    grids.append(np.linspace(-14.0, 2.0, 81))
    a, b, u = np.meshgrid(*grids, indexing="ij")
    floor = np.log(NOISE_VARIANCE_BOUNDS[0])
    points = np.stack([a.ravel(), b.ravel(), floor + np.exp(u.ravel())], axis=1)
    logp = np.array([log_prob(p) for p in points]) + u.ravel()
    weights = np.exp(logp - logsumexp(logp)).reshape(a.shape)
    faces = weights[[0, -1]].sum() + weights[:, [0, -1]].sum()
    assert faces + weights[..., [0, -1]].sum() < 1e-4
    moments = []
    for grid in (a, b, np.exp(u)):
        mean = np.sum(weights * grid)
        moments.append((mean, np.sqrt(np.sum(weights * (grid - mean) ** 2))))
    return moments


@pytest.mark.statistical
def test_noise_free_data_pile_the_noise_on_its_bound_and_hmc_samples_it(stat_seed):
    # 30 points of sin(6x) without noise: the exact marginal posterior's
    # density rises towards ever smaller noise (each eigenvalue of K below
    # the noise adds about 1/2 per log unit), so its optimum is the lower
    # bound, the density falling away at 9.5 per log unit. On the wall every
    # trajectory that meets it diverges (on 200 such points the fit ran for
    # over fifteen minutes); the chains sample the log noise's log distance
    # from the bound instead, the same posterior without the wall.
    X, y = _noise_free()
    reg = VariationalMCMCRegressor(
        random_state=stat_seed,
        n_chains=4,
        n_warmup=300,
        n_samples=500,
        max_samples=500,
    )
    caught = _fit(reg, X, y)
    assert reg.diagnostics_["exact_marginal"]
    assert reg.n_divergences_ == 0
    messages = [str(w.message) for w in caught]
    assert any(
        issubclass(w.category, DegenerateFitWarning)
        and "noise_variance is at its lower bound" in str(w.message)
        for w in caught
    ), messages
    _assert_chains_match_quadrature(
        reg, reg.draws_[:, :3].reshape(reg.n_chains, -1, 3), X, y
    )

    # The fit interpolates the noise-free function between its points.
    X_test = np.linspace(0.05, 0.95, 50)[:, None]
    mean, sd = reg.predict(X_test, return_std=True)
    assert np.max(np.abs(mean - np.sin(6 * X_test[:, 0]))) < 0.01
    assert np.all(np.isfinite(sd))


@pytest.mark.statistical
def test_noise_free_data_pile_the_noise_on_its_bound_and_mala_samples_it(stat_seed):
    # The SGLD regressor's Metropolis-adjusted chains (exact gradients at
    # this size) had their metric from draws and gradients (Fisher
    # divergence), which takes the pile's nearly constant gradient for a
    # wide direction: a metric variance of 0.37-0.95 for a log noise whose
    # draws spread 0.017, and the chains did not mix in 20,000 iterations
    # (R-hat 2.06 on a line's 120 points). A piled coordinate now keeps its
    # draws' variance and no covariance with the others.
    X, y = _noise_free()
    reg = SGLDGPRegressor(random_state=stat_seed)
    caught = _fit(reg, X, y)
    assert reg.diagnostics_["converged"], [str(w.message) for w in caught]
    _assert_chains_match_quadrature(reg, reg.samples_, X, y)


def _assert_chains_match_quadrature(reg, chains, X, y):
    """The chains' means of (log signal variance, log length scale, distance
    of the log noise variance from its bound) against quadrature of the
    exact posterior, within _Z Monte Carlo standard errors."""
    chains = np.array(chains[..., :3], dtype=float)
    chains[..., 2] -= np.log(NOISE_VARIANCE_BOUNDS[0])
    assert chains[..., 2].min() >= 0.0
    pooled = chains.reshape(-1, 3)
    exact = _grid_moments(_exact_target(reg, X, y).log_prob, pooled)
    for j, (exact_mean, exact_sd) in enumerate(exact):
        # Monte Carlo standard error of the draws' mean: sd / sqrt(ESS)
        error = exact_sd / np.sqrt(effective_sample_size(chains[..., j]))
        assert abs(pooled[:, j].mean() - exact_mean) < _Z * error, (j, exact_sd)


@pytest.mark.statistical
def test_svgd_on_noise_free_data_matches_quadrature(stat_seed):
    # The Laplace approximation at a mode on the noise's bound gave the
    # noise a cross-covariance with the kernel's hyperparameters, through
    # which its outward gradient (which the bound answers) moved them: the
    # particles came to rest, "converged", 1.4 posterior sds from the
    # posterior mean in the log signal variance and 2.3 in the log length
    # scale. The pile now has no covariance with the others. Over seeds
    # 0-9 the particles' means were within 0.10 sds of quadrature's and
    # their sds 0.78-0.86 of it (20 particles, SVGD's known contraction);
    # the bounds are three and two times those errors.
    X, y = _noise_free()
    reg = SteinGPRegressor(random_state=stat_seed)
    _fit(reg, X, y)
    target = reg._target

    def log_prob(p):
        return (
            target.log_likelihood(p, eval_gradient=False)
            + target.prior_set.log_prob(p)[0]
        )

    particles = reg.particles_
    exact = _grid_moments(log_prob, particles)
    for j in range(2):
        exact_mean, exact_sd = exact[j]
        assert abs(particles[:, j].mean() - exact_mean) < 0.3 * exact_sd, j
        assert 0.6 < particles[:, j].std() / exact_sd < 1.2, j


_SHORT = {
    VariationalMCMCRegressor: dict(
        n_chains=2, n_warmup=100, n_samples=100, max_samples=100
    ),
    SteinGPRegressor: dict(n_particles=5, max_iter=30),
    SGLDGPRegressor: dict(n_chains=2, max_iter=400),
    SelectiveSVGP: {},
}


@pytest.mark.parametrize("cls", list(_SHORT), ids=lambda cls: cls.__name__)
def test_fixed_noise_variance_is_held_where_given(cls):
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (40, 1))
    y = 3.0 * np.sin(6 * X[:, 0]) + 0.2 * rng.standard_normal(40)
    reg = cls(
        noise_variance=0.01,
        noise_variance_bounds="fixed",
        random_state=0,
        **_SHORT[cls],
    )
    caught = _fit(reg, X, y)
    # in the units of y: the fraction times Var(y)
    np.testing.assert_allclose(reg.noise_variance_, 0.01 * np.var(y), rtol=1e-10)
    # a fixed value is the user's choice, not a bound the data pull at
    assert not [w for w in caught if issubclass(w.category, DegenerateFitWarning)]


@pytest.mark.parametrize("cls", list(_SHORT), ids=lambda cls: cls.__name__)
def test_noise_free_data_warn_that_the_noise_is_on_its_lower_bound(cls):
    X, y = _noise_free(n=40)
    caught = _fit(cls(random_state=0, **_SHORT[cls]), X, y)
    assert any(
        issubclass(w.category, DegenerateFitWarning)
        and "noise_variance is at its lower bound" in str(w.message)
        for w in caught
    ), [str(w.message) for w in caught]


@pytest.mark.parametrize("cls", list(_SHORT), ids=lambda cls: cls.__name__)
def test_the_noise_variance_stays_in_its_bounds(cls):
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, (40, 1))
    y = np.sin(6 * X[:, 0]) + 0.5 * rng.standard_normal(40)
    reg = cls(noise_variance_bounds=(0.3, 0.6), random_state=0, **_SHORT[cls])
    _fit(reg, X, y)
    fraction = np.asarray(reg.noise_variance_) / np.var(y)
    assert np.all((fraction >= 0.3 - 1e-12) & (fraction <= 0.6 + 1e-12))


@pytest.mark.parametrize("cls", list(_SHORT), ids=lambda cls: cls.__name__)
def test_bad_noise_variance_bounds_are_refused_by_name(cls):
    X, y = _noise_free(n=20)
    for bad in [(0.5, 0.1), (0.0, 1.0), (1.0, np.inf)]:
        with pytest.raises(ValueError, match="noise_variance_bounds must satisfy"):
            cls(noise_variance_bounds=bad).fit(X, y)
    with pytest.raises(ValueError, match="noise_variance_bounds"):
        cls(noise_variance_bounds="free").fit(X, y)
