"""The Laplace surrogate SVGD settles on before the target: its density,
its gradient, the classifier's coupled form, and the settling itself."""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from skgp_bayes._stein_base import Start, settle_on_surrogate
from skgp_bayes._stein_models.latent import coupled_laplace
from skgp_bayes.inference.gaussian_surrogate import GaussianMixtureDensity


def _random_roots(rng, n_components, dim):
    # Lower-triangular, upper-triangular and full roots all occur in use.
    roots = []
    for k in range(n_components):
        A = rng.standard_normal((dim, dim)) + 2.0 * np.eye(dim)
        roots.append(np.tril(A) if k == 0 else A if k == 1 else np.triu(A))
    return roots


@pytest.mark.parametrize("n_components", [1, 3])
def test_density_matches_scipy(n_components):
    rng = np.random.default_rng(0)
    dim = 4
    means = rng.standard_normal((n_components, dim))
    roots = _random_roots(rng, n_components, dim)
    log_weights = rng.standard_normal(n_components)
    density = GaussianMixtureDensity(means, roots, log_weights)
    x = rng.standard_normal((6, dim))
    weights = log_weights - logsumexp(log_weights)
    expected = logsumexp(
        [
            w + multivariate_normal(m, S @ S.T).logpdf(x)
            for w, m, S in zip(weights, means, roots, strict=True)
        ],
        axis=0,
    )
    np.testing.assert_allclose(density(x)[0], expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_components", [1, 3])
def test_gradient_matches_finite_differences(n_components):
    rng = np.random.default_rng(1)
    dim = 5
    density = GaussianMixtureDensity(
        rng.standard_normal((n_components, dim)),
        _random_roots(rng, n_components, dim),
        rng.standard_normal(n_components),
    )
    x = rng.standard_normal((3, dim))
    _, grads = density(x)
    step = 1e-6
    for p in range(dim):
        shift = np.zeros(dim)
        shift[p] = step
        numeric = (density(x + shift)[0] - density(x - shift)[0]) / (2 * step)
        # Central differences of a smooth function: error O(step^2) plus
        # rounding of about 1e-16 / step.
        np.testing.assert_allclose(grads[:, p], numeric, rtol=1e-6, atol=1e-8)


def test_density_rejects_mismatched_components():
    with pytest.raises(ValueError, match="2 means but 1 covariance roots"):
        GaussianMixtureDensity(np.zeros((2, 3)), [np.eye(3)])


def test_given_inverse_roots_give_the_same_density():
    rng = np.random.default_rng(3)
    roots = [np.tril(rng.standard_normal((4, 4))) + 3 * np.eye(4) for _ in range(2)]
    means, x = rng.standard_normal((2, 4)), rng.standard_normal((5, 4))
    inverses = [np.linalg.inv(root) for root in roots]
    given = GaussianMixtureDensity(means, roots, [0.0, 1.0], inverse_roots=inverses)
    inverted = GaussianMixtureDensity(means, roots, [0.0, 1.0])
    for a, b in zip(given(x), inverted(x), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_coupled_laplace_is_the_conditional_gaussian_of_the_draws():
    rng = np.random.default_rng(2)
    n_theta, n_latent, n_particles = 2, 5, 6
    slope = rng.standard_normal((n_latent, n_theta))
    thetas = rng.standard_normal((n_particles, n_theta))
    nu_0 = rng.standard_normal(n_latent)
    modes = np.hstack([thetas, nu_0 + (thetas - thetas[0]) @ slope.T])
    theta_root = np.array([[0.5, 0.0], [0.2, 0.3]])
    latent_root = np.triu(rng.standard_normal((n_latent, n_latent))) + 2 * np.eye(
        n_latent
    )
    density = coupled_laplace(
        modes,
        theta_root,
        latent_root,
        np.linalg.inv(theta_root),
        np.linalg.inv(latent_root),
    )
    # The joint covariance implied: theta's, and nu | theta with the slope.
    cov_t = theta_root @ theta_root.T
    joint = np.block(
        [
            [cov_t, cov_t @ slope.T],
            [slope @ cov_t, slope @ cov_t @ slope.T + latent_root @ latent_root.T],
        ]
    )
    x = rng.standard_normal((4, n_theta + n_latent))
    expected = multivariate_normal(modes[0], joint).logpdf(x)
    np.testing.assert_allclose(density(x)[0], expected, rtol=1e-10)
    # At every particle's own mode the latents feel no pull.
    np.testing.assert_allclose(density(modes)[1][:, n_theta:], 0.0, atol=1e-10)


def _estimator():
    return SimpleNamespace(
        max_iter=100, tol="auto", n_particles=20, learning_rate="auto"
    )


OPTIONS = {"kernel": "rbf+linear", "step_control": "per_coordinate"}


def test_settling_on_the_target_itself_leaves_it_at_a_fixed_point():
    # With the surrogate equal to the target, the settled particles are
    # where SVGD on the target stops: its field there is within the run's
    # tolerance at once (two checks in a row make the rule, so one step).
    from skgp_bayes.inference import run_svgd

    rng = np.random.default_rng(3)
    root = np.array([[1.0, 0.0], [0.6, 0.8]])
    gaussian = GaussianMixtureDensity(np.array([[1.0, -2.0]]), [root])
    start = Start(
        np.array([1.0, -2.0]) + rng.standard_normal((20, 2)) @ root.T,
        preconditioner=root,
        surrogate=gaussian,
    )
    particles, evaluated = settle_on_surrogate(
        _estimator(), start, gaussian, None, OPTIONS, 30
    )
    np.testing.assert_array_equal(evaluated[0], gaussian(particles)[0])
    rerun = run_svgd(
        gaussian,
        particles,
        max_iter=100,
        learning_rate=0.5,
        tol=0.1 / np.sqrt(20),
        preconditioner=root,
        **OPTIONS,
    )
    assert rerun.history["field"][0] <= 0.1 / np.sqrt(20)
    assert rerun.converged and rerun.n_iter <= 1


def test_a_target_not_finite_at_the_settled_particles_keeps_the_draws():
    rng = np.random.default_rng(4)
    gaussian = GaussianMixtureDensity(np.zeros((1, 2)), [np.eye(2)])
    drawn = rng.standard_normal((20, 2))
    start = Start(drawn, preconditioner=np.eye(2), surrogate=gaussian)

    def broken(x):
        values, grads = gaussian(x)
        values[0] = np.nan
        return values, grads

    particles, evaluated = settle_on_surrogate(
        _estimator(), start, broken, None, OPTIONS, 30
    )
    assert particles is drawn and evaluated is None


@pytest.mark.parametrize(
    "start_options", [{"surrogate": None}, {"preconditioner": None}]
)
def test_no_surrogate_or_no_preconditioner_keeps_the_draws(start_options):
    gaussian = GaussianMixtureDensity(np.zeros((1, 2)), [np.eye(2)])
    options = {"preconditioner": np.eye(2), "surrogate": gaussian, **start_options}
    drawn = np.random.default_rng(5).standard_normal((20, 2))
    particles, evaluated = settle_on_surrogate(
        _estimator(), Start(drawn, **options), gaussian, None, OPTIONS, 30
    )
    assert particles is drawn and evaluated is None


def test_a_surrogate_run_the_engine_flags_keeps_the_draws_and_stays_quiet():
    # A surrogate 100 times narrower than the preconditioner says: every
    # step hits its cap, the engine would warn, and the draws stay.
    import warnings

    stiff = GaussianMixtureDensity(np.full((1, 2), 30.0), [0.01 * np.eye(2)])
    drawn = np.random.default_rng(6).standard_normal((20, 2))
    start = Start(drawn, preconditioner=np.eye(2), surrogate=stiff)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        particles, evaluated = settle_on_surrogate(
            _estimator(), start, stiff, None, OPTIONS, 30
        )
    assert particles is drawn and evaluated is None
