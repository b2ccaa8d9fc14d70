"""SteinGPClassifier: its API, classes, bad input, function samples and stopping rule
(its particles against exact posteriors: test_stein_classifier_posterior.py)."""

import pickle
import warnings

import joblib
import numpy as np
import pytest
from scipy.special import softmax
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Matern,
    WhiteKernel,
)
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skgp_bayes import SteinGPClassifier
from skgp_bayes._defaults import default_kernel

FAST = dict(n_particles=4, max_iter=20, random_state=0)


@pytest.fixture(autouse=True)
def _quiet_convergence():
    # Short test fits stop at max_iter by design; the warning itself is
    # asserted where it matters.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.randn(40) > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def fitted(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SteinGPClassifier(**FAST).fit(*data)


@pytest.fixture(scope="module")
def multiclass():
    rng = np.random.RandomState(1)
    centres = np.array([[0.0, 2.0], [-2.0, -1.0], [2.0, -1.0]])
    y = np.repeat(np.arange(3), 12)
    X = centres[y] + 0.8 * rng.randn(36, 2)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    return X, labels


@pytest.fixture(scope="module")
def fitted_multiclass(multiclass):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SteinGPClassifier(**FAST).fit(*multiclass)


def _variance_se(values):
    """Standard error of the sample variance along the last axis.

    From the sample's own fourth central moment, sqrt((m4 - m2^2) / N): the
    draws mix particles, so the Gaussian sqrt(2 / N) would understate it.
    """
    centred = values - values.mean(axis=-1, keepdims=True)
    m2 = np.mean(centred**2, axis=-1)
    m4 = np.mean(centred**4, axis=-1)
    return np.sqrt((m4 - m2**2) / values.shape[-1])


# ---------------------------------------------------------------- API
def test_fitted_attributes(fitted, data):
    X, y = data
    n = X.shape[0]
    n_theta = 3  # constant value and one length scale per input (ARD)
    assert fitted.classes_.tolist() == [0, 1]
    assert fitted.particles_.shape == (4, n_theta + n)
    assert len(fitted.param_names_) == n_theta + n
    assert fitted.param_names_[1:n_theta] == [
        "k2__length_scale[0]",
        "k2__length_scale[1]",
    ]
    assert fitted.param_names_[n_theta] == "nu[0]"
    assert len(fitted.kernels_) == 4
    np.testing.assert_allclose(fitted.kernels_[1].theta, fitted.particles_[1, :n_theta])
    # inputs standardised by default
    np.testing.assert_allclose(fitted.input_scaling_.mean, X.mean(axis=0))
    np.testing.assert_allclose(fitted.input_scaling_.scale, X.std(axis=0))
    assert fitted.log_posterior_.shape == (4,)
    assert np.all(np.isfinite(fitted.log_posterior_))
    # 42 coordinates and 4 particles: the per-coordinate kernel and steps
    # meet the rule within the 20-iteration budget (16 iterations at seed 0)
    assert fitted.converged_ and fitted.diagnostics_["converged"] is True
    assert fitted.n_iter_ < 20
    assert len(fitted.history_["log_density"]) == fitted.n_iter_
    assert np.isfinite(fitted.ksd_)
    assert fitted.map_params_.shape == (n_theta,)
    assert fitted.n_features_in_ == 2


def test_predict_proba_predict_and_score(fitted, data):
    X, y = data
    proba = fitted.predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all((proba >= 0) & (proba <= 1))
    pred = fitted.predict(X)
    np.testing.assert_array_equal(pred, fitted.classes_[np.argmax(proba, axis=1)])
    assert fitted.score(X, y) == pytest.approx(np.mean(pred == y))
    # At least the training accuracy of scikit-learn's classifier with the
    # same (default ARD) kernel on the same standardised inputs, 34 of 40:
    # the noise flips 7 labels against the true boundary, which scores 0.825.
    peer = make_pipeline(
        StandardScaler(), GaussianProcessClassifier(default_kernel(2))
    ).fit(X, y)
    assert fitted.score(X, y) >= peer.score(X, y)
    np.testing.assert_allclose(
        fitted.predict_log_proba(X), np.log(proba), rtol=1e-10, atol=1e-12
    )
    d = fitted.decision_function(X)
    np.testing.assert_allclose(d, np.log(proba[:, 1] / proba[:, 0]), rtol=1e-8)
    np.testing.assert_array_equal(d > 0, pred == 1)


