"""SelectiveSVGP and the per-subset collapsed bound it is built on."""

import pickle
import warnings

import numpy as np
import pytest
from _selective_fits import FAST, assert_expected_size_kept
from scipy.stats import multivariate_normal, norm
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes import SelectiveSVGP, SelectiveSVGPClassifier
from skgp_bayes.exceptions import DegenerateFitWarning
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import (
    Gaussian,
)
from skgp_bayes.priors import LogNormal
from skgp_bayes.targets.selective import (
    SubsetBound,
)
from skgp_bayes.targets.svgp import SVGPBound

# ---------------------------------------------------------------- the bound


def _bound_problem(kernel, seed=0, n=40, K=12):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 8, (n, 2))
    y = np.sin(X[:, 0]) + np.cos(X[:, 1]) + 0.1 * rng.standard_normal(n)
    return SubsetBound(KernelAdapter(kernel), X, y, X[:K]), X, y


def _titsias(kernel, X, y, Z, noise, jitter=1e-6):
    Kuu = kernel(Z)
    Kuu += jitter * np.mean(np.diag(Kuu)) * np.eye(Z.shape[0])
    Kuf = kernel(Z, X)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    cov = Q + noise * np.eye(X.shape[0])
    trace = np.trace(kernel(X)) - np.trace(Q)
    return multivariate_normal(np.zeros(X.shape[0]), cov).logpdf(y) - trace / (
        2 * noise
    )


@pytest.mark.parametrize(
    "kernel",
    [ConstantKernel(1.3) * RBF([1.0, 2.0]), ConstantKernel(0.7) * Matern(1.5, nu=1.5)],
    ids=["rbf-ard", "matern32"],
)
def test_subset_bound_is_collapsed_bound(kernel):
    bound, X, y = _bound_problem(kernel)
    idx = np.array([0, 2, 3, 7, 11])
    hyper = np.append(kernel.theta, np.log(0.05))
    # Titsias' bound in closed form, independently of the SVGP code: both
    # are O(100) sums of float64 terms, so 1e-8 is far above rounding
    expected = _titsias(kernel, X, y, X[idx], 0.05)
    assert bound.value(hyper, idx) == pytest.approx(expected, rel=1e-10, abs=1e-8)


def test_subset_bound_gradient_matches_finite_differences():
    kernel = ConstantKernel(1.3) * RBF([1.0, 2.0])
    bound, _, _ = _bound_problem(kernel)
    hyper = np.append(kernel.theta, np.log(0.08))
    for idx in ([], [4], [0, 2, 3, 7, 11]):
        _, grad = bound.value_and_grad(hyper, idx)
        fd = np.empty_like(hyper)
        h = 1e-5
        for j in range(hyper.size):
            e = np.zeros_like(hyper)
            e[j] = h
            fd[j] = (bound.value(hyper + e, idx) - bound.value(hyper - e, idx)) / (
                2 * h
            )
        # the value is O(100): central differences at h = 1e-5 carry about
        # 1e-11 * 100 / 1e-5 = 1e-4 of rounding; the truncation is O(h^2)
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-3)


def test_batched_subsets_match_one_at_a_time():
    # The batched evaluation shares the kernel matrices and one contraction;
    # it must give each subset's value and the mean of their gradients, and
    # the gradient must be the SVGP bound's at the optimal q(v) (envelope
    # theorem), computed here by the general SVGP code. Same float64 sums in
    # a different order: 1e-9 relative is far above rounding.
    kernel = ConstantKernel(1.3) * RBF([1.0, 2.0])
    bound, X, y = _bound_problem(kernel)
    hyper = np.append(kernel.theta, np.log(0.08))
    subsets = ([], [4], [0, 2, 3, 7, 11], list(range(12)))
    masks = np.zeros((len(subsets), 12), dtype=bool)
    for row, idx in zip(masks, subsets, strict=True):
        row[idx] = True
    values, mean_grad = bound.values_and_mean_grad(hyper, masks)
    singles = [bound.value_and_grad(hyper, idx) for idx in subsets]
    np.testing.assert_allclose(values, [v for v, _ in singles], rtol=1e-12)
    np.testing.assert_allclose(
        mean_grad, np.mean([g for _, g in singles], axis=0), rtol=1e-12, atol=1e-12
    )
    idx = np.array(subsets[2])
    mean, L = bound.optimal_q(hyper, idx)
    svgp = SVGPBound(
        bound.adapter,
        X,
        y,
        X[idx],
        Gaussian(0.08),
        learn_noise=True,
        learn_inducing=False,
    )
    rows, cols = np.tril_indices(idx.size)
    tri = L[rows, cols]
    tri[rows == cols] = np.log(tri[rows == cols])
    value, grad = svgp.elbo_and_grad(np.concatenate([hyper, mean, tri]))
    assert singles[2][0] == pytest.approx(value, rel=1e-9)
    np.testing.assert_allclose(singles[2][1], grad[: hyper.size], rtol=1e-8)


