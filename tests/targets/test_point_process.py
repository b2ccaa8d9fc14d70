"""Bernoulli point process: closed-form KL against enumeration, gradients."""

import itertools

import numpy as np
import pytest
from scipy.special import expit

from skgp_bayes.targets.selective import BernoulliPointProcess, log_prior_normaliser


def _all_masks(K):
    return np.array(list(itertools.product([0, 1], repeat=K)), dtype=np.float64)


def _kl_by_enumeration(process, logits):
    masks = _all_masks(process.n_candidates)
    log_q = process.log_prob(masks, logits)
    q = np.exp(log_q)
    # the prior normalised independently of the class: sum over all 2^K masks
    log_unnorm = -process.alpha * masks.sum(axis=1) ** process.power
    log_p = log_unnorm - np.logaddexp.reduce(log_unnorm)
    return float(np.sum(q * (log_q - log_p)))


@pytest.mark.parametrize("power", [1, 2])
@pytest.mark.parametrize("K", [1, 2, 5, 10])
def test_kl_matches_enumeration(K, power):
    rng = np.random.default_rng(K + 10 * power)
    process = BernoulliPointProcess(K, alpha=0.3, power=power)
    for _ in range(3):
        logits = rng.normal(scale=2.0, size=K)
        kl, _ = process.kl_and_grad(logits)
        # both sides are O(1) sums of 2^K float64 terms: 1e-10 is far above
        # rounding and far below any modelling error (e.g. a missing term)
        assert kl == pytest.approx(_kl_by_enumeration(process, logits), abs=1e-10)
        assert kl >= -1e-12


def test_q_and_prior_are_normalised():
    K = 6
    process = BernoulliPointProcess(K, alpha=0.2)
    masks = _all_masks(K)
    logits = np.linspace(-2, 2, K)
    assert np.exp(process.log_prob(masks, logits)).sum() == pytest.approx(1.0)
    assert np.exp(process.log_prior(masks)).sum() == pytest.approx(1.0)


def test_moments_match_enumeration():
    K = 8
    process = BernoulliPointProcess(K, alpha=0.1)
    logits = np.random.default_rng(1).normal(size=K)
    masks = _all_masks(K)
    q = np.exp(process.log_prob(masks, logits))
    counts = masks.sum(axis=1)
    mean, var = process.cardinality_moments(logits)
    assert mean == pytest.approx(np.sum(q * counts))
    assert var == pytest.approx(np.sum(q * counts**2) - np.sum(q * counts) ** 2)


@pytest.mark.parametrize("power", [1, 2])
def test_kl_gradient_matches_finite_differences(power):
    K = 7
    process = BernoulliPointProcess(K, alpha=0.15, power=power)
    logits = np.random.default_rng(2).normal(scale=1.5, size=K)
    _, grad = process.kl_and_grad(logits)
    h = 1e-6
    fd = np.empty(K)
    for k in range(K):
        e = np.zeros(K)
        e[k] = h
        fd[k] = (
            process.kl_and_grad(logits + e)[0] - process.kl_and_grad(logits - e)[0]
        ) / (2 * h)
    # central differences: O(h^2) truncation plus O(eps / h) rounding ~ 1e-9
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_kl_finite_when_probabilities_saturate():
    process = BernoulliPointProcess(5, alpha=0.1)
    logits = np.array([-800.0, 800.0, 0.0, 40.0, -40.0])
    kl, grad = process.kl_and_grad(logits)
    assert np.isfinite(kl)
    assert np.all(np.isfinite(grad))


@pytest.mark.statistical
def test_score_and_sampling(stat_seed):
    process = BernoulliPointProcess(4, alpha=0.1)
    logits = np.array([-1.0, 0.0, 1.0, 3.0])
    b = np.array([1, 0, 1, 1])
    np.testing.assert_allclose(process.score(b, logits), b - expit(logits))
    n = 20000
    draws = process.sample(logits, n, np.random.default_rng(3 + stat_seed))
    # binomial standard error sqrt(p (1 - p) / n) per candidate; 5 of them on
    # 4 candidates: false failure 4 x 5.7e-7
    p = expit(logits)
    np.testing.assert_array_less(
        np.abs(draws.mean(axis=0) - p), 5 * np.sqrt(p * (1 - p) / n)
    )


def test_normaliser_and_bad_input():
    assert log_prior_normaliser(4, 0.0) == pytest.approx(4 * np.log(2.0))
    with pytest.raises(ValueError, match="alpha"):
        BernoulliPointProcess(3, alpha=-1.0)
    with pytest.raises(ValueError, match="power"):
        BernoulliPointProcess(3, alpha=1.0, power=3)
    with pytest.raises(ValueError, match="n_candidates"):
        BernoulliPointProcess(0, alpha=1.0)
    with pytest.raises(ValueError, match="shape"):
        BernoulliPointProcess(3, alpha=1.0).kl_and_grad(np.zeros(2))