def test_latent_mean_and_variance_is_the_particle_mixture(fitted, data):
    X, _ = data
    # Per particle, f = L nu at X has prior covariance K + delta I (delta the
    # jitter); the latent predictive at x is the kriging estimate
    # K(x, X) (K + delta I)^-1 f, variance k(x, x) - K(x, X) (K + delta I)^-1
    # K(X, x). Computed here by dense solves, then mixed over particles.
    Xq = np.vstack([X[:6], X[:3] + 0.5])
    mean, var = fitted.latent_mean_and_variance(Xq)
    assert mean.shape == var.shape == (Xq.shape[0],)
    target = fitted._target
    n_theta = target.n_theta
    # the fitted kernels take inputs in the model's (standardised) units
    Xq_model = fitted.input_scaling_.transform(Xq)
    X_model = fitted.input_scaling_.transform(X)
    means, variances = [], []
    for p, kernel in zip(fitted.particles_, fitted.kernels_, strict=True):
        Kj, _ = target.gram(p[:n_theta])
        Ks = kernel(Xq_model, X_model)
        f = target.latent(p)[:, 0]
        means.append(Ks @ np.linalg.solve(Kj, f))
        variances.append(
            np.diag(kernel(Xq_model))
            - np.einsum("ij,ji->i", Ks, np.linalg.solve(Kj, Ks.T))
        )
    means, variances = np.array(means), np.array(variances)
    np.testing.assert_allclose(mean, means.mean(axis=0), rtol=1e-7, atol=1e-8)
    mix_var = (variances + means**2).mean(axis=0) - means.mean(axis=0) ** 2
    np.testing.assert_allclose(var, mix_var, rtol=1e-6, atol=1e-8)
    # At training inputs the kriging mean is f itself up to O(sqrt(delta))
    # = 1e-3 (the jitter acts as a nugget), so the mixture there is the
    # particles' own spread of f.
    F = np.array([target.latent(p)[:, 0] for p in fitted.particles_])
    np.testing.assert_allclose(mean[:6], F[:, :6].mean(axis=0), atol=1e-2)
    np.testing.assert_allclose(var[:6], F[:, :6].var(axis=0), rtol=0.05, atol=1e-2)


@pytest.mark.statistical
def test_sample_latent_matches_moments(fitted, data, stat_seed):
    # The fit is the shared one; what is random here are the S draws given
    # the fit, whose seed is offset.
    X, _ = data
    Xq = X[:5] + 0.3
    mean, var = fitted.latent_mean_and_variance(Xq)
    S = 4000
    samples = fitted.sample_latent(Xq, n_samples=S, random_state=stat_seed)
    assert samples.shape == (5, S)
    # 5 standard errors (sd / sqrt(S) for the mean, _variance_se for the
    # variance) on 5 points each: 10 * 5.7e-7 = 6e-6 false failures.
    se = np.sqrt(var / S)
    np.testing.assert_array_less(np.abs(samples.mean(axis=1) - mean), 5 * se)
    np.testing.assert_array_less(
        np.abs(samples.var(axis=1) - var), 5 * _variance_se(samples)
    )
    again = fitted.sample_latent(Xq, n_samples=S, random_state=stat_seed)
    np.testing.assert_array_equal(samples, again)
    with pytest.raises(ValueError, match="n_samples"):
        fitted.sample_latent(Xq, n_samples=0)


