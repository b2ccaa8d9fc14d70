import numpy as np
import pytest
from scipy import stats
from scipy.signal import lfilter

from skgp_bayes.diagnostics import (
    effective_sample_size,
    kernel_stein_discrepancy,
    rank_normalize,
    rank_rhat_and_bulk_ess,
    split_chains,
    split_rhat,
)


def _ar1(rng, rho, n_chains, n_draws):
    """Stationary AR(1) chains x_t = rho x_{t-1} + e_t, e_t ~ N(0, 1)."""
    e = rng.standard_normal((n_chains, n_draws))
    e[:, 0] /= np.sqrt(1 - rho**2)
    return lfilter([1.0], [1.0, -rho], e, axis=1)


# --------------------------------------------------------------------- R-hat


def _rhat_reference(chains, split=True):
    """Classic split-R-hat with explicit loops (BDA3, section 11.4)."""
    chains = np.asarray(chains, dtype=float)
    half = chains.shape[1] // 2
    pieces = []
    for c in chains:
        if split:
            pieces.append(c[:half])
            pieces.append(c[len(c) - half :])
        else:
            pieces.append(c)
            half = len(c)
    m, n = len(pieces), half
    means = [sum(p) / n for p in pieces]
    grand = sum(means) / m
    B = n / (m - 1) * sum((mu - grand) ** 2 for mu in means)
    W = sum(np.var(p, ddof=1) for p in pieces) / m
    var_plus = (n - 1) / n * W + B / n
    return np.sqrt(var_plus / W)


def test_split_rhat_hand_value():
    # Halves [1, 2], [3, 4], [2, 4], [6, 8]: means 1.5, 3.5, 3, 7 and
    # variances 0.5, 0.5, 2, 2, so W = 5/4 and B/n = var(means) = 65/12.
    # var+ = (1/2)(5/4) + 65/12 = 145/24 and R-hat = sqrt(var+/W) = sqrt(29/6).
    chains = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0]])
    assert split_rhat(chains) == pytest.approx(np.sqrt(29 / 6), rel=1e-12)


def test_split_rhat_matches_loop_reference_odd_draws():
    rng = np.random.default_rng(0)
    chains = rng.standard_normal((3, 9)) + np.arange(9) / 5.0
    # An odd number of draws drops the middle one.
    assert split_rhat(chains) == pytest.approx(_rhat_reference(chains), rel=1e-12)


def test_split_rhat_rank_normalized_matches_scipy_reference():
    rng = np.random.default_rng(1)
    chains = np.round(rng.standard_normal((3, 10)), 1)  # rounding makes ties
    half = 5
    split = np.concatenate([chains[:, :half], chains[:, -half:]])

    def z(values):
        r = stats.rankdata(values.ravel()).reshape(values.shape)
        return stats.norm.ppf((r - 0.375) / (values.size + 0.25))

    bulk = _rhat_reference(z(split), split=False)
    tail = _rhat_reference(z(np.abs(split - np.median(split))), split=False)
    expected = max(bulk, tail)
    assert split_rhat(chains, rank_normalized=True) == pytest.approx(
        expected, rel=1e-10
    )


@pytest.mark.statistical
@pytest.mark.parametrize("rank_normalized", [False, True])
def test_split_rhat_iid_near_one(rank_normalized, stat_seed):
    rng = np.random.default_rng(2 + stat_seed)
    draws = rng.standard_normal((4, 1000, 3))
    rhat = split_rhat(draws, rank_normalized=rank_normalized)
    assert rhat.shape == (3,)
    # For iid draws in m = 8 split chains of n = 500, B / sigma^2 is
    # chi2(m - 1) / (m - 1) and W / sigma^2 is within 5 of its relative sds
    # sqrt(2 / (m (n - 1))) of 1, so R-hat^2 = (n - 1) / n + B / (n W) stays
    # below its value at the chi2 quantile 1 - 1e-6 (rank-normalised draws
    # are normal scores, the same law; bulk and tail are two such values):
    # false failure below 2 x 3 x 1.3e-6 ~ 8e-6. Below 1 it cannot go
    # further than sqrt(1 - 1/n).
    m, n = 8, 500
    w_low = 1 - 5 * np.sqrt(2 / (m * (n - 1)))
    b_high = stats.chi2.ppf(1 - 1e-6, m - 1) / (m - 1)
    upper = np.sqrt((n - 1) / n + b_high / (n * w_low))
    assert np.all(rhat < upper)
    assert np.all(rhat >= np.sqrt((n - 1) / n) - 1e-12)


