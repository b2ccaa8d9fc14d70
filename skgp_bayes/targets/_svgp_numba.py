"""The SVGP bound's logit and softmax terms, and the whole bound, compiled.

:meth:`~skgp_bayes.targets.svgp.SVGPBound._given_projection` for one
latent function and the logit link (:func:`logit_given_projection`), or
``C`` latent functions and the softmax (:func:`softmax_given_projection`):
from ``A = R^-1 K(Z, X)``, the clamped conditional variances and the
whitened ``q(u)``, the bound without the prior and its gradients in the
means, the packed factors (log diagonal), ``A`` and the diagonal of
``K(X, X)``, in one call. :func:`logit_bound` and :func:`softmax_bound` add
the kernel, the projection and the pullback to the hyperparameters, so that
a whole evaluation is one call. The logit expectation is
:func:`~skgp_bayes.targets._likelihood_numba.logit_expectation`, the rule
the sparse whitened target uses (Gauss-Hermite with the fewest nodes that
resolve each point's sd to 1e-12); the softmax's is the likelihood's fixed
draws.

Small problems are where this counts: a selection of inducing inputs
evaluates the bound of four subsets a step (150 steps on 48 rows, each
bound about 180 us in NumPy, most of it the interpreter), and the
variational MCMC classifier's first stage evaluates it a thousand times
on many-class data. A status other than ``DONE`` (a variance below the
likelihood's small-variance limit, a kernel matrix not positive definite)
hands the evaluation back to the interpreted version, which switches rule
or raises there.
"""

import math

import numpy as np
from numba import njit

from .._vector_exp import vector_exp, vector_log1p
from ..linalg._numba_ops import TINY
from ._likelihood_numba import (
    DONE,
    NOT_PSD,
    SMALL_VARIANCE,
    in_theta,
    logit_expectation,
)
from ._sparse_numba import (
    MIN_VAR,
    congruence_with_jitter_weight,
    inducing_projection,
    kernel_scales,
    lower_factor,
    lower_solve_into,
    pullback_from_abar,
    scaled,
)

__all__ = [
    "logit_bound",
    "logit_given_projection",
    "logit_subset_into",
    "softmax_bound",
    "softmax_given_projection",
    "softmax_subset_into",
]


@njit(cache=True, nogil=True)
def _kl(mean, L):
    """``KL(N(m, L L') || N(0, I))`` for ``m`` of size ``m``."""
    m = mean.size
    total = 0.0
    log_diag = 0.0
    for j in range(m):
        total += mean[j] * mean[j]
        log_diag += math.log(L[j, j])
        for k in range(j + 1):
            total += L[j, k] * L[j, k]
    return 0.5 * (total - m - 2.0 * log_diag)


@njit(cache=True, nogil=True)
def _packed_L_gradient(A, B, g_s, L, g_L, start):
    """``dF/dL = 2 (A diag(g_s)) B' - L`` into ``g_L[start:]``, packed.

    The lower triangle row by row, the diagonal in log units (``L_jj``
    times its entry, plus the KL term's 1).
    """
    m = L.shape[0]
    Lbar = (A * g_s) @ np.ascontiguousarray(B.T)
    t = start
    for r in range(m):
        for c in range(r + 1):
            entry = 2.0 * Lbar[r, c] - L[r, c]
            g_L[t] = entry * L[r, r] + 1.0 if r == c else entry
            t += 1


