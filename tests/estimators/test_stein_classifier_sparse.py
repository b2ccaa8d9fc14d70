"""The sparse (inducing-point) mode of SteinGPClassifier and its partial_fit."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.metrics import log_loss

from skgp_bayes import SteinGPClassifier
from skgp_bayes.inference.particles import ParticleEvaluator
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Bernoulli, Softmax
from skgp_bayes.predictive.latent import SparseLatentDraws
from skgp_bayes.priors import Gamma, PriorSet
from skgp_bayes.targets.sparse import SparseWhitenedTarget

SPARSE = dict(inducing_points=12, n_particles=4, max_iter=20, random_state=0)


@pytest.fixture(autouse=True)
def _quiet_convergence():
    # Short test fits stop at max_iter by design.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _moons(seed):
    X, y = make_moons(600, noise=0.2, random_state=seed)
    X_test, y_test = make_moons(400, noise=0.2, random_state=1 + seed)
    return X, y, X_test, y_test


@pytest.fixture(scope="module")
def moons():
    return _moons(0)


def _small(seed):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.randn(40) > 0).astype(int)
    return X, y, 1.5 * rng.normal(size=(30, 2))


@pytest.fixture(scope="module")
def small():
    return _small(0)


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.RandomState(1)
    centres = np.array([[0.0, 2.0], [-2.0, -1.0], [2.0, -1.0]])
    y = np.repeat(np.arange(3), 40)
    X = centres[y] + 0.8 * rng.randn(120, 2)
    labels = np.array(["a", "b", "c"])[y]
    return X, labels


@pytest.fixture(scope="module")
def seeded_moons(shared_stat_seed):
    # the statistical tests' data: fresh for every SKGP_TEST_SEED
    return _moons(shared_stat_seed)


@pytest.fixture(scope="module")
def fitted_moons(seeded_moons, shared_stat_seed):
    X, y, _, _ = seeded_moons
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SteinGPClassifier(
            inducing_points=20,
            batch_size=64,
            n_particles=8,
            max_iter=100,
            random_state=shared_stat_seed,
        ).fit(X, y)


def _target(likelihood, y, n_total=None):
    rng = np.random.RandomState(3)
    X = rng.normal(size=(60, 2))
    adapter = KernelAdapter(ConstantKernel(1.5) * RBF(0.8))
    prior = PriorSet(dict(adapter.hyperparameter_slices), None)
    return SparseWhitenedTarget(
        adapter, X, y, X[:7], likelihood, prior, n_total=n_total
    ), rng


# ------------------------------------------------------------ minibatches
@pytest.mark.parametrize(
    "likelihood, n_total",
    [
        (Bernoulli("logit"), None),
        (Bernoulli("probit"), 150),
        (Softmax(n_classes=3, random_state=0), None),
    ],
    ids=["logit", "probit-stream", "softmax"],
)
def test_minibatch_gradient_is_unbiased_over_a_pass(likelihood, n_total):
    # One pass of the evaluator's batches is a partition of the data, and
    # the data term is a sum over points: the batch estimates (each scaled by
    # n_total / |B|) average to the full-data value and gradient exactly, up
    # to the rounding of a different summation order.
    n_latent = getattr(likelihood, "n_latent", 1)
    labels = np.arange(60) % 3 if n_latent > 1 else (np.arange(60) % 2) * 1.0
    target, rng = _target(likelihood, labels, n_total)
    particles = 0.5 * rng.normal(size=(3, target.n_params))
    evaluator = ParticleEvaluator(target, batch_size=15, rng=np.random.default_rng(0))
    full_values, full_grads = evaluator.evaluate(particles, None)
    seen, values, grads = [], [], []
    for _ in range(4):
        seen.append(evaluator.next_batch())
        v, g = evaluator.evaluate(particles, seen[-1])
        values.append(v)
        grads.append(g)
    assert np.array_equal(np.sort(np.concatenate(seen)), np.arange(60))
    scale = np.max(np.abs(full_grads))
    np.testing.assert_allclose(np.mean(grads, axis=0), full_grads, atol=1e-12 * scale)
    np.testing.assert_allclose(np.mean(values, axis=0), full_values, rtol=1e-12)
    # and a single batch is a genuinely different (noisy) estimate
    assert np.max(np.abs(grads[0] - full_grads)) > 1e-3 * scale


# ------------------------------------------------------- agreement, Z = X
def test_same_particles_give_the_exact_predictions(small):
    # With Z = X the sparse latent predictive of a particle (theta, v) is
    # K(x, X) R^-T v with variance k(x, x) - |R^-1 K(X, x)|^2, R R' = K +
    # delta I: the exact model's formula with nu = v, term by term. Only
    # rounding separates them.
    X, y, X_query = small
    exact = SteinGPClassifier(n_particles=4, max_iter=10, random_state=0).fit(X, y)
    sparse = SteinGPClassifier(
        inducing_points=X, n_particles=4, max_iter=0, random_state=0
    ).fit(X, y)
    d = sparse._draws
    h = exact._target.n_theta
    sparse._draws = SparseLatentDraws(
        d.adapter,
        d.Z,
        d.jitter,
        exact.particles_[:, :h],
        exact.particles_[:, h:].reshape(4, X.shape[0], 1),
        d.likelihood,
    )
    np.testing.assert_allclose(
        sparse.predict_proba(X_query), exact.predict_proba(X_query), atol=1e-10
    )
    for a, b in zip(
        sparse.latent_mean_and_variance(X_query),
        exact.latent_mean_and_variance(X_query),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, atol=1e-9)


def test_sparse_target_at_z_equal_x_is_the_exact_target(small):
    # At Z = X the sparse target differs from the exact whitened one only by
    # the jitter delta = 1e-6 * mean(diag K): its latent mean is L nu -
    # delta L^-T nu, a shift of at most sqrt(delta) |nu| ~ 1e-3 |nu| as
    # |L^-T| <= delta^-1/2, and its conditional variance is of order delta.
    # Value and gradient therefore agree to about 1e-3 relative (measured:
    # 1e-4 and 4e-3); a wrong model (say mu = A v) misses by O(1).
    X, y, _ = small
    exact = SteinGPClassifier(n_particles=3, max_iter=5, random_state=0).fit(X, y)
    t = exact._target
    X_model = exact.input_scaling_.transform(X)  # the units the target works in
    sparse = SparseWhitenedTarget(
        t.adapter, X_model, y.astype(float), X_model, t.likelihood, t.prior_set
    )
    for params in exact.particles_:
        a, grad_a = sparse.logp_and_grad(params)
        b, grad_b = t.logp_and_grad(params)
        assert a == pytest.approx(b, rel=1e-3)
        assert np.max(np.abs(grad_a - grad_b)) < 1e-2 * np.max(np.abs(grad_b))


@pytest.mark.statistical
def test_fit_with_z_equal_x_agrees_with_the_exact_fit(stat_seed):
    # Both fits approximate the same posterior with 10 SVGD particles from
    # different starts (Laplace vs SVGP) and preconditioners, so they differ
    # by the particle approximation's error in 42 dimensions, which 30
    # particles do not shrink (mean gap 0.042 with 10 or 30, seeds
    # 1000-1299). Over 1,000 seeds (1000-1999: data, queries and starts) the
    # gap between the sparse and the exact fit's probabilities at 30 points
    # averaged over the points was 0.042 (sd 0.009, largest 0.091), its
    # largest over the points 0.117 (sd 0.032, largest 0.267). Exponential
    # tails fitted to the top tenth of each put 0.12 and 0.35 at a false
    # failure of about 1e-5 each. A predictor that knows nothing (0.5
    # everywhere) is 0.19-0.38 from the exact fit on average over the points
    # (mean 0.28) and 0.35 or more at its largest (mean 0.45). The figures
    # are for the model stated here: raw inputs, an isotropic RBF starting
    # at sqrt(d) and a Gamma(1, 2) prior on its length scale.
    X, y, X_query = _small(stat_seed)
    kw = dict(
        kernel=ConstantKernel(1.0) * RBF(np.sqrt(2.0)),
        priors={"k2__length_scale": Gamma(1.0, 2.0)},
        normalize_X=False,
        n_particles=10,
        max_iter=100,
        random_state=stat_seed,
    )
    exact = SteinGPClassifier(**kw).fit(X, y).predict_proba(X_query)[:, 1]
    sparse = (
        SteinGPClassifier(inducing_points=X, **kw).fit(X, y).predict_proba(X_query)
    )[:, 1]
    gap = np.abs(sparse - exact)
    assert gap.mean() < 0.12, gap.mean()
    assert gap.max() < 0.35, gap.max()


# ---------------------------------------------------------------- quality
@pytest.mark.statistical
def test_sparse_fit_classifies_moons(fitted_moons, seeded_moons):
    _, _, X_test, y_test = seeded_moons
    proba = fitted_moons.predict_proba(X_test)
    # The Bayes error of noise-0.2 moons is about 3%, so the accuracy on 400
    # test points has binomial sd 0.0085 even for the Bayes rule. Over seeds
    # 0-5 (data and fit): accuracy 0.958-0.985 (mean 0.967, sd 0.0095), log
    # loss 0.061-0.103 (mean 0.092, sd 0.016). 0.92 and 0.18 are 5 and 5.5
    # sds from the means (below 3e-7 for Gaussian spread); a constant guess
    # scores 0.5 and 0.69.
    assert fitted_moons.score(X_test, y_test) > 0.92
    assert log_loss(y_test, proba) < 0.18
    # amplitude, two (ARD) length scales, then the whitened inducing values
    assert fitted_moons.particles_.shape == (8, 3 + 20)
    assert fitted_moons.param_names_[3:5] == ["v[0]", "v[1]"]
    assert fitted_moons.inducing_points_.shape == (20, 2)
    assert fitted_moons.n_samples_seen_ == 600
    assert fitted_moons.n_iter_ == 100
    assert len(fitted_moons.history_["log_density"]) == 100
    assert fitted_moons.diagnostics_["batch_size"] == 64


@pytest.mark.statistical
def test_partial_fit_reaches_the_quality_of_fit(
    fitted_moons, seeded_moons, shared_stat_seed
):
    # 3 shuffled chunks of 200, each given the fit's 100 iterations: the
    # posterior sharpens as the chunks arrive (the first chunk's puts the
    # length scales near 2.5, all 600 points' near 0.6), and the particles
    # must follow it. With a third of the iterations a chunk, 6 of 249 seeds
    # (0-247, 1000) ended 0.055 or more above the fit's test log loss, one
    # 0.21 with every length scale still near 2.5 (more passes over the
    # chunks did bring it to 0.6). With 100 a chunk, over 297 seeds (0-39,
    # 300-555, 1000; data, chunks and starts) the stream's excess log loss
    # had mean 0.002, sd 0.011 and maximum 0.034 (2.9 sds out; the long
    # tail is the other side, streams that beat the fit), and its accuracy
    # drop mean 0.002, sd 0.006 and maximum 0.018 (excess kurtosis 0.6).
    # The bounds, 0.06 and 0.03, are 5.3 and 4.9 sds beyond the means:
    # normal tails of 6e-8 and 5e-7. One-sided: a stream that ends better
    # than the fit passes.
    X, y, X_test, y_test = seeded_moons
    clf = clone(fitted_moons)
    order = np.random.RandomState(shared_stat_seed).permutation(600)
    for chunk in np.array_split(order, 3):
        clf.partial_fit(X[chunk], y[chunk], classes=[0, 1])
    assert clf.n_samples_seen_ == 600
    assert clf.n_iter_ == 300
    loss_fit = log_loss(y_test, fitted_moons.predict_proba(X_test))
    loss_partial = log_loss(y_test, clf.predict_proba(X_test))
    assert loss_partial - loss_fit < 0.06
    assert fitted_moons.score(X_test, y_test) - clf.score(X_test, y_test) < 0.03


def test_pickling_between_chunks_gives_identical_results(moons):
    X, y, X_test, _ = moons
    chunks = np.array_split(np.arange(300), 3)
    clf = SteinGPClassifier(batch_size=32, **SPARSE)
    clf.partial_fit(X[chunks[0]], y[chunks[0]], classes=[0, 1])
    copy = pickle.loads(pickle.dumps(clf))
    for model in (clf, copy):
        for chunk in chunks[1:]:
            model.partial_fit(X[chunk], y[chunk])
    assert np.array_equal(clf.particles_, copy.particles_)
    assert np.array_equal(clf.predict_proba(X_test), copy.predict_proba(X_test))
    assert clf.n_samples_seen_ == copy.n_samples_seen_ == 300


def test_random_state_gives_bit_identical_fits(moons):
    X, y, X_test, _ = moons
    first = SteinGPClassifier(batch_size=32, **SPARSE).fit(X[:200], y[:200])
    second = SteinGPClassifier(batch_size=32, **SPARSE).fit(X[:200], y[:200])
    assert np.array_equal(first.particles_, second.particles_)
    assert np.array_equal(first.inducing_points_, second.inducing_points_)
    assert np.array_equal(first.predict_proba(X_test), second.predict_proba(X_test))
    third = SteinGPClassifier(batch_size=32, **{**SPARSE, "random_state": 1})
    assert not np.array_equal(third.fit(X[:200], y[:200]).particles_, first.particles_)


def test_n_jobs_gives_the_same_result(moons):
    X, y, X_test, _ = moons
    one = SteinGPClassifier(batch_size=32, n_jobs=1, **SPARSE).fit(X[:200], y[:200])
    # the threads are only used when Numba's threading layer is thread-safe
    probe = ParticleEvaluator(None, n_jobs=2)
    if probe._threads(SPARSE["n_particles"]) != 2:
        pytest.skip("Numba's threading layer is not thread-safe here.")
    two = SteinGPClassifier(batch_size=32, n_jobs=2, **SPARSE).fit(X[:200], y[:200])
    assert np.array_equal(one.particles_, two.particles_)
    assert np.array_equal(one.predict_proba(X_test), two.predict_proba(X_test))


# ------------------------------------------------------------ predictions
def test_binary_predictions_are_consistent(fitted_moons, seeded_moons):
    _, _, X_test, _ = seeded_moons
    clf = fitted_moons
    proba = clf.predict_proba(X_test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X_test)), proba)
    scores = clf.decision_function(X_test)
    np.testing.assert_allclose(scores, np.log(proba[:, 1] / proba[:, 0]), atol=1e-8)
    assert np.array_equal(clf.predict(X_test), clf.classes_[(scores > 0).astype(int)])
    assert np.array_equal(proba, clf.predict_proba(X_test))  # deterministic


@pytest.mark.statistical
def test_latent_samples_match_the_mixture_moments(
    fitted_moons, seeded_moons, stat_seed
):
    # Monte Carlo means of S draws lie within 5 standard errors sd / sqrt(S)
    # of the mixture mean (pathwise functions too: given their features
    # their mean is exact); a wrong conditioning (e.g. on u = v instead of
    # R v) moves them by far more. The variance of the exact draws within 5
    # standard errors from their own fourth moment, sqrt((m4 - m2^2) / S).
    # 18 values: 1e-5 false failures.
    _, _, X_test, _ = seeded_moons
    clf = fitted_moons
    X_q = X_test[:6]
    mean, var = clf.latent_mean_and_variance(X_q)
    S = 2000
    bound = 5 * np.sqrt(var / S)
    f = clf.sample_functions(S, random_state=stat_seed)
    values = f(X_q)
    assert values.shape == (6, S)
    assert np.all(np.abs(values.mean(axis=1) - mean) < bound)
    assert np.array_equal(values, f(X_q))
    draws = clf.sample_latent(X_q, n_samples=S, random_state=stat_seed)
    assert draws.shape == (6, S)
    assert np.all(np.abs(draws.mean(axis=1) - mean) < bound)
    centred = draws - draws.mean(axis=1, keepdims=True)
    m2 = np.mean(centred**2, axis=1)
    se_var = np.sqrt((np.mean(centred**4, axis=1) - m2**2) / S)
    assert np.all(np.abs(m2 - var) < 5 * se_var)


def test_multiclass(blobs):
    X, labels = blobs
    clf = SteinGPClassifier(batch_size=40, **SPARSE).fit(X, labels)
    assert list(clf.classes_) == ["a", "b", "c"]
    assert clf.particles_.shape == (4, 3 + 12 * 3)  # two ARD length scales
    assert clf.param_names_[3:6] == ["v[0,0]", "v[0,1]", "v[0,2]"]
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(X, labels) > 0.9
    mean, var = clf.latent_mean_and_variance(X[:5])
    assert mean.shape == var.shape == (5, 3)
    assert clf.sample_latent(X[:5], n_samples=4).shape == (5, 3, 4)
    functions = clf.sample_functions(3)
    assert len(functions) == 3 and functions[0](X[:5]).shape == (5, 3)
    assert not hasattr(clf, "decision_function")
    # a stream whose first chunk lacks a class
    stream = SteinGPClassifier(batch_size=40, **SPARSE)
    first = labels != "c"
    stream.partial_fit(X[first], labels[first], classes=["c", "b", "a"])
    stream.partial_fit(X, labels)
    assert list(stream.classes_) == ["a", "b", "c"]
    assert stream.score(X, labels) > 0.9


def test_sparse_model_keeps_no_training_data(moons):
    X, y, _, _ = moons
    X_big = np.vstack([X] * 5)
    y_big = np.concatenate([y] * 5)
    clf = SteinGPClassifier(batch_size=64, **SPARSE).fit(X_big, y_big)
    assert not hasattr(clf, "X_train_") and not hasattr(clf, "_target")
    assert len(pickle.dumps(clf)) < X_big.nbytes / 2
    # switching models leaves no attribute of the other behind
    clf.set_params(inducing_points=None, batch_size=None, max_iter=2)
    clf.fit(X[:50], y[:50])
    assert hasattr(clf, "X_train_") and not hasattr(clf, "inducing_points_")
    clf.set_params(inducing_points=5).fit(X[:50], y[:50])
    assert not hasattr(clf, "X_train_") and hasattr(clf, "inducing_points_")


def test_warm_start_continues_the_sparse_fit(moons):
    X, y, _, _ = moons
    clf = SteinGPClassifier(warm_start=True, **SPARSE).fit(X[:100], y[:100])
    Z = clf.inducing_points_
    clf.fit(X[100:200], y[100:200])
    assert clf.n_iter_ == 40 and clf.n_samples_seen_ == 100
    assert clf.inducing_points_ is Z


# ------------------------------------------------------------- bad input
def test_partial_fit_needs_classes_on_the_first_call(moons):
    X, y, _, _ = moons
    clf = SteinGPClassifier(**SPARSE)
    with pytest.raises(ValueError, match="classes must be passed on the first"):
        clf.partial_fit(X[:50], y[:50])
    assert not hasattr(clf, "n_features_in_")
    with pytest.raises(ValueError, match="requires 2 classes"):
        clf.partial_fit(X[:50], y[:50], classes=[0])


def test_partial_fit_rejects_unseen_labels_and_changed_classes(moons):
    X, y, _, _ = moons
    clf = SteinGPClassifier(**SPARSE).partial_fit(X[:50], y[:50], classes=[0, 1])
    before = clf.particles_.copy()
    with pytest.raises(ValueError, match=r"labels \[2\] that are not in"):
        clf.partial_fit(X[50:100], np.where(y[50:100] == 1, 2, 0))
    with pytest.raises(ValueError, match="not the same as on earlier calls"):
        clf.partial_fit(X[50:100], y[50:100], classes=[0, 1, 2])
    with pytest.raises(ValueError, match="features"):
        clf.partial_fit(X[50:100, :1], y[50:100])
    # a failed call leaves the earlier fit as it was
    assert np.array_equal(clf.particles_, before) and clf.n_samples_seen_ == 50
    with pytest.raises(ValueError, match="labels \\['x'\\] that are not in"):
        SteinGPClassifier(**SPARSE).partial_fit(
            X[:4], np.array(["a", "b", "a", "x"]), classes=["a", "b"]
        )


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(inducing_points=np.zeros((4, 3))), "3 features but X has 2"),
        (dict(inducing_points=np.full((4, 2), np.nan)), "NaN"),
        (dict(batch_size=16), "batch_size needs inducing_points"),
        (dict(inducing_points=4, shared_kernel=False), "shared_kernel=False"),
    ],
    ids=["z-features", "z-nan", "batch-without-z", "per-class-kernels"],
)
def test_bad_sparse_settings_raise(params, match, blobs):
    X, labels = blobs
    clf = SteinGPClassifier(n_particles=2, max_iter=1, **params)
    with pytest.raises(ValueError, match=match):
        clf.fit(X, labels)
    assert not hasattr(clf, "n_features_in_")


def test_partial_fit_needs_inducing_points(moons):
    X, y, _, _ = moons
    clf = SteinGPClassifier()
    assert not hasattr(clf, "partial_fit")
    # hidden (as scikit-learn's checks need), with the reason chained
    with pytest.raises(AttributeError, match="no attribute 'partial_fit'") as err:
        clf.partial_fit(X, y, classes=[0, 1])
    assert "set inducing_points" in str(err.value.__cause__)
    exact = SteinGPClassifier(n_particles=2, max_iter=2, warm_start=True)
    exact.fit(X[:30], y[:30]).set_params(inducing_points=5)
    with pytest.raises(ValueError, match="Cannot continue a fit of the exact"):
        exact.fit(X[:30], y[:30])


def test_minibatch_warm_up_stops_when_its_bound_settles():
    from skgp_bayes.inference.optimize import settled

    noise = np.tile([1.0, -1.0], 20)  # two windows of 20, each mean 0, sd 1
    assert settled(20)(list(noise))  # no rise at all: settled
    rising = noise + np.repeat([0.0, 5.0], 20)  # a rise of 5 against se 0.32
    assert not settled(20)(list(rising))
    assert not settled(20)(list(noise[:30]))  # checked on whole windows only


@pytest.mark.parametrize("max_iter,tol,expected", [(1, "auto", False), (5, 1e9, True)])
def test_converged_attribute_follows_the_stopping_rule(small, max_iter, tol, expected):
    # The stopping rule needs the field below tol on two iterations in a row:
    # one iteration never meets it, and a tol above any field meets it on
    # the second.
    X, y, _ = small
    clf = SteinGPClassifier(**{**SPARSE, "max_iter": max_iter, "tol": tol}).fit(X, y)
    assert clf.converged_ is expected
    assert clf.diagnostics_["converged"] == expected
