"""The whitened target's compiled evaluation against its interpreted one."""

import pickle
import threading

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Matern,
    WhiteKernel,
)

from skgp_bayes._defaults import default_priors
from skgp_bayes.exceptions import NotPSDError
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, RobustMax, Softmax
from skgp_bayes.priors import HalfNormal, PriorSet
from skgp_bayes.targets._sparse_numba import cross_contract
from skgp_bayes.targets._whitened_compiled import (
    WORK_MIN_ROWS,
    whitened_plan,
    whitened_workspace,
)
from skgp_bayes.targets._whitened_numba import (
    NOT_PSD,
    WHITENED_ROUTINES,
    WORK_MATRICES,
    whitened_value_and_grad,
)
from skgp_bayes.targets.whitened import WhitenedLatentTarget

KERNELS = {
    "rbf-ard": lambda d: ConstantKernel(1.3) * RBF(np.linspace(0.6, 1.4, d)),
    "rbf-iso": lambda d: ConstantKernel(0.8) * RBF(1.1),
    "rbf+white": lambda d: ConstantKernel(0.9) * RBF(np.ones(d)) + WhiteKernel(0.05),
    "rbf-alone": lambda d: RBF(0.9),
}


def _target(kernel_name, n_classes, n=40, d=3, seed=0, prior="default"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    adapter = KernelAdapter(KERNELS[kernel_name](d))
    if prior == "default":
        prior_set = PriorSet(
            dict(adapter.hyperparameter_slices),
            default_priors(adapter.param_names, d),
        )
    else:
        prior_set = None
    if n_classes == 2:
        y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(float)
        lik, n_latent = Bernoulli(), 1
    else:
        y = rng.integers(0, n_classes, n)
        lik, n_latent = Softmax(n_classes), n_classes
    target = WhitenedLatentTarget(adapter, X, y, lik, prior_set, n_latent)
    theta = adapter.kernel.theta + 0.3 * rng.normal(size=target.n_theta)
    params = np.concatenate([theta, rng.normal(size=n * n_latent)])
    return target, params


def _interpreted(target, params):
    """The interpreted path's value and gradient (the plan switched off)."""
    plan = target._plan, target._planned
    target._plan, target._planned = None, True
    try:
        return target.logp_and_grad(params)
    finally:
        target._plan, target._planned = plan


@pytest.mark.parametrize("kernel_name", sorted(KERNELS))
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("prior", ["default", None])
def test_compiled_equals_interpreted(kernel_name, n_classes, prior):
    target, params = _target(kernel_name, n_classes, prior=prior)
    assert whitened_plan(target) is not None
    value, grad = target.logp_and_grad(params)
    expected_value, expected_grad = _interpreted(target, params)
    # The same arithmetic in another order (and a 1-ulp exponential):
    # rounding of the size of eps times the condition of the 40-row factor.
    assert value == pytest.approx(expected_value, rel=1e-11)
    scale = np.max(np.abs(expected_grad))
    np.testing.assert_allclose(grad, expected_grad, rtol=0, atol=1e-10 * scale)


@pytest.mark.parametrize("n", [5, 130])
def test_compiled_gradient_against_finite_differences(n):
    # 130 rows take dsygst for the congruence, 5 rows the compiled solves.
    target, params = _target("rbf+white", 2, n=n, d=2, seed=n)
    assert whitened_plan(target) is not None
    _, grad = target.logp_and_grad(params)
    h = 1e-5
    idx = list(range(target.n_theta)) + [target.n_theta, target.n_params - 1]
    for j in idx:
        e = np.zeros_like(params)
        e[j] = h
        up, _ = target.logp_and_grad(params + e)
        down, _ = target.logp_and_grad(params - e)
        # truncation O(h^2 f''') and rounding O(eps |f| / h): about 1e-8 here
        assert grad[j] == pytest.approx((up - down) / (2 * h), rel=1e-6, abs=1e-6)


@pytest.mark.parametrize(
    "change",
    ["probit", "per-class kernel", "matern", "robust-max", "user prior"],
)
def test_what_has_no_compiled_form_keeps_the_interpreted_path(change):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 2))
    y01 = (X[:, 0] > 0).astype(float)
    y3 = np.arange(12) % 3
    kernel = ConstantKernel() * RBF()
    adapter = KernelAdapter(kernel)
    args = dict(
        probit=(adapter, X, y01, Bernoulli(link="probit"), None),
        matern=(KernelAdapter(Matern(nu=1.5)), X, y01, Bernoulli(), None),
    )
    if change == "per-class kernel":
        target = WhitenedLatentTarget(
            adapter, X, y3, Softmax(3), None, 3, shared_kernel=False
        )
    elif change == "robust-max":
        target = WhitenedLatentTarget(adapter, X, y3, RobustMax(3), None, 3)
    elif change == "user prior":
        # a half-normal is not one of the compiled families
        priors = PriorSet(
            dict(adapter.hyperparameter_slices), {"k2__length_scale": HalfNormal()}
        )
        target = WhitenedLatentTarget(adapter, X, y01, Bernoulli(), priors)
    else:
        target = WhitenedLatentTarget(*args[change])
    assert whitened_plan(target) is None
    value, grad = target.logp_and_grad(np.zeros(target.n_params))
    assert np.isfinite(value) and np.all(np.isfinite(grad))


