"""SelectiveSVGPClassifier and the shared-kernel subset bound it is built on."""

import pickle
import warnings

import numpy as np
import pytest
from _selective_fits import FAST, assert_expected_size_kept
from scipy.special import softmax
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes import SelectiveSVGPClassifier
from skgp_bayes._defaults import merged_priors
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import (
    Bernoulli,
    Gaussian,
    Softmax,
    standard_normal_draws,
)
from skgp_bayes.linalg import pivoted_cholesky
from skgp_bayes.priors import PriorSet
from skgp_bayes.targets.selective import (
    SharedSubsetBound,
    greedy_variance_points,
)


def _shared_problem(prior_set=None):
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, (30, 1))
    y = (np.sin(2 * X[:, 0]) > 0).astype(float)
    bound = SharedSubsetBound(
        KernelAdapter(ConstantKernel(1.5) * RBF(0.7)),
        X,
        y,
        X[:8],
        Bernoulli(),
        prior_set=prior_set,
    )
    params = bound.full.initial_params()
    params[bound.blocks["m"]] = rng.normal(size=8)
    params[bound.blocks["L"]] = 0.3 * rng.normal(size=36)
    return bound, params


def test_shared_bound_on_all_candidates_is_the_full_bound():
    bound, params = _shared_problem()
    value, grad = bound.value_and_grad(params, np.arange(8))
    full_value, full_grad = bound.full.elbo_and_grad(params)
    assert value == pytest.approx(full_value, rel=1e-12)
    np.testing.assert_allclose(grad, full_grad, rtol=1e-12, atol=1e-12)


def _default_prior_set():
    adapter = KernelAdapter(ConstantKernel(1.5) * RBF(0.7))
    slices = dict(adapter.hyperparameter_slices)
    return PriorSet(slices, merged_priors(None, slices, 1))


def test_shared_bound_adds_the_log_prior():
    prior_set = _default_prior_set()
    plain, params = _shared_problem()
    with_prior, _ = _shared_problem(prior_set)
    log_prior, prior_grad = prior_set.log_prob(params[: plain.n_hyper])
    for idx in ([], [0, 2, 5]):
        value, grad = plain.value_and_grad(params, idx)
        value_p, grad_p = with_prior.value_and_grad(params, idx)
        assert value_p == pytest.approx(value + log_prior, rel=1e-12)
        grad[: plain.n_hyper] += prior_grad
        np.testing.assert_allclose(grad_p, grad, rtol=1e-12, atol=1e-12)


def _assert_subset_gradients(bound, params, subsets):
    """Each ``(idx, batch)``'s gradient against central differences; the
    entries the subset does not read must be exactly zero.

    Values are O(10) (the softmax's fixed draws keep them smooth): rounding
    ~1e-15 * 10 / 1e-6 = 1e-8, truncation O(h^2).
    """
    h = 1e-6
    for idx, batch in subsets:
        _, grad = bound.value_and_grad(params, idx, batch)
        fd = np.empty_like(params)
        for j in range(params.size):
            e = np.zeros_like(params)
            e[j] = h
            plus = bound.value_and_grad(params + e, idx, batch)[0]
            minus = bound.value_and_grad(params - e, idx, batch)[0]
            fd[j] = (plus - minus) / (2 * h)
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
        unread = np.setdiff1d(np.arange(params.size), bound.subset_index(idx))
        assert np.all(grad[unread] == 0)


@pytest.mark.parametrize("prior", [False, True], ids=["no-prior", "prior"])
def test_shared_bound_gradient_matches_finite_differences(prior):
    bound, params = _shared_problem(_default_prior_set() if prior else None)
    _assert_subset_gradients(
        bound, params, [([], None), ([3], None), ([0, 2, 5, 7], None)]
    )


