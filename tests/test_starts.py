"""The length-scale screen that starts the mode searches, and the bound gap."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes import SGLDGPRegressor, SteinGPRegressor
from skgp_bayes._starts import (
    length_scale_grid,
    screened_exact_start,
    shortest_resolvable_scale,
)
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.targets import ExactMarginalTarget
from skgp_bayes.targets.collapsed import CollapsedSparseTarget


def _fast_oscillation(n=150, seed=0):
    # Many periods over the input's range, as yearly sunspot numbers: a
    # length scale near 0.02 of the range. From the default start (length
    # scale 1 in standardised units) L-BFGS reaches the long-length-scale
    # mode, which explains the oscillation as noise.
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0, 300, n))[:, None]
    y = 50 + 40 * np.sin(2 * np.pi * X[:, 0] / 11) + 5 * rng.standard_normal(n)
    return X, y


def test_grid_spans_the_resolvable_scales_and_the_noise_levels():
    X = np.linspace(-1.7, 1.7, 35)[:, None]
    names = ["k1__constant_value", "k2__length_scale", "noise_variance"]
    grid = length_scale_grid(names, np.zeros(3), X)
    # log 0.1 to log 10 in steps of at most 0.5: 11 factors, 3 noise levels
    assert grid.shape == (33, 3)
    spacing = shortest_resolvable_scale(X)
    assert spacing == pytest.approx(0.1)
    np.testing.assert_allclose(np.exp(grid[:, 1].min()), spacing)
    np.testing.assert_allclose(np.exp(grid[:, 1].max()), 10.0)
    np.testing.assert_allclose(np.unique(np.exp(grid[:, 2])), [0.01, 0.1, 0.5])
    assert np.all(grid[:, 0] == 0.0)  # other hyperparameters at the start


def test_no_length_scale_no_grid():
    grid = length_scale_grid(["constant_value"], np.zeros(1), np.ones((5, 1)))
    assert grid.shape == (0, 1)


def test_screen_finds_the_short_mode_the_start_misses():
    X, y = _fast_oscillation()
    Xs = (X - X.mean()) / X.std()
    ys = (y - y.mean()) / y.std()
    kernel = ConstantKernel() * RBF()
    target = ExactMarginalTarget(KernelAdapter(kernel), Xs, ys, None)
    bounds = np.tile([-11.5, 11.5], (3, 1))
    best = screened_exact_start(target, np.zeros(3), bounds)
    # 11 of 300 units is 0.13 standardised units of period, so a length
    # scale around 0.02-0.05; the start's basin is at order 1.
    assert np.exp(best[1]) < 0.1


@pytest.mark.parametrize(
    "make",
    [
        lambda: SteinGPRegressor(random_state=0),
        lambda: SGLDGPRegressor(random_state=0, max_iter=300),
    ],
    ids=["stein", "sgld"],
)
def test_default_fit_follows_a_fast_oscillation(make):
    X, y = _fast_oscillation()
    X_test, y_test = _fast_oscillation(seed=1)
    reg = make()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg.fit(X, y)
    rmse = np.sqrt(np.mean((reg.predict(X_test) - y_test) ** 2))
    # The noise sd is 5 and the oscillation's sd 28: the short mode
    # predicts to about the noise (a few units; the inputs are random, so
    # some test points fall in gaps), the long one no better than the
    # oscillation's spread.
    assert rmse < 12, rmse


def test_bound_gap_brackets_the_exact_log_marginal_likelihood():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (60, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(60)
    kernel = ConstantKernel() * RBF([0.7, 1.2])
    adapter = KernelAdapter(kernel)
    exact = ExactMarginalTarget(adapter, X, y, None)
    for m in (4, 8, 16, 60):
        Z = X[:m]
        sparse = CollapsedSparseTarget(adapter, X, y, Z)
        for log_noise in (np.log(0.01), np.log(0.3)):
            params = np.append(kernel.theta, log_noise)
            lower = sparse.logp_and_grad(params)[0]
            gap = sparse.bound_gap(params)
            log_p = exact.log_likelihood(params, eval_gradient=False)
            assert lower <= log_p + 1e-8
            assert log_p <= lower + gap + 1e-8
            assert gap >= sparse.trace_term(params) - 1e-12
    # Z = X: the sparse model is the exact one, and the gap closes (up to
    # the jitter on K(Z, Z)).
    assert gap < 1e-3


def test_default_classifier_follows_a_fast_oscillation():
    # The classification counterpart: class probabilities that cycle every
    # 11 units over 300. From its default start the Laplace surrogate's
    # search ends at long length scales and predicts at chance (log loss
    # log 2 = 0.693); from the screen's point it follows the cycles.
    import warnings

    from sklearn.metrics import log_loss

    from skgp_bayes import SteinGPClassifier

    def make(seed):
        rng = np.random.default_rng(seed)
        X = np.sort(rng.uniform(0, 300, 300))[:, None]
        p = 1 / (1 + np.exp(-4 * np.sin(2 * np.pi * X[:, 0] / 11)))
        return X, np.where(rng.random(300) < p, "a", "b")

    X, y = make(0)
    X_test, y_test = make(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = SteinGPClassifier(random_state=0).fit(X, y)
    loss = log_loss(y_test, clf.predict_proba(X_test), labels=clf.classes_)
    # Bayes rule's log loss here is about 0.4 (scikit-learn's classifier,
    # started at the right scale, 0.46); chance is 0.693. On 300 test
    # points the log loss has a standard error near 0.02.
    assert loss < 0.55, loss


def test_resolvable_scale_of_many_rows_uses_a_subset():
    # The nearest-neighbour distances are n x n: 20,000 rows would take 3.2
    # GB; an evenly spaced subset of SCREEN_ROWS takes 2 MB. On a standard
    # normal sample in 3 dimensions the median nearest-neighbour distance
    # of 500 points is about 0.5 (of 20,000 points, about 0.15).
    X = np.random.default_rng(0).standard_normal((20000, 3))
    scale = shortest_resolvable_scale(X)
    assert 0.2 < scale < 1.0
