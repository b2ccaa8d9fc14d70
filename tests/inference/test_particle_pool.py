"""Particles on the evaluator's own threads: when they go there by default,
and that where they run never changes a result."""

import pickle
import threading
import time
import warnings

import numba
import numpy as np
import pytest
from _thread_spies import threads_asked
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgp_bayes import SteinGPClassifier, SteinGPRegressor
from skgp_bayes._stein_models import exact as exact_model
from skgp_bayes._stein_models import latent as latent_model
from skgp_bayes.exceptions import NotPSDError
from skgp_bayes.inference import particles as particles_module
from skgp_bayes.inference._chain_threads import mapped_on_threads
from skgp_bayes.inference.laplace import laplace_modes
from skgp_bayes.inference.particles import ParticleEvaluator


class _Sleepy:
    """A target whose evaluation waits outside the GIL, as compiled code does."""

    n = 10

    def __init__(self, seconds, compiled=True):
        self.seconds = seconds
        self.compiled = compiled
        self.threads = set()

    def logp_and_grad(self, params, batch=None):
        self.threads.add(threading.get_ident())
        if self.seconds:
            time.sleep(self.seconds)
        if params[0] > 100:
            raise NotPSDError("not positive definite")
        return -0.5 * float(params @ params), -params


def _threads_are_safe():
    # and more than one core for Numba's threads, which the default takes
    two = ParticleEvaluator(None, n_jobs=2)._threads(4) == 2
    return two and numba.get_num_threads() > 1


def _particles():
    return np.random.default_rng(0).normal(size=(6, 3))


def test_auto_threads_chosen_from_the_first_particles():
    if not _threads_are_safe():
        pytest.skip("Numba's threading layer is not thread-safe here.")
    target = _Sleepy(2e-3)
    evaluator = ParticleEvaluator(target, auto_threads=True)
    particles = _particles()
    first = evaluator(particles)
    # two particles timed here, the other four on threads
    assert len(target.threads) > 1 and evaluator._threads(6) > 1
    second = evaluator(particles)
    evaluator.close()
    serial = ParticleEvaluator(_Sleepy(0.0))(particles)
    for a, b, c in zip(first, second, serial, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)


def test_too_few_particles_to_time_stay_undecided():
    evaluator = ParticleEvaluator(_Sleepy(2e-3), auto_threads=True)
    evaluator(_particles()[:2])
    assert evaluator._auto_threads is None and evaluator._pool is None


@pytest.mark.parametrize(
    "target, options",
    [
        (_Sleepy(2e-3, compiled=False), {"auto_threads": True}),  # holds the GIL
        (_Sleepy(0.0), {"auto_threads": True}),  # too quick to hand over
        (_Sleepy(2e-3), {"auto_threads": True, "n_jobs": 1}),  # the user said one
        (_Sleepy(2e-3), {}),  # not asked for
    ],
)
def test_particles_stay_on_this_thread(target, options, monkeypatch):
    # A threshold far above the quick target's microseconds, so that a busy
    # machine cannot push it over.
    monkeypatch.setattr(particles_module, "THREADED_PARTICLE_SECONDS", 1e-3)
    evaluator = ParticleEvaluator(target, **options)
    for _ in range(3):
        evaluator(_particles())
    assert evaluator._pool is None
    assert target.threads == {threading.get_ident()}


def test_pool_is_closed_and_left_out_of_pickles():
    if not _threads_are_safe():
        pytest.skip("Numba's threading layer is not thread-safe here.")
    evaluator = ParticleEvaluator(_Sleepy(1e-3), n_jobs=2)
    evaluator(_particles())
    assert evaluator._pool is not None
    copy = pickle.loads(pickle.dumps(evaluator))
    assert copy._pool is None
    values, _ = copy(_particles())  # starts threads of its own
    assert np.all(np.isfinite(values))
    copy.close()
    evaluator.close()
    assert evaluator._pool is None


def test_a_failed_particle_on_a_thread_is_rejected_not_raised():
    if not _threads_are_safe():
        pytest.skip("Numba's threading layer is not thread-safe here.")
    evaluator = ParticleEvaluator(_Sleepy(1e-3), n_jobs=2)
    particles = _particles()
    particles[4, 0] = 1e3
    values, grads = evaluator(particles)
    evaluator.close()
    assert values[4] == -np.inf and np.all(np.isnan(grads[4]))
    assert np.all(np.isfinite(np.delete(values, 4)))
    assert isinstance(evaluator.last_error, NotPSDError)


