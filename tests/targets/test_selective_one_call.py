"""A selection's logit subset bounds in one compiled call each.

``SharedSubsetBound.values_and_mean_grad`` scores subsets of the
candidates from kernel matrices shared by all of them; with a
Bernoulli-logit or softmax likelihood each subset's factor, projection, terms and
kernel weights are one call (``targets._svgp_numba.logit_subset_into``,
``softmax_subset_into``), and the logit subsets of a step one call for
all of them (``targets._selective_numba``).
The reference is the same bound with that call switched off, which runs
the NumPy factor, projection and reverse pass around the compiled terms.
The two differ by the order of floating-point operations only (the
compiled factor and solves against LAPACK's), so they agree to 1e-10
relative, far above rounding (about 1e-13 here) and far below any change
of the algebra.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Softmax
from skgp_bayes.targets._likelihood_numba import DONE, NOT_PSD, logit_rules
from skgp_bayes.targets._sparse_numba import LAPACK
from skgp_bayes.targets._svgp_numba import logit_subset_into
from skgp_bayes.targets.selective import SharedSubsetBound
from skgp_bayes.targets.svgp import SVGPBound


def _shared(n, d, n_candidates, kernel, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    latent = X[:, 0] + 0.5 * rng.normal(size=n)
    if n_classes == 2:
        y, likelihood = (latent > 0).astype(float), Bernoulli()
    else:
        edges = np.quantile(latent, np.linspace(0, 1, n_classes + 1)[1:-1])
        y, likelihood = np.searchsorted(edges, latent), Softmax(n_classes)
    Z = X[rng.choice(n, size=n_candidates, replace=False)]
    return SharedSubsetBound(KernelAdapter(kernel), X, y, Z, likelihood)


def _params(bound, seed):
    rng = np.random.default_rng(seed)
    params = bound.full.initial_params()
    return params + 0.1 * rng.normal(size=params.size)


def _masks(n_candidates, n_subsets, size, seed):
    rng = np.random.default_rng(seed)
    masks = np.zeros((n_subsets, n_candidates), dtype=bool)
    for row in masks:
        row[rng.choice(n_candidates, size=size, replace=False)] = True
    masks[-1] = False  # the empty set too
    return masks


def _without_one_call(monkeypatch, call):
    with monkeypatch.context() as patch:
        patch.setattr(SVGPBound, "_subset_in_one_call", lambda *a, **k: None)
        patch.setattr(SVGPBound, "_subsets_in_one_call", lambda *a, **k: None)
        return call()


def _counting_compiled_subsets(monkeypatch):
    """How many subsets each compiled path scores, counted as they run."""
    one, runs = SVGPBound._subset_in_one_call, SVGPBound._subsets_in_one_call
    taken = {"one": [], "many": 0}

    def counted_one(self, *args):
        done = one(self, *args)
        taken["one"].append(done is not None)
        return done

    def counted_runs(self, params, masks, *shared):
        run = runs(self, params, masks, *shared)
        if run is None:
            return None

        def counted(first, values, total):
            stop = run(first, values, total)
            taken["many"] += stop - first
            return stop

        return counted

    monkeypatch.setattr(SVGPBound, "_subset_in_one_call", counted_one)
    monkeypatch.setattr(SVGPBound, "_subsets_in_one_call", counted_runs)
    return taken


KERNELS = {
    "rbf ard": lambda d: ConstantKernel(1.3) * RBF(np.linspace(0.8, 2.0, d)),
    "rbf + white": lambda d: ConstantKernel(0.7) * RBF(1.5) + WhiteKernel(0.05),
    "matern": lambda d: Matern(length_scale=1.2, nu=1.5),
}


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize(
    "n, d, n_candidates, size",
    [(40, 2, 12, 5), (120, 6, 30, 12), (150, 4, 100, 85)],  # 85: LAPACK's branch
)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_subset_bounds_match_the_numpy_path(
    monkeypatch, kernel, n, d, n_candidates, size, n_classes
):
    bound = _shared(n, d, n_candidates, KERNELS[kernel](d), n_classes=n_classes)
    params = _params(bound, 1)
    masks = _masks(n_candidates, 4, size, seed=2)
    batch = np.arange(0, n, 3)
    for b in (None, batch):
        ref_values, ref_grad = _without_one_call(
            monkeypatch, lambda b=b: bound.values_and_mean_grad(params, masks, b)
        )
        with monkeypatch.context() as patch:
            taken = _counting_compiled_subsets(patch)
            values, grad = bound.values_and_mean_grad(params, masks, b)
        assert_allclose(values, ref_values, rtol=1e-10)
        assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-10 * np.abs(ref_grad).max())
        # every non-empty subset took the compiled loop over subsets
        assert not taken["one"] and taken["many"] == masks.any(axis=1).sum()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_subsets_in_one_call_give_the_bits_of_one_call_each(monkeypatch, n_classes):
    # The compiled loop over a step's subsets reads the same parameters and
    # adds the same gradients in the same order as the interpreted loop over
    # one compiled call per subset: the same bits, with empty subsets (scored
    # in NumPy) between the compiled runs.
    bound = _shared(80, 3, 20, KERNELS["rbf + white"](3), n_classes=n_classes)
    params = _params(bound, 2)
    masks = _masks(20, 6, 7, seed=3)
    masks[1] = False
    with monkeypatch.context() as patch:
        patch.setattr(SVGPBound, "_subsets_in_one_call", lambda *a, **k: None)
        one_each = bound.values_and_mean_grad(params, masks)
    with monkeypatch.context() as patch:
        taken = _counting_compiled_subsets(patch)
        all_in_one = bound.values_and_mean_grad(params, masks)
    assert taken["many"] == 4 and not taken["one"]
    np.testing.assert_array_equal(all_in_one[0], one_each[0])
    np.testing.assert_array_equal(all_in_one[1], one_each[1])


def test_subset_gradient_agrees_with_finite_differences():
    bound = _shared(60, 3, 15, KERNELS["rbf ard"](3))
    params = _params(bound, 3)
    masks = _masks(15, 3, 6, seed=4)
    _, grad = bound.values_and_mean_grad(params, masks)
    step = 1e-6
    rng = np.random.default_rng(5)
    for j in rng.choice(params.size, size=12, replace=False):
        e = np.zeros_like(params)
        e[j] = step
        up = bound.values_and_mean_grad(params + e, masks)[0].mean()
        down = bound.values_and_mean_grad(params - e, masks)[0].mean()
        assert_allclose(grad[j], (up - down) / (2 * step), rtol=1e-5, atol=1e-6)


def test_a_subset_that_does_not_factorise_leaves_the_weights_alone():
    x = np.array([0.0, 1.0, 2.0])
    z = np.array([0.5, 0.5])  # the same candidate twice
    Kcc = np.exp(-0.5 * (z[:, None] - z) ** 2)
    Kcf = np.exp(-0.5 * (z[:, None] - x) ** 2)
    weights = (np.zeros((2, 2)), np.zeros((2, 3)), np.zeros(3))
    status, *_ = logit_subset_into(
        Kcc, Kcf, np.ones(3), np.array([0, 1]), 0.0, np.zeros(2), np.eye(2),
        np.array([1.0, 0.0, 1.0]), 1.0, *logit_rules(20), 1e-10, LAPACK, *weights,
    )  # fmt: skip
    assert status == NOT_PSD
    assert all(not np.any(w) for w in weights)
    # one of the two alone factorises and fills only its own entries
    status, *_ = logit_subset_into(
        Kcc, Kcf, np.ones(3), np.array([1]), 1e-6, np.full(1, 0.3),
        np.full((1, 1), 0.5), np.array([1.0, 0.0, 1.0]), 1.0, *logit_rules(20),
        1e-10, LAPACK, *weights,
    )  # fmt: skip
    assert status == DONE
    assert weights[0][0, 0] == 0.0 and weights[0][1, 1] != 0.0
    assert not np.any(weights[1][0]) and np.all(weights[1][1] != 0.0)
