"""Checks, projections and their reverse pass, and likelihood terms shared by
the sparse whitened target, the SVGP bound and the selective bounds."""

import numpy as np

from ..likelihoods import Gaussian
from ..linalg import cholesky, inverse_congruence, triangular_solve
from ..linalg._numba_ops import flush_tiny
from ..linalg.diagonal import add_to_diagonal

_LOG_2PI = float(np.log(2.0 * np.pi))

# Floor of the conditional variance gamma (see the notes on the clamp in
# targets/sparse.py).
MIN_VAR = 1e-200


def check_inputs(adapter, X, y, Z, likelihood):
    """Validated float64 copies of ``X`` and ``Z``, ``y`` and ``n_latent``."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    if X.ndim != 2 or Z.ndim != 2:
        raise ValueError("X and Z must be 2-D arrays.")
    if X.shape[1] != Z.shape[1]:
        raise ValueError(
            f"X has {X.shape[1]} features and Z has {Z.shape[1]}; they must match."
        )
    if Z.shape[0] < 1:
        raise ValueError("Z must hold at least one inducing input.")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},); got {y.shape}.")
    n_latent = int(getattr(likelihood, "n_latent", 1))
    return X, y, Z, n_latent


def noise_is_free(likelihood, learn_noise):
    is_gaussian = isinstance(likelihood, Gaussian)
    if learn_noise is None:
        return is_gaussian
    if learn_noise and not is_gaussian:
        raise ValueError(
            "learn_noise=True needs a Gaussian likelihood; got "
            f"{type(likelihood).__name__}."
        )
    return bool(learn_noise)


def check_prior(prior_set, n_hyper):
    entries = getattr(prior_set, "entry_priors", None)
    if entries is not None and len(entries) != n_hyper:
        raise ValueError(
            f"prior_set covers {len(entries)} entries; the hyperparameter "
            f"vector [kernel theta, (log noise)] has {n_hyper}."
        )


def check_jitter(jitter):
    jitter = float(jitter)
    if not np.isfinite(jitter) or jitter < 0:
        raise ValueError(f"jitter must be a non-negative number; got {jitter!r}.")
    return jitter


def check_offset(offset, n):
    if offset is None:
        return None
    offset = np.asarray(offset, dtype=np.float64).reshape(-1)
    if offset.shape != (n,):
        raise ValueError(f"offset must have shape ({n},); got {offset.shape}.")
    if not np.all(np.isfinite(offset)):
        raise ValueError("offset must be finite.")
    return offset


def batch_indices(batch, n):
    """Index array and the unbiasedness factor ``n / |B|``."""
    if batch is None:
        return None, 1.0
    idx = np.asarray(batch)
    if idx.dtype == bool:
        raise TypeError("batch must be an integer index array, not a mask.")
    idx = idx.astype(np.intp, copy=False).reshape(-1)
    if idx.size == 0:
        raise ValueError("batch must hold at least one index.")
    if idx.min() < -n or idx.max() >= n:
        raise IndexError(f"batch indices must lie in [0, {n}).")
    return idx, n / idx.size


def inducing_factor(adapter, theta, Z, jitter, context=None):
    """Lower Cholesky factor ``R`` of ``K(Z, Z) + jitter * mean(diag) * I``."""
    return factor_of_gram(adapter.gram(theta, Z), jitter, context)


def jittered_gram(Kuu, jitter):
    """``K(Z, Z)`` as the sparse targets factorise it, in place: entries
    below ``linalg._numba_ops.TINY`` zeroed, ``jitter * mean(diag)`` added to
    the diagonal."""
    flush_tiny(Kuu)
    add_to_diagonal(Kuu, jitter * float(np.mean(np.diagonal(Kuu))))
    return Kuu


def factor_of_gram(Kuu, jitter, context=None):
    """:func:`inducing_factor` from ``K(Z, Z)`` itself (overwritten)."""
    # No jitter ladder: escalating jitter would make the target jump.
    R, _ = cholesky(
        jittered_gram(Kuu, jitter), max_tries=0, warn=False, context=context
    )
    return R


def project(adapter, theta, Z, X, R):
    """``A = R^-1 K(Z, X)``, the clamped ``gamma`` and the clamp's mask."""
    return project_cross(adapter.cross(theta, Z, X), adapter.diag(theta, X), R)


def project_cross(Kuf, kdiag, R):
    """:func:`project` from ``K(Z, X)`` (overwritten) and ``diag K(X, X)``."""
    flush_tiny(Kuf)
    A = triangular_solve(R, Kuf)
    gamma = kdiag - np.einsum("ji,ji->i", A, A)
    free = gamma > MIN_VAR
    return A, np.where(free, gamma, MIN_VAR), free