@pytest.fixture
def threads_always(monkeypatch):
    # The test problems are small; a zero threshold puts their particles on
    # threads, as a few hundred rows would.
    if not _threads_are_safe():
        pytest.skip("Numba's threading layer is not thread-safe here.")
    monkeypatch.setattr(particles_module, "THREADED_PARTICLE_SECONDS", 0.0)
    used = []
    original = ParticleEvaluator._threads_pool

    def spy(self, n_threads):
        used.append(n_threads)
        return original(self, n_threads)

    monkeypatch.setattr(ParticleEvaluator, "_threads_pool", spy)
    return used


@pytest.mark.parametrize("one_vs_rest", [False, True])
def test_default_threads_give_the_one_thread_classifier(
    threads_always, monkeypatch, one_vs_rest
):
    draws_on_threads = threads_asked(monkeypatch, latent_model)
    if one_vs_rest:
        # three binary problems per particle instead of the dense softmax
        # step, as for n * classes above _DENSE_NEWTON_MAX
        monkeypatch.setattr(latent_model, "_DENSE_NEWTON_MAX", 0)
        X, y = make_classification(
            90, 4, n_informative=3, n_redundant=0, n_classes=3, random_state=0
        )
    else:
        X, y = make_classification(80, 4, random_state=0)
    options = {"kernel": ConstantKernel() * RBF(1.0), "random_state": 0, "max_iter": 8}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a short run
        one = SteinGPClassifier(n_jobs=1, **options).fit(X, y)
        assert not threads_always and draws_on_threads == [1]
        default = SteinGPClassifier(**options).fit(X, y)
    # the particles' evaluations and the Laplace draws both on threads
    assert threads_always and draws_on_threads[1] > 1
    assert np.array_equal(one.particles_, default.particles_)
    assert np.array_equal(one.predict_proba(X), default.predict_proba(X))


def test_default_threads_give_the_one_thread_regressor(threads_always, monkeypatch):
    # the MAP searches from the restarts go on threads by the same rule
    searches = threads_asked(monkeypatch, exact_model)
    X, y = make_regression(60, 3, noise=5.0, random_state=0)
    options = {"random_state": 0, "max_iter": 8, "n_restarts": 3}
    one = SteinGPRegressor(n_jobs=1, **options).fit(X, y)
    assert not threads_always and searches == [1]
    default = SteinGPRegressor(**options).fit(X, y)
    assert threads_always and searches[1] > 1
    assert np.array_equal(one.particles_, default.particles_)
    assert np.array_equal(one.map_params_, default.map_params_)
    assert np.array_equal(one.predict(X), default.predict(X))


class _TwoWells:
    """Two modes of unequal mass on the line."""

    def logp_and_grad(self, x):
        a, b = np.exp(-2.0 * (x[0] + 1.5) ** 2), 0.5 * np.exp(-2.0 * (x[0] - 2.0) ** 2)
        dens = a + b + 1e-300
        grad = (-4.0 * (x[0] + 1.5) * a - 4.0 * (x[0] - 2.0) * b) / dens
        return float(np.log(dens)), np.array([grad])


def test_mode_search_on_threads_equals_one_thread():
    starts = np.array([[-3.0], [-1.0], [1.5], [3.0]])
    bounds = np.array([[-6.0, 6.0]])
    serial = laplace_modes(_TwoWells(), starts, bounds)
    with mapped_on_threads(2) as map_fn:
        threaded = laplace_modes(_TwoWells(), starts, bounds, map_fn=map_fn)
    assert len(serial) == 2
    for (m1, c1, l1), (m2, c2, l2) in zip(serial, threaded, strict=True):
        assert np.array_equal(m1, m2) and np.array_equal(c1, c2) and l1 == l2


def test_searches_without_a_compiled_target_stay_on_one_thread(
    threads_always, monkeypatch
):
    from sklearn.gaussian_process.kernels import Matern

    seen = threads_asked(monkeypatch, exact_model)
    X, y = make_regression(40, 2, noise=5.0, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a short run
        SteinGPRegressor(
            ConstantKernel() * Matern(1.0), random_state=0, max_iter=3, n_restarts=2
        ).fit(X, y)
    # the interpreted target holds the interpreter lock: no threads for it
    assert seen == [1] and not threads_always
