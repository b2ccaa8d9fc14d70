"""Walls in the chains' reach: of a side mode, and along a ridge.

A posterior with two modes, one of them close to a bound (the signal
variance's floor under a mode of little signal), had its chains jump
between the modes in the hyperparameters' own coordinates, where every
trajectory that reached the bound was rejected as divergent. The bound is
now a log distance wherever any mode reaches it, and the jumps move to the
same coordinates. A wall far down along its own coordinate can be within
reach along a ridge, where other coordinates move with it.
"""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.inference import run_hmc
from skgp_bayes.inference.mode_jumps import laplace_mixture
from skgp_bayes.variational_mcmc._bounds import RIDGE_LOOK, WALL_REACH, reachable_walls
from skgp_bayes.variational_mcmc._pipelines import _walls_away
from skgp_bayes.variational_mcmc._sampling import GuardedTarget

# 0.4 N((3, -3), diag(1, 0.25)) + 0.6 N((3.5, 3), diag(0.16, 0.25)) on
# (0, 20] x [-20, 20]: the wall x = 0 lies 4.5 nats below the low mode's
# top along its x, and 38 below the optimum's along its own; the modes,
# apart in y, are 70 nats of valley apart. Both lie about as far from the
# wall, as the log signal variances of the fits that met it did (its
# floor 10-12 log units below either mode).
_WEIGHTS = np.array([0.4, 0.6])
_MEANS = np.array([[3.0, -3.0], [3.5, 3.0]])
_SDS = np.array([[1.0, 0.5], [0.4, 0.5]])
_BOUNDS = np.array([[0.0, 20.0], [-20.0, 20.0]])


class _NearWall:
    def logp_and_grad(self, x):
        z = (x - _MEANS) / _SDS
        terms = np.log(_WEIGHTS) - np.log(_SDS).sum(axis=1) - 0.5 * np.sum(z**2, axis=1)
        value = logsumexp(terms)
        resp = np.exp(terms - value)
        return float(value), -(resp @ (z / _SDS))


def _masses():
    """Each mode's mass inside the bounds, unnormalised."""
    inside = [
        norm(_MEANS[:, j], _SDS[:, j]).cdf(_BOUNDS[j, 1])
        - norm(_MEANS[:, j], _SDS[:, j]).cdf(_BOUNDS[j, 0])
        for j in range(2)
    ]
    return _WEIGHTS * inside[0] * inside[1]


def _setting():
    guarded = GuardedTarget(_NearWall(), _BOUNDS[:, 0], _BOUNDS[:, 1])
    optimum = _MEANS[1].copy()
    jumps = laplace_mixture(guarded.target, [optimum, _MEANS[0]], _BOUNDS)
    return guarded, optimum, jumps


def test_a_wall_in_reach_of_a_side_mode_becomes_a_log_distance():
    guarded, optimum, jumps = _setting()
    no_modes, _ = _walls_away(guarded, optimum, None)  # out of the optimum's reach
    assert no_modes is None
    coords, mapped = _walls_away(guarded, optimum, jumps)
    assert coords.piled_coordinates().tolist() == [True, False]
    # the mapped modes are the stationary points of the density of log x:
    # d/dz [-(e^z - m)^2 / (2 s^2) + z] = 0 at x^2 - m x - s^2 = 0
    order = np.argsort(mapped.means[:, 1])
    x = coords.expand(mapped.means)[order]
    m, sd = _MEANS[:, 0], _SDS[:, 0]
    np.testing.assert_allclose(x[:, 0], (m + np.sqrt(m**2 + 4 * sd**2)) / 2, rtol=1e-4)
    np.testing.assert_allclose(x[:, 1], _MEANS[:, 1], atol=1e-4)
    # the Laplace masses in log x carry the Jacobian: the weights are the
    # modes' shares to within the Laplace error
    weights = np.exp(mapped.log_weights - logsumexp(mapped.log_weights))[order]
    shares = _masses() / _masses().sum()
    np.testing.assert_allclose(weights, shares, atol=0.05)


def test_without_a_reachable_wall_the_jumps_stay_as_they_were():
    _, optimum, jumps = _setting()
    far = GuardedTarget(_NearWall(), np.array([-20.0, -20.0]), np.array([20.0, 20.0]))
    coords, same = _walls_away(far, optimum, jumps)
    assert coords is None and same is jumps


def _chains(target, start, jumps, seeds):
    return [
        run_hmc(
            target,
            start,
            n_warmup=300,
            n_samples=1500,
            random_state=seed,
            jumps=jumps,
        )
        for seed in seeds
    ]


