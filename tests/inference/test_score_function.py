"""Score-function estimator: unbiased against exact enumeration."""

import itertools

import numpy as np
import pytest
from scipy.special import expit

from skgp_bayes.inference import (
    DecayingBaseline,
    StationarityRule,
    bernoulli_score_gradient,
    estimate_bernoulli_gradient,
    leave_one_out_baseline,
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


def _run(f, logits, n_iter, n_samples, seed, baseline, vectorized=False):
    rng = np.random.default_rng(seed)
    grads = np.empty((n_iter, logits.size))
    if vectorized:
        g = f

        def f(masks):
            return np.array([g(b) for b in masks])

    for t in range(n_iter):
        grads[t] = estimate_bernoulli_gradient(
            f, logits, n_samples, rng, baseline, vectorized=vectorized
        )[0]
    return grads


@pytest.mark.statistical
@pytest.mark.parametrize("K", [1, 3, 8])
def test_average_matches_enumeration(K, stat_seed):
    f = _make_f(K, K + stat_seed)
    logits = np.random.default_rng(100 + K + stat_seed).normal(size=K)
    exact = _exact_gradient(f, logits)
    grads = _run(f, logits, 6000, 4, K + stat_seed, DecayingBaseline(0.9))
    mean = grads.mean(axis=0)
    # The baseline is updated only after each step, so the per-step errors
    # form a martingale difference sequence: the CLT gives a standard error
    # of std / sqrt(N). At 5 SE per coordinate a correct estimator fails
    # with probability below 8 * 6e-7.
    se = grads.std(axis=0) / np.sqrt(grads.shape[0])
    assert np.all(np.abs(mean - exact) < 5 * se + 1e-12), (mean, exact, se)


@pytest.mark.statistical
@pytest.mark.parametrize("K", [1, 3, 8])
def test_leave_one_out_matches_enumeration(K, stat_seed):
    f = _make_f(K, K + stat_seed)
    logits = np.random.default_rng(100 + K + stat_seed).normal(size=K)
    exact = _exact_gradient(f, logits)
    grads = _run(f, logits, 6000, 4, K + stat_seed, "leave-one-out", vectorized=True)
    # steps are independent: 5 standard errors per coordinate, as above
    se = grads.std(axis=0) / np.sqrt(grads.shape[0])
    assert np.all(np.abs(grads.mean(axis=0) - exact) < 5 * se + 1e-12)


def test_leave_one_out_baseline_values():
    values = np.array([1.0, 2.0, 6.0, -3.0])
    expected = [(values.sum() - v) / 3 for v in values]
    np.testing.assert_allclose(leave_one_out_baseline(values), expected)
    with pytest.raises(ValueError, match="at least 2"):
        leave_one_out_baseline([1.0])


@pytest.mark.statistical
def test_same_draw_baseline_bias_is_detected(stat_seed):
    # The criterion above can fail: a baseline that uses the draws' own mean
    # shrinks the estimate by (S - 1) / S, which the same test rejects. For
    # these f and logits (fixed: the bias must be large to be detected) the
    # bias exact / S is 28, 20 and 5 standard errors by coordinate, so the
    # first coordinate alone misses 5 SE with probability Phi(5 - 28) <
    # 1e-100.
    K, S = 3, 4
    f = _make_f(K, K)
    logits = np.random.default_rng(100 + K).normal(size=K)
    exact = _exact_gradient(f, logits)
    rng = np.random.default_rng(stat_seed)
    grads = np.empty((6000, K))
    for t in range(grads.shape[0]):
        masks = rng.random((S, K)) < expit(logits)
        values = np.array([f(b) for b in masks])
        grads[t] = bernoulli_score_gradient(values, masks, logits, values.mean())
    se = grads.std(axis=0) / np.sqrt(grads.shape[0])
    assert np.any(np.abs(grads.mean(axis=0) - exact) > 5 * se)


@pytest.mark.statistical
def test_baseline_reduces_variance(stat_seed):
    K = 5
    f = _make_f(K, 7)
    logits = np.zeros(K)
    plain = _run(f, logits, 3000, 4, 1 + stat_seed, None)
    with_baseline = _run(f, logits, 3000, 4, 1 + stat_seed, DecayingBaseline(0.9))
    # The offset of 20 dominates f. By enumeration of the 32 masks, the
    # constant baseline E[f] cuts the summed variance to 0.00098 of the
    # plain one; the decaying baseline adds its lag (about 1.3% of Var f
    # times sum lambda (1 - lambda) / S, 5e-5 of the plain variance) and its
    # first step, taken with a baseline of 0 (1/3000 of it on average): an
    # expected ratio of about 0.0013. Each variance sum has a relative
    # standard error of about 5% (3000 draws), so 0.005 is far above 5 of
    # them, while a missing or misplaced baseline gives 1.
    assert with_baseline.var(axis=0).sum() < 0.005 * plain.var(axis=0).sum()
    # The leave-one-out baseline removes the offset exactly; what remains is
    # (S / (S - 1)) times the variance with the constant E[f]: 0.0013 of the
    # plain variance by the enumeration above, against the same 0.005.
    loo = _run(f, logits, 3000, 4, 1 + stat_seed, "leave-one-out")
    assert loo.var(axis=0).sum() < 0.005 * plain.var(axis=0).sum()


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
    with pytest.raises(ValueError, match="n_samples >= 2"):
        estimate_bernoulli_gradient(
            np.sum, np.zeros(2), 1, np.random.default_rng(), "leave-one-out"
        )
    with pytest.raises(ValueError, match="leave-one-out"):
        estimate_bernoulli_gradient(
            np.sum, np.zeros(2), 2, np.random.default_rng(), "mean"
        )
    with pytest.raises(ValueError, match="3 values for 2 masks"):
        estimate_bernoulli_gradient(
            lambda masks: np.zeros(3),
            np.zeros(2),
            2,
            np.random.default_rng(),
            vectorized=True,
        )
    with pytest.raises(ValueError, match="baseline"):
        bernoulli_score_gradient([1.0, 2.0], [[1], [0]], np.zeros(1), [0.0])


# ------------------------------------------------------- stationarity rule


def _first_stop(rule, series):
    for t, row in enumerate(series, start=1):
        if rule.update(row):
            return t
    return None


@pytest.mark.statistical
def test_stationarity_rule_stops_on_noise(stat_seed):
    # Two i.i.d. Gaussian quantities: each test's statistic is Student's t
    # with 8 degrees of freedom per quantity, so a test fails with
    # probability 1 - 0.92^2 = 0.155. 1000 steps hold 10 disjoint pairs of
    # windows, so no stop in 1000 steps has probability below 0.155^10
    # (1e-8).
    rng = np.random.default_rng(stat_seed)
    series = rng.normal(size=(1000, 2)) * [1.0, 1e-3]
    stop = _first_stop(StationarityRule(), series)
    assert stop is not None and stop % 50 == 0 and stop >= 100


@pytest.mark.statistical
def test_stationarity_rule_does_not_stop_on_a_trend(stat_seed):
    # A drift of 0.1 noise sds per step: a window's mean moves 5 sds (give
    # or take sqrt(2 / 50) = 0.2) past the previous one. Its batch means
    # step by 1 sd, a sample variance of 2.5 plus 0.1 of noise, so the
    # standard error of the change is about 1.0 and the statistic about 5.
    # Falling to 2 needs the batch variances to reach 31 in sum against
    # 5.2 expected, which their noise part (0.1 times a chi-square with 4
    # degrees of freedom, plus cross terms of similar size) practically
    # never gives (far below 1e-12 per test).
    rng = np.random.default_rng(stat_seed)
    t = np.arange(1000)[:, None]
    series = np.hstack(
        [rng.normal(size=(1000, 1)), 0.1 * t + rng.normal(size=(1000, 1))]
    )
    rule = StationarityRule()
    assert _first_stop(rule, series) is None
    assert rule.z_scores[1] > 2 and not rule.converged


def test_stationarity_rule_is_scale_free():
    # scaling by a power of two is exact in floating point: the decisions
    # must be identical
    rng = np.random.default_rng(0)
    series = rng.normal(size=(600, 2)) + np.exp(-np.arange(600) / 60.0)[:, None]
    stops = [
        _first_stop(StationarityRule(), series * scale)
        for scale in (1.0, 2.0**-40, 2.0**40)
    ]
    assert stops[0] is not None and stops == [stops[0]] * 3


def test_stationarity_rule_checks_its_arguments():
    with pytest.raises(ValueError, match="n_batches"):
        StationarityRule(window=10, n_batches=1)
    with pytest.raises(ValueError, match="n_batches"):
        StationarityRule(window=3, n_batches=5)
    with pytest.raises(ValueError, match="z"):
        StationarityRule(z=0.0)
