"""The one-input data of SGLDGPRegressor's tests, the posterior of its
three hyperparameters there by quadrature (the reference of its
statistical tests), and strong sinh maps to force on its chains."""

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


def grid_posterior(X, y, ranges, size=24, length_scale_prior="gamma"):
    """Posterior mean and sd of (log c, log ell, log s2) for c RBF(ell) + s2 I
    with Gamma(1, 2) priors, by quadrature on a grid; plain NumPy, batched
    Cholesky factorisations, nothing from the library.

    ``length_scale_prior="default"`` puts the estimators' default on ell
    instead, ``log ell ~ N(1, 1)`` in one dimension (inputs standardised).
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
        logp[s : s + 2000] = loglik + np.sum(log_prior, 1)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    marginals = [
        w.reshape((size,) * 3).sum(axis=tuple(k for k in range(3) if k != i))
        for i in range(3)
    ]
    mean = w @ grid
    return mean, np.sqrt(w @ (grid - mean) ** 2), marginals
