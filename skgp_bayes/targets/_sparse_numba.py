"""Compiled forward and reverse pass of the sparse whitened target.

For the kernels of the stationary fast path
(:mod:`skgp_bayes.kernels._lowering`: ``variance * k(r) [+ noise I]``) the
whole Gaussian-process part of
:class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget` runs in two calls:
:func:`forward` builds ``R``, ``A``, ``gamma`` and ``mu = A' v`` and
:func:`backward` turns the likelihood's ``g_mu`` and ``gbar`` into the
gradient in the natural kernel parameters ``[log variance, log ell...,
log noise]``, with the same algebra as ``_whitened_pullback`` in
:mod:`skgp_bayes.targets.sparse` (see its module notes).

Why compiled: at the sizes the variational MCMC samples (``m`` of 10 to
50 inducing inputs, a few hundred points) the arithmetic of one gradient is
tens of microseconds, while the same steps as NumPy and SciPy calls cost
about a millisecond of per-call overhead (argument checks, wrappers,
temporaries): HMC evaluates the gradient tens of thousands of times, so the
overhead was the fit. The loops here are serial on purpose: the problems
are small and parallel regions would only add thread start-up.

No fastmath: the results agree with the NumPy path to round-off.
"""

import math

import numpy as np
from numba import njit

from ..kernels._numba import (
    GEMM_MIN_COLUMNS,
    kernel_value_and_slope,
    kernel_value_vector,
    squared_difference_contraction,
)
from ..linalg._nogil_lapack import (
    DPOTRF,
    DSYGST,
    DSYRK,
    DTRSM,
    NOGIL_MIN_ROWS,
    cholesky_in_place_c,
    inverse_congruence_c,
    solve_in_place_c,
    solve_lower_c,
    weighted_gram_lower_c,
)
from ..linalg._numba_ops import TINY, copy_matrix, copy_vector
from ..priors import logistic, softplus

__all__ = ["backward", "forward"]

# Same constants as targets/_sparse_shared.py.
MIN_VAR = 1e-200
# Addresses of LAPACK's dpotrf, BLAS's dtrsm, LAPACK's dsygst and BLAS's
# dsyrk, handed to the compiled functions at every call: an address differs
# between processes, and as a global constant it would stop Numba caching
# them.
LAPACK = (DPOTRF, DTRSM, DSYGST, DSYRK)
# Which slots of the scratch buffer (see scratch()) are (m, m); the others
# are (m, n).
_SQUARE_SLOTS = (True, True, False, False, False, True, False)
# From this many inducing inputs, K(Z, Z)'s factor and R^-1 K(Z, X) go to
# LAPACK and BLAS. On one core (n = 300) the loops here took 83 us against
# 84 at m = 64, 137 against 118 at 80, 1,723 against 769 at 216 and 9,871
# against 2,859 at 400 (the collapsed target's exact limit).
LAPACK_MIN_INDUCING = 80


@njit(cache=True, nogil=True)
def scaled(X, inv_ell):
    n, d = X.shape
    out = np.empty((n, d))
    for i in range(n):
        for c in range(d):
            out[i, c] = X[i, c] * inv_ell[c]
    return out


@njit(cache=True, nogil=True)
def kernel_values(Ys, Xs, variance, base):
    """``variance * k(r)`` between rows of ``Ys`` and ``Xs``, tiny entries 0."""
    K = np.empty((Ys.shape[0], Xs.shape[0]))
    kernel_values_into(Ys, Xs, variance, base, K)
    return K


@njit(cache=True, nogil=True)
def kernel_values_into(Ys, Xs, variance, base, K):
    """:func:`kernel_values` written into ``K`` of shape ``(len(Ys), len(Xs))``.

    The squared distances are accumulated one input column at a time over
    a contiguous copy of that column (``Xs`` transposed), a loop the
    compiler vectorises, before the one transcendental call per entry.
    """
    m, d = Ys.shape
    n = Xs.shape[0]
    XT = np.ascontiguousarray(Xs.T)
    K[:, :] = 0.0
    for j in range(m):
        row = K[j]
        for c in range(d):
            y = Ys[j, c]
            col = XT[c]
            for i in range(n):
                t = y - col[i]
                row[i] += t * t
    for j in range(m):
        for i in range(n):
            k = variance * kernel_value_vector(base, K[j, i])
            K[j, i] = 0.0 if abs(k) < TINY else k


