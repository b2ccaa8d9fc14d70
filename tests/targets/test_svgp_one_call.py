"""The whole logit or softmax SVGP bound in one compiled call against NumPy.

:func:`~skgp_bayes.targets._svgp_numba.logit_bound` and
:func:`~skgp_bayes.targets._svgp_numba.softmax_bound` replace the kernel,
projection and pullback of :meth:`SVGPBound.logp_and_grad` (the terms given
the projection are compiled either way). Its Gram and cross-kernel matrices
come from the compiled scaled-input kernels, the NumPy path's from the
adapter: entries agree to rounding, so value and gradient agree to a small
multiple of ``eps`` times their scale.
"""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Softmax
from skgp_bayes.priors import Gamma, PriorSet
from skgp_bayes.targets import _svgp_numba
from skgp_bayes.targets._sparse_numba import LAPACK
from skgp_bayes.targets.svgp import SVGPBound

BASES = {
    "rbf": lambda ls: RBF(ls),
    "matern12": lambda ls: Matern(ls, nu=0.5),
    "matern32": lambda ls: Matern(ls, nu=1.5),
    "matern52": lambda ls: Matern(ls, nu=2.5),
}


def _bound(
    n, d, m, base="rbf", ard=True, white=False, seed=0, classes=2, **kwargs
):  # fmt: skip
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X[:, 0] + 0.3 * rng.normal(size=n)
    if classes == 2:
        y, likelihood = (score > 0).astype(float), Bernoulli()
    else:
        # class indices from the score's quantiles: every class present
        y = np.searchsorted(
            np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]), score
        )
        likelihood = Softmax(classes)
    kernel = ConstantKernel(1.2) * BASES[base](np.full(d, 1.3) if ard else 1.3)
    if white:
        kernel = kernel + WhiteKernel(0.05)
    bound = SVGPBound(KernelAdapter(kernel), X, y, X[:m] + 0.05, likelihood, **kwargs)
    params = bound.initial_params(scale=0.6) + 0.2 * rng.normal(size=bound.n_params)
    return bound, params


def _both(bound, params, **kwargs):
    assert bound._one_call
    one_call = bound.logp_and_grad(params, **kwargs)
    bound._one_call = False
    try:
        numpy_path = bound.logp_and_grad(params, **kwargs)
    finally:
        bound._one_call = True
    return one_call, numpy_path


def _agree(got, expected):
    (value, grad), (expected_value, expected_grad) = got, expected
    assert value == pytest.approx(expected_value, rel=1e-12, abs=1e-11)
    scale = np.max(np.abs(expected_grad))
    np.testing.assert_allclose(grad, expected_grad, rtol=0, atol=1e-10 * scale)


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("ard", [False, True])
@pytest.mark.parametrize("learn_inducing", [False, True])
def test_one_call_equals_the_numpy_path(base, ard, learn_inducing, classes):
    bound, params = _bound(
        40, 3, 6, base, ard, classes=classes, learn_inducing=learn_inducing
    )
    _agree(*_both(bound, params))


@pytest.mark.parametrize("classes", [2, 4])
@pytest.mark.parametrize(
    ("n", "d", "m"), [(12, 1, 3), (150, 8, 20), (90, 2, 85)]
)  # 85 inducing inputs: the LAPACK branch of the factor and solves
def test_sizes_white_noise_prior_and_batches(n, d, m, classes):
    blocks = {"c": slice(0, 1), "ell": slice(1, 1 + d), "white": slice(1 + d, 2 + d)}
    prior = PriorSet(blocks, dict.fromkeys(blocks, Gamma(2.0, 1.0)))
    bound, params = _bound(
        n, d, m, white=True, seed=n, classes=classes, prior_set=prior
    )
    _agree(*_both(bound, params))
    _agree(*_both(bound, params, batch=np.arange(0, n, 3)))


def test_rules_switched_off_take_the_numpy_path(monkeypatch):
    # The benchmarks reach the interpreted terms by clearing the compiled
    # rules after construction; the whole-bound call must then stay unused.
    bound, params = _bound(20, 2, 4, classes=3)
    expected = bound.logp_and_grad(params)
    bound._softmax_labels = None
    monkeypatch.setattr(
        "skgp_bayes.targets.svgp.softmax_bound",
        lambda *args: pytest.fail("compiled call reached"),
    )
    _agree(bound.logp_and_grad(params), expected)


@pytest.mark.parametrize("classes", [2, 3])
def test_gradient_against_finite_differences(classes):
    bound, params = _bound(
        30, 2, 5, "matern32", learn_inducing=True, seed=4, classes=classes
    )
    _, grad = bound.logp_and_grad(params)
    h = 1e-6
    for k in range(params.size):
        step = np.zeros(params.size)
        step[k] = h
        fd = (
            bound.logp_and_grad(params + step)[0]
            - bound.logp_and_grad(params - step)[0]
        ) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(
    ("classes", "name"), [(2, "logit_bound"), (3, "softmax_bound")]
)
@pytest.mark.parametrize("status", [_svgp_numba.NOT_PSD, _svgp_numba.SMALL_VARIANCE])
def test_a_status_hands_the_evaluation_back(status, classes, name, monkeypatch):
    # K(Z, Z) not positive definite, or a variance under the small-variance
    # limit (where the NumPy path raises, or switches rule): the compiled
    # call's status sends the evaluation down the NumPy path
    bound, params = _bound(20, 1, 3, classes=classes, learn_inducing=True)
    bound._one_call = False
    expected = bound.logp_and_grad(params)
    bound._one_call = True
    calls = []

    def refuses(*args):
        calls.append(args)
        return status, 0.0, np.empty(0), np.empty(0), np.empty(0), np.empty((0, 0))

    monkeypatch.setattr(f"skgp_bayes.targets.svgp.{name}", refuses)
    value, grad = bound.logp_and_grad(params)
    assert len(calls) == 1
    assert value == expected[0]
    np.testing.assert_array_equal(grad, expected[1])


@pytest.mark.parametrize("classes", [2, 3])
def test_the_compiled_call_reports_its_statuses(classes):
    # The statuses themselves, from the compiled call (the test above stubs
    # it): repeated inducing inputs with a negative jitter make K(Z, Z)
    # indefinite (eigenvalues -c/2 twice; without jitter rounding can leave
    # a positive pivot); a small-variance limit above every variance
    # refuses the terms.
    bound, params = _bound(20, 1, 3, classes=classes)
    theta, _, mean, Ls, Z = bound.split(params)
    kind, q = bound._compiled_q(mean, Ls, bound.y, 1.0)
    call = _svgp_numba.logit_bound if kind == "logit" else _svgp_numba.softmax_bound
    spec = bound.adapter.spec

    def status(Z, jitter, small_var):
        args = (*q[:-1], small_var, False, LAPACK, np.empty(0))
        head = (bound.X, Z, theta, spec.defaults, spec.theta_index, spec.base)
        out = call(*head, jitter, *args)
        return out[0], out[5].shape

    repeated = np.repeat(Z[:1], Z.shape[0], axis=0)
    assert status(repeated, -0.5, q[-1]) == (_svgp_numba.NOT_PSD, (0, 0))
    assert status(Z, bound.jitter, 1e10) == (_svgp_numba.SMALL_VARIANCE, (0, 0))
    assert status(Z, bound.jitter, q[-1])[0] == _svgp_numba.DONE