def test_multiclass_softmax(fitted_multiclass, multiclass):
    X, y = multiclass
    clf = fitted_multiclass
    assert clf.classes_.tolist() == ["setosa", "versicolor", "virginica"]
    proba = clf.predict_proba(X)
    assert proba.shape == (X.shape[0], 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(
        clf.predict(X), clf.classes_[np.argmax(proba, axis=1)]
    )
    assert clf.score(X, y) > 0.9
    # one joint model: one latent vector per class in every particle, after
    # the amplitude and the two (ARD) length scales
    assert clf.particles_.shape == (4, 3 + 3 * X.shape[0])
    assert clf.param_names_[3] == "nu[0,0]"
    assert not hasattr(clf, "decision_function")
    mean, var = clf.latent_mean_and_variance(X)
    assert mean.shape == var.shape == (X.shape[0], 3)
    # the largest latent mean picks the class at well-separated points
    assert np.mean(clf.classes_[np.argmax(mean, axis=1)] == y) > 0.9
    samples = clf.sample_latent(X[:4], n_samples=7, random_state=1)
    assert samples.shape == (4, 3, 7)


def test_multiclass_proba_averages_each_particles_softmax_expectation(
    fitted_multiclass, multiclass
):
    from skgp_bayes.likelihoods import standard_normal_draws

    # Each particle integrates the softmax over its own block of 256
    # quasi-random nodes. Against a reference of 200,000 nodes per particle,
    # every entry must lie within 5 sds of an estimate with as many
    # independent nodes, and the RMS error must stay under a quarter of that
    # sd's: over 200 seeds of the nodes it was 0.011-0.089 of it (the
    # reference's own error 0.045 of it), where the 256 antithetic draws the
    # particles used to share gave 0.08-1.30 (median 0.41).
    X, _ = multiclass
    clf = fitted_multiclass
    queries = np.vstack([X[:6], 0.5 * X[:6], [[0.0, 0.0], [4.0, 4.0], [-4.0, 3.0]]])
    proba = clf.predict_proba(queries)
    # The nodes do not depend on the queries: a point alone gets the same
    # probabilities, up to the round-off of its latent moments (another
    # seed's nodes move the largest of them by 4e-4).
    for i in (0, 7, 14):
        np.testing.assert_allclose(
            clf.predict_proba(queries[i : i + 1])[0], proba[i], rtol=1e-11, atol=0
        )
    means, variances = clf._draws.moments(clf._validate_query(queries))
    n_particles = means.shape[0]
    nodes = standard_normal_draws(200_000, 3, random_state=1)
    per_particle, node_sd = [], []
    for j in range(n_particles):
        f = means[j].T[:, None, :] + np.sqrt(variances[j].T)[:, None, :] * nodes
        p = softmax(f, axis=-1)
        per_particle.append(p.mean(axis=1))
        node_sd.append(p.std(axis=1))
    reference = np.mean(per_particle, axis=0)
    random_sd = np.sqrt(np.sum(np.square(node_sd), axis=0) / 256) / n_particles
    error = proba - reference
    assert np.all(np.abs(error) <= 5.0 * random_sd)
    assert np.sqrt(np.mean(error**2)) < 0.25 * np.sqrt(np.mean(random_sd**2))


def test_multiclass_per_class_hyperparameters(multiclass):
    X, y = multiclass
    clf = SteinGPClassifier(shared_kernel=False, **FAST).fit(X, y)
    assert clf.param_names_[:9] == [
        f"latent{c}__{name}"
        for c in range(3)
        for name in (
            "k1__constant_value",
            "k2__length_scale[0]",
            "k2__length_scale[1]",
        )
    ]
    assert len(clf.kernels_[0]) == 3
    assert clf.score(X, y) > 0.9


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_links_give_calibrated_direction(data, link):
    X, y = data
    clf = SteinGPClassifier(link=link, **FAST).fit(X, y)
    # inside the data cloud, on either side of the boundary
    proba = clf.predict_proba(np.array([[-1.5, -1.5], [1.5, 1.5]]))
    assert proba[0, 1] < 0.2 and proba[1, 1] > 0.8
    assert clf._target.likelihood.link == link


def test_string_and_signed_labels(data):
    X, y = data
    reference = SteinGPClassifier(**FAST).fit(X, y).predict_proba(X)
    for labels in (np.array(["no", "yes"]), np.array([-1, 1])):
        clf = SteinGPClassifier(**FAST).fit(X, labels[y])
        np.testing.assert_array_equal(clf.classes_, labels)
        # the label encoding changes nothing else
        np.testing.assert_array_equal(clf.predict_proba(X), reference)
        expected = labels[np.argmax(reference, axis=1)]
        np.testing.assert_array_equal(clf.predict(X), expected)


def test_determinism_and_round_trips(fitted, data, tmp_path):
    X, y = data
    again = SteinGPClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(again.particles_, fitted.particles_)
    proba = fitted.predict_proba(X)
    np.testing.assert_array_equal(fitted.predict_proba(X), proba)
    loaded = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(loaded.predict_proba(X), proba)
    np.testing.assert_array_equal(
        loaded.decision_function(X), fitted.decision_function(X)
    )
    path = tmp_path / "clf.joblib"
    joblib.dump(fitted, path)
    loaded = joblib.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), proba)
    np.testing.assert_array_equal(
        loaded.latent_mean_and_variance(X)[1], fitted.latent_mean_and_variance(X)[1]
    )
    cloned = clone(fitted)
    assert not hasattr(cloned, "particles_")
    np.testing.assert_array_equal(cloned.fit(X, y).predict_proba(X), proba)