def test_a_gram_matrix_without_a_factor_raises_as_before():
    target, params = _target("rbf-ard", 2, n=10)
    bad = params.copy()
    bad[0] = np.nan
    plan = whitened_plan(target)
    status, _, _ = whitened_value_and_grad(bad, *plan, WHITENED_ROUTINES, np.empty(0))
    assert status == NOT_PSD
    with pytest.raises(NotPSDError):
        target.logp_and_grad(bad)


def test_wrong_length_parameters_are_refused_not_read_past():
    target, params = _target("rbf-iso", 2, n=10)
    with pytest.raises(ValueError):
        target.logp_and_grad(params[:-1])


def test_pickled_target_evaluates_identically():
    target, params = _target("rbf-ard", 3, n=20)
    value, grad = target.logp_and_grad(params)
    copy = pickle.loads(pickle.dumps(target))
    value2, grad2 = copy.logp_and_grad(params)
    assert value2 == value
    np.testing.assert_array_equal(grad2, grad)


def test_labels_outside_the_classes_are_never_read_as_indices():
    target, _ = _target("rbf-iso", 3, n=10)
    target.y = np.where(np.arange(10) == 4, 3, target.y)  # no class 3
    assert whitened_plan(target) is None


@pytest.mark.parametrize("n_classes", [2, 3])
def test_scratch_memory_changes_no_result(n_classes):
    # A thread's kept matrices, dirty from an evaluation at other
    # parameters, give the bits that fresh matrices give.
    n = WORK_MIN_ROWS
    target, params = _target("rbf-ard", n_classes, n=n, seed=3)
    plan = whitened_plan(target)
    fresh = whitened_value_and_grad(params, *plan, WHITENED_ROUTINES, np.empty(0))
    work = np.full(WORK_MATRICES * n * n, np.nan)
    other = params + 0.5
    whitened_value_and_grad(other, *plan, WHITENED_ROUTINES, work)
    kept = whitened_value_and_grad(params, *plan, WHITENED_ROUTINES, work)
    assert kept[0] == fresh[0] and kept[1] == fresh[1]
    assert np.array_equal(kept[2], fresh[2])


def test_threads_keep_scratch_memory_of_their_own():
    n = WORK_MIN_ROWS
    assert whitened_workspace(n).size == 0  # this is the main thread
    seen = []

    def evaluate():
        seen.append(whitened_workspace(n))
        seen.append(whitened_workspace(n))

    workers = [threading.Thread(target=evaluate) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert seen[0] is seen[1] and seen[2] is seen[3]
    assert seen[0].size == WORK_MATRICES * n * n
    assert not np.shares_memory(seen[0], seen[2])
    assert whitened_workspace(n - 1).size == 0


def test_target_on_a_thread_equals_the_main_thread():
    target, params = _target("rbf-iso", 3, n=WORK_MIN_ROWS, seed=4)
    here = target.logp_and_grad(params)
    there = []
    worker = threading.Thread(target=lambda: there.append(target.logp_and_grad(params)))
    worker.start()
    worker.join()
    assert there[0][0] == here[0] and np.array_equal(there[0][1], here[1])


@pytest.mark.parametrize("base", [0, 2])
def test_cross_contract_into_scratch_equals_fresh(base):
    rng = np.random.default_rng(5)
    Zs, Xs = rng.normal(size=(7, 3)), rng.normal(size=(9, 3))
    Kuf = np.exp(-rng.uniform(size=(7, 9)))
    Kuf[2, 4] = 0.0  # skipped by every kernel but the RBF
    W = rng.normal(size=(7, 9))
    fresh, kept = np.zeros(4), np.zeros(4)
    none = np.empty((0, 0))
    cross_contract(Zs, Xs, Kuf, W, 1.3, base, True, fresh, none)
    cross_contract(Zs, Xs, Kuf, W, 1.3, base, True, kept, none, np.full((7, 9), 9.0))
    assert np.array_equal(fresh, kept)
