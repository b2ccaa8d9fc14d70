import pickle
import warnings

import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.exceptions import NotPSDError
from skgp_bayes.kernels import KernelAdapter, force_generic
from skgp_bayes.linalg._nogil_lapack import (
    DLAUUM,
    DPOTRI,
    DTRMM,
    DTRTRI,
    inverse_from_factor_f,
)
from skgp_bayes.priors import Gamma, LogNormal, PriorSet
from skgp_bayes.targets import ExactMarginalTarget

KERNELS = [
    ConstantKernel(1.5) * RBF(np.array([0.7, 1.3])),
    Matern(0.8, nu=1.5) * ConstantKernel(0.5),
    ConstantKernel(1.0) * Matern(np.array([1.0, 0.5]), nu=2.5) + WhiteKernel(0.1),
    ConstantKernel(1.0) * Matern(0.9, nu=0.5),
]


def _data(n=25, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _target(kernel, with_prior=True):
    X, y = _data()
    adapter = KernelAdapter(kernel)
    slices = dict(adapter.hyperparameter_slices)
    slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    priors = (
        PriorSet(slices, {"noise_variance": LogNormal(-2.0, 1.0)})
        if (with_prior)
        else None
    )
    return ExactMarginalTarget(adapter, X, y, priors)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: repr(k)[:40])
def test_gradient_matches_finite_differences(kernel):
    target = _target(kernel)
    params = np.append(kernel.theta, np.log(0.05)) + 0.1
    _, grad = target.logp_and_grad(params)
    h = 1e-6
    fd = np.empty_like(params)
    for j in range(params.size):
        e = np.zeros_like(params)
        e[j] = h
        fd[j] = (
            target.logp_and_grad(params + e)[0] - target.logp_and_grad(params - e)[0]
        ) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: repr(k)[:40])
def test_likelihood_matches_scikit_learn(kernel):
    # sklearn's lml with the noise as a WhiteKernel term equals ours
    X, y = _data()
    target = _target(kernel, with_prior=False)
    noise = 0.05
    params = np.append(kernel.theta, np.log(noise))
    value, grad = target.log_likelihood(params)
    full = kernel + WhiteKernel(noise)
    gpr = GaussianProcessRegressor(full, alpha=0.0, optimizer=None).fit(X, y)
    ref, ref_grad = gpr.log_marginal_likelihood(full.theta, eval_gradient=True)
    assert value == pytest.approx(ref, rel=1e-10)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-10)


def test_prior_is_added():
    kernel = ConstantKernel(1.0) * RBF(1.0)
    with_prior, without = _target(kernel), _target(kernel, with_prior=False)
    params = np.array([0.2, -0.1, np.log(0.1)])
    expected = (
        Gamma().log_prob_theta(params[:2])[0].sum()
        + LogNormal(-2.0, 1.0).log_prob_theta(params[2:])[0].sum()
    )
    diff = with_prior.logp_and_grad(params)[0] - without.log_likelihood(
        params, eval_gradient=False
    )
    assert diff == pytest.approx(expected)


def test_fixed_noise_drops_the_parameter():
    X, y = _data()
    target = ExactMarginalTarget(
        KernelAdapter(RBF(1.0)), X, y, None, log_noise_variance=np.log(0.1)
    )
    assert target.n_params == 1
    assert target.param_names == ["length_scale"]
    value, grad = target.logp_and_grad(np.array([0.0]))
    assert grad.shape == (1,) and np.isfinite(value)


def test_not_psd_error_names_hyperparameters():
    class Indefinite(KernelAdapter):
        def gram(self, theta, X):
            return -np.eye(X.shape[0])

    X, y = _data()
    target = ExactMarginalTarget(Indefinite(RBF(2.0)), X, y, None)
    with pytest.raises(NotPSDError, match=r"length_scale=2.*noise_variance=0.5"):
        target.log_likelihood(np.log([2.0, 0.5]))


@pytest.mark.parametrize(
    "kernel",
    [
        ConstantKernel(1.5) * RBF(np.array([0.7, 1.3])),
        RBF(0.8),
        ConstantKernel(1.0) * RBF(np.array([1.0, 0.5])) + WhiteKernel(0.1),
        RBF(np.array([1.0, 2.0])) * ConstantKernel(2.0, constant_value_bounds="fixed"),
    ],
    ids=lambda k: repr(k)[:40],
)
def test_rbf_path_matches_the_general_contraction(kernel):
    # The RBF path (Gram product, one buffer through dpotrf/dpotri, BLAS
    # contraction) must give the value and gradient of the kernel-by-kernel
    # contraction up to rounding, also far from the origin of the inputs.
    X, y = _data()
    X = X + 50.0
    fast = ExactMarginalTarget(KernelAdapter(kernel), X, y, None)
    general = ExactMarginalTarget(force_generic(kernel), X, y, None)
    assert fast._rbf and not general._rbf
    params = np.append(kernel.theta, np.log(0.05)) + 0.1
    value, grad = fast.logp_and_grad(params)
    ref_value, ref_grad = general.logp_and_grad(params)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-10)