def pullback(adapter, theta, Z, X, R, A, Abar, kdiag_bar, jitter, inputs=False):
    """Gradients in theta (and Z) of ``F`` given ``Abar = dF/dA``.

    Parameters
    ----------
    adapter : KernelAdapter
    theta : ndarray of shape (p,)
    Z : ndarray of shape (m, d)
    X : ndarray of shape (b, d)
    R : ndarray of shape (m, m)
        Lower Cholesky factor of the jittered ``K(Z, Z)``.
    A : ndarray of shape (m, b)
        ``R^-1 K(Z, X)``.
    Abar : ndarray of shape (m, b)
        ``dF/dA``.
    kdiag_bar : ndarray of shape (b,)
        ``dF/d diag K(X, X)``.
    jitter : float
        Relative jitter used to build ``R``.
    inputs : bool, default=False
        Also return the gradient in ``Z``.

    Returns
    -------
    grad_theta : ndarray of shape (p,)
    grad_Z : ndarray of shape (m, d), only if ``inputs``
    """
    Kuubar, Kufbar = kernel_weights(R, A, Abar)
    W_cross = np.ascontiguousarray(Kufbar.T)
    if adapter.n_params:
        W = with_jitter_weight(Kuubar, jitter)
        grad_theta = (
            adapter.grad_contract(theta, Z, W)
            + adapter.cross_grad_contract(theta, X, Z, W_cross)
            + adapter.diag_grad(theta, X).T @ kdiag_bar
        )
    else:
        grad_theta = np.zeros(0)
    if not inputs:
        return grad_theta
    grad_Z = adapter.grad_inputs_gram(theta, Z, Kuubar) + adapter.grad_inputs_cross(
        theta, X, Z, W_cross
    )
    return grad_theta, grad_Z


def kernel_weights(R, A, Abar):
    """``dF/dK(Z, Z)`` (before the jitter) and ``dF/dK(Z, X)`` from ``Abar``.

    ``A = R^-1 K_uf`` gives ``K_ufbar = R^-T Abar`` and ``Rbar = -K_ufbar
    A'``. Murray's reverse rule needs only the lower triangle of
    ``R' Rbar = -Abar A'``, so ``K_uubar = R^-T sym(Phi(-Abar A')) R^-1``,
    whose inner matrix has the lower triangle ``-Abar A' / 2``: one
    product and one congruence, without the triangular product and second
    solve of :func:`~skgp_bayes.linalg.cholesky_reverse`.
    """
    Kufbar = triangular_solve(R, Abar, trans=True)
    Kuubar = inverse_congruence(R, -0.5 * (Abar @ A.T), overwrite=True)
    return Kuubar, Kufbar


def add_jitter_weight(W, jitter):
    """``dF/dK`` through a jitter of ``jitter * mean(diag K)`` too, in place.

    ``d delta = jitter / m * tr(dK)``, so every diagonal weight of the
    ``m x m`` ``W`` gains ``jitter / m * tr(W)``. Returns nothing.
    """
    add_to_diagonal(W, jitter / W.shape[0] * np.trace(W))


def with_jitter_weight(Kuubar, jitter):
    """``dF/dK(Z, Z)`` through the jitter too, ``jitter * mean(diag)`` (a copy)."""
    W = Kuubar.copy()
    add_jitter_weight(W, jitter)
    return W


def gaussian_with_noise(likelihood, log_noise):
    """A copy of a Gaussian likelihood with the given log noise variance."""
    params = likelihood.get_params()
    params["noise_variance"] = float(np.exp(log_noise))
    return type(likelihood)(**params)


def sparse_expected_log_prob(likelihood, y, mu, var, n_latent):
    """Per-point expected log density, latent arrays given as ``(b, C)``."""
    if n_latent == 1:
        return likelihood.expected_log_prob(y, mu[:, 0], var[:, 0])
    return likelihood.expected_log_prob(y, mu, var)


def likelihood_terms(likelihood, y, mu, var, n_latent, noise_free):
    """Expected log density and its gradients, latent arrays as ``(b, C)``.

    Returns ``elp`` (b,), ``d_mu`` and ``d_var`` (b, C) and the per-point
    derivative in the log noise (or None).
    """
    b = mu.shape[0]
    if n_latent == 1:
        elp, d_mu, d_var = likelihood.expected_log_prob(
            y, mu[:, 0], var[:, 0], grad=True
        )
    else:
        elp, d_mu, d_var = likelihood.expected_log_prob(y, mu, var, grad=True)
    d_noise = None
    if noise_free:
        d_noise = likelihood.grad_log_noise(y, mu[:, 0], var[:, 0])
    return (
        np.asarray(elp, dtype=np.float64),
        np.asarray(d_mu, dtype=np.float64).reshape(b, n_latent),
        np.asarray(d_var, dtype=np.float64).reshape(b, n_latent),
        d_noise,
    )


def gaussian_terms(y, f, gamma, free, log_noise, scale, grad):
    """Gaussian expected log likelihood, written out for the compiled path.

    ``y`` and the latent means ``f`` and variances ``gamma`` are ``(b,)``;
    ``free`` marks the variances not clamped. Returns ``(value, g_mu, gbar,
    d_noise_sum)`` as :meth:`SparseWhitenedTarget._data_terms`, the value
    alone (and three None) without ``grad``.
    """
    s2 = np.exp(log_noise)
    r = y - f
    sq = r * r + gamma
    value = scale * float(-0.5 * (y.size * (_LOG_2PI + log_noise) + np.sum(sq) / s2))
    if not grad:
        return value, None, None, None
    gbar = np.where(free, -0.5 * scale / s2, 0.0)
    d_noise = float(-0.5 * y.size + 0.5 * np.sum(sq) / s2)
    return value, (scale / s2) * r[:, None], gbar, d_noise


def poisson_terms(y, f, gamma, free, log_factorials, scale, grad):
    """Poisson ``y f - exp(f + gamma / 2) - log(y!)`` summed, and its derivatives.

    As :func:`gaussian_terms`, with ``log_factorials`` the sum of
    ``log(y!)`` over the points; there is no noise derivative.
    """
    mean_rate = np.exp(f + 0.5 * gamma)
    value = scale * float(y @ f - np.sum(mean_rate) - log_factorials)
    if not grad:
        return value, None, None, None
    g_mu = (scale * (y - mean_rate))[:, None]
    return value, g_mu, (-0.5 * scale) * mean_rate * free, None