@njit(cache=True, nogil=True)
def cross_kernel_values_into(Zs, Xs, variance, base, K):
    """:func:`kernel_values_into` for ``K(Z, X)``, by one product where it pays.

    For the RBF from :data:`GEMM_MIN_COLUMNS` columns the squared distances
    are ``|z|^2 + |x|^2 - 2 z.x``, clipped at zero. Cancellation costs about
    ``eps (|z|^2 + |x|^2)`` of each, and the RBF's value moves by half that
    relative: a few ulps on inputs scaled by their length scales (and the
    collapsed and whitened gradients already expand their distances so).
    Other radial functions keep the exact differences: the Matern 1/2
    kernel's ``exp(-r)`` would inherit the square root of that error at
    coincident points, as an inducing input on a training input is.
    """
    m, d = Zs.shape
    if base != 0 or d < GEMM_MIN_COLUMNS:
        kernel_values_into(Zs, Xs, variance, base, K)
        return
    n = Xs.shape[0]
    XT = np.ascontiguousarray(Xs.T)
    products = Zs @ XT
    x_sq = np.zeros(n)
    for c in range(d):
        col = XT[c]
        for i in range(n):
            x_sq[i] += col[i] * col[i]
    for j in range(m):
        z_sq = 0.0
        for c in range(d):
            z_sq += Zs[j, c] * Zs[j, c]
        row = products[j]
        out = K[j]
        for i in range(n):
            r2 = max(z_sq + x_sq[i] - 2.0 * row[i], 0.0)
            k = variance * kernel_value_vector(base, r2)
            out[i] = 0.0 if abs(k) < TINY else k


@njit(cache=True, nogil=True)
def cholesky_lower(K):
    """In-place lower Cholesky factor; False when a pivot is not positive."""
    m = K.shape[0]
    for j in range(m):
        s = K[j, j]
        for k in range(j):
            s -= K[j, k] * K[j, k]
        if not (s > 0.0) or not math.isfinite(s):
            return False
        rjj = math.sqrt(s)
        K[j, j] = rjj
        for i in range(j + 1, m):
            t = K[i, j]
            for k in range(j):
                t -= K[i, k] * K[j, k]
            K[i, j] = t / rjj
        for i in range(j):
            K[i, j] = 0.0
    return True


@njit(cache=True, nogil=True)
def solve_lower(R, B):
    """``R^-1 B`` for lower triangular ``R``, row by row (rows of B are long)."""
    m, k = B.shape
    X = np.empty((m, k))
    for i in range(m):
        for c in range(k):
            X[i, c] = B[i, c]
        for p in range(i):
            r = R[i, p]
            if r != 0.0:
                for c in range(k):
                    X[i, c] -= r * X[p, c]
        inv = 1.0 / R[i, i]
        for c in range(k):
            X[i, c] *= inv
    return X


@njit(cache=True, nogil=True)
def solve_lower_t(R, B):
    """``R^-T B`` for lower triangular ``R``."""
    m, k = B.shape
    X = np.empty((m, k))
    for i in range(m - 1, -1, -1):
        for c in range(k):
            X[i, c] = B[i, c]
        for p in range(i + 1, m):
            r = R[p, i]
            if r != 0.0:
                for c in range(k):
                    X[i, c] -= r * X[p, c]
        inv = 1.0 / R[i, i]
        for c in range(k):
            X[i, c] *= inv
    return X


