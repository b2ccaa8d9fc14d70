"""Score-function estimator: unbiased against exact enumeration."""

import itertools

import numpy as np
import pytest
from scipy.special import expit

from skgp_bayes.inference import (
    DecayingBaseline,
    bernoulli_score_gradient,
    estimate_bernoulli_gradient,
)


def _all_masks(K):
    return np.array(list(itertools.product([0, 1], repeat=K)), dtype=np.float64)


def _make_f(K, seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=K)
    c = rng.normal(size=K)

    # A large offset makes the baseline matter; the rest is non-linear so
    # that the gradient is not a trivial function of the probabilities.
    def f(b):
        b = np.asarray(b, dtype=np.float64)
        return 20.0 + np.sin(b @ w) + 0.5 * (b @ c) ** 2

    return f


def _exact_gradient(f, logits):
    masks = _all_masks(logits.size)
    lam = expit(logits)
    q = np.prod(np.where(masks == 1, lam, 1 - lam), axis=1)
    values = np.array([f(b) for b in masks])
    return (q * values) @ (masks - lam)


def _run(f, logits, n_iter, n_samples, seed, baseline):
    rng = np.random.default_rng(seed)
    grads = np.empty((n_iter, logits.size))
    for t in range(n_iter):
        grads[t] = estimate_bernoulli_gradient(f, logits, n_samples, rng, baseline)[0]
    return grads


@pytest.mark.parametrize("K", [1, 3, 8])
def test_average_matches_enumeration(K):
    f = _make_f(K, K)
    logits = np.random.default_rng(100 + K).normal(size=K)
    exact = _exact_gradient(f, logits)
    grads = _run(f, logits, 6000, 4, K, DecayingBaseline(0.9))
    mean = grads.mean(axis=0)
    # The baseline is updated only after each step, so the per-step errors
    # form a martingale difference sequence: the CLT gives a standard error
    # of std / sqrt(N). At 5 SE per coordinate a correct estimator fails
    # with probability below 8 * 6e-7.
    se = grads.std(axis=0) / np.sqrt(grads.shape[0])
    assert np.all(np.abs(mean - exact) < 5 * se + 1e-12), (mean, exact, se)


def test_same_draw_baseline_bias_is_detected():
    # The criterion above can fail: a baseline that uses the draws' own mean
    # shrinks the estimate by (S - 1) / S, which the same test rejects.
    K, S = 3, 4
    f = _make_f(K, K)
    logits = np.random.default_rng(100 + K).normal(size=K)
    exact = _exact_gradient(f, logits)
    rng = np.random.default_rng(0)
    grads = np.empty((6000, K))
    for t in range(grads.shape[0]):
        masks = rng.random((S, K)) < expit(logits)
        values = np.array([f(b) for b in masks])
        grads[t] = bernoulli_score_gradient(values, masks, logits, values.mean())
    se = grads.std(axis=0) / np.sqrt(grads.shape[0])
    assert np.any(np.abs(grads.mean(axis=0) - exact) > 5 * se)


def test_baseline_reduces_variance():
    K = 5
    f = _make_f(K, 7)
    logits = np.zeros(K)
    plain = _run(f, logits, 3000, 4, 1, None)
    with_baseline = _run(f, logits, 3000, 4, 1, DecayingBaseline(0.9))
    # the offset of 20 dominates f; subtracting its running level must cut
    # the variance by a large factor, not by sampling luck
    assert with_baseline.var(axis=0).sum() < 0.2 * plain.var(axis=0).sum()


def test_extras_and_shapes():
    rng = np.random.default_rng(0)
    grad, values, masks, extras = estimate_bernoulli_gradient(
        lambda b: (float(b.sum()), b.nonzero()[0]), np.zeros(4), 3, rng
    )
    assert grad.shape == (4,) and values.shape == (3,) and masks.shape == (3, 4)
    for b, extra, value in zip(masks, extras, values, strict=True):
        np.testing.assert_array_equal(extra, b.nonzero()[0])
        assert value == b.sum()


def test_bad_input():
    with pytest.raises(ValueError, match="decay"):
        DecayingBaseline(1.0)
    with pytest.raises(ValueError, match="masks"):
        bernoulli_score_gradient([1.0, 2.0], [[True]], np.zeros(1))
    with pytest.raises(ValueError, match="n_samples"):
        estimate_bernoulli_gradient(np.sum, np.zeros(2), 0, np.random.default_rng())