def test_warm_start_continues_the_run(data):
    X, y = data
    params = dict(n_particles=4, random_state=0, tol=0.0)
    long = SteinGPClassifier(max_iter=20, **params).fit(X, y)
    warm = SteinGPClassifier(max_iter=10, warm_start=True, **params)
    warm.fit(X, y)
    warm.fit(X, y)
    assert warm.n_iter_ == 20
    np.testing.assert_array_equal(warm.particles_, long.particles_)
    assert len(warm.history_["log_density"]) == 20
    with pytest.raises(ValueError, match="training set"):
        warm.fit(X + 1.0, y)
    with pytest.raises(ValueError, match="classes"):
        warm.fit(X, np.where(y == 1, 2, 0))
    warm.set_params(n_particles=3)
    with pytest.raises(ValueError, match="warm_start"):
        warm.fit(X, y)


def test_interrupted_fit_leaves_earlier_state(fitted, data, monkeypatch):
    import skgp_bayes._stein_base as module

    X, y = data
    est = pickle.loads(pickle.dumps(fitted))
    before = est.predict_proba(X)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "run_svgd", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X[:, :1], y)
    assert est.n_features_in_ == 2
    np.testing.assert_array_equal(est.predict_proba(X), before)


def test_max_iter_warning(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning, match="did not meet its stopping rule"):
            SteinGPClassifier(**{**FAST, "max_iter": 3}).fit(X, y)


def test_verbose_prints_progress(data, capsys):
    X, y = data
    SteinGPClassifier(verbose=1, **FAST).fit(X, y)
    out = capsys.readouterr().out
    assert "[SteinGPClassifier]" in out and "Laplace MAP" in out


def test_prior_initialisation(data):
    X, y = data
    clf = SteinGPClassifier(init="prior", n_particles=4, max_iter=60, random_state=0)
    clf.fit(X, y)
    assert clf.map_params_ is None
    assert clf.score(X, y) > 0.8


def test_matern_kernel_and_priors(data):
    X, y = data
    from skgp_bayes.priors import LogNormal

    kernel = ConstantKernel(1.0) * Matern(1.0, nu=1.5)
    tight = SteinGPClassifier(
        kernel, priors={"k2__length_scale": LogNormal(np.log(5.0), 0.01)}, **FAST
    ).fit(X, y)
    # a very tight prior pins every particle's length scale near 5
    np.testing.assert_allclose(np.exp(tight.particles_[:, 1]), 5.0, rtol=0.1)


def test_pipeline_grid_search_and_cross_validation(data):
    X, y = data
    pipe = make_pipeline(
        StandardScaler(), SteinGPClassifier(max_iter=15, random_state=0)
    )
    grid = GridSearchCV(
        pipe,
        {
            "steingpclassifier__n_particles": [2, 4],
            "steingpclassifier__link": ["logit", "probit"],
        },
        cv=3,
        scoring="neg_log_loss",
    )
    grid.fit(X, y)
    # a constant 50/50 guess scores -log 2 = -0.69
    assert grid.best_score_ > -0.45
    scores = cross_val_score(pipe, X, y, cv=3)
    # 13 test points per fold and label noise: sklearn's classifier scores
    # (1.0, 0.85, 0.62) on these folds, mean 0.82
    assert scores.shape == (3,) and np.mean(scores) > 0.75


def test_dataframe_feature_names(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    df = pd.DataFrame(X, columns=["a", "b"])
    clf = SteinGPClassifier(**FAST).fit(df, y)
    np.testing.assert_array_equal(clf.feature_names_in_, ["a", "b"])
    with pytest.warns(UserWarning, match="feature names"):
        clf.predict_proba(X)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "X_bad,y_bad,match",
    [
        (lambda X: np.where(X == X[0, 0], np.nan, X), None, "NaN"),
        (lambda X: np.where(X == X[0, 0], np.inf, X), None, "infinity"),
        (lambda X: X[:, :, None], None, "dim 3"),
        (None, lambda y: y[:-1], "inconsistent numbers of samples"),
        (None, lambda y: np.zeros_like(y), "2 classes"),
        (None, lambda y: y + np.linspace(0.01, 0.5, y.size), "Unknown label type"),
        (None, lambda y: np.where(y == 1, np.nan, 0.0), "NaN"),
    ],
    ids=[
        "nan-X",
        "inf-X",
        "3d-X",
        "lengths",
        "one-class",
        "continuous",
        "nan-y",
    ],
)
def test_bad_input_is_a_clear_value_error(data, X_bad, y_bad, match):
    X, y = data
    X = X_bad(X) if X_bad else X
    y = y_bad(y) if y_bad else y
    with pytest.raises(ValueError, match=match):
        SteinGPClassifier(**FAST).fit(X, y)


