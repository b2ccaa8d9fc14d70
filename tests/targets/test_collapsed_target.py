"""Collapsed target of the Gaussian-likelihood variational MCMC, and its sampler."""

import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from skgp_bayes import VariationalMCMCRegressor
from skgp_bayes._defaults import merged_priors
from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.exceptions import SamplerWarning
from skgp_bayes.kernels import KernelAdapter
from skgp_bayes.likelihoods import Gaussian
from skgp_bayes.priors import PriorSet
from skgp_bayes.targets.collapsed import CollapsedSparseTarget
from skgp_bayes.targets.selective import SubsetBound
from skgp_bayes.targets.sparse import SparseWhitenedTarget

KERNELS = [
    ConstantKernel(1.3) * RBF([0.8, 1.4]),
    ConstantKernel(0.7) * Matern([1.0, 0.6], nu=1.5) + WhiteKernel(0.05),
    ConstantKernel(1.1) * Matern(0.9, nu=2.5),
    RBF(1.2),
    RationalQuadratic(length_scale=0.9, alpha=1.5),  # no compiled path
]


def _problem(n=40, m=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=n)
    return X, y, X[:m] + 0.05 * rng.normal(size=(m, 2))


def _with_prior(adapter):
    slices = dict(adapter.hyperparameter_slices)
    slices["noise_variance"] = slice(adapter.n_params, adapter.n_params + 1)
    return PriorSet(slices, merged_priors(None, slices, 2))


def _params(kernel):
    return np.append(kernel.theta + 0.1, np.log(0.07))


def _central_differences(func, params, h=1e-6):
    steps = h * np.eye(params.size)
    return np.array([(func(params + e) - func(params - e)) / (2 * h) for e in steps])


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: type(k).__name__)
def test_gradient_matches_finite_differences(kernel):
    X, y, Z = _problem()
    adapter = KernelAdapter(kernel)
    target = CollapsedSparseTarget(adapter, X, y, Z, _with_prior(adapter))
    params = _params(kernel)
    _, grad = target.logp_and_grad(params)
    fd = _central_differences(target.log_prob, params)
    # central differences with h = 1e-6 on values of order 1e2: truncation
    # O(h^2) and round-off O(1e-16 * 1e2 / h) = 1e-8, far below 1e-5
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", KERNELS[:3], ids=lambda k: type(k).__name__)
def test_inducing_input_gradient_matches_finite_differences(kernel):
    X, y, Z = _problem()
    adapter = KernelAdapter(kernel)
    target = CollapsedSparseTarget(adapter, X, y, Z, learn_inducing=True)
    params = np.concatenate([_params(kernel), Z.ravel()])
    _, grad = target.logp_and_grad(params)
    fd = _central_differences(target.log_prob, params)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", KERNELS[:4], ids=lambda k: type(k).__name__)
def test_compiled_and_numpy_paths_agree_and_clamp(kernel):
    # The compiled call maps theta to the kernel's scales and the gradient
    # back itself: ARD and isotropic length scales, with and without a
    # constant and a white-noise term, must match the NumPy path.
    X, y, _ = _problem()
    adapter = KernelAdapter(kernel)
    # inducing inputs on data points: rounding clamps some gamma_i
    for Z in (X[:7] + 0.01, X[:7].copy()):
        target = CollapsedSparseTarget(adapter, X, y, Z)
        params = _params(adapter.kernel)
        assert target._compiled
        v1, g1 = target.logp_and_grad(params)
        v2, g2 = target._value_and_grad(params)
        assert v1 == pytest.approx(v2, rel=1e-12, abs=1e-10)
        np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kernel", KERNELS[:4], ids=lambda k: type(k).__name__)
def test_compiled_inducing_gradient_agrees_with_the_adapter_s(kernel):
    # Learned inducing inputs: the compiled call takes the gradient in Z
    # from its contractions; the NumPy path from the adapter's
    # grad_inputs_gram and grad_inputs_cross. Clamped points included.
    X, y, _ = _problem()
    adapter = KernelAdapter(kernel)
    for Z in (X[:7] + 0.01, X[:7].copy()):
        target = CollapsedSparseTarget(adapter, X, y, Z, learn_inducing=True)
        params = np.concatenate([_params(adapter.kernel), Z.ravel()])
        assert target._compiled
        v1, g1 = target.logp_and_grad(params)
        v2, g2 = target._value_and_grad(params)
        assert v1 == pytest.approx(v2, rel=1e-12, abs=1e-10)
        np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-9)