@pytest.mark.statistical
@pytest.mark.parametrize("rank_normalized", [False, True])
def test_split_rhat_shifted_chains(rank_normalized, stat_seed):
    # Over 50 seeds R-hat was 1.33 (1.32 rank-normalised) with sd 0.018:
    # 1.1 lies 12 sd below, a false failure far below 1e-9.
    rng = np.random.default_rng(3 + stat_seed)
    draws = rng.standard_normal((4, 500)) + np.array([[0.0], [0.0], [1.0], [2.0]])
    assert split_rhat(draws, rank_normalized=rank_normalized) > 1.1


@pytest.mark.statistical
def test_split_rhat_detects_drift_in_single_chain(stat_seed):
    # Over 50 seeds R-hat was 1.39 with sd 0.037: 1.1 lies 8 sd below.
    rng = np.random.default_rng(4 + stat_seed)
    chain = rng.standard_normal((1, 1000)) + np.linspace(0, 3, 1000)
    assert split_rhat(chain) > 1.1


@pytest.mark.statistical
def test_rank_normalized_rhat_detects_scale_difference(stat_seed):
    # Same mean, one chain four times wider: the classic R-hat misses it, the
    # folded (tail) R-hat does not. Over 50 seeds the classic one was 1.0003
    # with sd 0.0012 (1.05 lies 40 sd above) and the rank-normalised one
    # 1.20 with sd 0.013 (1.1 lies 7.8 sd below): false failure < 1e-9.
    rng = np.random.default_rng(5 + stat_seed)
    draws = rng.standard_normal((4, 1000)) * np.array([[1.0], [1.0], [1.0], [4.0]])
    assert split_rhat(draws) < 1.05
    assert split_rhat(draws, rank_normalized=True) > 1.1


def test_split_rhat_constant_and_bad_input():
    with np.errstate(all="raise"):
        assert np.isnan(split_rhat(np.ones((2, 10))))
    with pytest.raises(ValueError):
        split_rhat(np.ones(10))
    with pytest.raises(ValueError):
        split_rhat(np.ones((2, 3)))


# ----------------------------------------------------------------------- ESS


def _ess_reference(chains):
    """Multi-chain ESS with explicit loops, as Stan computes it: direct
    autocovariance sums; Geyer's positive pairs, looked at while the lag is
    below n - 1 and stopped before the first pair that is not positive (K),
    made monotone; tau = -1 + 2 sum + rho_{2K} when that is positive; tau
    floored at 1/log10(total draws)."""
    chains = np.asarray(chains, dtype=float)
    m, n = chains.shape
    means = chains.mean(axis=1)
    acov = np.zeros((m, n))
    for c in range(m):
        d = chains[c] - means[c]
        for t in range(n):
            acov[c, t] = sum(d[i] * d[i + t] for i in range(n - t)) / n
    W = np.mean([np.var(c, ddof=1) for c in chains])
    var_plus = (n - 1) / n * W + (np.var(means, ddof=1) if m > 1 else 0.0)
    rho = [1.0] + [1 - (W - acov[:, t].mean()) / var_plus for t in range(1, n)]
    pairs = [rho[0] + rho[1]]
    k = 1
    while 2 * k + 1 < n - 1:
        p = rho[2 * k] + rho[2 * k + 1]
        if p <= 0:
            break
        pairs.append(min(p, pairs[-1]))
        k += 1
    else:
        pairs.pop()  # the last pair looked at only lends its even lag
        k -= 1
    tau = -1 + 2 * sum(pairs) + max(rho[2 * k], 0.0)
    return m * n / max(tau, 1 / np.log10(m * n))


def test_ess_hand_value_with_floor():
    # One chain [1, 2, 3, 4]: centred draws -1.5, -0.5, 0.5, 1.5 give biased
    # autocovariances 5/4 and 5/16 at lags 0 and 1, so rho_1 = 1/4 - 1/3 =
    # -1/12 (the -1/(n-1) comes from W using ddof=1), and the second pair is
    # negative. tau = -1 + 2 (1 - 1/12) = 5/6 is below the floor 1/log10(4),
    # so ESS = 4 log10(4).
    chain = np.array([[1.0, 2.0, 3.0, 4.0]])
    assert effective_sample_size(chain) == pytest.approx(4 * np.log10(4))


