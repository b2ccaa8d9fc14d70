"""SteinGPClassifier's particles against exact posteriors: a grid and
importance sampling, at fixed hyperparameters."""

import numpy as np
import pytest
from scipy.special import expit, log_expit, log_ndtr, logsumexp, ndtr
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
)

from skgp_bayes import SteinGPClassifier
from skgp_bayes.inference import run_svgd

# The fits below stop at max_iter by design.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _grid_posterior(kernel, X, y, link, jitter=1e-6):
    """Posterior moments of f on a 401 x 401 grid in whitened coordinates.

    The grid spans +-8 prior standard deviations of nu with spacing 0.04;
    the posterior is narrower than the prior, so both the truncation and
    the Riemann-sum error are far below 1e-6 of the moments.
    """
    K = kernel(X)
    K[np.diag_indices_from(K)] += jitter * np.mean(np.diag(K))
    L = np.linalg.cholesky(K)
    g = np.linspace(-8, 8, 401)
    N = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    F = N @ L.T
    sign = 2.0 * y - 1.0
    logcdf = log_expit if link == "logit" else log_ndtr
    logp = logcdf(sign * F).sum(axis=1) - 0.5 * (N**2).sum(axis=1)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = w @ F
    cov = (F - mean).T @ ((F - mean) * w[:, None])
    return L, F, w, mean, cov


def _gaussian_svgd_spread(L, mean, cov, J, max_iter, seed):
    """Standard deviations SVGD reaches on the Gaussian with these moments.

    SVGD with J particles and the median bandwidth under-disperses even on
    a Gaussian target; this is the spread the same engine reaches on a
    Gaussian with the reference's exact mean and covariance (in whitened
    coordinates, from N(0, I) starts, preconditioned by that covariance as
    the classifier is by its Laplace approximation), the benchmark for the
    classifier.
    """
    nu_mean = np.linalg.solve(L, mean)
    nu_cov = np.linalg.solve(L, np.linalg.solve(L, cov).T)
    P = np.linalg.inv(nu_cov)

    def logp(x):
        d = x - nu_mean
        return -0.5 * np.einsum("ij,jk,ik->i", d, P, d), -d @ P

    start = np.random.default_rng(seed).standard_normal((J, 2))
    res = run_svgd(
        logp,
        start,
        max_iter=max_iter,
        learning_rate=0.5,
        tol=0,
        preconditioner=np.linalg.cholesky(nu_cov),
    )
    return np.std(res.particles @ L.T, axis=0)


@pytest.mark.statistical
@pytest.mark.parametrize("link", ["logit", "probit"])
def test_particles_match_grid_posterior(link, stat_seed):
    # Two training points at fixed hyperparameters: the particles live in
    # the 2-D space of nu, where the posterior is computed on a grid.
    X = np.array([[-0.5], [0.5]])
    y = np.array([0, 1])
    kernel = ConstantKernel(4.0, "fixed") * RBF(1.0, "fixed")
    J, n_iter = 40, 500
    clf = SteinGPClassifier(
        kernel,
        link=link,
        n_particles=J,
        max_iter=n_iter,
        tol=0.0,
        normalize_X=False,  # the reference's kernel sees the raw inputs
        random_state=stat_seed,
    ).fit(X, y)
    assert clf.particles_.shape == (J, 2)
    L, F, w, mean, cov = _grid_posterior(kernel, X, y.astype(float), link)
    f = clf.particles_ @ L.T
    sd = np.sqrt(np.diag(cov))
    # Mean: an i.i.d. sample of 40 would be off by 1/sqrt(40) = 0.16 sd;
    # SVGD's deterministic particles do far better, and their error is
    # almost all the method's bias at 40 particles: with Adam steps, over
    # seeds 0-9 the largest coordinate error was 0.0030-0.0051 sd (logit)
    # and 0.0186-0.0212 sd (probit), seed-to-seed sd 0.0007 and 0.0008;
    # with the Laplace-preconditioned steps (500 iterations), over seeds
    # 0-9, 0.0018-0.0036 sd and 0.0189-0.0201 sd, seed-to-seed sd 0.0005
    # and 0.0004. The
    # probit bias is SVGD's, not the target's: the same engine on an
    # independent scipy implementation of the probit posterior, from N(0, I)
    # starts, is off by 0.019 sd too, and by 0.0075 sd with 160 particles.
    # Bound: the largest bias seen plus 5 seed-to-seed sds, rounded up
    # (false failure below 1e-6 per seed if the spread is Gaussian). For
    # logit it still fails for a likelihood gradient off by 10%, which moves
    # the posterior mean by about 0.03 sd here; for probit the bias of 40
    # particles is of that size, so its check is coarser.
    mean_bound = {"logit": 0.01, "probit": 0.03}[link] * sd.min()
    np.testing.assert_allclose(f.mean(axis=0), mean, atol=mean_bound)
    # Spread: SVGD under-disperses with few particles even on a Gaussian
    # (about 8% in sd here, a bias of the method); the particles must reach
    # the spread the same engine reaches on the Gaussian with the exact
    # moments, to within 5% of the reference sd (over seeds 0-9 the shortfall
    # was at most 2.1%, mean 1.6%, sd 0.3% (logit; probit 1.6%, 1.0%, 0.3%):
    # 5% is over 10 sds beyond the mean), and must not over-disperse
    # (largest ratio seen 0.913).
    spread = np.std(f, axis=0)
    gaussian = _gaussian_svgd_spread(L, mean, cov, J, n_iter, stat_seed)
    assert np.all(spread >= gaussian - 0.05 * sd), (spread, gaussian, sd)
    assert np.all(spread <= 1.02 * sd), (spread, sd)
    # correlation error over seeds 0-9: at most 0.010 (logit), 0.002 (probit)
    corr = np.corrcoef(f.T)[0, 1]
    assert corr == pytest.approx(cov[0, 1] / sd.prod(), abs=0.05)

    # Predictive at a new point by quadrature: f* | f is Gaussian with the
    # kriging mean and variance; its likelihood average is taken with a
    # 40-node Gauss-Hermite rule on every grid point.
    xq = np.array([[0.1]])
    ks = kernel(xq, X)[0]
    a = np.linalg.solve(L.T, np.linalg.solve(L, ks))
    m_star = F @ a
    v_star = kernel(xq)[0, 0] - ks @ a
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    cdf = expit if link == "logit" else ndtr
    p_given_f = cdf(m_star[:, None] + np.sqrt(v_star) * nodes) @ weights
    p_ref = w @ p_given_f / weights.sum()
    # The predictive is a smooth average over the posterior, moved by the
    # particles' mean bias and spread deficit: over seeds 0-9 its error was
    # at most 0.0012 (seed-to-seed sd 0.0003), so 0.005 is the largest plus
    # 10 sds. The latent mean at xq is a linear function of the particles,
    # whose error the mean bound above covers (0.005 sd at most seen).
    assert clf.predict_proba(xq)[0, 1] == pytest.approx(p_ref, abs=0.005)
    mean_q, var_q = clf.latent_mean_and_variance(xq)
    assert mean_q[0] == pytest.approx(w @ m_star, abs=mean_bound)