def test_subset_bound_grows_with_the_subset():
    # Titsias' bound can only tighten as inducing points are added
    kernel = ConstantKernel(1.0) * RBF([1.5, 1.5])
    bound, _, _ = _bound_problem(kernel)
    hyper = np.append(kernel.theta, np.log(0.05))
    values = [bound.value(hyper, np.arange(k)) for k in range(0, 13, 3)]
    assert np.all(np.diff(values) > 0)


# ---------------------------------------------------------------- estimator


def _seed004_data(n, length_scale, noise, seed=0, width=20.0):
    """Seed 004 C.3.1: x ~ U(0, width), f ~ GP(0, RBF), y = f + noise * eps.

    The same draws (x, the standard normals behind f, eps) serve every level,
    so the levels differ only in the property under test.
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, width, (n, 1))
    K = RBF(length_scale)(X) + 1e-8 * np.eye(n)
    f = np.linalg.cholesky(K) @ rng.standard_normal(n)
    return X, f + noise * rng.standard_normal(n)


def _expected_count(X, y, seed=0):
    reg = SelectiveSVGP(
        ConstantKernel(1.0) * RBF(1.0),
        n_candidates=40,
        alpha=0.05,
        n_pre_iter=50,
        n_select_iter=150,
        n_post_iter=20,
        random_state=seed,
    )
    with warnings.catch_warnings():
        # 150 steps (the calibration below) can stop before the rule is met
        warnings.simplefilter("ignore", ConvergenceWarning)
        return reg.fit(X, y).expected_n_inducing_


@pytest.mark.slow
@pytest.mark.statistical
def test_fewer_points_as_noise_grows(stat_seed):
    # Seed 004 C.3.1 with 150 points on [0, 20] instead of 500 on [0, 100]
    # (the same density of points per length scale would need 3x the
    # candidates and ~10x the time), 40 candidates and 150 selection steps.
    # Every level shares the data's draws and the fit's seed, so the counts
    # differ by the property under test plus the fit's noise. Neighbouring
    # levels are too close for a strict decrease to be reliable: over seeds
    # 0-5 the drop from 0.6 to 1.2 was 0.2-2.3 (mean 1.5, sd 0.8; it would
    # be negative for 4% of seeds). The trend is the property: the least-
    # squares slope of the count against log noise was -3.0 to -5.6 (mean
    # -4.3, sd 0.9). Below -1 is 3.7 sds from its mean (1e-4 false
    # failures); counts that ignore the noise have a slope near 0.
    levels = np.array([0.05, 0.15, 0.3, 0.6, 1.2])
    counts = []
    for noise in levels:
        X, y = _seed004_data(150, 1.0, noise, seed=stat_seed)
        counts.append(_expected_count(X, y, seed=stat_seed))
    slope = np.polyfit(np.log(levels), counts, 1)[0]
    assert slope < -1.0, counts


@pytest.mark.slow
@pytest.mark.statistical
def test_fewer_points_as_length_scale_grows(stat_seed):
    # As above: over seeds 0-5 the drop from length scale 1 to 2 was 2.5-9.9
    # (mean 6.0, sd 2.9, negative for 2% of seeds), from 2 to 4 4.9-6.0.
    # The least-squares slope against log length scale was -5.4 to -11.2
    # (mean -8.2, sd 2.1); below -1 is 3.4 sds from its mean (3e-4 false
    # failures).
    levels = np.array([1.0, 2.0, 4.0])
    counts = []
    for length_scale in levels:
        X, y = _seed004_data(150, length_scale, 0.1, seed=stat_seed)
        counts.append(_expected_count(X, y, seed=stat_seed))
    slope = np.polyfit(np.log(levels), counts, 1)[0]
    assert slope < -1.0, counts


@pytest.mark.parametrize("normalize", [False, True])
def test_all_points_kept_equals_exact_gp(normalize):
    # A grid 0.5 apart (0.6 length scales): K(Z, Z) has condition number
    # 2.4e4. Random inputs put pairs 0.015 apart and a condition number of
    # 5e17, whose unjittered Cholesky succeeds or fails with the BLAS
    # kernel's summation order (it failed under OPENBLAS_CORETYPE=Prescott).
    rng = np.random.default_rng(3)
    X = np.linspace(0, 6, 13)[:, None]
    y = np.sin(X[:, 0]) + 0.2 * rng.standard_normal(13)
    if normalize:
        y = 5.0 + 3.0 * y
    kernel = ConstantKernel(1.2) * RBF(0.8)
    reg = SelectiveSVGP(
        kernel,
        candidates=X,
        n_pre_iter=0,
        n_select_iter=0,
        n_post_iter=0,
        keep="threshold",  # every probability is still at its start, 0.9
        noise_variance=0.1,
        normalize_X=False,  # the kernel in the units of the reference GP
        jitter=0.0,
        n_hyperparameter_draws=0,  # the point estimate is the reference GP
        random_state=0,
    ).fit(X, y)
    assert reg.n_inducing_ == 13
    # the regressor standardises y; the noise variance is in those units
    gpr = GaussianProcessRegressor(
        kernel, alpha=0.1, normalize_y=True, optimizer=None
    ).fit(X, y)
    Xq = np.linspace(-1, 7, 30)[:, None]
    mean, std = reg.predict(Xq, return_std=True)
    ref_mean, ref_std = gpr.predict(Xq, return_std=True)
    # with Z = X and the optimal q(u) the sparse posterior is the exact one;
    # what remains is rounding amplified by cond(K) = 2.4e4, about 1e-11,
    # whatever the summation order
    np.testing.assert_allclose(mean, ref_mean, atol=1e-6)
    np.testing.assert_allclose(std, ref_std, atol=1e-6)


def _interchangeable_candidates(n=100, seed=0):
    """A smooth trend under heavy noise: any dozen candidates explain it.

    The cheap form of sklearn's diabetes data (300 points, 80 candidates),
    on which the mode of the fitted point process kept one point: no
    candidate is worth more than another, so every inclusion probability
    settles at the divergence's equilibrium below one half.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    f = lambda X: X[:, 0] + 0.5 * X[:, 1]  # noqa: E731
    return X, f(X) + rng.standard_normal(n), f