@pytest.mark.parametrize("shape", [(3, 12), (2, 15), (1, 20)])
def test_ess_matches_loop_reference(shape):
    rng = np.random.default_rng(sum(shape))
    chains = _ar1(rng, 0.6, *shape)
    assert effective_sample_size(chains) == pytest.approx(
        _ess_reference(chains), rel=1e-10
    )


def test_ess_and_rhat_equal_arviz():
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(11)
    for n_chains, n_draws, phi in [(1, 50, 0.9), (2, 301, 0.5), (4, 1000, -0.4)]:
        chains = _ar1(rng, phi, n_chains, n_draws)
        chains[0] += 0.2
        ranks = rank_normalize(split_chains(chains[:, :, None]))[:, :, 0]
        assert effective_sample_size(ranks) == pytest.approx(
            az.ess(chains, method="bulk"), rel=1e-12
        )
        if n_chains > 1:
            assert split_rhat(chains, rank_normalized=True) == pytest.approx(
                az.rhat(chains, method="rank"), rel=1e-12
            )


@pytest.mark.statistical
def test_ess_iid(stat_seed):
    rng = np.random.default_rng(6 + stat_seed)
    draws = rng.standard_normal((4, 2000, 2))
    ess = effective_sample_size(draws)
    assert ess.shape == (2,)
    # Over 100 seeds at 4 x 1000 draws the ratio ESS / (4 n) had mean 0.98
    # and sd 0.05; at 4 x 2000 the sd is about 0.035, so 20% is 5 sd beyond
    # the 2% bias: false failure 2 x 5.7e-7 in a normal approximation.
    np.testing.assert_allclose(ess, 8000, rtol=0.2)


@pytest.mark.statistical
def test_ess_ar1_theory(stat_seed):
    # For AR(1) the integrated autocorrelation time is (1 + rho) / (1 - rho),
    # so ESS -> N (1 - rho) / (1 + rho) = 8889 here. The relative sd of the
    # estimator is about sqrt(2 (2M + 1) / N) for a summation window M of a
    # few times tau (Sokal); over 100 seeds at a quarter of this length it
    # was 0.06, so about 0.03 here and 15% is 5 sd: false failure 5.7e-7 in
    # a normal approximation.
    rho, n_chains, n_draws = 0.8, 4, 20_000
    chains = _ar1(np.random.default_rng(7 + stat_seed), rho, n_chains, n_draws)
    expected = n_chains * n_draws * (1 - rho) / (1 + rho)
    assert effective_sample_size(chains) == pytest.approx(expected, rel=0.15)


@pytest.mark.statistical
def test_ess_antithetic_is_finite_and_large(stat_seed):
    # tau = (1 + rho) / (1 - rho) = 0.18 lies below the floor 1 / log10(N)
    # = 0.30, so the estimate sits at the cap N log10(N) = 6602 (all of 50
    # seeds): it fails only if the estimated tau exceeds 1, far out of reach.
    rng = np.random.default_rng(8 + stat_seed)
    chains = _ar1(rng, -0.7, 2, 1000)
    ess = effective_sample_size(chains)
    assert np.isfinite(ess) and ess > 2000


def test_ess_constant_and_bad_input():
    with np.errstate(all="raise"):
        assert np.isnan(effective_sample_size(np.ones((2, 10))))
    with pytest.raises(ValueError):
        effective_sample_size(np.ones((2, 1)))


# ----------------------------------------------------------------------- KSD


def _ksd_brute_force(x, s, h):
    n, d = x.shape
    total = 0.0
    for i in range(n):
        for j in range(n):
            diff = x[i] - x[j]
            r2 = diff @ diff
            k = np.exp(-r2 / h)
            grad_x_k = -2.0 * diff / h * k
            grad_y_k = 2.0 * diff / h * k
            # d^2 k / dx_l dy_l = k (2 / h - 4 diff_l^2 / h^2), summed over l.
            trace = sum(k * (2.0 / h - 4.0 * diff[l] ** 2 / h**2) for l in range(d))
            total += s[i] @ s[j] * k + s[i] @ grad_y_k + grad_x_k @ s[j] + trace
    return np.sqrt(total / n**2)


