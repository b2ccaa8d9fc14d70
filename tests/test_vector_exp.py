"""The vectorisable exp and log1p against NumPy's, in ulps of the result.

NumPy's float64 ``exp`` and ``log1p`` are accurate to within 1 ulp, so an
error of ``e`` ulps against them bounds the error against the exact value
by ``e + 1``; the assertions are the bounds the modules document (1 ulp
for exp, 2 for log1p against NumPy), and the inputs cover the whole domain
on a log scale as well as uniformly where the kernels and the logit
expectation evaluate them.
"""

import math

import numpy as np
import pytest
from numba import njit

from skgp_bayes._vector_exp import vector_exp, vector_log1p


def _elementwise(scalar):
    """A compiled loop of ``scalar`` over an array, as the callers run it."""

    @njit(error_model="numpy")
    def apply(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = scalar(x[i])
        return out

    return apply


_exp_all = _elementwise(vector_exp)
_log1p_all = _elementwise(vector_log1p)


def _ulps(value, reference):
    return np.abs(value - reference) / np.spacing(np.abs(reference))


def _points(kind, rng, size=400_000):
    if kind == "near zero":
        return rng.uniform(-1.0, 1.0, size)
    if kind == "kernel range":
        return -rng.uniform(0.0, 50.0, size)
    if kind == "whole domain":
        return rng.uniform(-708.0, 709.0, size)
    return np.concatenate(  # tiny magnitudes, both signs
        [s * 10.0 ** rng.uniform(-300, 0, size // 2) for s in (-1.0, 1.0)]
    )


@pytest.mark.parametrize("kind", ["near zero", "kernel range", "whole domain", "tiny"])
def test_exp_within_one_ulp_of_numpy(kind):
    x = _points(kind, np.random.default_rng(0))
    assert _ulps(_exp_all(x), np.exp(x)).max() <= 1.0


def test_exp_limits_and_special_values():
    x = np.array([0.0, -708.0, -708.5, -np.inf, 709.0, 709.5, np.inf, np.nan])
    got = _exp_all(x)
    assert got[0] == 1.0
    assert _ulps(got[1:2], np.exp(x[1:2])).max() <= 1.0
    assert got[2] == 0.0 and got[3] == 0.0  # true value below 3.3e-308
    assert _ulps(got[4:5], np.exp(x[4:5])).max() <= 1.0
    assert got[5] == np.inf and got[6] == np.inf
    assert np.isnan(got[7])


@pytest.mark.parametrize("low, high", [(-16, 0), (0, 300)], ids=["small", "large"])
def test_log1p_within_two_ulps_of_numpy_on_a_log_scale(low, high):
    rng = np.random.default_rng(1)
    magnitude = 10.0 ** rng.uniform(low, high, 400_000)
    x = np.concatenate([magnitude, -np.minimum(magnitude, 1.0 - 1e-16)])
    assert _ulps(_log1p_all(x), np.log1p(x)).max() <= 2.0


def test_log1p_within_two_ulps_of_numpy_where_the_logit_expectation_uses_it():
    # log sigmoid takes log1p(exp(-|z|)), arguments in (0, 1].
    x = np.random.default_rng(2).uniform(0.0, 1.0, 400_000)
    assert _ulps(_log1p_all(x), np.log1p(x)).max() <= 2.0


def test_log1p_special_values():
    got = _log1p_all(np.array([-1.0, -1.5, np.nan, np.inf, 0.0, 5e-324]))
    assert got[0] == -np.inf
    assert np.isnan(got[1]) and np.isnan(got[2])
    assert got[3] == np.inf
    assert got[4] == 0.0 and got[5] == 5e-324


def test_scalar_calls_match_the_math_module():
    for x in (-3.7, -0.5, 0.0, 2.5):
        assert abs(vector_exp(x) - math.exp(x)) <= math.ulp(math.exp(x))
    for x in (0.1, 0.5, 3.0):
        assert abs(vector_log1p(x) - math.log1p(x)) <= 2 * math.ulp(math.log1p(x))