@pytest.fixture(scope="module")
def interchangeable():
    X, y, f = _interchangeable_candidates()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = SelectiveSVGP(n_candidates=30, random_state=0).fit(X, y)
    return reg, caught, f


def test_selection_does_not_collapse(interchangeable):
    reg, caught, f = interchangeable
    lam = reg.inclusion_probabilities_
    # the situation of the issue: every probability below one half...
    assert np.all(lam < 0.5)
    # ...yet the kept set has the size the process puts its mass on
    assert_expected_size_kept(reg)
    assert reg.n_inducing_ >= 5
    # against the noise-free trend, the collapsed fit (one point, the mean
    # everywhere) has R^2 0.0 and the kept set 0.89 at this seed; an
    # exact GP has 0.9. The fit is deterministic; 0.5 separates the two.
    Xq = np.random.default_rng(1).standard_normal((400, 2))
    r2 = 1 - np.mean((reg.predict(Xq) - f(Xq)) ** 2) / np.var(f(Xq))
    assert r2 > 0.5
    assert not caught, [str(w.message) for w in caught]


def test_default_selection_stops_by_its_rule(interchangeable):
    reg, caught, _ = interchangeable
    assert reg.diagnostics_["selection_converged"]
    assert reg.n_iter_ < reg.n_select_iter and reg.n_iter_ % 50 == 0
    assert reg.elbo_history_["select"].shape == (reg.n_iter_,)
    assert not any(issubclass(w.category, ConvergenceWarning) for w in caught)


