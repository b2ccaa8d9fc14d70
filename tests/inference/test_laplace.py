"""Laplace covariances at a mode on a bound, the bound coordinates HMC
moves in there, and the MAP search's first step."""

import numpy as np
import pytest

from skgp_bayes.inference.laplace import find_map, laplace_covariance


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


def test_bound_coordinates_gradient_matches_finite_differences():
    # The chains' density in bound coordinates: x0 free, x1 piled on its
    # lower bound (u = log(x1 - lower)), x2 piled on its upper bound
    # (u = log(upper - x2)), x3 fixed; the Jacobian of each log distance
    # is added. Its gradient against central differences of its value.
    from skgp_bayes.variational_mcmc._bounds import bound_coordinates
    from skgp_bayes.variational_mcmc._sampling import GuardedTarget

    class Target:
        def logp_and_grad(self, x):
            value = (
                -0.5 * (x[0] - 0.3 * x[1]) ** 2
                - 30.0 * x[1]
                + 20.0 * x[2]
                - 0.5 * x[3] ** 2
                + 0.1 * x[0] * x[2]
            )
            grad = np.array(
                [
                    -(x[0] - 0.3 * x[1]) + 0.1 * x[2],
                    0.3 * (x[0] - 0.3 * x[1]) - 30.0,
                    20.0 + 0.1 * x[0],
                    -x[3],
                ]
            )
            return value, grad

    lower = np.array([-5.0, 0.0, -5.0, 0.5])
    upper = np.array([5.0, 5.0, 1.0, 0.5])
    guarded = GuardedTarget(Target(), lower, upper)
    coords = bound_coordinates(guarded, np.array([0.2, 0.0, 1.0, 0.5]))
    assert coords.fixed.tolist() == [False, False, False, True]
    assert coords.piled_coordinates().tolist() == [False, True, True]
    h = 1e-6
    for z in (coords.start, coords.start + np.array([0.4, -1.0, 0.7])):
        value, grad = coords(z)
        fd = [
            (coords(z + h * e)[0] - coords(z - h * e)[0]) / (2 * h)
            for e in np.eye(z.size)
        ]
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)
        # the Jacobian: log p(u) = log p(x(u)) + sum of the piled u
        x = coords.expand(z)
        assert value == pytest.approx(Target().logp_and_grad(x)[0] + z[1] + z[2])
        assert x[1] > lower[1] and x[2] < upper[2] and x[3] == 0.5


def test_a_shallow_pile_on_a_bound_is_still_a_wall_for_the_chains():
    # x1's log density falls away from its lower bound at 0.09 per unit,
    # below PILED_RATE: the Laplace approximation calls it no pile, but
    # chains that start on the bound hit it at once, so the sampler moves
    # it as its log distance from the bound, starting a unit away. A
    # coordinate whose gradient points away from its bound is left alone.
    from skgp_bayes.inference.laplace import PILED_RATE, piled_on_bounds
    from skgp_bayes.variational_mcmc._bounds import bound_coordinates
    from skgp_bayes.variational_mcmc._sampling import GuardedTarget

    class Shallow:
        def logp_and_grad(self, x):
            value = -0.5 * x[0] ** 2 - 0.09 * x[1] + 0.5 * x[2]
            return value, np.array([-x[0], -0.09, 0.5])

    lower, upper = np.zeros(3) - 5.0, np.full(3, 10.0)
    lower[1] = 0.0
    x0 = np.array([0.0, 0.0, -5.0])
    grad = Shallow().logp_and_grad(x0)[1]
    bounds = np.column_stack([lower, upper])
    assert not piled_on_bounds(x0, grad, bounds)[0].any()
    assert PILED_RATE > 0.09
    coords = bound_coordinates(GuardedTarget(Shallow(), lower, upper), x0)
    assert coords is not None
    assert coords.piled_coordinates().tolist() == [False, True, False]
    np.testing.assert_allclose(coords.expand(coords.start), [0.0, 1.0, -5.0])


class _RowSum:
    """``n`` rows' log density ``-sum_i (x - m_i)^2 / 2`` around ``m = 1``,
    with a record of the points the search evaluates."""

    def __init__(self, n):
        self.n = n
        self.points = []

    def logp_and_grad(self, x):
        self.points.append(x.copy())
        return -0.5 * self.n * np.sum((x - 1.0) ** 2), -self.n * (x - 1.0)


def test_the_map_search_steps_by_the_mean_gradient_not_into_a_corner():
    # Every coordinate bounded: L-BFGS-B's first trial is the whole
    # projected gradient step. Unscaled, 500 rows' gradient of 500 sends it
    # to the corner (10, 10); per row it is the step of 1 to the mode.
    bounds = np.array([[-10.0, 10.0], [-10.0, 10.0]])
    target = _RowSum(500)
    found = find_map(target, np.zeros(2), bounds)
    np.testing.assert_allclose(found.params, 1.0, atol=1e-6)
    assert np.max(np.abs(np.array(target.points))) <= 1.0 + 1e-6
    unscaled = _RowSum(500)
    find_map(unscaled, np.zeros(2), bounds, n=1)
    assert np.max(np.abs(np.array(unscaled.points))) == 10.0