@pytest.mark.slow
@pytest.mark.statistical
def test_softmax_particles_match_importance_sampling_reference(stat_seed):
    # Three points, three classes, fixed hyperparameters: 9 whitened latents.
    # Reference by self-normalised importance sampling from the prior
    # (2e6 draws, effective sample size above 4e5): the reference means
    # carry a Monte Carlo error of 1 / sqrt(4e5) = 0.0016 sd.
    X = np.array([[-1.0], [0.0], [1.0]])
    y = np.array([0, 1, 2])
    kernel = ConstantKernel(2.0, "fixed") * RBF(1.0, "fixed")
    K = kernel(X)
    K[np.diag_indices_from(K)] += 1e-6 * np.mean(np.diag(K))
    L = np.linalg.cholesky(K)
    rng = np.random.default_rng(stat_seed)
    total, m1, m2 = 0.0, 0.0, 0.0
    for _ in range(10):
        nu = rng.standard_normal((200_000, 3, 3))  # (draw, class, point)
        F = np.einsum("ij,scj->sic", L, nu)  # (draw, point, class)
        logw = (F[:, np.arange(3), y] - logsumexp(F, axis=2)).sum(axis=1)
        w = np.exp(logw)
        flat = F.reshape(F.shape[0], -1)
        total += w.sum()
        m1 = m1 + w @ flat
        m2 = m2 + (flat * w[:, None]).T @ flat
    mean = m1 / total
    sd = np.sqrt(np.diag(m2 / total) - mean**2)

    J = 30
    clf = SteinGPClassifier(
        kernel,
        n_particles=J,
        max_iter=150,
        learning_rate=0.05,
        tol=0.0,
        normalize_X=False,  # the reference's kernel sees the raw inputs
        random_state=stat_seed,
    ).fit(X, y)
    F = np.array([clf._target.latent(p) for p in clf.particles_]).reshape(J, -1)
    # Mean: an i.i.d. sample of 30 has standard error 0.18 sd; the particles'
    # error is almost all SVGD's bias: over seeds 0-9 (particles and
    # reference) the largest coordinate error was 0.009-0.025 sd (0.034-0.037
    # with the RBF kernel alone), and the reference adds 0.0016 sd. Bound:
    # the largest bias plus 5 standard errors of both, rounded up to 0.06 sd.
    mean_bound = 0.06 * sd.min()
    np.testing.assert_allclose(F.mean(axis=0), mean, atol=mean_bound)
    # Spread: in 9 dimensions 30 SVGD particles with the joint RBF kernel
    # under-disperse to about half the sd (0.476-0.542 over seeds 0-9); the
    # linear kernel added to it (choose_kernel) keeps 0.797-0.935, the
    # smallest of the 9 ratios varying by sd 0.02 between seeds and the
    # largest by 0.012. The bounds 0.7 and 1.0 are those extremes widened by
    # five of their sds: the collapse fails, as does a spread wider than
    # the posterior's.
    ratio = F.std(axis=0) / sd
    assert np.all(ratio < 1.0) and np.all(ratio > 0.7), ratio
    mean_lat, _ = clf.latent_mean_and_variance(X)
    np.testing.assert_allclose(mean_lat.ravel(), mean, atol=mean_bound)
