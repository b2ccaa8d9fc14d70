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
from skgp_bayes._defaults import NOISE_VARIANCE_BOUNDS, merged_priors
from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.exceptions import DegenerateFitWarning, SamplerWarning
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.priors import PriorSet
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
    """The exact marginal posterior the chains sample, in their coordinates."""
    adapter = KernelAdapter(reg.kernel_)
    slices = dict(adapter.hyperparameter_slices)
    slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    prior_set = PriorSet(slices, merged_priors(None, slices, X.shape[1]))
    Xs = reg.input_scaling_.transform(X)
    return ExactMarginalTarget(adapter, Xs, (y - reg.y_mean_) / reg.y_std_, prior_set)


def test_noise_free_data_pile_the_noise_on_its_bound_and_the_chains_sample_it():
    # 30 points of sin(6x) without noise: the exact marginal posterior's
    # density rises towards ever smaller noise (each eigenvalue of K below
    # the noise adds about 1/2 per log unit), so its optimum is the lower
    # bound, the density falling away at 9.5 per log unit. On the wall every
    # trajectory that meets it diverges (on 200 such points the fit ran for
    # over fifteen minutes); the chains sample the log noise's log distance
    # from the bound instead, the same posterior without the wall.
    X, y = _noise_free()
    reg = VariationalMCMCRegressor(
        random_state=0, n_chains=4, n_warmup=300, n_samples=500, max_samples=500
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

    # The draws of (log signal variance, log length scale, distance of the
    # log noise variance from its bound) against quadrature of the same
    # density, in the last one's log, where it has no wall.
    target = _exact_target(reg, X, y)
    floor = np.log(NOISE_VARIANCE_BOUNDS[0])
    chains = reg.draws_[:, :3].reshape(reg.n_chains, -1, 3).copy()
    chains[..., 2] -= floor
    assert chains[..., 2].min() >= 0.0
    log_distance = np.log(np.maximum(chains[..., 2], 1e-300))
    pooled = chains.reshape(-1, 3)
    centre, spread = pooled[:, :2].mean(axis=0), pooled[:, :2].std(axis=0)
    mode_u = np.median(log_distance)
    grids = [
        np.linspace(c - 7 * s, c + 7 * s, 41)
        for c, s in zip(centre, spread, strict=True)
    ]
    grids.append(np.linspace(mode_u - 16.0, mode_u + 4.0, 81))
    a, b, u = np.meshgrid(*grids, indexing="ij")
    points = np.stack([a.ravel(), b.ravel(), floor + np.exp(u.ravel())], axis=1)
    # the Jacobian of the distance's log: + u
    logp = np.array([target.log_prob(p) for p in points]) + u.ravel()
    weights = np.exp(logp - logsumexp(logp)).reshape(a.shape)
    edges = (
        weights[[0, -1]].sum() + weights[:, [0, -1]].sum() + weights[..., [0, -1]].sum()
    )
    assert edges < 1e-5
    for j, grid in enumerate((a, b, np.exp(u))):
        exact_mean = np.sum(weights * grid)
        exact_sd = np.sqrt(np.sum(weights * (grid - exact_mean) ** 2))
        # Monte Carlo standard error of the draws' mean: sd / sqrt(ESS)
        error = exact_sd / np.sqrt(effective_sample_size(chains[..., j]))
        assert abs(pooled[:, j].mean() - exact_mean) < _Z * error, (j, exact_sd)

    # The fit interpolates the noise-free function between its points.
    X_test = np.linspace(0.05, 0.95, 50)[:, None]
    mean, sd = reg.predict(X_test, return_std=True)
    assert np.max(np.abs(mean - np.sin(6 * X_test[:, 0]))) < 0.01
    assert np.all(np.isfinite(sd))


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
