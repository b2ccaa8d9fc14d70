"""The compiled Poisson log-normal mixture CDF against SciPy's ``pdtr``.

Both sum the same Gauss-Hermite atoms; the compiled one accumulates the
Poisson CDF by its recursion, so the two agree to rounding (1e-12 leaves
room for sums over a few hundred terms).
"""

import numpy as np
import pytest
from scipy.special import pdtr

from skgp_bayes.likelihoods import Poisson, gauss_hermite
from skgp_bayes.predictive._distributions import PoissonMixturePredictive
from skgp_bayes.predictive._poisson_numba import (
    MAX_COUNT,
    MAX_RATE,
    mixture_poisson_cdf,
)


def _reference(k, mu, sd, n_nodes=64):
    nodes, weights = gauss_hermite(n_nodes)
    with np.errstate(over="ignore"):
        rate = np.exp(mu[:, :, None, None] + sd[:, :, None, None] * nodes)
    below = np.where(k[..., None] < 0, 0.0, pdtr(np.maximum(k, 0)[..., None], rate))
    return (below @ weights).mean(axis=0)


def _draws(seed, S=200, m=10):
    rng = np.random.default_rng(seed)
    mu = rng.normal(1.0, 1.5, (S, m))
    mu[:, 3] += 5.0  # rates in the hundreds, some atoms beyond MAX_RATE
    sd = rng.uniform(0.0, 2.0, (S, m))
    return rng, mu, sd


@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_cdf_matches_pdtr(seed):
    rng, mu, sd = _draws(seed)
    k = rng.integers(-1, MAX_COUNT + 1, (mu.shape[1], 3)).astype(float)
    k[0] = [-1.0, 0.0, MAX_COUNT]
    nodes, weights = gauss_hermite(64)
    got = mixture_poisson_cdf(k, mu, sd, nodes, weights)
    np.testing.assert_allclose(got, _reference(k, mu, sd), rtol=0, atol=1e-12)
    assert np.all(got[0, 0] == 0.0)
    # the atoms skipped as too large do occur
    assert np.exp(mu + 10.0 * sd).max() > MAX_RATE


def test_predictive_cdf_sends_long_sums_to_pdtr():
    rng, mu, sd = _draws(2)
    mix = PoissonMixturePredictive(mu, sd**2, Poisson())
    k = np.stack([rng.integers(0, 40, 10), rng.integers(0, 2000, 10)], 1)
    k[4, 1] = MAX_COUNT + 1
    np.testing.assert_allclose(
        mix.cdf(k), _reference(k.astype(float), mu, sd), atol=1e-12
    )
    one_level = mix.cdf(k[:, 0] + 0.7)  # (m,) counts, floored
    np.testing.assert_allclose(
        one_level, _reference(k[:, :1].astype(float), mu, sd)[:, 0], atol=1e-12
    )
    assert one_level.shape == (10,)


def test_quantiles_bracket_their_levels():
    _, mu, sd = _draws(3)
    mix = PoissonMixturePredictive(mu, sd**2, Poisson())
    levels = np.array([0.05, 0.5, 0.95])
    q = mix.quantiles(levels)
    assert np.all(mix.cdf(q) >= levels) and np.all(mix.cdf(q - 1) < levels)
