"""The whitened latent target: gradients in both blocks against finite differences."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Softmax
from skgp_bayes.priors import LogNormal, PriorSet
from skgp_bayes.targets.whitened import WhitenedLatentTarget

FAST = ConstantKernel(1.3) * RBF(np.array([0.8, 1.4]))
FAST_MATERN = ConstantKernel(0.7) * Matern(0.9, nu=1.5) + WhiteKernel(0.05)
FAST_RBF_WHITE = ConstantKernel(0.9) * RBF(1.1) + WhiteKernel(0.05)
GENERIC = ConstantKernel(1.1) * RationalQuadratic(length_scale=0.9, alpha=1.5)
KERNELS = [FAST, FAST_RBF_WHITE, FAST_MATERN, GENERIC]
IDS = ["rbf-ard", "rbf+white", "matern32+white", "rational-quadratic"]


def _target(kernel, n_classes, link="logit", shared=True, n=9, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    adapter = KernelAdapter(kernel)
    priors = PriorSet(
        dict(adapter.hyperparameter_slices),
        {adapter.param_names[0]: LogNormal(0.0, 1.0)},
    )
    if n_classes == 2:
        y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(float)
        lik, n_latent = Bernoulli(link=link), 1
    else:
        y = np.arange(n) % n_classes
        lik, n_latent = Softmax(n_classes), n_classes
    target = WhitenedLatentTarget(adapter, X, y, lik, priors, n_latent, shared)
    params = np.concatenate(
        [
            np.tile(kernel.theta, target.n_blocks)
            + 0.1 * rng.normal(size=target.n_theta),
            rng.normal(size=target.n * n_latent),
        ]
    )
    return target, params


def _central_differences(target, params, idx, h=1e-5):
    out = np.empty(len(idx))
    for k, j in enumerate(idx):
        e = np.zeros_like(params)
        e[j] = h
        out[k] = (target.log_prob(params + e) - target.log_prob(params - e)) / (2 * h)
    return out


def _check_blocks(target, params):
    value, grad = target.logp_and_grad(params)
    # log_prob is a separate code path (no reverse pass): the values agree.
    assert value == pytest.approx(target.log_prob(params), rel=1e-12, abs=1e-12)
    theta_idx = np.arange(target.n_theta)
    # every hyperparameter entry, and a spread of nu entries in every latent
    nu_idx = target.n_theta + np.arange(0, target.n * target.n_latent, 2)
    # Central differences with h = 1e-5 have truncation error O(h^2 f''') and
    # rounding error O(eps |f| / h), about 1e-9 here: 1e-6 relative is ample
    # and still fails for any missing term (e.g. the jitter's derivative
    # contributes about 1e-6 of the theta gradient, checked separately).
    np.testing.assert_allclose(
        grad[theta_idx],
        _central_differences(target, params, theta_idx),
        rtol=1e-6,
        atol=1e-7,
    )
    np.testing.assert_allclose(
        grad[nu_idx], _central_differences(target, params, nu_idx), rtol=1e-6, atol=1e-7
    )


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
@pytest.mark.parametrize("link", ["logit", "probit"])
def test_binary_gradient_matches_finite_differences(kernel, link):
    target, params = _target(kernel, 2, link=link)
    assert target.n_blocks == 1
    _check_blocks(target, params)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
@pytest.mark.parametrize("shared", [True, False], ids=["shared", "per-class"])
def test_softmax_gradient_matches_finite_differences(kernel, shared):
    target, params = _target(kernel, 3, shared=shared)
    assert target.n_blocks == (1 if shared else 3)
    _check_blocks(target, params)


def test_fast_and_generic_paths_agree():
    # The same kernel through the compiled path and through sklearn's own
    # gradient tensor (a sum with a fixed zero term defeats the lowering).
    kernel = ConstantKernel(1.3) * RBF(0.8)
    generic = kernel + ConstantKernel(0.0, constant_value_bounds="fixed")
    fast_target, params = _target(kernel, 2)
    slow_target, _ = _target(generic, 2)
    assert fast_target.adapter.is_fast
    assert not slow_target.adapter.is_fast
    v1, g1 = fast_target.logp_and_grad(params)
    v2, g2 = slow_target.logp_and_grad(params)
    assert v1 == pytest.approx(v2, rel=1e-10)
    np.testing.assert_allclose(g1, g2, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    "kernel",
    [FAST, FAST_RBF_WHITE, RBF(np.array([0.5, 2.0])), ConstantKernel(2.0) * RBF(0.7)],
    ids=["c*rbf-ard", "c*rbf+white", "rbf-ard", "c*rbf"],
)
def test_blas_rbf_path_equals_the_compiled_loops(kernel):
    # The GEMM-shaped Gram matrix and contraction against the adapter's
    # pairwise loops: the same sums in another order, so they agree to a few
    # ulp of the summed magnitudes (1e-12 relative with 30 points).
    target, params = _target(kernel, 2, n=30)
    assert target._rbf is not None
    theta = target.split(params)[0][0]
    X = target.X
    K_loops = target.adapter.gram(theta, X)
    np.testing.assert_allclose(target._rbf.gram(theta), K_loops, rtol=1e-12, atol=0)
    W = np.random.default_rng(1).normal(size=(30, 30))
    W = W + W.T
    magnitude = target.adapter.grad_contract(theta, X, np.abs(W))
    np.testing.assert_allclose(
        target.grad_contract(theta, W),
        target.adapter.grad_contract(theta, X, W),
        rtol=0,
        atol=1e-12 * np.max(np.abs(magnitude)),
    )


def test_gradient_is_exact_for_large_nu():
    # Far from the mode the likelihood gradient saturates; the reverse pass
    # must still match (a sign or transposition slip shows most here).
    target, params = _target(FAST, 2, n=6, seed=3)
    params[target.n_theta :] *= 4.0
    _check_blocks(target, params)


def test_jitter_derivative_is_part_of_the_gradient():
    # The jitter scales with mean(diag K), so it depends on theta. At the
    # default 1e-6 its share of the theta gradient is near the tolerance of
    # the check above; at 1e-2 leaving its derivative out would miss by about
    # 1e-2 relative, far outside rtol=1e-6.
    target, params = _target(FAST, 2)
    target.jitter = 1e-2
    _check_blocks(target, params)


def test_latent_is_cholesky_times_nu():
    target, params = _target(FAST, 3, shared=False)
    thetas, nu = target.split(params)
    F = target.latent(params)
    for c in range(3):
        K, delta = target.gram(thetas[c])
        assert delta == pytest.approx(target.jitter * np.mean(np.diag(K) - delta))
        L = np.linalg.cholesky(K)
        np.testing.assert_allclose(F[:, c], L @ nu[c], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(target.join(thetas, nu), params)


def test_bad_shapes_raise():
    target, params = _target(FAST, 2)
    with pytest.raises(ValueError, match="params must have shape"):
        target.logp_and_grad(params[:-1])
    with pytest.raises(ValueError, match="n_latent"):
        WhitenedLatentTarget(
            target.adapter, target.X, target.y, Softmax(3), None, n_latent=1
        )
    with pytest.raises(ValueError, match="y_encoded"):
        WhitenedLatentTarget(target.adapter, target.X, target.y[:-1], Bernoulli(), None)