def test_compiled_path_with_lapack_solves_agrees_with_numpy():
    # From _sparse_numba.LAPACK_MIN_INDUCING (80) inducing inputs the
    # compiled bound factorises and solves with LAPACK and BLAS. 100 inputs
    # near the data in 2 dimensions leave K(Z, Z) with a condition number
    # near m / jitter = 1e8, so two correct orders of the same arithmetic
    # agree to about 1e8 x machine epsilon = 1e-8 relative.
    from skgp_bayes.targets._sparse_numba import LAPACK_MIN_INDUCING

    X, y, Z = _problem(n=160, m=100)
    assert Z.shape[0] >= LAPACK_MIN_INDUCING
    adapter = KernelAdapter(ConstantKernel(1.3) * RBF([0.8, 1.4]))
    target = CollapsedSparseTarget(adapter, X, y, Z)
    assert target._compiled
    params = _params(adapter.kernel)
    v1, g1 = target.logp_and_grad(params)
    v2, g2 = target._value_and_grad(params)
    assert v1 == pytest.approx(v2, rel=1e-8)
    np.testing.assert_allclose(g1, g2, rtol=1e-6, atol=1e-6 * np.abs(g2).max())


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: type(k).__name__)
def test_value_is_the_joint_target_with_v_integrated_out(kernel):
    # psi(theta, v) = psi(theta) N(v | mean, cov) exactly, so for any v the
    # joint log density minus the conditional's is the collapsed value, up
    # to the normaliser of N(v | 0, I) that the joint target leaves out.
    X, y, Z = _problem()
    adapter = KernelAdapter(kernel)
    prior = _with_prior(adapter)
    collapsed = CollapsedSparseTarget(adapter, X, y, Z, prior)
    joint = SparseWhitenedTarget(adapter, X, y, Z, Gaussian(0.1), prior)
    params = _params(kernel)
    mean, factor = collapsed.conditional(params)
    conditional = multivariate_normal(mean, factor @ factor.T)
    m = Z.shape[0]
    rng = np.random.default_rng(0)
    for v in (mean, mean + rng.normal(size=m), rng.normal(size=m)):
        joint_value = joint.log_prob(np.concatenate([params, v]))
        marginal = joint_value - conditional.logpdf(v) - 0.5 * m * np.log(2 * np.pi)
        assert marginal == pytest.approx(collapsed.log_prob(params), abs=1e-8)
    # and it is Titsias' bound: the SVGP bound at its optimal q(v)
    titsias = SubsetBound(adapter, X, y, Z).value(params, np.arange(m))
    prior_value = prior.log_prob(params)[0]
    assert collapsed.log_prob(params) == pytest.approx(titsias + prior_value, abs=1e-8)


def test_trace_term_vanishes_when_the_inducing_inputs_are_the_data():
    X, y, Z = _problem()
    adapter = KernelAdapter(ConstantKernel(1.3) * RBF([0.8, 1.4]))
    params = _params(adapter.kernel)
    full = CollapsedSparseTarget(adapter, X, y, X).trace_term(params)
    sparse = CollapsedSparseTarget(adapter, X, y, Z).trace_term(params)
    # only the relative jitter 1e-6 on K(X, X) is left unexplained
    assert full < 1e-3 < sparse


@pytest.mark.statistical
def test_conditional_draws_have_the_conditional_moments(stat_seed):
    X, y, Z = _problem()
    adapter = KernelAdapter(ConstantKernel(1.3) * RBF([0.8, 1.4]))
    target = CollapsedSparseTarget(adapter, X, y, Z)
    params = _params(adapter.kernel)
    mean, factor = target.conditional(params)
    n_draws = 4000
    v = target.sample_v(np.tile(params, (n_draws, 1)), np.random.default_rng(stat_seed))
    sd = np.sqrt(np.sum(factor**2, axis=1))
    # independent draws: the mean of each of the 7 entries has standard
    # error sd / sqrt(4000); 5 of them, 7 * 5.7e-7 = 4e-6 false failures
    np.testing.assert_array_less(np.abs(v.mean(0) - mean), 5 * sd / np.sqrt(n_draws))
    # the variance of a normal sample has standard error var sqrt(2 / N)
    np.testing.assert_array_less(
        np.abs(v.var(0) - sd**2), 5 * sd**2 * np.sqrt(2 / n_draws)
    )