def test_threshold_keep_warns_when_the_mode_is_atypical():
    # same data: the mode of q is (nearly) empty, far below E|Z|
    X, y, _ = _interchangeable_candidates()
    reg = SelectiveSVGP(n_candidates=30, keep="threshold", random_state=0)
    with pytest.warns(DegenerateFitWarning, match="keep='threshold' kept"):
        reg.fit(X, y)
    assert reg.n_inducing_ < reg.expected_n_inducing_ - 3 * np.sqrt(reg.var_n_inducing_)


def test_short_selection_says_it_did_not_settle():
    X, y = _seed004_data(40, 1.0, 0.2, width=5.0)
    reg = SelectiveSVGP(n_candidates=8, n_select_iter=60, random_state=0)
    with pytest.warns(ConvergenceWarning, match="did not settle in 60 steps"):
        reg.fit(X, y)
    assert reg.n_iter_ == 60 and not reg.diagnostics_["selection_converged"]


@pytest.fixture(scope="module")
def fitted():
    X, y = _seed004_data(80, 1.0, 0.2, width=10.0)
    reg = SelectiveSVGP(n_candidates=20, alpha=0.05, random_state=0, **FAST)
    with warnings.catch_warnings():
        # 40 selection steps are too few for the stopping rule, by design
        warnings.simplefilter("ignore", ConvergenceWarning)
        return reg.fit(X, y), X, y


def test_fitted_attributes(fitted):
    reg, X, _ = fitted
    lam = reg.inclusion_probabilities_
    # spread candidates stop early once the rest of a 1-D input adds no
    # variance under the starting kernel (to round-off)
    K = reg.candidates_.shape[0]
    assert 1 <= K <= 20 and lam.shape == (K,) and np.all((lam > 0) & (lam < 1))
    assert_expected_size_kept(reg)
    assert reg.n_inducing_ == reg.support_.sum() == reg.inducing_points_.shape[0]
    np.testing.assert_array_equal(reg.inducing_points_, reg.candidates_[reg.support_])
    # candidates are training inputs, in the model's (standardised) units
    Xm = reg.input_scaling_.transform(X)
    assert all(np.any(np.all(Xm == z, axis=1)) for z in reg.candidates_)
    assert reg.expected_n_inducing_ == pytest.approx(lam.sum())
    assert reg.var_n_inducing_ == pytest.approx(np.sum(lam * (1 - lam)))
    assert reg.elbo_history_["select"].shape == (40,) and reg.n_iter_ == 40
    assert reg.diagnostics_["expected_n_inducing_trace"].shape == (40,)
    assert not reg.diagnostics_["selection_converged"]
    assert np.isfinite(reg.elbo_) and reg.noise_variance_ > 0


