"""Shared test fixtures.

Statistical tests (``@pytest.mark.statistical``) take their seed from the
``stat_seed`` fixture, which reads ``SKGP_TEST_SEED`` (default 0). Their
thresholds come from the Monte Carlo error of what they measure, so they
must pass for any seed at the false-failure rate each test states; run
``SKGP_TEST_SEED=1 python -m pytest -m statistical`` (and under another
``OPENBLAS_CORETYPE``) to check that a threshold does not rest on one
trajectory.
"""

import os

import pytest
from threadpoolctl import threadpool_limits


def _seed_from_environment():
    raw = os.environ.get("SKGP_TEST_SEED", "0")
    try:
        return int(raw)
    except ValueError:
        raise pytest.UsageError(
            f"SKGP_TEST_SEED must be an integer; got {raw!r}."
        ) from None


@pytest.fixture
def stat_seed():
    """Seed offset for statistical tests, from ``SKGP_TEST_SEED``."""
    return _seed_from_environment()


@pytest.fixture(scope="session")
def shared_stat_seed():
    """``stat_seed`` for module-scoped fixtures whose fit several tests share."""
    return _seed_from_environment()


@pytest.fixture(scope="module")
def serial_blas():
    """One BLAS thread for a module whose matrices are all tiny.

    Waking OpenBLAS's pool for a 20 x 20 matrix costs more than the work,
    and on a busy machine its spinning threads slowed small fits tenfold.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        yield
