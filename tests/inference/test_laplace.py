"""Laplace covariances at a mode on a bound."""

import numpy as np

from skgp_bayes.inference.laplace import laplace_covariance


class _PiledRidge:
    """``x1 >= 0`` piled on its bound at rate ``r``; ``x0`` follows ``a x1``.

    ``log p = -(x0 - a x1)^2 / (2 s^2) - r x1``: given ``x1 = 0``, ``x0 ~
    N(0, s^2)``, and ``x1``'s marginal is an exponential of rate ``r``.
    """

    def __init__(self, a=3.0, s=0.5, r=40.0):
        self.a, self.s, self.r = a, s, r

    def logp_and_grad(self, x):
        resid = x[0] - self.a * x[1]
        value = -0.5 * resid**2 / self.s**2 - self.r * x[1]
        grad = np.array([-resid / self.s**2, self.a * resid / self.s**2 - self.r])
        return value, grad


def test_a_coordinate_piled_on_its_bound_gets_its_piles_spread_and_no_covariance():
    target = _PiledRidge()
    bounds = np.array([[-10.0, 10.0], [0.0, 10.0]])
    cov = laplace_covariance(target, np.zeros(2), bounds)
    # the exponential pile's variance 1 / r^2, no covariance, and x0's
    # variance given x1 on its bound
    np.testing.assert_allclose(cov, np.diag([0.5**2, 1 / 40.0**2]), rtol=1e-6)


def test_a_mode_inside_the_box_keeps_its_curvature():
    # The same density with x1 free to go below 0 and a Gaussian term that
    # puts the mode inside: nothing is piled, the inverse Hessian is kept.
    class Inside(_PiledRidge):
        def logp_and_grad(self, x):
            value, grad = super().logp_and_grad(x)
            return value - 0.5 * (x[1] + 1.0) ** 2, grad - np.array([0.0, x[1] + 1.0])

    target = Inside()
    bounds = np.array([[-1000.0, 1000.0], [-1000.0, 1000.0]])
    prec = np.array([[1 / 0.25, -3.0 / 0.25], [-3.0 / 0.25, 9.0 / 0.25 + 1.0]])
    mode = np.linalg.solve(prec, np.array([0.0, -40.0 - 1.0]))
    cov = laplace_covariance(target, mode, bounds, max_std=100.0)
    np.testing.assert_allclose(cov, np.linalg.inv(prec), rtol=1e-5)
