"""The binary logit Laplace marginal: compiled against interpreted, and exact."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from skgp_bayes.exceptions import NotPSDError
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli
from skgp_bayes.targets._laplace_numba import FAILED, LAPLACE_ROUTINES, laplace_logit
from skgp_bayes.targets.laplace import BinaryLaplaceProblem
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