def test_ksd_matches_brute_force():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 2))
    s = rng.standard_normal((5, 2))
    # 25 O(1) terms whose sum is O(1) (no cancellation for this input): any
    # summation order (BLAS kernel) is within 1e-14 of it, so 1e-10 is far
    # above round-off and far below any missing term.
    for h in (0.3, 1.0, 4.0):
        assert kernel_stein_discrepancy(x, s, bandwidth=h) == pytest.approx(
            _ksd_brute_force(x, s, h), rel=1e-10
        )
    # Median rule over the 10 distinct pairs.
    dists = [np.linalg.norm(x[i] - x[j]) for i in range(5) for j in range(i + 1, 5)]
    h = np.median(dists) ** 2 / np.log(6)
    assert kernel_stein_discrepancy(x, s) == pytest.approx(
        _ksd_brute_force(x, s, h), rel=1e-10
    )


@pytest.mark.statistical
def test_ksd_true_score_smaller_than_shifted(stat_seed):
    # With the true score n KSD^2 is O(1) (see the next test: KSD ~ 0.1 at
    # n = 300); with a score off by 1 everywhere KSD^2 stays O(1) itself,
    # an order of magnitude apart.
    x = np.random.default_rng(10 + stat_seed).standard_normal((300, 1))
    true = kernel_stein_discrepancy(x, -x)
    shifted = kernel_stein_discrepancy(x, -(x - 1.0))  # score of N(1, 1)
    assert true < shifted
    for h in (0.5, 1.0, 2.0):
        assert kernel_stein_discrepancy(x, -x, bandwidth=h) < (
            kernel_stein_discrepancy(x, -(x - 1.0), bandwidth=h)
        )


@pytest.mark.statistical
def test_ksd_shrinks_with_more_exact_samples(stat_seed):
    # With a fixed kernel, n KSD^2 of exact samples (a V-statistic) tends to
    # sum_j lambda_j Z_j^2, the lambda_j the eigenvalues of the Stein kernel
    # under N(0, 1), summing to E[k_p(x, x)] = E[x^2] + 2 / h = 3. From
    # their Nystrom estimate (3000 draws) and 4e6 simulated sums, that law
    # lies in [0.04, 27] with probability 1 - 5e-7, so checking n KSD^2 in
    # it at n = 100 and n = 2000 checks the 1 / sqrt(n) rate and its
    # constant: false failure about 1e-6. (Comparing KSD at the two sizes
    # directly fails with probability 7e-4: their ratio of sqrt(20) is
    # within the spread of that law.)
    x = np.random.default_rng(12 + stat_seed).standard_normal((2000, 1))
    for n in (100, 2000):
        ksd = kernel_stein_discrepancy(x[:n], -x[:n], bandwidth=1.0)
        assert 0.04 < n * ksd**2 < 27


def test_ksd_one_dimensional_input_and_coincident_particles():
    x = np.random.default_rng(11).standard_normal(50)
    assert kernel_stein_discrepancy(x, -x) == pytest.approx(
        kernel_stein_discrepancy(x[:, None], -x[:, None])
    )
    # Collapsed particles are a poor sample: finite but large.
    same = np.zeros((10, 2))
    value = kernel_stein_discrepancy(same, -same)
    assert np.isfinite(value) and value > 100
    assert np.isfinite(kernel_stein_discrepancy(np.ones((1, 2)), np.ones((1, 2))))


def test_ksd_bad_input():
    with pytest.raises(ValueError):
        kernel_stein_discrepancy(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError):
        kernel_stein_discrepancy(np.zeros((3, 2)), np.zeros((3, 2)), bandwidth=0.0)
    with pytest.raises(ValueError):
        kernel_stein_discrepancy(np.full((3, 1), np.nan), np.zeros((3, 1)))