def test_rbf_path_falls_back_to_jitter():
    # Duplicate inputs and a tiny noise: dpotrf fails in the RBF path, and
    # the general path's jitter ladder must still produce a finite value.
    X = np.zeros((6, 1))
    y = np.arange(6.0)
    target = ExactMarginalTarget(KernelAdapter(RBF(1.0)), X, y, None)
    value, grad = target.logp_and_grad(np.array([0.0, np.log(1e-300)]))
    assert target.max_jitter > 0
    assert np.isfinite(value) and np.all(np.isfinite(grad))


def _dense_reference(kernel, X, y, params):
    # Log marginal likelihood and gradient written out densely: scikit-learn's
    # kernel and its theta-gradient tensor, K^-1 from a Cholesky solve of the
    # identity, 1/2 tr((a a' - K^-1) dK_j) per parameter.
    noise = np.exp(params[-1])
    K, dK = kernel.clone_with_theta(params[:-1])(X, eval_gradient=True)
    K = K + noise * np.eye(len(y))
    dK = np.concatenate([dK, noise * np.eye(len(y))[:, :, None]], axis=2)
    factor = cho_factor(K, lower=True)
    alpha = cho_solve(factor, y)
    W = np.outer(alpha, alpha) - cho_solve(factor, np.eye(len(y)))
    value = (
        -0.5 * y @ alpha
        - np.log(np.diag(factor[0])).sum()
        - 0.5 * len(y) * np.log(2 * np.pi)
    )
    return value, 0.5 * np.einsum("ab,abj->j", W, dK)


@pytest.mark.parametrize(
    "kernel",
    [
        ConstantKernel(1.5) * RBF(np.array([0.7, 1.3, 0.9])),
        RBF(0.8),
        ConstantKernel(1.0) * RBF(np.array([1.0, 0.5, 2.0])) + WhiteKernel(0.1),
    ],
    ids=lambda k: repr(k)[:40],
)
@pytest.mark.parametrize("n", [1, 5, 20, 21, 33, 64, 151])
def test_rbf_path_equals_dense_reference(kernel, n):
    # The RBF path (up to SMALL_N = 20 rows unblocked loops; beyond, LAPACK
    # through one compiled call: the Gram product in one triangle and the
    # triangular inverse by halves past 64 rows) against the dense textbook formulas to
    # rounding: both sides are backward-stable Cholesky computations of a
    # matrix with condition number below 1e4, so they agree to about 1e-12.
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, (n, 3)) + 10.0
    y = np.sin(X[:, 0]) - X[:, 1] + 0.1 * rng.normal(size=n)
    target = ExactMarginalTarget(KernelAdapter(kernel), X, y, None)
    assert target._rbf
    params = np.append(kernel.theta, np.log(0.05)) + 0.1
    value, grad = target.logp_and_grad(params)
    ref_value, ref_grad = _dense_reference(kernel, X, y, params)
    np.testing.assert_allclose(value, ref_value, rtol=1e-10)
    np.testing.assert_allclose(
        grad, ref_grad, rtol=1e-10, atol=1e-10 * np.abs(ref_grad).max()
    )


@pytest.mark.parametrize(
    "n, leaf, halves_max_n",
    [(1, 64, 1500), (2, 64, 1500), (63, 64, 1500), (64, 64, 1500), (65, 64, 1500),
     (130, 64, 1500), (257, 64, 1500), (37, 4, 1500), (100, 7, 1500), (65, 64, 64)],
)  # fmt: skip
def test_inverse_by_halves_equals_lapack(n, leaf, halves_max_n):
    # The triangular inverse by halves (or dpotri above halves_max_n) must
    # give K^-1 (lower triangle) to rounding at sizes that recurse unevenly
    # and deeply (entries far below the largest are compared in absolute
    # terms), and leave the strict upper triangle untouched.
    rng = np.random.default_rng(n)
    A = rng.normal(size=(n, n))
    K = A @ A.T / n + np.eye(n)
    L = np.asfortranarray(np.linalg.cholesky(K))
    L[np.triu_indices(n, 1)] = 7.0
    B = L.copy(order="F")
    routines = (DTRTRI, DTRMM, DLAUUM, DPOTRI)
    assert inverse_from_factor_f(B, leaf, halves_max_n, routines)
    expected = np.tril(np.linalg.inv(K))
    np.testing.assert_allclose(
        np.tril(B), expected, rtol=1e-11, atol=1e-13 * np.abs(expected).max()
    )
    assert np.all(B[np.triu_indices(n, 1)] == 7.0)