@pytest.mark.parametrize("likelihood", ["bernoulli", "softmax", "gaussian"])
def test_shared_bound_batched_subsets_match_one_by_one(likelihood):
    # the batched evaluation shares the candidates' kernel matrices and one
    # contraction; it must give each subset's bound and the mean gradient
    rng = np.random.default_rng(6)
    X = rng.uniform(-2, 2, (25, 2))
    lik, y = {
        "bernoulli": (Bernoulli(), (X[:, 0] > 0).astype(float)),
        "softmax": (Softmax(3, random_state=0), rng.integers(0, 3, 25).astype(float)),
        "gaussian": (Gaussian(0.3), np.sin(X[:, 0])),
    }[likelihood]
    adapter = KernelAdapter(ConstantKernel(1.5) * RBF([0.7, 1.2]))
    slices = dict(adapter.hyperparameter_slices)
    if likelihood == "gaussian":  # the log noise variance follows theta
        slices["noise_variance"] = slice(3, 4)
    bound = SharedSubsetBound(
        adapter,
        X,
        y,
        X[:7],
        lik,
        prior_set=PriorSet(slices, merged_priors(None, slices, 2)),
    )
    params = bound.full.initial_params()
    params[bound.blocks["m"]] = rng.normal(size=params[bound.blocks["m"]].size)
    params[bound.blocks["L"]] = 0.3 * rng.normal(size=params[bound.blocks["L"]].size)
    masks = np.array(
        [[1, 0, 1, 1, 0, 0, 1], [0] * 7, [1] * 7, [0, 0, 0, 0, 0, 1, 0]], dtype=bool
    )
    for batch in (None, np.arange(3, 20)):
        values, mean_grad = bound.values_and_mean_grad(params, masks, batch)
        singles = [
            bound.value_and_grad(params, np.flatnonzero(m), batch) for m in masks
        ]
        np.testing.assert_allclose(values, [v for v, _ in singles], rtol=1e-10)
        expected = np.mean([g for _, g in singles], axis=0)
        np.testing.assert_allclose(mean_grad, expected, rtol=1e-9, atol=1e-11)


def test_greedy_variance_points_is_pivoted_cholesky():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    adapter = KernelAdapter(ConstantKernel(2.0) * RBF([0.8, 1.5, 3.0]))
    theta = adapter.kernel.theta
    index, residual = greedy_variance_points(adapter, theta, X, 15)
    # the residual trace is that of the Nystrom approximation on the chosen
    # points, computed independently; and it is what pivoted Cholesky leaves
    K = adapter.kernel(X)
    Z = K[:, index]
    nystrom = Z @ np.linalg.solve(K[np.ix_(index, index)], Z.T)
    assert residual[-1] == pytest.approx(np.trace(K - nystrom), rel=1e-6)
    _, rest = pivoted_cholesky(np.diag(K), lambda i: K[:, i], 15)
    assert residual[-1] == pytest.approx(rest.sum(), rel=1e-9)
    # each choice is the largest remaining conditional variance
    assert np.all(np.diff(residual) < 0)
    assert len(set(index.tolist())) == 15


def test_greedy_variance_points_skips_duplicates():
    # three distinct inputs, each repeated: a repeat has no conditional
    # variance left, so only three points are returned
    X = np.repeat(np.array([[0.0], [2.0], [5.0]]), 4, axis=0)
    adapter = KernelAdapter(RBF(1.0))
    index, residual = greedy_variance_points(adapter, adapter.kernel.theta, X, 10)
    assert sorted(X[index, 0].tolist()) == [0.0, 2.0, 5.0]
    assert residual[-1] == pytest.approx(0.0, abs=1e-9)


def _classification_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.where(np.sin(2 * X[:, 0]) > 0, "b", "a")


@pytest.fixture(scope="module")
def fitted_classifier():
    X, y = _classification_data()
    clf = SelectiveSVGPClassifier(n_candidates=15, alpha=0.05, random_state=0, **FAST)
    with warnings.catch_warnings():
        # the short runs of these tests stop L-BFGS-B early by design
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    return clf, X, y