@pytest.mark.parametrize("shape", [(4, 101), (3, 200, 3), (1, 50, 2)])
def test_rank_rhat_and_bulk_ess_equal_the_separate_diagnostics(shape):
    # One ranking serves both: the values must be those of split_rhat and
    # of the ESS of the rank-normalised split chains, exactly, with ties
    # (repeated draws, as rejected MCMC moves give) and a constant parameter.
    rng = np.random.default_rng(sum(shape))
    draws = np.round(rng.standard_normal(shape).cumsum(axis=1), 1)
    if draws.ndim == 3:
        draws[..., 0] = 2.0
    rhat, ess = rank_rhat_and_bulk_ess(draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected_rhat = split_rhat(draws, rank_normalized=True)
        expected_ess = effective_sample_size(rank_normalize(split_chains(draws)))
    np.testing.assert_array_equal(rhat, expected_rhat)
    np.testing.assert_array_equal(ess, expected_ess)
    assert np.shape(rhat) == np.shape(expected_rhat)


def _draws_with_ties(rng, shape, trial):
    """Rounded normals of ``shape``; by ``trial``, a rejecting sampler's
    repeated states, a NaN, or both infinities."""
    n = shape[0]
    x = np.round(rng.standard_normal(shape), int(rng.integers(0, 3)))
    if trial % 5 == 0:
        x = np.repeat(x[: max(1, n // 3)], 3, axis=0)[:n]
    if trial % 7 == 0:
        x.flat[rng.integers(x.size)] = np.nan
    if trial % 11 == 0:
        x.flat[rng.integers(x.size)] = np.inf
        x.flat[rng.integers(x.size)] = -np.inf
    return x


def test_average_ranks_are_scipys_with_ties_infinities_and_nan():
    # The compiled tie pass must give scipy.stats.rankdata's average ranks
    # to the bit (the rank R-hat and bulk ESS are built on them), NaN
    # through a column that holds one, on chains with repeated states.
    from scipy.stats import rankdata

    from skgp_bayes.diagnostics import _average_ranks

    rng = np.random.default_rng(3)
    for trial in range(300):
        n = int(rng.integers(1, 200))
        shape = (n, *rng.integers(1, 4, size=rng.integers(0, 3)))
        x = _draws_with_ties(rng, shape, trial)
        expected = rankdata(x, method="average", axis=0)
        np.testing.assert_array_equal(_average_ranks(x), expected)
    assert _average_ranks(np.zeros((0, 2))).shape == (0, 2)


def test_rank_scores_and_median_are_those_of_direct_evaluation():
    # The normal scores come from a table of every average rank there can
    # be and the median from the ranks' sort: both must equal, to the bit,
    # ndtri of each rank and NumPy's median, ties (MALA's repeated states)
    # and a NaN included.
    from scipy.special import ndtri

    from skgp_bayes.diagnostics import _ranking

    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 50, 301):
        values = np.round(rng.standard_normal((n, 4)), 1)
        values[:, 1] = np.repeat(values[: (n + 1) // 2, 1], 2)[:n]
        values[n // 2, 3] = np.nan
        ranks, median = _ranking(values)[:2]
        np.testing.assert_array_equal(ranks, stats.rankdata(values, axis=0))
        np.testing.assert_array_equal(median, np.median(values, axis=0))
        scores = rank_normalize(values[None])[0]
        direct = ndtri((stats.rankdata(values, axis=0) - 0.375) / (n + 0.25))
        np.testing.assert_array_equal(scores, direct)


def test_the_folded_draws_order_gives_the_ranks_of_the_folded_draws():
    # The tail R-hat ranks |x - median|; its order is merged from the
    # draws' own sort. The ranks must be scipy's of the folded draws to the
    # bit, ties (a sampler's repeated states, draws on both sides at the
    # same distance), infinities and NaN included.
    from scipy.stats import rankdata

    from skgp_bayes._ranks_numba import folded_order
    from skgp_bayes.diagnostics import _ranking, _tied_ranks

    rng = np.random.default_rng(5)
    for trial in range(300):
        x = _draws_with_ties(rng, (int(rng.integers(1, 200)), 3), trial)
        _, median, rows, order = _ranking(x)
        merged = np.empty_like(order)
        folded_order(rows, order, median, merged)
        folded = np.abs(rows - median[:, None])
        expected = rankdata(folded, method="average", axis=1)
        np.testing.assert_array_equal(_tied_ranks(folded, merged), expected)


@pytest.mark.parametrize("shape", [(4, 101), (3, 200, 3), (1, 50, 2)])
def test_the_tail_rhat_is_that_of_the_folded_draws_ranked_afresh(shape):
    # The rank R-hat of split chains, built on the merged order, against
    # the same R-hat with the folded draws sorted and ranked again: equal
    # to the bit, with ties and a constant parameter.
    from skgp_bayes.diagnostics import _classic_rhat, _rank_split_rhat

    rng = np.random.default_rng(sum(shape) + 1)
    draws = np.round(rng.standard_normal(shape).cumsum(axis=1), 1)
    if draws.ndim == 3:
        draws[..., 0] = 2.0
    x = split_chains(draws)
    median = np.median(x.reshape((-1,) + x.shape[2:]), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.fmax(
            _classic_rhat(rank_normalize(x)),
            _classic_rhat(rank_normalize(np.abs(x - median))),
        )
        np.testing.assert_array_equal(_rank_split_rhat(x)[0], expected)