def test_inverse_by_halves_reports_a_singular_factor():
    L = np.asfortranarray(np.tril(np.ones((70, 70))))
    L[66, 66] = 0.0
    routines = (DTRTRI, DTRMM, DLAUUM, DPOTRI)
    assert not inverse_from_factor_f(L, 8, 1500, routines)


def test_rbf_target_pickled_without_its_index_maps_rebuilds_them():
    # A target pickled by an earlier version (no RBF index maps in its
    # state, as inside a saved SteinGPRegressor) evaluates as a new one.
    kernel = ConstantKernel(1.5) * RBF(np.array([0.7, 1.3]))
    X, y = _data()
    target = ExactMarginalTarget(KernelAdapter(kernel), X, y, None)
    params = np.append(kernel.theta, np.log(0.05))
    state = {
        k: v
        for k, v in target.__dict__.items()
        if k not in ("_phi_defaults", "_param_index")
    }
    old = ExactMarginalTarget.__new__(ExactMarginalTarget)
    old.__setstate__(state)
    restored = pickle.loads(pickle.dumps(old))
    value, grad = restored.logp_and_grad(params)
    ref_value, ref_grad = target.logp_and_grad(params)
    assert value == ref_value
    np.testing.assert_array_equal(grad, ref_grad)


def test_rbf_path_rejects_a_vector_of_another_length():
    X, y = _data()
    target = ExactMarginalTarget(KernelAdapter(RBF(1.0)), X, y, None)
    with pytest.raises(ValueError, match=r"params must have shape \(2,\)"):
        target.logp_and_grad(np.zeros(3))


@pytest.mark.parametrize("n", [10, 80])
def test_rbf_path_takes_strided_inputs_and_targets(n):
    # X and y as views with strides (a column of a Fortran array, a column
    # of a 2-D target) must give the values of contiguous copies: the
    # compiled path reads contiguous arrays only.
    x = np.linspace(0, 1, n)
    X_view = np.asfortranarray(np.c_[x, x**2])[:, :1]
    Y = np.c_[np.sin(6 * x), x]
    kernel = ConstantKernel(1.0) * RBF(0.3)
    params = np.array([0.1, np.log(0.2), np.log(0.01)])
    strided = ExactMarginalTarget(KernelAdapter(kernel), X_view, Y[:, 0], None)
    dense = ExactMarginalTarget(KernelAdapter(kernel), x[:, None], Y[:, 0].copy(), None)
    value, grad = strided.logp_and_grad(params)
    expected_value, expected_grad = dense.logp_and_grad(params)
    assert value == expected_value
    np.testing.assert_array_equal(grad, expected_grad)


@pytest.mark.parametrize("n", [10, 21, 60])
def test_rbf_path_names_a_nan_parameter(n):
    # A NaN hyperparameter must end in NotPSDError naming it, on the
    # unblocked path and through LAPACK (which passes a NaN through its
    # factorisation without an error) alike, not in a NaN log density.
    X = np.linspace(0, 1, n)[:, None]
    target = ExactMarginalTarget(
        KernelAdapter(ConstantKernel(1.0) * RBF(0.3)), X, np.sin(6 * X[:, 0]), None
    )
    with pytest.raises(NotPSDError, match="nan"):
        target.logp_and_grad(np.array([np.nan, np.log(0.3), np.log(0.01)]))


@pytest.mark.parametrize("n", [5, 20, 21, 64, 151])
def test_value_without_gradient_equals_the_value_with_it(n):
    # The value-only RBF path (one factor and one triangular solve from 21
    # rows) must give the log posterior of the value-and-gradient path to
    # rounding, and hand a matrix that needs jitter to the general path.
    rng = np.random.default_rng(n)
    X = rng.uniform(-2, 2, (n, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    kernel = ConstantKernel(1.0) * RBF(np.array([1.0, 0.7, 2.0]))
    prior = PriorSet(
        {
            "k1__constant_value": slice(0, 1),
            "k2__length_scale": slice(1, 4),
            "noise_variance": slice(4, 5),
        }
    )
    target = ExactMarginalTarget(KernelAdapter(kernel), X, y, prior)
    params = np.array([0.2, 0.1, -0.3, 0.5, np.log(0.05)])
    np.testing.assert_allclose(
        target.log_prob(params), target.logp_and_grad(params)[0], rtol=1e-12
    )
    duplicated = ExactMarginalTarget(
        KernelAdapter(kernel), np.repeat(X[:3], n, axis=0), np.zeros(3 * n), None,
        log_noise_variance=np.log(1e-300),
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = duplicated.log_prob(params[:4])
    assert np.isfinite(value) and duplicated.max_jitter > 0