@njit(cache=True, nogil=True)
def kernel_scales(theta, phi_defaults, theta_index, d):
    """``(variance, noise, inv_ell, ard)`` from the kernel's ``theta``.

    ``phi_defaults`` and ``theta_index`` are the kernel spec's (see
    :mod:`skgp_bayes.kernels._lowering`): ``phi[theta_index] = theta``,
    ``phi = [log variance, log ell..., log noise]`` with ``-inf`` for an
    absent noise (whose exponential is then 0). An isotropic length scale
    is repeated over the ``d`` input columns; an ARD kernel must have ``d``
    of them (the caller checks).
    """
    phi = phi_defaults.copy()
    for k in range(theta_index.size):
        phi[theta_index[k]] = theta[k]
    n_ls = phi.size - 2
    ard = n_ls > 1
    inv_ell = np.empty(d)
    for c in range(d):
        inv_ell[c] = math.exp(-phi[1 + c if ard else 1])
    return math.exp(phi[0]), math.exp(phi[n_ls + 1]), inv_ell, ard


@njit(cache=True, nogil=True)
def lower_factor(K, lapack):
    """Whether ``K`` has a lower Cholesky factor, which overwrites it.

    The compiled loops below :data:`LAPACK_MIN_INDUCING` rows, LAPACK's
    ``dpotrf`` from there; ``ok`` is False where a pivot is not positive
    (LAPACK passes a NaN through, which the diagonal test catches). ``K``
    (C order) is always a scratch copy for the callers here, and a fresh
    matrix of a few hundred rows costs more in page faults than its
    factorisation's arithmetic, so it is overwritten (and not returned: a
    compiled function that returns an argument turns Ctrl-C into
    ``SystemError``).
    """
    m = K.shape[0]
    if m < LAPACK_MIN_INDUCING:
        return cholesky_lower(K)
    ok = cholesky_in_place_c(K, lapack[0]) == 0
    for i in range(m):
        ok = ok and math.isfinite(K[i, i])
    return ok


@njit(cache=True, nogil=True)
def lower_solve(R, B, trans, lapack):
    """``R^-1 B`` (``trans`` False) or ``R^-T B``, by size as :func:`lower_factor`."""
    if R.shape[0] < LAPACK_MIN_INDUCING:
        return solve_lower_t(R, B) if trans else solve_lower(R, B)
    return solve_lower_c(R, np.ascontiguousarray(B), trans, lapack[1])


def no_work():
    """A ``work`` buffer with no room: every matrix is allocated afresh."""
    return np.empty(0)


@njit(cache=True, nogil=True)
def work_size(m, n):
    """Length of the ``work`` buffer for ``m`` inducing inputs and ``n`` rows."""
    size = 0
    for square in _SQUARE_SLOTS:
        size += m * m if square else m * n
    return size


@njit(cache=True, nogil=True)
def scratch(work, slot, m, n):
    """Slot ``slot`` of the flat buffer ``work`` as a matrix, or a fresh one.

    The slots, in order, are ``K(Z, Z)``, its factor, ``K(Z, X)``, ``A``,
    ``Abar``, ``dF/dK(Z, Z)`` and the rank-k update's scaled columns:
    ``(m, m)`` or ``(m, n)`` as :data:`_SQUARE_SLOTS` says. A buffer of
    any other length than :func:`work_size`'s gives fresh matrices. The
    evaluations of a sparse target on one thread reuse one buffer
    (:func:`~skgp_bayes.targets._sparse_compiled.workspace`): at ``m =
    600`` and batches of 256 the fresh matrices of an evaluation cost about
    5 ms of page faults (28 ms in all), as the allocator hands blocks of
    that size back to the system when they are freed. One flat array, not
    a tuple of matrices, because every array argument of a compiled call
    costs its unboxing (a tuple of seven added 12 us to a 120 us gradient
    at m = 20).
    """
    cols = m if _SQUARE_SLOTS[slot] else n
    if work.size != work_size(m, n):
        return np.empty((m, cols))
    offset = 0
    for k in range(slot):
        offset += m * m if _SQUARE_SLOTS[k] else m * n
    return work[offset : offset + m * cols].reshape((m, cols))


@njit(cache=True, nogil=True)
def lower_solve_into(R, B, trans, lapack):
    """:func:`lower_solve` written over the C-ordered ``B``."""
    if R.shape[0] < LAPACK_MIN_INDUCING:
        copy_matrix(B, solve_lower_t(R, B) if trans else solve_lower(R, B))
    else:
        solve_in_place_c(R, B, trans, lapack[1])