def _grid_reference(target, log_ell, log_s2):
    """Posterior moments of [log ell, log s2] and v by quadrature on a grid.

    The collapsed density is the exact marginal of the joint target, and
    ``v | theta`` is Gaussian, so ``E[v] = E[mean(theta)]`` and ``E[v^2] =
    E[mean^2 + var]`` over the grid weights.
    """
    grid = np.array([[a, b] for a in log_ell for b in log_s2])
    logp = np.array([target.log_prob(p) for p in grid])
    w = np.exp(logp - logp.max())
    w /= w.sum()
    # moments of v only where the weight counts (1e-14 of the largest)
    keep = w > 1e-14 * w.max()
    means = np.zeros((grid.shape[0], target.n_inducing))
    variances = np.zeros_like(means)
    for i in np.flatnonzero(keep):
        mu, factor = target.conditional(grid[i])
        means[i], variances[i] = mu, np.sum(factor**2, axis=1)
    theta_mean = w @ grid
    theta_var = w @ (grid - theta_mean) ** 2
    v_mean = w @ means
    v_var = w @ (variances + means**2) - v_mean**2
    w2 = w.reshape(len(log_ell), len(log_s2))
    edge = max(w2[[0, -1]].max(), w2[:, [0, -1]].max())
    return theta_mean, theta_var, v_mean, v_var, edge


@pytest.mark.statistical
def test_collapsed_sampler_matches_the_exact_joint_posterior(stat_seed):
    # A fixed signal variance and given inducing inputs leave [log ell,
    # log s2]: the exact posterior of (theta, v) follows by quadrature of
    # the collapsed density (the exact marginal, see the test above) with
    # the Gaussian v | theta. The estimator's draws (HMC on theta, exact v)
    # must match its means and variances within Monte Carlo error.
    rng = np.random.default_rng(10 + stat_seed)
    # 40 points pin the length-scale down. With 25, one data set in five
    # (8 of seeds 0-39) gave the posterior a shoulder at long length-scales
    # (a smoother fit with more noise) holding 0.5-2% of the mass behind a
    # trough; four chains of 700 steps rarely cross it, and an effective
    # sample size from within-region autocorrelation cannot see that, so the
    # Monte Carlo bounds below would not hold. With 40 points none of seeds
    # 0-99 puts more than 0.1% of the mass beyond 0.8 above the mode.
    n = 40
    X = np.sort(rng.uniform(-2, 2, n))[:, None]
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n)
    Z = np.linspace(-2, 2, 5)[:, None]
    kernel = ConstantKernel(1.0, "fixed") * RBF(0.7)
    reg = VariationalMCMCRegressor(
        kernel,
        inducing_points=Z,
        optimize_inducing=False,
        normalize_X=False,
        n_chains=4,
        n_warmup=200,
        n_samples=500,
        max_samples=500,
        random_state=stat_seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        reg.fit(X, y)
    assert reg.diagnostics_["collapsed"]
    adapter = KernelAdapter(kernel)
    target = CollapsedSparseTarget(
        adapter, X, (y - reg.y_mean_) / reg.y_std_, Z, _with_prior(adapter)
    )
    theta_mean, theta_var, v_mean, v_var, edge = _grid_reference(
        target, np.linspace(-3.0, 8.0, 221), np.linspace(-5.0, 2.5, 151)
    )
    assert edge < 1e-8  # the grid holds the posterior
    draws = reg.draws_
    chains = draws.reshape(4, -1, draws.shape[1])
    n_draws = draws.shape[0]
    ess = np.minimum(effective_sample_size(chains), n_draws)
    mean = draws.mean(0)
    ref_mean = np.concatenate([theta_mean, v_mean])
    ref_var = np.concatenate([theta_var, v_var])
    # 2 hyperparameters and 5 inducing values, mean and variance each: 14
    # checks at 5 standard errors, 14 * 5.7e-7 = 8e-6 false failures for
    # normal errors (the variance's error sd sqrt(2 / ESS_sq) var holds for
    # near-normal marginals; log-scale hyperparameters and v are close).
    # ESS_sq is that of the squared deviations: HMC's draws can be
    # antithetic in x and not in x^2, whose ESS is then the smaller.
    ess_sq = np.minimum(effective_sample_size((chains - ref_mean) ** 2), n_draws)
    np.testing.assert_array_less(np.abs(mean - ref_mean), 5 * np.sqrt(ref_var / ess))
    np.testing.assert_array_less(
        np.abs(draws.var(0) - ref_var), 5 * ref_var * np.sqrt(2 / ess_sq)
    )
    # and a sampler that ignored v's spread (v at its conditional mean)
    # would be caught by the variance check
    means_only = np.array([target.conditional(d[:2])[0] for d in draws[::10]])
    assert np.any(
        means_only.var(0) < ref_var[2:] - 5 * ref_var[2:] * np.sqrt(2 / ess_sq[2:])
    )
