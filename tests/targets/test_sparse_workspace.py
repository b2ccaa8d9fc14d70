"""Scratch matrices reused between evaluations of the compiled sparse target.

:func:`~skgp_bayes.targets._sparse_compiled.workspace` hands each thread
one set of matrices for its last shape, which the compiled forward and
backward passes write into instead of allocating. Reuse must change no
result: the same arithmetic runs on the same values, so evaluations with
and without the buffers are bit-identical, whatever order the shapes come
in, and particles evaluated on two threads (each with its own set) equal
those evaluated on one.
"""

import threading

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from threadpoolctl import threadpool_limits

from skgp_bayes.inference.particles import ParticleEvaluator
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Gaussian
from skgp_bayes.targets import _sparse_compiled, _sparse_numba
from skgp_bayes.targets.sparse import SparseWhitenedTarget


def _target(m, likelihood, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, size=(400, 2))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=400)
    if isinstance(likelihood, Bernoulli):
        y = (y > 0).astype(float)
    adapter = KernelAdapter(ConstantKernel(1.3) * RBF([0.7, 0.9]))
    target = SparseWhitenedTarget(adapter, X, y, X[:m], likelihood)
    assert target._compiled
    return target


def _particles(target, count, seed=1):
    rng = np.random.default_rng(seed)
    hyper = np.append(target.adapter.kernel.theta, [np.log(0.1)] * target.learn_noise)
    return np.hstack(
        [
            hyper + 0.1 * rng.normal(size=(count, hyper.size)),
            0.5 * rng.normal(size=(count, target.n_params - hyper.size)),
        ]
    )


def test_one_thread_keeps_one_buffer_and_threads_do_not_share_it():
    m = _sparse_compiled.SCRATCH_MIN_INDUCING
    work = _sparse_compiled.workspace(m, 6)
    assert _sparse_compiled.workspace(m, 6) is work
    assert work.shape == (3 * m * m + 4 * m * 6,)
    other = []
    thread = threading.Thread(
        target=lambda: other.append(_sparse_compiled.workspace(m, 6))
    )
    thread.start()
    thread.join()
    assert other[0] is not work and not np.shares_memory(other[0], work)
    # Too small or too large to keep: no room, so fresh matrices each time.
    assert _sparse_compiled.workspace(m - 1, 6).size == 0
    side = int(np.sqrt(_sparse_compiled.SCRATCH_MAX_BYTES / 8 / 3)) + 1
    assert _sparse_compiled.workspace(side, 1).size == 0


def test_slots_tile_the_buffer_without_overlap():
    m, n = 3, 5
    work = np.zeros(_sparse_numba.work_size(m, n))
    for slot in range(7):
        _sparse_numba.scratch(work, slot, m, n)[...] += slot + 1
    # Every entry written exactly once, by its own slot, in slot order.
    sizes = [m * m if square else m * n for square in _sparse_numba._SQUARE_SLOTS]
    np.testing.assert_array_equal(work, np.repeat(np.arange(1, 8), sizes))
    # A buffer of another length gives fresh matrices of the right shape.
    assert _sparse_numba.scratch(np.zeros(4), 2, m, n).shape == (m, n)


@pytest.mark.parametrize(
    "likelihood", [Gaussian(0.1), Bernoulli()], ids=["gaussian", "logit"]
)
def test_reuse_changes_no_bit_whatever_the_order_of_shapes(likelihood, monkeypatch):
    # m = 210 keeps a buffer and takes LAPACK's factor, BLAS's solves and the
    # congruence; m = 20 the compiled loops and fresh matrices. Batches of
    # two sizes alternate, so the kept buffer is replaced between calls as
    # well as reused.
    targets = [_target(210, likelihood), _target(20, likelihood, seed=2)]
    calls = []
    for target in targets:
        for batch in (np.arange(0, 400, 3), np.arange(100, 356)):
            for params in _particles(target, 2):
                calls.append((target, params, batch))
    reused = [t.logp_and_grad(p, b) for t, p, b in calls + calls[::-1]]
    monkeypatch.setattr(_sparse_compiled, "workspace", lambda m, n: np.empty(0))
    fresh = [t.logp_and_grad(p, b) for t, p, b in calls + calls[::-1]]
    for (v1, g1), (v2, g2) in zip(reused, fresh, strict=True):
        assert v1 == v2
        np.testing.assert_array_equal(g1, g2)


def test_particles_on_two_threads_equal_those_on_one():
    target = _target(210, Gaussian(0.1))
    particles = _particles(target, 8)
    batch = np.arange(0, 400, 2)
    # Threaded particles run their BLAS calls on one thread each; a lone
    # evaluator may use several, which sums in another order (1e-14
    # relative), so it is held to one here.
    with threadpool_limits(limits=1, user_api="blas"):
        one = ParticleEvaluator(target, n_jobs=1).evaluate(particles, batch)
    two = ParticleEvaluator(target, n_jobs=2).evaluate(particles, batch)
    # The same sequence of calls per particle on either path: equal bits.
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