@njit(cache=True, nogil=True)
def weighted_gram(A, weights, lapack, work):
    """``A diag(w) A'``, at least its lower triangle.

    BLAS's ``dsyrk`` (half a product's arithmetic) from
    :data:`LAPACK_MIN_INDUCING` rows; below, one product, which is quicker
    there (7 us against 10 at m = 20, n = 300) than the rank-k update's
    sign split and calls.
    """
    m, n = A.shape
    if m >= LAPACK_MIN_INDUCING:
        gram = scratch(work, 5, m, n)
        weighted_gram_lower_c(A, weights, gram, scratch(work, 6, m, n), lapack[3])
        return gram
    scaled = scratch(work, 6, m, n)
    for j in range(m):
        for i in range(n):
            scaled[j, i] = A[j, i] * weights[i]
    return scaled @ np.ascontiguousarray(A.T)


@njit(cache=True, nogil=True)
def congruence_with_jitter_weight(R, S, jitter, lapack):
    """``R^-T S R^-1`` over ``S`` (:func:`lower_congruence`), then the jitter's weight.

    ``S`` becomes ``dF/dK`` through a factor of ``K + jitter mean(diag K) I``:
    ``d delta = jitter / m * tr(dK)``, so every diagonal entry gains
    ``jitter / m * tr(dF/dK)`` (``_sparse_shared.add_jitter_weight``).
    """
    lower_congruence(R, S, lapack)
    m = R.shape[0]
    trace = 0.0
    for a in range(m):
        trace += S[a, a]
    for a in range(m):
        S[a, a] += jitter / m * trace


@njit(cache=True, nogil=True)
def lower_congruence(R, S, lapack):
    """``R^-T S R^-1``, written over the symmetric ``S`` given by its lower triangle.

    ``R`` (C order) is reversed during the call and restored, so no other
    thread may read it meanwhile. Two triangular solves below
    ``NOGIL_MIN_ROWS`` rows, one ``dsygst`` from there (see
    :func:`~skgp_bayes.linalg.inverse_congruence`).
    """
    m = R.shape[0]
    if m >= NOGIL_MIN_ROWS:
        inverse_congruence_c(R, S, lapack[2])
        return
    for i in range(m):
        for j in range(i):
            S[j, i] = S[i, j]
    half = lower_solve(R, S, True, lapack)
    out = lower_solve(R, np.ascontiguousarray(half.T), True, lapack)
    for i in range(m):
        S[i, i] = out[i, i]
        for j in range(i):
            mean = 0.5 * (out[i, j] + out[j, i])
            S[i, j] = mean
            S[j, i] = mean


@njit(cache=True, nogil=True)
def forward(X, Z, inv_ell, variance, noise, base, jitter, v, lapack, work):
    """``R``, ``A``, clamped ``gamma``, its mask and ``mu = A' v``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d)
    inv_ell : ndarray of shape (d,)
        Inverse length scales, one per input column.
    variance, noise : float
        Kernel variance and WhiteKernel noise (0 without one).
    base : int
        Radial function code of :mod:`skgp_bayes.kernels._lowering`.
    jitter : float
        Relative diagonal jitter of ``K(Z, Z)``.
    v : ndarray of shape (m, C)
    lapack : tuple of int
        :data:`LAPACK`, used from :data:`LAPACK_MIN_INDUCING` inducing inputs.
    work : ndarray of shape (work_size(m, n),) or (0,)
        Scratch memory (:func:`scratch`); ``R``, ``A``, ``Kuu`` and
        ``Kuf`` may be returned in it, valid until its next use.

    Returns
    -------
    ok : bool
        False when the jittered ``K(Z, Z)`` is not positive definite (the
        other outputs are then meaningless).
    R : ndarray of shape (m, m)
    A : ndarray of shape (m, n)
    gamma : ndarray of shape (n,)
    free : ndarray of bool of shape (n,)
    mu : ndarray of shape (n, C)
    Kuu : ndarray of shape (m, m)
        ``K(Z, Z)`` without noise or jitter (its diagonal is the variance).
    Kuf : ndarray of shape (m, n)
        ``K(Z, X)``. Both are handed to :func:`backward`, which then needs
        no transcendental call for the RBF kernel.
    """
    Xs = scaled(X, inv_ell)
    Zs = scaled(Z, inv_ell)
    ok, Kuu, R, Kuf, A, gamma, free = inducing_projection(
        Xs, Zs, variance, noise, base, jitter, lapack, work
    )
    if not ok:
        n = X.shape[0]
        return ok, R, A, gamma, free, np.zeros((n, v.shape[1])), Kuu, Kuu
    mu = np.ascontiguousarray(A.T) @ v
    return ok, R, A, gamma, free, mu, Kuu, Kuf


