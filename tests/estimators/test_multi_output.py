"""Multi-output regression: targets that share the hyperparameters."""

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgp_bayes import (
    SelectiveSVGP,
    SGLDGPRegressor,
    SteinGPRegressor,
    VariationalMCMCRegressor,
)
from skgp_bayes._defaults import merged_priors
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.priors import PriorSet
from skgp_bayes.targets import ExactMarginalTarget

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(n=30, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 2))
    Y = np.column_stack([np.sin(X[:, 0]), 10.0 * np.cos(X[:, 1]) + 3.0])
    return X, Y + 0.1 * rng.randn(n, 2) * [1.0, 10.0]


def _fixed_pair(normalize_y):
    """Our estimator and scikit-learn's GPR on the same fixed model."""
    kernel = C(1.3, "fixed") * RBF([0.8, 1.7], "fixed")
    ours = SteinGPRegressor(
        kernel=kernel,
        noise_variance=0.05,
        noise_variance_bounds="fixed",
        n_particles=1,
        normalize_X=False,
        normalize_y=normalize_y,
    )
    theirs = GaussianProcessRegressor(
        kernel=kernel, alpha=0.05, optimizer=None, normalize_y=normalize_y
    )
    return ours, theirs


# ------------------------------------------------ against scikit-learn's GPR
@pytest.mark.parametrize("normalize_y", [True, False])
def test_fixed_hyperparameters_predict_as_scikit_learns_gpr(normalize_y):
    X, Y = _data()
    ours, theirs = _fixed_pair(normalize_y)
    ours.fit(X, Y)
    theirs.fit(X, Y)
    Xq = np.random.RandomState(1).uniform(-3, 3, (9, 2))
    for kind in ({"return_std": True}, {"return_cov": True}):
        mean, spread = ours.predict(Xq, **kind)
        mean_sk, spread_sk = theirs.predict(Xq, **kind)
        assert mean.shape == mean_sk.shape == (9, 2)
        assert spread.shape == spread_sk.shape
        np.testing.assert_allclose(mean, mean_sk, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(spread, spread_sk, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        ours.log_marginal_likelihood(), [theirs.log_marginal_likelihood_value_]
    )
    assert ours.sample_y(Xq, 4).shape == theirs.sample_y(Xq, 4).shape == (9, 2, 4)


def test_a_single_column_is_one_target_as_in_scikit_learn():
    X, Y = _data()
    ours, theirs = _fixed_pair(True)
    column = ours.fit(X, Y[:, :1]).predict(X[:5], return_std=True)
    flat = ours.fit(X, Y[:, 0]).predict(X[:5], return_std=True)
    sk = theirs.fit(X, Y[:, :1]).predict(X[:5], return_std=True)
    for a, b, c in zip(column, flat, sk, strict=True):
        assert a.shape == b.shape == c.shape == (5,)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------- the target
@pytest.mark.parametrize(
    "kernel", [C(1.0) * RBF([1.0, 1.0]), Matern(1.0, nu=1.5)], ids=["rbf", "matern"]
)
@pytest.mark.parametrize("learn_noise", [True, False])
def test_the_multi_output_gradient_matches_finite_differences(kernel, learn_noise):
    X, Y = _data(20)
    Y = (Y - Y.mean(0)) / Y.std(0)
    log_noise = None if learn_noise else np.log(0.1)
    target = ExactMarginalTarget(KernelAdapter(kernel), X, Y, None, log_noise)
    params = np.random.RandomState(0).normal(0, 0.3, target.n_params)
    _, grad = target.log_likelihood(params)
    h = 1e-6
    numeric = [
        (
            target.log_likelihood(params + h * e, False)
            - target.log_likelihood(params - h * e, False)
        )
        / (2 * h)
        for e in np.eye(target.n_params)
    ]
    # central differences err by O(h^2) plus rounding ~1e-16 |f| / h ~ 1e-8
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


def test_the_targets_log_likelihoods_add_up():
    X, Y = _data(20)
    kernel = C(1.0) * RBF([1.0, 1.0])
    slices = dict(KernelAdapter(kernel).hyperparameter_slices)
    slices["noise_variance"] = slice(3, 4)
    prior = PriorSet(slices, merged_priors(None, slices, 2))  # the defaults
    params = np.array([0.2, -0.1, 0.3, np.log(0.1)])
    value, grad = ExactMarginalTarget(KernelAdapter(kernel), X, Y, prior).logp_and_grad(
        params
    )
    # each column alone takes the fast RBF path: a second implementation
    parts = [
        ExactMarginalTarget(KernelAdapter(kernel), X, Y[:, c].copy(), None)
        for c in range(2)
    ]
    values, grads = zip(*(t.log_likelihood(params) for t in parts), strict=True)
    prior_value, prior_grad = prior.log_prob(params)
    np.testing.assert_allclose(value, sum(values) + prior_value, rtol=1e-12)
    np.testing.assert_allclose(grad, np.sum(grads, axis=0) + prior_grad, rtol=1e-9)


# ----------------------------------------------------- the particle mixture
@pytest.fixture(scope="module")
def fitted():
    X, Y = _data()
    reg = SteinGPRegressor(n_particles=4, max_iter=40, random_state=0).fit(X, Y)
    return reg, X, Y


def test_shapes_follow_scikit_learns(fitted):
    reg, X, Y = fitted
    Xq = X[:6]
    assert reg.predict(Xq).shape == (6, 2)
    assert [a.shape for a in reg.predict(Xq, return_std=True)] == [(6, 2), (6, 2)]
    assert reg.predict(Xq, return_cov=True)[1].shape == (6, 6, 2)
    assert reg.sample_y(Xq, n_samples=3).shape == (6, 2, 3)
    assert reg.log_predictive_density(Xq, Y[:6]).shape == (6,)
    lower, upper = reg.predict_interval(Xq, coverage=0.8)
    assert lower.shape == upper.shape == (6, 2) and np.all(lower < upper)
    assert reg.predict_quantiles(Xq, [0.1, 0.5, 0.9]).shape == (6, 2, 3)
    assert reg.noise_variance_.shape == (4, 2)
    assert reg.y_train_.shape == (30, 2)


def test_one_dimensional_y_keeps_todays_shapes():
    X, Y = _data()
    reg = SteinGPRegressor(n_particles=3, max_iter=20, random_state=0).fit(X, Y[:, 0])
    assert reg.predict(X[:4], return_std=True)[1].shape == (4,)
    assert reg.predict(X[:4], return_cov=True)[1].shape == (4, 4)
    assert reg.sample_y(X[:4], n_samples=3).shape == (4, 3)
    assert reg.log_predictive_density(X[:4], Y[:4, 0]).shape == (4,)
    assert reg.predict_quantiles(X[:4], [0.5]).shape == (4, 1)
    assert reg.noise_variance_.shape == (3,)


def test_each_target_is_the_particle_mixture_of_its_own_gp(fitted):
    # Every particle is a GP shared by the targets; scikit-learn's GPR with
    # the particle's kernel and noise gives each target's mean and variance
    # under it, and the estimator mixes them with equal weights.
    reg, X, Y = fitted
    Xq, Yq = X[:8] + 0.3, Y[:8]
    means, variances = [], []
    scale = reg.input_scaling_
    for kernel, noise in zip(reg.kernels_, reg.noise_variance_, strict=True):
        # noise_variance_ is in each target's units; GPR takes one alpha on
        # the normalised scale, where the targets share it
        alpha = noise[0] / np.std(Y[:, 0]) ** 2
        gpr = GaussianProcessRegressor(
            kernel=kernel, alpha=alpha, optimizer=None, normalize_y=True
        ).fit(scale.transform(X), Y)
        m, s = gpr.predict(scale.transform(Xq), return_std=True)
        means.append(m)
        variances.append(s**2 + noise)
    means, variances = np.array(means), np.array(variances)  # (J, m, t)
    mean, std = reg.predict(Xq, return_std=True)
    np.testing.assert_allclose(mean, means.mean(0), rtol=1e-7, atol=1e-9)
    log_parts = -0.5 * (np.log(2 * np.pi * variances) + (Yq - means) ** 2 / variances)
    # the joint density of a row: the targets follow the same particle
    expected = logsumexp(log_parts.sum(axis=2), axis=0) - np.log(means.shape[0])
    np.testing.assert_allclose(
        reg.log_predictive_density(Xq, Yq), expected, rtol=1e-7, atol=1e-9
    )


def test_sample_y_draws_every_target_exactly_and_pathwise_is_refused(fitted):
    reg, X, _ = fitted
    with pytest.raises(ValueError, match="multi-output fit samples exactly"):
        reg.sample_y(X[:3], method="pathwise")
    with pytest.raises(ValueError, match="functions of one target"):
        reg.sample_functions(2)


def test_log_predictive_density_wants_every_target(fitted):
    reg, X, Y = fitted
    with pytest.raises(ValueError, match=r"shape \(n_samples, 2\)"):
        reg.log_predictive_density(X[:3], Y[:3, 0])


def test_the_noise_is_shared_on_the_normalised_scale(fitted):
    reg, _, Y = fitted
    ratio = reg.noise_variance_ / np.std(Y, axis=0) ** 2
    np.testing.assert_allclose(ratio[:, 0], ratio[:, 1], rtol=1e-12)


def test_tags_say_which_modes_take_several_targets():
    assert SteinGPRegressor().__sklearn_tags__().target_tags.multi_output
    assert not SteinGPRegressor(solver="cg").__sklearn_tags__().target_tags.multi_output
    sparse = SteinGPRegressor(inducing_points=5)
    assert not sparse.__sklearn_tags__().target_tags.multi_output


# --------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    "estimator, reason",
    [
        (SteinGPRegressor(inducing_points=5), "whitened inducing values"),
        (SteinGPRegressor(solver="cg"), "solver='cg'"),
        (SGLDGPRegressor(), "stochastic gradients"),
        (VariationalMCMCRegressor(), "whitened inducing values"),
        (SelectiveSVGP(), "collapsed bound"),
    ],
    ids=["stein-sparse", "stein-cg", "sgld", "vmcmc", "selective"],
)
def test_single_target_models_refuse_a_2d_y_and_say_why(estimator, reason):
    X, Y = _data()
    name = type(estimator).__name__
    with pytest.raises(ValueError, match=rf"{name} fits one target") as info:
        estimator.fit(X, Y)
    assert reason in str(info.value)
    assert "MultiOutputRegressor" in str(info.value)
    assert not hasattr(estimator, "n_features_in_")  # refused before any work


def test_the_single_target_metrics_refuse_a_multi_output_fit(fitted):
    from skgp_bayes.metrics import crps

    reg, X, Y = fitted
    with pytest.raises(ValueError, match="fitted on 2 targets"):
        crps(reg, X[:3], Y[:3])


def test_arviz_observed_data_keeps_the_targets(fitted):
    pytest.importorskip("arviz")
    reg, _, Y = fitted
    data = reg.to_inference_data()
    observed = data["observed_data"]["y"]
    assert observed.shape == Y.shape
    np.testing.assert_allclose(np.asarray(observed), Y, rtol=1e-12)
    assert np.isfinite(reg.score(*fitted[1:]))  # r2 averaged over the targets