@pytest.mark.statistical
def test_chains_in_log_distance_hold_each_mode_at_its_share(stat_seed):
    guarded, optimum, jumps = _setting()
    coords, mapped = _walls_away(guarded, optimum, jumps)
    runs = _chains(coords, coords.start, mapped, [2 * stat_seed + c for c in range(2)])
    draws = np.stack([coords.expand(r.samples) for r in runs])
    upper = (draws[..., 1] > 0).astype(float)
    share, exact = upper.mean(), _masses()[1] / _masses().sum()
    # 5 standard errors from the chains' own ESS of the indicator: a false
    # failure about 6e-7 under normality (the ESS estimate errs by 10-20%)
    se = np.sqrt(share * (1 - share) / effective_sample_size(upper))
    assert abs(share - exact) < 5 * se, (share, exact, se)
    # inside the low mode x keeps its mean, truncated at the wall; the
    # ratio estimate's error is that of the mean of g = (x - exact) 1{low},
    # over P(low) (the delta method), g's Monte Carlo error from its ESS
    in_low = draws[..., 1] < 0
    a = -_MEANS[0, 0] / _SDS[0, 0]
    exact_low = _MEANS[0, 0] + _SDS[0, 0] * norm.pdf(a) / norm.sf(a)
    g = np.where(in_low, draws[..., 0] - exact_low, 0.0)
    se_low = g.std() / np.sqrt(effective_sample_size(g)) / in_low.mean()
    error = draws[..., 0][in_low].mean() - exact_low
    assert abs(error) < 5 * se_low, (error, se_low)
    assert all(r.n_divergent == 0 for r in runs)
    assert all(0 < r.n_jumps_accepted < r.n_jumps for r in runs)


def test_in_the_hyperparameters_own_coordinates_the_wall_diverges():
    # what the log distance removes: the same chains on x meet the wall,
    # about 1.4 times a chain (eight chains of seeds 0-7: 1, 1, 3, 1, 1, 1,
    # 1, 2), so eight chains without one would be a chance of about e^-11
    guarded, optimum, jumps = _setting()
    runs = _chains(guarded, optimum, jumps, range(8))
    assert sum(r.n_divergent for r in runs) > 0


class _Ridge:
    """N(0, [[1, c], [c, 1]]): x and y move together (c = 0.98 by default)."""

    def __init__(self, correlation=0.98):
        c = correlation
        self.precision = np.linalg.inv(np.array([[1.0, c], [c, 1.0]]))

    def logp_and_grad(self, x):
        g = -self.precision @ x
        return float(0.5 * x @ g), g


def test_a_wall_in_reach_along_a_ridge_is_reachable():
    # x's lower bound at -1.5: moving x alone, the density there is
    # 0.5 * 25.25 * 1.5^2 = 28.4 nats down; with y following x (the
    # highest density on the wall), 0.5 * 1.5^2 = 1.1
    guarded = GuardedTarget(_Ridge(), np.array([-1.5, -9.0]), np.array([9.0, 9.0]))
    x0 = np.zeros(2)
    on_axis = guarded(np.array([-1.5, 0.0]))[0]
    assert WALL_REACH < -on_axis < RIDGE_LOOK
    lower, upper = reachable_walls(guarded, x0, 0.0, np.array([True, True]))
    assert lower.tolist() == [True, False] and not upper.any()
    # as a log distance, with the jumps' coordinates unchanged (none)
    coords, jumps = _walls_away(guarded, x0, None)
    assert coords.piled_coordinates().tolist() == [True, False] and jumps is None


def test_a_floor_marked_as_a_ridge_is_looked_for_however_far_its_axis_falls():
    # x's floor at -1.5: 0.5 * 5000.25 * 1.5^2 = 5,625 nats down moving x
    # alone, far past RIDGE_LOOK, and 1.1 along the ridge. Unmarked, no
    # search is spent on it; marked (the noise variance's floor, which
    # nearly exact data reach along such a ridge), it is found.
    # correlation 0.9999: x alone falls 5,000 times faster than the ridge
    guarded = GuardedTarget(
        _Ridge(0.9999), np.array([-1.5, -9.0]), np.array([9.0, 9.0])
    )
    x0, every = np.zeros(2), np.array([True, True])
    assert -guarded(np.array([-1.5, 0.0]))[0] > RIDGE_LOOK
    lower, _ = reachable_walls(guarded, x0, 0.0, every)
    assert not lower.any()
    marked = np.array([True, False])
    lower, upper = reachable_walls(guarded, x0, 0.0, every, ridges=marked)
    assert lower.tolist() == [True, False] and not upper.any()
    coords, _ = _walls_away(guarded, x0, None, marked)
    assert coords.piled_coordinates().tolist() == [True, False]


def test_the_regressor_marks_its_noise_variance_as_a_ridge(monkeypatch):
    from skgp_bayes import VariationalMCMCRegressor
    from skgp_bayes.variational_mcmc import _pipelines

    seen = []
    real = _pipelines._walls_away

    def spy(guarded, hyper, mode_jumps, ridges=None):
        seen.append(ridges)
        return real(guarded, hyper, mode_jumps, ridges)

    monkeypatch.setattr(_pipelines, "_walls_away", spy)
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (80, 2))
    y = np.sin(4 * X[:, 0]) + 0.1 * rng.standard_normal(80)
    reg = VariationalMCMCRegressor(
        n_chains=2, n_warmup=30, n_samples=30, max_samples=30, random_state=0
    ).fit(X, y)
    names = reg.param_names_[: seen[0].size]
    assert seen and seen[0].tolist() == [n == "noise_variance" for n in names]
    assert seen[0].sum() == 1