@njit(cache=True, nogil=True)
def inducing_projection(Xs, Zs, variance, noise, base, jitter, lapack, work):
    """``K(Z, Z)``, its jittered factor ``R``, ``K(Z, X)``, ``A = R^-1 K(Z, X)``
    and the clamped conditional variances ``gamma`` with their mask.

    Inputs are scaled by the inverse length scales. ``ok`` is False when the
    jittered ``K(Z, Z)`` is not positive definite; ``A`` is then zero and
    ``Kuf``, ``gamma`` and ``free`` are not filled in. From
    :data:`LAPACK_MIN_INDUCING` inducing inputs the factor and the solve
    are LAPACK's (``lapack`` is :data:`LAPACK`); ``work`` as in
    :func:`forward`.
    """
    n = Xs.shape[0]
    m = Zs.shape[0]
    Kuu = scratch(work, 0, m, n)
    kernel_values_into(Zs, Zs, variance, base, Kuu)
    diag = variance + noise
    K = scratch(work, 1, m, n)
    copy_matrix(K, Kuu)
    for i in range(m):
        K[i, i] = diag + jitter * diag
    ok = lower_factor(K, lapack)
    R = K
    gamma = np.empty(n)
    free = np.zeros(n, dtype=np.bool_)
    if not ok:
        return ok, Kuu, R, Kuu, np.zeros((m, n)), gamma, free
    Kuf = scratch(work, 2, m, n)
    cross_kernel_values_into(Zs, Xs, variance, base, Kuf)
    if m < LAPACK_MIN_INDUCING:
        A = solve_lower(R, Kuf)
    else:
        A = scratch(work, 3, m, n)
        copy_matrix(A, Kuf)
        solve_in_place_c(R, A, False, lapack[1])
    for i in range(n):
        s = diag
        for j in range(m):
            s -= A[j, i] * A[j, i]
        if s > MIN_VAR:
            gamma[i] = s
            free[i] = True
        else:
            gamma[i] = MIN_VAR
    return ok, Kuu, R, Kuf, A, gamma, free


@njit(cache=True, inline="always")
def _slope(base, r2, kv, variance):
    """``f(r)`` given ``kv = variance * k(r)``; free for the RBF (f = k)."""
    if base == 0:
        return kv / variance if variance > 0.0 else 0.0
    return kernel_value_and_slope(base, r2)[1]


@njit(cache=True, nogil=True)
def gram_contract(Zs, Kuu, W, variance, noise, base, ard, g, g_inputs):
    """Add ``sum_ab W_ab dK(Z, Z)_ab / dphi`` to ``g`` (symmetric ``W``).

    With ``g_inputs`` of ``Zs``'s shape (an empty array otherwise) the
    gradient in the scaled inducing inputs is added to it too: a pair's
    ``dK_ij / dzs_i = -variance f(r_ij) (zs_i - zs_j)``, so it costs the
    pass over the pairs that the length scales already make. The caller
    multiplies column ``c`` by ``1 / ell_c``.
    """
    m, d = Zs.shape
    n_ls = g.size - 2
    inputs = g_inputs.shape[0] == m
    for i in range(m):
        g[0] += variance * W[i, i]
        g[n_ls + 1] += noise * W[i, i]
        for j in range(i):
            r2 = 0.0
            for c in range(d):
                t = Zs[i, c] - Zs[j, c]
                r2 += t * t
            w = 2.0 * W[i, j]
            g[0] += w * Kuu[i, j]
            wf = w * variance * _slope(base, r2, Kuu[i, j], variance)
            if ard:
                for c in range(d):
                    t = Zs[i, c] - Zs[j, c]
                    g[1 + c] += wf * t * t
            else:
                g[1] += wf * r2
            if inputs:
                for c in range(d):
                    t = wf * (Zs[i, c] - Zs[j, c])
                    g_inputs[i, c] -= t
                    g_inputs[j, c] += t