def test_huge_inputs_predict_like_rescaled_data(fitted, data):
    # Inputs of magnitude 1e200 are standardised to the same model inputs
    # as the data themselves, up to rounding (relative 1e-16): the
    # probabilities agree far below 1e-6.
    X, y = data
    huge = SteinGPClassifier(**FAST).fit(X * 1e200, y)
    np.testing.assert_allclose(
        huge.predict_proba(X * 1e200), fitted.predict_proba(X), atol=1e-6
    )


def test_bad_input_at_predict(fitted, data):
    X, _ = data
    with pytest.raises(ValueError, match="NaN"):
        fitted.predict_proba(np.where(X == X[0, 0], np.nan, X))
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :1])
    with pytest.raises(ValueError, match="infinity"):
        fitted.latent_mean_and_variance(np.full((2, 2), np.inf))
    with pytest.raises(NotFittedError):
        SteinGPClassifier().predict_proba(X)
    with pytest.raises(NotFittedError):
        SteinGPClassifier().predict(X)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.parametrize(
    "params,match",
    [
        (dict(n_particles=0), "n_particles"),
        (dict(max_iter=-1), "max_iter"),
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(link="cauchit"), "link"),
        (dict(init="median"), "init"),
        (dict(kernel=RBF(length_scale=np.nan)), "finite"),
        (dict(kernel=RBF(length_scale=np.inf)), "finite"),
        (dict(kernel=ConstantKernel(0.0) * RBF()), "finite"),
        (dict(kernel=RBF(length_scale_bounds=(0.0, np.inf))), "bounds"),
        (dict(kernel=RBF(length_scale_bounds=(10.0, 1.0))), "inverted"),
    ],
)
def test_invalid_parameters(data, params, match):
    X, y = data
    est = SteinGPClassifier(**{**FAST, **params})  # never raises in __init__
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


def test_duplicate_inputs_and_read_only_data(data):
    X, y = data
    X = np.vstack([X, X[:5]])
    y = np.concatenate([y, y[:5]])
    X.setflags(write=False)
    y.setflags(write=False)
    clf = SteinGPClassifier(**FAST).fit(X, y)
    assert np.all(np.isfinite(clf.predict_proba(X)))


