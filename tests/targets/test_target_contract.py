"""The target contract: every target's value and gradient agree.

One test over every target of the package (the small problems of
``tests/_targets.py``): the value is finite, the gradient has the shape of
the parameters, and it matches central finite differences of the value. The
stochastic targets, whose gradients are unbiased estimates, are held to the
exact gradient they estimate within their Monte Carlo error. A public class
added to ``skgp_bayes.targets`` without an entry there fails
``test_every_target_class_is_in_the_contract``.
"""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
from _targets import EXACT, NOT_TARGETS, STOCHASTIC

import skgp_bayes.targets

# Central differences with step h err by about h^2 / 6 |f'''| (truncation)
# plus eps |f| / h (rounding of the two values): with h = 1e-5 on
# parameters of order one and values of order 10, both are near 1e-10.
# The tolerance, 1e-6 (1 + |f|) per entry, keeps four orders of magnitude
# above them (room for the rounding of Cholesky factors with jitter, and for
# the Newton tolerance of the Laplace modes), while a gradient missing a
# term, or a term of the wrong sign, is off by far more.
STEP = 1e-5
RTOL_VALUE = 1e-6

# Draws of each stochastic gradient. The mean of R draws has standard error
# sd / sqrt(R), estimated from the draws; with R = 400 the estimate is
# within a few percent of itself and the normal approximation holds: the
# draws are independent (every call draws fresh probes) and light-tailed
# (Rademacher probes with exact solves, or ULISSE with its continuation
# capped; see tests/_targets.py).
N_DRAWS = 400
# Standard errors allowed per entry: a two-sided normal tail of 5.7e-7, so
# below 2e-6 over the three entries of a target.
K_SE = 5.0


def _central_differences(evaluate, params):
    fd = np.empty(params.size)
    for j in range(params.size):
        h = np.zeros(params.size)
        h[j] = STEP
        fd[j] = (evaluate(params + h)[0] - evaluate(params - h)[0]) / (2 * STEP)
    return fd


@pytest.mark.parametrize("name", sorted(EXACT))
def test_gradient_matches_finite_differences(name):
    evaluate, params = EXACT[name]()
    value, grad = evaluate(params.copy())
    assert np.isfinite(value)
    assert np.shape(grad) == params.shape
    fd = _central_differences(evaluate, params)
    np.testing.assert_allclose(grad, fd, rtol=0, atol=RTOL_VALUE * (1 + abs(value)))


@pytest.mark.statistical
@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_stochastic_gradient_is_unbiased(name, stat_seed):
    draw, exact, params = STOCHASTIC[name](stat_seed)
    draws = np.array([draw(params.copy()) for _ in range(N_DRAWS)])
    assert draws.shape == (N_DRAWS, params.size)
    assert np.all(np.isfinite(draws))
    se = draws.std(axis=0, ddof=1) / np.sqrt(N_DRAWS)
    # Every entry carries noise (probes or stopping draws): a zero spread
    # would mean the draws are not draws, and a zero tolerance.
    assert np.all(se > 0)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - exact(params)), K_SE * se)


def _public_target_classes():
    package = skgp_bayes.targets
    names = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and not name.startswith("_"):
                names.add(name)
    return names


def test_every_target_class_is_in_the_contract():
    """A new target cannot skip the contract silently."""
    covered = {key.split("-")[0] for key in (*EXACT, *STOCHASTIC)} | set(NOT_TARGETS)
    missing = _public_target_classes() - covered
    assert not missing, f"add these to tests/_targets.py: {sorted(missing)}"
    # and the tables name no class that has gone
    assert not covered - _public_target_classes()