@njit(cache=True, nogil=True)
def cross_contract(Zs, Xs, Kuf, W, variance, base, ard, g, g_inputs, G_work=None):
    """Add ``sum_ja W_ja dK(Z, X)_ja / dphi`` to ``g``.

    With ``G_ja = W_ja variance f(r_ja)`` the length-scale entry of column
    ``c`` is ``sum_ja G_ja (z_jc - x_ac)^2``, expanded into ``sum_j z_jc^2
    rowsum(G)_j + sum_a x_ac^2 colsum(G)_a - 2 sum_j z_jc (G X)_jc``
    (:func:`~skgp_bayes.kernels._numba.squared_difference_contraction`): one
    ``(m, n) x (n, d)`` product instead of a pass over ``m n d`` squared
    differences. The terms are weighted sums of products of standardised
    inputs, so the cancellation costs a few ulps of their size.

    The same product gives the gradient in the scaled inducing inputs,
    ``sum_a G_ja (xs_a - zs_j) = (G X)_j - rowsum(G)_j zs_j``, added to
    ``g_inputs`` when it has ``Zs``'s shape (the caller multiplies column
    ``c`` by ``1 / ell_c``). ``G`` is formed in ``G_work`` where that is an
    ``(m, n)`` matrix, in a fresh one otherwise.
    """
    m, d = Zs.shape
    n = Xs.shape[0]
    if G_work is None:
        G = np.zeros((m, n))
    elif G_work.shape[0] == m and G_work.shape[1] == n:
        G = G_work
        if base != 0:
            # entries whose weight or kernel value is zero are skipped
            G[:] = 0.0
    else:
        G = np.zeros((m, n))
    # Local accumulators: NumPy's axis sums and a running g[0] in memory
    # cost more than the products themselves at these sizes (40 us against
    # 6 us at m = 18, n = 300).
    rows = np.zeros(m)
    cols = np.zeros(n)
    total = 0.0
    for j in range(m):
        row_sum = 0.0
        if base == 0:
            # The RBF's f is k itself: G = W o K(Z, X), no distances.
            for a in range(n):
                gv = W[j, a] * Kuf[j, a]
                G[j, a] = gv
                row_sum += gv
                cols[a] += gv
            total += row_sum
        else:
            for a in range(n):
                w = W[j, a]
                kv = Kuf[j, a]
                total += w * kv
                if w == 0.0 or kv == 0.0:
                    continue
                r2 = 0.0
                for c in range(d):
                    t = Zs[j, c] - Xs[a, c]
                    r2 += t * t
                gv = w * variance * _slope(base, r2, kv, variance)
                G[j, a] = gv
                row_sum += gv
                cols[a] += gv
        rows[j] = row_sum
    g[0] += total
    GX = G @ Xs
    per_column = squared_difference_contraction(Zs, Xs, rows, cols, GX)
    for c in range(d):
        if ard:
            g[1 + c] += per_column[c]
        else:
            g[1] += per_column[c]
    if g_inputs.shape[0] == m:
        for j in range(m):
            for c in range(d):
                g_inputs[j, c] += GX[j, c] - rows[j] * Zs[j, c]