# ------------------------------------------------------------ function samples
@pytest.mark.statistical
@pytest.mark.parametrize("n_classes,white", [(2, False), (3, False), (2, True)])
def test_function_samples_match_latent_moments(n_classes, white, stat_seed):
    """Pathwise latent functions reproduce the mixture's moments.

    Reference: ``latent_mean_and_variance`` (exact per-particle kriging,
    mixed). As in test_pathwise_estimators: R = 32 replicate sets of 125
    functions, each set with its own seed and so its own Fourier features
    (F = 2048 per particle). Given the features a function has the exact
    kriging mean (the prior part's weights average to zero), so the pooled
    mean has standard error sd / sqrt(4000); 5 of them. The variance given
    one feature set carries the features' error, large where the posterior
    variance is a small part of the prior's, so the replicates' spread
    measures it with the Monte Carlo error: the mean of their variances
    within 6 standard errors sd_R / sqrt(32) (t with 31 degrees of freedom:
    1.2e-6). At most 18 values of each: below 3e-5 false failures per case.
    """
    rng = np.random.RandomState(stat_seed)
    X = rng.uniform(-2, 2, (30, 2))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5][: n_classes - 1])
    kernel = ConstantKernel() * RBF()
    if white:  # its variance is no part of the smooth function samples
        kernel = kernel + WhiteKernel(0.3, "fixed")
    clf = SteinGPClassifier(kernel, n_particles=4, max_iter=15, random_state=stat_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    Xq = rng.uniform(-2, 2, (6, 2))
    mean, var = clf.latent_mean_and_variance(Xq)
    if white:
        var = var - 0.3
    R, n, F = 32, 125, 2048

    def replicate(r):
        functions = clf.sample_functions(
            n, random_state=1000 * (1 + stat_seed) + r, n_features=F
        )
        functions = functions if isinstance(functions, list) else [functions]
        return np.stack([f(Xq) for f in functions], axis=1)  # (6, C, n)

    values = np.stack([replicate(r) for r in range(R)], axis=2)  # (6, C, R, n)
    mean = mean.reshape(6, -1)
    var = var.reshape(6, -1)
    assert values.shape == (6, mean.shape[1], R, n)
    pooled = values.reshape(6, mean.shape[1], -1)
    se_mean = pooled.std(axis=2) / np.sqrt(R * n)
    np.testing.assert_array_less(np.abs(pooled.mean(axis=2) - mean), 5 * se_mean)
    per_set = values.var(axis=3, ddof=1)
    se_var = per_set.std(axis=2, ddof=1) / np.sqrt(R)
    np.testing.assert_array_less(np.abs(per_set.mean(axis=2) - var), 6 * se_var)
    functions = clf.sample_functions(5, random_state=1 + stat_seed, n_features=F)
    functions = functions if isinstance(functions, list) else [functions]
    again = clf.sample_functions(5, random_state=1 + stat_seed, n_features=F)
    again = again if isinstance(again, list) else [again]
    np.testing.assert_array_equal(again[0](Xq), functions[0](Xq))


# ------------------------------------------------------------ stopping rule
def test_default_fit_meets_its_stopping_rule_on_real_data():
    # Iris (150 points, 3 classes, softmax; 454 particle coordinates), inputs
    # standardised as the estimator will see them. Started at the Laplace
    # approximation and preconditioned by its curvature, SVGD ends on tol
    # well inside the budget, and quietly.
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = SteinGPClassifier(random_state=0).fit(X, y)
    assert clf.converged_ and clf.diagnostics_["converged"]
    assert clf.n_iter_ < clf.max_iter // 2
    assert clf.history_["field"][-1] <= 0.1 / np.sqrt(clf.n_particles)


def test_explicit_learning_rate_decay_is_used_by_the_exact_model(data):
    X, y = data
    clf = SteinGPClassifier(
        n_particles=4, max_iter=6, tol=0.0, learning_rate_decay=2.0, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    t = np.arange(6)
    # learning_rate="auto" with the Laplace preconditioner is 0.5, which the
    # engine halves where the field oscillates: the steps are the decay
    # schedule times a power of two.
    halvings = -np.log2(
        np.array(clf.history_["learning_rate"]) / (0.5 * (1 + t / 2.0) ** -0.55)
    )
    np.testing.assert_allclose(halvings, np.round(halvings), atol=1e-9)
    default = SteinGPClassifier(n_particles=4, max_iter=6, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        default.fit(X, y)
    # without decay (learning_rate_decay="auto" on full-batch gradients) the
    # step only ever halves
    steps = np.array(default.history_["learning_rate"])
    assert steps[0] == 0.5 and set(steps[1:] / steps[:-1]) <= {0.5, 1.0}


@pytest.mark.parametrize(
    "params,model",
    [({}, "LatentModel"), ({"inducing_points": 5}, "SparseClassifierModel")],
)
def test_fit_runs_the_one_model_its_parameters_name(data, params, model, monkeypatch):
    # The model is chosen once, and every model runs the one template.
    import skgp_bayes._stein_base as base

    ran = []
    template = base.SteinModel.fit

    def spy(self):
        ran.append(type(self).__name__)
        return template(self)

    monkeypatch.setattr(base.SteinModel, "fit", spy)
    SteinGPClassifier(**{**FAST, "max_iter": 2}, **params).fit(*data)
    assert ran == [model]


def test_particles_settle_only_where_the_surrogate_is_identified(data):
    # The coupled surrogate's slope in theta needs more particles than
    # hyperparameters: two (isotropic) with ten particles, not 31 (ARD).
    isotropic = ConstantKernel() * RBF(1.0)
    settled = SteinGPClassifier(isotropic, n_particles=10, random_state=0)
    settled.fit(*data)
    assert settled.diagnostics_["settled"] and settled.converged_
    X, y = data
    wide = np.hstack([X, np.random.RandomState(3).normal(size=(X.shape[0], 9))])
    ard = ConstantKernel() * RBF(np.ones(wide.shape[1]))
    drawn = SteinGPClassifier(ard, n_particles=10, max_iter=5, random_state=0)
    assert not drawn.fit(wide, y).diagnostics_["settled"]
