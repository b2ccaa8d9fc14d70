"""Every ``n_jobs`` goes through joblib, so a Dask cluster can run it.

Chains of HMC and SGLD, and scikit-learn's model selection over the
estimators, run under ``joblib.parallel_config(backend="dask")`` on a local
cluster of two worker processes, and give results identical to ``n_jobs=1``
with the same ``random_state`` (the chains' seeds are spawned up front, so
where a chain runs cannot change it). The chains also run under an explicit
``backend="loky"``, joblib's own worker processes.
"""

import importlib
import os
import time
import warnings

import joblib
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_val_score

from skgp_bayes import (
    SGLDGPRegressor,
    SteinGPClassifier,
    SteinGPRegressor,
    VariationalMCMCClassifier,
    VariationalMCMCRegressor,
)
from skgp_bayes.exceptions import SamplerWarning

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=40,
    )
    with distributed.Client(cluster) as dask_client:
        yield dask_client
    cluster.close()


def _on_dask(client, fit):
    """Run ``fit()`` under the Dask backend; also return the tasks it sent."""
    with distributed.get_task_stream(client) as stream:
        with joblib.parallel_config(backend="dask"):
            result = fit()
    return result, len(stream.data)


def _data(n=40, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(X[:, 0]) + 0.1 * rng.randn(n)


@pytest.mark.slow
def test_hmc_chains_on_dask_equal_one_process(client):
    X, y = _data()
    labels = (y > 0).astype(int)
    params = dict(n_chains=2, n_warmup=60, n_samples=60, max_samples=60)

    def fit(n_jobs):
        model = VariationalMCMCClassifier(random_state=0, n_jobs=n_jobs, **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)  # short chains
            return model.fit(X, labels)

    local = fit(1)
    remote, n_tasks = _on_dask(client, lambda: fit(2))
    assert n_tasks >= 2  # the chains ran on the cluster
    np.testing.assert_array_equal(remote.draws_, local.draws_)
    np.testing.assert_array_equal(remote.predict_proba(X), local.predict_proba(X))


@pytest.mark.slow
def test_sgld_chains_on_dask_equal_one_process(client):
    X, y = _data()
    params = dict(n_chains=2, n_iter=150, n_predict_draws=20)

    def fit(n_jobs):
        model = SGLDGPRegressor(random_state=0, n_jobs=n_jobs, **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)
            return model.fit(X, y)

    local = fit(1)
    remote, n_tasks = _on_dask(client, lambda: fit(2))
    assert n_tasks >= 2
    np.testing.assert_array_equal(remote.chains_, local.chains_)
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_model_selection_on_dask_equals_one_process(client):
    X, y = _data(45, seed=1)
    search = GridSearchCV(
        SteinGPRegressor(n_particles=4, random_state=0),
        {"n_particles": [3, 4]},
        cv=3,
        n_jobs=1,
    )
    local = search.fit(X, y).cv_results_["mean_test_score"]
    remote, n_tasks = _on_dask(
        client, lambda: search.set_params(n_jobs=-1).fit(X, y).cv_results_
    )
    assert n_tasks >= 6
    np.testing.assert_array_equal(remote["mean_test_score"], local)
    scores, n_tasks = _on_dask(
        client,
        lambda: cross_val_score(
            SteinGPRegressor(n_particles=3, random_state=0), X, y, cv=3, n_jobs=-1
        ),
    )
    assert n_tasks >= 3
    np.testing.assert_array_equal(
        scores,
        cross_val_score(SteinGPRegressor(n_particles=3, random_state=0), X, y, cv=3),
    )


def _sparse_stein(n_jobs, n, inducing, batch):
    X, y = _data(n, seed=2)
    model = SteinGPRegressor(
        inducing_points=inducing,
        batch_size=batch,
        n_particles=4,
        max_iter=6,
        init="prior",  # the particles' moves are tested, not the MAP search
        random_state=0,
        n_jobs=n_jobs,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        return model.fit(X, y)


@pytest.mark.slow
def test_sparse_stein_particles_on_dask_equal_one_process(client, monkeypatch):
    # A small problem: the rule keeps the particles on threads (a block of
    # two particles is a few milliseconds, against five round trips of
    # 40-50 ms); only its three timing rounds of empty blocks reach the
    # cluster. Then the rule is forced, and every later round goes there.
    particles = importlib.import_module("skgp_bayes.inference.particles")
    local = _sparse_stein(1, 200, 10, 50)
    stays, n_tasks = _on_dask(client, lambda: _sparse_stein(2, 200, 10, 50))
    assert n_tasks == 3 * 2
    np.testing.assert_array_equal(stays.particles_, local.particles_)
    monkeypatch.setattr(particles, "_REMOTE_WORK_PER_ROUND_TRIP", 0.0)
    remote, n_tasks = _on_dask(client, lambda: _sparse_stein(2, 200, 10, 50))
    # Two evaluations run here to time the work; every later SVGD round is
    # one task per worker.
    assert n_tasks >= 3 * 2 + 2 * 5
    np.testing.assert_array_equal(remote.particles_, local.particles_)
    np.testing.assert_array_equal(remote.predict(_data()[0]), local.predict(_data()[0]))


class _SlowQuadratic:
    """A target whose every particle takes ``seconds``: work large enough."""

    n = 10

    def __init__(self, seconds):
        self.seconds = seconds

    def logp_and_grad(self, params, batch=None):
        time.sleep(self.seconds)
        return -0.5 * params @ params, -params


@pytest.mark.slow
def test_particles_whose_work_is_large_go_to_dask_by_the_rule(client):
    # 0.4 s a particle, two particles a block: 0.8 s, against five round
    # trips of 40-50 ms (0.25 s; the quickest of three rounds is taken, so
    # a load spike must last all three to reach 160 ms); load slows the
    # timed evaluation too, which only makes sending likelier.
    particles = importlib.import_module("skgp_bayes.inference.particles")
    evaluator = particles.ParticleEvaluator(_SlowQuadratic(0.4), n_jobs=2)
    points = np.arange(8.0).reshape(4, 2)

    def three_rounds():
        return [evaluator.evaluate(points) for _ in range(3)]

    rounds, n_tasks = _on_dask(client, three_rounds)
    assert n_tasks == 3 * 2 + 2  # the timing rounds, then the third round
    for values, grads in rounds:
        np.testing.assert_array_equal(grads, -points)
        np.testing.assert_array_equal(values, -0.5 * (points**2).sum(axis=1))


def _sparse_stein_classifier(n_jobs):
    X, y = _data(200, seed=3)
    model = SteinGPClassifier(
        inducing_points=10,
        batch_size=50,
        n_particles=4,
        max_iter=6,
        init="prior",
        random_state=0,
        n_jobs=n_jobs,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # six iterations
        return model.fit(X, y > 0)


@pytest.mark.slow
def test_sparse_stein_classifier_particles_on_dask_equal_one_process(
    client, monkeypatch
):
    # The sparse classifier's particles go through the same evaluator as the
    # regressor's. At this size a block of two particles is milliseconds,
    # below five round trips of 40-50 ms: only the three timing rounds reach
    # the cluster and the particles stay on threads. Forcing the rule then
    # sends every later SVGD round; neither changes a particle.
    particles = importlib.import_module("skgp_bayes.inference.particles")
    local = _sparse_stein_classifier(1)
    stays, n_tasks = _on_dask(client, lambda: _sparse_stein_classifier(2))
    assert n_tasks == 3 * 2
    np.testing.assert_array_equal(stays.particles_, local.particles_)
    monkeypatch.setattr(particles, "_REMOTE_WORK_PER_ROUND_TRIP", 0.0)
    remote, n_tasks = _on_dask(client, lambda: _sparse_stein_classifier(2))
    assert n_tasks >= 3 * 2 + 2 * 5
    np.testing.assert_array_equal(remote.particles_, local.particles_)
    X = _data(200, seed=3)[0]
    np.testing.assert_array_equal(remote.predict_proba(X), local.predict_proba(X))


def _chains(name, n_jobs):
    X, y = _data()
    if name == "SGLDGPRegressor":
        model = SGLDGPRegressor(n_chains=2, n_iter=150, n_predict_draws=20)
    else:
        estimator = {
            "VariationalMCMCRegressor": VariationalMCMCRegressor,
            "VariationalMCMCClassifier": VariationalMCMCClassifier,
        }[name]
        model = estimator(n_chains=2, n_warmup=60, n_samples=60, max_samples=60)
        if name == "VariationalMCMCClassifier":
            y = (y > 0).astype(int)
    model.set_params(random_state=0, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)  # short chains
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y), X


def _chain_draws(model):
    return model.chains_ if hasattr(model, "chains_") else model.draws_


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    ["SGLDGPRegressor", "VariationalMCMCRegressor", "VariationalMCMCClassifier"],
)
def test_chains_under_loky_equal_one_process(name):
    # joblib's loky backend chosen explicitly: the chains run in worker
    # processes (checked on the same configuration) and their draws and
    # predictions equal one process's, bit for bit.
    local, X = _chains(name, 1)
    with joblib.parallel_config(backend="loky"):
        pids = joblib.Parallel(n_jobs=2)(joblib.delayed(os.getpid)() for _ in range(4))
        remote, _ = _chains(name, 2)
    assert os.getpid() not in pids
    np.testing.assert_array_equal(_chain_draws(remote), _chain_draws(local))
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))


def test_target_is_broadcast_once_per_fit_under_a_key_of_its_own(client):
    # A key of its own for every fit: content-hashed keys let a later fit on
    # the same data scatter a key the scheduler was still releasing.
    from joblib.parallel import get_active_backend

    from skgp_bayes.inference.particles import _holding

    target = np.arange(5000.0)
    with joblib.parallel_config(backend="dask"):
        backend, _ = get_active_backend()
        first, second = _holding(backend, target), _holding(backend, target)
    futures = [held.data_futures[id(target)] for held in (first, second)]
    assert futures[0].key != futures[1].key
    holders = client.who_has(futures)
    assert all(len(holders[f.key]) == 2 for f in futures)  # on both workers
    np.testing.assert_array_equal(futures[0].result(), target)