@njit(cache=True, nogil=True)
def backward(
    X, Z, inv_ell, variance, noise, base, ard, jitter, R, A, Kuu, Kuf, v, g_mu, gbar,
    lapack, work,
):  # fmt: skip
    """Gradient in ``phi = [log variance, log ell..., log noise]``.

    Of the data term ``F`` given ``g_mu = dF/dmu`` (n, C) and ``gbar``, the
    derivative in the shared ``gamma`` (zero where clamped); the same
    algebra as ``_whitened_pullback`` in :mod:`skgp_bayes.targets.sparse`.
    ``ard`` selects one length-scale entry per column or one in all;
    ``R``, ``A``, ``Kuu`` and ``Kuf`` are :func:`forward`'s; ``lapack`` is
    :data:`LAPACK` (the solves go to BLAS from :data:`LAPACK_MIN_INDUCING`);
    ``work`` as in :func:`forward`.

    Returns
    -------
    g_phi : ndarray of shape (n_ls + 2,)
    """
    m, n = A.shape
    Xs = scaled(X, inv_ell)
    Zs = scaled(Z, inv_ell)
    C = v.shape[1]
    H = A @ g_mu
    # Abar = v g_mu' - 2 A diag(gbar) and Kufbar = R^-T Abar
    Abar = scratch(work, 4, m, n)
    g_mu_t = np.ascontiguousarray(g_mu.T)
    for j in range(m):
        row = Abar[j]
        for i in range(n):
            row[i] = -2.0 * A[j, i] * gbar[i]
        for c in range(C):
            weight = v[j, c]
            for i in range(n):
                row[i] += weight * g_mu_t[c, i]
    lower_solve_into(R, Abar, True, lapack)
    # K_uubar = R^-T S R^-1 with S's lower triangle -Abar A' / 2
    # = A diag(gbar) A' - v H' / 2 (see _whitened_pullback).
    inner = weighted_gram(A, gbar, lapack, work)
    for i in range(m):
        for j in range(i + 1):
            s = 0.0
            for c in range(C):
                s += v[i, c] * H[j, c]
            inner[i, j] -= 0.5 * s
    n_ls = inv_ell.size if ard else 1
    no_inputs = np.empty((0, 0))
    return _kernel_gradient(
        Xs, Zs, variance, noise, base, ard, n_ls, jitter, R, Kuu, Kuf, inner, Abar,
        gbar, no_inputs, lapack,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def pullback_from_abar(
    Xs, Zs, variance, noise, base, ard, n_ls, jitter, R, A, Kuu, Kuf, Abar, gbar,
    inputs, lapack,
):  # fmt: skip
    """:func:`backward` given ``Abar = dF/dA`` itself (overwritten).

    For a bound whose ``A`` enters other than through ``mu = A' v`` and
    ``gamma`` (the SVGP bound's ``q(u)`` covariance): ``K_ufbar = R^-T
    Abar`` and ``K_uubar = R^-T S R^-1`` with ``S``'s lower triangle
    ``-Abar A' / 2``, as ``_sparse_shared.kernel_weights``. Inputs are
    :func:`forward`'s, scaled; ``gbar = dF/d diag K(X, X)``. Returns the
    gradient in ``phi`` (``n_ls + 2`` entries) and, with ``inputs``, in the
    scaled inducing inputs (column ``c`` to be multiplied by ``1 / ell_c``;
    an empty array otherwise).
    """
    inner = -0.5 * (Abar @ np.ascontiguousarray(A.T))
    lower_solve_into(R, Abar, True, lapack)
    g_inputs = np.zeros(Zs.shape) if inputs else np.empty((0, 0))
    g = _kernel_gradient(
        Xs, Zs, variance, noise, base, ard, n_ls, jitter, R, Kuu, Kuf, inner, Abar,
        gbar, g_inputs, lapack,
    )  # fmt: skip
    return g, g_inputs


@njit(cache=True, nogil=True)
def _kernel_gradient(
    Xs, Zs, variance, noise, base, ard, n_ls, jitter, R, Kuu, Kuf, inner, Kufbar,
    gbar, g_inputs, lapack,
):  # fmt: skip
    """``g_phi`` from ``K_ufbar`` and the lower triangle of ``R' K_uubar R``.

    ``inner`` becomes ``K_uubar`` (with the jitter's weight, ``jitter
    mean(diag)``, on its diagonal); input gradients go to ``g_inputs`` when
    it has ``Zs``'s shape.
    """
    congruence_with_jitter_weight(R, inner, jitter, lapack)
    Kuubar = inner
    g = np.zeros(n_ls + 2)
    gram_contract(Zs, Kuu, Kuubar, variance, noise, base, ard, g, g_inputs)
    cross_contract(Zs, Xs, Kuf, Kufbar, variance, base, ard, g, g_inputs)
    total = 0.0
    for i in range(gbar.size):
        total += gbar[i]
    g[0] += variance * total
    g[n_ls + 1] += noise * total
    return g


@njit(cache=True, nogil=True)
def log_prior_theta(theta, kind, a, b, const):
    """Log prior of log-scale hyperparameters and its gradient.

    The densities of ``theta = log x`` (the Jacobian included) of the two
    priors of the default policy, entry by entry: ``kind`` 0 is
    ``Gamma(shape a, scale b)``, ``a theta - exp(theta) / b + const``;
    ``kind`` 1 is ``LogNormal(mu a, sigma b)``, ``-z^2 / 2 + const`` with
    ``z = (theta - a) / b``; ``kind`` 2 is ``HalfCauchyVariance(scale s)``
    with ``a = 2 log s``, ``theta / 2 - log(1 + e^(theta - a)) + const``. The
    same values as
    :meth:`skgp_bayes.priors.PriorSet.log_prob`, without its per-group NumPy
    calls, which cost as much as the rest of a small target's gradient.

    Parameters
    ----------
    theta, a, b, const : ndarray of shape (p,)
    kind : ndarray of int of shape (p,)

    Returns
    -------
    value : float
    grad : ndarray of shape (p,)
    """
    p = theta.shape[0]
    grad = np.empty(p)
    value = 0.0
    for j in range(p):
        t = theta[j]
        if kind[j] == 0:
            e = math.exp(t) / b[j]
            value += a[j] * t - e + const[j]
            grad[j] = a[j] - e
        elif kind[j] == 2:
            u = t - a[j]
            value += 0.5 * t - softplus(u) + const[j]
            grad[j] = 0.5 - logistic(u)
        else:
            z = (t - a[j]) / b[j]
            value += const[j] - 0.5 * z * z
            grad[j] = -z / b[j]
    return value, grad


@njit(cache=True, nogil=True)
def draw_moments(X, Z, inv_ells, variances, noises, base, jitter, v, lapack):
    """Latent means and shared variances at ``X`` for each draw ``(theta_j, v_j)``.

    ``f(X) | v_j ~ N(A_j' v_j, diag K(X, X) - colsum(A_j o A_j))`` with
    ``A_j = R_j^-1 K(Z, X)``, by :func:`inducing_projection` per draw: one
    compiled loop over the draws where a prediction over thousands of
    posterior draws spent most of its time in per-draw Python calls.

    Parameters
    ----------
    X : ndarray of shape (k, d)
    Z : ndarray of shape (m, d)
    inv_ells : ndarray of shape (J, d)
        Each draw's inverse length scales, one per input column.
    variances, noises : ndarray of shape (J,)
    base : int
        Radial function code of :mod:`skgp_bayes.kernels._lowering`.
    jitter : float
    v : ndarray of shape (J, m, C)
    lapack : tuple of int
        :data:`LAPACK`.

    Returns
    -------
    ok : bool
        False when a draw's jittered ``K(Z, Z)`` is not positive definite.
    means : ndarray of shape (J, k, C)
    variances : ndarray of shape (J, k)
    """
    work = np.empty(0)
    J = v.shape[0]
    k = X.shape[0]
    means = np.empty((J, k, v.shape[2]))
    spread = np.empty((J, k))
    for j in range(J):
        Xs = scaled(X, inv_ells[j])
        Zs = scaled(Z, inv_ells[j])
        ok, _, _, _, A, gamma, _ = inducing_projection(
            Xs, Zs, variances[j], noises[j], base, jitter, lapack, work
        )
        if not ok:
            return False, means, spread
        copy_matrix(means[j], np.ascontiguousarray(A.T) @ np.ascontiguousarray(v[j]))
        copy_vector(spread[j], gamma)
    return True, means, spread