def test_classifier_fits_and_selects(fitted_classifier):
    clf, X, y = fitted_classifier
    np.testing.assert_array_equal(clf.classes_, ["a", "b"])
    assert clf.score(X, y) > 0.9
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert 1 <= clf.n_inducing_ <= 15
    assert_expected_size_kept(clf)
    assert clf.elbo_history_["select"].size == clf.n_iter_ == 40


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_classifier_minibatch_and_determinism(fitted_classifier):
    clf, X, y = fitted_classifier
    again = clone(clf).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), again.predict_proba(X))
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clf.predict_proba(X), restored.predict_proba(X))
    mini = clone(clf).set_params(batch_size=32).fit(X, y)
    assert mini.score(X, y) > 0.85


def test_classifier_bad_input():
    X, y = _classification_data(30)
    with pytest.raises(ValueError, match="class"):
        SelectiveSVGPClassifier(**FAST).fit(X, np.zeros(30))
    with pytest.raises(ValueError, match="link"):
        SelectiveSVGPClassifier(link="cauchit").fit(X, y)


def test_shared_bound_with_several_latents_gradient():
    rng = np.random.default_rng(7)
    X = rng.uniform(-2, 2, (30, 1))
    y = np.digitize(X[:, 0], [-0.7, 0.7]).astype(float)
    bound = SharedSubsetBound(
        KernelAdapter(ConstantKernel(1.5) * RBF(0.7)), X, y, X[:6], Softmax(3)
    )
    params = bound.full.initial_params()
    params[bound.blocks["m"]] = rng.normal(size=18)
    params[bound.blocks["L"]] = 0.3 * rng.normal(size=3 * 21)
    # all candidates: the full bound itself
    value, grad = bound.value_and_grad(params, np.arange(6))
    full_value, full_grad = bound.full.elbo_and_grad(params)
    assert value == pytest.approx(full_value, rel=1e-12)
    np.testing.assert_allclose(grad, full_grad, rtol=1e-12, atol=1e-12)
    _assert_subset_gradients(
        bound, params, [([], None), ([2], None), ([0, 3, 5], None)]
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_classifier_with_three_classes():
    rng = np.random.default_rng(2)
    X = rng.uniform(-3, 3, (90, 1))
    labels = np.array(["low", "mid", "high"])
    y = labels[np.digitize(X[:, 0], [-1.0, 1.0])]
    clf = SelectiveSVGPClassifier(n_candidates=12, random_state=0, **FAST)
    clf.fit(X, y)
    np.testing.assert_array_equal(clf.classes_, ["high", "low", "mid"])
    proba = clf.predict_proba(X)
    assert proba.shape == (90, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # The softmax averaged over 256 quasi-random nodes: within 5 sds of
    # as many independent draws of a 200,000-node reference, entry by entry.
    mu, var = clf._latent(X)
    nodes = standard_normal_draws(200_000, 3, random_state=1)
    reference, node_sd = np.empty_like(proba), np.empty_like(proba)
    for i in range(X.shape[0]):
        f = mu[i] + np.sqrt(var[i]) * nodes
        p = softmax(f, axis=1)
        reference[i], node_sd[i] = p.mean(axis=0), p.std(axis=0)
    assert np.all(np.abs(proba - reference) <= 5.0 * node_sd / np.sqrt(256) + 1e-12)
    # three intervals, each of about 30 points, with clean boundaries
    assert clf.score(X, y) > 0.9
    assert_expected_size_kept(clf)
    functions = clf.sample_functions(2, random_state=0)
    assert len(functions) == 3 and functions[0](X[:4]).shape == (4, 2)


def test_shared_bound_with_gaussian_noise_gradient():
    rng = np.random.default_rng(6)
    X = rng.uniform(-2, 2, (25, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(25)
    bound = SharedSubsetBound(
        KernelAdapter(ConstantKernel(1.2) * RBF(0.6)), X, y, X[:6], Gaussian(0.3)
    )
    assert bound.learn_noise and bound.n_hyper == 3
    params = bound.full.initial_params(log_noise=np.log(0.2))
    params[bound.blocks["m"]] = rng.normal(size=6)
    _assert_subset_gradients(
        bound, params, [([], None), ([1, 4], None), ([0, 2, 5], [3, 7, 11, 20])]
    )
