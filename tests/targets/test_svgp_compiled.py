"""The SVGP bound's compiled logit terms against the interpreted ones."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Softmax
from skgp_bayes.targets.selective import SharedSubsetBound
from skgp_bayes.targets.svgp import SVGPBound


def _bound(n, d, m, seed=0, kernel=None, **kwargs):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(float)
    kernel = ConstantKernel(1.2) * RBF(np.ones(d)) if kernel is None else kernel
    bound = SVGPBound(KernelAdapter(kernel), X, y, X[:m] + 0.05, Bernoulli(), **kwargs)
    params = bound.initial_params(scale=0.6) + 0.2 * rng.normal(size=bound.n_params)
    return bound, params


def _both(bound, params, **kwargs):
    compiled = bound.logp_and_grad(params, **kwargs)
    rules, bound._logit_rules = bound._logit_rules, None
    try:
        interpreted = bound.logp_and_grad(params, **kwargs)
    finally:
        bound._logit_rules = rules
    return compiled, interpreted


@pytest.mark.parametrize(
    ("n", "d", "m", "learn_inducing"),
    [(12, 1, 3, False), (48, 2, 7, True), (150, 8, 20, False), (60, 3, 60, True)],
)
def test_compiled_terms_equal_the_interpreted_ones(n, d, m, learn_inducing):
    bound, params = _bound(n, d, m, seed=n, learn_inducing=learn_inducing)
    assert bound._logit_rules is not None
    (value, grad), (expected_value, expected_grad) = _both(bound, params)
    # The compiled expectation takes, per point, the fewest Gauss-Hermite
    # nodes that resolve its sd to 1e-12 (the sparse target's rule), the
    # interpreted one 20 nodes everywhere: the sums agree to about 1e-12
    # per point, the rest is rounding.
    assert value == pytest.approx(expected_value, rel=1e-10, abs=1e-10 * n)
    scale = np.max(np.abs(expected_grad))
    np.testing.assert_allclose(grad, expected_grad, rtol=0, atol=1e-9 * scale)


def test_minibatch_scale_is_applied_alike():
    bound, params = _bound(80, 2, 6, seed=3)
    (value, grad), (expected_value, expected_grad) = _both(
        bound, params, batch=np.arange(0, 80, 4)
    )
    assert value == pytest.approx(expected_value, rel=1e-10)
    np.testing.assert_allclose(grad, expected_grad, atol=1e-9 * np.max(abs(grad)))


def test_tiny_variances_take_the_interpreted_rule():
    # q(u) concentrated on one value and inducing inputs on the data: latent
    # variances under 1e-10, where the rule's variance derivative changes.
    bound, params = _bound(6, 1, 6, seed=1)
    bound.Z[:] = bound.X
    params[bound.blocks["L"]] = np.where(
        bound._on_diag, np.log(1e-7), 0.0
    )  # log-diagonal entries, off-diagonal zero
    A = np.eye(6)
    projection = (A, np.full(6, 1e-200), np.zeros(6, dtype=bool))
    mean = np.zeros((6, 1))
    Ls = bound._unpack_L(params[bound.blocks["L"]])
    assert bound._compiled_terms(mean, Ls, projection, bound.y, 1.0) is None
    value, grad = bound.logp_and_grad(params)
    assert np.isfinite(value) and np.all(np.isfinite(grad))


def test_other_likelihoods_and_subset_bounds():
    X = np.linspace(-2, 2, 12)[:, None]
    y = (X[:, 0] > 0).astype(float)
    probit = SVGPBound(KernelAdapter(RBF()), X, y, X[::3], Bernoulli(link="probit"))
    assert probit._logit_rules is None
    matern = SVGPBound(KernelAdapter(Matern()), X, y, X[::3], Bernoulli())
    assert matern._logit_rules is not None  # the terms need no kernel form
    shared = SharedSubsetBound(KernelAdapter(RBF()), X, y, X[::2], Bernoulli())
    sub = shared.subset_bound([0, 2, 4])
    assert sub._logit_rules is shared.subset_bound([1, 3])._logit_rules


@pytest.mark.parametrize(("n", "m", "n_classes"), [(30, 5, 3), (60, 12, 4)])
def test_compiled_softmax_terms_equal_the_interpreted_ones(n, m, n_classes):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, n_classes, n)
    bound = SVGPBound(
        KernelAdapter(ConstantKernel() * RBF(np.ones(3))),
        X,
        y,
        X[:m] + 0.05,
        Softmax(n_classes),
    )
    params = bound.initial_params(scale=0.6) + 0.2 * rng.normal(size=bound.n_params)
    value, grad = bound.logp_and_grad(params)
    labels, bound._softmax_labels = bound._softmax_labels, None
    expected_value, expected_grad = bound.logp_and_grad(params)
    bound._softmax_labels = labels
    assert labels is not None
    # the same Monte Carlo estimate over the same draws, summed in another
    # order: rounding only
    assert value == pytest.approx(expected_value, rel=1e-12)
    np.testing.assert_allclose(grad, expected_grad, atol=1e-11 * np.max(abs(grad)))


def test_softmax_labels_that_are_not_class_indices_keep_the_interpreted_path():
    X = np.linspace(-2, 2, 12)[:, None]
    bound = SVGPBound(KernelAdapter(RBF()), X, np.arange(12) % 3, X[::3], Softmax(3))
    A = np.ones((4, 2))
    projection = (A, np.ones(2), np.ones(2, dtype=bool))
    mean, Ls = np.zeros((4, 3)), np.tile(np.eye(4), (3, 1, 1))
    assert bound._compiled_terms(mean, Ls, projection, np.array([0, 3]), 1.0) is None
    assert bound._compiled_terms(mean, Ls, projection, np.array([0, 2]), 1.0)
