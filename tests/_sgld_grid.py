"""The one-input data of SGLDGPRegressor's tests, the posterior of its
three hyperparameters there by quadrature (the reference of its
statistical tests) and the check of a fit's draws against it, strong sinh
maps to force on its chains, and data whose posterior has two modes."""

import numpy as np


def one_input_data():
    """40 noisy points of a sine on [-3, 3]."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (40, 1))
    y = np.sin(X[:, 0]) + 0.3 * rng.randn(40)
    return X, y


def strong_maps(kept):
    """Sinh maps of every coordinate of the draws ``kept`` (n_chains,
    n_draws, d): skews of both signs and rates that bend +-2 sd by a
    factor 3-7, whatever the draws look like."""
    from skgp_bayes.inference.marginal_maps import SinhMaps

    x = kept.reshape(-1, kept.shape[2])
    k = x.shape[1]
    skew = np.resize([1.5, -1.5], k)
    return SinhMaps(x.mean(axis=0), x.std(axis=0), skew, np.full(k, 0.8))


def grid_posterior(
    X, y, ranges, size=24, length_scale_prior="gamma", signal_prior="gamma"
):
    """Posterior mean and sd of (log c, log ell, log s2) for c RBF(ell) + s2 I
    with Gamma(1, 2) priors, by quadrature on a grid; plain NumPy, batched
    Cholesky factorisations, nothing from the library.

    ``length_scale_prior="default"`` puts the estimators' default on ell
    instead, ``log ell ~ N(1, 1)`` in one dimension (inputs standardised);
    ``signal_prior="default"`` the regressors' default on c, a half-Cauchy
    standard deviation of scale 1 (``p(log c)`` proportional to
    ``sqrt(c) / (1 + c)``).
    """
    axes = [np.linspace(lo, hi, size) for lo, hi in ranges]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    d2 = (X[:, None, 0] - X[None, :, 0]) ** 2
    n = y.shape[0]
    logp = np.empty(grid.shape[0])
    for s in range(0, grid.shape[0], 2000):
        P = grid[s : s + 2000]
        c, ell, s2 = np.exp(P.T)
        K = c[:, None, None] * np.exp(-0.5 * d2[None] / ell[:, None, None] ** 2)
        K = K + s2[:, None, None] * np.eye(n)
        L = np.linalg.cholesky(K)
        z = np.linalg.solve(L, np.broadcast_to(y, (P.shape[0], n))[..., None])[..., 0]
        loglik = -0.5 * np.sum(z * z, 1) - np.sum(
            np.log(np.diagonal(L, axis1=1, axis2=2)), 1
        )
        log_prior = -np.exp(P) / 2 + P
        if length_scale_prior == "default":
            log_prior[:, 1] = -0.5 * (P[:, 1] - 1.0) ** 2
        if signal_prior == "default":
            log_prior[:, 0] = 0.5 * P[:, 0] - np.logaddexp(0.0, P[:, 0])
        logp[s : s + 2000] = loglik + np.sum(log_prior, 1)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    marginals = [
        w.reshape((size,) * 3).sum(axis=tuple(k for k in range(3) if k != i))
        for i in range(3)
    ]
    mean = w @ grid
    return mean, np.sqrt(w @ (grid - mean) ** 2), marginals


def assert_draws_match_quadrature(reg, X, y):
    """The kept draws of an SGLDGPRegressor fit of :func:`one_input_data`
    against the quadrature posterior (default length-scale prior).

    Standard errors from the chains' own bulk ESS; 5 of them on 3 means and
    3 sds: 3e-6 false failures for Gaussian errors, below 1e-4 with a 10%
    error in the estimated ESS. Returns the quadrature's marginals.
    """
    ys = (y - y.mean()) / y.std()
    Xs = (X - X.mean()) / X.std()  # the model's units (normalize_X=True)
    ranges = [(-2.5, 6.5), (-1.9, 1.1), (-3.2, -0.3)]
    mean, sd, marginals = grid_posterior(
        Xs, ys, ranges, size=28, length_scale_prior="default", signal_prior="default"
    )
    draws = reg.samples_.reshape(-1, 3)
    se_mean = 1.0 / np.sqrt(reg.ess_)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean) / sd, 5 * se_mean)
    se_sd = np.sqrt(1.0 / (2 * reg.ess_))
    np.testing.assert_array_less(np.abs(draws.std(axis=0) / sd - 1.0), 5 * se_sd)
    return mean, sd, marginals


def one_short_input(seed=1, n=60):
    """Three inputs, the skewed third mattering at a short scale. On seed 1
    the posterior has two modes of similar height: that input's length
    scale short (0.12) or long (7.8)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.normal(size=n), rng.normal(size=n), np.exp(1.5 * rng.normal(size=n))]
    )
    y = 0.5 * X[:, 0] + np.sin(4 * np.log(X[:, 2])) + 0.3 * rng.normal(size=n)
    return X, y


def fail_run_length_checks(monkeypatch, never_mixed=False):
    """SGLDGPRegressor's first run-length check fails (every check with
    ``never_mixed``), whatever the chains' draws, so that a refinement of
    the chains can be forced after the first block."""
    from skgp_bayes import _sgld_chains

    checks = {"n": 0}
    mixed = _sgld_chains.mixed

    def first_check_fails(rhat, ess):
        checks["n"] += 1
        return False if never_mixed or checks["n"] == 1 else mixed(rhat, ess)

    monkeypatch.setattr(_sgld_chains, "mixed", first_check_fails)
