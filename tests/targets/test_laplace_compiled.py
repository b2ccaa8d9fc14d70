"""The binary logit Laplace marginal: compiled against interpreted, and exact."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.exceptions import NotPSDError
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli
from skgp_bayes.targets._laplace_numba import FAILED, LAPLACE_ROUTINES, laplace_logit
from skgp_bayes.targets.laplace import BinaryLaplaceProblem, binary_laplace_draw
from skgp_bayes.targets.whitened import WhitenedLatentTarget

KERNELS = {
    "rbf-ard": lambda d: ConstantKernel(1.3) * RBF(np.linspace(0.6, 1.4, d)),
    "rbf-iso": lambda d: ConstantKernel(0.8) * RBF(1.1),
    "rbf+white": lambda d: ConstantKernel(0.9) * RBF(np.ones(d)) + WhiteKernel(0.05),
}


def _problem(kernel_name, n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(float)
    adapter = KernelAdapter(KERNELS[kernel_name](d))
    target = WhitenedLatentTarget(adapter, X, y, Bernoulli(), None)
    theta = adapter.kernel.theta + 0.3 * rng.normal(size=adapter.n_params)
    return target, y, theta


def _interpreted(target, y):
    problem = BinaryLaplaceProblem(target, y, Bernoulli())
    problem._plan = None
    return problem


@pytest.mark.parametrize("kernel_name", sorted(KERNELS))
@pytest.mark.parametrize("n", [3, 40, 150])
def test_compiled_equals_interpreted(kernel_name, n):
    target, y, theta = _problem(kernel_name, n=n, seed=n)
    compiled = BinaryLaplaceProblem(target, y, Bernoulli())
    assert compiled._plan is not None
    interpreted = _interpreted(target, y)
    # from a cold start, then warm starts along a short path
    for step in (0.0, 0.05, -0.3):
        point = theta + step
        value, grad = compiled.log_marginal_and_grad(point)
        expected_value, expected_grad = interpreted.log_marginal_and_grad(point)
        # The same Newton steps in another order of summation: the modes
        # agree to rounding, and the values and gradients with them.
        assert value == pytest.approx(expected_value, rel=1e-11)
        scale = np.max(np.abs(expected_grad))
        np.testing.assert_allclose(grad, expected_grad, rtol=0, atol=1e-9 * scale)
        np.testing.assert_allclose(compiled.a, interpreted.a, rtol=0, atol=1e-9)
        assert compiled.log_marginal(point) == pytest.approx(expected_value, rel=1e-11)


@pytest.mark.parametrize("kernel_name", sorted(KERNELS))
def test_compiled_gradient_against_finite_differences(kernel_name):
    target, y, theta = _problem(kernel_name, n=60, seed=7)
    problem = BinaryLaplaceProblem(target, y, Bernoulli())
    _, grad = problem.log_marginal_and_grad(theta)
    h = 1e-4
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        # Newton stops within 1e-9 (1 + max|f|) of the mode, and the log
        # determinant moves with f at first order: each value carries an
        # error of about 1e-9, so the quotient about 1e-5; truncation
        # (h^2 f''' / 6) is below 1e-7 here.
        up, down = problem.log_marginal(theta + e), problem.log_marginal(theta - e)
        fd = (up - down) / (2 * h)
        assert grad[j] == pytest.approx(fd, rel=1e-4, abs=3e-5)


def test_what_has_no_compiled_form_keeps_the_interpreted_path():
    X = np.linspace(-2, 2, 10)[:, None]
    y = (X[:, 0] > 0).astype(float)
    rbf = WhitenedLatentTarget(KernelAdapter(RBF()), X, y, Bernoulli(), None)
    assert BinaryLaplaceProblem(rbf, y, Bernoulli(link="probit"))._plan is None
    matern = WhitenedLatentTarget(KernelAdapter(Matern()), X, y, Bernoulli(), None)
    problem = BinaryLaplaceProblem(matern, y, Bernoulli())
    assert problem._plan is None
    value, grad = problem.log_marginal_and_grad(np.zeros(1))
    assert np.isfinite(value) and np.all(np.isfinite(grad))


def test_a_failed_factorisation_falls_back_and_raises_as_before():
    target, y, theta = _problem("rbf-ard", n=12)
    bad = theta.copy()
    bad[0] = np.nan
    problem = BinaryLaplaceProblem(target, y, Bernoulli())
    plan = problem._plan
    status, *_ = laplace_logit(bad, np.zeros(12), *plan, True, LAPLACE_ROUTINES)
    assert status == FAILED
    with pytest.raises(NotPSDError), np.errstate(invalid="ignore"):
        problem.log_marginal_and_grad(bad)


def _draw_parts(draw):
    return draw.nu, draw.nu_hat, draw.f, draw.L, draw.W


@pytest.mark.parametrize("kernel_name", sorted(KERNELS))
@pytest.mark.parametrize("n", [3, 40, 150])
def test_compiled_draw_equals_interpreted(kernel_name, n):
    target, y, theta = _problem(kernel_name, n=n, seed=n + 1)
    compiled = BinaryLaplaceProblem(target, y, Bernoulli())
    interpreted = _interpreted(target, y)
    noise = np.random.default_rng(n).standard_normal((2, n))
    mode_f = binary_laplace_draw(compiled, theta, noise).f
    starts = [{}, {"a0": np.full(n, 0.1)}, {"f0": 0.8 * mode_f}]
    for start in starts:
        got = binary_laplace_draw(compiled, theta + 0.1, noise, **start)
        want = binary_laplace_draw(interpreted, theta + 0.1, noise, **start)
        # the same Newton steps summed in another order: modes within
        # rounding of each other, and the draws (a linear map of them)
        for a, b in zip(_draw_parts(got), _draw_parts(want), strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * (1 + np.abs(b).max()))


def test_draw_from_either_start_reaches_the_same_mode():
    target, y, theta = _problem("rbf-ard", n=60, seed=3)
    problem = BinaryLaplaceProblem(target, y, Bernoulli())
    noise = np.random.default_rng(1).standard_normal((2, 60))
    cold = binary_laplace_draw(problem, theta, noise)
    near = binary_laplace_draw(problem, theta + 0.2, noise).f
    warm = binary_laplace_draw(problem, theta, noise, f0=near)
    # Newton stops within 1e-9 (1 + max|f|) of the mode from any start
    tol = 1e-8 * (1 + np.abs(cold.f).max())
    np.testing.assert_allclose(warm.f, cold.f, rtol=0, atol=tol)
    np.testing.assert_allclose(warm.nu, cold.nu, rtol=0, atol=10 * tol)


@pytest.mark.parametrize("compiled", [True, False])
def test_draw_has_the_laplace_covariance(compiled):
    # nu - nu_hat is linear in the noise (z1, z2): its map M must satisfy
    # M M' = (I + L'WL)^-1, the Laplace covariance of the whitened latents.
    n = 12
    target, y, theta = _problem("rbf+white", n=n, seed=5)
    problem = BinaryLaplaceProblem(target, y, Bernoulli())
    if not compiled:
        problem._plan = None
    zero = binary_laplace_draw(problem, theta, np.zeros((2, n)))
    columns = []
    for k in range(2 * n):
        unit = np.zeros(2 * n)
        unit[k] = 1.0
        drawn = binary_laplace_draw(problem, theta, unit.reshape(2, n), f0=zero.f)
        columns.append(drawn.nu - drawn.nu_hat)
    M = np.array(columns).T
    precision = np.eye(n) + zero.L.T @ (zero.W[:, None] * zero.L)
    np.testing.assert_allclose(M @ M.T @ precision, np.eye(n), atol=1e-8)


def test_a_failed_draw_falls_back_and_raises_as_before():
    target, y, theta = _problem("rbf-ard", n=12)
    bad = theta.copy()
    bad[0] = np.nan
    problem = BinaryLaplaceProblem(target, y, Bernoulli())
    noise = np.zeros((2, 12))
    assert problem.compiled_draw(bad, noise, np.zeros(12)) is None
    with pytest.raises(NotPSDError), np.errstate(invalid="ignore"):
        binary_laplace_draw(problem, bad, noise)