# Long because the docstring documents twelve parameters; the body is 45 lines.
@njit(cache=True, nogil=True)
def logit_given_projection(
    A, gamma, free, mean, L, y, scale, nodes, weights, counts, limits, small_var
):  # fmt: skip
    """``(ok, value, g_m, g_L, Abar, gbar)`` of the logit SVGP bound.

    Parameters
    ----------
    A : ndarray of shape (m, n)
        ``R^-1 K(Z, X)``.
    gamma : ndarray of shape (n,)
        Clamped conditional variances.
    free : ndarray of bool of shape (n,)
        The variances not clamped.
    mean : ndarray of shape (m,)
        ``q(u)``'s whitened mean.
    L : ndarray of shape (m, m)
        Its lower Cholesky factor (positive diagonal).
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    scale : float
        The minibatch factor of the data term.
    nodes, weights, counts, limits
        :func:`~skgp_bayes.targets._likelihood_numba.logit_rules`.
    small_var : float
        Below this latent variance the interpreted rule applies.

    Returns
    -------
    ok : bool
        False where a variance is below ``small_var`` (nothing else is
        then meaningful).
    value : float
        ``scale sum_i E[log sigmoid(s_i f_i)] - KL``.
    g_m : ndarray of shape (m,)
    g_L : ndarray of shape (m (m + 1) / 2,)
        In the packed lower triangle's row-major order, the diagonal in
        log units.
    Abar : ndarray of shape (m, n)
        ``dF/dA``.
    gbar : ndarray of shape (n,)
        ``dF/d diag K(X, X)`` (zero where clamped).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._likelihood_numba import logit_rules
    >>> from skgp_bayes.targets._svgp_numba import logit_given_projection
    >>> A = np.array([[0.5, -0.5]])
    >>> ok, value, g_m, g_L, Abar, gbar = logit_given_projection(
    ...     A, np.array([0.75, 0.75]), np.ones(2, dtype=bool), np.zeros(1),
    ...     np.eye(1), np.array([1.0, 0.0]), 1.0, *logit_rules(20), 1e-10)
    >>> ok, g_L.shape, Abar.shape
    (True, (1,), (1, 2))
    """
    m, n = A.shape
    B = np.ascontiguousarray(L.T) @ A
    mu = np.zeros(n)
    sd = np.empty(n)
    for j in range(m):
        for i in range(n):
            mu[i] += A[j, i] * mean[j]
    for i in range(n):
        var = gamma[i]
        for j in range(m):
            var += B[j, i] * B[j, i]
        if var < small_var:
            return False, 0.0, np.empty(0), np.empty(0), np.empty((0, 0)), np.empty(0)
        sd[i] = math.sqrt(var)
    elp, d_mu, d_var = logit_expectation(y, mu, sd, nodes, weights, counts, limits)
    data = 0.0
    g_s = np.empty(n)
    gbar = np.empty(n)
    for i in range(n):
        data += elp[i]
        d_mu[i] *= scale
        g_s[i] = scale * d_var[i]
        gbar[i] = g_s[i] if free[i] else 0.0
    value = scale * data - _kl(mean, L)
    g_m = A @ d_mu - mean
    # Abar = m g_mu' - 2 A diag(gbar) + 2 L (B diag(g_s))
    Bg = B * g_s
    Abar = L @ Bg
    for j in range(m):
        for i in range(n):
            Abar[j, i] = 2.0 * Abar[j, i] + mean[j] * d_mu[i] - 2.0 * A[j, i] * gbar[i]
    g_L = np.empty(m * (m + 1) // 2)
    _packed_L_gradient(A, B, g_s, L, g_L, 0)
    return True, value, g_m, g_L, Abar, gbar


# Long because the docstring documents its parameters; the body is 30 lines.
@njit(cache=True, nogil=True)
def logit_bound(
    X, Z, theta, phi_defaults, theta_index, base, jitter, mean, L, y, scale,
    nodes, weights, counts, limits, small_var, inputs, lapack, work,
):  # fmt: skip
    """The whole logit SVGP bound (no prior) and its gradients in one call.

    The kernel's ``K(Z, Z)``, its factor, ``K(Z, X)`` and the projection
    (:func:`~skgp_bayes.targets._sparse_numba.inducing_projection`), the
    terms given the projection (:func:`logit_given_projection`) and the
    pullback of ``dF/dA`` to the kernel's hyperparameters and, with
    ``inputs``, to the inducing inputs
    (:func:`~skgp_bayes.targets._sparse_numba.pullback_from_abar`): what
    :meth:`~skgp_bayes.targets.svgp.SVGPBound.logp_and_grad` does in
    NumPy between compiled calls, where the interpreter's share was most of
    an evaluation on tens of rows.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d)
    theta, phi_defaults, theta_index, base
        The kernel's log hyperparameters and its spec (see
        :func:`~skgp_bayes.targets._sparse_numba.kernel_scales`).
    jitter : float
        Relative jitter of ``K(Z, Z)``.
    mean, L, y, scale, nodes, weights, counts, limits, small_var
        As in :func:`logit_given_projection`.
    inputs : bool
        Also the gradient in ``Z``.
    lapack, work
        As in :func:`~skgp_bayes.targets._sparse_numba.forward`.

    Returns
    -------
    status : int
        ``DONE``; ``NOT_PSD`` (the jittered ``K(Z, Z)``) or
        ``SMALL_VARIANCE`` hand the evaluation back to NumPy, which raises
        or switches rule there. Nothing else is then meaningful.
    value : float
    g_theta : ndarray of shape (len(theta_index),)
    g_m : ndarray of shape (m,)
    g_L : ndarray of shape (m (m + 1) / 2,)
    g_Z : ndarray of shape (m, d), or (0, 0) without ``inputs``

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._likelihood_numba import DONE, logit_rules
    >>> from skgp_bayes.targets._sparse_numba import LAPACK
    >>> from skgp_bayes.targets._svgp_numba import logit_bound
    >>> X, Z = np.array([[0.0], [1.0], [2.0]]), np.array([[0.5], [1.5]])
    >>> out = logit_bound(
    ...     X, Z, np.zeros(1), np.array([0.0, 0.0, -np.inf]), np.array([1]), 0,
    ...     1e-6, np.zeros(2), np.eye(2), np.array([1.0, 0.0, 1.0]), 1.0,
    ...     *logit_rules(20), 1e-10, True, LAPACK, np.empty(0))
    >>> out[0] == DONE, out[2].shape, out[5].shape
    (True, (1,), (2, 1))
    """
    ok, kernel, A, gamma, free = _scaled_projection(
        X, Z, theta, phi_defaults, theta_index, base, jitter, lapack, work
    )
    if not ok:
        return (NOT_PSD,) + _no_outputs()
    terms = logit_given_projection(
        A, gamma, free, mean, L, y, scale, nodes, weights, counts, limits, small_var
    )
    return _pulled_back(terms, kernel, A, base, theta_index, jitter, inputs, lapack)


@njit(cache=True, nogil=True)
def softmax_bound(
    X, Z, theta, phi_defaults, theta_index, base, jitter, mean, Ls, labels, scale,
    eps, small_var, inputs, lapack, work,
):  # fmt: skip
    """The whole softmax SVGP bound (no prior) and its gradients in one call.

    :func:`logit_bound` with :func:`softmax_given_projection`'s terms: ``C``
    latent functions sharing one kernel, each with its own whitened
    ``q(u_c)``. A many-class bound on a hundred rows is a few hundred
    microseconds of arithmetic, about what the interpreter spent between
    the NumPy path's calls.

    Parameters
    ----------
    X, Z, theta, phi_defaults, theta_index, base, jitter
        As in :func:`logit_bound`.
    mean, Ls, labels, scale, eps, small_var
        As in :func:`softmax_given_projection`.
    inputs, lapack, work
        As in :func:`logit_bound`.

    Returns
    -------
    status : int
        As in :func:`logit_bound`.
    value : float
    g_theta : ndarray of shape (len(theta_index),)
    g_m : ndarray of shape (m * C,)
    g_L : ndarray of shape (C * m (m + 1) / 2,)
    g_Z : ndarray of shape (m, d), or (0, 0) without ``inputs``

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._likelihood_numba import DONE
    >>> from skgp_bayes.targets._sparse_numba import LAPACK
    >>> from skgp_bayes.targets._svgp_numba import softmax_bound
    >>> X, Z = np.array([[0.0], [1.0], [2.0]]), np.array([[0.5], [1.5]])
    >>> eps = np.random.default_rng(0).normal(size=(20, 3))
    >>> out = softmax_bound(
    ...     X, Z, np.zeros(1), np.array([0.0, 0.0, -np.inf]), np.array([1]), 0,
    ...     1e-6, np.zeros((2, 3)), np.stack([np.eye(2)] * 3), np.array([0, 2, 1]),
    ...     1.0, eps, 1e-10, False, LAPACK, np.empty(0))
    >>> out[0] == DONE, out[3].shape, out[4].shape
    (True, (6,), (9,))
    """
    ok, kernel, A, gamma, free = _scaled_projection(
        X, Z, theta, phi_defaults, theta_index, base, jitter, lapack, work
    )
    if not ok:
        return (NOT_PSD,) + _no_outputs()
    terms = softmax_given_projection(
        A, gamma, free, mean, Ls, labels, scale, eps, small_var
    )
    return _pulled_back(terms, kernel, A, base, theta_index, jitter, inputs, lapack)


@njit(cache=True, nogil=True)
def _scaled_projection(
    X, Z, theta, phi_defaults, theta_index, base, jitter, lapack, work
):
    """``(ok, kernel, A, gamma, free)`` of :func:`inducing_projection` on the
    kernel's scaled inputs; ``kernel`` holds what the pullback needs again."""
    variance, noise, inv_ell, ard = kernel_scales(
        theta, phi_defaults, theta_index, X.shape[1]
    )
    Xs = scaled(X, inv_ell)
    Zs = scaled(Z, inv_ell)
    ok, Kuu, R, Kuf, A, gamma, free = inducing_projection(
        Xs, Zs, variance, noise, base, jitter, lapack, work
    )
    kernel = (Xs, Zs, variance, noise, inv_ell, ard, Kuu, R, Kuf)
    return ok, kernel, A, gamma, free


@njit(cache=True, nogil=True)
def _no_outputs():
    """A whole-bound call's outputs after its status, when the status hands
    the evaluation back (nothing in them is meaningful)."""
    empty = np.empty(0)
    return 0.0, empty, empty, empty, np.empty((0, 0))


@njit(cache=True, nogil=True)
def _pulled_back(terms, kernel, A, base, theta_index, jitter, inputs, lapack):
    """A whole-bound call's outputs from the terms given the projection:
    ``dF/dtheta`` and, with ``inputs``, ``dF/dZ`` in the inputs' own units,
    from ``dF/dA`` and ``dF/d diag K(X, X)`` (:func:`pullback_from_abar`)."""
    ok, value, g_m, g_L, Abar, gbar = terms
    if not ok:
        return (SMALL_VARIANCE,) + _no_outputs()
    Xs, Zs, variance, noise, inv_ell, ard, Kuu, R, Kuf = kernel
    n_ls = inv_ell.size if ard else 1
    g_phi, g_Z = pullback_from_abar(
        Xs, Zs, variance, noise, base, ard, n_ls, jitter, R, A, Kuu, Kuf, Abar,
        gbar, inputs, lapack,
    )  # fmt: skip
    if inputs:
        for c in range(Zs.shape[1]):
            for j in range(Zs.shape[0]):
                g_Z[j, c] *= inv_ell[c]
    return DONE, value, in_theta(g_phi, theta_index), g_m, g_L, g_Z


@njit(cache=True, nogil=True)
def _subset_projection(Kcc, Kcf, kdiag, idx, jitter, lapack):
    """``(ok, R, A, gamma, free)`` of the inducing subset ``idx``.

    From the candidates' kernel matrices, as
    ``_sparse_shared.factor_of_gram`` and ``project_cross`` do: entries
    below ``TINY`` zeroed, ``jitter * mean(diag)`` on the diagonal.
    """
    k = idx.size
    n = Kcf.shape[1]
    R = np.empty((k, k))
    trace = 0.0
    for a in range(k):
        for b in range(k):
            value = Kcc[idx[a], idx[b]]
            R[a, b] = 0.0 if abs(value) < TINY else value
        trace += R[a, a]
    for a in range(k):
        R[a, a] += jitter * (trace / k)
    A = np.empty((k, n))
    gamma = np.empty(n)
    free = np.zeros(n, dtype=np.bool_)
    if not lower_factor(R, lapack):
        return False, R, A, gamma, free
    for a in range(k):
        for i in range(n):
            value = Kcf[idx[a], i]
            A[a, i] = 0.0 if abs(value) < TINY else value
    lower_solve_into(R, A, False, lapack)
    for i in range(n):
        s = kdiag[i]
        for a in range(k):
            s -= A[a, i] * A[a, i]
        free[i] = s > MIN_VAR
        gamma[i] = s if free[i] else MIN_VAR
    return True, R, A, gamma, free


# Long because the docstring documents its parameters; the body is 30 lines.
@njit(cache=True, nogil=True)
def logit_subset_into(
    Kcc, Kcf, kdiag, idx, jitter, mean, L, y, scale, nodes, weights, counts,
    limits, small_var, lapack, W_cc, W_cf, w_diag,
):  # fmt: skip
    """The logit SVGP bound of an inducing subset, its weights added in place.

    A selection of inducing inputs scores subsets of its candidates from
    kernel matrices computed once for all of them; per subset this does
    what ``SharedSubsetBound._accumulate`` does between NumPy calls: the
    factor of the subset's jittered ``K(Z, Z)``, the projection, the terms
    (:func:`logit_given_projection`) and ``dF/dK`` of the subset's entries
    (``K_ufbar = R^-T Abar``, ``K_uubar = R^-T S R^-1`` with ``S``'s lower
    triangle ``-Abar A' / 2``, plus the jitter's weight), added to the
    candidates' weights.

    Parameters
    ----------
    Kcc : ndarray of shape (K, K)
        The candidates' ``K(Z, Z)`` (WhiteKernel noise on the diagonal).
    Kcf : ndarray of shape (K, n)
        ``K(Z, X)``.
    kdiag : ndarray of shape (n,)
        ``diag K(X, X)``.
    idx : ndarray of int of shape (k,)
        The subset, sorted and distinct, not empty.
    jitter : float
        Relative jitter of ``K(Z, Z)``.
    mean, L, y, scale, nodes, weights, counts, limits, small_var
        As in :func:`logit_given_projection`, for the subset's ``q(u)``.
    lapack : tuple
        :data:`~skgp_bayes.targets._sparse_numba.LAPACK`.
    W_cc : ndarray of shape (K, K)
    W_cf : ndarray of shape (K, n)
    w_diag : ndarray of shape (n,)
        The candidates' weights, added to in place when the status is
        ``DONE`` and untouched otherwise.

    Returns
    -------
    status : int
        ``DONE``; ``NOT_PSD`` or ``SMALL_VARIANCE`` hand the subset back to
        NumPy, which raises or switches rule there.
    value : float
    g_m : ndarray of shape (k,)
    g_L : ndarray of shape (k (k + 1) / 2,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._likelihood_numba import DONE, logit_rules
    >>> from skgp_bayes.targets._sparse_numba import LAPACK
    >>> from skgp_bayes.targets._svgp_numba import logit_subset_into
    >>> x, z = np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5])
    >>> Kcc = np.exp(-0.5 * (z[:, None] - z) ** 2)
    >>> Kcf = np.exp(-0.5 * (z[:, None] - x) ** 2)
    >>> W_cc, W_cf, w_diag = np.zeros((2, 2)), np.zeros((2, 3)), np.zeros(3)
    >>> out = logit_subset_into(
    ...     Kcc, Kcf, np.ones(3), np.array([1]), 1e-6, np.full(1, 0.3),
    ...     np.full((1, 1), 0.5),
    ...     np.array([1.0, 0.0, 1.0]), 1.0, *logit_rules(20), 1e-10, LAPACK,
    ...     W_cc, W_cf, w_diag)
    >>> out[0] == DONE, bool(W_cc[0, 0] == 0.0 and W_cc[1, 1] != 0.0)
    (True, True)
    """
    empty = np.empty(0)
    ok, R, A, gamma, free = _subset_projection(Kcc, Kcf, kdiag, idx, jitter, lapack)
    if not ok:
        return NOT_PSD, 0.0, empty, empty
    ok, value, g_m, g_L, Abar, gbar = logit_given_projection(
        A, gamma, free, mean, L, y, scale, nodes, weights, counts, limits, small_var
    )
    if not ok:
        return SMALL_VARIANCE, 0.0, empty, empty
    _add_subset_weights(R, A, Abar, gbar, idx, jitter, lapack, W_cc, W_cf, w_diag)
    return DONE, value, g_m, g_L


# Long because the docstring documents its parameters; the body is 12 lines.
@njit(cache=True, nogil=True)
def softmax_subset_into(
    Kcc, Kcf, kdiag, idx, jitter, mean, Ls, labels, scale, eps, small_var, lapack,
    W_cc, W_cf, w_diag,
):  # fmt: skip
    """:func:`logit_subset_into` for the softmax SVGP bound.

    Parameters
    ----------
    Kcc, Kcf, kdiag, idx, jitter
        As in :func:`logit_subset_into`.
    mean, Ls, labels, scale, eps, small_var
        As in :func:`softmax_given_projection`, for the subset's ``q(u)``.
    lapack, W_cc, W_cf, w_diag
        As in :func:`logit_subset_into`.

    Returns
    -------
    status : int
    value : float
    g_m : ndarray of shape (k * C,)
    g_L : ndarray of shape (C * k (k + 1) / 2,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._likelihood_numba import DONE
    >>> from skgp_bayes.targets._sparse_numba import LAPACK
    >>> from skgp_bayes.targets._svgp_numba import softmax_subset_into
    >>> x, z = np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5])
    >>> Kcc = np.exp(-0.5 * (z[:, None] - z) ** 2)
    >>> Kcf = np.exp(-0.5 * (z[:, None] - x) ** 2)
    >>> eps = np.random.default_rng(0).normal(size=(10, 3))
    >>> W_cc, W_cf, w_diag = np.zeros((2, 2)), np.zeros((2, 3)), np.zeros(3)
    >>> out = softmax_subset_into(
    ...     Kcc, Kcf, np.ones(3), np.array([0, 1]), 1e-6, np.zeros((2, 3)),
    ...     np.ones((3, 1, 1)) * np.eye(2), np.array([0, 2, 1]), 1.0, eps, 1e-10,
    ...     LAPACK, W_cc, W_cf, w_diag)
    >>> out[0] == DONE, out[2].shape, out[3].shape
    (True, (6,), (9,))
    """
    empty = np.empty(0)
    ok, R, A, gamma, free = _subset_projection(Kcc, Kcf, kdiag, idx, jitter, lapack)
    if not ok:
        return NOT_PSD, 0.0, empty, empty
    ok, value, g_m, g_L, Abar, gbar = softmax_given_projection(
        A, gamma, free, mean, Ls, labels, scale, eps, small_var
    )
    if not ok:
        return SMALL_VARIANCE, 0.0, empty, empty
    _add_subset_weights(R, A, Abar, gbar, idx, jitter, lapack, W_cc, W_cf, w_diag)
    return DONE, value, g_m, g_L


@njit(cache=True, nogil=True)
def _add_subset_weights(R, A, Abar, gbar, idx, jitter, lapack, W_cc, W_cf, w_diag):
    """Add the subset's ``dF/dK`` to the candidates' weights, from ``Abar``.

    ``K_ufbar = R^-T Abar``, ``K_uubar = R^-T S R^-1`` with ``S``'s lower
    triangle ``-Abar A' / 2`` (``_sparse_shared.kernel_weights``), and the
    jitter's weight on its diagonal. ``Abar`` is overwritten.
    """
    inner = -0.5 * (Abar @ np.ascontiguousarray(A.T))
    lower_solve_into(R, Abar, True, lapack)
    congruence_with_jitter_weight(R, inner, jitter, lapack)
    for a in range(idx.size):
        for b in range(a):  # from the lower triangle, which dsygst leaves
            W_cc[idx[a], idx[b]] += inner[a, b]
            W_cc[idx[b], idx[a]] += inner[a, b]
        W_cc[idx[a], idx[a]] += inner[a, a]
        row = W_cf[idx[a]]
        for t in range(row.size):
            row[t] += Abar[a, t]
    for i in range(gbar.size):
        w_diag[i] += gbar[i]


@njit(cache=True, nogil=True, error_model="numpy")
def _softmax_draws(labels, mu, sd, eps):
    """Monte Carlo ``E[log softmax(F_i)[y_i]]`` with per-class sds, and its
    gradients in the means and variances.

    ``F_sic = mu_ic + sd_ic eps_sc`` over the ``S`` fixed draws ``eps``
    (shape ``(S, C)``), as ``Softmax.expected_log_prob`` with its default
    draws: the exact derivatives of the estimate (reparameterisation). Each
    row's work runs class by class over the draws, contiguous, so that the
    exponentials and logarithms (:mod:`skgp_bayes._vector_exp`) vectorise.
    """
    n, C = mu.shape
    S = eps.shape[0]
    eps_t = np.ascontiguousarray(eps.T)
    eps_mean = np.zeros(C)
    for c in range(C):
        for s in range(S):
            eps_mean[c] += eps_t[c, s]
        eps_mean[c] /= S
    elp = np.empty(n)
    d_mu = np.empty((n, C))
    d_var = np.empty((n, C))
    F = np.empty((C, S))
    top = np.empty(S)
    total = np.empty(S)
    for i in range(n):
        y = labels[i]
        for s in range(S):
            top[s] = -np.inf
        for c in range(C):
            row = F[c]
            for s in range(S):
                row[s] = mu[i, c] + sd[i, c] * eps_t[c, s]
                top[s] = max(top[s], row[s])
        for s in range(S):
            total[s] = 0.0
        for c in range(C):
            row = F[c]
            for s in range(S):
                row[s] = vector_exp(row[s] - top[s])
                total[s] += row[s]
        # the largest term is exp(0) = 1, so total - 1 keeps all its digits
        lse = 0.0
        for s in range(S):
            lse += top[s] + vector_log1p(total[s] - 1.0)
        elp[i] = mu[i, y] + sd[i, y] * eps_mean[y] - lse / S
        for c in range(C):
            row = F[c]
            p_mean = 0.0
            p_eps = 0.0
            for s in range(S):
                p = row[s] / total[s]
                p_mean += p
                p_eps += p * eps_t[c, s]
            hot = 1.0 if c == y else 0.0
            d_mu[i, c] = hot - p_mean / S
            d_var[i, c] = (hot * eps_mean[c] - p_eps / S) / (2.0 * sd[i, c])
    return elp, d_mu, d_var


# Long because the docstring documents ten parameters; the body is 50 lines.
@njit(cache=True, nogil=True)
def softmax_given_projection(A, gamma, free, mean, Ls, labels, scale, eps, small_var):
    """``(ok, value, g_m, g_L, Abar, gbar)`` of the softmax SVGP bound.

    :func:`logit_given_projection` for ``C`` latent functions, each with
    its own ``q(u_c) = N(m_c, L_c L_c')``, and the softmax likelihood's
    Monte Carlo expectation over the fixed draws ``eps``.

    Parameters
    ----------
    A, gamma, free
        As in :func:`logit_given_projection`.
    mean : ndarray of shape (m, C)
    Ls : ndarray of shape (C, m, m)
    labels : ndarray of int of shape (n,)
        Class indices in ``0..C-1`` (not checked here).
    scale : float
    eps : ndarray of shape (S, C)
        The likelihood's draws.
    small_var : float
        A variance below this hands the evaluation back (``ok`` False).

    Returns
    -------
    ok : bool
    value : float
    g_m : ndarray of shape (m * C,)
        ``dF/dm`` in ``mean``'s C order.
    g_L : ndarray of shape (C * m (m + 1) / 2,)
        Class by class, each packed as in :func:`logit_given_projection`.
    Abar : ndarray of shape (m, n)
    gbar : ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._svgp_numba import softmax_given_projection
    >>> A = np.array([[0.5, -0.5]])
    >>> Ls = np.ones((3, 1, 1))
    >>> eps = np.random.default_rng(0).normal(size=(10, 3))
    >>> ok, value, g_m, g_L, Abar, gbar = softmax_given_projection(
    ...     A, np.array([0.75, 0.75]), np.ones(2, dtype=np.bool_), np.zeros((1, 3)),
    ...     Ls, np.array([0, 2]), 1.0, eps, 1e-10)
    >>> ok, g_m.shape, g_L.shape
    (True, (3,), (3,))
    """
    m, n = A.shape
    C = mean.shape[1]
    mu = np.ascontiguousarray(A.T) @ mean
    Bs = np.empty((C, m, n))
    sd = np.empty((n, C))
    for c in range(C):
        Bs[c] = np.ascontiguousarray(Ls[c].T) @ A
        for i in range(n):
            var = gamma[i]
            for j in range(m):
                var += Bs[c, j, i] * Bs[c, j, i]
            if var < small_var:
                return (False, 0.0, np.empty(0), np.empty(0), np.empty((0, 0)),
                        np.empty(0))  # fmt: skip
            sd[i, c] = math.sqrt(var)
    elp, d_mu, d_var = _softmax_draws(labels, mu, sd, eps)
    value = 0.0
    for i in range(n):
        value += elp[i]
    value *= scale
    gbar = np.zeros(n)
    for i in range(n):
        for c in range(C):
            d_mu[i, c] *= scale
            d_var[i, c] *= scale
            gbar[i] += d_var[i, c]
        if not free[i]:
            gbar[i] = 0.0
    g_m = (A @ d_mu - mean).reshape(m * C)
    Abar = mean @ np.ascontiguousarray(d_mu.T)
    for j in range(m):
        for i in range(n):
            Abar[j, i] -= 2.0 * A[j, i] * gbar[i]
    n_tri = m * (m + 1) // 2
    g_L = np.empty(C * n_tri)
    for c in range(C):
        L = Ls[c]
        value -= _kl(mean[:, c].copy(), L)
        g_s = d_var[:, c].copy()
        Abar += 2.0 * (L @ (Bs[c] * g_s))
        _packed_L_gradient(A, Bs[c], g_s, L, g_L, c * n_tri)
    return True, value, g_m, g_L, Abar, gbar
