"""SVGP bound: gradients in every block, minibatches, the conjugate optimum."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.kernels import KernelAdapter, force_generic
from skgp_bayes.likelihoods import Bernoulli, Gaussian, Poisson, RobustMax, Softmax
from skgp_bayes.priors import PriorSet
from skgp_bayes.targets.svgp import SVGPBound


def _data(likelihood, n=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    if isinstance(likelihood, Bernoulli):
        y = (f > 0).astype(float)
    elif isinstance(likelihood, RobustMax | Softmax):
        y = np.digitize(f, [-0.5, 0.5])
    elif isinstance(likelihood, Poisson):
        y = rng.poisson(np.exp(f)).astype(float)
    else:
        y = f + 0.1 * rng.normal(size=n)
    Z = rng.uniform(-2, 2, (4, 2))
    return X, y, Z


CASES = {
    "logit": (Bernoulli("logit"), ConstantKernel(1.3) * RBF([0.8, 1.2])),
    "probit": (Bernoulli("probit"), Matern(0.9, nu=1.5) * ConstantKernel(0.7)),
    "robustmax": (RobustMax(3), ConstantKernel(1.0) * RBF(1.0)),
    "softmax": (Softmax(3, n_samples=50), ConstantKernel(1.0) * Matern(1.0, nu=2.5)),
    "poisson": (Poisson(), ConstantKernel(0.8) * RBF(1.1) + WhiteKernel(0.05)),
    "gaussian": (Gaussian(0.2), ConstantKernel(1.0) * RBF([1.0, 0.7])),
}


def _bound(name, generic=False, offset=False):
    likelihood, kernel = CASES[name]
    X, y, Z = _data(likelihood)
    adapter = force_generic(kernel) if generic else KernelAdapter(kernel)
    slices = dict(adapter.hyperparameter_slices)
    if isinstance(likelihood, Gaussian):
        slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    off = np.linspace(-0.3, 0.3, X.shape[0]) if offset else None
    return SVGPBound(adapter, X, y, Z, likelihood, PriorSet(slices), offset=off)


def _params(bound, seed=2):
    rng = np.random.default_rng(seed)
    params = bound.initial_params(scale=0.6)
    params += 0.2 * rng.normal(size=params.size)
    return params


def _fd(fun, x, h=1e-6):
    out = np.empty_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        out[j] = (fun(x + e) - fun(x - e)) / (2 * h)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences_in_every_block(name):
    bound = _bound(name, offset=name == "poisson")
    assert bound.learn_inducing
    params = _params(bound)
    value, grad = bound.elbo_and_grad(params)
    assert np.isclose(value, bound.elbo(params))
    fd = _fd(bound.elbo, params)
    assert set(bound.blocks) >= {"theta", "m", "L", "Z"}
    for block, sl in bound.blocks.items():
        np.testing.assert_allclose(
            grad[sl], fd[sl], rtol=1e-5, atol=1e-6, err_msg=f"block {block}"
        )


def test_generic_kernel_keeps_inducing_inputs_fixed():
    bound = _bound("logit", generic=True)
    assert not bound.learn_inducing and "Z" not in bound.blocks
    params = _params(bound)
    _, grad = bound.elbo_and_grad(params)
    np.testing.assert_allclose(grad, _fd(bound.elbo, params), rtol=1e-5, atol=1e-6)
    likelihood, kernel = CASES["logit"]
    X, y, Z = _data(likelihood)
    with pytest.raises(ValueError, match="input gradients"):
        SVGPBound(force_generic(kernel), X, y, Z, likelihood, learn_inducing=True)


@pytest.mark.parametrize("name", ["probit", "robustmax", "gaussian"])
def test_minibatch_mean_over_partition_equals_full_gradient(name):
    bound = _bound(name)
    params = _params(bound)
    full_value, full_grad = bound.elbo_and_grad(params)
    batches = np.array_split(np.random.default_rng(1).permutation(bound.n), 4)
    values, grads = zip(*(bound.elbo_and_grad(params, b) for b in batches), strict=True)
    np.testing.assert_allclose(np.mean(values), full_value, rtol=1e-10)
    np.testing.assert_allclose(np.mean(grads, axis=0), full_grad, rtol=1e-9, atol=1e-9)
    assert not np.allclose(grads[0], full_grad)


def test_prior_q_has_zero_kl():
    # m = 0, L = I is the whitened prior: the bound is the expected log
    # likelihood under the prior, computed here by hand.
    likelihood = Gaussian(0.3)
    X, y, Z = _data(likelihood)
    kernel = ConstantKernel(1.0, "fixed") * RBF(1.0, "fixed")
    bound = SVGPBound(KernelAdapter(kernel), X, y, Z, likelihood, learn_noise=False)
    params = bound.initial_params()
    # q(f_i) = N(0, k(x_i, x_i)) = N(0, 1)
    expected = np.sum(-0.5 * (np.log(2 * np.pi * 0.3) + (y**2 + 1.0) / 0.3))
    np.testing.assert_allclose(bound.elbo(params), expected, rtol=1e-6)


def test_optimum_with_inducing_at_data_is_the_exact_posterior():
    # Z = X, Gaussian likelihood, fixed hyperparameters: the bound is tight
    # (Titsias, 2009), its maximiser is the exact GP posterior and its value
    # the exact log marginal likelihood. The only gap is the relative
    # jitter 1e-6 on K(Z, Z), far below the tolerances used.
    rng = np.random.default_rng(4)
    X = np.sort(rng.uniform(-3, 3, 10))[:, None]
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=10)
    s2 = 0.1
    kernel = ConstantKernel(1.5, "fixed") * RBF(0.9, "fixed")
    bound = SVGPBound(
        KernelAdapter(kernel),
        X,
        y,
        X,
        Gaussian(s2),
        learn_noise=False,
        learn_inducing=False,
    )
    assert bound.n_params == 10 + 55

    def objective(p):
        value, grad = bound.elbo_and_grad(p)
        return -value, -grad

    result = minimize(
        objective,
        bound.initial_params(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15},
    )
    K = kernel(X)
    Ky = K + s2 * np.eye(10)
    exact_mean = K @ np.linalg.solve(Ky, y)
    exact_cov = K - K @ np.linalg.solve(Ky, K)
    mean, var = bound.predict_f(result.x, X)
    np.testing.assert_allclose(mean[:, 0], exact_mean, atol=1e-4)
    np.testing.assert_allclose(var[:, 0], np.diag(exact_cov), atol=1e-4)
    # full covariance: u = R v, cov(u) = R S R'
    _, _, _, Ls, _ = bound.split(result.x)
    Kj = K + 1e-6 * np.mean(np.diag(K)) * np.eye(10)
    R = np.linalg.cholesky(Kj)
    np.testing.assert_allclose(R @ Ls[0] @ Ls[0].T @ R.T, exact_cov, atol=1e-4)
    sign, logdet = np.linalg.slogdet(Ky)
    lml = -0.5 * (y @ np.linalg.solve(Ky, y) + logdet + 10 * np.log(2 * np.pi))
    np.testing.assert_allclose(-result.fun, lml, atol=1e-3)


def test_bad_shapes():
    bound = _bound("logit")
    with pytest.raises(ValueError, match="shape"):
        bound.elbo(np.zeros(3))
    with pytest.raises(IndexError):
        bound.elbo(bound.initial_params(), batch=[bound.n + 1])
