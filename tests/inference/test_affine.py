"""The curvature preconditioner: point curvature where it describes the
density, the density's own profile where it does not."""

import numpy as np
import pytest
from scipy import integrate

from skgp_bayes.inference.affine import curvature_preconditioner


def _quartic_times_gaussian(rotation):
    """``-x_1^4`` along one rotated axis, a unit Gaussian along the other.

    The first axis has zero curvature at the origin but a standard
    deviation of sqrt(Gamma(3/4) / Gamma(1/4)) = 0.58.
    """

    def logp_and_grad(x):
        z = rotation.T @ x
        value = -(z[0] ** 4) - 0.5 * z[1] ** 2
        return value, rotation @ np.array([-4 * z[0] ** 3, -z[1]])

    return logp_and_grad


def _sd_of(log_density):
    mass = integrate.quad(lambda t: np.exp(log_density(t)), -20, 20)[0]
    second = integrate.quad(lambda t: t * t * np.exp(log_density(t)), -20, 20)[0]
    return np.sqrt(second / mass)


def _scale_along(transform, direction):
    """Standard deviation that ``x = T w``, ``w ~ N(0, I)``, has along a unit
    direction."""
    return float(np.sqrt(direction @ transform @ transform.T @ direction))


def test_gaussian_keeps_its_point_curvature():
    cov = np.array([[4.0, 1.9], [1.9, 1.0]])
    prec = np.linalg.inv(cov)
    transform = curvature_preconditioner(
        lambda x: (-0.5 * x @ prec @ x, -prec @ x), np.array([1.0, -2.0])
    )
    np.testing.assert_allclose(transform @ transform.T, cov, rtol=1e-6)


@pytest.mark.parametrize("angle", [0.0, 0.7])
def test_flat_topped_direction_takes_the_width_of_its_profile(angle):
    c, s = np.cos(angle), np.sin(angle)
    rotation = np.array([[c, -s], [s, c]])
    transform = curvature_preconditioner(_quartic_times_gaussian(rotation), np.zeros(2))
    true_sd = _sd_of(lambda t: -(t**4))
    flat = rotation[:, 0]
    # Within a factor of 1.5 of the true 0.58; the floor alone gave 10.
    assert true_sd / 1.5 < _scale_along(transform, flat) < 1.5 * true_sd
    np.testing.assert_allclose(_scale_along(transform, rotation[:, 1]), 1.0, rtol=1e-4)


def test_negative_curvature_between_two_modes():
    """At the saddle of a two-component mixture the curvature is negative;
    the profile sees the whole mixture's width, not the floor's."""

    def logp(x):
        return np.logaddexp(-0.5 * (x[0] - 1.5) ** 2, -0.5 * (x[0] + 1.5) ** 2)

    def logp_and_grad(x):
        a, b = -0.5 * (x[0] - 1.5) ** 2, -0.5 * (x[0] + 1.5) ** 2
        wa = 1.0 / (1.0 + np.exp(b - a))
        return logp(x), np.array([-(x[0] - 1.5) * wa - (x[0] + 1.5) * (1 - wa)])

    transform = curvature_preconditioner(logp_and_grad, np.zeros(1))
    true_sd = _sd_of(lambda t: logp(np.array([t])))  # about 1.8
    assert true_sd / 2 < float(transform[0, 0]) < 2 * true_sd


def test_hard_wall_bounds_the_width():
    """A uniform density on [-1, 1] (log density -inf outside) has no
    curvature at all; the wall sets the scale."""

    def logp_and_grad(x):
        if abs(x[0]) > 1.0:
            return -np.inf, np.full(1, np.nan)
        return 0.0, np.zeros(1)

    transform = curvature_preconditioner(logp_and_grad, np.zeros(1))
    assert 0.5 < float(transform[0, 0]) < 1.5


def test_a_direction_wider_than_the_profile_reaches_keeps_the_floor():
    """A standard deviation of 50: no drop of half a nat within 10, so the
    floor's standard deviation of 10 stands."""

    def logp_and_grad(x):
        return -0.5 * (x[0] / 50.0) ** 2, np.array([-x[0] / 2500.0])

    transform = curvature_preconditioner(logp_and_grad, np.zeros(1), min_precision=1e-2)
    np.testing.assert_allclose(float(transform[0, 0]), 10.0)
