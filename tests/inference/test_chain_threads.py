"""Chains on threads: results in chain order, summed progress, failures and Ctrl-C."""

import signal
import threading
import time

import numpy as np
import pytest

from skgp_bayes.inference import run_hmc_chains
from skgp_bayes.inference._chain_threads import run_on_threads


def _until_stopped(c, progress):
    """A chain that runs until the shared flag stops it (or 30 s pass)."""
    deadline = time.perf_counter() + 30.0
    done = 0
    while time.perf_counter() < deadline:
        done += 1
        progress(done, None, {})
        time.sleep(0.001)
    return "ran out"


def test_results_in_chain_order_and_progress_summed():
    seen = []
    lock = threading.Lock()

    def progress(done, total, stats):
        with lock:
            seen.append(done)

    def chain(c, progress):
        for i in range(5):
            progress(i + 1, 5, {})
            time.sleep(0.001 * (3 - c))  # chains end out of order
        return c

    assert run_on_threads(chain, 3, 2, progress) == [0, 1, 2]
    # The shared reporter sees one count over all chains: never going back
    # (a drop reads as a new run) and ending at 3 chains x 5 transitions.
    assert seen == sorted(seen)
    assert seen[-1] == 15


def test_a_failing_chain_stops_the_others():
    def chain(c, progress):
        if c == 1:
            progress(1, None, {})
            raise ValueError("chain 1 failed")
        return _until_stopped(c, progress)

    start = time.perf_counter()
    with pytest.raises(ValueError, match="chain 1 failed"):
        run_on_threads(chain, 3, 3)
    # Without the stop flag the other chains would run for 30 s.
    assert time.perf_counter() - start < 10.0


def test_ctrl_c_stops_every_chain_before_it_reaches_the_caller():
    if not hasattr(signal, "setitimer"):
        pytest.skip("needs signal.setitimer")
    before = threading.active_count()
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    start = time.perf_counter()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            run_on_threads(_until_stopped, 4, 2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.perf_counter() - start < 10.0
    assert threading.active_count() == before  # no chain left running


def test_hmc_chains_on_threads_are_those_run_one_after_another():
    def logp(x):
        return -0.5 * x @ x - 0.1 * np.sum(x**4), -x - 0.4 * x**3

    kwargs = dict(n_warmup=60, n_samples=40, max_leapfrog=5)
    inits = np.ones((3, 2))
    serial = run_hmc_chains(logp, inits, random_state=3, n_jobs=1, **kwargs)
    counts = []
    threaded = run_hmc_chains(
        logp,
        inits,
        random_state=3,
        threads=2,
        progress=lambda done, total, stats: counts.append(done),
        **kwargs,
    )
    for s, t in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(s.samples, t.samples)
        np.testing.assert_array_equal(s.accept_prob, t.accept_prob)
    assert counts[-1] == 3 * 100