def test_post_training_improves_the_bound(fitted):
    _, X, y = fitted
    reg = SelectiveSVGP(
        n_candidates=20,
        alpha=0.05,
        hyperparameters_from="kept",
        random_state=0,
        **FAST,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(X, y)
    post = reg.elbo_history_["post"]
    assert post.size > 0
    assert reg.elbo_ >= post[0] - 1e-8


def test_hyperparameters_from_candidates_are_the_pre_trained_ones(fitted):
    # the default fits the hyperparameters to the bound of all candidates
    # only: a prior that keeps far fewer points changes the kept set, not
    # them, and nothing is post-trained
    reg, X, y = fitted
    assert reg.elbo_history_["post"].size == 0
    assert reg.diagnostics_["final_elbo"] == reg.elbo_
    sparser = clone(reg).set_params(alpha=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sparser.fit(X, y)
    assert sparser.n_inducing_ < reg.n_inducing_
    np.testing.assert_array_equal(sparser.kernel_.theta, reg.kernel_.theta)
    assert sparser.noise_variance_ == reg.noise_variance_
    paper = clone(reg).set_params(hyperparameters_from="kept")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        paper.fit(X, y)
    assert not np.array_equal(paper.kernel_.theta, reg.kernel_.theta)


def test_keep_sample_draws_from_the_process():
    X, y = _seed004_data(60, 1.0, 0.2, width=10.0)
    reg = SelectiveSVGP(
        n_candidates=15, alpha=0.05, keep="sample", random_state=1, **FAST
    )
    reg.fit(X, y)
    assert reg.support_.sum() == reg.n_inducing_ >= 1
    # the fitted process gives the kept set positive probability
    lam = reg.inclusion_probabilities_
    assert np.all(lam[reg.support_] > 0) and np.all(lam[~reg.support_] < 1)


@pytest.mark.statistical
def test_prediction_and_samples(fitted, stat_seed):
    # The fit is the shared one; what is random here are the draws given the
    # fit, whose seed is offset.
    reg, X, y = fitted
    Xq = np.linspace(0, 10, 7)[:, None]
    mean, std = reg.predict(Xq, return_std=True)
    assert mean.shape == std.shape == (7,) and np.all(std > 0)
    S = 4000
    draws = reg.sample_y(Xq, n_samples=S, random_state=stat_seed)
    assert draws.shape == (7, S)
    # Monte Carlo mean of S joint draws: standard error std / sqrt(S), 5 of
    # them on 7 points (4e-6 false failures)
    np.testing.assert_array_less(
        np.abs(draws.mean(axis=1) - mean), 5 * std / np.sqrt(S)
    )
    assert reg.score(X, y) > 0.5


def test_determinism_clone_and_pickle(fitted):
    reg, X, y = fitted
    again = clone(reg).fit(X, y)
    Xq = np.linspace(0, 10, 9)[:, None]
    np.testing.assert_array_equal(reg.predict(Xq), again.predict(Xq))
    np.testing.assert_array_equal(
        reg.inclusion_probabilities_, again.inclusion_probabilities_
    )
    restored = pickle.loads(pickle.dumps(reg))
    mean, std = reg.predict(Xq, return_std=True)
    mean2, std2 = restored.predict(Xq, return_std=True)
    np.testing.assert_array_equal(mean, mean2)
    np.testing.assert_array_equal(std, std2)


def test_bad_input():
    X, y = _seed004_data(30, 1.0, 0.1, width=5.0)
    with pytest.raises(ValueError, match="candidates"):
        SelectiveSVGP(candidates=np.zeros((3, 2)), **FAST).fit(X, y)
    with pytest.raises(ValueError, match="candidates"):
        SelectiveSVGP(candidates=np.array([[np.nan]]), **FAST).fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        SelectiveSVGP(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="keep"):
        SelectiveSVGP(keep="best").fit(X, y)
    with pytest.raises(ValueError, match="n_score_samples"):
        SelectiveSVGP(n_score_samples=0).fit(X, y)
    X_bad = X.copy()
    X_bad[0, 0] = np.inf
    with pytest.raises(ValueError):
        SelectiveSVGP(**FAST).fit(X_bad, y)
    reg = SelectiveSVGP(n_candidates=5, random_state=0, **FAST).fit(X, y)
    with pytest.raises(ValueError, match="n_samples"):
        reg.sample_y(X[:2], n_samples=0)
    with pytest.raises(ValueError, match="features"):
        reg.predict(np.zeros((2, 3)))


@pytest.mark.statistical
def test_regressor_minibatch_path(stat_seed):
    X, y = _seed004_data(200, 1.0, 0.2, seed=stat_seed, width=10.0)
    reg = SelectiveSVGP(
        ConstantKernel(1.0) * RBF(1.0),
        n_candidates=20,
        alpha=0.05,
        batch_size=50,
        n_pre_iter=300,
        n_select_iter=100,
        n_post_iter=100,
        learning_rate=0.05,
        random_state=stat_seed,
    ).fit(X, y)
    full = SelectiveSVGP(
        ConstantKernel(1.0) * RBF(1.0),
        n_candidates=20,
        alpha=0.05,
        random_state=stat_seed,
        **FAST,
    ).fit(X, y)
    assert reg.elbo_history_["pre"].size == 300
    assert 1 <= reg.n_inducing_ <= 20
    # Adam on minibatches with a shared q lands near the full-data fit.
    # Over seeds 0-99 (data and fits, with different kept sets):
    # - training R^2 gap -0.0122 to 0.0014, with a long lower tail (four
    #   seeds below -0.002, by 0.0003-0.0102 more; an exponential tail of
    #   that mean excess puts a gap below -0.03 near 1e-5);
    # - bound gap per data point -0.042 to 0.088 nats (mean -0.011, sd
    #   0.017; the bound itself ranges from -17 to -200, so a relative
    #   tolerance would not do). Only a lower bound: the full fit's short
    #   run can stop below the minibatch path (seed 53: -109.8 against
    #   -92.3, 15 points kept against 19), which is no fault of the path;
    #   -0.1 is 5.1 sds below the mean (about 2e-7 for Gaussian spread);
    # - noise ratio 0.90-1.23 (mean 1.058, sd 0.067): 0.7 and 1.4 are 5.1-5.3
    #   sds away.
    # (Bounds taken from seeds 0-7 failed at seed 53 under Haswell.) A
    # broken path fails them all (R^2 ~ 0, bound ~ -280).
    assert reg.score(X, y) > full.score(X, y) - 0.03
    assert (reg.elbo_ - full.elbo_) / X.shape[0] > -0.1
    assert 0.7 < reg.noise_variance_ / full.noise_variance_ < 1.4


def test_lbfgs_stops_when_the_bound_stalls():
    from skgp_bayes.inference.optimize import stalled
    from skgp_bayes.selective._phases import _STALL_NATS, _STALL_WINDOW

    def run(gain_per_iteration, n):
        rule, trace = stalled(_STALL_WINDOW, _STALL_NATS), []
        for i in range(n):
            trace.append(1000.0 + gain_per_iteration * i)
            if rule(trace):
                return i + 1
        return None

    # a window gaining twice the threshold never stops the run; half of it
    # stops it as soon as a full window has been seen
    assert run(2.0 * _STALL_NATS / _STALL_WINDOW, 5 * _STALL_WINDOW) is None
    assert run(0.5 * _STALL_NATS / _STALL_WINDOW, 5 * _STALL_WINDOW) == (
        _STALL_WINDOW + 1
    )


@pytest.mark.parametrize("name", ["SelectiveSVGP", "SelectiveSVGPClassifier"])
def test_pickles_naming_the_former_module_still_load(name):
    """Pickles written while ``selective`` was one module name the classes
    ``skgp_bayes.selective.<Class>``; the package keeps that path."""
    cls = pickle.loads(f"cskgp_bayes.selective\n{name}\np0\n.".encode())
    assert cls.__name__ == name
    est = cls(n_candidates=7, alpha=0.5)
    old = pickle.dumps(est, protocol=0).replace(
        cls.__module__.encode(), b"skgp_bayes.selective"
    )
    assert b"skgp_bayes.selective\n" + name.encode() in old
    restored = pickle.loads(old)
    assert type(restored) is cls
    assert restored.get_params() == est.get_params()


def test_candidate_pool_follows_the_datas_length_scale():
    # A period of 4 over a range of 60: the starting kernel (length scale a
    # fraction of the inputs' spread) is exhausted after a handful of
    # points. Spread by the screened kernel, the pool must grow past
    # n_candidates=10 until the Nystrom residual costs the bound at most
    # 0.05 nats per point, and the fit must then hold the cycle: a test
    # mean log density of -0.37 here, where 10 evenly spaced candidates
    # give -2.2 (the exact GP gives -0.40; 0.3 covers the gap of a sparse
    # fit with its selection noise).
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 60, (260, 1))
    y = 3 * np.sin(2 * np.pi * X[:, 0] / 4.0) + 10 + 0.3 * rng.standard_normal(260)
    X_test, y_test, X, y = X[160:], y[160:], X[:160], y[:160]
    reg = SelectiveSVGP(n_candidates=10, n_select_iter=200, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(X, y)
    assert reg.candidates_.shape[0] > 30
    peer = GaussianProcessRegressor(
        ConstantKernel() * RBF(), alpha=0.09, normalize_y=True
    ).fit(X, y)
    mean, sd = peer.predict(X_test, return_std=True)
    peer_lpd = np.mean(
        -0.5 * np.log(2 * np.pi * (sd**2 + 0.09))
        - 0.5 * (y_test - mean) ** 2 / (sd**2 + 0.09)
    )
    assert np.mean(reg.log_predictive_density(X_test, y_test)) > peer_lpd - 0.3
    # a smooth function keeps the pool at n_candidates or below
    smooth = SelectiveSVGP(n_candidates=10, n_select_iter=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        smooth.fit(X, np.sin(X[:, 0] / 20.0) + 0.1 * rng.standard_normal(160))
    assert smooth.candidates_.shape[0] <= 10


def test_candidate_pool_grows_beyond_the_exact_screens_rows(monkeypatch):
    # Scaled down: the screen on at most 100 of the 160 rows. The period of
    # 4 over 60 needs far more than 10 candidates; up to POOL_GROWTH_MAX_N
    # rows the pool must grow past n_candidates as it does when the screen
    # sees every row, and beyond it stay at n_candidates.
    from skgp_bayes.selective import _phases

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 60, (160, 1))
    y = 3 * np.sin(2 * np.pi * X[:, 0] / 4.0) + 10 + 0.3 * rng.standard_normal(160)
    monkeypatch.setattr(_phases, "EXACT_SCREEN_MAX_N", 100)
    pools = {}
    for most_rows in (5000, 100):
        monkeypatch.setattr(_phases, "POOL_GROWTH_MAX_N", most_rows)
        reg = SelectiveSVGP(n_candidates=10, n_select_iter=50, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reg.fit(X, y)
        pools[most_rows] = reg.candidates_.shape[0]
    assert pools[5000] > 30
    assert pools[100] <= 10


def test_candidate_pool_allowance_reads_the_datas_noise():
    # The pool grows until the Nystrom residual costs the bound at most
    # TRACE_NATS per point at the noise the pool's screen finds; the
    # screen's noise levels stop at 1% of the variance. A smooth surface
    # measured to 1e-5 of its variance must be sized at a noise within a
    # decade of that (the one-dimensional search's tolerance is a tenth of
    # a nat in log noise; the marginal likelihood's curvature in log noise
    # at n = 200 is about n / 2), not at 1%, which left a vector field of
    # 808 rows (seals) 1.14 nats per point below the exact GP.
    from skgp_bayes.kernels import KernelAdapter
    from skgp_bayes.selective import _phases

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (200, 2))
    f = np.sin(X[:, 0]) * np.cos(0.7 * X[:, 1])
    y = f + np.sqrt(1e-5 * f.var()) * rng.standard_normal(200)
    y = (y - y.mean()) / y.std()
    kernel = SelectiveSVGP()._new_kernel(2)
    adapter = KernelAdapter(kernel)
    theta = _phases._kernel_start(kernel, adapter)
    _, log_noise = _phases._screened_kernel(adapter, theta, X, y)
    assert 1e-6 < np.exp(log_noise) < 1e-4


@pytest.mark.parametrize("seed", [4, 6])
def test_candidate_pool_holds_a_short_length_scale_of_one_input(seed):
    # Repeated measures with the subject's number as an input (as in the
    # sleep-deprivation study): one level per subject, smooth over the
    # day. The data want a subject length scale of about the gap between
    # neighbouring numbers (scikit-learn's: 0.8 and 1.2 numbers here) and a
    # long one over the days; a common factor of both cannot reach that,
    # and a pool spread by it holds too few candidates per subject. Spread
    # per input, the fit keeps the subject scale at 1.0 and 1.9 numbers
    # and predicts held-out days 0.04 and 0.13 nats per point better than
    # scikit-learn; with the pool's screen on the common grid alone it kept
    # 17.6 and 18.3 numbers and predicted 1.15 and 0.72 worse. On these
    # two seeds a scale under 5 numbers and a log density within 0.1 of
    # scikit-learn's hold with a margin of 0.14 nats or more; on eight
    # seeds the fit was within 0.01 of scikit-learn's or better on seven,
    # and 0.37 below on one (before: on two of eight).
    rng = np.random.default_rng(seed)
    subjects = np.sort(rng.choice(np.arange(300, 375), 18, replace=False))
    days = np.arange(10.0)
    X = np.array([[d, s] for s in subjects for d in days])
    levels = 40.0 * rng.standard_normal(18)
    y = 250 + 10 * X[:, 0] + np.repeat(levels, days.size)
    y = y + 10 * rng.standard_normal(y.size)
    test = rng.permutation(y.size)[:54]
    train = np.setdiff1d(np.arange(y.size), test)
    reg = SelectiveSVGP(random_state=0).fit(X[train], y[train])
    subject_scale = reg.kernel_.k2.length_scale[1] * X[train, 1].std()
    assert subject_scale < 5.0
    peer = GaussianProcessRegressor(
        ConstantKernel() * RBF([1.0, 1.0]) + WhiteKernel(),
        normalize_y=True,
        n_restarts_optimizer=3,
        random_state=0,
    ).fit(X[train], y[train])
    mean, sd = peer.predict(X[test], return_std=True)
    peer_lpd = np.mean(norm.logpdf(y[test], mean, sd))
    assert np.mean(reg.log_predictive_density(X[test], y[test])) > peer_lpd - 0.1


def test_default_priors_stop_a_dozen_rows_being_interpolated():
    """Twelve rows of counts with no relation to six inputs, one outlier.

    The maximum of the bound alone (ML-II) interpolated such rows with one
    or two length scales near an input's spacing and the noise at 0.1-0.2%
    of the targets' variance: over these six draws its test log density was
    on average 3.5 nats per point below a Gaussian fitted to the training
    targets (-20.2 on one draw), as on the executions by U.S. state
    (doc/selective_svgp.rst). Under the default priors the mean shortfall is
    0.46 nats. The fits are deterministic; the bound 1.5 leaves room for one
    more draw to end in an interpolating mode on another CPU's rounding.
    """
    shortfalls = []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        scales = [1.0, 10.0, 1e2, 1e3, 1e4, 1e5]  # natural units, unscaled
        X = rng.standard_normal((40, 6)) * scales
        y = rng.poisson(1.5, 40).astype(float)
        y[0] = 37.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reg = SelectiveSVGP(random_state=0).fit(X[:12], y[:12])
        lpd = np.mean(reg.log_predictive_density(X[12:], y[12:]))
        baseline = np.mean(
            multivariate_normal.logpdf(y[12:, None], y[:12].mean(), y[:12].var())
        )
        shortfalls.append(baseline - lpd)
    assert np.mean(shortfalls) < 1.5, shortfalls


@pytest.mark.parametrize("Estimator", [SelectiveSVGP, SelectiveSVGPClassifier])
def test_a_user_prior_replaces_the_default(Estimator):
    # a prior of standard deviation 0.01 in log length scale holds the MAP
    # estimate within a few hundredths of log 5 whatever the data say; the
    # default prior's median is e (one input), and the data here want ~1
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (60, 1))
    f = np.sin(2 * X[:, 0])
    y = f + 0.1 * rng.standard_normal(60) if Estimator is SelectiveSVGP else f > 0
    tight = {"k2__length_scale": LogNormal(np.log(5.0), 0.01)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        default = Estimator(n_candidates=20, n_select_iter=50, random_state=0)
        pinned = Estimator(priors=tight, n_candidates=20, n_select_iter=50)
        default.fit(X, y)
        pinned.set_params(random_state=0).fit(X, y)
    assert abs(pinned.kernel_.k2.length_scale - 5.0) < 0.2
    assert abs(default.kernel_.k2.length_scale - 5.0) > 1.0
